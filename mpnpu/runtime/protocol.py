"""The messages between the device (parent) and its core processes, as named types.

::

    parent ── LaunchCommand ──► core        core ── LaunchDone ──► parent   (kernel returned)
    parent ── ExitCommand ────► core        core ── LaunchFailed ─► parent  (kernel raised)

Both sides use only this module to build, send and read messages: nothing indexes a message by
position. On the pipe a message is a plain tuple ``(tag, *fields)``: pickling a tuple is several
times cheaper than pickling a NamedTuple (which pickles a reference to its class), and every
empty launch pays for one command and one reply per core. :func:`encode` and :func:`decode` turn
the named types into that tuple and back; :mod:`mpnpu.runtime.wire` frames the bytes.
"""

from __future__ import annotations

import pickle
from typing import Any, NamedTuple, Union

from . import wire


class LaunchCommand(NamedTuple):
    """Run one kernel launch (parent → every core)."""

    launch_id: int
    #: a checked kernel reference ("package.module:function", "path.py:function" or a kernel object);
    #: (handle, reference) the first time a pool's cores get it, the handle (an int) alone after that
    #: (a compiled kernel's reference costs microseconds to pickle and unpickle on every launch)
    kernel: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    dropped_syncs: frozenset[str]
    trace: bool
    hold: Any = None  # a mpnpu.runtime.hold.HoldPlan for a race-directed launch
    inserts: tuple[Any, ...] = ()  # mpnpu.runtime.insert.InsertedSync entries: syncs added at stage boundaries


class ExitCommand(NamedTuple):
    """Leave the serving loop and end the process (parent → core, at an orderly close)."""


class ErrorReport(NamedTuple):
    """What a core tells the parent about an exception its kernel raised."""

    type: str  # the exception's class name
    message: str
    traceback: str  # formatted in the core
    pickled: bytes | None  # the exception itself, when it pickles and unpickles
    secondary: bool  # a wait that timed out: most likely a consequence of another core's failure
    site: str = ""  # the kernel line the exception came from: where the kernel raised, or its call into mpnpu
    function: str = ""  # the kernel function of that line
    tail: str = ""  # the last frames of the traceback, formatted (what a report shows of it)


class LaunchDone(NamedTuple):
    """The kernel returned on this core (core → parent)."""

    launch_id: int
    core_id: int
    elapsed_s: float  # time inside the kernel function
    events: tuple[Any, ...] | None  # the core's trace events in program order, when the launch is traced
    flags_set: tuple[tuple[int, int], ...]  # (mode, id) of every flag the core set


class LaunchFailed(NamedTuple):
    """The kernel raised on this core (core → parent)."""

    launch_id: int
    core_id: int
    error: ErrorReport


Command = Union[LaunchCommand, ExitCommand]
Reply = Union[LaunchDone, LaunchFailed]
Message = Union[LaunchCommand, ExitCommand, LaunchDone, LaunchFailed]

_TYPES: tuple[type, ...] = (LaunchCommand, ExitCommand, LaunchDone, LaunchFailed)
_TAGS: dict[type, tuple[int]] = {t: (i,) for i, t in enumerate(_TYPES)}
_HIGHEST = pickle.HIGHEST_PROTOCOL
_new_tuple = tuple.__new__  # builds a NamedTuple from a tuple of its fields without calling __new__


def encode(message: Message) -> bytes:
    """The pickled form of a message: ``(tag, *fields)``. Raises if a field cannot be pickled."""
    return pickle.dumps(_TAGS[type(message)] + message, protocol=_HIGHEST)


def decode(data: bytes) -> Message:
    """The message :func:`encode` made these bytes from."""
    t = pickle.loads(data)
    return _new_tuple(_TYPES[t[0]], t[1:])  # type: ignore[no-any-return]


def frame(message: Message) -> bytes:
    """The bytes to write for one message (encode once, write to every core)."""
    return wire.frame(encode(message))


def send(fd: int, message: Message) -> bool:
    """Send one message on a pipe's file descriptor; False if the reader is gone."""
    return wire.send(fd, pickle.dumps(_TAGS[type(message)] + message, protocol=_HIGHEST))


def recv(fd: int) -> Message:
    """Receive one message (blocking). Raises EOFError when the writer is gone."""
    t = pickle.loads(wire.recv(fd))
    return _new_tuple(_TYPES[t[0]], t[1:])  # type: ignore[no-any-return]
