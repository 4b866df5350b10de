"""Synchronisation through a polled GM range: a core that re-reads GM until another core's write shows.

Some kernels build their own barrier out of flag words in GM: each core writes its flag, then reads
the flags again and again (a copy in, a scalar check) until every one is set. No sync event of the
API is involved, so without this module happens-before orders nothing through such a loop and every
access it orders is reported as a race.

The rule (docs/device-model.md, "Polled GM")::

    poll run     consecutive reads by one core of exactly the same GM bytes at the same line, with no
                 other GM access and no cross-core sync of that core between them
    poll         a run of at least two reads whose last read ended after another core's write to
                 those bytes began, and whose read before it began before that write ended: the
                 loop stopped right after the bytes changed (it waited for the change)
    poll site    (line, GM tensor, number of bytes read) of a poll: every run at a poll site, by any
                 core and of any bytes of that size, is a poll read, including a run of one read (the
                 core whose first look already found every flag set; a core of a chain that polls its
                 neighbour's word, found already set)
    edge         the last read r of a poll read observed a write W of another core when W began
                 before r ended (a write's record may end well after its store: its core can be
                 descheduled in between) and some byte W wrote there is not overwritten by a write that
                 started after W ended and ended before r began. Then what W's core did before W
                 (per its own pipes: what W's instruction comes after) happens before what r's core
                 does after its check of r: from the first GM access or cross-core sync after r on

A single read that happens to see another core's write is no poll (no run of two, at a line where
no core ever polled); neither is a fixed number of re-reads whose bytes did not change between the
last two. The FLOMS incident's racy read is such a single read and stays reported. The other side of
the same evidence: a loop whose every run, on every core, found its flag at the first look (a line
no core spun at) orders nothing, and what it orders is reported.

The acquire is placed after r's loop round, before the core's next GM access or sync, and only when
that round makes the scalar unit wait for r's pipe (a wait_flag or barrier, or the compiler's
automatic sync before a scalar read): the loop's exit depends on the scalar having read what r
brought in, and everything issued after that exit is issued after r completed. The poll reads
themselves are the synchronisation (like the flag word of IBWait), so they take part in no GM
conflict.

:func:`with_polls` returns the trace with the edges as :class:`~mpnpu.runtime.trace.GmFlagEvent`
pairs (op ``"observed"`` after a write the poll read whole: it releases the write and what its
instruction comes after; ``"observed-part"`` after one it read only some bytes of, whose other bytes
need not have landed when it looked: only what the write comes after; op ``"wait"`` at the acquire)
and without the poll reads. The rule reads times, so it runs
before racecheck's reuse key is taken: two launches that differ in their poll edges differ in
their keys.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from mpnpu.ascendc.native import abi
from mpnpu.ascendc.native.records import RecordChunk
from mpnpu.runtime.trace import (
    GM_FLAG_OBSERVED,
    GM_FLAG_OBSERVED_PART,
    READ,
    Access,
    DroppedSyncEvent,
    EventColumns,
    FlagSetEvent,
    FlagWaitEvent,
    GmFlagEvent,
    LaunchTrace,
    LocalAccess,
    PackedEvents,
    PipeSyncEvent,
    SyncAllEvent,
    TraceEvent,
)

#: events that end a poll run (and bound a poll round's tail): a core's own cross-core syncs
_BREAKS = (SyncAllEvent, FlagSetEvent, FlagWaitEvent, GmFlagEvent, DroppedSyncEvent)
#: name of the synthetic GmFlagEvents this module adds
POLL_NAME = "poll"
#: op of the release that follows an observed write
OBSERVED = GM_FLAG_OBSERVED

Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class _Run:
    """Consecutive reads of the same bytes by one core (positions in its event list)."""

    core: int
    positions: tuple[int, ...]
    key: tuple[str, str, int]  # its poll site if it is one: (segment, site, bytes read)


@dataclass(frozen=True)
class _Write:
    core: int
    pos: int
    ev: Access


class _Writes:
    """The writes and atomics of one GM segment, with their hulls and times as columns for a quick
    first filter."""

    def __init__(self, writes: list[_Write]) -> None:
        self.writes = writes
        self.lo = np.array([w.ev.ranges[0][0] if w.ev.ranges else 0 for w in writes], dtype=np.int64)
        self.hi = np.array([w.ev.ranges[-1][1] if w.ev.ranges else 0 for w in writes], dtype=np.int64)
        self.t1 = np.array([w.ev.t1 for w in writes], dtype=np.int64)

    def touching(self, r: Access, t1_lo: int, t1_hi: int) -> list[_Write]:
        """The writes whose bytes meet ``r``'s and that ended in (t1_lo, t1_hi]."""
        if not r.ranges or not self.writes:
            return []
        sel = (self.lo < r.ranges[-1][1]) & (self.hi > r.ranges[0][0]) & (self.t1 > t1_lo) & (self.t1 <= t1_hi)
        return [w for w in (self.writes[i] for i in np.flatnonzero(sel).tolist()) if _overlap(w.ev.ranges, r.ranges)]


_NO_WRITES = _Writes([])
#: no upper bound on a write's end time
_FOREVER = 2**62


def _overlap(a: Ranges, b: Ranges) -> list[tuple[int, int]]:
    """The byte intervals both sorted, disjoint range lists cover."""
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _subtract(spans: list[tuple[int, int]], cut: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` less every byte of ``cut`` (both lists of [lo, hi) intervals)."""
    for clo, chi in cut:
        nxt: list[tuple[int, int]] = []
        for lo, hi in spans:
            if chi <= lo or hi <= clo:
                nxt.append((lo, hi))
                continue
            if lo < clo:
                nxt.append((lo, clo))
            if chi < hi:
                nxt.append((chi, hi))
        spans = nxt
    return spans


def _chunk_repeats(chunk: RecordChunk) -> bool:
    """Whether a compiled kernel's records hold two consecutive GM reads of the same bytes."""
    rec = chunk.records()
    gm = rec[rec["type"] == abi.EV_GM]
    if len(gm) < 2:
        return False
    same = gm["kind"][1:] == ord("R")
    same &= gm["kind"][:-1] == ord("R")
    for field in ("site", "index", "start", "run", "stride", "count"):
        same &= gm[field][1:] == gm[field][:-1]
    return bool(same.any())


def _columns_repeat(part: EventColumns) -> bool:
    """Whether a run of Python events holds two consecutive GM reads of the same bytes."""
    return _body_repeats(part.body)


# (kept by the run's timing-free bytes, which decide it: a batch repeats each case's launches, and
# each check would otherwise unpickle a core's whole run; a run's bytes are a few KB)
@functools.lru_cache(maxsize=512)
def _body_repeats(body: bytes) -> bool:
    kind, segment, ranges, site = EventColumns.body_fields(body, Access, ("kind", "segment", "ranges", "site"))
    rows = list(zip(kind, segment, ranges, site))
    return any(a[0] == READ and a == b for a, b in zip(rows, rows[1:]))


def _may_poll(events: Sequence[TraceEvent]) -> bool:
    """A cheap necessary condition for a poll run of two reads in one core's events (without
    decoding a packed trace into events: a launch whose analysis is reused never is)."""
    if isinstance(events, PackedEvents) and all(isinstance(p, (RecordChunk, EventColumns)) for p in events.parts):
        return any(_chunk_repeats(p) if isinstance(p, RecordChunk) else _columns_repeat(p)  # type: ignore[arg-type]
                   for p in events.parts)
    prev: Any = None
    for ev in events:
        if type(ev) is Access:
            if ev.kind == READ and prev is not None and prev.kind == READ and prev.ranges == ev.ranges \
                    and prev.segment == ev.segment and prev.site == ev.site:
                return True
            prev = ev
    return False


def _runs(core: int, events: Sequence[TraceEvent]) -> list[_Run]:
    """Every run of consecutive reads of the same bytes of one core (runs of one included)."""
    runs: list[_Run] = []
    cur: list[int] = []
    key: tuple[str, Ranges, str] | None = None

    def close() -> None:
        nonlocal cur, key
        if cur and key is not None:
            seg, ranges, site = key
            runs.append(_Run(core, tuple(cur), (seg, site, sum(hi - lo for lo, hi in ranges))))
        cur, key = [], None

    ev: Any
    for pos, ev in enumerate(events):
        t = type(ev)
        if t is Access:
            k = (ev.segment, tuple(ev.ranges), ev.site) if ev.kind == READ else None
            if k is not None and k == key:
                cur.append(pos)
                continue
            close()
            if k is not None:
                cur, key = [pos], k
        elif isinstance(ev, _BREAKS):
            close()
    close()
    return runs


def _writes_by_segment(trace: LaunchTrace) -> dict[str, _Writes]:
    out: dict[str, list[_Write]] = {}
    for c, evs in enumerate(trace.events):
        for pos, ev in enumerate(evs):
            if type(ev) is Access and ev.kind != READ:
                out.setdefault(ev.segment, []).append(_Write(c, pos, ev))
    return {seg: _Writes(ws) for seg, ws in out.items()}


def _acquire_at(events: Sequence[TraceEvent], pos: int, auto_sync: bool) -> int | None:
    """Where the acquire of the read at ``pos`` goes (the index of the first GM access or cross-core
    sync after it, or the end), or None when nothing in between makes the scalar unit wait for it."""
    read: Any = events[pos]
    # (accesses in program order, and the scalar unit's own reads: the next event is after it)
    waited = read.pipe in ("", "PIPE_S")
    ev: Any
    for j in range(pos + 1, len(events)):
        ev = events[j]
        t = type(ev)
        if t is Access or isinstance(ev, _BREAKS):
            return j if waited else None
        if t is PipeSyncEvent and ev.op in ("wait", "barrier"):
            waited = True
        elif t is LocalAccess and auto_sync and ev.pipe == "PIPE_S" and ev.kind == READ:
            waited = True
    return len(events) if waited else None


def _observed(r: Access, writes: _Writes, reader: int) -> list[_Write]:
    """The other cores' writes the read ``r`` observed (module docstring, "edge")."""
    if not r.t0:
        return []
    # a write whose record began before the read's ended: its store may have landed before the read's
    # load even when its record ends later (a core can be descheduled between its store and the
    # record's end time; the loop's exit says the read saw a change)
    before = [w for w in writes.touching(r, 0, _FOREVER) if w.ev.t0 < r.t1]
    seen: list[_Write] = []
    for w in before:
        if w.core == reader:
            continue
        spans = _overlap(w.ev.ranges, r.ranges)
        later = [x for x in before if x is not w and x.ev.t0 >= w.ev.t1]
        for x in later:
            spans = _subtract(spans, _overlap(x.ev.ranges, r.ranges))
        if spans:
            seen.append(w)
    return seen


def _is_poll(run: _Run, trace: LaunchTrace, writes: _Writes) -> bool:
    """Whether a run of two or more reads ended right after another core's write to its bytes."""
    if len(run.positions) < 2:
        return False
    evs = trace.events[run.core]
    last: Any = evs[run.positions[-1]]
    prev: Any = evs[run.positions[-2]]
    if not last.t0 or not prev.t0:
        return False
    # the change landed after the previous read began and before the last one ended (the write's record
    # may end later than its store, see _observed)
    return any(w.core != run.core and w.ev.t0 < last.t1 for w in writes.touching(last, prev.t0, _FOREVER))


def _spun_sites(runs: list[_Run], trace: LaunchTrace, writes: dict[str, _Writes]) -> set[tuple[str, str, int]]:
    """The poll sites ``runs`` (of ``trace``, with its writes by segment) show: the keys of its polls."""
    return {r.key for r in runs if _is_poll(r, trace, writes.get(r.key[0], _NO_WRITES))}


def with_polls(trace: LaunchTrace) -> LaunchTrace:
    """``trace`` with the happens-before edges of its polls as GM flag events and without its poll
    reads (module docstring); ``trace`` itself when it has no poll."""
    return poll_view(trace)[0]


def poll_view(trace: LaunchTrace) -> tuple[LaunchTrace, list[list[int]] | None]:
    """:func:`with_polls` and, per core, the position in ``trace`` of each event of the result (-1
    for an event the rule added); None when the result is ``trace`` itself."""
    if not trace.poll_sites and not any(_may_poll(evs) for evs in trace.events):
        return trace, None
    runs = [r for c, evs in enumerate(trace.events) for r in _runs(c, evs)]
    writes = _writes_by_segment(trace)
    sites = _spun_sites(runs, trace, writes) | trace.poll_sites
    if not sites:
        return trace, None
    drop: list[set[int]] = [set() for _ in trace.events]
    after: list[dict[int, list[GmFlagEvent]]] = [{} for _ in trace.events]  # core -> pos -> events after it
    before: list[dict[int, list[GmFlagEvent]]] = [{} for _ in trace.events]  # core -> index -> events before it
    keys: dict[tuple[int, int], int] = {}  # an observed write -> its release's key
    for run in runs:
        if run.key not in sites:
            continue
        evs = trace.events[run.core]
        last: Any = evs[run.positions[-1]]
        at = _acquire_at(evs, run.positions[-1], trace.auto_sync)
        if at is None:
            continue  # nothing says the core waited for what it read: its reads stay accesses
        drop[run.core].update(run.positions)
        for w in _observed(last, writes.get(run.key[0], _NO_WRITES), run.core):
            key = keys.get((w.core, w.pos))
            if key is None:
                key = keys[(w.core, w.pos)] = -1 - len(keys)
                # a poll that read only some of the write's bytes saw those land, not the rest
                op = OBSERVED if not _subtract(list(w.ev.ranges), list(last.ranges)) else GM_FLAG_OBSERVED_PART
                after[w.core].setdefault(w.pos, []).append(
                    GmFlagEvent(op, key, 0, POLL_NAME, w.ev.stage, w.ev.site, w.ev.t1, w.ev.t1))
            before[run.core].setdefault(at, []).append(
                GmFlagEvent("wait", key, 1, POLL_NAME, last.stage, last.site, last.t0, last.t1))
    if not any(drop):
        return trace, None
    events: list[tuple[TraceEvent, ...]] = []
    origin: list[list[int]] = []
    for c, evs in enumerate(trace.events):
        out: list[TraceEvent] = []
        was: list[int] = []
        for pos, ev in enumerate(evs):
            added = before[c].get(pos, ())
            out += added
            was += [-1] * len(added)
            if pos not in drop[c]:
                out.append(ev)
                was.append(pos)
            added = after[c].get(pos, ())
            out += added
            was += [-1] * len(added)
        added = before[c].get(len(evs), ())
        out += added
        was += [-1] * len(added)
        events.append(tuple(out))
        origin.append(was)
    return trace._replace(events=tuple(events)), origin


def poll_sites(trace: LaunchTrace) -> set[tuple[str, str, int]]:
    """The poll sites (segment, kernel line, bytes read) the launch's own runs show (module docstring)."""
    if not any(_may_poll(evs) for evs in trace.events):
        return set()
    return _spun_sites([r for c, evs in enumerate(trace.events) for r in _runs(c, evs)], trace,
                       _writes_by_segment(trace))


@dataclass(frozen=True)
class FirstLook:
    """A read that may be a polling loop's first and only look: one read, at a line where no core of
    the launch spun, that observed another core's write and that its core then waited for (what a
    loop that found its flag set at once records). ``key`` is its site as a poll site would be named."""

    reader: int
    read_pos: int
    writer: int
    write_pos: int
    key: tuple[str, str, int]


_PIPE_S = abi.PIPE_NAMES.index("PIPE_S")


def _may_look(events: Sequence[TraceEvent]) -> bool:
    """A cheap necessary condition for a first look in one core's events: a read of GM by the scalar
    unit (a packed trace is read as columns, not decoded)."""
    if isinstance(events, PackedEvents) and all(isinstance(p, (RecordChunk, EventColumns)) for p in events.parts):
        for p in events.parts:
            if isinstance(p, RecordChunk):
                rec = p.records()
                if bool(((rec["type"] == abi.EV_GM) & (rec["kind"] == ord("R")) & (rec["pipe"] == _PIPE_S)).any()):
                    return True
            elif isinstance(p, EventColumns):
                kind, pipe = p.fields(Access, ("kind", "pipe"))
                if any(k == READ and q in ("", "PIPE_S") for k, q in zip(kind, pipe)):
                    return True
        return False
    return any(type(ev) is Access and ev.kind == READ and ev.pipe in ("", "PIPE_S") for ev in events)


def first_looks(trace: LaunchTrace) -> list[FirstLook]:
    """The scalar unit's single reads of GM (``GetValue``, ``ReadGmByPassDCache``) that look like a
    polling loop's first and only look (:class:`FirstLook`), one per (site, reader, writer), in core
    order. A directed run that holds the writer before its write until the reader has looked shows
    whether the reader then spins (:mod:`mpnpu.racecheck.poll_probe`)."""
    if not any(_may_look(evs) for evs in trace.events):
        return []
    runs = [r for c, evs in enumerate(trace.events) for r in _runs(c, evs)]
    writes = _writes_by_segment(trace)
    spun = _spun_sites(runs, trace, writes) | trace.poll_sites
    out: list[FirstLook] = []
    seen: set[tuple[tuple[str, str, int], int, int]] = set()
    for run in runs:
        if len(run.positions) != 1 or run.key in spun:
            continue
        evs = trace.events[run.core]
        read: Any = evs[run.positions[0]]
        if read.pipe not in ("", "PIPE_S") or _acquire_at(evs, run.positions[0], trace.auto_sync) is None:
            continue
        for w in _observed(read, writes.get(run.key[0], _NO_WRITES), run.core):
            if (run.key, run.core, w.core) not in seen:
                seen.add((run.key, run.core, w.core))
                out.append(FirstLook(run.core, run.positions[0], w.core, w.pos, run.key))
    return out


def poll_reads(trace: LaunchTrace) -> int:
    """How many reads of ``trace`` :func:`with_polls` takes for synchronisation (for reports and tests)."""
    new = with_polls(trace)
    if new is trace:
        return 0
    n_old = sum(1 for evs in trace.events for ev in evs if type(ev) is Access)
    n_new = sum(1 for evs in new.events for ev in evs if type(ev) is Access)
    return n_old - n_new


__all__ = ["OBSERVED", "POLL_NAME", "FirstLook", "first_looks", "poll_reads", "poll_sites", "poll_view", "with_polls"]
