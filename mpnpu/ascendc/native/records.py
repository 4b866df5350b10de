"""A compiled kernel's trace records as a core ships them, and their decoding into trace events.

A traced launch of a compiled kernel leaves its records in the library (``MpnpuEvent``,
``include/mpnpu/abi.h``: 64 bytes each, in program order). Turning a thousand of them into
NamedTuples in the core process, then pickling and unpickling those, cost more than the launch
itself; so the core ships them as they are — a :class:`RecordChunk`: the records' bytes, the sites
they name and the GM regions they index — and the parent decodes them (:meth:`RecordChunk.decode`,
the same events the core process used to make) only when something reads the trace. Racecheck's
reuse of identical launches (:mod:`mpnpu.racecheck.reuse`) compares chunks on their bytes
(:meth:`RecordChunk.key`) and takes the times it needs from them (:meth:`RecordChunk.times`),
decoding nothing.

Imports only the ABI's constants and the runtime's trace types: the parent unpickles chunks without
loading any kernel library.
"""

from __future__ import annotations

from typing import Any, Hashable

import numpy as np

from mpnpu.runtime.trace import (
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    LocalAccess,
    PipeSyncEvent,
    StageEvent,
    StridedRanges,
    SyncAllEvent,
    TraceEvent,
)

from . import abi

#: each record as 8 unsigned 64-bit words: 0-5 what the record says, 6 t0, 7 t1 (abi.EVENT_DTYPE)
_WORDS = abi.EVENT_DTYPE.itemsize // 8
_TIME_WORDS = slice(6, 8)
assert abi.EVENT_DTYPE.fields is not None and abi.EVENT_DTYPE.fields["t0"][1] == 48, "t0 is word 6 of a record"
_SYNC_OPS = {ord("s"): "set", ord("w"): "wait", ord("b"): "barrier"}


class RecordChunk:
    """One launch's records of one core, as the library wrote them.

    ``sites``: (site id, site, function) of every site id the records use ("?" for an id the library
    did not know); ``regions``: (tensor name, segment, offset of the root tensor in the segment) of
    each GM region, in the order the records index them.
    """

    __slots__ = ("data", "sites", "regions")

    def __init__(self, data: bytes, sites: tuple[tuple[int, str, str], ...],
                 regions: tuple[tuple[str, str, int], ...]) -> None:
        self.data = data  # the records' bytes (abi.EVENT_DTYPE each)
        self.sites = sites
        self.regions = regions

    def __reduce__(self) -> tuple[type[RecordChunk], tuple[Any, ...]]:
        return (RecordChunk, (self.data, self.sites, self.regions))

    def records(self) -> np.ndarray:
        """The records (a read-only structured array)."""
        return np.frombuffer(self.data, dtype=abi.EVENT_DTYPE)

    def key(self) -> Hashable:
        """Every word of every record but its times, whether each time was recorded (a stage's span
        exists only where one was), the sites and the regions: equal for two chunks exactly when
        their decoded events are equal but for their times."""
        words = np.frombuffer(self.data, dtype=np.uint64).reshape(-1, _WORDS)
        return (words[:, :_TIME_WORDS.start].tobytes(), (words[:, _TIME_WORDS] != 0).tobytes(), self.sites,
                self.regions)

    def times(self) -> tuple[np.ndarray, np.ndarray]:
        """The t0 and t1 of every record (int64)."""
        rec = self.records()
        return rec["t0"].astype(np.int64), rec["t1"].astype(np.int64)

    def decode(self) -> tuple[list[TraceEvent], np.ndarray]:
        """The records as the runtime's trace events, in program order, each C++ function's run of
        events after a StageEvent spanning it; per event, the index of its record (-1 for a stage,
        for the pipe of a cross-core set and for an intra-core sync: their times are not the
        record's)."""
        sites = {i: (site, func) for i, site, func in self.sites}
        unknown = ("?", "?")
        regions = self.regions
        pipes, memories, hard_events = abi.PIPE_NAMES, abi.MEMORY_NAMES, abi.HARD_EVENTS
        out: list[TraceEvent] = []
        index: list[int] = []
        ev: TraceEvent
        for i, (etype, kind, pipe, mem, site_id, region, aux, start, run_, stride, count, t0, t1) in enumerate(
                self.records().tolist()):
            site, func = sites.get(site_id, unknown)
            if etype == abi.EV_GM:
                name, segment, root_offset = regions[region]
                first = root_offset + start
                if count > 1 and stride > run_:
                    ranges: tuple[tuple[int, int], ...] = StridedRanges(first, run_, stride, count)
                else:
                    ranges = ((first, first + (count - 1) * stride + run_),)
                # (mem 1: the copy ran from its pipe's queue, later than issued)
                ev = Access(chr(kind), name, segment, ranges, root_offset, aux, func, site, t0, t1, pipes[pipe],
                            pipes[pipe] if mem else "")
            elif etype == abi.EV_LOCAL:
                ev = LocalAccess(chr(kind), memories[mem], start, start + run_, pipes[pipe], func, site, t0, t1)
            elif etype == abi.EV_SYNC_ALL:
                ev = SyncAllEvent(bool(mem), site, func, site, t0, t1)
            elif etype == abi.EV_FLAG_SET:
                out.append(FlagSetEvent(mem, region, site, func, site, t0, t1))
                index.append(i)
                ev = PipeSyncEvent("xset", pipes[pipe], "", region, site, func, site, t0, t0)
                i = -1
            elif etype == abi.EV_FLAG_WAIT:
                ev = FlagWaitEvent(mem, region, site, func, site, t0, t1)
            elif etype == abi.EV_PIPE_SYNC:
                ev = PipeSyncEvent(_SYNC_OPS[kind], pipes[pipe], hard_events[aux] if aux >= 0 else "",
                                   region if region >= 0 else 0, site, func, site)
                i = -1
            elif etype == abi.EV_DROPPED:
                ev = DroppedSyncEvent(site, abi.DROPPED_CALLS[region], func, site, t0, t1)
            else:
                continue
            out.append(ev)
            index.append(i)
        return _with_stages(out, index)


def _with_stages(events: list[Any], index: list[int]) -> tuple[list[TraceEvent], np.ndarray]:
    """The events with a StageEvent before each run of events made in one kernel function: a C++
    kernel's stages are its functions (TargetProcess, CVProcess, ...), and timelines draw them as
    spans from the run's first to its last timestamp (no stage where nothing in the run was timed)."""
    out: list[TraceEvent] = []
    out_index: list[int] = []
    start = 0

    def flush(stop: int) -> None:
        run = events[start:stop]
        stamps = [t for ev in run for t in (ev.t0, ev.t1) if t]
        if stamps:
            out.append(StageEvent(run[0].stage, run[0].site, min(stamps), max(stamps)))
            out_index.append(-1)
        out.extend(run)
        out_index.extend(index[start:stop])

    for i in range(1, len(events)):
        if events[i].stage != events[start].stage:
            flush(i)
            start = i
    if events:
        flush(len(events))
    return out, np.array(out_index, dtype=np.int64)
