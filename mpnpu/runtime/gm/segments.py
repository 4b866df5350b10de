"""GM's shared-memory segments: creating, attaching, prefaulting and closing them, and sweeping the
ones that dead runs left behind.

Segment names carry the creating process's pid and start time (``mpnpu_<pid>_<start>_<n>``), so a
segment whose creator is gone can be told from one that a live run owns, even if the pid was
reused. :func:`sweep_stale_segments` is an explicit step (every CLI runs it at start-up; library
users call it or pass ``Device(sweep_stale=True)``): constructing a device never touches another
run's segments. See docs/device-model.md, "GM and the caching allocator".
"""

from __future__ import annotations

import itertools
import mmap
import os
import re
import traceback
from multiprocessing import shared_memory

import numpy as np

from mpnpu.errors import GMAccessError, GMOutOfMemoryError, NotFoundError

from ..config import SEGMENT_PREFIX
from .tensor import GlobalTensor

_SHM_DIR = "/dev/shm"

_NAME_RE = re.compile(rf"^{re.escape(SEGMENT_PREFIX)}(\d+)_([0-9a-f]+)_\d+$")


def process_token(pid: int) -> str | None:
    """A token that tells a live process from a later one reusing its pid (its start time)."""
    try:
        import psutil

        return format(int(psutil.Process(pid).create_time() * 100), "x")
    except Exception:
        return None


def sweep_stale_segments() -> list[str]:
    """Unlink segments left in /dev/shm by mpnpu runs whose process is gone (e.g. SIGKILLed).

    Names carry the creating process's pid and start time, so a live run's segments are never
    touched, even if its pid was reused.
    """
    removed: list[str] = []
    try:
        entries = os.listdir(_SHM_DIR)
    except OSError:
        return removed
    for entry in entries:
        m = _NAME_RE.match(entry)
        if not m:
            continue
        pid, token = int(m.group(1)), m.group(2)
        if process_token(pid) == token:
            continue
        try:
            os.unlink(os.path.join(_SHM_DIR, entry))
            removed.append(entry)
        except OSError:
            pass
    return removed


class SegmentTable:
    """Shared-memory segments attached by name, and numpy views of GM tensors on them."""

    def __init__(self) -> None:
        self._segments: dict[str, shared_memory.SharedMemory] = {}
        self._addresses: dict[str, int] = {}

    def add(self, shm: shared_memory.SharedMemory) -> None:
        self._segments[shm.name] = shm

    def get(self, name: str) -> shared_memory.SharedMemory:
        shm = self._segments.get(name)
        if shm is None:
            shm = _attach(name)
            prefault(shm)
            self._segments[name] = shm
        return shm

    def array(self, t: GlobalTensor) -> np.ndarray:
        """A numpy view of the tensor's bytes (drop it before the segment is closed)."""
        if t.size == 0:
            return np.empty(t.shape, dtype=t.dtype.storage)
        if t.outside:  # (the kernel API and the host refuse such a view first, naming the access)
            raise GMAccessError(f"GM view outside its tensor: {t.outside}")
        shm = self.get(t.segment)
        view: np.ndarray = np.ndarray(t.shape, dtype=t.dtype.storage, buffer=shm.buf, offset=t.offset,
                                      strides=t.strides)
        return view

    def address(self, name: str) -> int:
        """The address at which segment ``name`` is mapped in this process (for front ends that hand
        raw GM pointers to compiled kernels); stable while the segment stays attached."""
        addr = self._addresses.get(name)
        if addr is None:
            buf = self.get(name).buf
            if buf is None:  # closed under us: not a state a caller can reach through the API
                raise NotFoundError(f"GM segment {name} is closed")
            view = np.frombuffer(buf, dtype=np.uint8)
            addr = self._addresses[name] = int(view.ctypes.data)
            del view  # (a live view would keep the segment from closing)
        return addr

    def names(self) -> list[str]:
        return list(self._segments)

    def pop(self, name: str) -> shared_memory.SharedMemory | None:
        self._addresses.pop(name, None)
        return self._segments.pop(name, None)


def _buffer(shm: shared_memory.SharedMemory) -> memoryview:
    buf = shm.buf
    assert buf is not None  # an open segment has its buffer
    return buf


def prefault(shm: shared_memory.SharedMemory) -> None:
    """Touch every page of a segment in this process now.

    Device memory is always mapped; a process touching a fresh page takes a fault instead. Left to
    happen inside a kernel, those faults would slow whichever core first touches a block, mostly
    in a batch's first repeat, and shift the race's odds for reasons the device does not have.
    """
    pages = np.frombuffer(_buffer(shm), dtype=np.uint8)[::_PAGE]
    try:
        int(pages.sum())
    finally:
        # Also when interrupted: a traceback keeping this frame must not keep the view (and with
        # it the mapping, which then could not be closed) alive.
        del pages


_PAGE = mmap.PAGESIZE


def _attach(name: str) -> shared_memory.SharedMemory:
    # Core processes share the parent's resource tracker (fork), so the duplicate registration an
    # attach makes before Python 3.13 is harmless; from 3.13 we can skip it.
    try:
        return shared_memory.SharedMemory(name=name, track=False)  # type: ignore[call-arg]
    except TypeError:
        return shared_memory.SharedMemory(name=name)


# Numbers segments across every GlobalMemory of the process: two Devices open at once must not
# pick the same name.
_SEGMENT_NUMBERS = itertools.count()

#: segments closed while a view of them was alive: kept mapped for the rest of the process
_STILL_MAPPED: list[shared_memory.SharedMemory] = []


def _still_mapped_close() -> None:
    """close() of a segment in _STILL_MAPPED: nothing to do until the process ends."""


def create_segment(nbytes: int, token: str) -> shared_memory.SharedMemory:
    """A new segment named for this process (``token``: its :func:`process_token`), every page written."""
    name = f"{SEGMENT_PREFIX}{os.getpid()}_{token}_{next(_SEGMENT_NUMBERS)}"
    try:
        shm = shared_memory.SharedMemory(name=name, create=True, size=nbytes)
    except OSError as e:
        raise GMOutOfMemoryError(f"cannot create a {nbytes}-byte GM segment: {e}") from None
    # Write every page once so that the segment's memory is really allocated now, not at
    # some first write inside a kernel (see prefault).
    view = np.frombuffer(_buffer(shm), dtype=np.uint8)
    try:
        view.fill(0)
    except BaseException as e:
        # Interrupted (Ctrl-C, SIGTERM: a slot being stopped) while zero-filling: nobody will ever
        # own this segment, so end it here, after dropping the views that would keep it mapped —
        # ours, and any a frame the exception came through holds — else SharedMemory.__del__
        # fails at exit with a BufferError on stderr.
        del view
        traceback.clear_frames(e.__traceback__)
        close_and_unlink(shm)
        raise
    del view
    return shm


def close_and_unlink(shm: shared_memory.SharedMemory) -> None:
    """Close a segment this process created and unlink its name."""
    try:
        shm.close()
    except BufferError:
        # A numpy view is still alive (e.g. in the frame of a write that Ctrl-C interrupted,
        # kept by the stored KeyboardInterrupt's traceback). Unmapping under it would crash
        # whoever touches it, so the mapping stays until the process ends; without this,
        # SharedMemory.__del__ would retry the close at exit and print the BufferError.
        _STILL_MAPPED.append(shm)
        shm.close = _still_mapped_close  # type: ignore[method-assign]
    try:
        shm.unlink()
    except FileNotFoundError:
        pass
