"""GlobalMemory: the parent's side of GM. It owns the segments, allocates tensors from the caching
allocator and copies host data in and out.

Data flow::

    parent (Device)                                   core process
    GlobalMemory ── owns SharedMemory segments ──►  SegmentTable attaches by name, on first use
        │  CachingAllocator: malloc/free of blocks        │
        ▼                                                 ▼
    GlobalTensor (name, segment, offset, shape, strides, dtype) ── pickled into a launch ──► numpy view

``poison`` fills freed blocks with a byte pattern instead of leaving stale data, to make stale
reads loud.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from mpnpu.errors import GMOutOfMemoryError, UsageError

from ..dtypes import DTypeLike, get_dtype
from ..memcheck import ILLEGAL_READ, ILLEGAL_WRITE
from .allocator import Block, CachingAllocator
from .segments import SegmentTable, close_and_unlink, create_segment, process_token
from .tensor import GlobalTensor, _prod, int_strides, new_tensor


class GlobalMemory:
    """The parent's side of GM: creates and owns the segments, allocates tensors, copies host data.

    Every segment it creates it also unlinks, in :meth:`close`.
    """

    def __init__(self, segment_bytes: int = 64 << 20, poison: int | None = None, max_bytes: int | None = None) -> None:
        if poison is not None and not 0 <= poison <= 255:
            raise UsageError(f"GM poison must be a byte value 0..255, got {poison!r}")
        self.poison = poison
        self.max_bytes = max_bytes
        self._token = process_token(os.getpid()) or "0"
        self._table = SegmentTable()
        self._owned: list[str] = []
        self._blocks: dict[tuple[str, int], tuple[Block, int]] = {}  # -> (block, alloc_id)
        self._alloc_ids = 0
        #: allocations made since the last launch (take_unwritten), by (segment, offset): their name and
        #: the bytes the host has not written or filled with data, as [start, stop) in the segment
        self._unwritten: dict[tuple[str, int], tuple[str, list[tuple[int, int]]]] = {}
        self._allocator = CachingAllocator(self._create_segment, segment_bytes)
        self._closed = False

    @property
    def segment_names(self) -> list[str]:
        return list(self._owned)

    def _create_segment(self, nbytes: int) -> str:
        reserved = self._allocator.stats()["reserved_bytes"]
        if self.max_bytes is not None and reserved + nbytes > self.max_bytes:
            raise GMOutOfMemoryError(
                f"GM out of memory: {nbytes} more bytes would exceed the {self.max_bytes}-byte limit"
            )
        shm = create_segment(nbytes, self._token)
        name = shm.name
        self._owned.append(name)
        self._table.add(shm)
        return name

    def alloc(self, name: str, shape: Sequence[int], dtype: DTypeLike) -> GlobalTensor:
        """A new tensor with whatever bytes the block held before (stale data, as on the device)."""
        if self._closed:
            raise UsageError("GM is closed")
        d = get_dtype(dtype)
        if type(shape) is not tuple or not all(type(s) is int for s in shape):
            shape = tuple(int(s) for s in shape)  # (numpy integers, lists)
        if shape and min(shape) < 0:
            raise UsageError(f"negative dimension in shape {shape} of {name}")
        nbytes = _prod(shape) * d.itemsize
        strides = int_strides(shape, d.itemsize)  # (shape is a tuple of ints by now)
        if nbytes == 0:
            return new_tensor(name, d, shape, "", 0, strides, 0, 0)
        block = self._allocator.malloc(nbytes)
        self._alloc_ids += 1
        self._blocks[(block.segment, block.offset)] = (block, self._alloc_ids)
        self._unwritten[(block.segment, block.offset)] = (name, [(block.offset, block.offset + nbytes)])
        return new_tensor(name, d, shape, block.segment, block.offset, strides, block.offset, nbytes, self._alloc_ids)

    def free(self, t: GlobalTensor) -> None:
        """Give a tensor's block back to the cache (poisoning it if configured)."""
        if t.size == 0 and t.segment == "":
            return
        entry = self._blocks.get((t.segment, t.root_offset))
        if entry is None or entry[1] != t.alloc_id:
            raise UsageError(f"free of {t.name}: not a live allocation of this GM (freed twice?)")
        block = entry[0]
        del self._blocks[(t.segment, t.root_offset)]
        self._unwritten.pop((t.segment, t.root_offset), None)
        if self.poison is not None:
            view = np.ndarray((block.size,), np.uint8, buffer=self._table.get(block.segment).buf, offset=block.offset)
            view.fill(self.poison)
            del view
        self._allocator.free(block)

    def fill_bytes(self, t: GlobalTensor, byte: int, *, data: bool = True) -> None:
        """Set every byte of ``t``'s allocation (the root tensor it views) to ``byte`` (0..255).
        ``data`` False: the byte is a poison pattern, and the bytes still count as unwritten."""
        if data:
            self._unwritten.pop((t.segment, t.root_offset), None)
        if t.root_nbytes:
            view = np.ndarray((t.root_nbytes,), np.uint8, buffer=self._table.get(t.segment).buf,
                              offset=t.root_offset)
            view.fill(byte)
            del view

    def write(self, t: GlobalTensor, values: np.ndarray) -> None:
        """Host → GM copy (values must already be in the tensor's storage dtype and shape)."""
        arr = np.asarray(values)
        if arr.shape != t.shape:
            raise UsageError(f"cannot write array of shape {arr.shape} into GM tensor {t.name} of shape {t.shape}")
        if arr.dtype != t.dtype.storage:
            raise UsageError(f"cannot write {arr.dtype} data into GM tensor {t.name} of dtype {t.dtype.name}")
        if t.outside and t.size:
            raise t.illegal(ILLEGAL_WRITE, "a host write")
        if t.size:
            view = self._table.array(t)
            view[...] = arr
            del view
            self._host_wrote(t)

    def _host_wrote(self, t: GlobalTensor) -> None:
        """The host wrote ``t``'s bytes (their hull: a strided view's gaps count as written too, which
        can only hide an uninitialised read, never invent one)."""
        entry = self._unwritten.get((t.segment, t.root_offset))
        if entry is None:
            return
        lo, hi = t.byte_span
        lo, hi = lo + t.root_offset, hi + t.root_offset
        rest = [part for a, b in entry[1] for part in ((a, min(b, lo)), (max(a, hi), b)) if part[0] < part[1]]
        if rest:
            self._unwritten[(t.segment, t.root_offset)] = (entry[0], rest)
        else:
            del self._unwritten[(t.segment, t.root_offset)]

    def take_unwritten(self) -> tuple[tuple[str, str, int, int], ...]:
        """The bytes of the allocations made since the previous call that the host neither wrote nor
        filled with data, as (name, segment, start, stop); a launch calls it, so after it they are
        no longer new (the launch may write them)."""
        if not self._unwritten:
            return ()
        out = tuple((name, seg, a, b) for (seg, _), (name, parts) in self._unwritten.items() for a, b in parts)
        self._unwritten.clear()
        return out

    def read(self, t: GlobalTensor) -> np.ndarray:
        """GM → host copy."""
        if t.size == 0:
            return np.empty(t.shape, dtype=t.dtype.storage)
        if t.outside:
            raise t.illegal(ILLEGAL_READ, "a host read")
        view = self._table.array(t)
        out: np.ndarray = view.copy()
        del view
        return out

    def stats(self) -> dict[str, int]:
        return self._allocator.stats()

    def close(self) -> None:
        """Close and unlink every segment this GM created. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for name in self._owned:
            shm = self._table.pop(name)
            if shm is None:
                continue
            close_and_unlink(shm)
        self._owned.clear()
        self._blocks.clear()
