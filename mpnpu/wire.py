"""Length-prefixed messages over a pipe, with one system call each way where possible.

The framing is multiprocessing.Connection's (a 4-byte big-endian length, then the bytes), so either
end may also use a Connection. Going to the file descriptor directly saves the per-call Python
work of Connection.send_bytes/recv_bytes, which dominates an empty launch's cost (see
scripts/bench_runtime.py).
"""

from __future__ import annotations

import os
import struct

_HEADER = struct.Struct("!i")
_CHUNK = 1 << 16


def frame(payload: bytes) -> bytes:
    """The bytes to write for one message."""
    if len(payload) >= 0x7FFFFFFF:
        raise ValueError("message too large for one frame")
    return _HEADER.pack(len(payload)) + payload


def write_all(fd: int, data: bytes) -> bool:
    """Write every byte; False if the reader is gone."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        return False
    return True


def send(fd: int, payload: bytes) -> bool:
    """Send one message; False if the reader is gone."""
    return write_all(fd, frame(payload))


def recv(fd: int) -> bytes:
    """Receive one message (blocking). Raises EOFError when the writer is gone.

    Reads at most one message's bytes, so messages queued behind it stay in the pipe.
    """
    head = os.read(fd, _HEADER.size)
    if not head:
        raise EOFError
    while len(head) < _HEADER.size:
        more = os.read(fd, _HEADER.size - len(head))
        if not more:
            raise EOFError
        head += more
    (size,) = _HEADER.unpack(head)
    if size < 0:
        raise ValueError("oversized frame")
    parts = []
    remaining = size
    while remaining:
        chunk = os.read(fd, min(remaining, _CHUNK))
        if not chunk:
            raise EOFError
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)
