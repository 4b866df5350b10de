"""Events a core records when a launch is traced (``Device.launch_with(LaunchOptions(trace=True), ...)``).

Each core keeps its events in program order. The race detector (:mod:`mpnpu.racecheck`) rebuilds
happens-before from them: program order within a core, SyncAll rounds (the k-th SyncAll of every
party is one barrier), and cross-core flags (the j-th set from sender s to receiver r on
(mode, id) happens before r's j-th wait on (mode, id); routing in :mod:`mpnpu.runtime.topology`).

Events are NamedTuples. A core ships them packed (:class:`PackedEvents`): its Python events column by
column (:class:`EventColumns`), a compiled kernel's records as the library wrote them (a
:class:`TracePart` of :mod:`mpnpu.ascendc.native.records`); the parent decodes them into NamedTuples
only when something reads them, and racecheck's reuse of identical launches
(:mod:`mpnpu.racecheck.reuse`) compares launches on the packed form (:func:`timing_free_key`) without
decoding at all. An access's bytes are encoded compactly (:func:`byte_ranges`): a 2D tile ships from a
core as four numbers, not one pair per row.

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

import functools
import pickle
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Hashable,
    Iterator,
    NamedTuple,
    Protocol,
    Sequence,
    Union,
    overload,
)

import numpy as np

from mpnpu.errors import TraceError

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


#: GmFlagEvent.op of a write that a poll observed whole (racecheck's rule of polled GM)
GM_FLAG_OBSERVED = "observed"
#: ... of a write a poll saw only some bytes of: what the write comes after is released, not the write
GM_FLAG_OBSERVED_PART = "observed-part"


class GmFlagEvent(NamedTuple):
    """A flag kept in a GM word that cores set and wait on (IBSet / IBWait, NotifyNextBlock /
    WaitPreBlock): ``op`` "release" (a set: what the core did before it is ordered before every wait
    it satisfies) or "wait" (a completed wait: it returned once the word's ``target``-th release had
    been made). ``key`` names the word (its GM tensor's region and byte offset); the releases of one
    word count from 1 in the order of their times.

    Racecheck's rule of polled GM (:mod:`mpnpu.racecheck.polls`) adds such events of its own (name
    "poll", negative keys): op :data:`GM_FLAG_OBSERVED` right after a write another core's poll
    observed whole (it releases that write and what its instruction comes after),
    :data:`GM_FLAG_OBSERVED_PART` after one it saw only part of (what the write comes after: its other
    bytes may not have landed when the poll looked), and a "wait" where the polling core acquires it."""

    op: str
    key: int
    target: int  # a wait: which release of the word let it return (0 for a release)
    name: str
    stage: str
    site: str
    t0: int = 0  # a wait: started waiting
    t1: int = 0  # a release: made; a wait: returned


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
    memory: str  # "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB", or "SPR" (special registers: GetAccVal)
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
                   LocalAccess, PipeSyncEvent, GmFlagEvent]


class LaunchTrace(NamedTuple):
    """Everything the cores of one launch recorded, indexed by core id."""

    block_dim: int
    kernel: str
    #: events[core_id] in program order (a core's :class:`PackedEvents` as it shipped them, or a tuple)
    events: tuple[Sequence[TraceEvent], ...]
    dropped_syncs: frozenset[str]
    #: which cores the launch started (mpnpu.runtime.topology.KernelType); None: mix 1:2
    kernel_type: KernelType | None = None
    #: analyse it as built with the compiler's automatic synchronisation (--cce-auto-sync, on by default
    #: in kernel projects): see mpnpu.racecheck.intracore
    auto_sync: bool = True
    #: GM the launch started without (initcheck, :mod:`mpnpu.racecheck.initcheck`): (tensor name,
    #: segment, start, stop) of the bytes of each allocation made since the device's previous launch
    #: that the host neither wrote nor filled with data; () when not known
    unwritten_gm: tuple[tuple[str, str, int, int], ...] = ()
    #: (GM segment, kernel line, bytes read) of polling loops a directed run of this launch showed
    #: spinning where this launch's own run looked once (:mod:`mpnpu.racecheck.poll_probe`): the
    #: rule of polled GM takes them as poll sites of this launch too
    poll_sites: frozenset[tuple[str, str, int]] = frozenset()

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


# -- the shipped form: packed events ------------------------------------------------------------


class TracePart(Protocol):
    """A run of one core's events in a compact form (what :class:`PackedEvents` is made of)."""

    def decode(self) -> tuple[list[TraceEvent], np.ndarray]:
        """The events (NamedTuples, program order) and, per event, the index of its times in
        :meth:`times` (-1: times derived from others', as a C++ stage's span)."""

    def key(self) -> Hashable:
        """Everything about the events but their times: equal for two parts exactly when their
        decoded events are equal but for t0 and t1."""

    def times(self) -> tuple[np.ndarray, np.ndarray]:
        """The t0 and t1 columns (int64)."""


#: how :class:`EventColumns` ships a time column: little-endian int64 (the same bytes on every host)
STAMP = np.dtype("<i8")
#: the Python trace events, by their code in :class:`EventColumns` (a byte per event)
_COLUMN_TYPES: tuple[type, ...] = (Access, LocalAccess, PipeSyncEvent, StageEvent, SyncAllEvent, FlagSetEvent,
                                   FlagWaitEvent, DroppedSyncEvent, GmFlagEvent)
_new_tuple = tuple.__new__  # a NamedTuple from its fields, without the class's Python __new__


class EventColumns:
    """A run of Python trace events (NamedTuples) column by column, as a core ships them.

    ``body`` is one pickle of the events' types, per event the index of its type (``codes``), and
    per type its columns (a tuple per field) less the times; ``stamps`` holds, per type, its t0 and
    t1 columns as int64 bytes (:data:`STAMP`; None for a type without times). A core pickles plain
    columns far faster than NamedTuples (each pickles as its class and arguments, and unpickles
    through a Python call), and
    the parent compares two launches on ``body`` — bytes, hashed and compared in C — without
    unpickling or rebuilding a single event (:meth:`key`). Equal bytes unpickle to equal events;
    equal events that pickled differently (another sharing of equal strings) are only two keys.
    """

    __slots__ = ("body", "codes", "stamps")

    def __init__(self, body: bytes, codes: bytes, stamps: tuple[tuple[bytes, bytes] | None, ...]) -> None:
        self.body = body
        self.codes = codes
        self.stamps = stamps

    @classmethod
    def pack(cls, events: list[TraceEvent]) -> "EventColumns":
        """The columns of ``events`` (NamedTuples)."""
        types, code_bytes, plain, stamps = columns(events)
        body = pickle.dumps((types, code_bytes, plain), protocol=pickle.HIGHEST_PROTOCOL)
        return cls(body, code_bytes, stamps)

    @staticmethod
    def columns_py(events: list[TraceEvent]) -> tuple[tuple[type, ...], bytes, tuple[tuple[tuple[Any, ...], ...], ...],
                                                      tuple[tuple[bytes, bytes] | None, ...]]:
        """What :meth:`pack` pickles, and the stamps: the events' types in order of first
        appearance, a byte per event (its type's index), per type its columns less t0 and t1, and
        per type its (t0, t1) columns as little-endian int64 bytes (:data:`STAMP`: one blob each to
        pickle and unpickle, not an int object per event), or None. :data:`columns` is this, or the
        same in C (:mod:`mpnpu.runtime.native_trace`) once a traced core process has it."""
        types: list[type] = []
        rows: list[list[TraceEvent]] = []
        index: dict[type, int] = {}
        codes = bytearray(len(events))
        for i, ev in enumerate(events):
            t = type(ev)
            k = index.get(t)
            if k is None:
                k = index[t] = len(types)
                if k > 255:
                    raise TraceError("a trace with more than 256 event types")
                types.append(t)
                rows.append([])
            rows[k].append(ev)
            codes[i] = k
        plain: list[tuple[tuple[Any, ...], ...]] = []
        stamps: list[tuple[bytes, bytes] | None] = []
        for t, r in zip(types, rows):
            cols = tuple(zip(*r))
            slots = _time_slots(t)
            if slots is None:
                plain.append(cols)
                stamps.append(None)
            else:
                plain.append(tuple(c for j, c in enumerate(cols) if j not in slots))
                stamps.append((np.array(cols[slots[0]], dtype=STAMP).tobytes(),
                               np.array(cols[slots[1]], dtype=STAMP).tobytes()))
        return tuple(types), bytes(codes), tuple(plain), tuple(stamps)

    def __reduce__(self) -> tuple[type[EventColumns], tuple[Any, ...]]:
        return (EventColumns, (self.body, self.codes, self.stamps))

    def decode(self) -> tuple[list[TraceEvent], np.ndarray]:
        types, codes, plain = pickle.loads(self.body)
        per_type: list[Callable[[], TraceEvent]] = []
        for t, cols, stamps in zip(types, plain, self.stamps):
            if stamps is not None:
                cols = list(cols)
                i0, i1 = _time_slots(t)  # type: ignore[misc]  # a type with stamps has both slots
                # (i0 < i1: each goes in at its place in the full row; Python ints, as recorded)
                cols.insert(i0, np.frombuffer(stamps[0], dtype=STAMP).tolist())
                cols.insert(i1, np.frombuffer(stamps[1], dtype=STAMP).tolist())
            per_type.append(iter([_new_tuple(t, row) for row in zip(*cols)]).__next__)
        events = [per_type[k]() for k in codes]
        return events, np.arange(len(events), dtype=np.int64)

    def key(self) -> Hashable:
        return self.body

    def fields(self, cls: type, names: Sequence[str]) -> list[tuple[Any, ...]]:
        """Columns ``names`` (not t0 or t1) of the events of type ``cls``, in program order, without
        building a single event (empty columns when the run has none of that type)."""
        return self.body_fields(self.body, cls, names)

    @staticmethod
    def body_fields(body: bytes, cls: type, names: Sequence[str]) -> list[tuple[Any, ...]]:
        """:meth:`fields` of the run whose :attr:`body` is ``body`` (they depend on nothing else)."""
        types, _, plain = pickle.loads(body)
        if cls not in types:
            return [() for _ in names]
        cols = plain[types.index(cls)]
        slots = _time_slots(cls) or ()
        kept = [f for j, f in enumerate(cls._fields) if j not in slots]  # type: ignore[attr-defined]
        return [cols[kept.index(n)] for n in names]

    def times(self) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.codes)
        t0 = np.zeros(n, dtype=np.int64)
        t1 = np.zeros(n, dtype=np.int64)
        at_of = _type_positions(self.codes)
        for k, stamps in enumerate(self.stamps):
            if stamps is not None:
                at = at_of[k]
                t0[at] = np.frombuffer(stamps[0], dtype=STAMP)
                t1[at] = np.frombuffer(stamps[1], dtype=STAMP)
        return t0, t1


# (kept by the codes' bytes: the launches of a batch repeat their runs' layouts, and racecheck reads
# every launch's times; the lists are only read)
@functools.lru_cache(maxsize=512)
def _type_positions(codes: bytes) -> list[np.ndarray]:
    """Per type code k, the positions of the events of that type in a run with these ``codes``."""
    column = np.frombuffer(codes, dtype=np.uint8)
    return [np.flatnonzero(column == k) for k in range(int(column.max()) + 1 if len(column) else 0)]


#: EventColumns' grouping of a run of events: :meth:`EventColumns.columns_py`, or the C recorder's
#: (mpnpu.runtime.native_trace puts it here in a traced core process)
columns: Callable[[list[TraceEvent]], Any] = EventColumns.columns_py


class PackedEvents(Sequence[TraceEvent]):
    """One core's trace events as it shipped them: a sequence of :class:`TracePart` (Python events as
    :class:`EventColumns`, a compiled kernel's records as its library wrote them), decoded into the
    events on first use, as a tuple of NamedTuples would hold them.

    Racecheck's reuse of identical launches reads :meth:`key` and :meth:`times`, which decode nothing.
    Pickles as its parts (the decoded events stay behind).
    """

    __slots__ = ("_parts", "_pickled", "_events", "_index")

    def __init__(self, parts: tuple[TracePart, ...]) -> None:
        self._parts: tuple[TracePart, ...] | None = parts
        self._pickled: bytes | None = None
        self._events: tuple[TraceEvent, ...] | None = None
        self._index: np.ndarray | None = None

    @classmethod
    def pickled(cls, data: bytes) -> "PackedEvents":
        """The PackedEvents that ``data`` (its pickle, as a core shipped it) holds, unpickled on
        first use. Until then it pickles as ``data`` itself: a batch's parent hands a traced
        launch to racecheck's analysis process (:mod:`mpnpu.racecheck.worker`) without
        unpickling and pickling again the 100 KB a compiled vector core ships per launch."""
        packed = cls(())
        packed._parts = None
        packed._pickled = data
        return packed

    @property
    def parts(self) -> tuple[TracePart, ...]:
        """The parts (:class:`TracePart`), in program order."""
        # (read once each: another thread may be reading them or pickling this meanwhile; the parts
        # are set before the pickled bytes are let go)
        parts = self._parts
        if parts is None:
            data = self._pickled
            parts = self._parts
            if parts is None:
                assert data is not None
                parts = self._parts = _unpickled_events(data).parts
            self._pickled = None
        return parts

    @classmethod
    def pack(cls, events: Sequence[Any]) -> "PackedEvents":
        """A core's event list as it ships: runs of NamedTuples become :class:`EventColumns`; any
        other item is a :class:`TracePart` already (a compiled kernel's records)."""
        parts: list[TracePart] = []
        run: list[Any] = []  # events (typed Any: appending them needs no cast, a call per event)
        item: Any  # an event (a NamedTuple) or a part
        for item in events:
            if isinstance(item, tuple):  # (every event is a NamedTuple, no part is a tuple)
                run.append(item)
                continue
            if run:
                parts.append(EventColumns.pack(run))
                run = []
            parts.append(item)
        if run:
            parts.append(EventColumns.pack(run))
        return cls(tuple(parts))

    def __reduce__(self) -> tuple[Callable[..., PackedEvents], tuple[Any]]:
        data = self._pickled  # (once: see parts)
        if data is not None:
            return (_unpickled_events, (data,))
        return (PackedEvents, (self.parts,))

    def _decode(self) -> tuple[TraceEvent, ...]:
        events: list[TraceEvent] = []
        index: list[np.ndarray] = []
        base = 0
        for part in self.parts:
            evs, idx = part.decode()
            events += evs
            index.append(np.where(idx >= 0, idx + base, -1))
            base += len(part.times()[0])
        self._index = np.concatenate(index) if index else np.zeros(0, dtype=np.int64)
        self._events = tuple(events)
        return self._events

    def events(self) -> tuple[TraceEvent, ...]:
        """The decoded events (decoded once)."""
        return self._events if self._events is not None else self._decode()

    def key(self) -> Hashable:
        """:func:`timing_free_key` of these events, from the parts."""
        return tuple(p.key() for p in self.parts)

    def times(self) -> tuple[np.ndarray, np.ndarray]:
        """The t0 and t1 columns of every part, one after the other."""
        cols = [p.times() for p in self.parts]
        if len(cols) == 1:
            return cols[0]
        if not cols:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate([c[0] for c in cols]), np.concatenate([c[1] for c in cols])

    def time_index(self) -> np.ndarray:
        """Per event (decoded order), the index of its times in :meth:`times` (-1: derived). Parts
        that can say it without decoding (a compiled kernel's records) are not decoded."""
        if self._index is None:
            laid = [layout() for layout in (getattr(p, "layout", None) for p in self.parts) if layout is not None]
            if len(laid) < len(self.parts):
                self._decode()
            else:
                index: list[np.ndarray] = []
                base = 0
                for idx, position in laid:
                    index.append(np.where(idx >= 0, idx + base, -1))
                    base += len(position)
                self._index = np.concatenate(index) if index else np.zeros(0, dtype=np.int64)
        assert self._index is not None
        return self._index

    def __len__(self) -> int:
        return len(self._events) if self._events is not None else len(self.time_index())

    @overload
    def __getitem__(self, i: int) -> TraceEvent: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[TraceEvent, ...]: ...

    def __getitem__(self, i: int | slice) -> TraceEvent | tuple[TraceEvent, ...]:
        return self.events()[i]

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedEvents):
            return self.events() == other.events()
        if isinstance(other, tuple):
            return self.events() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.events())

    def __repr__(self) -> str:
        return f"PackedEvents({self.events()!r})"


def _unpickled_events(data: bytes) -> PackedEvents:
    """A :meth:`PackedEvents.pickled` that travelled as its pickle: the events it holds."""
    events = pickle.loads(data)
    if not isinstance(events, PackedEvents):
        raise TraceError(f"a shipped trace holds {type(events).__name__}, not PackedEvents")
    return events


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
    analysis-reuse key of :mod:`mpnpu.racecheck.reuse`). Packed events (as a core ships them) give
    theirs without being decoded; a tuple of events gives the events less their times."""
    if isinstance(events, PackedEvents):
        return ("packed", events.key())
    return tuple(map(_timing_free, events))


def event_times(events: Sequence[TraceEvent]) -> tuple[np.ndarray, np.ndarray]:
    """One core's t0 and t1 columns (int64), indexed as :func:`time_index` says."""
    if isinstance(events, PackedEvents):
        return events.times()
    t0 = np.fromiter((getattr(ev, "t0", 0) for ev in events), dtype=np.int64, count=len(events))
    t1 = np.fromiter((getattr(ev, "t1", 0) for ev in events), dtype=np.int64, count=len(events))
    return t0, t1


def time_index(events: Sequence[TraceEvent]) -> np.ndarray:
    """Per event of one core (in program order), the index of its times in :func:`event_times` (-1:
    its times are derived from others', as a C++ stage's span)."""
    if isinstance(events, PackedEvents):
        return events.time_index()
    return np.arange(len(events), dtype=np.int64)
