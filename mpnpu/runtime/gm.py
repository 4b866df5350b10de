"""GM, the device's global memory: shared-memory segments, tensors on them, a caching allocator.

Data flow::

    parent (Device)                                   core process
    GlobalMemory ── owns SharedMemory segments ──►  SegmentTable attaches by name, on first use
        │  CachingAllocator: malloc/free of blocks        │
        ▼                                                 ▼
    GlobalTensor (name, segment, offset, shape, strides, dtype) ── pickled into a launch ──► numpy view

A :class:`GlobalTensor` is only a descriptor; kernels never touch its bytes directly but go through
``mpnpu.api.data_copy`` so that every GM access can be traced.

The allocator behaves like a device caching allocator (PyTorch's CUDA allocator is the model):
sizes are rounded up to 512 bytes, a request takes the smallest cached free block that fits
(splitting it), freed blocks go back to the cache and merge with free neighbours, and nothing is
cleared. So the next test case is handed the blocks the last one freed, with the last case's data
still in them — which is what turns a too-early read into a wrong answer rather than a zero.
``poison`` fills freed blocks with a byte pattern instead, to make stale reads loud.
"""

from __future__ import annotations

import itertools
import mmap
import os
import re
from dataclasses import dataclass, field
from multiprocessing import shared_memory
from typing import Callable, Iterable, Sequence

import numpy as np

from mpnpu.errors import GMAccessError, GMOutOfMemoryError, UsageError

from .config import SEGMENT_PREFIX
from .dtypes import DType, DTypeLike, get_dtype

#: every GM tensor and carved sub-buffer starts on this boundary, as DataCopy requires on the device
GM_ALIGN = 32
#: allocation granularity of the caching allocator
BLOCK_ROUND = 512
_SHM_DIR = "/dev/shm"


# -- tensors ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GlobalTensor:
    """A typed view of GM: which segment, where, what shape. Pickles small; has no bytes itself.

    Index it like a numpy array (integers and step-1 or positive-step slices) to get a sub-view,
    e.g. ``x[m0:m1]`` or ``tile[r0:r1, :]``; the view keeps the root tensor's ``name`` so that
    reports can say which tensor an access touched.
    """

    name: str
    dtype: DType
    shape: tuple[int, ...]
    segment: str  # "" for a tensor with no elements
    offset: int  # byte offset of element [0, ..., 0] in the segment
    strides: tuple[int, ...]  # in bytes
    root_offset: int  # byte offset of the root tensor (the allocation) in the segment
    root_nbytes: int
    #: which allocation this is a view of (0: none), so that freeing a stale handle of a block
    #: that has since been handed to someone else is an error, not a free of their tensor
    alloc_id: int = 0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def is_contiguous(self) -> bool:
        expected = self.dtype.itemsize
        for dim, stride in zip(reversed(self.shape), reversed(self.strides)):
            if dim != 1 and stride != expected:
                return False
            expected *= dim
        return True

    @property
    def element_offset(self) -> int:
        """Index of this view's first element within the root tensor (in this view's elements)."""
        return (self.offset - self.root_offset) // self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d GM tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"GlobalTensor({self.name!r}, {self.dtype.name}, shape={self.shape}, offset={self.offset})"

    def __getitem__(self, index) -> "GlobalTensor":
        if not isinstance(index, tuple):
            index = (index,)
        if len(index) > self.ndim:
            raise GMAccessError(f"too many indices for GM tensor {self.name} of shape {self.shape}")
        offset = self.offset
        shape: list[int] = []
        strides: list[int] = []
        for axis, (idx, dim, stride) in enumerate(zip(index, self.shape, self.strides)):
            if isinstance(idx, slice):
                start, stop, step = idx.indices(dim)
                if step <= 0:
                    raise GMAccessError(f"GM tensor {self.name}: only positive slice steps are supported")
                length = max(0, (stop - start + step - 1) // step)
                offset += start * stride if length else 0
                shape.append(length)
                strides.append(stride * step)
            elif isinstance(idx, (int, np.integer)) and not isinstance(idx, bool):
                i = int(idx)
                if not -dim <= i < dim:
                    raise GMAccessError(
                        f"index {i} out of range for axis {axis} of GM tensor {self.name} (size {dim})"
                    )
                offset += (i % dim) * stride
            else:
                raise GMAccessError(f"GM tensor {self.name}: unsupported index {idx!r}")
        shape.extend(self.shape[len(index):])
        strides.extend(self.strides[len(index):])
        return self._view(tuple(shape), offset, tuple(strides))

    def _view(self, shape: tuple[int, ...], offset: int, strides: tuple[int, ...]) -> "GlobalTensor":
        """Another view of the same allocation. Kernels slice GM on every tile, so this skips the
        frozen dataclass's field-by-field __init__ and copies the fields in one go."""
        view = object.__new__(GlobalTensor)
        fields = dict(self.__dict__)
        fields["shape"], fields["offset"], fields["strides"] = shape, offset, strides
        view.__dict__.update(fields)
        return view

    def reshape(self, *shape: int) -> "GlobalTensor":
        """Same bytes, another shape (contiguous tensors only)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        new_shape = _resolve_shape(shape, self.size, self.name)
        if not self.is_contiguous:
            raise GMAccessError(f"cannot reshape non-contiguous GM view of {self.name}")
        return GlobalTensor(
            self.name, self.dtype, new_shape, self.segment, self.offset,
            _c_strides(new_shape, self.dtype.itemsize), self.root_offset, self.root_nbytes, self.alloc_id,
        )

    def carve(self, name: str, byte_offset: int, shape: Sequence[int], dtype: DTypeLike) -> "GlobalTensor":
        """A new named tensor inside this one's bytes, e.g. buffers inside a workspace.

        ``byte_offset`` is from the start of this tensor and must be 32-byte aligned.
        """
        d = get_dtype(dtype)
        shape = tuple(int(s) for s in shape)
        nbytes = _prod(shape) * d.itemsize
        if not self.is_contiguous:
            raise GMAccessError(f"cannot carve from non-contiguous GM view of {self.name}")
        if byte_offset < 0 or byte_offset % GM_ALIGN:
            raise GMAccessError(f"carve {name!r}: byte offset {byte_offset} is not {GM_ALIGN}-byte aligned")
        if byte_offset + nbytes > self.nbytes:
            raise GMAccessError(
                f"carve {name!r}: bytes [{byte_offset}, {byte_offset + nbytes}) exceed {self.name} "
                f"({self.nbytes} bytes)"
            )
        start = self.offset + byte_offset
        return GlobalTensor(name, d, shape, self.segment if nbytes else "", start,
                            _c_strides(shape, d.itemsize), start, nbytes)


def _prod(shape: Iterable[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    strides = []
    acc = itemsize
    for dim in reversed(shape):
        strides.append(acc)
        acc *= max(dim, 1)
    return tuple(reversed(strides))


def _resolve_shape(shape: Sequence[int], size: int, name: str) -> tuple[int, ...]:
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise GMAccessError(f"reshape of {name}: only one -1 allowed")
    if -1 in shape:
        known = _prod(s for s in shape if s != -1)
        if known == 0 or size % known:
            raise GMAccessError(f"cannot reshape {name} of size {size} into {tuple(shape)}")
        shape[shape.index(-1)] = size // known
    if _prod(shape) != size:
        raise GMAccessError(f"cannot reshape {name} of size {size} into {tuple(shape)}")
    return tuple(shape)


class StridedRanges(tuple):
    """``count`` intervals of ``run`` bytes, ``stride`` apart from ``start`` (``stride > run``,
    ``count >= 2``): a plain tuple of (start, stop) pairs, sorted and disjoint, that pickles as
    those four numbers — a traced 2D tile ships from a core as a few bytes, not one pair per row.
    """

    __slots__ = ()

    def __new__(cls, start: int, run: int, stride: int, count: int) -> "StridedRanges":
        end = start + count * stride
        return tuple.__new__(cls, zip(range(start, end, stride), range(start + run, end + run, stride)))

    def __reduce__(self):
        (start, stop), (second, _) = self[0], self[1]
        return (StridedRanges, (start, stop - start, second - start, len(self)))


class _DeferredStridedRanges:
    """A :class:`StridedRanges` not built yet: what a core records, unpickled as the real thing."""

    __slots__ = ("args",)

    def __init__(self, *args: int) -> None:
        self.args = args

    def __reduce__(self):
        return (StridedRanges, self.args)


def byte_ranges(t: GlobalTensor, *, deferred: bool = False) -> tuple[tuple[int, int], ...]:
    """The bytes a view covers, as sorted, merged [start, stop) intervals within its segment.

    ``deferred`` (for traces, which only a pickle carries to the parent): a strided view's
    intervals come as an object that turns into its :class:`StridedRanges` when unpickled.

    Traced launches call this for every DataCopy, so the common shapes take a fast path: a
    contiguous view is one interval, and a view with one strided dimension over contiguous rows
    (a 2D tile of a row-major tensor) is a :class:`StridedRanges`, built without numpy.
    """
    if t.size == 0:
        return ()
    item = t.dtype.itemsize
    # Drop unit dimensions and merge dimensions that are contiguous with the next one.
    dims: list[list[int]] = []
    for dim, stride in zip(reversed(t.shape), reversed(t.strides)):
        if dim == 1:
            continue
        if dims and stride == dims[-1][0] * dims[-1][1]:
            dims[-1][0] *= dim
        else:
            dims.append([dim, stride])
    off = t.offset
    if not dims:
        return ((off, off + item),)
    if dims[0][1] == item:  # innermost run is contiguous
        run = dims[0][0] * item
        outer = dims[1:]
    else:
        run = item
        outer = dims
    if not outer:
        return ((off, off + run),)
    if len(outer) == 1 and outer[0][1] > run:  # rows apart: already sorted and disjoint
        n, stride = outer[0]
        return _DeferredStridedRanges(off, run, stride, n) if deferred else StridedRanges(off, run, stride, n)
    starts = np.full(1, off, dtype=np.int64)
    for dim, stride in reversed(outer):
        starts = (starts[:, None] + np.arange(dim, dtype=np.int64)[None, :] * stride).reshape(-1)
    starts.sort()
    merged: list[tuple[int, int]] = []
    for s in starts.tolist():
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], s + run))
        else:
            merged.append((s, s + run))
    return tuple(merged)


# -- shared-memory segments ------------------------------------------------------------------------

_NAME_RE = re.compile(rf"^{re.escape(SEGMENT_PREFIX)}(\d+)_([0-9a-f]+)_\d+$")


def _process_token(pid: int) -> str | None:
    """A token that tells a live process from a later one reusing its pid (its start time)."""
    try:
        import psutil

        return format(int(psutil.Process(pid).create_time() * 100), "x")
    except Exception:
        return None


def sweep_stale_segments() -> list[str]:
    """Unlink segments left in /dev/shm by mpnpu runs whose process is gone (e.g. SIGKILLed).

    Names carry the creating process's pid and start time, so a live run's segments are never
    touched, even if its pid was reused.
    """
    removed: list[str] = []
    try:
        entries = os.listdir(_SHM_DIR)
    except OSError:
        return removed
    for entry in entries:
        m = _NAME_RE.match(entry)
        if not m:
            continue
        pid, token = int(m.group(1)), m.group(2)
        if _process_token(pid) == token:
            continue
        try:
            os.unlink(os.path.join(_SHM_DIR, entry))
            removed.append(entry)
        except OSError:
            pass
    return removed


class SegmentTable:
    """Shared-memory segments attached by name, and numpy views of GM tensors on them."""

    def __init__(self) -> None:
        self._segments: dict[str, shared_memory.SharedMemory] = {}

    def add(self, shm: shared_memory.SharedMemory) -> None:
        self._segments[shm.name] = shm

    def get(self, name: str) -> shared_memory.SharedMemory:
        shm = self._segments.get(name)
        if shm is None:
            shm = _attach(name)
            prefault(shm)
            self._segments[name] = shm
        return shm

    def array(self, t: GlobalTensor) -> np.ndarray:
        """A numpy view of the tensor's bytes (drop it before the segment is closed)."""
        if t.size == 0:
            return np.empty(t.shape, dtype=t.dtype.storage)
        shm = self.get(t.segment)
        return np.ndarray(t.shape, dtype=t.dtype.storage, buffer=shm.buf, offset=t.offset, strides=t.strides)

    def names(self) -> list[str]:
        return list(self._segments)

    def pop(self, name: str) -> shared_memory.SharedMemory | None:
        return self._segments.pop(name, None)


def prefault(shm: shared_memory.SharedMemory) -> None:
    """Touch every page of a segment in this process now.

    Device memory is always mapped; a process touching a fresh page takes a fault instead. Left to
    happen inside a kernel, those faults would slow whichever core first touches a block, mostly
    in a batch's first repeat, and shift the race's odds for reasons the device does not have.
    """
    pages = np.frombuffer(shm.buf, dtype=np.uint8)[::_PAGE]
    int(pages.sum())
    del pages


_PAGE = mmap.PAGESIZE


def _attach(name: str) -> shared_memory.SharedMemory:
    # Core processes share the parent's resource tracker (fork), so the duplicate registration an
    # attach makes before Python 3.13 is harmless; from 3.13 we can skip it.
    try:
        return shared_memory.SharedMemory(name=name, track=False)  # type: ignore[call-arg]
    except TypeError:
        return shared_memory.SharedMemory(name=name)


# -- caching allocator -----------------------------------------------------------------------------


@dataclass
class Block:
    segment: str
    offset: int
    size: int
    free: bool = True


@dataclass
class _Segment:
    name: str
    size: int
    blocks: list[Block] = field(default_factory=list)  # sorted by offset, covering the segment


class CachingAllocator:
    """Best-fit allocator over segments that never clears what it hands out.

    ``new_segment(nbytes) -> name`` is called when no cached block fits.
    """

    def __init__(self, new_segment: Callable[[int], str], segment_bytes: int) -> None:
        self._new_segment = new_segment
        self._segment_bytes = segment_bytes
        self._segments: dict[str, _Segment] = {}

    @staticmethod
    def round_size(nbytes: int) -> int:
        return max(BLOCK_ROUND, -(-nbytes // BLOCK_ROUND) * BLOCK_ROUND)

    def malloc(self, nbytes: int) -> Block:
        size = self.round_size(nbytes)
        best: Block | None = None
        for seg in self._segments.values():
            for b in seg.blocks:
                if b.free and b.size >= size and (best is None or b.size < best.size):
                    best = b
        if best is None:
            seg_size = max(self._segment_bytes, -(-size // (2 << 20)) * (2 << 20))
            name = self._new_segment(seg_size)
            best = Block(name, 0, seg_size)
            self._segments[name] = _Segment(name, seg_size, [best])
        self._split(best, size)
        best.free = False
        return best

    def free(self, block: Block) -> None:
        if block.free:
            raise GMAccessError(f"double free of GM block at {block.segment}+{block.offset}")
        block.free = True
        seg = self._segments[block.segment]
        # Merge with free neighbours so that later, larger requests can reuse the space.
        i = seg.blocks.index(block)
        if i + 1 < len(seg.blocks) and seg.blocks[i + 1].free:
            block.size += seg.blocks.pop(i + 1).size
        if i > 0 and seg.blocks[i - 1].free:
            prev = seg.blocks[i - 1]
            prev.size += block.size
            seg.blocks.pop(i)

    def _split(self, block: Block, size: int) -> None:
        rest = block.size - size
        if rest >= BLOCK_ROUND:
            seg = self._segments[block.segment]
            i = seg.blocks.index(block)
            block.size = size
            seg.blocks.insert(i + 1, Block(block.segment, block.offset + size, rest))

    def stats(self) -> dict[str, int]:
        used = sum(b.size for s in self._segments.values() for b in s.blocks if not b.free)
        total = sum(s.size for s in self._segments.values())
        return {"segments": len(self._segments), "reserved_bytes": total, "allocated_bytes": used}


#: segments closed while a view of them was alive: kept mapped for the rest of the process
_STILL_MAPPED: list[shared_memory.SharedMemory] = []


def _still_mapped_close() -> None:
    """close() of a segment in _STILL_MAPPED: nothing to do until the process ends."""


# Numbers segments across every GlobalMemory of the process: two Devices open at once must not
# pick the same name.
_SEGMENT_NUMBERS = itertools.count()


class GlobalMemory:
    """The parent's side of GM: creates and owns the segments, allocates tensors, copies host data.

    Every segment it creates it also unlinks, in :meth:`close`.
    """

    def __init__(self, segment_bytes: int = 64 << 20, poison: int | None = None, max_bytes: int | None = None) -> None:
        if poison is not None and not 0 <= poison <= 255:
            raise UsageError(f"GM poison must be a byte value 0..255, got {poison!r}")
        self.poison = poison
        self.max_bytes = max_bytes
        self._token = _process_token(os.getpid()) or "0"
        self._table = SegmentTable()
        self._owned: list[str] = []
        self._blocks: dict[tuple[str, int], tuple[Block, int]] = {}  # -> (block, alloc_id)
        self._alloc_ids = 0
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
        name = f"{SEGMENT_PREFIX}{os.getpid()}_{self._token}_{next(_SEGMENT_NUMBERS)}"
        try:
            shm = shared_memory.SharedMemory(name=name, create=True, size=nbytes)
        except OSError as e:
            raise GMOutOfMemoryError(f"cannot create a {nbytes}-byte GM segment: {e}") from None
        # Write every page once so that the segment's memory is really allocated now, not at
        # some first write inside a kernel (see prefault).
        view = np.frombuffer(shm.buf, dtype=np.uint8)
        view.fill(0)
        del view
        self._owned.append(name)
        self._table.add(shm)
        return name

    def alloc(self, name: str, shape: Sequence[int], dtype: DTypeLike) -> GlobalTensor:
        """A new tensor with whatever bytes the block held before (stale data, as on the device)."""
        if self._closed:
            raise UsageError("GM is closed")
        d = get_dtype(dtype)
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise UsageError(f"negative dimension in shape {shape} of {name}")
        nbytes = _prod(shape) * d.itemsize
        strides = _c_strides(shape, d.itemsize)
        if nbytes == 0:
            return GlobalTensor(name, d, shape, "", 0, strides, 0, 0)
        block = self._allocator.malloc(nbytes)
        self._alloc_ids += 1
        self._blocks[(block.segment, block.offset)] = (block, self._alloc_ids)
        return GlobalTensor(name, d, shape, block.segment, block.offset, strides, block.offset, nbytes,
                            self._alloc_ids)

    def free(self, t: GlobalTensor) -> None:
        """Give a tensor's block back to the cache (poisoning it if configured)."""
        if t.size == 0 and t.segment == "":
            return
        entry = self._blocks.get((t.segment, t.root_offset))
        if entry is None or entry[1] != t.alloc_id:
            raise UsageError(f"free of {t.name}: not a live allocation of this GM (freed twice?)")
        block = entry[0]
        del self._blocks[(t.segment, t.root_offset)]
        if self.poison is not None:
            view = np.ndarray((block.size,), np.uint8, buffer=self._table.get(block.segment).buf, offset=block.offset)
            view.fill(self.poison)
            del view
        self._allocator.free(block)

    def write(self, t: GlobalTensor, values: np.ndarray) -> None:
        """Host → GM copy (values must already be in the tensor's storage dtype and shape)."""
        arr = np.asarray(values)
        if arr.shape != t.shape:
            raise UsageError(f"cannot write array of shape {arr.shape} into GM tensor {t.name} of shape {t.shape}")
        if arr.dtype != t.dtype.storage:
            raise UsageError(f"cannot write {arr.dtype} data into GM tensor {t.name} of dtype {t.dtype.name}")
        if t.size:
            view = self._table.array(t)
            view[...] = arr
            del view

    def read(self, t: GlobalTensor) -> np.ndarray:
        """GM → host copy."""
        if t.size == 0:
            return np.empty(t.shape, dtype=t.dtype.storage)
        view = self._table.array(t)
        out = view.copy()
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
            try:
                shm.close()
            except BufferError:
                # A numpy view is still alive (e.g. in the frame of a write that Ctrl-C interrupted,
                # kept by the stored KeyboardInterrupt's traceback). Unmapping under it would crash
                # whoever touches it, so the mapping stays until the process ends; without this,
                # SharedMemory.__del__ would retry the close at exit and print the BufferError.
                _STILL_MAPPED.append(shm)
                shm.close = _still_mapped_close  # type: ignore[method-assign]
            try:
                shm.unlink()
            except FileNotFoundError:
                pass
        self._owned.clear()
        self._blocks.clear()
