"""Happens-before for one traced launch, as vector clocks.

The model (docs/device-model.md, routing in :mod:`mpnpu.runtime.topology`)::

    program order      every core's events are totally ordered as recorded
    SyncAll            the k-th SyncAll of every party is one barrier round: everything before any
                       party's arrival happens before everything after any party's departure.
                       aiv_only=False: all 3*block_dim cores; aiv_only=True: the vector cores only
    cross-core flags   counting: for sender s, receiver r in flag_receivers(mode, s) and flag id f,
                       the j-th set by s that routes to r happens before the j-th wait of r on
                       (mode, f). A wait needs every sender in flag_senders(mode, r), so it acquires
                       the j-th set of each (mode 0 includes the waiter's own set)
    GM flag words      (IBSet / IBWait, NotifyNextBlock / WaitPreBlock of a C++ kernel) the releases of one
                       word, by any core, counted from 1 in the order of their times: a wait that
                       returned at the word's t-th release acquires that release (what its core did
                       before it; the release follows a barrier of every pipe of its core). The
                       rule of polled GM (:mod:`.polls`) adds such words of its own: a write a poll
                       observed releases what that write comes after, the poll's core acquires it
    dropped syncs,     no edges (a dropped sync simply did not happen)
    stage markers

Epochs. Each core's event list is cut at its sync events (SyncAll, flag set, flag wait) into
*epochs*: epoch e of core c holds the events after its e-th sync event and before the next one.
Every sync event bumps the core's own clock, so the own component of epoch e's clock is e + 1.
``vc[base[c] + e]`` is the clock of epoch e of core c (one row of an int32 matrix).

The HB test for an event a in epoch e_a of core c_a and an event b in epoch e_b of core c_b::

    a -> b   iff   e_a + 1 <= vc[base[c_b] + e_b, c_a]

Why that is exact: component c_a of b's clock only grows by acquiring (via a wait or a barrier
departure, possibly transitively) a clock that c_a released at some sync event ending epoch
e' >= e_a, and that sync event is after a in c_a's program order.

With pipes (a compiled kernel's GM accesses are made by MTE2, MTE3 or the scalar unit), a release
covers an access only if its pipe has reached it (:func:`mpnpu.racecheck.intracore.release_points`):
then each row also holds one component per pipe of every core, and the test for an access made on
pipe q with stamp st is ``st <= vc[base[c_b] + e_b, pipe_column(c_a, q)]``. A release sets its own
core's pipe components to what it covers (never lowering what the core acquired of them), so
acquiring a later release that does not cover an access says nothing of that access.

The clocks are built by replaying the sync events of all cores (each core advances until it
reaches a wait whose sets, or a barrier whose arrivals, are not replayed yet). A trace whose syncs
cannot all be replayed (a wait without its set, unequal SyncAll counts, a cycle) is inconsistent —
typically a launch that failed part-way — and raises ValueError instead of guessing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Sequence, Union

import numpy as np
import numpy.typing as npt

from mpnpu.errors import NotFoundError, TraceError
from mpnpu.runtime.pipe_events import ANALYSED_PIPES
from mpnpu.runtime.topology import CoreType, Topology
from mpnpu.runtime.trace import (
    FlagSetEvent,
    FlagWaitEvent,
    GmFlagEvent,
    LaunchTrace,
    SyncAllEvent,
    TraceEvent,
)

#: clock components per core for its pipes (ANALYSED_PIPES order), when releases are per pipe
N_PIPES = len(ANALYSED_PIPES)

#: Event types that create happens-before edges (and so start a new epoch on their core).
SYNC_TYPES: tuple[type, ...] = (SyncAllEvent, FlagSetEvent, FlagWaitEvent, GmFlagEvent)
SyncEvent = Union[SyncAllEvent, FlagSetEvent, FlagWaitEvent, GmFlagEvent]


@dataclass(frozen=True)
class VectorClocks:
    """Vector clocks of every epoch of every core of one launch.

    ``vc[base[c] + e]`` is the clock of epoch ``e`` of core ``c``; ``base`` has ``n_cores + 1``
    entries so that ``base[c + 1] - base[c]`` is the number of epochs of core ``c``.
    """

    topology: Topology
    base: np.ndarray  # int64, (n_cores + 1,)
    vc: np.ndarray  # int32, (total epochs, n_cores [+ n_cores * N_PIPES: per-pipe components])

    def n_epochs(self, core: int) -> int:
        """Number of epochs of ``core`` (its sync events + 1)."""
        return int(self.base[core + 1] - self.base[core])

    def clock(self, core: int, epoch: int) -> np.ndarray:
        """The vector clock of ``epoch`` of ``core`` (a read-only view)."""
        if not 0 <= epoch < self.n_epochs(core):
            raise NotFoundError(f"core {core} has {self.n_epochs(core)} epochs, not {epoch + 1}")
        row: np.ndarray = self.vc[self.base[core] + epoch]
        return row

    def happens_before(
        self, core_a: npt.ArrayLike, epoch_a: npt.ArrayLike, core_b: npt.ArrayLike, epoch_b: npt.ArrayLike
    ) -> np.ndarray:
        """Whether events in (core_a, epoch_a) happen before events in (core_b, epoch_b).

        Vectorized: every argument may be an int or an integer array (broadcast together). Two
        events of the same core are ordered by program order only if their epochs differ; callers
        that compare events of one core must use their positions instead.
        """
        core_a = np.asarray(core_a)
        epoch_a = np.asarray(epoch_a)
        row_b = self.base[np.asarray(core_b)] + np.asarray(epoch_b)
        ordered: np.ndarray = epoch_a + 1 <= self.vc[row_b, core_a]
        return ordered


def sync_events(events: Sequence[TraceEvent]) -> list[SyncEvent]:
    """The events of one core that create happens-before edges, in program order."""
    return [ev for ev in events if isinstance(ev, SYNC_TYPES)]  # type: ignore[misc]  # SYNC_TYPES are SyncEvent


def _flag_routes(topo: Topology, fn: Callable[[int, int], tuple[int, ...]], mode: int, core: int,
                 ev: FlagSetEvent | FlagWaitEvent) -> tuple[int, ...]:
    """``topo.flag_receivers`` / ``flag_senders`` with the failing event named in the error."""
    try:
        return fn(mode, core)
    except ValueError as exc:
        raise TraceError(
            f"inconsistent trace: {type(ev).__name__} by {topo.core(core).label} at {ev.site} "
            f"(mode {mode}, flag {ev.flag_id}): {exc}"
        ) from None


def _check_counts(topo: Topology, syncs: Sequence[Sequence[SyncEvent]]) -> None:
    """Raise ValueError with a precise message for sync counts that cannot pair up.

    The replay would also get stuck on these, but here we can say which core and which sync.
    """
    n_all = [0] * topo.n_cores
    n_aiv = [0] * topo.n_cores
    sets: dict[tuple[int, int, int, int], int] = defaultdict(int)  # (mode, id, r, s) -> n
    waits: dict[tuple[int, int, int], int] = defaultdict(int)  # (r, mode, id) -> n
    gm_releases: dict[int, int] = defaultdict(int)  # GM flag word -> releases
    gm_waits: list[tuple[int, GmFlagEvent]] = []
    for c, evs in enumerate(syncs):
        for ev in evs:
            if isinstance(ev, GmFlagEvent):
                if ev.op == "wait":
                    gm_waits.append((c, ev))
                else:
                    gm_releases[ev.key] += 1
            elif isinstance(ev, SyncAllEvent):
                if ev.aiv_only:
                    if topo.core(c).core_type is CoreType.CUBE:
                        raise TraceError(
                            f"inconsistent trace: {topo.core(c).label} recorded a vector-only "
                            f"SyncAll at {ev.site}; cube cores do not take part in it"
                        )
                    n_aiv[c] += 1
                else:
                    n_all[c] += 1
            elif isinstance(ev, FlagSetEvent):
                for r in _flag_routes(topo, topo.flag_receivers, ev.mode, c, ev):
                    sets[(ev.mode, ev.flag_id, r, c)] += 1
            else:
                _flag_routes(topo, topo.flag_senders, ev.mode, c, ev)
                waits[(c, ev.mode, ev.flag_id)] += 1

    for aiv_only, counts in ((False, n_all), (True, n_aiv)):
        parties = topo.barrier_parties(aiv_only)
        got = {counts[p] for p in parties}
        if len(got) > 1:
            detail = ", ".join(f"{topo.core(p).short}={counts[p]}" for p in parties)
            what = "vector-only SyncAll" if aiv_only else "SyncAll"
            raise TraceError(
                f"inconsistent trace: cores recorded different numbers of {what} ({detail}); "
                "a launch that failed part-way cannot be analysed"
            )

    for c, ev in gm_waits:
        if ev.target > gm_releases.get(ev.key, 0):
            raise TraceError(
                f"inconsistent trace: {topo.core(c).label} waited at {ev.site} for release {ev.target} of a GM flag "
                f"word that was released only {gm_releases.get(ev.key, 0)} time(s)"
            )

    for (r, mode, flag_id), n_wait in sorted(waits.items()):
        for s in topo.flag_senders(mode, r):
            n_set = sets.get((mode, flag_id, r, s), 0)
            if n_set < n_wait:
                raise TraceError(
                    f"inconsistent trace: {topo.core(r).label} waited {n_wait} time(s) on flag "
                    f"(mode {mode}, id {flag_id}) but {topo.core(s).label} set it for that core "
                    f"only {n_set} time(s)"
                )


def compute_clocks(trace: LaunchTrace, syncs: Sequence[Sequence[SyncEvent]] | None = None,
                   covers: Sequence[Sequence[tuple[int, ...] | None]] | None = None) -> VectorClocks:
    """Vector clocks of every epoch of every core of ``trace``.

    ``syncs`` (optional) are the per-core sync events as :func:`sync_events` returns them, for a
    caller that already walked the trace. ``covers`` (optional, with ``syncs``): per core and sync
    event, the pipe clock that event releases (:func:`mpnpu.racecheck.intracore.release_points`).
    With it, each row also has one component per pipe of every core after the ``n_cores`` counts:
    column ``n_cores + c * N_PIPES + q`` is how far into core c's pipe q the epoch has acquired
    (:func:`pipe_column`). Raises ValueError for an inconsistent trace.
    """
    topo = trace.topology
    n = topo.n_cores
    if len(trace.events) != n:
        raise TraceError(
            f"inconsistent trace: block_dim {trace.block_dim} means {n} cores, "
            f"but the trace has events for {len(trace.events)}"
        )
    if syncs is None:
        syncs = [sync_events(evs) for evs in trace.events]
    _check_counts(topo, syncs)

    width = n + (n * N_PIPES if covers is not None else 0)
    vc = [np.zeros(width, dtype=np.int32) for _ in range(n)]
    for c in range(n):
        vc[c][c] = 1
    snaps: list[list[np.ndarray]] = [[vc[c].copy()] for c in range(n)]
    ptr = [0] * n
    released: dict[tuple[int, int, int, int], list[np.ndarray]] = defaultdict(list)
    n_waits: dict[tuple[int, int, int], int] = defaultdict(int)
    n_barriers = [[0, 0] for _ in range(n)]  # [all-core rounds, vector-only rounds] passed
    arrived: dict[tuple[bool, int], dict[int, np.ndarray]] = {}
    parties_of = {False: topo.barrier_parties(False), True: topo.barrier_parties(True)}
    # GM flag words: each word's releases in the order of their times, as (core, index in its syncs)
    gm_order: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for c in range(n):
        for i, ev in enumerate(syncs[c]):
            if isinstance(ev, GmFlagEvent) and ev.op != "wait":
                gm_order[ev.key].append((ev.t1, c, i))
    for order in gm_order.values():
        order.sort()
    gm_released: dict[tuple[int, int], np.ndarray] = {}  # (core, index) of a release -> its clock

    def release(c: int, i: int) -> np.ndarray:
        """What core c's i-th sync event releases: its clock, with c's pipes as far as the event covers
        (never less than what c acquired of them from others, who had it from c)."""
        rel: np.ndarray = vc[c].copy()
        if covers is not None:
            cov = covers[c][i]
            if cov is not None:
                own = rel[n + c * N_PIPES:n + (c + 1) * N_PIPES]
                np.maximum(own, cov, out=own)
        return rel

    def step(c: int) -> None:
        # A sync event ends the core's epoch: bump its own clock and snapshot the new epoch.
        ptr[c] += 1
        vc[c][c] += 1
        snaps[c].append(vc[c].copy())

    def advance(c: int) -> bool:
        """Replay core c's sync events until it blocks; return whether it moved."""
        moved = False
        evs = syncs[c]
        while ptr[c] < len(evs):
            ev = evs[ptr[c]]
            if isinstance(ev, GmFlagEvent):
                if ev.op != "wait":
                    gm_released[(c, ptr[c])] = release(c, ptr[c])
                elif ev.target > 0:
                    _, sc, si = gm_order[ev.key][ev.target - 1]
                    got = gm_released.get((sc, si))
                    if got is None:
                        return moved  # that release is not replayed yet
                    np.maximum(vc[c], got, out=vc[c])
                step(c)
            elif isinstance(ev, FlagSetEvent):
                rel = release(c, ptr[c])
                for r in topo.flag_receivers(ev.mode, c):
                    released[(ev.mode, ev.flag_id, r, c)].append(rel)
                step(c)
            elif isinstance(ev, FlagWaitEvent):
                j = n_waits[(c, ev.mode, ev.flag_id)]
                sources = [released.get((ev.mode, ev.flag_id, c, s)) for s in topo.flag_senders(ev.mode, c)]
                if any(src is None or len(src) <= j for src in sources):
                    return moved  # some sender has not reached its j-th set yet
                for src in sources:
                    np.maximum(vc[c], src[j], out=vc[c])  # type: ignore[index]  # checked just above
                n_waits[(c, ev.mode, ev.flag_id)] = j + 1
                step(c)
            else:  # SyncAllEvent
                kind = 1 if ev.aiv_only else 0
                key = (bool(ev.aiv_only), n_barriers[c][kind])
                arr = arrived.setdefault(key, {})
                arr[c] = release(c, ptr[c])
                parties = parties_of[key[0]]
                if len(arr) < len(parties):
                    return moved  # wait for the other parties of this round
                join = np.maximum.reduce([arr[p] for p in parties])
                del arrived[key]
                for p in parties:
                    vc[p] = join.copy()
                    n_barriers[p][kind] += 1
                    step(p)
            moved = True
        return moved

    while True:
        progress = False
        for c in range(n):
            progress |= advance(c)
        if all(ptr[c] == len(syncs[c]) for c in range(n)):
            break
        if not progress:
            stuck = [
                f"{topo.core(c).label} at {syncs[c][ptr[c]].site} ({type(syncs[c][ptr[c]]).__name__})"
                for c in range(n)
                if ptr[c] < len(syncs[c])
            ]
            raise TraceError(
                "inconsistent trace: its syncs cannot all have completed (circular wait); stuck: "
                + "; ".join(stuck)
            )

    counts = np.array([len(s) for s in snaps], dtype=np.int64)
    base = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=base[1:])
    mat = np.stack([row for s in snaps for row in s]).astype(np.int32, copy=False)
    return VectorClocks(topology=topo, base=base, vc=mat)


def pipe_column(n_cores: int, core: npt.ArrayLike, pipe: npt.ArrayLike) -> np.ndarray:
    """The column of a :class:`VectorClocks` row (built with ``covers``) that says how far into
    ``pipe`` of ``core`` that epoch has acquired."""
    column: np.ndarray = n_cores + np.asarray(core) * N_PIPES + np.asarray(pipe)
    return column
