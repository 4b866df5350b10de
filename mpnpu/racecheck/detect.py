"""Find GM races in one traced launch: overlapping accesses that happens-before does not order.

Two accesses *conflict* when they are on the same GM segment, their byte ranges overlap, they
come from different cores, and at least one writes — WRITE or ATOMIC, but two ATOMICs never
conflict (SetAtomicAdd makes the adds commute) and two READs never do. A conflicting pair that
happens-before (:mod:`mpnpu.racecheck.hb`) orders in neither direction is a race.

How it stays fast (a launch has thousands of accesses, many on the same few tensors):

1. one Python pass over the events builds columnar numpy tables: one row per access, one row
   per byte range of an access (an access of a 2D tile has one range per row);
2. every byte range is placed on one number line, ``segment_id << 40 | byte``, so ranges of
   different segments can never overlap and all segments are handled in one go;
3. reads that overlap no write or atomic (most of them: input and weight tiles) are dropped
   early — by their access's hull before their ranges are even flattened, then by range — with
   a binary search against the merged union of the written ranges;
4. overlapping range pairs are enumerated by sorting starts and binary search (for each range,
   the ranges that start inside it) — only among the classes that can conflict: WRITE x any,
   ATOMIC x READ — so the many READ/READ and ATOMIC/ATOMIC overlaps are never materialised;
   candidates come in bounded chunks;
5. each chunk is filtered with array ops: different cores, then the vector-clock test in both
   directions; an access pair that overlaps in several ranges counts once.

Byte ranges of one access must be sorted and disjoint (the :class:`~mpnpu.runtime.trace.Access`
contract); that is checked for every access whose ranges are used.

Naming a race. A race is unordered, so RAW/WAR/WAW is named by the order the kernel *intends*:
the stage order (see :func:`stage_order`) first, then the position in the core's trace, then the
core id. The earlier access is ``first``: RAW = write then read, WAR = read then write, WAW =
write then write (an atomic counts as a write).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from mpnpu.errors import TraceError
from mpnpu.racecheck.hazards import ACCESS_NAMES, AccessSite, Hazard, stage_label
from mpnpu.racecheck.hb import SyncEvent, VectorClocks, compute_clocks, pipe_column
from mpnpu.racecheck.intracore import analyze_local, release_points
from mpnpu.racecheck.polls import with_polls
from mpnpu.racecheck.records_scan import records_of
from mpnpu.runtime.distinct import distinct
from mpnpu.runtime.topology import Topology
from mpnpu.runtime.trace import (
    ATOMIC,
    READ,
    WRITE,
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    GmFlagEvent,
    LaunchTrace,
    LocalAccess,
    PipeSyncEvent,
    StageEvent,
    SyncAllEvent,
    TraceEvent,
)

_KIND_CODE = {READ: 0, WRITE: 1, ATOMIC: 2}
_HAZARD_BY_CODE = ("RAW", "WAR", "WAW")
#: Bits for a byte offset inside a segment on the shared number line (1 TiB per segment).
_SEG_SHIFT = 40
_BYTE_MASK = (1 << _SEG_SHIFT) - 1
#: Candidate range pairs handled per numpy batch (bounds memory, not results).
_CHUNK = 1 << 20

_SYNC, _ACCESS, _DROPPED, _STAGE, _LOCAL = range(5)
_EVENT_CLASS = {
    Access: _ACCESS,
    SyncAllEvent: _SYNC,
    FlagSetEvent: _SYNC,
    FlagWaitEvent: _SYNC,
    GmFlagEvent: _SYNC,
    DroppedSyncEvent: _DROPPED,
    StageEvent: _STAGE,
    # inside the core: analysed by mpnpu.racecheck.intracore
    LocalAccess: _LOCAL,
    PipeSyncEvent: _LOCAL,
}


def _event_class(ev: object) -> int:
    cls = _EVENT_CLASS.get(type(ev))
    if cls is not None:
        return cls
    for t, cls in _EVENT_CLASS.items():  # subclasses of the event types
        if isinstance(ev, t):
            return cls
    raise TraceError(f"inconsistent trace: unknown event {ev!r}")


@dataclass
class _Walk:
    """Everything one pass over a trace collects (columnar tables are numpy arrays)."""

    events: list[Access]  # access id -> the Access
    core: np.ndarray  # per access: core id
    pos: np.ndarray  # per access: index in its core's event list
    epoch: np.ndarray  # per access: sync events before it on its core
    pipe: np.ndarray  # per access: the pipe of its core that made it (-1: program order) ...
    stamp: np.ndarray  # ... and its stamp on that pipe (program order: its epoch + 1): intracore.release_points
    covers: list[list[tuple[int, ...] | None]] | None  # per core and sync event: the pipe clock it releases
    kind: np.ndarray  # per access: 0 READ, 1 WRITE, 2 ATOMIC
    stage: np.ndarray  # per access: stage id (index in stage_names)
    loc: np.ndarray  # per access: id of (tensor, stage, site), the merge granularity
    ndropped: np.ndarray  # per access: DroppedSyncEvents before it on its core
    offset: np.ndarray  # per access: tensor_offset
    itemsize: np.ndarray  # per access
    r_acc: np.ndarray  # per range: access id
    r_start: np.ndarray  # per range: start on the shared number line
    r_stop: np.ndarray  # per range: stop (exclusive)
    syncs: list[list[SyncEvent]]  # per core: sync events in program order
    dropped: list[list[DroppedSyncEvent]]  # per core, program order
    stage_seqs: list[list[str]]  # per core: stages in order of first appearance
    stage_names: list[str]  # stage id -> name


def _ids(values: Sequence[Any]) -> tuple[np.ndarray, list[Any]]:
    """Dense ids of hashable values in order of first appearance, and the values by id."""
    uniq = list(dict.fromkeys(values))
    index = {v: i for i, v in enumerate(uniq)}
    return np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values)), uniq


def _walk(trace: LaunchTrace) -> _Walk:
    """The one Python pass over every event of the launch, then columns built in bulk."""
    events: list[Access] = []
    a_core: list[int] = []
    a_pos: list[int] = []
    a_epoch: list[int] = []
    a_pipe: list[int] = []
    a_stamp: list[int] = []
    covers: list[list[tuple[int, ...] | None]] = []
    by_pipe = False
    a_nd: list[int] = []
    syncs: list[list[SyncEvent]] = []
    dropped: list[list[DroppedSyncEvent]] = []
    stage_seqs: list[list[str]] = []
    classes = _EVENT_CLASS
    for c, evs in enumerate(trace.events):
        sync_c: list[SyncEvent] = []
        drop_c: list[DroppedSyncEvent] = []
        seen: dict[str, None] = {}  # insertion-ordered set of stages
        ev: Any  # its class is known from the table, not to the type checker
        walked: Iterable[tuple[int, Any]]
        records = records_of(evs)
        if records is None:
            walked = enumerate(evs)  # (which decodes a packed trace)
        else:
            # a compiled kernel's records: everything but its local accesses (intracore's, and most
            # of the records) is decoded, at its place among the events; its stages come in order
            # from the records' functions
            outside, at = records.outside_locals()
            walked = zip(at, outside)
            seen = dict.fromkeys(records.functions())
        for pos, ev in walked:
            cls = classes.get(type(ev))
            if cls is None:
                cls = _event_class(ev)
            if cls == _ACCESS:
                events.append(ev)
                a_core.append(c)
                a_pos.append(pos)
                a_epoch.append(len(sync_c))
                a_nd.append(len(drop_c))
                stage = ev.stage
            elif cls == _SYNC:
                sync_c.append(ev)
                stage = ev.stage
            elif cls == _DROPPED:
                drop_c.append(ev)
                stage = ev.stage
            elif cls == _LOCAL:
                stage = ev.stage
            else:
                stage = ev.name
            if stage not in seen:
                seen[stage] = None
        syncs.append(sync_c)
        dropped.append(drop_c)
        # Accesses made on asynchronous pipes are released only by the syncs their pipe has
        # reached (a flag raised on another pipe does not wait for them): intracore.release_points.
        if any(ev.pipe for ev in events[len(a_pipe):]):
            points, cov = release_points(evs if records is None else outside)  # (it skips local accesses)
            a_pipe += [p for p, _ in points]
            a_stamp += [st for _, st in points]
            covers.append(cov)
            by_pipe = True
        else:  # (release_points' rule for accesses in program order, without its walk)
            a_stamp += [e + 1 for e in a_epoch[len(a_pipe):]]
            a_pipe += [-1] * (len(a_epoch) - len(a_pipe))
            covers.append([None] * len(sync_c))
        stage_seqs.append(list(seen))

    i64 = np.int64
    n = len(events)
    # Access is a NamedTuple: transposing gives its fields as columns at C speed.
    cols = list(zip(*events)) if n else [()] * len(Access._fields)
    f = dict(zip(Access._fields, cols))
    try:
        kind = np.fromiter(map(_KIND_CODE.__getitem__, f["kind"]), dtype=np.int8, count=n)
    except KeyError as exc:
        raise TraceError(f"inconsistent trace: access kind {exc.args[0]!r} is not R, W or A") from None
    itemsize = np.array(f["itemsize"], dtype=i64)
    if n and itemsize.min() <= 0:
        raise TraceError(f"inconsistent trace: itemsize {int(itemsize.min())} is not positive")
    all_stages = list(f["stage"]) + [st for seq in stage_seqs for st in seq]
    stage_all, stage_names = _ids(all_stages)
    loc, _ = _ids(list(zip(f["tensor"], f["stage"], f["site"])))
    seg, _ = _ids(f["segment"])

    # 2D tiles make ranges far more numerous than accesses (one per row), and most of them are
    # reads of inputs that nothing writes. Using each access's hull [first start, last stop) —
    # ranges are sorted (LaunchTrace contract) — reads whose hull meets no write's or atomic's
    # hull are dropped before their ranges are flattened; the rest are flattened in C.
    acc_ranges = f["ranges"]
    n_ranges = np.fromiter(map(len, acc_ranges), dtype=i64, count=n)
    seg_base = seg << _SEG_SHIFT
    hull_lo = seg_base + np.fromiter((r[0][0] if r else 0 for r in acc_ranges), dtype=i64, count=n)
    hull_hi = seg_base + np.fromiter((r[-1][1] if r else 0 for r in acc_ranges), dtype=i64, count=n)
    is_read = kind == 0
    keep = n_ranges > 0
    keep[is_read] &= _overlaps_any(hull_lo[is_read], hull_hi[is_read], hull_lo[~is_read], hull_hi[~is_read])
    kept = np.flatnonzero(keep)
    kept_ranges: Sequence[tuple[tuple[int, int], ...]]
    if len(kept) < n:
        kept_ranges = [acc_ranges[i] for i in kept.tolist()]
    else:
        kept_ranges = acc_ranges
    n_kept = n_ranges[kept]
    flat = np.fromiter(
        chain.from_iterable(chain.from_iterable(kept_ranges)), dtype=i64, count=2 * int(n_kept.sum())
    ).reshape(-1, 2)
    r_acc = np.repeat(kept, n_kept)
    seg_a = np.repeat(seg[kept], n_kept)
    nonempty = flat[:, 1] > flat[:, 0]  # an empty range touches nothing
    if not nonempty.all():
        flat, r_acc, seg_a = flat[nonempty], r_acc[nonempty], seg_a[nonempty]
    lo_a, hi_a = flat[:, 0], flat[:, 1]
    if len(lo_a) and (lo_a.min() < 0 or hi_a.max() > _BYTE_MASK):
        raise TraceError("inconsistent trace: a byte range lies outside [0, 2**40) of its segment")
    # The hull filter above relies on sorted, disjoint ranges: check it where it is cheap to.
    bad = np.flatnonzero((r_acc[1:] == r_acc[:-1]) & (lo_a[1:] < hi_a[:-1]))
    if len(bad):
        ev = events[int(r_acc[bad[0]])]
        raise TraceError(f"inconsistent trace: the byte ranges of the access at {ev.site} are not sorted and disjoint")
    seg_a <<= _SEG_SHIFT
    return _Walk(
        events=events,
        core=np.array(a_core, dtype=i64),
        pos=np.array(a_pos, dtype=i64),
        epoch=np.array(a_epoch, dtype=i64),
        pipe=np.array(a_pipe, dtype=i64),
        stamp=np.array(a_stamp, dtype=i64),
        covers=covers if by_pipe else None,
        kind=kind,
        stage=stage_all[:n],
        loc=loc,
        ndropped=np.array(a_nd, dtype=i64),
        offset=np.array(f["tensor_offset"], dtype=i64),
        itemsize=itemsize,
        r_acc=r_acc,
        r_start=seg_a + lo_a,
        r_stop=seg_a + hi_a,
        syncs=syncs,
        dropped=dropped,
        stage_seqs=stage_seqs,
        stage_names=stage_names,
    )


# -- stage order ------------------------------------------------------------------------------


def _merge_stage_order(stage_seqs: Sequence[Sequence[str]]) -> list[str]:
    """One stage order from every core's order of first appearance.

    Stage X precedes Y if some core enters X before Y. That precedence graph is sorted
    topologically; ties — and cycles, where cores disagree — go to the stage that appears
    earliest in a core's own sequence (smallest index, then smallest core id, then name).
    """
    key: dict[str, tuple[int, int, str]] = {}
    succ: dict[str, set[str]] = defaultdict(set)
    indeg: dict[str, int] = defaultdict(int)
    for c, seq in enumerate(stage_seqs):
        for i, st in enumerate(seq):
            k = (i, c, st)
            if st not in key or k < key[st]:
                key[st] = k
        for a, b in zip(seq, seq[1:]):
            if b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
    remaining = set(key)
    order: list[str] = []
    while remaining:
        ready = [s for s in remaining if indeg[s] == 0]
        pick = min(ready or remaining, key=key.__getitem__)  # no ready stage: break a cycle
        order.append(pick)
        remaining.discard(pick)
        for b in succ[pick]:
            indeg[b] -= 1
    return order


def stage_order(trace: LaunchTrace) -> list[str]:
    """The kernel's stages in the order the launch entered them.

    Rule: each core lists its stages in the order they first appear in its events (a StageEvent
    entering the stage, or the ``stage`` field of any other event). Stage X comes before Y if some
    core enters X before Y; the merged order is a topological sort of that relation, ties and
    disagreements between cores going to the stage that appears earliest within a core (then the
    lowest core id). E.g. vector cores entering Init, TargetProcess, CVProcess, AllReduceProcess
    and cube cores entering only CVProcess give exactly that order. Events recorded before any
    stage have stage "".
    """
    return _merge_stage_order(_walk(trace).stage_seqs)


# -- overlapping pairs ------------------------------------------------------------------------


def _expand(lo: np.ndarray, hi: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """All (i, t) with lo[i] <= t < hi[i], in chunks of about ``_CHUNK`` pairs."""
    counts = np.maximum(hi - lo, 0)
    cum = np.cumsum(counts)
    n = len(counts)
    start = 0
    while start < n:
        before = int(cum[start - 1]) if start else 0
        end = max(int(np.searchsorted(cum, before + _CHUNK, side="right")), start + 1)
        c = counts[start:end]
        total = int(c.sum())
        if total:
            q = np.repeat(np.arange(start, end), c)
            within = np.arange(total) - np.repeat(np.cumsum(c) - c, c)
            yield q, lo[q] + within
        start = end


def _self_pairs(rows: np.ndarray, start: np.ndarray, stop: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Overlapping pairs within one set of ranges, each pair once."""
    if len(rows) < 2:
        return
    order = rows[np.argsort(start[rows], kind="stable")]
    s = start[order]
    # In start order, the ranges overlapping range i from the right are exactly those after it
    # that start before it stops.
    lo = np.arange(1, len(order) + 1)
    hi = np.searchsorted(s, stop[order], side="left")
    for q, t in _expand(lo, hi):
        yield order[q], order[t]


def _overlaps_any(s: np.ndarray, e: np.ndarray, os_: np.ndarray, oe: np.ndarray) -> np.ndarray:
    """Mask of the intervals [s, e) that overlap any of the intervals [os_, oe).

    O(n log m) and without sorting the n intervals: the m others are merged into a sorted union
    of disjoint intervals first.
    """
    if len(s) == 0 or len(os_) == 0:
        return np.zeros(len(s), dtype=bool)
    order = np.argsort(os_, kind="stable")
    ss, run = os_[order], np.maximum.accumulate(oe[order])
    # A new union interval starts where a start lies past every stop before it.
    new = np.concatenate(([True], ss[1:] >= run[:-1]))
    u_start = ss[new]
    u_stop = run[np.concatenate((np.flatnonzero(new)[1:] - 1, [len(ss) - 1]))]
    # The last union interval starting before an interval stops is the only one that can reach it.
    i = np.searchsorted(u_start, e, side="left") - 1
    return (i >= 0) & (u_stop[np.maximum(i, 0)] > s)


def _touches(rows: np.ndarray, others: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """Mask of range ``rows`` that overlap any range of ``others`` (rows index start/stop)."""
    return _overlaps_any(start[rows], stop[rows], start[others], stop[others])


def _cross_pairs(p: np.ndarray, q: np.ndarray, start: np.ndarray,
                 stop: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Overlapping pairs (one range of ``p``, one of ``q``) of two disjoint sets, each pair once."""
    if len(p) == 0 or len(q) == 0:
        return
    # q starting inside p (q.start in [p.start, p.stop)) ...
    qo = q[np.argsort(start[q], kind="stable")]
    qs = start[qo]
    lo = np.searchsorted(qs, start[p], side="left")
    hi = np.searchsorted(qs, stop[p], side="left")
    for i, t in _expand(lo, hi):
        yield p[i], qo[t]
    # ... or p starting strictly inside q: together every overlap exactly once.
    po = p[np.argsort(start[p], kind="stable")]
    ps = start[po]
    lo = np.searchsorted(ps, start[q], side="right")
    hi = np.searchsorted(ps, stop[q], side="left")
    for i, t in _expand(lo, hi):
        yield po[t], q[i]


# -- conflicts --------------------------------------------------------------------------------


@dataclass
class Conflicts:
    """The unordered conflicting access pairs of one launch (one entry per access pair).

    ``first[i]``/``second[i]`` are access ids (indices into ``accesses``) in intended order;
    ``byte_lo``/``byte_hi`` the hull of the bytes both touched, as offsets in their segment.
    """

    trace: LaunchTrace
    topology: Topology
    clocks: VectorClocks
    stages: list[str]  # stage order
    accesses: list[Access]
    first: np.ndarray
    second: np.ndarray
    byte_lo: np.ndarray
    byte_hi: np.ndarray
    _walk: _Walk

    def __len__(self) -> int:
        return len(self.first)

    def pairs(self) -> set[tuple[tuple[int, int], tuple[int, int]]]:
        """Every conflicting pair as ((core, position), (core, position)) in intended order."""
        w = self._walk
        return {
            ((int(w.core[a]), int(w.pos[a])), (int(w.core[b]), int(w.pos[b])))
            for a, b in zip(self.first.tolist(), self.second.tolist())
        }


def find_conflicts(trace: LaunchTrace, *, polls: bool = True) -> Conflicts:
    """Every pair of accesses of ``trace`` that conflict and that happens-before leaves unordered.

    ``polls``: first apply the rule of polled GM (:func:`mpnpu.racecheck.polls.with_polls`; False
    for a trace it has been applied to already). The result's ``trace`` is the trace analysed, so
    positions of its pairs are positions in it. Raises ValueError for an inconsistent trace (see
    :func:`mpnpu.racecheck.hb.compute_clocks`).
    """
    if polls:
        trace = with_polls(trace)
    w = _walk(trace)
    clocks = compute_clocks(trace, syncs=w.syncs, covers=w.covers)
    topo = clocks.topology
    vc = clocks.vc
    gseg = clocks.base[w.core] + w.epoch  # clock row of every access
    # the column of another core's clock row that says whether it acquired each access: the access's
    # core's count (program order) or its pipe's component (intracore.release_points)
    col = np.where(w.pipe < 0, w.core, pipe_column(topo.n_cores, w.core, np.maximum(w.pipe, 0))) \
        if w.covers is not None else w.core

    rk = w.kind[w.r_acc]
    reads, writes, atomics = (np.flatnonzero(rk == k) for k in range(3))
    start, stop = w.r_start, w.r_stop
    # Most reads of a real kernel (input and weight tiles) overlap no write at all: dropping them
    # first keeps the pair search proportional to what can race.
    reads = reads[_touches(reads, np.concatenate([writes, atomics]), start, stop)]
    candidates = [
        _self_pairs(writes, start, stop),
        _cross_pairs(writes, reads, start, stop),
        _cross_pairs(writes, atomics, start, stop),
        _cross_pairs(atomics, reads, start, stop),
    ]
    keep_a: list[np.ndarray] = []
    keep_b: list[np.ndarray] = []
    keep_lo: list[np.ndarray] = []
    keep_hi: list[np.ndarray] = []
    for gen in candidates:
        for ra, rb in gen:
            a = w.r_acc[ra]
            b = w.r_acc[rb]
            ca = w.core[a]
            cb = w.core[b]
            sel = np.flatnonzero(ca != cb)  # a core never races with itself
            if not len(sel):
                continue
            a, b, ca, cb, ra, rb = a[sel], b[sel], ca[sel], cb[sel], ra[sel], rb[sel]
            a_before_b = w.stamp[a] <= vc[gseg[b], col[a]]
            b_before_a = w.stamp[b] <= vc[gseg[a], col[b]]
            sel = np.flatnonzero(~(a_before_b | b_before_a))
            if not len(sel):
                continue
            ra, rb = ra[sel], rb[sel]
            keep_a.append(a[sel])
            keep_b.append(b[sel])
            keep_lo.append(np.maximum(start[ra], start[rb]) & _BYTE_MASK)
            keep_hi.append(np.minimum(stop[ra], stop[rb]) & _BYTE_MASK)

    stages = _merge_stage_order(w.stage_seqs)
    empty = np.zeros(0, dtype=np.int64)
    if not keep_a:
        return Conflicts(trace, topo, clocks, stages, w.events, empty, empty, empty, empty, w)

    a = np.concatenate(keep_a)
    b = np.concatenate(keep_b)
    lo = np.concatenate(keep_lo)
    hi = np.concatenate(keep_hi)

    # Intended order: stage rank, then position in the core's trace, then core id.
    rank_of_stage = np.empty(len(w.stage_names), dtype=np.int64)
    pos_in_order = {name: i for i, name in enumerate(stages)}
    for sid, name in enumerate(w.stage_names):
        rank_of_stage[sid] = pos_in_order[name]
    okey = np.empty(len(w.events), dtype=np.int64)
    okey[np.lexsort((w.core, w.pos, rank_of_stage[w.stage]))] = np.arange(len(w.events))
    swap = okey[a] > okey[b]
    first = np.where(swap, b, a)
    second = np.where(swap, a, b)

    # One entry per access pair (an access with several ranges can overlap another's several times).
    key = first * len(w.events) + second
    order = np.argsort(key, kind="stable")
    key = key[order]
    heads = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    return Conflicts(
        trace,
        topo,
        clocks,
        stages,
        w.events,
        first[order][heads],
        second[order][heads],
        np.minimum.reduceat(lo[order], heads),
        np.maximum.reduceat(hi[order], heads),
        w,
    )


# -- hazards ----------------------------------------------------------------------------------


def _dropped_between(
    w: _Walk, rank: dict[str, int], c1: int, nd1: int, c2: int, nd2: int, r1: int, r2: int
) -> set[str]:
    """Sync points the launch dropped between an access of core c1 and a later one of core c2.

    Best: a sync point dropped after the first access on c1 *and* before the second on c2 —
    restoring it would sit between them on both cores. Failing that, any dropped on either side
    whose stage lies between the two accesses' stages.
    """
    after = w.dropped[c1][nd1:]
    before = w.dropped[c2][:nd2]
    both = {d.name or d.call for d in after} & {d.name or d.call for d in before}
    if both:
        return both
    return {d.name or d.call for d in (*after, *before) if r1 <= rank[d.stage] <= r2}


def _gap(stage_a: str, stage_b: str) -> str:
    if stage_a != stage_b:
        return f"no SyncAll between {stage_label(stage_a)} and {stage_label(stage_b)}"
    return f"no sync between the two accesses in {stage_label(stage_a)}"


def _placed(events: Sequence[TraceEvent]) -> tuple[list[int], Sequence[Any]]:
    """One core's events but its local accesses (all of them, for events that are not a compiled
    kernel's records), with each one's position among the core's events: a compiled kernel's local
    accesses are not decoded for this."""
    records = records_of(events)
    if records is None:
        return list(range(len(events))), events
    got, at = records.outside_locals()
    return at, got


def _flag_between(trace: LaunchTrace, c1: int, p1: int, c2: int, p2: int) -> str:
    """What is wrong with the cross-core flag meant to order core c1's access at event p1 before
    core c2's at p2, if there is one: a set on c1 after the access whose flag c2 waits on (or skips,
    dropped) before its access. "" when no flag is meant to order them (the generic gap applies)."""
    pos1, events1 = _placed(trace.events[c1])
    pos2, events2 = _placed(trace.events[c2])
    k1, k2 = bisect_left(pos1, p1), bisect_left(pos2, p2)  # (the accesses' places in those lists)
    first_pipe, first_site = getattr(events1[k1], "pipe", ""), getattr(events1[k1], "site", "?")
    topo = trace.topology
    waited = {(ev.mode, ev.flag_id): ev for ev in events2[:k2] if type(ev) is FlagWaitEvent}
    dropped_waits = [ev for ev in events2[:k2] if type(ev) is DroppedSyncEvent
                     and ev.call in ("cross_core_wait_flag", "CrossCoreWaitFlag")]
    ev: Any  # told apart by type below
    for i in range(k1 + 1, len(events1)):
        ev = events1[i]
        if type(ev) is not FlagSetEvent:
            continue
        try:
            reaches = c2 in topo.flag_receivers(ev.mode, c1)
        except ValueError:
            continue
        if not reaches:
            continue
        after: Any = events1[i + 1] if i + 1 < len(events1) and pos1[i + 1] == pos1[i] + 1 else None
        pipe = after.pipe if type(after) is PipeSyncEvent and after.op == "xset" else ""
        wait = waited.get((ev.mode, ev.flag_id))
        if wait is None and dropped_waits:
            return (f"the CrossCoreWaitFlag({ev.flag_id}) at {dropped_waits[-1].site} that would take the set at "
                    f"{ev.site} was dropped")
        if wait is not None and pipe and first_pipe and pipe != first_pipe:
            return (f"the CrossCoreSetFlag({ev.flag_id}) at {ev.site} is raised on {pipe}, which does not wait for "
                    f"the {first_pipe} access at {first_site}: raise it on {first_pipe} (or order {first_pipe} "
                    f"before {pipe} first); the wait at {wait.site} then orders the access at "
                    f"{getattr(events2[k2], 'site', '?')}")
        return ""
    return ""


@dataclass(frozen=True)
class PairFacts:
    """Per conflicting access pair (in intended order), what the consequence rule (:func:`roots`)
    reads besides the times: where each access is (core id, index in its core's event list), whether
    it reads, and the hazard (group) it belongs to. Nothing here depends on when anything ran."""

    first_core: np.ndarray
    first_pos: np.ndarray
    first_reads: np.ndarray  # bool
    second_core: np.ndarray
    second_pos: np.ndarray
    second_reads: np.ndarray  # bool
    group: np.ndarray  # index of the pair's hazard in :attr:`Grouped.hazards`


@dataclass(frozen=True)
class Grouped:
    """The hazards of one launch's conflicting pairs before the consequence rule: everything
    :func:`hazards_from` computes that does not depend on the accesses' times (so a launch with
    the same accesses and sync order has the same :class:`Grouped`; :mod:`mpnpu.racecheck.reuse`)."""

    hazards: list[Hazard]  # one per group, in group order, root None
    pairs: PairFacts
    stage_rank: dict[str, int]  # the launch's stage order, for the report order


def group_conflicts(conf: Conflicts) -> Grouped | None:
    """Merge conflicting pairs into hazards (same kind, tensor and both stages and sites), without
    the consequence rule (:func:`finish_hazards` applies it); None when there is no pair."""
    if not len(conf):
        return None
    w = conf._walk
    topo = conf.topology
    f, s = conf.first, conf.second
    fk, sk = w.kind[f], w.kind[s]
    hk = np.where(sk == 0, 0, np.where(fk == 0, 1, 2))  # RAW / WAR / WAW
    n_loc = int(w.loc.max()) + 1
    gkey = (hk * n_loc + w.loc[f]) * n_loc + w.loc[s]
    _, grp = np.unique(gkey, return_inverse=True)
    grp = grp.ravel()
    n_grp = int(grp.max()) + 1
    count = np.bincount(grp, minlength=n_grp)

    # Element indices of the first access's root tensor (the second may view it differently).
    off, isz = w.offset[f], w.itemsize[f]
    elo = (conf.byte_lo - off) // isz
    ehi = -((off - conf.byte_hi) // isz)  # ceil division
    g_lo = np.full(n_grp, np.iinfo(np.int64).max)
    g_hi = np.full(n_grp, np.iinfo(np.int64).min)
    np.minimum.at(g_lo, grp, elo)
    np.maximum.at(g_hi, grp, ehi)

    cf, cs = w.core[f], w.core[s]
    rep_order = np.lexsort((w.pos[s], w.pos[f], cs, cf, grp))
    rep = np.full(n_grp, -1)
    heads = rep_order[np.concatenate(([True], grp[rep_order][1:] != grp[rep_order][:-1]))]
    rep[grp[heads]] = heads

    cores = topo.cores
    pairs: list[set[tuple[str, str]]] = [set() for _ in range(n_grp)]
    # (one integer per (group, core, core): a 1-D unique sorts far faster than unique rows)
    n_cores = len(cores)
    for k in distinct((grp.astype(np.int64) * n_cores + cf) * n_cores + cs).tolist():
        g, xy = divmod(k, n_cores * n_cores)
        x, y = divmod(xy, n_cores)
        pairs[g].add((cores[x].short, cores[y].short))

    rank = {name: i for i, name in enumerate(conf.stages)}
    names: list[set[str]] = [set() for _ in range(n_grp)]
    if any(w.dropped):
        situations = np.stack([grp, cf, w.ndropped[f], cs, w.ndropped[s], w.stage[f], w.stage[s]], axis=1)
        for g, x, nx, y, ny, sx, sy in np.unique(situations, axis=0).tolist():
            names[g] |= _dropped_between(
                w, rank, x, nx, y, ny, rank[w.stage_names[sx]], rank[w.stage_names[sy]]
            )

    def site(aid: int) -> AccessSite:
        ev = w.events[aid]
        info = cores[int(w.core[aid])]
        return AccessSite(
            core=info.label,
            core_id=info.core_id,
            short=info.short,
            stage=ev.stage,
            site=ev.site,
            access=ACCESS_NAMES[ev.kind],
            tensor=ev.tensor,
        )

    out = []
    for g in range(n_grp):
        i = int(rep[g])
        a, b = site(int(f[i])), site(int(s[i]))
        kind = _HAZARD_BY_CODE[int(hk[i])]
        flag = _flag_between(conf.trace, int(cf[i]), int(w.pos[f[i]]), int(cs[i]), int(w.pos[s[i]]))
        if not flag and a.stage == b.stage and kind != "WAW":
            # One stage: its order did not say which access comes first, and a flag set after the
            # second and waited for before the first may be the one meant to order them. (The pair
            # keeps racecheck's order: directed runs find their accesses by it.)
            flag = _flag_between(conf.trace, int(cs[i]), int(w.pos[s[i]]), int(cf[i]), int(w.pos[f[i]]))
        out.append(
            Hazard(
                kind=kind,
                tensor=a.tensor,
                first=a,
                second=b,
                count=int(count[g]),
                element_range=(int(g_lo[g]), int(g_hi[g])),
                gap=flag or _gap(a.stage, b.stage),
                dropped_syncs=tuple(sorted(names[g])),
                core_pairs=frozenset(pairs[g]),
            )
        )
    facts = PairFacts(first_core=cf, first_pos=w.pos[f], first_reads=fk == 0, second_core=cs, second_pos=w.pos[s],
                      second_reads=sk == 0, group=grp)
    return Grouped(out, facts, rank)


def finish_hazards(grouped: Grouped, first_t1: np.ndarray, second_t0: np.ndarray) -> list[Hazard]:
    """The launch's hazards from its :class:`Grouped` and its own times: per pair, when the first
    access ended (``first_t1``) and when the second began (``second_t0``). Applies the consequence
    rule (:func:`roots`) and sorts as racecheck reports: most access pairs first."""
    out = grouped.hazards
    rank = grouped.stage_rank
    found = roots(grouped.pairs, stale_reads(grouped.pairs, first_t1, second_t0), out)
    out = [replace(h, root=out[found[g]].key) if g in found else h for g, h in enumerate(out)]
    out.sort(key=lambda h: (-h.count, rank[h.first.stage], rank[h.second.stage], h.key))
    return out


def pair_times(conf: Conflicts) -> tuple[np.ndarray, np.ndarray]:
    """Per conflicting pair of ``conf``: when its first access ended and when its second began."""
    ev = conf._walk.events
    f, s = conf.first, conf.second
    if len(f) <= len(ev):  # few pairs: read their events' times
        fl, sl = f.tolist(), s.tolist()
        return (np.fromiter((ev[i].t1 for i in fl), dtype=np.int64, count=len(fl)),
                np.fromiter((ev[i].t0 for i in sl), dtype=np.int64, count=len(sl)))
    # more pairs than accesses (a buffer every core writes, many times): every access's times once
    t0 = np.fromiter((e.t0 for e in ev), dtype=np.int64, count=len(ev))
    t1 = np.fromiter((e.t1 for e in ev), dtype=np.int64, count=len(ev))
    return t1[f], t0[s]


def hazards_from(conf: Conflicts) -> list[Hazard]:
    """Merge conflicting pairs into hazards (same kind, tensor and both stages and sites), each
    with its root cause when it is a consequence of another (:func:`roots`)."""
    grouped = group_conflicts(conf)
    if grouped is None:
        return []
    return finish_hazards(grouped, *pair_times(conf))


# -- consequences -----------------------------------------------------------------------------


def stale_reads(pairs: PairFacts, first_t1: np.ndarray, second_t0: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                                          np.ndarray]:
    """For each conflicting pair (first, second in intended order): the core and position of its
    read, and whether that read saw the wrong data in this launch's real time — the read of a RAW
    began before its write had finished, or the write of a WAR began before its read had finished
    (core and position -1 and False for a pair of writes). ``first_t1``: when each pair's first
    access ended; ``second_t0``: when its second began."""
    raw = pairs.second_reads
    war = pairs.first_reads & ~raw
    read_core = np.where(raw, pairs.second_core, np.where(war, pairs.first_core, -1))
    read_pos = np.where(raw, pairs.second_pos, np.where(war, pairs.first_pos, -1))
    # RAW: the read (second) began before the write (first) ended; WAR: the write (second) began
    # before the read (first) ended. Both: the second access began before the first one ended.
    stale = (raw | war) & (second_t0 < first_t1)
    return read_core, read_pos, stale


def roots(pairs: PairFacts, stale: tuple[np.ndarray, np.ndarray, np.ndarray],
          hazards: Sequence[Hazard]) -> dict[int, int]:
    """Which hazards of one launch are consequences of another, as {hazard index: root index}
    (``stale``: :func:`stale_reads` of the launch's pairs).

    The rule (docs/directed-reproduction.md, "Consequences"): hazard B is a
    consequence of hazard A when

    1. A has a *stale read* in this launch: a RAW whose read began before its write had finished,
       or a WAR whose write began before its read had finished (the read saw the wrong data);
    2. every access pair of B has an access that its core made *after* such a stale read of A, in
       that core's program order: its address or its data may come from what A's read returned;
    3. B names no dropped sync point that A does not: restoring A's syncs is all it could need.

    A hazard that is a candidate consequence of several takes the first in racecheck's order that
    is not itself a candidate consequence of it; consequences of consequences go to the root. The
    rule is a function of the trace (program order, the sites and the recorded times).
    """
    n = len(hazards)
    read_core, read_pos, is_stale = stale
    grp = pairs.group
    fc, fp, sc, sp = pairs.first_core, pairs.first_pos, pairs.second_core, pairs.second_pos
    n_cores = int(max(fc.max(), sc.max())) + 1 if len(fc) else 0
    never = np.iinfo(np.int64).max
    after: dict[int, np.ndarray] = {}  # hazard -> per core, the earliest position of a stale read (never: none)
    for g in distinct(grp[is_stale]).tolist():
        mine = (grp == g) & is_stale
        first = np.full(n_cores, never, dtype=np.int64)
        np.minimum.at(first, read_core[mine], read_pos[mine])
        after[g] = first
    if not after:
        return {}
    candidates: dict[int, list[int]] = {}
    for b in range(n):
        mine = grp == b
        fcb, fpb, scb, spb = fc[mine], fp[mine], sc[mine], sp[mine]
        for a, first in after.items():
            if a == b or not set(hazards[b].dropped_syncs) <= set(hazards[a].dropped_syncs):
                continue
            if np.all((fpb > first[fcb]) | (spb > first[scb])):
                candidates.setdefault(b, []).append(a)
    rank = {i: k for k, i in enumerate(sorted(range(n), key=lambda i: hazards[i].key))}
    parent = {}
    for b, cands in candidates.items():
        for a in sorted(cands, key=rank.__getitem__):
            if b not in candidates.get(a, ()):
                parent[b] = a
                break
    found = {}
    for b in parent:
        seen, r = {b}, parent[b]
        while r in parent and parent[r] not in seen:
            seen.add(r)
            r = parent[r]
        if r in parent:  # a cycle: no root to group under
            continue
        found[b] = r
    return found


def analyze(trace: LaunchTrace) -> list[Hazard]:
    """The hazards of one traced launch: GM races between cores, most frequent first, then races
    between the pipes of a core on its local memory (:mod:`.intracore`).

    Raises ValueError if the trace is inconsistent (syncs that cannot pair up, e.g. because the
    launch failed part-way).
    """
    return hazards_from(find_conflicts(trace)) + analyze_local(trace)
