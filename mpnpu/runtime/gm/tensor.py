"""GM tensors: typed views of device global memory that pickle small and own no bytes.

A :class:`GlobalTensor` names a shared-memory segment, a byte offset, a shape, strides and a dtype;
it is pickled into a launch and a core turns it into a numpy view on the segment
(:class:`mpnpu.runtime.gm.segments.SegmentTable`). Kernels never touch its bytes directly but go
through ``mpnpu.api.data_copy``, so that every GM access can be traced.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from mpnpu.errors import GMAccessError, InvalidTypeError, MemcheckError

from ..dtypes import DType, DTypeLike, get_dtype
from ..memcheck import gm_fault, hull, leaves

#: every GM tensor and carved sub-buffer starts on this boundary, as DataCopy requires on the device
GM_ALIGN = 32


@dataclass(frozen=True)
class GlobalTensor:
    """A typed view of GM: which segment, where, what shape. Pickles small; has no bytes itself.

    Index it like a numpy array (integers and step-1 or positive-step slices) to get a sub-view,
    e.g. ``x[m0:m1]`` or ``tile[r0:r1, :]``; the view keeps the root tensor's ``name`` so that
    reports can say which tensor an access touched.

    Bounds are taken as written, as the device takes an offset and a length: never clipped to the
    tensor and never counted from its end. An index outside its axis (a negative start or stop or
    integer, a start or stop past the end) gives a view that ``outside`` describes; a kernel that
    reads or writes through such a view fails with a :class:`~mpnpu.errors.MemcheckError` naming
    its line (mpnpu.runtime.memcheck), and so does the host. A view with no elements touches nothing.
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
    #: "" for a view inside its tensor; else which index left it ("x[60:68] leaves axis 0 (size 64)")
    outside: str = ""

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # (read on every copy: math.prod is a C loop)

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
            raise InvalidTypeError("len() of a 0-d GM tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"GlobalTensor({self.name!r}, {self.dtype.name}, shape={self.shape}, offset={self.offset})"

    def __getitem__(self, index: Any) -> GlobalTensor:
        if not isinstance(index, tuple):
            index = (index,)
        if len(index) > self.ndim:
            raise GMAccessError(f"too many indices for GM tensor {self.name} of shape {self.shape}")
        offset = self.offset
        shape: list[int] = []
        strides: list[int] = []
        outside = self.outside
        for axis, (idx, dim, stride) in enumerate(zip(index, self.shape, self.strides)):
            if isinstance(idx, slice):
                start, stop, step = idx.start, idx.stop, idx.step
                start = 0 if start is None else start if type(start) is int else _bound(start, self.name)
                stop = dim if stop is None else stop if type(stop) is int else _bound(stop, self.name)
                step = 1 if step is None else step if type(step) is int else _bound(step, self.name)
                if step <= 0:
                    raise GMAccessError(f"GM tensor {self.name}: only positive slice steps are supported")
                length = max(0, (stop - start + step - 1) // step)
                if not (0 <= start <= dim and 0 <= stop <= dim):
                    outside = outside or leaves(self.name, index, axis, dim)
                    offset += start * stride  # as written: the view reaches outside the tensor
                elif length:
                    offset += start * stride
                shape.append(length)
                strides.append(stride * step)
            elif isinstance(idx, (int, np.integer)) and not isinstance(idx, bool):
                i = int(idx)
                if not 0 <= i < dim:
                    outside = outside or leaves(self.name, index, axis, dim)
                offset += i * stride
            else:
                raise GMAccessError(f"GM tensor {self.name}: unsupported index {idx!r}")
        shape.extend(self.shape[len(index):])
        strides.extend(self.strides[len(index):])
        view = self._view(tuple(shape), offset, tuple(strides))
        if outside:
            view.__dict__["outside"] = outside
        return view

    @property
    def byte_span(self) -> tuple[int, int]:
        """[start, stop) of the bytes this view touches, from the root tensor's first byte."""
        lo, hi = hull(self.offset, self.shape, self.strides, self.dtype.itemsize)
        return lo - self.root_offset, hi - self.root_offset

    def illegal(self, kind: str, call: str, site: str = "", func: str = "") -> MemcheckError:
        """The error of reading (``kind`` "illegal read") or writing through this view, which
        ``outside`` says left its tensor, by ``call`` at the kernel's ``site``."""
        start, stop = self.byte_span
        return gm_fault(kind, call, site, func, self.name, self.dtype.name, self.dtype.itemsize, self.root_nbytes,
                        start, stop, self.outside)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Pickled into every launch, for every core: as a tuple of its fields rebuilt by one
        # function (the default pickles the class and a dict of field names, and loading that takes
        # about three times as long, paid by every core while its caches are cold).
        d = self.__dict__
        return (_rebuild, (d["name"], d["dtype"].name, d["shape"], d["segment"], d["offset"], d["strides"],
                           d["root_offset"], d["root_nbytes"], d["alloc_id"], d["outside"]))

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
            c_strides(new_shape, self.dtype.itemsize), self.root_offset, self.root_nbytes, self.alloc_id,
            self.outside,
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
        if self.outside:
            raise GMAccessError(f"cannot carve {name!r} from a view outside its tensor: {self.outside}")
        if byte_offset < 0 or byte_offset % GM_ALIGN:
            raise GMAccessError(f"carve {name!r}: byte offset {byte_offset} is not {GM_ALIGN}-byte aligned")
        if byte_offset + nbytes > self.nbytes:
            raise GMAccessError(
                f"carve {name!r}: bytes [{byte_offset}, {byte_offset + nbytes}) exceed {self.name} "
                f"({self.nbytes} bytes)"
            )
        start = self.offset + byte_offset
        return GlobalTensor(name, d, shape, self.segment if nbytes else "", start,
                            c_strides(shape, d.itemsize), start, nbytes)


_FIELDS = ("name", "dtype", "shape", "segment", "offset", "strides", "root_offset", "root_nbytes", "alloc_id",
           "outside")


def new_tensor(name: str, dtype: DType, shape: tuple[int, ...], segment: str, offset: int,
               strides: tuple[int, ...], root_offset: int, root_nbytes: int, alloc_id: int = 0) -> GlobalTensor:
    """``GlobalTensor(...)`` with these fields, without the frozen dataclass's field-by-field
    ``__init__`` (GM allocates a tensor for every input, output and workspace of every case)."""
    t = object.__new__(GlobalTensor)
    d = t.__dict__
    d["name"], d["dtype"], d["shape"], d["segment"], d["offset"] = name, dtype, shape, segment, offset
    d["strides"], d["root_offset"], d["root_nbytes"], d["alloc_id"], d["outside"] = (
        strides, root_offset, root_nbytes, alloc_id, "")
    return t


def _rebuild(*fields: Any) -> GlobalTensor:
    """A GlobalTensor from its pickled fields (see GlobalTensor.__reduce__), the dtype by name."""
    t = object.__new__(GlobalTensor)
    d = t.__dict__
    d.update(zip(_FIELDS, fields))
    d["dtype"] = get_dtype(fields[1])
    return t


def _bound(value: Any, name: str) -> int:
    """A slice bound that is not an int (a numpy integer, anything with __index__) as an int."""
    if isinstance(value, bool):
        raise GMAccessError(f"GM tensor {name}: unsupported slice bound {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise GMAccessError(f"GM tensor {name}: unsupported slice bound {value!r}") from None


def _prod(shape: Iterable[int]) -> int:
    return math.prod(shape)


#: c_strides' answers for shapes it has seen (a batch allocates the same few shapes again and again)
_STRIDES: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}


def c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array of ``shape``."""
    dims = tuple(shape)
    # (only plain ints are remembered: 4.0 == 4, and a cached answer must not hand another caller
    # the first caller's types)
    if type(itemsize) is int and all(type(d) is int for d in dims):
        return int_strides(dims, itemsize)
    return _strides_of(dims, itemsize)


def int_strides(dims: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """c_strides of a shape already a tuple of plain ints (as GM allocation has made it), remembered."""
    hit = _STRIDES.get((dims, itemsize))
    if hit is None:
        hit = _strides_of(dims, itemsize)
        if len(_STRIDES) >= 4096:  # (bounded: a sweep over many shapes must not grow it for ever)
            _STRIDES.clear()
        _STRIDES[(dims, itemsize)] = hit
    return hit


def _strides_of(dims: tuple[Any, ...], itemsize: Any) -> tuple[Any, ...]:
    strides = []
    acc = itemsize
    for dim in reversed(dims):
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
