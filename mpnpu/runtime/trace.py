"""Events a core records when a launch is traced (``Device.launch_with(LaunchOptions(trace=True), ...)``).

Each core keeps its events in program order. The race detector (:mod:`mpnpu.racecheck`) rebuilds
happens-before from them: program order within a core, SyncAll rounds (the k-th SyncAll of every
party is one barrier), and cross-core flags (the j-th set from sender s to receiver r on
(mode, id) happens before r's j-th wait on (mode, id); routing in :mod:`mpnpu.runtime.topology`).

Events are NamedTuples so that a whole trace pickles fast across the result pipe. An access's bytes
are encoded compactly (:func:`byte_ranges`): a 2D tile ships from a core as four numbers, not one
pair per row.

Timing. Every event carries ``t0``/``t1``: nanoseconds of :func:`clock_ns`, which reads
CLOCK_MONOTONIC. On Linux that clock is one system-wide clock, the same in every process, so the
times of different cores of a launch compare directly (a flag's set is never later than the wait
it released). An access spans the copy (``t0`` before, ``t1`` after; an atomic's wait for the
atomic lock included; on an asynchronous pipe, when the pipe executed it, which ``ran_on`` says),
a SyncAll spans arrival to release, a flag wait the wait, a stage its ``with`` block. Instant
events (a dropped sync) have ``t1 == t0``. 0 means "not recorded" (traces built by hand, or a
stage still open when its core failed).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Hashable, NamedTuple, Sequence, Union

import numpy as np

from .topology import KernelType, Topology

if TYPE_CHECKING:
    from .gm.tensor import GlobalTensor

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
    #: the pipe that made the copy ("PIPE_MTE2", ...) when the kernel orders its own pipes; "" when
    #: its accesses are simply in program order
    pipe: str = ""
    #: the pipe whose queue executed the copy when it ran asynchronously (on that pipe's thread, or
    #: on the kernel thread draining the pipe); "" when the kernel thread made it at issue. Timelines
    #: draw such copies on their pipe's track: they overlap the kernel's own work and each other.
    ran_on: str = ""

    def elements(self, byte_lo: int | None = None, byte_hi: int | None = None) -> tuple[int, int]:
        """The elements [lo, hi) of the root tensor that cover bytes [byte_lo, byte_hi) of the
        segment (default: the access's whole hull), as hazards and timelines report them."""
        lo = self.ranges[0][0] if byte_lo is None else byte_lo
        hi = self.ranges[-1][1] if byte_hi is None else byte_hi
        return (lo - self.tensor_offset) // self.itemsize, -((self.tensor_offset - hi) // self.itemsize)


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


class LocalAccess(NamedTuple):
    """One access to a core's local memory (UB, L1, L0A/B/C) by an instruction on a pipe.

    Recorded at issue, in program order, for the race detector inside the core
    (:mod:`mpnpu.racecheck.intracore`); the GM race detector ignores these.
    """

    kind: str  # READ or WRITE
    memory: str  # "UB", "L1", "L0A", "L0B" or "L0C"
    start: int  # byte range [start, stop) in that memory (the hull of the view)
    stop: int
    pipe: str  # "PIPE_MTE2", "PIPE_V", ...
    stage: str
    site: str
    #: when the instruction ran, for the pipes that run inline on the kernel thread (PIPE_V,
    #: PIPE_M) of the Python API, so a timeline can draw it; 0: not recorded (a copy on an
    #: asynchronous pipe is timed by its GM record, the event just before it; the race detector
    #: needs only the issue order)
    t0: int = 0
    t1: int = 0


class PipeSyncEvent(NamedTuple):
    """An intra-core sync as issued: set_flag, wait_flag or pipe_barrier.

    ``op`` "set": pipe ``event``'s source raises (event, event_id); "wait": its destination waits
    for it; "barrier": the scalar unit waits for everything issued to ``pipe`` (``event`` "").
    """

    op: str
    pipe: str  # the pipe the instruction is issued to ("PIPE_ALL" for a full barrier)
    event: str  # HardEvent name, e.g. "MTE2_V"
    event_id: int
    name: str  # sync point name, or ""
    stage: str
    site: str
    t0: int = 0  # not recorded (0): the issue order is what matters here
    t1: int = 0


class StageEvent(NamedTuple):
    """The kernel entered a stage (``api.stage``); ``t1`` is filled in when it leaves it."""

    name: str
    site: str
    t0: int = 0
    t1: int = 0


TraceEvent = Union[Access, SyncAllEvent, FlagSetEvent, FlagWaitEvent, DroppedSyncEvent, StageEvent,
                   LocalAccess, PipeSyncEvent]


class LaunchTrace(NamedTuple):
    """Everything the cores of one launch recorded, indexed by core id."""

    block_dim: int
    kernel: str
    events: tuple[tuple[TraceEvent, ...], ...]  # events[core_id] in program order
    dropped_syncs: frozenset[str]
    #: which cores the launch started (mpnpu.runtime.topology.KernelType); None: mix 1:2
    kernel_type: KernelType | None = None
    #: analyse it as built with the compiler's automatic synchronisation (--cce-auto-sync, on by default
    #: in kernel projects): see mpnpu.racecheck.intracore
    auto_sync: bool = True

    @property
    def topology(self) -> Topology:
        """The launch's cores and sync routing."""
        return Topology(self.block_dim, self.kernel_type or KernelType.MIX_1_2)


# -- byte ranges of an access -------------------------------------------------------------------


class StridedRanges(tuple[tuple[int, int], ...]):
    """``count`` intervals of ``run`` bytes, ``stride`` apart from ``start`` (``stride > run``,
    ``count >= 2``): a plain tuple of (start, stop) pairs, sorted and disjoint, that pickles as
    those four numbers — a traced 2D tile ships from a core as a few bytes, not one pair per row.
    """

    __slots__ = ()

    def __new__(cls, start: int, run: int, stride: int, count: int) -> "StridedRanges":
        end = start + count * stride
        return tuple.__new__(cls, zip(range(start, end, stride), range(start + run, end + run, stride)))

    def __reduce__(self) -> tuple[type[StridedRanges], tuple[int, int, int, int]]:
        (start, stop), (second, _) = self[0], self[1]
        return (StridedRanges, (start, stop - start, second - start, len(self)))


class _DeferredStridedRanges:
    """A :class:`StridedRanges` not built yet: what a core records, unpickled as the real thing."""

    __slots__ = ("args",)

    def __init__(self, *args: int) -> None:
        self.args = args

    def __reduce__(self) -> tuple[type[StridedRanges], tuple[int, ...]]:
        return (StridedRanges, self.args)


def byte_ranges(t: GlobalTensor, *, deferred: bool = False) -> tuple[tuple[int, int], ...]:
    """The bytes a view covers, as sorted, merged [start, stop) intervals within its segment.

    ``deferred`` (for traces, which only a pickle carries to the parent): a strided view's
    intervals come as an object that turns into its :class:`StridedRanges` when unpickled.

    Traced launches call this for every DataCopy, so the common shapes take a fast path: a
    contiguous view is one interval, and a view with one strided dimension over contiguous rows
    (a 2D tile of a row-major tensor) is a :class:`StridedRanges`, built without numpy.
    """
    if t.size == 0:
        return ()
    item = t.dtype.itemsize
    # Drop unit dimensions and merge dimensions that are contiguous with the next one.
    dims: list[list[int]] = []
    for dim, stride in zip(reversed(t.shape), reversed(t.strides)):
        if dim == 1:
            continue
        if dims and stride == dims[-1][0] * dims[-1][1]:
            dims[-1][0] *= dim
        else:
            dims.append([dim, stride])
    off = t.offset
    if not dims:
        return ((off, off + item),)
    if dims[0][1] == item:  # innermost run is contiguous
        run = dims[0][0] * item
        outer = dims[1:]
    else:
        run = item
        outer = dims
    if not outer:
        return ((off, off + run),)
    if len(outer) == 1 and outer[0][1] > run:  # rows apart: already sorted and disjoint
        n, stride = outer[0]
        if deferred:  # a stand-in: only pickling it to the parent makes it the tuple it stands for
            return _DeferredStridedRanges(off, run, stride, n)  # type: ignore[return-value]
        return StridedRanges(off, run, stride, n)
    starts = np.full(1, off, dtype=np.int64)
    for dim, stride in reversed(outer):
        starts = (starts[:, None] + np.arange(dim, dtype=np.int64)[None, :] * stride).reshape(-1)
    starts.sort()
    merged: list[tuple[int, int]] = []
    for s in starts.tolist():
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], s + run))
        else:
            merged.append((s, s + run))
    return tuple(merged)


def shared_hull(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> tuple[int, int] | None:
    """The hull of the bytes two sorted, disjoint interval lists (``Access.ranges``) share, or None
    when they share none (two strided views can have overlapping hulls and no byte in common)."""
    i = j = 0
    lo: int | None = None
    hi = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            lo = s if lo is None else lo
            hi = e
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return None if lo is None else (lo, hi)


# -- what the race detector reads, and when things ran ------------------------------------------


#: per event type, where its t0 and t1 are among its fields (both types of the module, and any
#: subclass or other NamedTuple a trace may hold: found from its _fields once)
_TIME_SLOTS: dict[type, tuple[int, int] | None] = {}


def _time_slots(cls: type) -> tuple[int, int] | None:
    slots = _TIME_SLOTS.get(cls, ())
    if slots == ():
        fields = getattr(cls, "_fields", ())
        slots = (fields.index("t0"), fields.index("t1")) if "t0" in fields and "t1" in fields else None
        _TIME_SLOTS[cls] = slots
    return slots  # type: ignore[return-value]  # () was replaced above


def _timing_free(ev: TraceEvent) -> tuple[object, ...]:
    """An event less its t0 and t1, with its type (two types can have the same other fields)."""
    cls = type(ev)
    slots = _time_slots(cls)
    if slots is None:
        return (cls, ev)
    i0, i1 = slots
    if i1 == i0 + 1:
        return (cls, ev[:i0], ev[i1 + 1:])
    return (cls, ev[:i0], ev[i0 + 1:i1], ev[i1 + 1:])


def timing_free_key(events: Sequence[TraceEvent]) -> Hashable:
    """One core's events less their times (``t0``/``t1``), as a hashable value: two cores of two
    launches have equal keys exactly when their events are equal but for their times (the
    analysis-reuse key of :mod:`mpnpu.racecheck.reuse`)."""
    return tuple(map(_timing_free, events))


def event_times(events: Sequence[TraceEvent]) -> tuple[np.ndarray, np.ndarray]:
    """One core's t0 and t1 columns (int64), indexed as :func:`time_index` says."""
    t0 = np.fromiter((getattr(ev, "t0", 0) for ev in events), dtype=np.int64, count=len(events))
    t1 = np.fromiter((getattr(ev, "t1", 0) for ev in events), dtype=np.int64, count=len(events))
    return t0, t1


def time_index(events: Sequence[TraceEvent]) -> np.ndarray:
    """Per event of one core (in program order), the index of its times in :func:`event_times`."""
    return np.arange(len(events), dtype=np.int64)
