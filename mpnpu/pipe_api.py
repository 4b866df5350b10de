"""Kernel-facing intra-core synchronisation and vector instructions (re-exported by :mod:`mpnpu.api`).

=====================================  =========================================================
Ascend C                               mpnpu.api
=====================================  =========================================================
SetFlag<HardEvent::X_Y>(id)            set_flag(HardEvent.X_Y, id)
WaitFlag<HardEvent::X_Y>(id)           wait_flag(HardEvent.X_Y, id)
PipeBarrier<PIPE_X>()                  pipe_barrier(Pipe.X)
TPipe::AllocEventID / ReleaseEventID   get_tpipe().alloc_event_id / release_event_id
TPipe::FetchEventID                    get_tpipe().fetch_event_id
TQue<pos, depth> + InitBuffer          TQue(pos, depth, nbytes)
AllocTensor / EnQue / DeQue / Free     alloc_tensor / enque / deque / free_tensor
Duplicate, Adds, Muls, Add, Mul        duplicate, adds, muls, add, mul  (PIPE_V)
=====================================  =========================================================

How the pipes run is described in :mod:`mpnpu.runtime.pipes`. Every sync call takes an optional
``name``; a launch that drops that name skips the call (both the set and the wait of a pair carry
the same name). A queue named ``Q`` names the syncs it inserts ``Q:MTE2_V`` (EnQue → DeQue) and
``Q:V_MTE2`` (FreeTensor → the next AllocTensor of that buffer), after their HardEvents.

Vector instructions written as numpy expressions on local tensors run on PIPE_V too, but only
these functions (and ``cast``) record which bytes PIPE_V touched, for the race detector.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .errors import KernelAPIError
from .runtime import kcontext
from .runtime.dtypes import DTypeLike, from_float32, get_dtype, to_float32
from .runtime.local import LocalTensor, TPosition
from .runtime.pipe_events import HardEvent, Pipe, check_event
from .runtime.trace import READ, WRITE, LocalAccess, PipeSyncEvent

if TYPE_CHECKING:
    from .runtime.core import CoreContext

__all__ = ["HardEvent", "TQue", "add", "duplicate", "mul", "muls", "adds", "pipe_barrier", "set_flag",
           "sync_pipes", "wait_flag"]


def record_local(c: "CoreContext", kind: str, arr: np.ndarray, pipe: Pipe, site: str | None = None) -> None:
    """Trace an access of ``pipe`` to the local tensor ``arr`` (when the launch traces local memory);
    ``site``: the kernel line, if the caller has already looked it up."""
    if c.events is None or not c.pipe_aware or not isinstance(arr, np.ndarray):
        return
    where = c.pipe.locate(arr)
    if where is not None:
        c.events.append(LocalAccess(kind, where[0], where[1], where[2], pipe._value_, c.stage,
                                    site if site is not None else kcontext.call_site()))


def _record_sync(c: "CoreContext", op: str, pipe: Pipe, event: str, event_id: int, name: str,
                 site: str | None = None) -> None:
    if c.events is not None and c.pipe_aware:
        c.events.append(PipeSyncEvent(op, pipe._value_, event, event_id, name, c.stage,
                                      site if site is not None else kcontext.call_site()))


# -- flags and barriers ------------------------------------------------------------------------


def set_flag(event: HardEvent, event_id: int = 0, *, name: str = "") -> None:
    """SetFlag<event>(event_id): pipe ``event.src`` raises the event when it reaches this point."""
    c = kcontext.current()
    ev = check_event(event, event_id)
    if name and kcontext.sync_dropped(c, name, "set_flag"):
        return
    c.pipes.set_flag(ev, event_id, kcontext.call_site)  # the line is looked up only for an error message
    _record_sync(c, "set", ev.src, ev.name, event_id, name)


def wait_flag(event: HardEvent, event_id: int = 0, *, name: str = "") -> None:
    """WaitFlag<event>(event_id): pipe ``event.dst`` waits here for the event, then consumes it.

    A wait that no set can satisfy any more raises KernelAPIError (the device would hang).
    """
    c = kcontext.current()
    ev = check_event(event, event_id)
    if name and kcontext.sync_dropped(c, name, "wait_flag"):
        return
    c.pipes.wait_flag(ev, event_id, kcontext.call_site)
    _record_sync(c, "wait", ev.dst, ev.name, event_id, name)


def sync_pipes(event: HardEvent, *, name: str = "") -> None:
    """SetFlag + WaitFlag on an id from FetchEventID: pipe ``event.dst`` waits for everything
    issued to ``event.src`` so far. The usual pairing (often a macro in Ascend C kernels) when
    nothing is issued between the set and the wait."""
    c = kcontext.current()
    ev = check_event(event, 0)
    event_id = c.pipe.fetch_event_id(ev)
    if name and (kcontext.sync_dropped(c, name, "set_flag") | kcontext.sync_dropped(c, name, "wait_flag")):
        return  # both halves carry the name (and are recorded as dropped, as two calls would be)
    c.pipes.set_wait(ev, event_id, kcontext.call_site)
    if c.events is not None:  # (checked here too: this pairing runs after almost every copy)
        site = kcontext.call_site()
        _record_sync(c, "set", ev.src, ev.name, event_id, name, site)
        _record_sync(c, "wait", ev.dst, ev.name, event_id, name, site)


def pipe_barrier(pipe: Pipe = Pipe.ALL, *, name: str = "") -> None:
    """PipeBarrier<pipe>: wait until every instruction issued to ``pipe`` (PIPE_ALL: to every pipe)
    of *this* core has completed. It orders nothing across cores."""
    c = kcontext.current()
    if not isinstance(pipe, Pipe):
        raise KernelAPIError(f"pipe_barrier: pipe must be a Pipe, got {pipe!r}")
    if name and kcontext.sync_dropped(c, name, "pipe_barrier"):
        return
    c.pipes.barrier(pipe, kcontext.call_site)
    _record_sync(c, "barrier", pipe, "", 0, name)


# -- queues ------------------------------------------------------------------------------------

#: position -> (producer pipe, consumer pipe) of a TQue at that position
QUEUE_PIPES = {
    TPosition.VECIN: (Pipe.MTE2, Pipe.V),
    TPosition.VECOUT: (Pipe.V, Pipe.MTE3),
    TPosition.A1: (Pipe.MTE2, Pipe.MTE1),
    TPosition.B1: (Pipe.MTE2, Pipe.MTE1),
    TPosition.A2: (Pipe.MTE1, Pipe.M),
    TPosition.B2: (Pipe.MTE1, Pipe.M),
    TPosition.CO1: (Pipe.M, Pipe.FIX),
}


class TQue:
    """``TQue<position, depth>`` with its buffers: the queue inserts the syncs between the pipe that
    fills a buffer and the pipe that uses it, as Ascend C's queues do::

        alloc_tensor()   producer waits <consumer>_<producer> for this buffer's last free_tensor
        enque(t)         producer raises <producer>_<consumer> for this buffer
        deque()          consumer waits <producer>_<consumer>, gets the oldest enqueued tensor
        free_tensor(t)   consumer raises <consumer>_<producer>: the buffer may be refilled

    ``depth`` 2 is double buffering: the producer fills one buffer while the consumer uses the other.
    Each buffer holds one event id per direction (ids 0..7 per HardEvent, from the core's TPipe).
    """

    def __init__(self, position: TPosition, depth: int, nbytes: int, *, name: str = "") -> None:
        c = kcontext.current()
        if position not in QUEUE_PIPES:
            raise KernelAPIError(f"TQue: no queue at {getattr(position, 'value', position)} (VECCALC is a TBuf)")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise KernelAPIError(f"TQue: depth must be a positive int, got {depth!r}")
        self.position = position
        self.depth = depth
        self.name = name
        self.producer, self.consumer = QUEUE_PIPES[position]
        self.forward = HardEvent[f"{self.producer.short}_{self.consumer.short}"]
        self.backward = HardEvent[f"{self.consumer.short}_{self.producer.short}"]
        tpipe = c.pipe
        self._bufs = [tpipe.init_buffer(position, nbytes) for _ in range(depth)]
        self._fwd_ids = [tpipe.alloc_event_id(self.forward) for _ in range(depth)]
        self._bwd_ids = [tpipe.alloc_event_id(self.backward) for _ in range(depth)]
        self._free = collections.deque(range(depth))
        self._reused = [False] * depth  # freed at least once: the next alloc must wait for that free
        self._queued: collections.deque = collections.deque()  # (slot, tensor) enqueued, oldest first
        self._held: dict[int, int] = {}  # buffer address -> slot, allocated and not freed
        self._addr = [b._raw.__array_interface__["data"][0] for b in self._bufs]

    def _sync_name(self, event: HardEvent) -> str:
        return f"{self.name}:{event.name}" if self.name else ""

    def _slot(self, t: np.ndarray, what: str) -> int:
        slot = self._held.get(t.__array_interface__["data"][0]) if isinstance(t, np.ndarray) else None
        if slot is None:
            raise KernelAPIError(f"TQue.{what}: the tensor was not allocated from this queue (or was freed)")
        return slot

    def alloc_tensor(self, shape: int | Sequence[int], dtype: DTypeLike) -> LocalTensor:
        """AllocTensor: a free buffer, once the consumer has freed its previous contents."""
        if not self._free:
            raise KernelAPIError(
                f"TQue.alloc_tensor: all {self.depth} buffers are in use (free_tensor one first; the device would hang)")
        slot = self._free.popleft()
        if self._reused[slot]:
            wait_flag(self.backward, self._bwd_ids[slot], name=self._sync_name(self.backward))
        t = self._bufs[slot].get(shape, dtype)
        self._held[self._addr[slot]] = slot
        return t

    def enque(self, t: LocalTensor) -> None:
        """EnQue: the producer has issued what fills ``t``; the consumer may take it once that completes."""
        slot = self._slot(t, "enque")
        set_flag(self.forward, self._fwd_ids[slot], name=self._sync_name(self.forward))
        self._queued.append((slot, t))

    def deque(self) -> LocalTensor:
        """DeQue: the oldest enqueued tensor, once the producer has filled it."""
        if not self._queued:
            raise KernelAPIError("TQue.deque: nothing is enqueued (the device would hang)")
        slot, t = self._queued.popleft()
        wait_flag(self.forward, self._fwd_ids[slot], name=self._sync_name(self.forward))
        return t

    def free_tensor(self, t: LocalTensor) -> None:
        """FreeTensor: the consumer is done with ``t``; its buffer may be refilled."""
        slot = self._slot(t, "free_tensor")
        set_flag(self.backward, self._bwd_ids[slot], name=self._sync_name(self.backward))
        del self._held[self._addr[slot]]
        self._reused[slot] = True
        self._free.append(slot)


# -- vector instructions (PIPE_V, inline) ------------------------------------------------------


def _vec_values(arr: np.ndarray) -> np.ndarray:
    d = arr.device_dtype if isinstance(arr, LocalTensor) else get_dtype(arr.dtype)
    return to_float32(np.asarray(arr), d) if d.is_float else np.asarray(arr)


def _vec_store(dst: np.ndarray, values) -> None:
    d = dst.device_dtype if isinstance(dst, LocalTensor) else get_dtype(dst.dtype)
    values = np.broadcast_to(np.asarray(values), dst.shape)
    np.copyto(dst, from_float32(values.astype(np.float32), d) if d.is_float else values.astype(dst.dtype))


def _vector(dst: np.ndarray, srcs: tuple, fn) -> None:
    c = kcontext.current()
    site = kcontext.call_site() if c.events is not None else None
    for s in srcs:
        if s.shape != dst.shape:
            raise KernelAPIError(f"vector instruction: source {s.shape} and destination {dst.shape} differ")
        record_local(c, READ, s, Pipe.V, site)
    record_local(c, WRITE, dst, Pipe.V, site)
    _vec_store(dst, fn(*(_vec_values(s) for s in srcs)))


def duplicate(dst: np.ndarray, value: float) -> None:
    """Duplicate: fill ``dst`` with ``value``."""
    _vector(dst, (), lambda: value)


def adds(dst: np.ndarray, src: np.ndarray, scalar: float) -> None:
    """Adds: ``dst = src + scalar``."""
    _vector(dst, (src,), lambda x: x + scalar)


def muls(dst: np.ndarray, src: np.ndarray, scalar: float) -> None:
    """Muls: ``dst = src * scalar``."""
    _vector(dst, (src,), lambda x: x * scalar)


def add(dst: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Add: ``dst = a + b``."""
    _vector(dst, (a, b), lambda x, y: x + y)


def mul(dst: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Mul: ``dst = a * b``."""
    _vector(dst, (a, b), lambda x, y: x * y)
