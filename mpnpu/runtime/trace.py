"""Events a core records when a launch is traced (``Device.launch(..., trace=True)``).

Each core keeps its events in program order. The race detector (:mod:`mpnpu.racecheck`) rebuilds
happens-before from them: program order within a core, SyncAll rounds (the k-th SyncAll of every
party is one barrier), and cross-core flags (the j-th set from sender s to receiver r on
(mode, id) happens before r's j-th wait on (mode, id); routing in :mod:`mpnpu.runtime.topology`).

Events are NamedTuples so that a whole trace pickles fast across the result pipe.
"""

from __future__ import annotations

from typing import NamedTuple, Union

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


class SyncAllEvent(NamedTuple):
    """A completed SyncAll (``aiv_only`` False: all cores; True: vector cores only)."""

    aiv_only: bool
    name: str  # sync point name given by the kernel, or "" if unnamed
    stage: str
    site: str


class FlagSetEvent(NamedTuple):
    mode: int
    flag_id: int
    name: str
    stage: str
    site: str


class FlagWaitEvent(NamedTuple):
    """A completed cross_core_wait_flag."""

    mode: int
    flag_id: int
    name: str
    stage: str
    site: str


class DroppedSyncEvent(NamedTuple):
    """A named sync call skipped because the launch dropped that sync point."""

    name: str
    call: str  # "sync_all", "cross_core_wait_flag" or "cross_core_set_flag"
    stage: str
    site: str


class StageEvent(NamedTuple):
    """The kernel entered a stage (``api.stage``)."""

    name: str
    site: str


TraceEvent = Union[Access, SyncAllEvent, FlagSetEvent, FlagWaitEvent, DroppedSyncEvent, StageEvent]


class LaunchTrace(NamedTuple):
    """Everything the cores of one launch recorded, indexed by core id."""

    block_dim: int
    kernel: str
    events: tuple[tuple[TraceEvent, ...], ...]  # events[core_id] in program order
    dropped_syncs: frozenset[str]
