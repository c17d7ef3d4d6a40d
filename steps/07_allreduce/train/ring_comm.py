"""ring_comm.py: step 07's ring from Python through ctypes, and a DDP communication hook that sums each gradient bucket with it.

    comm = RingComm(port=18600)                    # every rank: rendezvous, QPs to RTS
    ddp.register_comm_hook(comm, ring_allreduce_hook)
    ...                                            # training steps
    comm.leave()

The library is build/lib/libring_comm.so ('make all'), the same ring, rendezvous
and control code as build/bin/07_allreduce, compiled a second time with -fPIC.
"""
import ctypes
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIB = os.path.join(HERE, "..", "..", "..", "build", "lib", "libring_comm.so")
# steps/07_allreduce/train/ring_comm.h's enum ring_comm_dtype.
FLOAT32, INT32 = 0, 1


class RingCommError(RuntimeError):
    """A call of the library failed; the text is its first error line, which names the rank."""


def load(path=None):
    """The library with its six calls typed, as ring_comm.h declares them."""
    lib = ctypes.CDLL(os.path.abspath(path or os.environ.get("RING_COMM_LIB", DEFAULT_LIB)))
    lib.ring_comm_join.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    lib.ring_comm_join.restype = ctypes.c_void_p
    lib.ring_comm_rank.argtypes = lib.ring_comm_world.argtypes = [ctypes.c_void_p]
    lib.ring_comm_allreduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.ring_comm_leave.argtypes = [ctypes.c_void_p]
    lib.ring_comm_error.restype = ctypes.c_char_p
    return lib


class RingComm:
    """One rank's place in step 07's ring: joined once, then any number of all-reduces, then left."""

    def __init__(self, port, timeout_s=60, staging_bytes=1 << 20, device=None, verbose=False, lib=None):
        self.lib = load(lib)
        dev = device.encode() if device else None
        self.handle = self.lib.ring_comm_join(dev, port, timeout_s, staging_bytes, int(verbose))
        if not self.handle:
            raise RingCommError(self.error())
        self.rank = self.lib.ring_comm_rank(self.handle)
        self.world = self.lib.ring_comm_world(self.handle)
        self.seconds = 0.0  # spent inside sum_in_place, all calls together

    def error(self):
        return self.lib.ring_comm_error().decode(errors="replace")

    def sum_in_place(self, address, count, dtype):
        """Sums COUNT elements at ADDRESS (FLOAT32 or INT32) across every rank: the library's call as it is."""
        start = time.perf_counter()
        failed = self.lib.ring_comm_allreduce(self.handle, address, count, dtype)
        self.seconds += time.perf_counter() - start
        if failed:
            raise RingCommError(self.error())

    def allreduce_(self, tensor):
        """Sums a contiguous CPU float32 or int32 tensor across every rank, in place."""
        import torch  # here, so that the module loads without torch (make test's check does)

        dtype = {torch.float32: FLOAT32, torch.int32: INT32}.get(tensor.dtype)
        if dtype is None or tensor.device.type != "cpu" or not tensor.is_contiguous():
            raise RingCommError("allreduce_ takes a contiguous CPU float32 or int32 tensor, not %s %s"
                                % (tensor.dtype, tensor.device))
        self.sum_in_place(tensor.data_ptr(), tensor.numel(), dtype)
        return tensor

    def leave(self):
        """Returns how many releases failed (0); the handle is gone after it."""
        failures = self.lib.ring_comm_leave(self.handle)
        self.handle = None
        return failures


def ring_allreduce_hook(comm, bucket):
    """DDP's communication hook: the bucket's flat gradient buffer, averaged over the ranks by step 07's ring.

    DDP calls it once per bucket during backward, whatever the bucket's index
    (the buckets are rebuilt after the first iteration), and waits on the
    future it returns before the optimizer step.  As DDP does without a hook
    (PyTorch 1.13's reducer.cpp, mark_variable_ready_dense: mul_out by
    1 / world size as it copies each gradient into its bucket), it scales by
    1 / world size first, then sums.  The call blocks until the sum is done,
    so the future is complete when it is returned.
    """
    grads = bucket.buffer()
    grads.mul_(1.0 / comm.world)
    comm.allreduce_(grads)
    return completed_future(grads)


def completed_future(tensor):
    """The future a DDP hook returns, its value already there: every hook here sums before it returns."""
    import torch

    fut = torch.futures.Future()
    fut.set_result(tensor)
    return fut
