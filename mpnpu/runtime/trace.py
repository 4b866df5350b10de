"""Events a core records when a launch is traced (``Device.launch(..., trace=True)``).

Each core keeps its events in program order. The race detector (:mod:`mpnpu.racecheck`) rebuilds
happens-before from them: program order within a core, SyncAll rounds (the k-th SyncAll of every
party is one barrier), and cross-core flags (the j-th set from sender s to receiver r on
(mode, id) happens before r's j-th wait on (mode, id); routing in :mod:`mpnpu.runtime.topology`).

Events are NamedTuples so that a whole trace pickles fast across the result pipe.

Timing. Every event carries ``t0``/``t1``: nanoseconds of :func:`clock_ns`, which reads
CLOCK_MONOTONIC. On Linux that clock is one system-wide clock, the same in every process, so the
times of different cores of a launch compare directly (a flag's set is never later than the wait
it released). An access spans the copy (``t0`` before, ``t1`` after; an atomic's wait for the
atomic lock included), a SyncAll spans arrival to release, a flag wait the wait, a stage its
``with`` block. Instant events (a dropped sync) have ``t1 == t0``. 0 means "not recorded" (traces
built by hand, or a stage still open when its core failed).
"""

from __future__ import annotations

import time
from typing import NamedTuple, Union

#: The clock of every trace timestamp (ns). CLOCK_MONOTONIC: shared by all processes on Linux.
clock_ns = time.monotonic_ns

READ = "R"
WRITE = "W"
ATOMIC = "A"  # SetAtomicAdd + DataCopy to GM: two atomic writes never race


class Access(NamedTuple):
    """One GM access made through ``data_copy``."""

    kind: str  # READ, WRITE or ATOMIC
    tensor: str  # root tensor name, e.g. "masked_target" or "workspace.tile_buf"
    segment: str  # GM segment the bytes live in
    ranges: tuple[tuple[int, int], ...]  # byte intervals [start, stop) in the segment, sorted, disjoint
    tensor_offset: int  # byte offset of the root tensor in the segment (for element ranges)
    itemsize: int  # bytes per element of the accessed view
    stage: str  # kernel stage current at the access (``api.stage``)
    site: str  # kernel source line, "file.py:123"
    t0: int = 0  # clock_ns before the copy
    t1: int = 0  # clock_ns after it


class SyncAllEvent(NamedTuple):
    """A completed SyncAll (``aiv_only`` False: all cores; True: vector cores only)."""

    aiv_only: bool
    name: str  # sync point name given by the kernel, or "" if unnamed
    stage: str
    site: str
    t0: int = 0  # arrival at the barrier
    t1: int = 0  # release


class FlagSetEvent(NamedTuple):
    """A cross_core_set_flag."""

    mode: int
    flag_id: int
    name: str
    stage: str
    site: str
    t0: int = 0
    t1: int = 0


class FlagWaitEvent(NamedTuple):
    """A completed cross_core_wait_flag."""

    mode: int
    flag_id: int
    name: str
    stage: str
    site: str
    t0: int = 0  # started waiting
    t1: int = 0  # released


class DroppedSyncEvent(NamedTuple):
    """A named sync call skipped because the launch dropped that sync point."""

    name: str
    call: str  # "sync_all", "cross_core_wait_flag" or "cross_core_set_flag"
    stage: str
    site: str
    t0: int = 0  # when the call was skipped
    t1: int = 0


class StageEvent(NamedTuple):
    """The kernel entered a stage (``api.stage``); ``t1`` is filled in when it leaves it."""

    name: str
    site: str
    t0: int = 0
    t1: int = 0


TraceEvent = Union[Access, SyncAllEvent, FlagSetEvent, FlagWaitEvent, DroppedSyncEvent, StageEvent]


class LaunchTrace(NamedTuple):
    """Everything the cores of one launch recorded, indexed by core id."""

    block_dim: int
    kernel: str
    events: tuple[tuple[TraceEvent, ...], ...]  # events[core_id] in program order
    dropped_syncs: frozenset[str]
