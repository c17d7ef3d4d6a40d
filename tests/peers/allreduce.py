#!/usr/bin/env python3
"""allreduce.py: an all-reduce we did not write (PyTorch's Gloo, or Open MPI through mpi4py), on step 07's input, in step 07's table.

Usage, one process per rank:
  torchrun ... tests/peers/allreduce.py gloo -b BYTES --maxbytes BYTES [-f F -n N -w W]
  mpirun ... python3 tests/peers/allreduce.py mpi -b BYTES --maxbytes BYTES [-f F -n N -w W]

Each rank's input is step 07's (steps/07_allreduce/schedule.c, input_value): element i
of rank r is r + 1 + i mod 13, as int32; the reduction is sum.  Rank 0 prints
nccl-tests' table (time: the slowest rank's mean over N timed runs, after W warm-up
runs), as 07_allreduce prints it; then every rank checks its result element by
element and prints zlib's CRC-32 of it at the largest size, which 07_allreduce prints
too ("result crc32"), so that the two results can be matched to the bit.
"""
import argparse
import os
import sys
import time
import zlib

import numpy as np


def size(text):
    """A byte count, with nccl-tests' K, M or G suffix (powers of 1024)."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("backend", choices=["gloo", "mpi"])
    p.add_argument("-b", "--minbytes", type=size, required=True)
    p.add_argument("--maxbytes", type=size, required=True)
    p.add_argument("-f", "--stepfactor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup", type=int, default=5)
    a = p.parse_args()
    if a.minbytes % 4 or a.maxbytes % 4 or a.minbytes <= 0 or a.minbytes > a.maxbytes or a.stepfactor < 2:
        p.error("-b and --maxbytes must be whole int32 elements (multiples of 4), 0 < -b <= --maxbytes, -f >= 2")
    return a


class Gloo:
    """torch.distributed over Gloo; rank, world and rank 0's address from torchrun's variables."""

    def __init__(self):
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        dist.init_process_group("gloo")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.transport = "PyTorch %s's Gloo over TCP (%s)" % (torch.__version__, os.environ.get("GLOO_SOCKET_IFNAME", "its default interface"))

    def buffer(self, array):
        return self.torch.from_numpy(array)

    def all_reduce(self, buf):
        self.dist.all_reduce(buf)

    def slowest(self, seconds):
        t = self.torch.tensor([seconds], dtype=self.torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return t.item()

    def total(self, count):
        t = self.torch.tensor([count], dtype=self.torch.int64)
        self.dist.all_reduce(t)
        return int(t.item())

    def barrier(self):
        self.dist.barrier()

    def close(self):
        self.dist.destroy_process_group()


class Mpi:
    """MPI_Allreduce through mpi4py; rank and world from mpirun."""

    def __init__(self):
        from mpi4py import MPI

        self.MPI, self.comm = MPI, MPI.COMM_WORLD
        self.rank, self.world = self.comm.Get_rank(), self.comm.Get_size()
        version = MPI.Get_library_version().split(",")[0].strip()
        # mpirun passes --mca btl LIST to its processes as OMPI_MCA_btl.
        btl = os.environ.get("OMPI_MCA_btl", "as Open MPI chose")
        self.transport = "%s (mpi4py %s), byte transfer layers: %s" % (version, __import__("mpi4py").__version__, btl)

    def buffer(self, array):
        return array

    def all_reduce(self, buf):
        self.comm.Allreduce(self.MPI.IN_PLACE, buf, op=self.MPI.SUM)

    def slowest(self, seconds):
        return self.comm.allreduce(seconds, op=self.MPI.MAX)

    def total(self, count):
        return self.comm.allreduce(count, op=self.MPI.SUM)

    def barrier(self):
        self.comm.Barrier()

    def close(self):
        pass


def input_of(rank, count):
    return (rank + 1 + np.arange(count, dtype=np.int64) % 13).astype(np.int32)


def main():
    a = parse()
    be = Gloo() if a.backend == "gloo" else Mpi()
    n = be.world
    factor = 2 * (n - 1) / n
    say = print if be.rank == 0 else (lambda *_: None)
    say("launcher            : %s: rank %d of %d" % (a.backend, be.rank, n))
    say("transport           : %s" % be.transport)
    say("#\n# all_reduce over %s: %d ranks, int32\n#" % (a.backend, n))
    say("#       size         count      type   redop    root     time   algbw   busbw #wrong")
    say("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       ")
    sizes, wrong_all, crc = [], 0, 0
    size = a.minbytes
    while size <= a.maxbytes:
        sizes.append(size)
        size *= a.stepfactor
    for size in sizes:
        count = size // 4
        array = input_of(be.rank, count)
        buf = be.buffer(array)
        for _ in range(a.warmup):
            be.all_reduce(buf)
        be.barrier()
        t0 = time.perf_counter()
        for _ in range(a.iters):
            be.all_reduce(buf)
        mine = (time.perf_counter() - t0) / a.iters
        slowest = be.slowest(mine)
        # The check: fresh input, one run, every element against the plain sum.
        array[:] = input_of(be.rank, count)
        be.all_reduce(buf)
        want = sum(input_of(r, count) for r in range(n)).astype(np.int32)
        wrong = be.total(int(np.count_nonzero(array != want)))
        wrong_all += wrong
        crc = zlib.crc32(array.tobytes())
        us = slowest * 1e6
        algbw = size / 1e3 / us
        say("%12d  %12d  %8s  %6s  %6d  %7.1f  %6.3f  %6.3f  %5d" % (size, count, "int32", "sum", -1, us, algbw, algbw * factor, wrong))
        sys.stdout.flush()
    say("check               : %s: every rank's result checked element by element after a run on fresh data: %d wrong, over %d ranks and %d sizes"
        % ("right" if wrong_all == 0 else "WRONG", wrong_all, n, len(sizes)))
    print("result crc32        : 0x%08x: zlib's CRC-32 of this rank's %d-byte result at the largest size, to match another implementation's to the bit" % (crc, sizes[-1]))
    be.close()
    return 0 if wrong_all == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
