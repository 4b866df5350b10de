"""Core-private local memory: UB on vector cores, L1 / L0A / L0B / L0C on cube cores.

Ascend C kernels reserve local memory through a ``TPipe``: ``pipe.InitBuffer(buf, bytes)`` then
``buf.Get<T>()``. mpnpu keeps that shape (``TPipe.init_buffer`` / ``TBuf.get``) and checks every
reservation against the device's capacity for that memory, so a tiling that would not fit on the
chip fails here too. A core's local memory is one preallocated byte array per memory that lives as
long as the core process: like on the device, a buffer starts with whatever the last use left.

A :class:`LocalTensor` is a numpy array that also knows its device dtype (so bfloat16, stored as
uint16, is not mistaken for an integer) and its position.
"""

from __future__ import annotations

import enum
import sys
from types import FrameType
from typing import Any, Callable, Sequence

import numpy as np

from mpnpu.errors import CapacityError, KernelAPIError, MemcheckError, UnknownNameError

from . import kcontext
from .config import DeviceSpec
from .dtypes import DType, DTypeLike, get_dtype
from .memcheck import ILLEGAL_READ, ILLEGAL_WRITE, hull, index_text, local_fault
from .pipe_events import EventIdPool, HardEvent
from .topology import CoreInfo, CoreType

_ALIGN = 32


class TPosition(enum.Enum):
    """Logical buffer positions of Ascend C, each backed by one physical memory."""

    VECIN = "VECIN"
    VECOUT = "VECOUT"
    VECCALC = "VECCALC"
    A1 = "A1"
    B1 = "B1"
    C1 = "C1"
    A2 = "A2"
    B2 = "B2"
    CO1 = "CO1"

    __hash__ = object.__hash__  # members are singletons; Enum's own __hash__ is a Python call


POSITION_MEMORY = {
    TPosition.VECIN: "UB",
    TPosition.VECOUT: "UB",
    TPosition.VECCALC: "UB",
    TPosition.A1: "L1",
    TPosition.B1: "L1",
    TPosition.C1: "L1",
    TPosition.A2: "L0A",
    TPosition.B2: "L0B",
    TPosition.CO1: "L0C",
}
MEMORY_CORE_TYPE = {"UB": CoreType.VECTOR, "L1": CoreType.CUBE, "L0A": CoreType.CUBE,
                    "L0B": CoreType.CUBE, "L0C": CoreType.CUBE}


class LocalTensor(np.ndarray):
    """A numpy array in a core's local memory, tagged with its device dtype and position.

    Indexed with integers and slices, it takes the bounds as written (memcheck): an index outside
    its axis — a negative one, or one past the end, which numpy would count from the end or clip —
    gives an :class:`OutsideLocal` view whose every use is an illegal access, and an assignment
    through such an index is an illegal write, both reported as :class:`~mpnpu.errors.MemcheckError`
    at the kernel's line. Index arrays and masks are numpy's.
    """

    _device_dtype: DType | None
    position: TPosition | None

    def __array_finalize__(self, obj: object) -> None:
        self._device_dtype = getattr(obj, "_device_dtype", None)
        self.position = getattr(obj, "position", None)

    @property
    def device_dtype(self) -> DType:
        d = self._device_dtype
        # After astype() & co. the storage changes; the tag only holds while the storage matches.
        if d is None or d.storage != self.dtype:
            return get_dtype(self.dtype)
        return d

    # Kernels index local tensors in their inner loops: the common keys (an int, a slice of ints or
    # None, ...) are checked inline; everything else goes through _leaves.
    def __getitem__(self, key: Any) -> Any:
        t = type(key)
        if t is slice:
            start, stop = key.start, key.stop
            if ((start is None or (type(start) is int and start >= 0))
                    and (stop is None or (type(stop) is int and 0 <= stop <= len(self)))
                    and (start is None or start <= len(self))):
                return _GETITEM(self, key)
        elif t is int:
            if key >= 0 and self.ndim and key < len(self):
                return _GETITEM(self, key)
        elif key is Ellipsis:
            return _GETITEM(self, key)
        bad = _leaves(self.shape, key)
        if bad is not None and _kernel_code(sys._getframe(1)):
            return OutsideLocal(self, key, bad)
        return _GETITEM(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        t = type(key)
        if key is Ellipsis or (t is int and key >= 0 and self.ndim and key < len(self)):
            _SETITEM(self, key, value)
            return
        bad = _leaves(self.shape, key)
        if bad is not None and _kernel_code(sys._getframe(1)):
            raise OutsideLocal(self, key, bad).fault(ILLEGAL_WRITE, "an assignment")
        _SETITEM(self, key, value)


_GETITEM = np.ndarray.__getitem__
_SETITEM = np.ndarray.__setitem__


def memcheck_local(on: bool) -> None:
    """Check the indices of local tensors in this process (the default), or index them as numpy
    does (``RuntimeOptions(memcheck=False)``: a core process calls this once, at its start)."""
    if on:
        LocalTensor.__getitem__ = _CHECKED_GETITEM  # type: ignore[method-assign]
        LocalTensor.__setitem__ = _CHECKED_SETITEM  # type: ignore[method-assign]
    else:
        LocalTensor.__getitem__ = _GETITEM  # type: ignore[method-assign]
        LocalTensor.__setitem__ = _SETITEM  # type: ignore[method-assign]


def _kernel_code(frame: FrameType) -> bool:
    """Whether the code indexing a local tensor is a kernel's (memcheck applies), not numpy's (its
    printing counts from the end), the standard library's or mpnpu's."""
    return kcontext.is_kernel_code(frame.f_code)


def _leaves(shape: tuple[int, ...], key: Any) -> tuple[int, int] | None:
    """(axis, size) of the first integer or slice bound of ``key`` outside its axis of ``shape``
    (negative, or past the end), None when there is none. Fancy indices end the check."""
    t = type(key)
    if t is int:  # the common scalar access
        return None if shape and 0 <= key < shape[0] else ((0, shape[0]) if shape else None)
    items = key if t is tuple else (key,)
    axis = 0
    for i, idx in enumerate(items):
        if axis >= len(shape):
            return None  # too many indices: numpy says so
        t = type(idx)
        if t is slice:
            dim = shape[axis]
            for bound in (idx.start, idx.stop):
                if bound is not None and isinstance(bound, (int, np.integer)) and not 0 <= bound <= dim:
                    return axis, dim
            axis += 1
        elif (t is int or isinstance(idx, np.integer)) and t is not bool:
            if not 0 <= idx < shape[axis]:
                return axis, shape[axis]
            axis += 1
        elif idx is None:
            continue
        elif idx is Ellipsis:
            axis = len(shape) - sum(1 for j in items[i + 1:] if j is not None)
        else:
            return None  # an index array or a mask: numpy's rules from here on
    return None


class OutsideLocal:
    """A view a kernel took outside the local tensor it indexed (``ub[0:300]`` of 256 elements):
    it holds no data, and any use of it — as a DataCopy or instruction operand, in numpy, indexed —
    raises the :class:`~mpnpu.errors.MemcheckError` of an illegal read (or write, as an
    assignment's or an output's target) at the kernel line that used it."""

    __slots__ = ("_base", "_key", "_axis", "_dim")

    def __init__(self, base: np.ndarray, key: Any, bad: tuple[int, int]) -> None:
        self._base, self._key = base, key
        self._axis, self._dim = bad

    def fault(self, kind: str, call: str) -> MemcheckError:
        """The error of using this view for ``call`` (``kind``: illegal read / illegal write)."""
        base = self._base
        ctx = kcontext.current_or_none()
        where = ctx.tpipe.locate(base) if ctx is not None else None
        if where is not None:
            memory, lo, hi = where
        else:  # a temporary array, not in local memory: bytes of the tensor itself
            position = getattr(base, "position", None)
            memory, lo, hi = (POSITION_MEMORY[position] if position is not None else "local memory"), 0, base.nbytes
        start, stop = _requested(base, self._key)
        key = self._key if isinstance(self._key, tuple) else (self._key,)
        note = (f"index {index_text('', key)} leaves axis {self._axis} (size {self._dim}) of a local tensor "
                f"of shape {tuple(base.shape)}")
        site, func = kcontext.call_site_and_function()
        return local_fault(kind, call, site, func, memory, lo + start, lo + stop, lo, hi, note)

    def __repr__(self) -> str:
        key = self._key if isinstance(self._key, tuple) else (self._key,)
        return f"<local view outside its tensor: {index_text('', key)}>"

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise self.fault(ILLEGAL_READ, "numpy")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out") or ()
        kind = ILLEGAL_WRITE if any(o is self for o in (out if isinstance(out, tuple) else (out,))) else ILLEGAL_READ
        raise self.fault(kind, f"numpy {getattr(ufunc, '__name__', 'ufunc')}")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        kind = ILLEGAL_WRITE if func is np.copyto and args and args[0] is self else ILLEGAL_READ
        raise self.fault(kind, f"numpy {getattr(func, '__name__', 'function')}")

    def __getitem__(self, key: Any) -> Any:
        raise self.fault(ILLEGAL_READ, "indexing")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise self.fault(ILLEGAL_WRITE, "an assignment")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # protocol lookups (numpy's __array_interface__, copy, pickle)
            raise UnknownNameError(name)  # (an AttributeError, as the attribute protocol needs)
        raise self.fault(ILLEGAL_READ, f".{name}")

    def __len__(self) -> int:
        raise self.fault(ILLEGAL_READ, "len()")

    def __iter__(self) -> Any:
        raise self.fault(ILLEGAL_READ, "iteration")

    def __float__(self) -> float:
        raise self.fault(ILLEGAL_READ, "float()")

    def __int__(self) -> int:
        raise self.fault(ILLEGAL_READ, "int()")

    def __bool__(self) -> bool:
        raise self.fault(ILLEGAL_READ, "bool()")


def _operator(name: str, symbol: str) -> Callable[..., Any]:
    def op(self: OutsideLocal, *args: Any) -> Any:
        raise self.fault(ILLEGAL_READ, f"the operator {symbol}")
    op.__name__ = name
    return op


for _name, _symbol in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("floordiv", "//"),
                       ("mod", "%"), ("pow", "**"), ("matmul", "@"), ("and", "&"), ("or", "|"), ("xor", "^")):
    setattr(OutsideLocal, f"__{_name}__", _operator(f"__{_name}__", _symbol))
    setattr(OutsideLocal, f"__r{_name}__", _operator(f"__r{_name}__", _symbol))
for _name, _symbol in (("neg", "-"), ("pos", "+"), ("abs", "abs()"), ("invert", "~"), ("lt", "<"), ("le", "<="),
                       ("gt", ">"), ("ge", ">=")):
    setattr(OutsideLocal, f"__{_name}__", _operator(f"__{_name}__", _symbol))


_CHECKED_GETITEM = LocalTensor.__getitem__
_CHECKED_SETITEM = LocalTensor.__setitem__


def _requested(base: np.ndarray, key: Any) -> tuple[int, int]:
    """[start, stop) of the bytes ``base[key]`` would touch were the bounds taken as written, from
    ``base``'s first byte (index arrays and masks count as their whole axis)."""
    items = key if isinstance(key, tuple) else (key,)
    shape: list[int] = []
    strides: list[int] = []
    offset = 0
    axis = 0
    for i, idx in enumerate(items):
        if idx is None:
            continue
        if idx is Ellipsis:
            n = len(base.shape) - axis - sum(1 for j in items[i + 1:] if j is not None)
            shape += base.shape[axis:axis + n]
            strides += base.strides[axis:axis + n]
            axis += n
            continue
        if axis >= base.ndim:
            break
        dim, st = base.shape[axis], base.strides[axis]
        if isinstance(idx, slice):
            start = 0 if idx.start is None else int(idx.start)
            stop = dim if idx.stop is None else int(idx.stop)
            step = 1 if idx.step is None else int(idx.step)
            n = max(0, (stop - start + step - 1) // step) if step > 0 else 0
            offset += start * st
            shape.append(n)
            strides.append(st * step)
        elif isinstance(idx, (int, np.integer)) and not isinstance(idx, bool):
            offset += int(idx) * st
        else:
            shape.append(dim)
            strides.append(st)
        axis += 1
    shape += base.shape[axis:]
    strides += base.strides[axis:]
    return hull(offset, shape, strides, base.itemsize)


class TBuf:
    """A reserved range of one local memory; ``get`` views it as a typed tensor."""

    def __init__(self, raw: np.ndarray, position: TPosition) -> None:
        self._raw = raw
        self.position = position

    @property
    def nbytes(self) -> int:
        return self._raw.nbytes

    def get(self, shape: int | Sequence[int], dtype: DTypeLike) -> LocalTensor:
        d = get_dtype(dtype)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        count = 1
        for s in shape:
            count *= s
        nbytes = count * d.itemsize
        if nbytes > self._raw.nbytes:
            raise CapacityError(
                f"TBuf.get: {shape} of {d.name} needs {nbytes} bytes, the buffer has {self._raw.nbytes}"
            )
        arr: LocalTensor = self._raw[:nbytes].view(d.storage).reshape(shape).view(LocalTensor)
        arr._device_dtype = d
        arr.position = self.position
        return arr


class TPipe:
    """Reserves local memory for one core and checks it against the device's capacities."""

    def __init__(self, core: CoreInfo, spec: DeviceSpec, arenas: dict[str, np.ndarray]) -> None:
        self._core = core
        self._spec = spec
        self._arenas = arenas
        self._used = {memory: 0 for memory in arenas}
        self._events = EventIdPool()
        # (first address, last address + 1, memory name) of every arena, for locate()
        self._spans = [(a.ctypes.data, a.ctypes.data + a.nbytes, m) for m, a in arenas.items()]

    def alloc_event_id(self, event: HardEvent) -> int:
        """AllocEventID: reserve the lowest free id (0..7) of ``event`` until release_event_id."""
        return self._events.alloc(event)

    def release_event_id(self, event: HardEvent, event_id: int) -> None:
        """ReleaseEventID."""
        self._events.release(event, event_id)

    def fetch_event_id(self, event: HardEvent) -> int:
        """FetchEventID: the lowest id of ``event`` not allocated, without reserving it."""
        return self._events.fetch(event)

    def locate(self, arr: np.ndarray) -> tuple[str, int, int] | None:
        """(memory, start, stop): the byte hull of ``arr`` in this core's local memory, or None."""
        if arr.size == 0:
            return None
        face = arr.__array_interface__  # (the one way to the address: build it once)
        lo = hi = face["data"][0]
        if face["strides"] is None:  # C-contiguous, the usual view: its bytes in one run
            hi += arr.nbytes
        else:
            for n, st in zip(arr.shape, arr.strides):
                if st >= 0:
                    hi += (n - 1) * st
                else:
                    lo += (n - 1) * st
            hi += arr.itemsize
        for a0, a1, memory in self._spans:
            if a0 <= lo and hi <= a1:
                return memory, lo - a0, hi - a0
        return None

    def init_buffer(self, position: TPosition, nbytes: int) -> TBuf:
        """Reserve ``nbytes`` (rounded up to 32) of the memory behind ``position``."""
        if not isinstance(position, TPosition):
            raise KernelAPIError(f"init_buffer: position must be a TPosition, got {position!r}")
        memory = POSITION_MEMORY[position]
        if MEMORY_CORE_TYPE[memory] is not self._core.core_type:
            raise KernelAPIError(
                f"{self._core.label} has no {memory} ({position.value} is on "
                f"{MEMORY_CORE_TYPE[memory].value} cores)"
            )
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise KernelAPIError(f"init_buffer: size must be a non-negative integer, got {nbytes!r}")
        size = -(-int(nbytes) // _ALIGN) * _ALIGN
        used = self._used[memory]
        capacity = self._spec.capacity(memory)
        if used + size > capacity:
            raise CapacityError(
                f"{memory} overflow on {self._core.label}: reserving {size} bytes with {used} of "
                f"{capacity} already in use",
                memory=memory, requested=size, used=used, capacity=capacity,
            )
        self._used[memory] = used + size
        return TBuf(self._arenas[memory][used:used + size], position)

    def used(self, memory: str) -> int:
        return self._used[memory]

    def reset(self) -> None:
        """Release every reservation (done by the runtime at the start of each launch)."""
        for memory in self._used:
            self._used[memory] = 0
        self._events.reset()


def make_arenas(core: CoreInfo, spec: DeviceSpec) -> dict[str, np.ndarray]:
    """One byte array per local memory the core type has, sized to its capacity."""
    return {
        memory: np.zeros(spec.capacity(memory), dtype=np.uint8)
        for memory, core_type in MEMORY_CORE_TYPE.items()
        if core_type is core.core_type
    }
