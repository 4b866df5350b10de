"""Reuse the analysis of identical launches: racecheck at the kernel's own speed.

A batch launches the same case again and again: the same accesses in the same order on every core,
the same syncs, only the times differ. Racecheck's analysis (:func:`mpnpu.racecheck.analyze`) is a
function of the trace, and almost all of it reads no time at all — happens-before, the conflicting
pairs, their hazards, the races inside a core. :class:`AnalysisCache` keeps that part per distinct
trace and, for a launch whose trace equals one analysed before in everything but its times,
recomputes only what does read times: which reads saw stale data, hence which hazards are
consequences of others (:func:`mpnpu.racecheck.detect.finish_hazards`). The result is the hazard
list :func:`~mpnpu.racecheck.analyze` returns for that launch, exactly::

    trace ──key (the trace less its times)──► cache hit?  ── no ──► find_conflicts, group_conflicts,
      │                                          │                  analyze_local  ──► stored
      │                                         yes
      └──── this launch's own times of the conflicting pairs ──► finish_hazards + the local hazards

The key is everything the analysis reads: block_dim, kernel type, the dropped sync points, the
auto-sync setting, the kernel's name and every event of every core with all its fields but ``t0``
and ``t1`` (:func:`mpnpu.runtime.trace.timing_free_key`). A hit is a dict lookup on that key, which
compares the whole key, never a hash alone: a launch reuses an analysis only when its trace is the
same but for its times. (``ran_on``, which the analysis does not read either, stays in the key: it
costs nothing, and a launch whose copies ran elsewhere is simply analysed again.)

The cache holds at most ``max_entries`` distinct traces (least recently used dropped first), so a
soak of ever-new traces costs what it cost before, plus a dict lookup per launch.
"""

from __future__ import annotations

import gc
from collections import OrderedDict
from dataclasses import dataclass
from typing import Hashable

import numpy as np

from mpnpu.racecheck.detect import Grouped, find_conflicts, finish_hazards, group_conflicts
from mpnpu.racecheck.hazards import Hazard
from mpnpu.racecheck.intracore import analyze_local
from mpnpu.racecheck.polls import with_polls
from mpnpu.runtime.distinct import distinct
from mpnpu.runtime.trace import LaunchTrace, event_times, time_index, timing_free_key

#: distinct traces kept by default: a batch has one per case and variant (a few more where a race
#: changes the kernel's path), and an entry holds its key (about the size of the shipped trace)
DEFAULT_MAX_ENTRIES = 512


@dataclass(frozen=True)
class _Entry:
    """The timing-free analysis of one distinct trace."""

    grouped: Grouped | None  # the GM hazards before the consequence rule (None: no conflicting pair)
    local: list[Hazard]  # the hazards inside cores (they read no time)
    #: per conflicting pair, where its first and second access are in their core's time columns
    #: (:func:`mpnpu.runtime.trace.event_times`)
    first_at: np.ndarray
    second_at: np.ndarray


class _Key:
    """A key with its hash computed once: the cache hashes it for the lookup and again to mark the
    entry recently used, and a trace's key is large (the whole trace but its times)."""

    __slots__ = ("value", "hash")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self.hash = hash(value)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        # (the whole key, never the hash alone: a hit is a launch equal but for its times)
        return isinstance(other, _Key) and self.hash == other.hash and self.value == other.value


def launch_key(trace: LaunchTrace) -> Hashable:
    """Everything racecheck's analysis reads of ``trace``: all of it but its events' times."""
    return _Key((trace.kernel, trace.block_dim, trace.kernel_type, trace.dropped_syncs, trace.auto_sync,
                 tuple(timing_free_key(evs) for evs in trace.events)))


class AnalysisCache:
    """:func:`mpnpu.racecheck.analyze` with the analysis of identical launches reused (module
    docstring). ``analysed`` counts the launches analysed in full, ``reused`` those that took the
    analysis of an identical one; :attr:`last_reused` says which the last :meth:`analyze` was."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self.analysed = 0
        self.reused = 0
        self.last_reused = False

    def __len__(self) -> int:
        return len(self._entries)

    def analyze(self, trace: LaunchTrace) -> list[Hazard]:
        """The hazards of ``trace``, equal to ``mpnpu.racecheck.analyze(trace)``. Raises as it does
        for an inconsistent trace (nothing is kept of such a trace)."""
        # Decoding and analysing a trace makes tens of thousands of short-lived tuples and lists,
        # none in a reference cycle: the cyclic collector's passes over the whole process meanwhile
        # (a batch's parent holds many objects) cost a fifth of the analysis and free nothing.
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._hazards(trace)
        finally:
            if enabled:
                gc.enable()

    def _hazards(self, trace: LaunchTrace) -> list[Hazard]:
        # The edges of polled GM read times: they are part of the trace the key is taken of.
        view = with_polls(trace)
        key = launch_key(view)
        entry = self._entries.get(key)
        self.last_reused = entry is not None
        if entry is None:
            entry = self._analyse(view, trace)
            self._entries[key] = entry
            if len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
            self.analysed += 1
        else:
            self._entries.move_to_end(key)
            self.reused += 1
        if entry.grouped is None:
            return list(entry.local)
        first_t1, second_t0 = _pair_times(view, entry)
        return finish_hazards(entry.grouped, first_t1, second_t0) + entry.local

    @staticmethod
    def _analyse(trace: LaunchTrace, recorded: LaunchTrace) -> _Entry:
        """``trace``: the launch with its polls' edges (:mod:`.polls`); ``recorded``: as recorded
        (the races inside a core are found on it)."""
        conf = find_conflicts(trace, polls=False)
        grouped = group_conflicts(conf)
        local = analyze_local(recorded)
        empty = np.zeros(0, dtype=np.int64)
        if grouped is None:
            return _Entry(None, local, empty, empty)
        pairs = grouped.pairs
        index = [time_index(evs) for evs in trace.events]
        first_at = np.array([index[c][p] for c, p in zip(pairs.first_core.tolist(), pairs.first_pos.tolist())],
                            dtype=np.int64)
        second_at = np.array([index[c][p] for c, p in zip(pairs.second_core.tolist(), pairs.second_pos.tolist())],
                             dtype=np.int64)
        return _Entry(grouped, local, first_at, second_at)


def _pair_times(trace: LaunchTrace, entry: _Entry) -> tuple[np.ndarray, np.ndarray]:
    """This launch's own times of the entry's pairs: when each first access ended, when each second
    began."""
    pairs = entry.grouped.pairs if entry.grouped is not None else None
    assert pairs is not None
    shipped = trace.events
    columns: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def times(core: int) -> tuple[np.ndarray, np.ndarray]:
        got = columns.get(core)
        if got is None:
            got = columns[core] = event_times(shipped[core])
        return got

    first_t1 = np.empty(len(entry.first_at), dtype=np.int64)
    second_t0 = np.empty(len(entry.second_at), dtype=np.int64)
    for c in distinct(pairs.first_core).tolist():
        mine = pairs.first_core == c
        first_t1[mine] = times(c)[1][entry.first_at[mine]]
    for c in distinct(pairs.second_core).tolist():
        mine = pairs.second_core == c
        second_t0[mine] = times(c)[0][entry.second_at[mine]]
    return first_t1, second_t0
