"""Races inside one core: accesses of different pipes of one core that no intra-core sync orders —
to its local memory (UB, L1, L0A/B/C), and to GM (a core reading back through MTE2 what it wrote
through MTE3 is a race inside that core, whatever the other cores do).

The model (pipes in :mod:`mpnpu.runtime.pipes`; events in :mod:`mpnpu.runtime.trace`). Every
pipe is analysed as asynchronous — V and M too, although mpnpu runs them inline on the kernel
thread — so a launch run with in-order pipes is analysed as the chip would run it::

    issue           the scalar unit (PIPE_S) issues every instruction in trace order; an
                    instruction of pipe P happens after everything PIPE_S has waited for before
                    issuing it (P's clock joins S's)
    pipe order      each pipe executes its instructions in order
    set / wait      the j-th set_flag<X_Y>(id) (on pipe X) happens before the j-th
                    wait_flag<X_Y>(id) (on pipe Y); queues record theirs the same way
    pipe_barrier    PIPE_S waits for everything issued to the pipe (PIPE_ALL: every pipe)
    SyncAll         PIPE_S waits for every pipe first (the device drains a core before it arrives)
    auto-sync       (on by default, as the compiler's --cce-auto-sync is in kernel projects) before a
                    scalar access (PIPE_S) to local memory, PIPE_S waits for the last earlier
                    instruction of MTE2, MTE3 and V that touched any of the same bytes: the syncs the
                    compiler inserts between those pipes and the scalar unit where it sees a LocalTensor
                    dependency. Not between MTE2, MTE3 and V (the kernel's queues and flags order
                    those), and not for GM (it cannot see a dependency through GM)
    own flag set    a cross-core wait in mode 0 or 1 needs a set from the waiting core too: the j-th
                    such wait of a core orders after the core's own j-th set on (mode, id), so its
                    later instructions come after what that set's pipe had done before it

Two accesses to overlapping bytes of one memory of one core, from different pipes, at least one a
write (two atomic adds commute), that happens-before orders in neither direction are a hazard. Its
kind follows issue order: RAW = write issued first, then read. Only launches of kernels that order
their own pipes (``api.pipelined``) record local accesses and the pipe of each GM access; data the
kernel touches with plain numpy expressions is not recorded (only ``data_copy``, ``load_data``,
``mmad``, ``fixpipe``, ``cast`` and the vector instructions of :mod:`mpnpu.api.vector` are).
Hazards on local memory have ``scope`` "local"; on GM, "core" (the GM race detector,
:mod:`.detect`, covers pairs of different cores).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from typing import Any, Iterator, Sequence

import numpy as np

from mpnpu.ascendc.native import abi
from mpnpu.racecheck import records_clocks
from mpnpu.racecheck.hazards import ACCESS_NAMES, AccessSite, Hazard
from mpnpu.racecheck.pipe_clocks import (
    AUTO_SYNCED,
    GM_KEY,
    GM_ORDERING_CALLS,
    INTRA_CALLS,
    PIPE_INDEX,
    SYNC_TYPES,
    CoreAccesses,
    CoreSyncs,
    N,
    PipeClocks,
    S,
    pipe_index,
)
from mpnpu.racecheck.records_scan import records_of
from mpnpu.runtime.distinct import distinct
from mpnpu.runtime.topology import CoreInfo
from mpnpu.runtime.trace import (
    ATOMIC,
    GM_FLAG_OBSERVED,
    GM_FLAG_OBSERVED_PART,
    READ,
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    GmFlagEvent,
    LaunchTrace,
    LocalAccess,
    PipeSyncEvent,
    SyncAllEvent,
    TraceEvent,
    shared_hull,
)

#: how many of a memory's newest auto-synced accesses a scalar access looks through before it builds
#: that memory's byte index (_PaintIndex): most find what they wait for among the newest few
_SCAN = 64


class _Painted:
    """One pipe's accesses to one memory as disjoint byte segments, each holding the newest access
    that covers it (``(seq, clock)``; None: none): ``[starts[k], starts[k + 1])``, the last one to
    the end of the memory. Painting an access overwrites its bytes, so the newest access sharing a
    byte with a range is the newest value among the segments that range meets."""

    __slots__ = ("starts", "vals")

    def __init__(self) -> None:
        self.starts: list[int] = [0]
        self.vals: list[tuple[int, tuple[int, ...]] | None] = [None]

    def paint(self, start: int, stop: int, val: tuple[int, tuple[int, ...]]) -> None:
        starts, vals = self.starts, self.vals
        i = bisect_right(starts, start) - 1
        if starts[i] != start:  # split the segment holding start
            i += 1
            starts.insert(i, start)
            vals.insert(i, vals[i - 1])
        j = bisect_right(starts, stop) - 1
        if starts[j] != stop:  # split the segment holding stop: [stop, ...) keeps its value
            starts.insert(j + 1, stop)
            vals.insert(j + 1, vals[j])
            j += 1
        starts[i:j] = [start]
        vals[i:j] = [val]

    def newest(self, start: int, stop: int) -> tuple[int, tuple[int, ...]] | None:
        starts, vals = self.starts, self.vals
        best = None
        for k in range(bisect_right(starts, start) - 1, bisect_left(starts, stop)):
            v = vals[k]
            if v is not None and (best is None or v[0] > best[0]):
                best = v
        return best


class _PaintIndex:
    """A memory's auto-synced accesses, per pipe, as :class:`_Painted` segments; brought up to date
    with the memory's access list before each use."""

    __slots__ = ("upto", "pipes")

    def __init__(self) -> None:
        self.upto = 0
        self.pipes: dict[int, _Painted] = {}

    def catch_up(self, entries: list[tuple[int, int, int, tuple[int, ...]]]) -> None:
        for seq in range(self.upto, len(entries)):
            start, stop, p, clock = entries[seq]
            if start < stop:
                painted = self.pipes.get(p)
                if painted is None:
                    painted = self.pipes[p] = _Painted()
                painted.paint(start, stop, (seq, clock))
        self.upto = len(entries)


class _AutoSync:
    """What the compiler's automatic synchronisation makes PIPE_S wait for: per local memory, the
    accesses of MTE2, MTE3 and V so far (bytes and the instruction's clock), newest last."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[int, int, int, tuple[int, ...]]]] = defaultdict(list)
        #: per memory, the byte index a scalar access builds when the newest few did not answer it
        self.index: dict[str, _PaintIndex] = {}

    def record(self, ev: Any, p: int, clock: list[int]) -> None:
        if p in AUTO_SYNCED:
            self.seen[ev.memory].append((ev.start, ev.stop, p, tuple(clock)))

    def before_scalar(self, ev: Any, pc: "PipeClocks") -> None:
        """PIPE_S waits for the newest earlier instruction of each auto-synced pipe sharing a byte
        with ``ev`` (its pipe's earlier ones are before it in that pipe's order).

        The newest ``_SCAN`` accesses of the memory are looked at first; when they do not settle
        every pipe, the memory's byte index answers (built once, then kept up to date), so a kernel
        with many scalar accesses to a busy memory costs no scan of its whole history each."""
        entries = self.seen.get(ev.memory)
        if not entries:
            return
        index = self.index.get(ev.memory)
        if index is None:
            waits: list[tuple[int, ...]] = []
            pending = set(AUTO_SYNCED)
            n = len(entries)
            for k in range(n - 1, max(-1, n - 1 - _SCAN), -1):
                start, stop, p, clock = entries[k]
                if p in pending and start < ev.stop and ev.start < stop:
                    waits.append(clock)
                    pending.discard(p)
                    if not pending:
                        break
            if not pending or n <= _SCAN:
                if waits:
                    pc.join_scalar(waits)
                return
            index = self.index[ev.memory] = _PaintIndex()
        index.catch_up(entries)
        found = [v[1] for v in (painted.newest(ev.start, ev.stop) for painted in index.pipes.values())
                 if v is not None]
        if found:
            pc.join_scalar(found)


def core_clocks(events: Sequence[TraceEvent], auto_sync: bool = True, columns: bool = True) -> CoreAccesses:
    """Vector clocks per pipe for one core's events; raises ValueError on a wait without its set.
    ``auto_sync``: model the compiler's automatic synchronisation (module docstring). A compiled
    kernel's records are taken as columns where they can be (:mod:`.records_clocks`, the same result;
    ``columns=False``: always event by event)."""
    if columns:
        fast = records_clocks.core_clocks(events, auto_sync)
        if fast is not None:
            return fast
    pc = PipeClocks()
    auto = _AutoSync() if auto_sync else None
    syncs = CoreSyncs(pc)
    acc: list[Any] = []  # LocalAccess, or Access made on a pipe
    pos, pipe, stamp, clocks = [], [], [], []
    kind: list[str] = []
    memory: list[int] = []  # (ids of the memories: a local memory by name, a GM segment under GM_KEY)
    start: list[int] = []  # the byte hull of each access in its memory
    stop: list[int] = []
    mem_ids: dict[str, int] = {}
    ev: Any  # its type is checked by identity below (the fast way), not narrowed
    # The accesses are most of a trace (a compiled kernel's vector instructions above all): their
    # case is PipeClocks.issue and _AutoSync.record written out, with the state in locals.
    vc, joined, index = pc.vc, pc.joined, PIPE_INDEX
    seen = auto.seen if auto is not None else None
    for i, ev in enumerate(events):
        t = type(ev)
        if t is LocalAccess or (t is Access and ev.pipe and ev.ranges):
            p = index.get(ev.pipe)
            if p is None:
                p = pipe_index(ev.pipe, ev)  # (raises: an unknown pipe)
            local = t is LocalAccess
            if auto is not None and local and p == S:
                auto.before_scalar(ev, pc)
            row = vc[p]
            if joined[p] != pc.s_version:
                row = vc[p] = list(map(max, row, vc[S]))
                joined[p] = pc.s_version
            row[p] += 1
            if p == S:
                pc.s_version += 1
            clock = tuple(row)
            if local:
                if seen is not None and p in AUTO_SYNCED:
                    seen[ev.memory].append((ev.start, ev.stop, p, clock))
                memory.append(mem_ids.setdefault(ev.memory, len(mem_ids)))
                start.append(ev.start)
                stop.append(ev.stop)
            else:
                memory.append(mem_ids.setdefault(GM_KEY + ev.segment, len(mem_ids)))
                start.append(ev.ranges[0][0])
                stop.append(ev.ranges[-1][1])
            acc.append(ev)
            kind.append(ev.kind)
            pos.append(i)
            pipe.append(p)
            stamp.append(row[p])
            clocks.append(clock)
        elif t in SYNC_TYPES:
            syncs.step(i, ev)
    n = len(acc)
    kinds = np.array(kind, dtype=object)
    return CoreAccesses(
        events=acc,
        pos=np.array(pos, dtype=np.int64),
        pipe=np.array(pipe, dtype=np.int64),
        stamp=np.array(stamp, dtype=np.int64),
        clock=np.array(clocks, dtype=np.int64).reshape(n, N),
        write=np.asarray(kinds != READ, dtype=bool).reshape(n),
        memory=np.array(memory, dtype=np.int64),
        start=np.array(start, dtype=np.int64),
        stop=np.array(stop, dtype=np.int64),
        atomic=np.asarray(kinds == ATOMIC, dtype=bool).reshape(n),
        dropped=syncs.dropped,
    )


def release_points(events: Sequence[TraceEvent]) -> tuple[list[tuple[int, int]], list[tuple[int, ...] | None]]:
    """What each GM access of one core (in order) needs from a release to be ordered before another
    core's access, and what each of the core's sync events (SyncAll, cross-core set or wait, as
    :mod:`.hb` counts them) releases.

    An access made on pipe Q is ``(Q, stamp)``: its stamp among Q's instructions. A release covers it
    when the release's pipe clock has reached that stamp: a cross-core set raised on pipe P covers
    what P's instruction happens after (same pipe, a flag, a barrier), a SyncAll or a GM flag word's
    release (after a barrier of every pipe) everything issued. An access made in program order (no
    pipe) is ``(-1, epoch + 1)``: every release from its epoch on covers it (:mod:`.hb`'s count of the
    core's sync events a clock has acquired reaches epoch + 1). Per sync event, the pipe
    clock it releases (a tuple of one stamp per pipe), or None for a wait (it releases nothing).

    So a set on MTE3 that covers an MTE3 copy out orders it before the set's waiter, whatever sets on
    other pipes that do not cover it come later (:mod:`.hb` keeps one clock component per pipe of
    every core).
    """
    pc = PipeClocks()
    points: list[tuple[int, int]] = []
    released: list[tuple[int, ...] | None] = []
    pending_set = False
    ev: Any  # its type is checked by identity below (the fast way), not narrowed

    last_access: tuple[int, ...] | None = None  # the clock of the newest GM access (None: program order)
    last_pipe = -1  # ... and its pipe

    def everything() -> tuple[int, ...]:
        return tuple(map(max, *pc.vc))

    for ev in events:
        t = type(ev)
        if t is Access:
            if ev.pipe:
                p = pipe_index(ev.pipe, ev)
                issued = pc.issue(p)
                points.append((p, issued[p]))
                last_access = tuple(issued)
                last_pipe = p
            else:
                points.append((-1, len(released) + 1))
                last_access = None
        elif t is SyncAllEvent:
            pc.sync(ev)
            released.append(everything())
        elif t is FlagSetEvent:
            released.append(everything())  # until its PipeSyncEvent "xset" says on which pipe
            pending_set = True
        elif t is FlagWaitEvent:
            released.append(None)
        elif t is GmFlagEvent:  # (a release follows a barrier of every pipe of its core)
            if ev.op == GM_FLAG_OBSERVED:  # a write another core's poll saw whole: it, and what it comes after
                released.append(last_access if last_access is not None else everything())
            elif ev.op == GM_FLAG_OBSERVED_PART:  # seen in part: only what that write comes after
                released.append(everything() if last_access is None else  # (its own pipe's stamp less one)
                                tuple(c - 1 if q == last_pipe else c for q, c in enumerate(last_access)))
            else:
                released.append(None if ev.op == "wait" else everything())
        elif t is PipeSyncEvent:
            clock = pc.sync(ev)
            if ev.op == "xset" and pending_set and clock is not None:
                released[-1] = tuple(clock)  # an xset issues: the clock of its pipe's instruction
            pending_set = False
    return points, released


def core_conflicts(ca: CoreAccesses) -> list[tuple[int, int]]:
    """(i, j), i issued before j: overlapping bytes of one memory, a write among them (not two atomic
    adds), different pipes, unordered; sorted.

    i on pipe P is ordered before j exactly when j's clock has seen i's stamp (``clock[j, P] >=
    stamp[i]``), and the stamps of P's accesses grow in issue order. So the accesses of P that j
    is *not* ordered after are a contiguous run: those issued before j with a stamp above
    ``clock[j, P]``, found by two binary searches per access and pipe. Only those pairs are looked at
    (in a synchronised kernel, almost none), never every overlapping pair of a busy buffer; the
    array filters then keep the conflicts.
    """
    i, j, _ = _conflict_arrays(ca)
    return list(zip(i.tolist(), j.tolist()))


def _conflict_arrays(ca: CoreAccesses) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`core_conflicts` as two arrays (the first access of each pair, the second), sorted by
    (i, j), and per access of the core whether it is a strided GM view (known for those in a pair)."""
    n = len(ca.pipe)
    none = np.zeros(0, dtype=np.int64)
    strided = np.zeros(n, dtype=bool)
    if n < 2:
        return none, none, strided
    every = np.arange(n)
    found_i, found_j = [], []
    for p in distinct(ca.pipe).tolist():
        on_p = np.flatnonzero(ca.pipe == p)  # issue order
        later = every[ca.pipe != p]
        if not len(later):
            continue
        hi = np.searchsorted(on_p, later)  # P's accesses issued before each later access
        lo = np.searchsorted(ca.stamp[on_p], ca.clock[later, p], side="right")  # ... not ordered before it
        counts = np.maximum(hi - lo, 0)
        total = int(counts.sum())
        if not total:
            continue
        j = np.repeat(later, counts)
        i = on_p[np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(lo, counts)]
        cand = ca.memory[i] == ca.memory[j]
        cand &= (ca.start[i] < ca.stop[j]) & (ca.start[j] < ca.stop[i])
        cand &= ca.write[i] | ca.write[j]
        cand &= ~(ca.atomic[i] & ca.atomic[j])
        # (and not j -> i: a wait on i's pipe for a set on j's pipe, which issue order rules out)
        cand &= ca.clock[i, ca.pipe[j]] < ca.stamp[j]
        found_i.append(i[cand])
        found_j.append(j[cand])
    if not found_i:
        return none, none, strided
    i, j = np.concatenate(found_i), np.concatenate(found_j)
    order = np.lexsort((j, i))
    i, j = i[order], j[order]
    if not len(i):
        return i, j, strided
    # Overlapping hulls share bytes but for a strided GM view, which can share its hull with
    # another and no byte: those pairs are tested on their views (the accesses decoded in one go).
    accesses = _in_pairs(n, i, j)
    prefetch = getattr(ca.events, "prefetch", None)
    if prefetch is not None:  # (events decoded when read: these in one go)
        prefetch(accesses.tolist())
    strided[accesses] = [type(ev) is Access and len(ev.ranges) > 1
                         for ev in map(ca.events.__getitem__, accesses.tolist())]
    views = np.flatnonzero(strided[i] | strided[j])
    if len(views):
        keep = np.ones(len(i), dtype=bool)
        keep[views] = [_bytes_shared(ca.events[x], ca.events[y]) is not None
                       for x, y in zip(i[views].tolist(), j[views].tolist())]
        i, j = i[keep], j[keep]
    return i, j, strided


def _in_pairs(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The accesses (of a core's ``n``) that are in a pair of (i, j), ascending."""
    seen = np.zeros(n, dtype=bool)
    seen[i] = True
    seen[j] = True
    return np.flatnonzero(seen)


def _bytes_shared(a: Any, b: Any) -> tuple[int, int] | None:
    """The hull of the bytes both accesses touch, or None when they touch none in common (two
    strided GM views can share a hull and no byte)."""
    if type(a) is LocalAccess:
        return max(a.start, b.start), min(a.stop, b.stop)
    return shared_hull(a.ranges, b.ranges)


def _gap(first: LocalAccess | Access, second: LocalAccess | Access) -> str:
    a, b = first.pipe[5:], second.pipe[5:]
    also = ", pipe_barrier or SyncAll" if type(first) is Access else " or pipe_barrier"
    return f"no {a}_{b} sync (set_flag/wait_flag, queue{also}) between {first.pipe} and {second.pipe}"


def _site(info: CoreInfo, core_id: int, tensor: str, x: LocalAccess | Access) -> AccessSite:
    return AccessSite(core=info.label, core_id=core_id, short=info.short, stage=x.stage, site=x.site,
                      access=ACCESS_NAMES[x.kind], tensor=tensor, pipe=x.pipe)


class _DroppedBetween:
    """Which sync points a launch dropped between two accesses of one core (by their positions in
    the core's events), among the calls ``calls``: per name, the sorted positions of its dropped
    events, so that a pair costs a binary search per name, not a pass over every dropped event (a
    dropped sync inside a loop leaves thousands, and a missing sync can leave millions of pairs)."""

    def __init__(self, dropped: list[tuple[int, DroppedSyncEvent]], calls: tuple[str, ...]) -> None:
        at: dict[str, list[int]] = defaultdict(list)
        for p, d in dropped:
            if d.call in calls:
                at[d.name or d.call].append(p)
        self.names = sorted(at)
        self.positions = [sorted(at[name]) for name in self.names]

    def between(self, first: np.ndarray, second: np.ndarray) -> Iterator[tuple[str, np.ndarray]]:
        """Per name, per pair of positions (``first[k]``, ``second[k]``), whether the name has a
        dropped event strictly between them."""
        for name, positions in zip(self.names, self.positions):
            ps = np.asarray(positions, dtype=np.int64)
            k = np.searchsorted(ps, first, side="right")
            yield name, (k < len(ps)) & (ps[np.minimum(k, len(ps) - 1)] < second)


def _core_hazards(trace: LaunchTrace, pairs: dict[tuple[str, ...], list[Any]] | None = None) -> list[Hazard]:
    """The hazards inside each core of ``trace``: every unordered pair of accesses inside a core,
    merged by kind, memory or GM tensor, sites and pipes (the first pair's sites represent the
    hazard; counts add, hulls and sets unite). ``pairs``, when given, gets per hazard key each
    pair's (core id, index in its event list) of the access issued first and of the other, and the
    bytes they share [lo, hi).

    The pairs are grouped as arrays, a Hazard per group of pairs with the same key in a core, not
    per pair: a missing sync around a loop can leave millions of them (2.1 million in one launch of
    a 40-core corpus test, whose analysis took 143 s one pair at a time)."""
    topo = trace.topology
    merged: dict[tuple[str, ...], Hazard] = {}
    for c, events in enumerate(trace.events):
        records = records_of(events)
        if records is not None:
            if not (records.rec["type"] == abi.EV_LOCAL).any():
                continue
        elif not any(type(ev) is LocalAccess for ev in events):
            continue  # not a pipelined launch: no pipes recorded
        ca = core_clocks(events, trace.auto_sync)
        i, j, strided = _conflict_arrays(ca)
        if len(i):
            _merge_core_pairs(merged, ca, topo.core(c), c, i, j, strided, pairs)
    return sorted(merged.values(), key=lambda h: (-h.count, h.key))


def _merge_core_pairs(merged: dict[tuple[str, ...], Hazard], ca: CoreAccesses, info: CoreInfo, c: int,
                      i: np.ndarray, j: np.ndarray, strided: np.ndarray,
                      pairs: dict[tuple[str, ...], list[Any]] | None) -> None:
    """Merge the pairs (i, j) of core ``c`` into ``merged``, as arrays.

    A pair's hazard key is a function of its first access's (write or not, memory or GM tensor,
    stage, site, pipe) and its second's (write or not, stage, site, pipe): each access gets the id
    of each tuple, a pair the id of the two, and a key's count, hull and dropped sync points are
    reductions over its pairs, which make one Hazard (represented by its first pair). Those merge
    (Hazard.merged) in the order of their first pair (issue order), so each key is represented by
    its first pair, as merging pair by pair does. The accesses in pairs are
    decoded (once each); a pair's shared bytes are the overlap of the two hulls but for strided GM
    views, whose pairs are worked out one by one."""
    accesses = _in_pairs(len(ca.pipe), i, j).tolist()
    first_of: dict[tuple[Any, ...], int] = {}
    second_of: dict[tuple[Any, ...], int] = {}
    label_a = np.zeros(len(ca.pipe), dtype=np.int64)
    label_b = np.zeros(len(ca.pipe), dtype=np.int64)
    offset = np.zeros(len(ca.pipe), dtype=np.int64)  # of a GM access's root tensor (elements are reported)
    itemsize = np.ones(len(ca.pipe), dtype=np.int64)
    on_gm = np.zeros(len(ca.pipe), dtype=bool)
    for x in accesses:
        ev = ca.events[x]
        write = ev.kind != READ
        gm = type(ev) is Access
        label_a[x] = first_of.setdefault((write, ev.tensor if gm else ev.memory, ev.stage, ev.site, ev.pipe),
                                         len(first_of))
        label_b[x] = second_of.setdefault((write, ev.stage, ev.site, ev.pipe), len(second_of))
        if gm:
            on_gm[x], offset[x], itemsize[x] = True, ev.tensor_offset, ev.itemsize
    lo, hi = np.maximum(ca.start[i], ca.start[j]), np.minimum(ca.stop[i], ca.stop[j])  # bytes each pair shares
    for k in np.flatnonzero(strided[i] | strided[j]).tolist():
        lo[k], hi[k] = _bytes_shared(ca.events[int(i[k])], ca.events[int(j[k])])  # type: ignore[misc]
    # (elements of the root tensor for GM, as GM hazards are reported; bytes of the memory for local)
    e_lo = (lo - offset[i]) // itemsize[i]
    e_hi = -((offset[i] - hi) // itemsize[i])
    gm_pair = on_gm[i]  # (a pair is of one memory: both accesses local, or both GM)
    _, first, group, counts = np.unique(label_a[i] * len(second_of) + label_b[j], return_index=True,
                                        return_inverse=True, return_counts=True)
    group = group.ravel()
    order = np.argsort(group, kind="stable")  # each key's pairs together, in issue order
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    group_lo, group_hi = np.minimum.reduceat(e_lo[order], starts), np.maximum.reduceat(e_hi[order], starts)
    pos = ca.pos.tolist()
    # the sync points dropped between a pair's accesses: those of the calls that order its memory
    names_of: dict[str, np.ndarray] = {}
    for calls, of_pair in ((INTRA_CALLS, ~gm_pair), (GM_ORDERING_CALLS, gm_pair)):
        if not of_pair.any():
            continue
        for name, has in _DroppedBetween(ca.dropped, calls).between(ca.pos[i], ca.pos[j]):
            has &= of_pair
            names_of[name] = names_of[name] | has if name in names_of else has
    has_name = {name: np.logical_or.reduceat(has[order], starts) for name, has in sorted(names_of.items())}
    core_pair = (info.short, info.short)
    a: Any  # LocalAccess or Access, told apart by the pair's memory
    b: Any
    for g in np.argsort(first, kind="stable").tolist():  # keys in the order of their first pair
        f = int(first[g])
        a, b = ca.events[int(i[f])], ca.events[int(j[f])]
        on = bool(gm_pair[f])
        tensor = a.tensor if on else a.memory
        kind = "WAW" if a.kind != READ and b.kind != READ else ("RAW" if a.kind != READ else "WAR")
        names = tuple(name for name, has in has_name.items() if has[g])
        h = Hazard(kind=kind, tensor=tensor, first=_site(info, c, tensor, a), second=_site(info, c, tensor, b),
                   count=int(counts[g]), element_range=(int(group_lo[g]), int(group_hi[g])), gap=_gap(a, b),
                   dropped_syncs=names, core_pairs=frozenset({core_pair}), scope="core" if on else "local")
        key = h.key
        prev = merged.get(key)
        merged[key] = h if prev is None else prev.merged(h, same_launch=True)
        if pairs is not None:
            members = order[starts[g]:starts[g] + counts[g]]
            pairs.setdefault(key, []).extend(
                ((c, pos[x]), (c, pos[y]), p_lo, p_hi) for x, y, p_lo, p_hi in zip(
                    i[members].tolist(), j[members].tolist(), lo[members].tolist(), hi[members].tolist()))


def analyze_local(trace: LaunchTrace) -> list[Hazard]:
    """The hazards inside each core of one traced launch (all cores), merged by kind, memory or GM
    tensor, sites and pipes."""
    return _core_hazards(trace)


def local_pairs(trace: LaunchTrace) -> list[tuple[Hazard, list[tuple[tuple[int, int], tuple[int, int], int, int]]]]:
    """:func:`analyze_local`'s hazards, each with its access pairs: ((core, index) of the access
    issued first, (core, index) of the other, shared bytes [lo, hi) of the memory or GM segment)."""
    pairs: dict[tuple[str, ...], list[Any]] = {}
    return [(h, pairs[h.key]) for h in _core_hazards(trace, pairs)]
