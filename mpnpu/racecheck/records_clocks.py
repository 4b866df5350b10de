"""One core's pipe clocks (:func:`mpnpu.racecheck.intracore.core_clocks`) from a compiled kernel's
record columns, without a Python step per access.

The walk over decoded events spends most of its time on the accesses, one Python step each (a
thousand per vector core of FLOMS). Here only the sync events are stepped through in Python
(:class:`~mpnpu.racecheck.pipe_clocks.CoreSyncs`, the same rules); the accesses between two of them
(a *segment*) get their clocks in bulk:

- issuing an access on pipe p sets p's clock to its maximum with the scalar unit's (PIPE_S) and then
  counts one on p. Inside a segment the scalar unit's clock changes only in its own entry (its own
  accesses), so the k-th access of p in a segment has the clock
  ``max(vc[p], vc[S] + (scalar accesses before it) on S)`` with ``k`` added on p, where ``vc`` is the
  pipes' clocks at the segment's start;
- the pipes' clocks at the end of a segment follow from its accesses' counts per pipe
  (:class:`~mpnpu.racecheck.records_scan.Issued`), which is what the sync walk needs next.

Where the compiler's automatic synchronisation is modelled, a scalar access to local memory first
waits for earlier accesses of other pipes, found by looking back through the history: such traces
(and anything but a compiled kernel's records, or a pipe the model does not know) go the event by
event way (None here). ``tests/test_records_clocks.py`` checks the two give the same columns.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from mpnpu.ascendc.native import abi
from mpnpu.racecheck.pipe_clocks import AUTO_SYNCED, PIPE_INDEX, SYNC_TYPES, CoreAccesses, CoreSyncs, N, PipeClocks, S
from mpnpu.racecheck.records_scan import Issued, Records, records_of
from mpnpu.runtime.trace import TraceEvent

#: per pipe byte of a record, its index among the analysed pipes (-1: a pipe the model does not know)
_PIPE_OF_BYTE = np.array([PIPE_INDEX.get(abi.PIPE_NAMES[b], -1) if b < len(abi.PIPE_NAMES) else -1
                          for b in range(256)], dtype=np.int64)
#: per memory byte of a local access, the memory's key (bytes past the known memories decode to one name, "?")
_MEMORY_KEY = np.minimum(np.arange(256), len(abi.MEMORY_NAMES))
#: scalar accesses to local memory a trace may have for the columns to be taken: each looks back
#: through the memory's history with a numpy pass (the event walk keeps a byte index instead)
_MAX_LOOKED_BACK = 256


def core_clocks(events: Sequence[TraceEvent], auto_sync: bool) -> CoreAccesses | None:
    """:func:`mpnpu.racecheck.intracore.core_clocks` of ``events`` from their records, or None when
    they are not a compiled kernel's records only, when an access names a pipe the model does not
    know, or (automatic synchronisation modelled) when its scalar accesses to local memory are too
    many to look back from one by one, or an access of MTE2, MTE3 or V to local memory is empty."""
    records = records_of(events)
    if records is None:
        return None
    rec = records.rec
    etype = rec["type"]
    at = np.flatnonzero((etype == abi.EV_GM) | (etype == abi.EV_LOCAL))
    n = len(at)
    pipe = _PIPE_OF_BYTE[rec["pipe"][at]]
    if n and pipe.min() < 0:
        return None
    local = etype[at] == abi.EV_LOCAL
    start, stop, memory_key = _hulls(records, at, local)
    # scalar accesses to local memory first wait for what the automatic synchronisation orders
    # before them: each is a step of the walk of its own
    looked_back = np.flatnonzero(local & (pipe == S)) if auto_sync else np.zeros(0, dtype=np.int64)
    synced = np.flatnonzero(local & np.isin(pipe, AUTO_SYNCED))
    if len(looked_back) and (len(looked_back) > _MAX_LOOKED_BACK or (start[synced] >= stop[synced]).any()):
        return None
    positions = records.positions()
    pos = positions[at]
    outside, outside_pos = records.outside_locals()
    steps: list[tuple[int, Any]] = [(i, ev) for i, ev in zip(outside_pos, outside) if type(ev) in SYNC_TYPES]
    if len(looked_back):
        steps += [(int(pos[k]), int(k)) for k in looked_back]  # (an int: the access's index)
        steps.sort(key=lambda item: item[0])
    step_pos = np.fromiter((i for i, _ in steps), dtype=np.int64, count=len(steps))
    segment = np.searchsorted(step_pos, pos)  # the steps before each access
    bulk = np.ones(n, dtype=bool)
    bulk[looked_back] = False

    # per access in bulk: how many of its pipe's accesses in its segment up to it (1, 2, ...), and
    # how many scalar-unit accesses of its segment before it
    group = np.where(bulk, segment * N + pipe, -1)
    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    first = np.concatenate(([True], sorted_group[1:] != sorted_group[:-1])) if n else np.zeros(0, dtype=bool)
    runs = np.arange(n)
    ordinal = np.empty(n, dtype=np.int64)
    ordinal[order] = runs - np.maximum.accumulate(np.where(first, runs, 0)) + 1
    on_s = (bulk & (pipe == S)).astype(np.int64)
    scalar_so_far = np.cumsum(on_s) - on_s
    seg_first = np.searchsorted(segment, segment)  # (segments ascend in issue order)
    scalar_before = scalar_so_far - scalar_so_far[seg_first] if n else scalar_so_far

    # what each segment issued, per pipe: count, and scalar accesses before its last access
    issued: dict[int, list[tuple[int, int, int]]] = {}
    last = np.concatenate((sorted_group[1:] != sorted_group[:-1], [True])) if n else np.zeros(0, dtype=bool)
    for k in order[last & (sorted_group >= 0)].tolist():
        issued.setdefault(int(segment[k]), []).append((int(pipe[k]), int(ordinal[k]), int(scalar_before[k])))

    # the walk, keeping the pipes' clocks at the start of every segment that has accesses
    pc = PipeClocks()
    syncs = CoreSyncs(pc)
    starts: dict[int, list[list[int]]] = {}
    own_clock: dict[int, tuple[int, ...]] = {}  # the clocks of the scalar accesses stepped through

    def run_segment(s: int) -> None:
        got = issued.get(s)
        if got is None:
            return
        starts[s] = [list(row) for row in pc.vc]
        Issued(tuple(got)).apply(pc.vc)
        pc.rejoin()

    def clock_of(j: int) -> tuple[int, ...]:
        """An access in bulk's clock, from its segment's start (as the columns below compute it)."""
        table = starts[int(segment[j])]
        p = int(pipe[j])
        seen = list(table[S])
        if p != S:
            seen[S] += int(scalar_before[j])
        row = list(map(max, table[p], seen))
        row[p] += int(ordinal[j])
        return tuple(row)

    for s, (i, item) in enumerate(steps):
        run_segment(s)
        if type(item) is int:
            waits = _newest_overlapping(item, synced, memory_key, start, stop, pipe)
            if waits:
                pc.join_scalar([clock_of(j) for j in waits])
            own_clock[item] = tuple(pc.issue(S))
        else:
            syncs.step(i, item)
    run_segment(len(steps))

    clock = np.zeros((n, N), dtype=np.int64)
    b = np.flatnonzero(bulk)
    if len(b):
        used = np.array(sorted(starts), dtype=np.int64)
        table = np.array([starts[s] for s in used.tolist()], dtype=np.int64)  # (segments, N, N)
        row = np.searchsorted(used, segment[b])
        own = table[row, pipe[b]]  # the pipe's clock at its segment's start
        scalar = table[row, S].copy()  # the scalar unit's, as this access saw it
        scalar[:, S] += np.where(pipe[b] == S, 0, scalar_before[b])
        clock[b] = np.maximum(own, scalar)
        clock[b, pipe[b]] += ordinal[b]
    for k, c in own_clock.items():
        clock[k] = c
    stamp = clock[runs, pipe]
    _, memory = np.unique(memory_key, return_inverse=True)
    kind = rec["kind"][at]
    return CoreAccesses(
        events=_Decoded(records, at),
        pos=pos,
        pipe=pipe,
        stamp=stamp,
        clock=clock,
        write=kind != ord("R"),
        memory=memory.astype(np.int64).reshape(n),
        start=start,
        stop=stop,
        atomic=kind == ord("A"),
        dropped=syncs.dropped,
    )


class _Decoded(Sequence[Any]):
    """The decoded events of some records, each decoded when first asked for (the analysis reads
    only the accesses of the pairs it reports)."""

    def __init__(self, records: Records, at: np.ndarray) -> None:
        self._records = records
        self._at = at
        self._got: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._at)

    def prefetch(self, indices: Sequence[int]) -> None:
        """Decode these in one go (they will be asked for)."""
        wanted = sorted({i for i in indices if i not in self._got})
        if wanted:
            events, _ = self._records.events_at(self._at[wanted])
            self._got.update(zip(wanted, events))

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        ev = self._got.get(i)
        if ev is None:
            ev = self._got[i] = self._records.events_at(self._at[i:i + 1] if i >= 0 else self._at[[i]])[0][0]
        return ev


def _newest_overlapping(k: int, synced: np.ndarray, memory_key: np.ndarray, start: np.ndarray, stop: np.ndarray,
                        pipe: np.ndarray) -> list[int]:
    """Per pipe of MTE2, MTE3 and V, the newest access to local memory before access ``k`` sharing a
    byte with it (``synced``: those pipes' local accesses, in issue order)."""
    before = synced[:np.searchsorted(synced, k)]
    hit = before[(memory_key[before] == memory_key[k]) & (start[before] < stop[k]) & (start[k] < stop[before])]
    out = []
    for p in AUTO_SYNCED:
        mine = hit[pipe[hit] == p]
        if len(mine):
            out.append(int(mine[-1]))
    return out


def _hulls(records: Records, at: np.ndarray, local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per access: the byte hull [start, stop) in its memory, and a key of the memory (a local memory
    by its byte, a GM segment past 256)."""
    rec = records.rec
    start = rec["start"][at].astype(np.int64)
    run_len = rec["run"][at].astype(np.int64)
    stop = start + run_len
    memory_key = _MEMORY_KEY[rec["mem"][at]]
    gm = np.flatnonzero(~local)
    if len(gm):
        regions = records_of_regions(records, at[gm])
        root = np.array([r[2] for r in regions], dtype=np.int64)
        count = rec["count"][at[gm]].astype(np.int64)
        stride = rec["stride"][at[gm]].astype(np.int64)
        start[gm] += root
        stop[gm] = start[gm] + (count - 1) * stride + run_len[gm]
        seg_id = {name: k for k, name in enumerate(dict.fromkeys(r[1] for r in regions))}
        memory_key[gm] = 256 + np.fromiter((seg_id[r[1]] for r in regions), dtype=np.int64, count=len(gm))
    return start, stop, memory_key


def records_of_regions(records: Records, at: np.ndarray) -> list[tuple[str, str, int]]:
    """The GM region (tensor name, segment, root offset) of each GM record at positions ``at``."""
    out: list[tuple[str, str, int]] = []
    index = records.rec["index"][at].tolist()
    chunk = records.chunk_of[at].tolist()
    for r, c in zip(index, chunk):
        out.append(records.chunks[c].regions[r])
    return out


__all__ = ["core_clocks"]
