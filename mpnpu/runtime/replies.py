"""The reply board: how cores that finished a launch tell the parent without waking it, one by one.

Every core used to answer each launch with a message on its pipe, so the parent woke once per core
(a context switch, a poll, a read, an unpickle), while the other cores still needed the CPUs. Now a
core that finished writes its result into its row of a shared board and counts itself done; only
the core that finishes *last* sends a message, so a launch wakes the parent once, however many
cores it has::

    core:    write its row (elapsed, flags set) -> under the lock: done += 1, and unless it was
             the last, the row's launch id (the row now holds its reply)
             the last one (done == cores) -> its LaunchDone on the pipe (wakes the parent)
    parent:  before the launch: done = 0; once woken by the last reply: every row is complete

A core whose reply does not fit a row (a traced launch's events, more flags than a row holds)
still counts itself done and sends its message, and so does a core whose kernel failed (the parent
must hear of a failure at once; counting it lets the last of the others wake the parent too). The
parent takes rows only for the cores it has no message from, and under the lock, so that a row it
reads before the last message (after a failure, on a watchdog tick) is whole on any CPU; each
core's reply is in exactly one place, a row or a message. A core's row fields, then its launch id
and its count in one hold of the lock: a row is complete when the last core's count says so.
"""

from __future__ import annotations

import ctypes
import struct
from multiprocessing.context import BaseContext
from typing import Any

from .procutil import sem_handle
from .protocol import LaunchDone, Reply

#: (mode, id) pairs a row holds; a core that set more flags replies on its pipe
ROW_FLAGS = 16


class _Row(ctypes.Structure):
    _fields_ = [("launch_id", ctypes.c_int64), ("elapsed_s", ctypes.c_double), ("n_flags", ctypes.c_int32),
                ("flags", ctypes.c_int16 * (2 * ROW_FLAGS))]


# The parent reads rows with struct, not through _Row's fields: indexing the array builds a
# Structure object and each field access is a descriptor call, which made reading the other cores'
# rows the largest part of the parent's work after its one wake per launch (about 7 us for 5 rows,
# measured in the parent on 2 CPUs), on the launch's critical path.
_ROW_SIZE = ctypes.sizeof(_Row)
_OFF_ELAPSED, _OFF_N = _Row.elapsed_s.offset, _Row.n_flags.offset
#: a row's launch id, elapsed time and flag count in one read (padding derived from _Row's layout)
_HEAD = struct.Struct(f"=q{_OFF_ELAPSED - _Row.launch_id.offset - 8}xd{_OFF_N - _OFF_ELAPSED - 8}xi")
_new_tuple = tuple.__new__  # builds a LaunchDone from its fields without the NamedTuple's Python __new__


class ReplyBoard:
    """One row per core and the launch's done count, in shared memory made before the fork."""

    def __init__(self, ctx: BaseContext, n_cores: int) -> None:
        self._n = n_cores
        self._rows = ctx.RawArray(_Row, n_cores)
        self._done = ctx.RawValue(ctypes.c_int64, 0)
        self._lock = ctx.Lock()

    def reset(self) -> None:
        """Parent, before it sends a launch (every core idle): nobody is done."""
        self._done.value = 0

    def post(self, core_id: int, reply: Reply, timeout: float) -> bool:
        """Core: record ``reply`` on the board. True: the parent will read it there, send nothing;
        False: send it on the pipe (it is the launch's last, a failure, or does not fit a row)."""
        row = self._rows[core_id]
        fits = False  # (a failure, or a reply too big for a row: sent, and counted below)
        if isinstance(reply, LaunchDone) and reply.events is None and len(reply.flags_set) <= ROW_FLAGS:
            fits = True
            row.elapsed_s = reply.elapsed_s
            flags = reply.flags_set
            row.n_flags = len(flags)
            if flags:
                row.flags[:2 * len(flags)] = [v for pair in flags for v in pair]
        # (a lock a killed core held is never seen again: a failed launch replaces the whole pool;
        # a core that could not count sends, and the parent finds the others' rows on its tick)
        if not self._lock.acquire(timeout=timeout):
            return False
        try:
            self._done.value += 1
            last = self._done.value >= self._n
            if fits and not last:
                # The row is this core's reply from here on; the last core's reply is its message
                # only (one reply per core: a message the parent took from a row too would be left
                # in the pipe for the next launch).
                row.launch_id = reply.launch_id
        finally:
            self._lock.release()
        return fits and not last

    def native_view(self) -> dict[str, int]:
        """Where the board is in this process, for a native serving loop that posts its replies
        itself by the same protocol (mpnpu/ascendc/include/mpnpu/serve.h): the rows' address, a
        row's size, its fields' offsets and flag capacity, the done count's address and the lock's
        sem_t* (0: the lock is none a library can take)."""
        return {"rows": ctypes.addressof(self._rows), "row_size": ctypes.sizeof(_Row), "row_flags": ROW_FLAGS,
                "off_launch_id": _Row.launch_id.offset, "off_elapsed": _Row.elapsed_s.offset,
                "off_n_flags": _Row.n_flags.offset, "off_flags": _Row.flags.offset,
                "done": ctypes.addressof(self._done), "lock": sem_handle(self._lock),
                "parties": self._n}

    def all_done(self) -> bool:
        """Parent: every core has counted itself done (every row that will be written is)."""
        return self._done.value >= self._n

    def take(self, launch_id: int, pending: set[int], replies: list[LaunchDone | None]) -> None:
        """Parent: move the replies to ``launch_id`` that rows hold from ``pending`` into ``replies``.
        Under the lock, so that a row read before the launch's last message (after a failure, on a
        tick) is whole on any CPU; skipped for now if the lock is not had at once."""
        if not self._lock.acquire(timeout=0.01):
            return
        try:
            for core_id in list(pending):
                reply = self.read(core_id, launch_id)
                if reply is not None:
                    replies[core_id] = reply
                    pending.discard(core_id)
        finally:
            self._lock.release()

    def read(self, core_id: int, launch_id: int) -> LaunchDone | None:
        """Core ``core_id``'s reply to ``launch_id`` if its row holds it (see :meth:`take`)."""
        row_id, elapsed, n = _HEAD.unpack_from(self._rows, core_id * _ROW_SIZE)
        if row_id != launch_id:
            return None
        flags: tuple[tuple[int, int], ...] = ()
        if n:
            raw: Any = self._rows[core_id].flags[:2 * n]
            flags = tuple((int(raw[2 * i]), int(raw[2 * i + 1])) for i in range(n))
        reply: LaunchDone = _new_tuple(LaunchDone, (launch_id, core_id, elapsed, None, flags))
        return reply
