#!/usr/bin/env python3
"""ring_comm_sum.py: one rank of a check of step 07's library through ring_comm.py (ctypes, no torch): join, sum float32 and int32 in place, a refused dtype, leave.

Usage, one process per rank, with RANK, WORLD_SIZE and MASTER_ADDR set as torchrun sets them:
  python3 tests/peers/ring_comm_sum.py PORT DEVICE COUNT [STAGING_BYTES]
Each rank's element i starts as rank + 1 + i % 13 (step 07's test input); after the
sum every element must be the sum of that over the ranks.  Prints one line per fact
(the tests read them); exits 1 after printing ring_comm_error()'s line on a failure.
"""
import ctypes
import os
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "steps", "07_allreduce", "train"))
from ring_comm import FLOAT32, INT32, RingComm, RingCommError  # noqa: E402


def check_sum(comm, ctype, code, count):
    """Fills, sums, counts the wrong elements; returns (wrong, crc32 of the result)."""
    buf = (ctype * count)(*[comm.rank + 1 + i % 13 for i in range(count)])
    comm.sum_in_place(ctypes.addressof(buf), count, code)
    # The sum over ranks r of r + 1 + i % 13: W(W+1)/2 + W (i % 13), one of 13 values.
    w = comm.world
    want = [w * (w + 1) // 2 + w * k for k in range(13)]
    wrong = sum(1 for i, v in enumerate(buf) if v != want[i % 13])
    return wrong, zlib.crc32(bytes(buf))


def main():
    port, device, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    staging = int(sys.argv[4]) if len(sys.argv) > 4 else 64 * 1024
    try:
        comm = RingComm(port, timeout_s=10, staging_bytes=staging, device=device)
    except RingCommError as e:
        print("ring_comm_join failed: %s" % e)
        return 1
    print("joined: rank %d of %d" % (comm.rank, comm.world))
    try:
        for name, ctype, code in (("float32", ctypes.c_float, FLOAT32), ("int32", ctypes.c_int32, INT32)):
            wrong, crc = check_sum(comm, ctype, code, count)
            print("sum %s: %d elements, %d wrong, crc32 %08x" % (name, count, wrong, crc))
        try:
            comm.sum_in_place(0, 1, 7)
            print("dtype 7: accepted")
        except RingCommError as e:
            print("dtype 7: refused: %s" % e)
    except RingCommError as e:
        print("ring_comm_allreduce failed: %s" % e)
        comm.leave()
        return 1
    print("leave: %d releases failed" % comm.leave())
    return 0


if __name__ == "__main__":
    sys.exit(main())
