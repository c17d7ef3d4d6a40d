"""weight_comm.py: step 10's weight sync from Python through ctypes.

    wc = WeightComm(port=18700, trainers=2, tp=2, model_dim=64, layers=2)  # every rank
    for name, part in wc.parts():        # a trainer: its FSDP shard of each tensor;
        ...                              # a serving rank: its tensor-parallel slice
    wc.update()                          # every rank, once a version
    wc.leave()

The library is build/lib/libweight_comm.so ('make all'): the same plan, fleet and
data path as build/bin/10_weight_sync, compiled a second time with -fPIC.
"""
import ctypes
import os
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIB = os.path.join(HERE, "..", "..", "..", "build", "lib", "libweight_comm.so")
# steps/10_weight_sync/serve/weight_comm.h's enum weight_comm_split.
COLUMN, ROW, NONE = 0, 1, 2
BF16_BYTES = 2


class WeightCommError(RuntimeError):
    """A call of the library failed; the text is its first error line, which names the rank."""


@dataclass
class Part:
    """Where this rank keeps its part of one tensor in the library's buffer (weight_comm_tensor)."""
    name: str
    rows: int
    cols: int
    split: int
    offset: int  # bytes, in the buffer
    first: int   # a trainer: the shard's first flat element; a serving rank: 0
    count: int   # elements


def load(path=None):
    """The library with its calls typed, as weight_comm.h declares them."""
    lib = ctypes.CDLL(os.path.abspath(path or os.environ.get("WEIGHT_COMM_LIB", DEFAULT_LIB)))
    c_int, c_u64, ptr = ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p
    lib.weight_comm_join.argtypes = [ctypes.c_char_p] + [c_int] * 7
    lib.weight_comm_join.restype = ptr
    for f in ("rank", "world", "trains", "replica", "tp_rank", "tensors", "update", "leave"):
        getattr(lib, "weight_comm_" + f).argtypes = [ptr]
    lib.weight_comm_tensor.argtypes = [ptr, c_int, ctypes.POINTER(ctypes.c_char_p)] + \
        [ctypes.POINTER(c_u64)] * 2 + [ctypes.POINTER(c_int)] + [ctypes.POINTER(c_u64)] * 3
    lib.weight_comm_buffer.argtypes = [ptr, ctypes.POINTER(c_u64)]
    lib.weight_comm_buffer.restype = ptr
    lib.weight_comm_error.restype = ctypes.c_char_p
    return lib


class WeightComm:
    """One rank's place in step 10's fleet: joined once, then one update a version, then left."""

    def __init__(self, port, trainers, tp, model_dim, layers, timeout_s=60, device=None,
                 verbose=False, lib=None):
        self.lib = load(lib)
        dev = device.encode() if device else None
        self.handle = self.lib.weight_comm_join(dev, port, timeout_s, trainers, tp, model_dim,
                                                layers, int(verbose))
        if not self.handle:
            raise WeightCommError(self.error())
        self.rank = self.lib.weight_comm_rank(self.handle)
        self.world = self.lib.weight_comm_world(self.handle)
        self.trains = bool(self.lib.weight_comm_trains(self.handle))
        self.replica = self.lib.weight_comm_replica(self.handle)
        self.tp_rank = self.lib.weight_comm_tp_rank(self.handle)
        self.version = 0

    def error(self):
        return self.lib.weight_comm_error().decode(errors="replace")

    def parts(self):
        """Every tensor, in the plan's order: where this rank's part of it lies."""
        out = []
        for i in range(self.lib.weight_comm_tensors(self.handle)):
            name = ctypes.c_char_p()
            rows, cols, offset, first, count = (ctypes.c_uint64() for _ in range(5))
            split = ctypes.c_int()
            if self.lib.weight_comm_tensor(self.handle, i, ctypes.byref(name), ctypes.byref(rows),
                                           ctypes.byref(cols), ctypes.byref(split),
                                           ctypes.byref(offset), ctypes.byref(first),
                                           ctypes.byref(count)):
                raise WeightCommError(f"weight_comm_tensor: no tensor {i}")
            out.append(Part(name.value.decode(), rows.value, cols.value, split.value,
                            offset.value, first.value, count.value))
        return out

    def buffer(self):
        """This rank's registered memory as a ctypes byte array (a serving rank: the version it serves)."""
        size = ctypes.c_uint64()
        address = self.lib.weight_comm_buffer(self.handle, ctypes.byref(size))
        return (ctypes.c_uint8 * size.value).from_address(address)

    def update(self):
        """The next version: a trainer pushes its shard, a serving rank waits for it whole and flips."""
        v = self.lib.weight_comm_update(self.handle)
        if v < 0:
            raise WeightCommError(self.error())
        self.version = v
        return v

    def leave(self):
        failed = self.lib.weight_comm_leave(self.handle)
        self.handle = None
        return failed
