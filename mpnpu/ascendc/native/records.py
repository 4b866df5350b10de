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

from itertools import repeat
from typing import Any, Container, Hashable

import numpy as np

from mpnpu.runtime.trace import (
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    GmFlagEvent,
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

    __slots__ = ("data", "sites", "regions", "_cache")

    def __init__(self, data: bytes, sites: tuple[tuple[int, str, str], ...],
                 regions: tuple[tuple[str, str, int], ...]) -> None:
        self.data = data  # the records' bytes (abi.EVENT_DTYPE each)
        self.sites = sites
        self.regions = regions
        self._cache: dict[str, Any] = {}  # what the analysis derives more than once (never pickled)

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
        events after a StageEvent spanning it (none where nothing in the run was timed); per event,
        the index of its record (-1 for a stage, for the pipe of a cross-core set and for an
        intra-core sync: their times are not the record's).

        Column by column, in C: the names come from tables indexed by whole columns, and each record
        type's events are made by one ``map`` of the tuple constructor over its zipped columns (the
        events of a thousand records in well under a millisecond); only a GM access's byte ranges
        are computed one by one."""
        rec = self.records()
        if not len(rec):
            return [], np.zeros(0, dtype=np.int64)
        out, _, _ = self._flat(rec)
        index_out, t0, t1, stage_id = self._event_columns(rec)
        return _with_stages(out, index_out, t0, t1, stage_id)

    def layout(self) -> tuple[np.ndarray, np.ndarray]:
        """What :meth:`decode` gives without making any event: per event, the index of its record
        (-1 as there), and per record, the position of its (first) event (-1: a record of a type
        this runtime does not know, which makes none)."""
        got = self._cache.get("layout")
        if got is None:
            got = self._cache["layout"] = self._layout()
        return got

    def outside_locals(self) -> tuple[list[TraceEvent], list[int]]:
        """The decoded events of every record but the local accesses, with each one's position among
        :meth:`decode`'s events (a flag set's pipe "xset" right after the set): what the analysis
        between cores reads, without decoding the local accesses (most of a vector core's records)."""
        got = self._cache.get("outside")
        if got is None:
            rec = self.records()
            _, position = self.layout()
            events, at = self.events_at(np.flatnonzero(rec["type"] != abi.EV_LOCAL))
            second = np.concatenate(([False], at[1:] == at[:-1])) if len(at) else np.zeros(0, dtype=bool)
            got = self._cache["outside"] = (events, (position[at] + second).tolist())
        return got

    def _layout(self) -> tuple[np.ndarray, np.ndarray]:
        rec = self.records()
        if not len(rec):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        index_out, t0, t1, stage_id = self._event_columns(rec)
        starts, timed = _stage_runs(t0, t1, stage_id)
        # each event moves down by the stages inserted at or before its run's start
        inserted = np.zeros(len(index_out), dtype=np.int64)
        inserted[starts[timed]] = 1
        flat_at = np.arange(len(index_out)) + np.cumsum(inserted)
        index = np.full(len(index_out) + int(timed.sum()), -1, dtype=np.int64)
        index[flat_at] = index_out
        per_record = _EVENTS_PER_RECORD[rec["type"]]
        first = np.cumsum(per_record) - per_record  # each record's first event, before the stages
        position = np.where(per_record > 0, flat_at[np.minimum(first, max(len(flat_at) - 1, 0))], -1)
        return index, position

    def functions(self) -> list[str]:
        """The function of each record that makes an event, in record order."""
        rec = self.records()
        _, _, _, func_col = self._site_columns(rec)
        names: list[str] = func_col[_EVENTS_PER_RECORD[rec["type"]] > 0].tolist()
        return names

    def _event_columns(self, rec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per event of :meth:`_flat` (no stages): the index of its record (-1 for the pipe of a
        cross-core set and an intra-core sync), its own times, and the id of its function."""
        etype = rec["type"]
        per_record = _EVENTS_PER_RECORD[etype]
        src = np.repeat(np.arange(len(rec)), per_record)
        row, func_id, _, _ = self._site_columns(rec)
        t0_all, t1_all = rec["t0"].astype(np.int64), rec["t1"].astype(np.int64)
        kind_of = etype[src]
        index_out = src.copy()
        xset = np.concatenate(([False], src[1:] == src[:-1]))  # the second event of a flag set
        index_out[xset | (kind_of == abi.EV_PIPE_SYNC)] = -1
        # the decoded events' own times, for the stages' spans
        t0 = np.where(index_out >= 0, t0_all[src], 0)
        t0[xset] = t0_all[src][xset]
        t1 = np.where(index_out >= 0, t1_all[src], 0)
        t1[xset] = t0[xset]
        return index_out, t0, t1, func_id[row][src]

    def events_at(self, at: np.ndarray) -> tuple[list[TraceEvent], np.ndarray]:
        """The events :meth:`decode` makes of the records at positions ``at`` (ascending), decoding
        nothing else (no stages), with the position of each event's record."""
        if not len(at):
            return [], at
        out, src, _ = self._flat(self.records()[at])
        return out, at[src]

    def gm_accesses(self, segments: Container[str]) -> list[TraceEvent]:
        """The decoded GM accesses of the regions that lie in one of ``segments``, in program order."""
        rec = self.records()
        in_segment = np.array([r[1] in segments for r in self.regions], dtype=bool)
        gm = np.flatnonzero(rec["type"] == abi.EV_GM)
        return self.events_at(gm[in_segment[rec["index"][gm]]] if len(in_segment) else gm[:0])[0]

    def _flat(self, rec: np.ndarray) -> tuple[list[TraceEvent], np.ndarray, np.ndarray]:
        """The events of records ``rec`` in their order (a flag set's pipe "xset" after it, a record
        of a type this runtime does not know none), the index in ``rec`` of each event's record,
        and an id per event of its function."""
        n = len(rec)
        etype = rec["type"]
        t0_all, t1_all = rec["t0"].astype(np.int64), rec["t1"].astype(np.int64)
        row, func_id, site_col, func_col = self._site_columns(rec)
        pipes = _PIPE_NAMES[rec["pipe"]]
        kinds = _KIND_NAMES[rec["kind"]]
        made: dict[int, list[TraceEvent]] = {}
        events = _events

        at = np.flatnonzero(etype == abi.EV_GM)
        if len(at):
            regions = self.regions
            region = rec["index"][at].tolist()
            name = [regions[r][0] for r in region]
            segment = [regions[r][1] for r in region]
            root = np.array([regions[r][2] for r in region], dtype=np.int64)
            ranges: list[tuple[tuple[int, int], ...]] = []
            for first, run_, stride, count in zip((root + rec["start"][at].astype(np.int64)).tolist(),
                                                  rec["run"][at].tolist(), rec["stride"][at].tolist(),
                                                  rec["count"][at].tolist()):
                if count > 1 and stride > run_:
                    ranges.append(StridedRanges(first, run_, stride, count))
                else:
                    ranges.append(((first, first + (count - 1) * stride + run_),))
            # (mem 1: the copy ran from its pipe's queue, later than issued)
            ran_on = np.where(rec["mem"][at] != 0, pipes[at], "")
            made[abi.EV_GM] = events(Access, at, kinds[at], name, segment, ranges, root,
                                     rec["aux"][at].astype(np.int64), func_col[at], site_col[at], t0_all[at],
                                     t1_all[at], pipes[at], ran_on)
        at = np.flatnonzero(etype == abi.EV_LOCAL)
        start = rec["start"][at].astype(np.int64)
        made[abi.EV_LOCAL] = events(LocalAccess, at, kinds[at], _MEMORY_NAMES[rec["mem"][at]], start,
                                    start + rec["run"][at].astype(np.int64), pipes[at], func_col[at], site_col[at],
                                    t0_all[at], t1_all[at])
        at = np.flatnonzero(etype == abi.EV_SYNC_ALL)
        made[abi.EV_SYNC_ALL] = events(SyncAllEvent, at, rec["mem"][at] != 0, site_col[at], func_col[at], site_col[at],
                                       t0_all[at], t1_all[at])
        at = np.flatnonzero(etype == abi.EV_FLAG_SET)
        flag = rec["index"][at].astype(np.int64)
        mode, point = _sync_mark(rec["mem"][at], site_col[at])
        sets = events(FlagSetEvent, at, mode, flag, point, func_col[at], site_col[at], t0_all[at], t1_all[at])
        xsets = events(PipeSyncEvent, at, repeat("xset"), pipes[at], repeat(""), flag, point, func_col[at],
                       site_col[at], t0_all[at], t0_all[at])
        made[abi.EV_FLAG_SET] = [ev for pair in zip(sets, xsets) for ev in pair]
        at = np.flatnonzero(etype == abi.EV_FLAG_WAIT)
        mode, point = _sync_mark(rec["mem"][at], site_col[at])
        made[abi.EV_FLAG_WAIT] = events(FlagWaitEvent, at, mode, rec["index"][at].astype(np.int64), point,
                                        func_col[at], site_col[at], t0_all[at], t1_all[at])
        at = np.flatnonzero(etype == abi.EV_GM_FLAG)
        if len(at):
            # the word's key: its place on the number line GM accesses use (its region's root + offset)
            roots = np.array([self.regions[r][2] for r in rec["index"][at].tolist()], dtype=np.int64)
            key = roots + rec["start"][at].astype(np.int64)
            made[abi.EV_GM_FLAG] = events(GmFlagEvent, at, np.where(rec["kind"][at] == ord("w"), "wait", "release"),
                                          key, rec["count"][at].astype(np.int64), site_col[at], func_col[at],
                                          site_col[at], t0_all[at], t1_all[at])
        at = np.flatnonzero(etype == abi.EV_PIPE_SYNC)
        aux, index = rec["aux"][at].astype(np.int64), rec["index"][at].astype(np.int64)
        _, point = _sync_mark(rec["mem"][at], site_col[at])
        made[abi.EV_PIPE_SYNC] = events(PipeSyncEvent, at, _SYNC_OP_NAMES[rec["kind"][at]], pipes[at],
                                        np.where(aux >= 0, _HARD_EVENT_NAMES[np.clip(aux, 0, 255)], ""),
                                        np.maximum(index, 0), point, func_col[at], site_col[at],
                                        repeat(0), repeat(0))
        at = np.flatnonzero(etype == abi.EV_DROPPED)
        made[abi.EV_DROPPED] = events(DroppedSyncEvent, at, site_col[at],
                                      _DROPPED_NAMES[np.clip(rec["index"][at], 0, 255)], func_col[at], site_col[at],
                                      t0_all[at], t1_all[at])
        # deal them out in program order: a flag set is two events (its pipe's "xset" after it), a
        # record of a type this runtime does not know is none
        src = np.repeat(np.arange(n), _EVENTS_PER_RECORD[etype])
        kind_of = etype[src]
        out = np.empty(len(src), dtype=object)
        for t, evs in made.items():
            if evs:
                out[kind_of == t] = np.fromiter(evs, dtype=object, count=len(evs))
        return out.tolist(), src, func_id[row][src]

    def _site_columns(self, rec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per record: its row in the tables of site names, the function id per row, and its site
        and function names (site ids are the launch's own)."""
        lut, func_id, site_names, func_names = self._site_tables()
        ids = rec["site"].astype(np.int64)
        # (a record's row in those tables: its id's among the known ones, else the last, "?")
        row = lut[np.where((ids >= 0) & (ids < len(lut) - 1), ids, -1)]
        return row, func_id, site_names[row], func_names[func_id[row]]

    def _site_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The row of each site id (a table past the largest known id, whose last entry is the row
        of "?"), the function id per row, and the names per row and per function id."""
        got = self._cache.get("sites")
        if got is None:
            known = np.array([i for i, _, _ in self.sites], dtype=np.int64)
            site_names = np.array([site for _, site, _ in self.sites] + ["?"], dtype=object)
            func_of_site = [func for _, _, func in self.sites] + ["?"]
            funcs = {f: None for f in func_of_site}
            number = {f: k for k, f in enumerate(funcs)}
            func_id = np.array([number[f] for f in func_of_site], dtype=np.int64)
            top = int(known.max()) if len(known) else 0
            lut = np.full(max(top, 0) + 2, len(self.sites), dtype=np.int64)
            ok = known >= 0
            lut[known[ok]] = np.flatnonzero(ok)
            got = self._cache["sites"] = (lut, func_id, site_names, np.array(list(funcs), dtype=object))
        return got


def _events(cls: type, at: np.ndarray, *cols: Any) -> list[TraceEvent]:
    """Events of type ``cls``, one per entry of the columns (numpy arrays or sequences)."""
    lists = [c.tolist() if isinstance(c, np.ndarray) else c for c in cols]
    return list(map(_new, repeat(cls), zip(*lists)))


def _names(names: tuple[str, ...], fill: str) -> np.ndarray:
    """A table of 256 names, by the byte the library writes (``fill`` past the known ones)."""
    return np.array(names + (fill,) * (256 - len(names)), dtype=object)


_KIND_NAMES = np.array([chr(i) for i in range(256)], dtype=object)
_PIPE_NAMES = _names(abi.PIPE_NAMES, "?")
_MEMORY_NAMES = _names(abi.MEMORY_NAMES, "?")
_HARD_EVENT_NAMES = _names(abi.HARD_EVENTS, "?")
_DROPPED_NAMES = _names(abi.DROPPED_CALLS, "?")
_SYNC_OP_NAMES = np.array([_SYNC_OPS.get(i, "?") for i in range(256)], dtype=object)


def _sync_mark(mem: np.ndarray, sites: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A sync record's ``mem`` column -> (its flag mode, the sync point's name): a sync a high-level
    API issued inside itself (abi.SYNC_BY_LIBRARY) names no sync point (""), as an unnamed sync of a
    Python kernel: no launch drops it and mutation testing makes no mutant of it."""
    by_library = (mem & abi.SYNC_BY_LIBRARY) != 0
    return (mem & (0xFF ^ abi.SYNC_BY_LIBRARY)).astype(np.int64), np.where(by_library, "", sites)


#: per record type, how many events decoding makes of it (a flag set: the set and its pipe's "xset";
#: a type this runtime does not know: none)
_EVENTS_PER_RECORD = np.zeros(256, dtype=np.int64)
_EVENTS_PER_RECORD[[abi.EV_GM, abi.EV_LOCAL, abi.EV_SYNC_ALL, abi.EV_FLAG_WAIT, abi.EV_PIPE_SYNC, abi.EV_DROPPED,
                    abi.EV_GM_FLAG]] = 1
_EVENTS_PER_RECORD[abi.EV_FLAG_SET] = 2
_new = tuple.__new__  # a NamedTuple from its fields, without the class's Python __new__


def _stage_runs(t0: np.ndarray, t1: np.ndarray, stage: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The runs of events made in one kernel function: where each starts, and whether anything in
    it was timed (only those get a StageEvent)."""
    starts = np.flatnonzero(np.concatenate(([True], stage[1:] != stage[:-1])))
    timed = np.logical_or.reduceat((t0 != 0) | (t1 != 0), starts)
    return starts, timed


def _with_stages(events: list[Any], index: np.ndarray, t0: np.ndarray, t1: np.ndarray, stage: np.ndarray
                 ) -> tuple[list[TraceEvent], np.ndarray]:
    """The events with a StageEvent before each run of events made in one kernel function: a C++
    kernel's stages are its functions (TargetProcess, CVProcess, ...), and timelines draw them as
    spans from the run's first to its last timestamp (no stage where nothing in the run was timed).
    ``t0``/``t1``: the events' times; ``stage``: an id per event of its function."""
    n = len(events)
    if not n:
        return [], np.zeros(0, dtype=np.int64)
    starts, timed = _stage_runs(t0, t1, stage)
    never = np.iinfo(np.int64).max
    first = np.minimum.reduceat(np.minimum(np.where(t0 != 0, t0, never), np.where(t1 != 0, t1, never)), starts)
    last = np.maximum.reduceat(np.maximum(t0, t1), starts)
    out: list[TraceEvent] = []
    out_index: list[np.ndarray] = []
    stage_index = np.full(1, -1, dtype=np.int64)
    bounds = starts.tolist() + [n]
    for k, a in enumerate(bounds[:-1]):
        b = bounds[k + 1]
        if timed[k]:
            ev = events[a]
            out.append(StageEvent(ev.stage, ev.site, int(first[k]), int(last[k])))
            out_index.append(stage_index)
        out += events[a:b]
        out_index.append(index[a:b])
    return out, np.concatenate(out_index)
