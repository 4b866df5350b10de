"""initcheck's and synccheck's walk of one core's trace, straight from a compiled kernel's records.

A compiled kernel's core ships its trace as the library wrote it (:class:`RecordChunk`). Decoding
a thousand records into Python events costs about a millisecond per core and launch, and walking
them event by event in Python costs more: for FLOMS in C++ the two checks spent most of their time
there, and the batch waited for them. This module reads the record columns with numpy instead:

- initcheck's local rule (:func:`unwritten_local_reads`): per core and local memory, a read is
  reported when no earlier write of that core shares a byte with its hull. Done for all reads at
  once: the written hulls are painted, newest last, onto the elementary segments between the
  accesses' end points, each segment keeping the earliest write that covers it, and a read is
  unwritten when the earliest write over its segments comes after it.
- synccheck's per-core walk (:func:`sync_steps`): only the sync records become events; the
  accesses between two of them are summed per pipe (:class:`Issued`), which gives the pipes'
  vector clocks exactly what issuing them one by one gives (see :meth:`Issued.apply`).

Both give exactly what the event-by-event walk of the decoded events gives
(``tests/test_records_scan.py`` compares them on every kernel it launches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from mpnpu.ascendc.native import abi
from mpnpu.ascendc.native.records import RecordChunk
from mpnpu.racecheck.pipe_clocks import PIPE_INDEX, N, S
from mpnpu.runtime.distinct import distinct
from mpnpu.runtime.trace import PackedEvents, TraceEvent

#: a position after every record (no write there)
_NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Records:
    """One core's records of one launch, all chunks in program order."""

    rec: np.ndarray  # abi.EVENT_DTYPE
    chunks: tuple[RecordChunk, ...]
    chunk_of: np.ndarray  # per record, the index of its chunk

    def events_at(self, positions: np.ndarray) -> tuple[list[TraceEvent], np.ndarray]:
        """The decoded events of the records at ``positions`` (ascending; a flag set's pipe "xset"
        after it, as decoding gives them), and the position of each event's record."""
        events: list[TraceEvent] = []
        at: list[np.ndarray] = []
        offset = 0
        for k, chunk in enumerate(self.chunks):
            mine = positions[self.chunk_of[positions] == k]
            evs, pos = chunk.events_at(mine - offset)
            events += evs
            at.append(pos + offset)
            offset += len(chunk.records())
        return events, np.concatenate(at) if at else positions[:0]

    def outside_locals(self) -> tuple[list[TraceEvent], list[int]]:
        """The decoded events of every record but the local accesses, and each one's position among
        the core's decoded events (:meth:`RecordChunk.outside_locals`, all chunks)."""
        if len(self.chunks) == 1:
            return self.chunks[0].outside_locals()
        events: list[TraceEvent] = []
        positions: list[int] = []
        base = 0
        for chunk in self.chunks:
            evs, pos = chunk.outside_locals()
            events += evs
            positions += [p + base for p in pos]
            base += len(chunk.layout()[0])
        return events, positions

    def functions(self) -> list[str]:
        """The kernel functions the records were made in, in order of first appearance (those of
        records that make an event): the stages the decoded events name, in their order."""
        names: dict[str, None] = {}
        for chunk in self.chunks:
            names.update(dict.fromkeys(chunk.functions()))
        return list(names)

    def positions(self) -> np.ndarray:
        """Per record, the position of its (first) event among the decoded events of the core
        (-1: a record that makes none), without decoding any."""
        out: list[np.ndarray] = []
        base = 0
        for chunk in self.chunks:
            index, position = chunk.layout()
            out.append(np.where(position >= 0, position + base, -1))
            base += len(index)
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def records_of(events: Sequence[TraceEvent]) -> Records | None:
    """The records of one core's events when they are a compiled kernel's records and nothing else
    (None otherwise: Python events, or events already given as a tuple)."""
    if not isinstance(events, PackedEvents) or not events.parts:
        return None
    chunks = events.parts
    if not all(isinstance(p, RecordChunk) for p in chunks):
        return None
    arrays = [p.records() for p in chunks if isinstance(p, RecordChunk)]
    rec = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
    chunk_of = np.repeat(np.arange(len(arrays)), [len(a) for a in arrays])
    return Records(rec, tuple(chunks), chunk_of)  # type: ignore[arg-type]


# -- initcheck ---------------------------------------------------------------------------------------


def unwritten_local_reads(records: Records) -> np.ndarray:
    """Positions of the local-memory reads none of whose bytes an earlier record of the core wrote
    (in the memory the read is in), in program order."""
    rec = records.rec
    local = np.flatnonzero((rec["type"] == abi.EV_LOCAL) & (rec["run"] > 0))
    if not len(local):
        return local
    found: list[np.ndarray] = []
    mem = rec["mem"][local]
    for m in distinct(mem).tolist():
        at = local[mem == m]
        start = rec["start"][at].astype(np.int64)
        stop = start + rec["run"][at].astype(np.int64)
        is_read = rec["kind"][at] == ord("R")
        if not is_read.any():
            continue
        coords = distinct(np.concatenate((start, stop)))
        lo = np.searchsorted(coords, start)
        hi = np.searchsorted(coords, stop)
        # per elementary segment [coords[k], coords[k+1]): the earliest write covering it (painted
        # from the newest write to the oldest, so the oldest stays)
        first = np.full(len(coords), _NEVER, dtype=np.int64)
        writes = np.flatnonzero(~is_read)
        for w in writes[::-1].tolist():
            first[lo[w]:hi[w]] = at[w]
        reads = np.flatnonzero(is_read)
        bounds = np.empty(2 * len(reads), dtype=np.int64)
        bounds[0::2] = lo[reads]
        bounds[1::2] = hi[reads]
        earliest = np.minimum.reduceat(first, bounds)[0::2]
        found.append(at[reads][earliest > at[reads]])
    return np.sort(np.concatenate(found)) if found else local[:0]


# -- synccheck ---------------------------------------------------------------------------------------

#: per pipe byte of a record, its index among the analysed pipes (an unknown pipe: the scalar unit's)
_PIPE_OF_BYTE = np.array([PIPE_INDEX.get(abi.PIPE_NAMES[b], S) if b < len(abi.PIPE_NAMES) else S
                          for b in range(256)], dtype=np.int64)
_SYNC_TYPES = (abi.EV_SYNC_ALL, abi.EV_FLAG_SET, abi.EV_FLAG_WAIT, abi.EV_PIPE_SYNC)


@dataclass(frozen=True)
class Issued:
    """The accesses a core issued between two of its sync records: per pipe (index among the
    analysed pipes), how many, and how many scalar-unit accesses came before its last one."""

    pipes: tuple[tuple[int, int, int], ...]  # (pipe, count, scalar accesses before its last)

    def apply(self, vc: list[list[int]]) -> None:
        """Issue them on the per-pipe vector clocks ``vc`` (synccheck's ``_Clocks.vc``).

        Issuing an access on pipe p sets p's clock to its maximum with the scalar unit's, then
        counts one on p. Between two syncs the scalar unit's clock changes only in its own entry
        (its accesses), so p's final clock is its maximum with the scalar unit's clock as it was at
        p's last access, plus p's count: the order of the pipes' accesses among each other does not
        matter."""
        s0 = vc[S]
        for p, count, scalar_before in self.pipes:
            if p == S:
                continue
            seen = list(s0)
            seen[S] += scalar_before
            row = list(map(max, vc[p], seen))
            row[p] += count
            vc[p] = row
        for p, count, _ in self.pipes:
            if p == S:
                row = list(s0)
                row[S] += count
                vc[S] = row


def _issued(rec: np.ndarray, access: np.ndarray, segment: np.ndarray, pipe: np.ndarray
            ) -> dict[int, Issued]:
    """Per segment (the sync records before it), the accesses it issued."""
    at = np.flatnonzero(access)
    if not len(at):
        return {}
    seg, p = segment[at], pipe[at]
    # scalar accesses before each access, counted from its segment's start
    scalar = np.cumsum(p == S)
    seg_first = np.searchsorted(seg, seg)  # index in ``at`` of the segment's first access
    scalar_before = scalar - (p == S) - np.where(seg_first > 0, scalar[seg_first - 1], 0)
    group = seg * N + p
    keys, counts = np.unique(group, return_counts=True)
    last_idx = len(group) - 1 - np.unique(group[::-1], return_index=True)[1]
    out: dict[int, list[tuple[int, int, int]]] = {}
    for k, n, last in zip(keys.tolist(), counts.tolist(), last_idx.tolist()):
        out.setdefault(k // N, []).append((k % N, n, int(scalar_before[last])))
    return {s: Issued(tuple(v)) for s, v in out.items()}


def sync_steps(records: Records) -> Iterator[Any]:
    """One core's walk for synccheck: its sync records as decoding gives them (SyncAllEvent,
    FlagSetEvent and its pipe's "xset", FlagWaitEvent, PipeSyncEvent), each sync record's events
    preceded by an :class:`Issued` of the accesses since the sync before it (and one after the last)."""
    rec = records.rec
    etype = rec["type"]
    sync = np.isin(etype, _SYNC_TYPES)
    access = (etype == abi.EV_GM) | (etype == abi.EV_LOCAL)
    segment: np.ndarray = np.cumsum(sync) - sync  # the sync records before each record
    issued = _issued(rec, access, segment, _PIPE_OF_BYTE[rec["pipe"]])
    events, at = records.events_at(np.flatnonzero(sync))
    last = -1
    for ev, k in zip(events, segment[at].tolist()):
        if k != last:
            if k in issued:
                yield issued[k]
            last = k
        yield ev
    end = int(sync.sum())
    if end in issued:
        yield issued[end]


__all__ = ["Issued", "Records", "records_of", "sync_steps", "unwritten_local_reads"]
