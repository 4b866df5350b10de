"""The hardware names of an AI core's pipes and events: ``Pipe`` (Ascend C's ``PIPE_*``),
``HardEvent`` (``HardEvent::X_Y``: pipe Y waits for pipe X), the chip's event-id range and
``TPipe::AllocEventID`` / ``FetchEventID``. What runs on which pipe, and how, is in
:mod:`mpnpu.runtime.pipes` (docs/pipes.md).
"""

from __future__ import annotations

import collections
import enum

from mpnpu.errors import KernelAPIError


class Pipe(enum.Enum):
    """Hardware pipes of an AI core (Ascend C's ``PIPE_*``)."""

    ALL = "PIPE_ALL"
    S = "PIPE_S"
    V = "PIPE_V"
    M = "PIPE_M"
    MTE1 = "PIPE_MTE1"
    MTE2 = "PIPE_MTE2"
    MTE3 = "PIPE_MTE3"
    FIX = "PIPE_FIX"

    # Members are singletons: hash by identity, in C (Enum's own __hash__ is a Python call, and
    # pipes and events key the engine's dicts on every instruction).
    __hash__ = object.__hash__

    @property
    def short(self) -> str:
        return self.value[5:]


#: Pipes with their own thread inside a core process (the rest run inline on the kernel thread).
ASYNC_PIPES = (Pipe.MTE2, Pipe.MTE3, Pipe.MTE1, Pipe.FIX)
#: Pipes the race detector models (every pipe but PIPE_ALL), in a fixed order.
ANALYSED_PIPES = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX)

_BY_SHORT = {p.short: p for p in Pipe}


class HardEvent(enum.Enum):
    """Ascend C's ``HardEvent``: ``SRC_DST`` means pipe DST waits for pipe SRC."""

    MTE2_MTE1 = "MTE2_MTE1"
    MTE1_MTE2 = "MTE1_MTE2"
    MTE1_M = "MTE1_M"
    M_MTE1 = "M_MTE1"
    MTE2_V = "MTE2_V"
    V_MTE2 = "V_MTE2"
    MTE3_V = "MTE3_V"
    V_MTE3 = "V_MTE3"
    M_V = "M_V"
    V_M = "V_M"
    V_V = "V_V"
    MTE3_MTE1 = "MTE3_MTE1"
    MTE1_MTE3 = "MTE1_MTE3"
    MTE1_V = "MTE1_V"
    MTE2_M = "MTE2_M"
    M_MTE2 = "M_MTE2"
    V_MTE1 = "V_MTE1"
    M_FIX = "M_FIX"
    FIX_M = "FIX_M"
    MTE3_MTE2 = "MTE3_MTE2"
    MTE2_MTE3 = "MTE2_MTE3"
    S_V = "S_V"
    V_S = "V_S"
    S_MTE2 = "S_MTE2"
    MTE2_S = "MTE2_S"
    S_MTE3 = "S_MTE3"
    MTE3_S = "MTE3_S"
    MTE2_FIX = "MTE2_FIX"
    FIX_MTE2 = "FIX_MTE2"
    FIX_S = "FIX_S"
    M_S = "M_S"
    FIX_MTE3 = "FIX_MTE3"

    __hash__ = object.__hash__

    # set once below, for every member: src/dst are read on every set and wait
    _src: Pipe
    _dst: Pipe

    @property
    def src(self) -> Pipe:
        """The pipe that raises the event (SetFlag's pipe)."""
        return self._src

    @property
    def dst(self) -> Pipe:
        """The pipe that waits for it (WaitFlag's pipe)."""
        return self._dst


for _event in HardEvent:  # computed once: src/dst are read on every set and wait
    _event._src, _event._dst = (_BY_SHORT[part] for part in _event.value.split("_"))


#: Event ids per HardEvent on an Atlas A2 class chip: 0..7.
EVENT_IDS = 8


def check_event(event: object, event_id: object) -> HardEvent:
    """Validate a (HardEvent, id) pair as the chip does; return the event."""
    if type(event) is HardEvent and type(event_id) is int and 0 <= event_id < EVENT_IDS:
        return event  # the common case, checked first: this runs on every set and wait
    if isinstance(event, str):
        try:
            event = HardEvent[event]
        except KeyError:
            raise KernelAPIError(f"unknown HardEvent {event!r}") from None
    if not isinstance(event, HardEvent):
        raise KernelAPIError(f"event must be a HardEvent, got {event!r}")
    if isinstance(event_id, bool) or not isinstance(event_id, int) or not 0 <= event_id < EVENT_IDS:
        raise KernelAPIError(
            f"{event.name}: event id must be an int in 0..{EVENT_IDS - 1} (the chip's event ids), got {event_id!r}"
        )
    return event


class EventIdPool:
    """``TPipe::AllocEventID`` / ``ReleaseEventID`` / ``FetchEventID``: ids 0..7 per HardEvent."""

    def __init__(self) -> None:
        self._taken: dict[HardEvent, set[int]] = collections.defaultdict(set)

    def alloc(self, event: HardEvent) -> int:
        taken = self._taken[event]
        for i in range(EVENT_IDS):
            if i not in taken:
                taken.add(i)
                return i
        raise KernelAPIError(
            f"AllocEventID<{event.name}>: all {EVENT_IDS} event ids are in use (release one with "
            "release_event_id; every TQue buffer holds one id per direction)"
        )

    def release(self, event: HardEvent, event_id: int) -> None:
        if event_id not in self._taken[event]:
            raise KernelAPIError(f"ReleaseEventID<{event.name}>({event_id}): that id is not allocated")
        self._taken[event].discard(event_id)

    def fetch(self, event: HardEvent) -> int:
        """The lowest id not allocated, without reserving it."""
        taken = self._taken.get(event)
        if not taken:
            return 0
        for i in range(EVENT_IDS):
            if i not in taken:
                return i
        raise KernelAPIError(f"FetchEventID<{event.name}>: all {EVENT_IDS} event ids are allocated")

    def reset(self) -> None:
        self._taken.clear()
