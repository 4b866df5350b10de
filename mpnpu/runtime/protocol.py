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

import hashlib
import pickle
import struct
from typing import Any, NamedTuple, Sequence, Union

from . import wire
from .gm import GlobalTensor


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
    events: Sequence[Any] | None  # the core's trace events in program order (PackedEvents), when traced
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
    """The message :func:`encode`, :func:`frame_native` or a native serving loop made these bytes from."""
    first = data[0] if data else 0
    if first == NATIVE_MAGIC:  # a native command: the pickled command is its tail
        (tail,) = _TAIL.unpack_from(data, _TAIL_AT)
        data = data[tail:]
    elif first == DONE_MAGIC:
        return decode_done(data)
    t = pickle.loads(data)
    return _new_tuple(_TYPES[t[0]], t[1:])  # type: ignore[no-any-return]


# -- the native frames (a compiled kernel's serving loop, mpnpu/ascendc/include/mpnpu/native/serve.h) ------
#
# A launch a compiled kernel's native loop can run in a core process is sent as a *native command*:
# a fixed header, each argument's place in GM as four integers, then the pickled LaunchCommand, so
# that a core that cannot run it natively (or has no such loop) reads the command as ever. The
# loop's reply is a *done reply*: a LaunchDone as a few packed fields. Both ends are processes of
# one machine: native byte order. (A pickle starts with its PROTO opcode, 0x80: never 'N' or 'D'.)
#
# The layouts below are the only definition of these frames: the C++ loop reads and writes them at
# the offsets generated from them (include/mpnpu/native/contract.h, mpnpu.ascendc.native.contract).


class Layout:
    """A record of named fields packed by one ``struct`` format: the bytes Python packs, and the
    offset and size of each field, which the C++ side is generated from. ``fields``: (name, format
    code) in order; a name of "" is padding."""

    def __init__(self, doc: str, fields: Sequence[tuple[str, str]]) -> None:
        self.doc = doc
        self.fields = tuple(fields)
        self.struct = struct.Struct("=" + "".join(code for _, code in self.fields))
        self.size = self.struct.size
        offsets: dict[str, tuple[int, int]] = {}
        fmt = "="
        for name, code in self.fields:
            at = struct.calcsize(fmt)
            fmt += code
            if name:
                offsets[name] = (at, struct.calcsize(fmt) - at)
        #: field name -> (offset, bytes)
        self.offsets = offsets


#: the first byte of a native command's and of a done reply's payload
NATIVE_MAGIC, DONE_MAGIC = ord("N"), ord("D")
#: a native command's fixed part; ``tail``: where the pickled command starts, from the payload's start
NATIVE_HEAD = Layout("a native command's fixed part (then n_args NATIVE_ARG records, then the pickled command)",
                     (("magic", "B"), ("", "7x"), ("launch_id", "q"), ("handle", "q"), ("n_args", "i"),
                      ("tail", "I")))
#: one argument of a native command: a GM tensor's allocation (segment key 0: a scalar, its 64-bit
#: slot in ``offset``, or a null pointer)
NATIVE_ARG = Layout("one argument of a native command",
                    (("segment", "Q"), ("offset", "Q"), ("root_offset", "Q"), ("root_nbytes", "Q")))
#: a done reply's fixed part (then n_flags DONE_FLAG records)
DONE_HEAD = Layout("a done reply's fixed part (then n_flags DONE_FLAG records)",
                   (("magic", "B"), ("", "3x"), ("core_id", "i"), ("launch_id", "q"), ("elapsed_s", "d"),
                    ("n_flags", "i")))
#: one flag a done reply says the core set
DONE_FLAG = Layout("one flag (mode, id) a done reply says the core set", (("mode", "h"), ("flag_id", "h")))

_NATIVE_HEAD = NATIVE_HEAD.struct
_TAIL_AT = NATIVE_HEAD.offsets["tail"][0]
_TAIL = struct.Struct("=I")
_DONE_HEAD = DONE_HEAD.struct
_ARG_STRUCTS: dict[int, struct.Struct] = {}
_SEGMENT_KEYS: dict[str, int] = {}


def segment_key(name: str) -> int:
    """A GM segment's name as the non-zero 64-bit number native frames carry (the same in every process)."""
    key = _SEGMENT_KEYS.get(name)
    if key is None:
        key = _SEGMENT_KEYS[name] = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(),
                                                   "little") | 1
    return key


def frame_native(command: LaunchCommand, handle: int, args: Sequence[Any], kinds: Sequence[str]) -> bytes | None:
    """The framed native command of ``command`` (its kernel named by ``handle``, its parameters of
    ``kinds``: "p" a pointer, "f"/"d" a float/double, "i<n>"/"u<n>" an integer of n bytes), or None
    when an argument does not fit its kind (such a launch goes as a plain frame, and the core says why)."""
    n = len(args)
    if n != len(kinds):
        return None
    values: list[int] = []
    for a, kind in zip(args, kinds):
        if kind == "p":
            if type(a) is GlobalTensor:
                segment = a.segment
                if segment:
                    values += (_SEGMENT_KEYS.get(segment) or segment_key(segment), a.offset, a.root_offset,
                               a.root_nbytes)
                    continue
            elif a is not None:
                return None
            values += (0, 0, 0, 0)  # (None, or a tensor without elements: a null pointer)
            continue
        # A scalar: segment key 0 and its 64-bit slot, as the core's own path makes it (bridge.slots_of).
        if type(a) is GlobalTensor or a is None or isinstance(a, bool) and kind in ("f", "d"):
            return None
        # (struct, not bridge.slots_of's numpy conversion: a float out of float32's range raises here,
        # and the launch goes as a plain frame, rather than warning in the parent)
        try:
            if kind == "f":
                slot = _F32.unpack(_F32_PACK.pack(float(a)))[0]
            elif kind == "d":
                slot = _F64.unpack(_F64_PACK.pack(float(a)))[0]
            else:
                slot = int(a) & 0xFFFF_FFFF_FFFF_FFFF
        except (TypeError, ValueError, OverflowError):
            return None
        values += (0, slot, 0, 0)
    packer = _ARG_STRUCTS.get(n)
    if packer is None:
        packer = _ARG_STRUCTS[n] = struct.Struct("=" + NATIVE_ARG.struct.format[1:] * n)
    tail = _NATIVE_HEAD.size + packer.size
    pickled = pickle.dumps(_TAGS[LaunchCommand] + command, protocol=_HIGHEST)
    return wire.frame(_NATIVE_HEAD.pack(NATIVE_MAGIC, command.launch_id, handle, n, tail) + packer.pack(*values)
                      + pickled)


_F32_PACK, _F32 = struct.Struct("=f"), struct.Struct("=I")
_F64_PACK, _F64 = struct.Struct("=d"), struct.Struct("=Q")


def decode_done(data: bytes) -> LaunchDone:
    """The LaunchDone of a done reply."""
    _, core_id, launch_id, elapsed, n = _DONE_HEAD.unpack_from(data)
    raw = struct.unpack_from("=" + DONE_FLAG.struct.format[1:] * n, data, _DONE_HEAD.size) if n else ()
    flags = tuple((raw[2 * i], raw[2 * i + 1]) for i in range(n))
    return LaunchDone(launch_id, core_id, elapsed, None, flags)


def frame(message: Message) -> bytes:
    """The bytes to write for one message (encode once, write to every core)."""
    return wire.frame(encode(message))


def send(fd: int, message: Message) -> bool:
    """Send one message on a pipe's file descriptor; False if the reader is gone."""
    return wire.send(fd, pickle.dumps(_TAGS[type(message)] + message, protocol=_HIGHEST))


def recv(fd: int) -> Message:
    """Receive one message (blocking). Raises EOFError when the writer is gone."""
    return decode(wire.recv(fd))
