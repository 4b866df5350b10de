"""Queues: ``TQue<position, depth>`` with its buffers, inserting the pipe syncs Ascend C's queues
insert (EnQue -> DeQue, FreeTensor -> the next AllocTensor of that buffer)."""

from __future__ import annotations

import collections
from typing import Sequence

import numpy as np

from mpnpu.errors import KernelAPIError
from mpnpu.runtime import kcontext
from mpnpu.runtime.dtypes import DTypeLike
from mpnpu.runtime.local import LocalTensor, TPosition
from mpnpu.runtime.pipe_events import HardEvent, Pipe

from .sync import set_flag, wait_flag

__all__ = ["TQue"]

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
        tpipe = c.tpipe
        self._bufs = [tpipe.init_buffer(position, nbytes) for _ in range(depth)]
        self._fwd_ids = [tpipe.alloc_event_id(self.forward) for _ in range(depth)]
        self._bwd_ids = [tpipe.alloc_event_id(self.backward) for _ in range(depth)]
        self._free = collections.deque(range(depth))
        self._reused = [False] * depth  # freed at least once: the next alloc must wait for that free
        self._queued: collections.deque[tuple[int, LocalTensor]] = collections.deque()  # enqueued, oldest first
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
            raise KernelAPIError(f"TQue.alloc_tensor: all {self.depth} buffers are in use "
                                 "(free_tensor one first; the device would hang)")
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
