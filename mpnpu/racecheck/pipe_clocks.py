"""The clocks of one core's pipes: the rules by which its instructions are ordered (the model is in
:mod:`mpnpu.racecheck.intracore`'s docstring), shared by the walk over decoded events
(:func:`mpnpu.racecheck.intracore.core_clocks`) and the one over a compiled kernel's record columns
(:mod:`mpnpu.racecheck.records_clocks`).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from mpnpu.errors import TraceError
from mpnpu.runtime.pipe_events import ANALYSED_PIPES
from mpnpu.runtime.trace import (
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    LocalAccess,
    PipeSyncEvent,
    SyncAllEvent,
)

PIPE_INDEX = {p.value: i for i, p in enumerate(ANALYSED_PIPES)}
S = PIPE_INDEX["PIPE_S"]
N = len(ANALYSED_PIPES)
INTRA_CALLS = ("set_flag", "wait_flag", "pipe_barrier")
#: a SyncAll orders a core's GM accesses too (the core's pipes are drained before it arrives)
GM_ORDERING_CALLS = INTRA_CALLS + ("sync_all",)
#: memory ids of GM accesses are keyed by segment under this prefix (local memories by their name)
GM_KEY = "GM:"
#: pipes whose instructions the compiler's automatic synchronisation orders before a scalar access
AUTO_SYNCED = tuple(PIPE_INDEX[p] for p in ("PIPE_MTE2", "PIPE_MTE3", "PIPE_V"))


@dataclass
class CoreAccesses:
    """The accesses of one core (local ones, and GM ones made on a pipe) with their clocks (columns)."""

    events: Sequence[LocalAccess | Access]  # (decoded when read, for a compiled kernel's records)
    pos: np.ndarray  # index in the core's event list
    pipe: np.ndarray  # pipe index (ANALYSED_PIPES order)
    stamp: np.ndarray  # own component of the access's clock
    clock: np.ndarray  # (n, pipes) vector clocks
    write: np.ndarray  # bool
    memory: np.ndarray  # memory id (a local memory, or a GM segment)
    start: np.ndarray  # byte hull [start, stop) in that memory
    stop: np.ndarray
    atomic: np.ndarray  # bool: a GM atomic add
    dropped: list[tuple[int, DroppedSyncEvent]]  # intra-core syncs the launch dropped, with positions


def pipe_index(name: str, ev: object) -> int:
    try:
        return PIPE_INDEX[name]
    except KeyError:
        raise TraceError(f"inconsistent trace: unknown pipe {name!r} in {ev!r}") from None


class PipeClocks:
    """The clock rules (:mod:`mpnpu.racecheck.intracore`'s docstring), applied event by event in issue order.

    Clocks are lists of 7 ints: per event, numpy's call overhead on such tiny arrays costs more
    than the work (this runs for every access and sync of every traced launch).
    """

    def __init__(self) -> None:
        self.vc = [[0] * N for _ in range(N)]  # vc[p]: clock of pipe p after its last instruction
        self.released: dict[tuple[str, int], deque[tuple[int, ...]]] = defaultdict(deque)
        # PIPE_S's clock changes rarely (barriers, SyncAll, its own instructions): a pipe joins it
        # only when it changed since that pipe last did (a walk that issues accesses inline keeps
        # these two up to date itself)
        self.s_version = 0
        self.joined = [-1] * N

    def rejoin(self) -> None:
        """``vc`` was changed from outside (the scalar unit's clock may have moved): every pipe
        joins the scalar unit's clock again at its next instruction."""
        self.s_version += 1

    def issue(self, p: int) -> list[int]:
        """An instruction on pipe p: after what PIPE_S has waited for, after p's previous one.
        Returns p's clock (this object's own list: copy it to keep it)."""
        vc = self.vc
        row = vc[p]
        if self.joined[p] != self.s_version:
            row = vc[p] = list(map(max, row, vc[S]))
            self.joined[p] = self.s_version
        row[p] += 1
        if p == S:
            self.s_version += 1
        return row

    def drain(self, pipes: Iterable[int]) -> None:
        """PIPE_S waits for everything issued to ``pipes``."""
        vc = self.vc
        s = vc[S]
        for q in pipes:
            s = list(map(max, s, vc[q]))
        s[S] += 1
        vc[S] = s
        self.s_version += 1

    def join_scalar(self, clocks: Iterable[Sequence[int]]) -> None:
        """PIPE_S waits for the instructions with these clocks (a wait it does not issue itself)."""
        s = self.vc[S]
        for c in clocks:
            s = list(map(max, s, c))
        s[S] += 1
        self.vc[S] = s
        self.s_version += 1

    def sync(self, ev: Any) -> list[int] | None:
        """Apply an intra-core sync event (PipeSyncEvent or SyncAllEvent); the clock of the
        instruction it issued, if any."""
        if type(ev) is SyncAllEvent:
            self.drain(range(N))
            return None
        if ev.op == "barrier":
            self.drain(range(N) if ev.pipe == "PIPE_ALL" else (pipe_index(ev.pipe, ev),))
            return None
        p = pipe_index(ev.pipe, ev)
        clock = self.issue(p)
        if ev.op == "set":
            self.released[(ev.event, ev.event_id)].append(tuple(clock))
        elif ev.op == "wait":
            q = self.released[(ev.event, ev.event_id)]
            if not q:
                raise TraceError(
                    f"inconsistent trace: wait_flag<{ev.event}>({ev.event_id}) at {ev.site} has no set before it"
                )
            clock = self.vc[p] = list(map(max, clock, q.popleft()))
            if p == S:
                self.s_version += 1
        return clock


#: cross-core flag modes whose wait needs a set from the waiting core itself
OWN_SET_MODES = (0, 1)


class CoreSyncs:
    """A core's sync events applied to its pipe clocks in issue order (everything but its accesses):
    intra-core syncs and SyncAll, and a cross-core wait in mode 0 or 1, which returns only once the
    core's own set on that flag has fired (its clock joins the scalar unit's). Also keeps the
    intra-core syncs and SyncAlls the launch dropped, with their positions."""

    __slots__ = ("pc", "own_sets", "setting", "dropped")

    def __init__(self, pc: PipeClocks) -> None:
        self.pc = pc
        self.own_sets: dict[tuple[int, int], deque[tuple[int, ...]]] = defaultdict(deque)
        self.setting: tuple[int, int] | None = None  # the cross-core set whose "xset" (its pipe) comes next
        self.dropped: list[tuple[int, DroppedSyncEvent]] = []

    def step(self, i: int, ev: Any) -> None:
        """Apply event ``ev`` (at position ``i`` of the core's events); accesses are not its job."""
        t = type(ev)
        if t is PipeSyncEvent or t is SyncAllEvent:
            issued = self.pc.sync(ev)
            if t is PipeSyncEvent and ev.op == "xset" and self.setting is not None and issued is not None:
                self.own_sets[self.setting].append(tuple(issued))
                self.setting = None
        elif t is FlagSetEvent:
            self.setting = (ev.mode, ev.flag_id) if ev.mode in OWN_SET_MODES else None
        elif t is FlagWaitEvent and ev.mode in OWN_SET_MODES:
            mine = self.own_sets[(ev.mode, ev.flag_id)]
            if mine:  # the wait returned only once this core's own set had fired
                self.pc.join_scalar([mine.popleft()])
        elif t is DroppedSyncEvent and ev.call in GM_ORDERING_CALLS:
            self.dropped.append((i, ev))


#: the event types :meth:`CoreSyncs.step` acts on
SYNC_TYPES = frozenset((PipeSyncEvent, SyncAllEvent, FlagSetEvent, FlagWaitEvent, DroppedSyncEvent))
