"""GM as a compiled kernel sees it: each allocation at an address of its own, far from the others.

In the core process GM tensors are carved from a few shared-memory segments, next to each other.
A kernel that computes a pointer past the end of one tensor (``(__gm__ float*)x + n`` for a row it
does not own) would land in the neighbouring tensor, and memcheck could not tell that the access
came from ``x``. So the pointers handed to a compiled kernel point into a *window* per allocation:
the pages holding it, mapped again (MAP_SHARED, the same memory) at a fresh address followed by a
large unmapped gap (4 GiB)::

    segment:  [.. y ..][...... x ......][.. z ..]            (the runtime's own mapping)
    window x:      [page][.... x ....][page] ···· gap ···· (unmapped, 4 GiB)

A pointer derived from ``x`` stays in x's window or runs into the gap: memcheck names ``x`` (or
"no GM tensor") and never confuses it with ``y``; a raw dereference into the gap faults at once
instead of silently writing ``y``. Windows are made once per allocation block and reused across
launches (the caching allocator hands out the same blocks again); they cost address space and two
memory mappings each. A long run sees ever new blocks (every case size makes its own), and a
process has room for about 65,000 mappings and 128 TiB of addresses (32,000 windows), so at most
:data:`MAX_WINDOWS` are kept: past that, the oldest are unmapped before a launch maps new ones
(between launches no pointer into a window survives).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

from mpnpu.errors import KernelAPIError

_PAGE = mmap.PAGESIZE
#: unmapped address space after each window (virtual only)
GAP_BYTES = 4 << 30
#: windows a process keeps before the oldest are unmapped (each: 2 mappings, 4 GiB of addresses)
MAX_WINDOWS = 4096

_PROT_NONE, _PROT_RW = 0, mmap.PROT_READ | mmap.PROT_WRITE
_MAP_SHARED, _MAP_PRIVATE, _MAP_FIXED = mmap.MAP_SHARED, mmap.MAP_PRIVATE, 0x10
_MAP_ANONYMOUS = getattr(mmap, "MAP_ANONYMOUS", 0x20)
_MAP_NORESERVE = 0x4000
_MAP_FAILED = ctypes.c_void_p(-1).value

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def _mmap(addr: int | None, length: int, prot: int, flags: int, fd: int, offset: int) -> int:
    got = _libc.mmap(addr, length, prot, flags, fd, offset)
    if got is None or got == _MAP_FAILED:
        err = ctypes.get_errno()
        raise KernelAPIError(f"cannot map GM for a compiled kernel: {os.strerror(err)}")
    return int(got)


class GmWindows:
    """Per-process windows of GM allocations: (segment, byte offset, bytes) -> window address."""

    def __init__(self, max_windows: int = MAX_WINDOWS) -> None:
        #: key -> (reserved base, reserved bytes): what unmapping it releases
        self._windows: dict[tuple[str, int, int], tuple[int, int]] = {}
        #: (segment, offset, bytes) -> :meth:`address`, for the windows mapped already (a launch
        #: looks its arguments up here first: one dict lookup per argument)
        self.mapped: dict[tuple[str, int, int], int] = {}
        self._fds: dict[str, int] = {}
        self.max_windows = max_windows
        #: counts the times windows were unmapped: an address taken before a change may be stale
        self.generation = 0

    def address(self, segment: str, offset: int, nbytes: int) -> int:
        """The address, in this process, at which byte ``offset`` of ``segment`` appears in the
        window of the allocation [offset, offset + nbytes)."""
        key = (segment, offset, nbytes)
        hit = self._windows.get(key)
        if hit is None:
            hit = self._windows[key] = self._map(segment, offset, nbytes)
        address = self.mapped[key] = hit[0] + offset % _PAGE
        return address

    def trim(self) -> int:
        """Before a launch maps its arguments: unmap the oldest windows beyond half of
        ``max_windows`` once there are more than ``max_windows``; how many were unmapped."""
        excess = len(self._windows) - self.max_windows // 2
        if len(self._windows) <= self.max_windows or excess <= 0:
            return 0
        self.generation += 1
        for key in list(self._windows)[:excess]:  # (insertion order: the oldest first)
            base, length = self._windows.pop(key)
            self.mapped.pop(key, None)
            _libc.munmap(base, length)
        return excess

    def close(self) -> None:
        """Unmap every window and close the segments' descriptors."""
        self.generation += 1
        for base, length in self._windows.values():
            _libc.munmap(base, length)
        self._windows.clear()
        self.mapped.clear()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __len__(self) -> int:
        return len(self._windows)

    def _map(self, segment: str, offset: int, nbytes: int) -> tuple[int, int]:
        fd = self._fds.get(segment)
        if fd is None:
            try:
                fd = self._fds[segment] = os.open(os.path.join("/dev/shm", segment), os.O_RDWR)
            except OSError as e:
                raise KernelAPIError(f"cannot open GM segment {segment}: {e}") from None
        first = offset - offset % _PAGE
        length = -(-(offset + max(nbytes, 1) - first) // _PAGE) * _PAGE
        # Reserve the window and its gap, then map the allocation's pages at the window's start.
        reserved = _mmap(None, length + GAP_BYTES, _PROT_NONE, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
        _mmap(reserved, length, _PROT_RW, _MAP_SHARED | _MAP_FIXED, fd, first)
        return reserved, length + GAP_BYTES


#: the windows of this (core) process
WINDOWS = GmWindows()
