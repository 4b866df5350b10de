"""The trace board: how a core hands a traced launch's events to the parent without its pipe.

A traced launch's events are the largest reply a core sends (a compiled vector kernel's records
are some 100 KB a launch). Sent on the pipe, such a reply takes several writes, each waiting for
the parent to read the last (a pipe holds 64 KB), and every core sends one, so the parent wakes
once per core instead of once per launch (:mod:`mpnpu.runtime.replies`). On the board, a core
writes its pickled events into its own area of one shared mapping and replies like an untraced
launch; the parent, woken once by the launch's last reply, copies each area out::

    core:    pickle(events) fits its area?  yes -> [length][bytes] in its area, the reply says nothing
                                            no  -> the events in its reply on the pipe (as before)
    parent:  a traced launch's reply without events -> a copy of its area's bytes; length set to 0

The mapping is anonymous and shared, made before the cores are forked: it has no name to leak,
only the pages written are ever committed, and it ends with the last process that maps it. A core
process started another way than by fork (spawn, forkserver) has no such mapping: its board is
off and every trace goes on the pipe.
"""

from __future__ import annotations

import mmap
import pickle
import struct
from typing import Any

#: bytes of each core's area (address space: pages are committed only as written); a core whose
#: events take more in a launch sends them on its pipe
DEFAULT_AREA_BYTES = 1 << 20

_LENGTH = struct.Struct("=q")


class TraceBoard:
    """One area per core in an anonymous shared mapping; see the module docstring."""

    def __init__(self, n_cores: int, area_bytes: int | None = None) -> None:
        self.n_cores = n_cores
        self.area_bytes = DEFAULT_AREA_BYTES if area_bytes is None else area_bytes
        self._map: mmap.mmap | None = mmap.mmap(-1, n_cores * self.area_bytes) if n_cores else None

    def __getstate__(self) -> dict[str, Any]:
        # A mapping cannot travel to a process that was not forked: there the board is off.
        return {"n_cores": self.n_cores, "area_bytes": self.area_bytes, "_map": None}

    @property
    def enabled(self) -> bool:
        return self._map is not None

    def put(self, core_id: int, events: Any) -> bool:
        """Core: write ``events`` into this core's area. False: they do not fit (or the board is
        off); send them in the reply."""
        if self._map is None:
            return False
        data = pickle.dumps(events, protocol=pickle.HIGHEST_PROTOCOL)
        if _LENGTH.size + len(data) > self.area_bytes:
            return False
        base = core_id * self.area_bytes
        self._map[base + _LENGTH.size:base + _LENGTH.size + len(data)] = data
        # (the length last: the reply that follows, by lock or pipe, orders both for the parent)
        _LENGTH.pack_into(self._map, base, len(data))
        return True

    def take(self, core_id: int) -> bytes | None:
        """Parent: the events core ``core_id`` put on the board for the launch that just ended,
        still pickled (a copy: the core may reuse its area from now on); None: it put nothing.
        The parent unpickles them only when something reads them (PackedEvents.pickled)."""
        if self._map is None:
            return None
        base = core_id * self.area_bytes
        (n,) = _LENGTH.unpack_from(self._map, base)
        if n <= 0:
            return None
        _LENGTH.pack_into(self._map, base, 0)
        return self._map[base + _LENGTH.size:base + _LENGTH.size + n]

    def close(self) -> None:
        """Unmap (the parent, when its pool ends; the cores' copies end with them)."""
        if self._map is not None:
            self._map.close()
            self._map = None
