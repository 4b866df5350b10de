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
from typing import Sequence

import numpy as np

from mpnpu.errors import CapacityError, KernelAPIError

from .config import DeviceSpec
from .dtypes import DType, DTypeLike, get_dtype
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
    """A numpy array in a core's local memory, tagged with its device dtype and position."""

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
        lo = hi = arr.__array_interface__["data"][0]
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
