"""Length-prefixed messages over a pipe, with one system call each way where possible.

The framing is multiprocessing.Connection's (a 4-byte big-endian length, then the bytes), so either
end may also use a Connection. Going to the file descriptor directly saves the per-call Python
work of Connection.send_bytes/recv_bytes, which dominates an empty launch's cost (see
scripts/bench_runtime.py).
"""

from __future__ import annotations

import os
import struct

from mpnpu.errors import PipeClosedError, WireError

#: a frame's length: 4 bytes, big-endian (multiprocessing.Connection's framing; the native loop reads it too)
HEADER = struct.Struct("!i")
_CHUNK = 1 << 16
#: the first read of a message: enough for a command or an untraced reply, small enough that
#: allocating the buffer costs nothing (a larger message is read on in _CHUNK pieces)
_FIRST_READ = 4096


def frame(payload: bytes) -> bytes:
    """The bytes to write for one message."""
    if len(payload) >= 0x7FFFFFFF:
        raise WireError("message too large for one frame")
    return HEADER.pack(len(payload)) + payload


def write_all(fd: int, data: bytes) -> bool:
    """Write every byte; False if the reader is gone."""
    try:
        n = os.write(fd, data)  # one call for any message that fits the pipe: the common case
        if n == len(data):
            return True
        view = memoryview(data)[n:]
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

    Both ends of a pool's pipes alternate strictly (the parent sends one message, the core sends
    one reply), so at most one message is ever in the pipe: a small message arrives with a
    single read, header and body together.
    """
    data = os.read(fd, _FIRST_READ)
    if not data:
        raise PipeClosedError("the other end of the pipe is gone")
    while len(data) < HEADER.size:
        more = os.read(fd, HEADER.size - len(data))
        if not more:
            raise PipeClosedError("the other end of the pipe is gone")
        data += more
    (size,) = HEADER.unpack_from(data)
    if size < 0:
        raise WireError("oversized frame")
    end = HEADER.size + size
    if len(data) > end:
        raise WireError("protocol error: more than one message in the pipe")
    if len(data) == end:
        return data[HEADER.size:]
    return data[HEADER.size:] + read_exact(fd, end - len(data))


def read_exact(fd: int, n: int) -> bytes:
    """The next ``n`` bytes (blocking). Raises EOFError when the writer is gone first."""
    parts = []
    while n > 0:
        chunk = os.read(fd, min(n, _CHUNK))
        if not chunk:
            raise PipeClosedError("the other end of the pipe is gone")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)
