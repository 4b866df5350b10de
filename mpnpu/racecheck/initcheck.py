"""initcheck: reads of memory that nothing wrote in the launch, from the launch's trace alone.

The rules (docs/initcheck-synccheck.md):

    local memory    a read by any pipe of a core of bytes of its UB, L1 or L0A/B/C none of which
                    any instruction of that core issued before it wrote. The trace records each
                    instruction's byte hull, not its strided bytes: a read whose hull was partly
                    written (the pad between rows of a tile) is not reported, only one of memory
                    entirely unwritten. Compiled (C++) kernels only: a Python kernel's numpy
                    expressions on a local tensor are not recorded, so its writes are not all known
    GM              a read of bytes of a GM allocation the launch started with unwritten — allocated
                    since the device's previous launch and neither written nor filled with data by the
                    host (:attr:`LaunchTrace.unwritten_gm`; a poison fill such as the operators'
                    0xFF is not data) — that no core wrote at any time in the launch. Kernel inputs,
                    buffers the host filled and buffers that lived through an earlier launch count as
                    written (what an earlier launch wrote is not in this launch's trace)

Reads of GM bytes another core writes only later are racecheck's, not initcheck's: a byte some core
writes in the launch is initialised as far as initcheck is concerned. A finding is reported at the
kernel line of the read, with the buffer and the hull of the bytes found unwritten.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from typing import Any, Container, Iterable, Sequence

from mpnpu.racecheck.findings import INITCHECK, UNINIT_READ, Finding, merge_launch
from mpnpu.racecheck.records_scan import records_of, unwritten_local_reads
from mpnpu.runtime.trace import READ, Access, EventColumns, LaunchTrace, LocalAccess, PackedEvents


class Intervals:
    """Disjoint, sorted byte intervals [start, stop): what has been written so far."""

    __slots__ = ("starts", "stops")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.stops: list[int] = []

    def add(self, start: int, stop: int) -> None:
        """Cover [start, stop) too (merging with the intervals it meets or touches)."""
        if start >= stop:
            return
        i = bisect_left(self.stops, start)  # first interval ending at or after start
        j = bisect_right(self.starts, stop)  # intervals from i to j - 1 meet [start, stop]
        if i < j:
            start = min(start, self.starts[i])
            stop = max(stop, self.stops[j - 1])
        self.starts[i:j] = [start]
        self.stops[i:j] = [stop]


def _unwritten_local_reads(events: Any, from_records: bool) -> Iterable[LocalAccess]:
    """One core's local reads none of whose bytes an earlier instruction of the core wrote."""
    records = records_of(events) if from_records else None
    if records is not None:
        yield from records.events_at(unwritten_local_reads(records))[0]  # type: ignore[misc]
        return
    written: dict[str, Intervals] = defaultdict(Intervals)
    ev: Any  # checked by type identity below (the fast way)
    for ev in events:
        if type(ev) is not LocalAccess:
            continue
        if ev.kind != READ:
            written[ev.memory].add(ev.start, ev.stop)
        elif ev.start < ev.stop and not _within(written[ev.memory], ev.start, ev.stop):
            yield ev


def _local_findings(trace: LaunchTrace, from_records: bool = True) -> Iterable[Finding]:
    topo = trace.topology
    for c, events in enumerate(trace.events):
        info = None
        for ev in _unwritten_local_reads(events, from_records):
            info = info or topo.core(c)
            yield Finding(
                check=INITCHECK, kind=UNINIT_READ, subject=ev.memory, site=ev.site, stage=ev.stage, core=info.label,
                message=f"{ev.pipe} reads {ev.memory} bytes [{ev.start}:{ev.stop}] that nothing in this core wrote "
                        "before it in the launch",
                fix=f"write those bytes (a copy-in, a Duplicate, or the instruction that produces them) before the "
                    f"read at {ev.site}, or read only the bytes that were written",
                byte_range=(ev.start, ev.stop), pipe=ev.pipe, cores=frozenset({info.short}))


def _gm_accesses(events: Any, fresh: Container[str], from_records: bool) -> Iterable[Any]:
    """One core's GM accesses of the ``fresh`` segments, in program order."""
    records = records_of(events) if from_records else None
    if records is None:
        return (ev for ev in events if type(ev) is Access and ev.segment in fresh)
    return (ev for chunk in records.chunks for ev in chunk.gm_accesses(fresh))


def _gm_findings(trace: LaunchTrace, from_records: bool = True) -> Iterable[Finding]:
    fresh: dict[str, Intervals] = defaultdict(Intervals)  # per segment: bytes the launch started without
    for _name, segment, start, stop in trace.unwritten_gm:
        fresh[segment].add(start, stop)
    if not fresh:
        return
    written: dict[str, Intervals] = defaultdict(Intervals)
    reads: list[tuple[int, Access]] = []
    ev: Any
    for c, events in enumerate(trace.events):
        for ev in _gm_accesses(events, fresh, from_records):
            if ev.kind == READ:
                reads.append((c, ev))
            else:
                w = written[ev.segment]
                for s, e in ev.ranges:
                    w.add(s, e)
    topo = trace.topology
    for c, ev in reads:
        unwritten = fresh[ev.segment]
        done = written[ev.segment]
        lo: int | None = None
        hi = 0
        for s, e in ev.ranges:
            # the bytes of this run that the launch started without and no core wrote
            rest = _minus(_within(unwritten, s, e), done)
            for a, b in rest:
                lo = a if lo is None else min(lo, a)
                hi = max(hi, b)
        if lo is None:
            continue
        info = topo.core(c)
        elo, ehi = ev.elements(lo, hi)
        yield Finding(
            check=INITCHECK, kind=UNINIT_READ, subject=f"GM tensor {ev.tensor}", site=ev.site, stage=ev.stage,
            core=info.label,
            message=f"reads {ev.tensor}[{elo}:{ehi}], which no core wrote in this launch and the host did not fill",
            fix=f"write {ev.tensor}[{elo}:{ehi}] before it is read (initialise it in the kernel, or fill it on the "
                "host), or do not read it",
            byte_range=(elo, ehi), elements=True, pipe=ev.pipe, cores=frozenset({info.short}))


def _within(iv: Intervals, start: int, stop: int) -> list[tuple[int, int]]:
    """The parts of [start, stop) that ``iv`` covers."""
    out = []
    i = bisect_right(iv.stops, start)
    while i < len(iv.starts) and iv.starts[i] < stop:
        a, b = max(start, iv.starts[i]), min(stop, iv.stops[i])
        if a < b:
            out.append((a, b))
        i += 1
    return out


def _minus(parts: Sequence[tuple[int, int]], iv: Intervals) -> list[tuple[int, int]]:
    """``parts`` less the bytes ``iv`` covers."""
    out = []
    for a, b in parts:
        pos = a
        for s, e in _within(iv, a, b):
            if s > pos:
                out.append((pos, s))
            pos = max(pos, e)
        if pos < b:
            out.append((pos, b))
    return out


def compiled(trace: LaunchTrace) -> bool:
    """Whether the launch ran a compiled kernel: its cores shipped the library's records, in which
    every local access is recorded (a Python kernel's numpy expressions are not)."""
    return any(isinstance(events, PackedEvents) and any(not isinstance(p, EventColumns) for p in events.parts)
               for events in trace.events)


def initcheck(trace: LaunchTrace, local: bool | None = None, *, from_records: bool = True) -> list[Finding]:
    """The reads of never-written memory in one traced launch, merged by line, memory and pipe.
    ``local``: check local memory too (default: for a compiled kernel, :func:`compiled`);
    ``from_records``: read a compiled kernel's records as they are (:mod:`records_scan`; False: walk
    the decoded events, the reference the tests compare with)."""
    if local is None:
        local = compiled(trace)
    return merge_launch([*(_local_findings(trace, from_records) if local else ()),
                         *_gm_findings(trace, from_records)])
