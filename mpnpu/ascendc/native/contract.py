"""Everything the core process's Python and a kernel library's C++ both rely on, in one registry.

::

    mpnpu.runtime (CoreState, the status board's ST_* columns,       ┐
      the frame layouts of protocol and wire, flag ids and modes)    ├─► CONSTANTS, LAYOUTS ─► contract.h
    mpnpu.ascendc.native.abi (the ABI's numbers and enums)           ┘     (#define MPNPU_...)
    mpnpu.ascendc.native.abi (every ctypes mirror of an abi.h struct) ──► STRUCTS ─► contract_checks.h
                                                                           (static_assert per field)

Python owns each of these: the C++ side never writes the number again, it includes the generated
``include/mpnpu/native/contract.h`` (:mod:`mpnpu.ascendc.build.contract_header` writes it and
``contract_checks.h``; tests/test_ascendc_contract.py fails when either is out of date or when a
compiled program disagrees with a value here). The structs of abi.h are written in C (their
pointers are typed there) and mirrored in ctypes; every build checks each field's offset and size
against the mirror, so neither side can change alone.

Nothing here is a list kept by hand of what to check: the constants and enums are named below
once, where their C names are given, and the structs are found in :mod:`.abi` (every ctypes
Structure there is the mirror of the abi.h struct ``Mpnpu<its name>``).
"""

from __future__ import annotations

import ctypes
import enum
from dataclasses import dataclass
from typing import Sequence, Union

import numpy as np

from mpnpu.ascendc import matmul_tiling
from mpnpu.errors import UsageError
from mpnpu.runtime import protocol, sync, topology, wire

from . import abi


@dataclass(frozen=True)
class Constant:
    """One number both languages use: its C name (a macro of contract.h) and its value."""

    name: str
    value: int
    doc: str
    #: a comment contract.h puts above this one (the first of a group)
    heading: str = ""


@dataclass(frozen=True)
class StructMirror:
    """An abi.h struct (``c_name``) and its Python mirror: a ctypes Structure, or a numpy dtype
    (a record Python reads in bulk)."""

    c_name: str
    mirror: Union[type[ctypes.Structure], np.dtype]

    def size(self) -> int:
        """The mirror's size in bytes."""
        if isinstance(self.mirror, np.dtype):
            return int(self.mirror.itemsize)
        return ctypes.sizeof(self.mirror)

    def fields(self) -> list[tuple[str, int, int]]:
        """(name, offset, bytes) of each field of the mirror."""
        if isinstance(self.mirror, np.dtype):
            names = self.mirror.names or ()
            return [(n, int(self.mirror.fields[n][1]), int(self.mirror.fields[n][0].itemsize))  # type: ignore[index]
                    for n in names]
        return [(name, getattr(self.mirror, name).offset, getattr(self.mirror, name).size)
                for name, *_ in self.mirror._fields_]


#: enums whose members are C macros ``<prefix><member name>``
ENUMS: tuple[tuple[str, type[enum.IntEnum]], ...] = (
    ("MPNPU_STATE_", sync.CoreState),
    ("MPNPU_KT_", abi.KernelTypeNumber),
    ("MPNPU_PIPES_", abi.PipesFlag),
    ("MPNPU_RUN_", abi.RunResult),
    ("MPNPU_FAULT_", abi.FaultKind),
    ("MPNPU_EV_", abi.EventType),
    ("MPNPU_MEM_", abi.Memory),
    ("MPNPU_NATIVE_", abi.NativeSyncError),
    ("MPNPU_INS_", abi.InsertKind),
    ("MPNPU_DROPPED_", abi.DroppedCall),
    ("MPNPU_SERVE_", abi.ServeResult),
)

#: frame layouts whose fields are C macros ``<prefix>BYTES``, ``<prefix><FIELD>_AT``, ``<prefix><FIELD>_BYTES``
LAYOUTS: tuple[tuple[str, protocol.Layout], ...] = (
    ("MPNPU_NATIVE_CMD_", protocol.NATIVE_HEAD),
    ("MPNPU_NATIVE_ARG_", protocol.NATIVE_ARG),
    ("MPNPU_DONE_", protocol.DONE_HEAD),
    ("MPNPU_DONE_FLAG_", protocol.DONE_FLAG),
)


def _status_columns() -> list[Constant]:
    """The status board's columns: every ``ST_*`` of mpnpu.runtime.sync (found, not listed)."""
    found = sorted((value, name) for name, value in vars(sync).items()
                   if name.startswith("ST_") and type(value) is int)
    return [Constant(f"MPNPU_{name}", value, "a status board column (mpnpu.runtime.sync)") for value, name in found]


def constants() -> list[Constant]:
    """Every number of the contract, as the C macros contract.h defines (in its order)."""
    out = [
        Constant("MPNPU_ABI_VERSION", abi.ABI_VERSION, "the ABI's layout; a library built for another is refused"),
        Constant("MPNPU_ANY_MODE", abi.ANY_MODE, "a flag wait that names no mode"),
        Constant("MPNPU_SYNC_BY_LIBRARY", abi.SYNC_BY_LIBRARY, "a sync record's mem bit: a high-level API issued "
                                                               "it inside itself (not droppable, no mutant)"),
        Constant("MPNPU_GM_FLAG_MODE", abi.GM_FLAG_MODE, "the board's wait mode of a wait on a flag kept in GM"),
        Constant("MPNPU_FLAG_IDS", topology.FLAG_IDS, "cross-core flag ids per mode (a flag's bit: mode * "
                                                      "MPNPU_FLAG_IDS + id)"),
        Constant("MPNPU_FLAG_MODES", len(topology.FLAG_MODES), "cross-core flag modes (0, 1, 2)"),
        Constant("MPNPU_NATIVE_MAX_ROUTES", abi.NATIVE_MAX_ROUTES, "routes of one core's end of a native flag"),
        Constant("MPNPU_SERVE_MAX_ENTRIES", abi.SERVE_MAX_ENTRIES, "kernels a native serving loop holds"),
        Constant("MPNPU_SERVE_MAX_ARGS", abi.SERVE_MAX_ARGS, "a registered kernel's parameters at most"),
        Constant("MPNPU_MEM_COUNT", len(abi.Memory), "local memories (MPNPU_MEM_*)"),
        Constant("MPNPU_KFC_PROTO_BYTES", matmul_tiling.KFC_PROTO_BYTES, "a matmul server's message rings per AI core"),
        Constant("MPNPU_KFC_STAGE_BYTES", matmul_tiling.KFC_STAGE_BYTES, "a matmul server's C staging per object and "
                                                                          "client"),
        Constant("MPNPU_KFC_MAX_OBJECTS", matmul_tiling.KFC_MAX_OBJECTS, "Matmul objects one REGIST_MATMUL_OBJ takes"),
        Constant("MPNPU_WHERE_SIGNAL", int(sync.WHERE_SIGNAL), "the signal the watchdog asks a core where it is "
                                                               "with (mpnpu.runtime.sync.WHERE_SIGNAL)"),
        *_status_columns(),
        Constant("MPNPU_FRAME_HEADER_BYTES", wire.HEADER.size, "a frame's length prefix (mpnpu.runtime.wire)"),
        Constant("MPNPU_FRAME_HEADER_BIG_ENDIAN", 1 if wire.HEADER.format[0] in "!>" else 0,
                 "the length prefix's byte order (1: big-endian)"),
        Constant("MPNPU_NATIVE_CMD_MAGIC", protocol.NATIVE_MAGIC, "a native command's first byte ('N')"),
        Constant("MPNPU_DONE_MAGIC", protocol.DONE_MAGIC, "a done reply's first byte ('D')"),
    ]
    for prefix, group in ENUMS:
        heading = f"{group.__module__}.{group.__name__}: {' '.join((group.__doc__ or '').split())}"
        out += [Constant(prefix + member.name, int(member), f"{group.__name__}.{member.name}",
                         heading if i == 0 else "") for i, member in enumerate(group)]
    for prefix, layout in LAYOUTS:
        out.append(Constant(prefix + "BYTES", layout.size, "bytes", f"{layout.doc} (mpnpu.runtime.protocol)"))
        for name, (at, size) in layout.offsets.items():
            out.append(Constant(f"{prefix}{name.upper()}_AT", at, f"offset of {name}"))
            out.append(Constant(f"{prefix}{name.upper()}_BYTES", size, f"bytes of {name}"))
    return out


def structs() -> list[StructMirror]:
    """Every abi.h struct with its mirror: each ctypes Structure of :mod:`.abi` (``Foo`` mirrors
    ``MpnpuFoo``), and the trace record numpy reads (MpnpuEvent, :data:`.abi.EVENT_DTYPE`)."""
    found = [StructMirror("Mpnpu" + name, value) for name, value in vars(abi).items()
             if isinstance(value, type) and issubclass(value, ctypes.Structure) and value.__module__ == abi.__name__]
    return [*found, StructMirror("MpnpuEvent", abi.EVENT_DTYPE)]


def check_unique(items: Sequence[Constant]) -> None:
    """Raise if two constants share a C name (the registry's own consistency)."""
    seen: dict[str, int] = {}
    for c in items:
        if c.name in seen:
            raise UsageError(f"the Python/C++ contract defines {c.name} twice, as {seen[c.name]} and {c.value}")
        seen[c.name] = c.value
