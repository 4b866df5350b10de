"""The C ABI of a compiled kernel library, seen from Python: ctypes mirrors of
``include/mpnpu/native/abi.h``'s structs, and the ABI's numbers.

The numbers are defined here, once: ``include/mpnpu/native/contract.h`` is generated from them
(:mod:`mpnpu.ascendc.build.contract_header`), and ``contract_checks.h`` makes every build check
that each struct of abi.h has the layout of its ctypes mirror below (:mod:`.contract` lists both).
"""

from __future__ import annotations

import ctypes
import enum

import numpy as np

from mpnpu.runtime.sync import GM_FLAG_MODE as GM_FLAG_MODE  # (re-exported: the board's mode of a GM flag wait)
from mpnpu.runtime.topology import FLAG_IDS as FLAG_IDS  # (re-exported: the ABI's flag bits are mode * FLAG_IDS + id)

#: the layout both sides use; a library built for another is refused (rebuilt)
ABI_VERSION = 10
#: a flag wait's mode when it names none (it consumes sets in whatever mode they were made)
ANY_MODE = 0xFF
#: a sync record's ``mem`` bit (pipe syncs, cross-core flag sets and waits): a high-level API issued it
#: inside itself (Matmul's barriers and its messages to the cube core). Such a sync orders accesses as
#: any other, but it is not a sync point of the kernel's own: a launch cannot drop it and mutation
#: testing makes no mutant of it (the flag mode is ``mem`` without this bit)
SYNC_BY_LIBRARY = 0x80
#: the flag routes one core's end of a native flag holds at most, each way
NATIVE_MAX_ROUTES = 4
#: the kernels a native serving loop may have registered
SERVE_MAX_ENTRIES = 32
#: a registered kernel's parameters at most (its slot and region arrays)
SERVE_MAX_ARGS = 64


class KernelTypeNumber(enum.IntEnum):
    """Kernel types (KERNEL_TYPE_* of the Ascend C kernel API, in its order): MPNPU_KT_*."""

    AIV_ONLY = 0
    AIC_ONLY = 1
    MIX_AIV_1_0 = 2
    MIX_AIC_1_0 = 3
    MIX_AIC_1_1 = 4
    MIX_AIC_1_2 = 5


class PipesFlag(enum.IntEnum):
    """How a launch's core runs its pipes (MpnpuLaunch.pipes, a mask): MPNPU_PIPES_*."""

    #: MTE1/MTE2/MTE3/FIX asynchronous, each in issue order (unset: every instruction at issue)
    ASYNC = 1
    #: the compiler's automatic synchronisation: a scalar access of local memory waits for the
    #: queued MTE2/MTE3 instructions that touch its bytes (docs/pipes.md)
    AUTO_SYNC = 2


class RunResult(enum.IntEnum):
    """What mpnpu_run returns: MPNPU_RUN_*."""

    OK = 0
    FAULT = 1  # the library reported a fault (mpnpu_fault)
    CORE_CALL_ERROR = 2  # a callback into the core process raised (it keeps the exception)
    CXX_EXCEPTION = 3  # the kernel threw


class FaultKind(enum.IntEnum):
    """What stopped a kernel (MpnpuFault.kind): MPNPU_FAULT_*."""

    API = 1  # the kernel API was used in a way the device does not allow
    ILLEGAL_READ = 2  # memcheck
    ILLEGAL_WRITE = 3
    UNSUPPORTED = 4  # a call or form mpnpu does not implement


class EventType(enum.IntEnum):
    """A trace record's type (MpnpuEvent.type): MPNPU_EV_*."""

    GM = 1
    LOCAL = 2
    SYNC_ALL = 3
    FLAG_SET = 4
    FLAG_WAIT = 5
    PIPE_SYNC = 6
    DROPPED = 7
    GM_FLAG = 8  # kind 'r' a release, 'w' a wait; index: region, start: byte offset, count: a wait's target


class Memory(enum.IntEnum):
    """Local memories (MpnpuEvent.mem, MpnpuFault.mem): MPNPU_MEM_*."""

    UB = 0
    L1 = 1
    L0A = 2
    L0B = 3
    L0C = 4
    BT = 5
    FB = 6
    SPR = 7  # a core's special registers as bytes: [0, 8) GetAccVal's accumulator, [8, 16) GetMrgSortResult's counts


class NativeSyncError(enum.IntEnum):
    """What a sync the library made natively reports through sync_error: MPNPU_NATIVE_*."""

    SYNC_ALL_TIMEOUT = 1  # a: aiv_only, b: this core's SyncAll count
    FLAG_TIMEOUT = 2  # a: mode (-1: unknown), b: flag id
    FLAG_OVERFLOW = 3  # a: mode, b: flag id, c: receiver
    BARRIER_STATE = 4  # the barrier's words are not in a state its protocol allows


class InsertKind(enum.IntEnum):
    """A sync a launch inserts at a function boundary (MpnpuInsert.kind): MPNPU_INS_*."""

    SYNC_ALL = 0
    SYNC_AIV = 1
    FLAG_SET = 2
    FLAG_WAIT = 3


class DroppedCall(enum.IntEnum):
    """Which call a dropped sync point skipped (a DROPPED record's index): MPNPU_DROPPED_*; the
    member names, lower case, are the runtime's names of those calls (:data:`DROPPED_CALLS`)."""

    SYNC_ALL = 0
    CROSS_CORE_SET_FLAG = 1
    CROSS_CORE_WAIT_FLAG = 2
    SET_FLAG = 3
    WAIT_FLAG = 4
    PIPE_BARRIER = 5


class ServeResult(enum.IntEnum):
    """What mpnpu_serve returns: why the native serving loop handed control back to the core
    process (MPNPU_SERVE_*; :meth:`mpnpu.ascendc.native.serve.NativeLoop.serve`)."""

    FRAME = 1  # buf holds a frame for the core process (frame_len > buf_len: read the rest)
    FAILED = 2  # a native launch's kernel failed (rc, launch_id, entry; buf holds its frame)
    IDLE = 3  # no command for a second (the core process looks at its parent)
    CLOSED = 4  # the pipe closed
    #: a native launch ran; its reply does not fit the board's row or the lock timed out: the
    #: core process replies (elapsed_s, flags_mask)
    REPLY = 5
    #: a native launch ran and was replied to, and the CPUs this process may use are not as many
    #: as the wait budget was worked out for (spin_cpus): the core process works it out again
    #: (mpnpu.runtime.spin owns the rule) and calls the loop again
    RESPIN = 6


# (plain ints for the hot paths and the many readers: derived from the enums above)
KT_AIV_ONLY, KT_AIC_ONLY, KT_MIX_AIV_1_0, KT_MIX_AIC_1_0, KT_MIX_AIC_1_1, KT_MIX_AIC_1_2 = map(int, KernelTypeNumber)
RUN_OK, RUN_FAULT, RUN_CORE_CALL_ERROR, RUN_CXX_EXCEPTION = map(int, RunResult)
FAULT_API, FAULT_ILLEGAL_READ, FAULT_ILLEGAL_WRITE, FAULT_UNSUPPORTED = map(int, FaultKind)
EV_GM, EV_LOCAL, EV_SYNC_ALL, EV_FLAG_SET, EV_FLAG_WAIT, EV_PIPE_SYNC, EV_DROPPED, EV_GM_FLAG = map(int, EventType)
NATIVE_SYNC_ALL_TIMEOUT, NATIVE_FLAG_TIMEOUT, NATIVE_FLAG_OVERFLOW, NATIVE_BARRIER_STATE = map(int, NativeSyncError)
INS_SYNC_ALL, INS_SYNC_AIV, INS_FLAG_SET, INS_FLAG_WAIT = map(int, InsertKind)
#: the local memories' names, by MPNPU_MEM_* number
MEMORY_NAMES = tuple(m.name for m in Memory)

#: pipe numbers of the kernel API's pipe_t -> mpnpu's pipe names
PIPE_NAMES = ("PIPE_S", "PIPE_V", "PIPE_M", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3", "PIPE_ALL", "PIPE_FIX")
#: HardEvent numbers of include/mpnpu/types.h -> names
HARD_EVENTS = (
    "MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3", "M_V", "V_M", "V_V",
    "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2", "V_MTE1", "M_FIX", "FIX_M", "MTE3_MTE2", "MTE2_MTE3",
    "S_V", "V_S", "S_MTE2", "MTE2_S", "S_MTE3", "MTE3_S", "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S", "FIX_MTE3",
    "MTE1_FIX", "FIX_MTE1", "FIX_FIX", "S_M", "S_MTE1", "S_FIX",
)
#: the calls a dropped sync point skipped (:class:`DroppedCall`, by number) -> the runtime's names
DROPPED_CALLS = tuple(call.name.lower() for call in DroppedCall)

SyncAllFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
FlagSetFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
FlagWaitFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                              ctypes.POINTER(ctypes.c_int32))
HoldFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
SyncErrorFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)


class CoreCalls(ctypes.Structure):
    _fields_ = [("sync_all", SyncAllFn), ("flag_set", FlagSetFn), ("flag_wait", FlagWaitFn), ("hold", HoldFn),
                ("sync_error", SyncErrorFn)]


# -- syncs the library drives itself on the core process's objects (include/mpnpu/native/native_sync.h) --------

class NativeBarrier(ctypes.Structure):
    _fields_ = [("lock", ctypes.c_void_p), ("sleeping", ctypes.c_void_p), ("woken", ctypes.c_void_p),
                ("wait_sem", ctypes.c_void_p), ("words", ctypes.c_void_p), ("parties", ctypes.c_int32),
                ("pad", ctypes.c_int32)]


class NativeFlag(ctypes.Structure):
    _fields_ = [("valid", ctypes.c_int32), ("n_out", ctypes.c_int32), ("n_in", ctypes.c_int32),
                ("pad", ctypes.c_int32), ("out_receiver", ctypes.c_int32 * NATIVE_MAX_ROUTES),
                ("out_sem", ctypes.c_void_p * NATIVE_MAX_ROUTES), ("out_wake", ctypes.c_void_p * NATIVE_MAX_ROUTES),
                ("in_sem", ctypes.c_void_p * NATIVE_MAX_ROUTES)]


class NativeSync(ctypes.Structure):
    _fields_ = [("abi", ctypes.c_int32), ("core_id", ctypes.c_int32), ("status", ctypes.c_void_p),
                ("st_columns", ctypes.c_int32), ("flag_counter_max", ctypes.c_int32),
                ("flag_modes", ctypes.c_void_p), ("timeout_ns", ctypes.c_uint64),
                ("barrier_all", NativeBarrier), ("barrier_aiv", NativeBarrier),
                ("flags", (NativeFlag * FLAG_IDS) * 3), ("mode_wake", ctypes.c_void_p), ("used", ctypes.c_void_p),
                ("spin_ns", ctypes.c_uint64)]


class Region(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint64), ("size", ctypes.c_uint64)]


class Insert(ctypes.Structure):
    _fields_ = [
        ("fn_offset", ctypes.c_uint64),
        ("at_entry", ctypes.c_int32),
        ("kind", ctypes.c_int32),
        ("mode", ctypes.c_int32),
        ("flag_id", ctypes.c_int32),
        ("name", ctypes.c_char_p),
        ("stage", ctypes.c_char_p),
    ]


class Launch(ctypes.Structure):
    _fields_ = [
        ("abi", ctypes.c_int32),
        ("core_type", ctypes.c_int32),
        ("kernel_type", ctypes.c_int32),
        ("block_idx", ctypes.c_int32),
        ("block_num", ctypes.c_int32),
        ("subblock_idx", ctypes.c_int32),
        ("subblock_num", ctypes.c_int32),
        ("task_ration", ctypes.c_int32),
        ("trace", ctypes.c_int32),
        ("memcheck", ctypes.c_int32),
        ("tiling_key", ctypes.c_uint64),
        ("n_regions", ctypes.c_int32),
        ("regions", ctypes.POINTER(Region)),
        ("n_dropped", ctypes.c_int32),
        ("dropped", ctypes.POINTER(ctypes.c_char_p)),
        ("hold_site", ctypes.c_char_p),
        ("core_calls", ctypes.POINTER(CoreCalls)),
        ("sys_workspace_bytes", ctypes.c_uint64),
        ("last_words", ctypes.c_void_p),
        ("last_words_size", ctypes.c_int32),
        ("pipes", ctypes.c_int32),
        ("pipe_latency_ns", ctypes.c_uint64),
        ("sync_timeout_ns", ctypes.c_uint64),
        ("n_inserts", ctypes.c_int32),
        ("inserts", ctypes.POINTER(Insert)),
        ("native", ctypes.POINTER(NativeSync)),
        ("calls", ctypes.c_void_p),
        ("where", ctypes.c_void_p),
        ("where_size", ctypes.c_int32),
        ("host_mode", ctypes.c_int32),
        ("sys_fallback", ctypes.c_uint64),
    ]


class Fault(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int32),
        ("site", ctypes.c_int32),
        ("region", ctypes.c_int32),
        ("mem", ctypes.c_int32),
        ("start", ctypes.c_uint64),
        ("stop", ctypes.c_uint64),
        ("limit_lo", ctypes.c_uint64),
        ("limit_hi", ctypes.c_uint64),
        ("message", ctypes.c_char * 512),
    ]


# -- a CPU-debug program's launches (include/mpnpu/cpudebug.h, mpnpu.tools.cpudebug) --------------------

class CpuDebugLaunch(ctypes.Structure):
    """One ICPU_RUN_KF: what a host program asks mpnpu to launch (mpnpu.tools.cpudebug)."""


    _fields_ = [
        ("abi", ctypes.c_int32),
        ("kernel", ctypes.c_char_p),
        ("file", ctypes.c_char_p),
        ("line", ctypes.c_int32),
        ("block_dim", ctypes.c_int32),
        ("kernel_mode", ctypes.c_int32),
        ("tiling_key", ctypes.c_uint64),
        ("fn", ctypes.c_void_p),
        ("signature", ctypes.c_char_p),
        ("n_args", ctypes.c_int32),
        ("slots", ctypes.POINTER(ctypes.c_uint64)),
        ("arg_names", ctypes.c_char_p),
        ("exports", ctypes.c_void_p),
    ]


class Exports(ctypes.Structure):
    """The table a program that links its kernel in hands over instead of a library's symbols."""


    _fields_ = [
        ("abi", ctypes.c_int32),
        ("run", ctypes.c_void_p),
        ("events", ctypes.c_void_p),
        ("site", ctypes.c_void_p),
        ("fault", ctypes.c_void_p),
    ]


# -- the native serving loop (include/mpnpu/native/serve.h) ----------------------------------------------------

class ServeEntry(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_int64), ("run", ctypes.c_void_p), ("launch", ctypes.c_void_p),
                ("slots", ctypes.c_void_p), ("regions", ctypes.c_void_p), ("n_params", ctypes.c_int32),
                ("memcheck", ctypes.c_int32), ("tiling_key", ctypes.c_uint64),
                ("sys_workspace_bytes", ctypes.c_uint64), ("used", ctypes.c_void_p)]


class ServeWindow(ctypes.Structure):
    _fields_ = [("segment", ctypes.c_uint64), ("root_offset", ctypes.c_uint64), ("nbytes", ctypes.c_uint64),
                ("addr", ctypes.c_uint64)]


class Serve(ctypes.Structure):
    _fields_ = [
        ("abi", ctypes.c_int32), ("fd", ctypes.c_int32), ("core_id", ctypes.c_int32), ("n_cores", ctypes.c_int32),
        ("n_entries", ctypes.c_int32), ("replied", ctypes.c_int32),
        ("entries", ServeEntry * SERVE_MAX_ENTRIES),
        ("windows", ctypes.c_void_p), ("window_mask", ctypes.c_uint64),
        ("rows", ctypes.c_void_p), ("row_size", ctypes.c_int32), ("row_flags", ctypes.c_int32),
        ("off_launch_id", ctypes.c_int32), ("off_elapsed", ctypes.c_int32), ("off_n_flags", ctypes.c_int32),
        ("off_flags", ctypes.c_int32), ("done", ctypes.c_void_p), ("board_lock", ctypes.c_void_p),
        ("status", ctypes.c_void_p), ("st_columns", ctypes.c_int32), ("spin_cpus", ctypes.c_int32),
        ("spin_ns", ctypes.c_uint64),
        ("timeout_ns", ctypes.c_uint64),
        ("buf", ctypes.c_void_p), ("buf_cap", ctypes.c_int64), ("buf_len", ctypes.c_int64),
        ("frame_len", ctypes.c_int64),
        ("launch_id", ctypes.c_int64), ("entry", ctypes.c_int32), ("rc", ctypes.c_int32),
        ("elapsed_s", ctypes.c_double), ("flags_mask", ctypes.c_uint64), ("extra_used", ctypes.c_uint64),
        ("served", ctypes.c_uint64),
    ]


#: one MpnpuEvent record, as numpy reads the library's trace buffer
EVENT_DTYPE = np.dtype([
    ("type", np.uint8), ("kind", np.uint8), ("pipe", np.uint8), ("mem", np.uint8),
    ("site", np.int32), ("index", np.int32), ("aux", np.int32),
    ("start", np.uint64), ("run", np.uint64), ("stride", np.uint64), ("count", np.uint64),
    ("t0", np.uint64), ("t1", np.uint64),
])
assert EVENT_DTYPE.itemsize == 64, "MpnpuEvent is 64 bytes in abi.h"


def declare(lib: ctypes.CDLL) -> None:
    """Give the library's exported functions their C signatures."""
    lib.mpnpu_abi_version.restype = ctypes.c_int32
    lib.mpnpu_abi_version.argtypes = []
    lib.mpnpu_entry_signature.restype = ctypes.c_char_p
    lib.mpnpu_entry_signature.argtypes = []
    lib.mpnpu_run.restype = ctypes.c_int32
    lib.mpnpu_run.argtypes = [ctypes.POINTER(Launch), ctypes.POINTER(ctypes.c_uint64), ctypes.c_int32]
    # (a Launch passed as itself is taken by reference: no byref() per call)
    lib.mpnpu_events.restype = ctypes.c_int64
    lib.mpnpu_events.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.mpnpu_site.restype = ctypes.c_int32
    lib.mpnpu_site.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int32),
                               ctypes.POINTER(ctypes.c_char_p)]
    lib.mpnpu_site_count.restype = ctypes.c_int32
    lib.mpnpu_site_count.argtypes = []
    lib.mpnpu_fault.restype = ctypes.POINTER(Fault)
    lib.mpnpu_fault.argtypes = []
    lib.mpnpu_serve.restype = ctypes.c_int32
    lib.mpnpu_serve.argtypes = [ctypes.c_void_p]
    lib.mpnpu_serve_window.restype = ctypes.c_int32
    lib.mpnpu_serve_window.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64,
                                       ctypes.c_uint64]
