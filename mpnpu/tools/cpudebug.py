"""The embedded side of CPU-debug unit tests: GmAlloc / GmFree and ICPU_RUN_KF (include/mpnpu/cpudebug.h).

A test program linked against libmpnpu_cpudebug starts this module in an embedded interpreter at its
first call, then::

    GmAlloc(n)     -> a GM segment mapped at an address of its own inside one large reservation
                      made here before any core process exists (so every core, forked from this
                      program, finds each block at the same address; a block's window is followed by
                      4 GiB of unmapped space, so memcheck tells which block a pointer came from)
    ICPU_RUN_KF    -> a Device of the right kind (cached per block_dim and kernel type), launching a
                      CpuDebugKernel: the kernel function linked into this program, called in every core
                      process through the program's own copy of the kernel runtime
    exit / faults  -> shutdown(): every core process ended, every segment unlinked
    Ctrl-C/SIGTERM -> during a call into mpnpu: what finished is said, shutdown(), exit 130 / 143
                      (no traceback, nothing left behind); in the program's own code, the signal
                      does what it does without mpnpu (libmpnpu_cpudebug forwards it only during calls)

Control from the environment (nothing printed when unset; each variable is a setting of
:mod:`mpnpu.settings`, and a bad value ends the program with one line and exit status 2):

    MPNPU_DROP_SYNC=FILE:LINE[,...]   skip those sync call sites
    MPNPU_RACECHECK=1 | fail          trace each launch, print the racecheck report to stderr
    MPNPU_INITCHECK=1 | fail          the same with initcheck (reads of never-written local memory)
    MPNPU_SYNCCHECK=1 | fail          the same with synccheck (unpaired, pending, duplicated, redundant syncs)
                                      (fail: end the program with exit status 1 if a hazard is found)
    MPNPU_NO_AUTO_SYNC=1              racecheck: the kernel was built without the compiler's automatic
                                      synchronisation (by default it is assumed, as the compiler does)
    MPNPU_TIMELINE=PATH               write each launch's Chrome trace (PATH, PATH.2.json, ...)
    MPNPU_REPEAT=N                    run each ICPU_RUN_KF N times from the same GM contents and say
                                      which runs' results differed from the first
    MPNPU_TIMEOUT=SECONDS             give up a launch after this long
    MPNPU_STALL_GRACE=SECONDS         report a deadlock once every unfinished core has been stalled (blocked,
                                      or busy without an API call) this long (default 5)
    MPNPU_PIPES=kernel|async|sync     how each core runs its data-movement pipes (async: copies stay
                                      queued while the core issues on, so intra-core races can show)
    MPNPU_PIPE_LATENCY_US=US          async pipes: the longest an issued copy stays queued
    MPNPU_DIRECTED=1                  race-directed runs: each launch is first run traced on a copy of GM;
                                      if racecheck finds a hazard between cores, GM is put back and the
                                      launch runs again holding one core before its access until the
                                      other core has made its own (the race forced, not waited for), so
                                      the program's own checks see what the race does
    MPNPU_SYNC_LOG=PATH               trace each launch and append to PATH, a JSON line per launch, the
                                      sync call sites it executed and how often (what mpnpu mutate
                                      learns a program's sync points from)
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import mmap
import os
import re
import signal
import sys
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from mpnpu import settings
from mpnpu.ascendc.matmul_tiling import KFC_MAX_OBJECTS, workspace_bytes
from mpnpu.ascendc.native import abi, bridge
from mpnpu.ascendc.native.windows import (
    _MAP_ANONYMOUS,
    _MAP_FIXED,
    _MAP_NORESERVE,
    _MAP_PRIVATE,
    _MAP_SHARED,
    _PROT_NONE,
    _PROT_RW,
    GAP_BYTES,
    _mmap,
)
from mpnpu.directed.mutation import log_sync_sites
from mpnpu.errors import ExitCode, MpnpuError, UsageError
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.gm import GlobalTensor
from mpnpu.runtime.gm.segments import close_and_unlink, create_segment, process_token
from mpnpu.runtime.procutil import Terminated, exit_code_for_interrupt, raise_terminated
from mpnpu.runtime.topology import KernelType

_RESERVE_BYTES = 16 << 40  # address space for every GmAlloc of the program (no memory)
_ALIGN = 2 << 20  # where blocks start (GmAlloc's addresses are this aligned)
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _mapped_length(size: int) -> int:
    """The bytes mapped for a block of ``size``: its pages and no more, so that a raw read or write
    past its last page faults (the unmapped rest of the reservation follows it)."""
    return max(_PAGE, -(-size // _PAGE) * _PAGE)


#: the granule of the device's GM allocations: the runtime rounds every allocation up to a multiple of
#: 32 bytes (and its default allocator adds 32 more), and the MTE moves whole 32-byte blocks
GM_GRANULE = 32


def allocated_bytes(size: int) -> int:
    """The bytes a kernel may touch in a ``GmAlloc(size)`` block: ``size`` rounded up to 32, the least
    any device allocator gives. A DataCopy of a whole block that covers the end of an 18-byte
    tensor stays inside its allocation on the chip, so memcheck must not call it illegal."""
    return max(GM_GRANULE, -(-size // GM_GRANULE) * GM_GRANULE)


#: KernelMode of SetKernelMode (MIX_MODE, AIC_MODE, AIV_MODE, and MIX_AIC_1_1, which a public unit test sets); not
#: set: MPNPU_DEFAULT_KERNEL_MODE (MIX_MODE)
_MODES = {0: KernelType.MIX_1_2, 1: KernelType.AIC, 2: KernelType.AIV, 3: KernelType.MIX_1_1}
_DEFAULT_MODES = {"mix": KernelType.MIX_1_2, "aic": KernelType.AIC, "aiv": KernelType.AIV}


@dataclass
class _Block:
    addr: int
    size: int
    segment: str
    shm: Any


class _Gm:
    """GmAlloc'd blocks: one segment each, at increasing addresses of one reservation."""

    def __init__(self) -> None:
        self.base = _mmap(None, _RESERVE_BYTES, _PROT_NONE, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
        self.next = self.base
        self.blocks: dict[int, _Block] = {}
        self.sys_block = 0  # mpnpu's system workspace (system_workspace), 0: none yet
        self.token = process_token(os.getpid()) or "0"

    def alloc(self, size: int) -> int:
        length = _mapped_length(size)
        stride = max(_ALIGN, -(-size // _ALIGN) * _ALIGN) + GAP_BYTES  # the next block's start stays aligned
        if self.next + stride > self.base + _RESERVE_BYTES:
            raise MpnpuError("GmAlloc: the program has used up mpnpu's GM address space (free what it no longer needs)")
        shm = create_segment(length, self.token)
        fd = os.open(os.path.join("/dev/shm", shm.name), os.O_RDWR)
        try:
            addr = _mmap(self.next, length, _PROT_RW, _MAP_SHARED | _MAP_FIXED, fd, 0)
        finally:
            os.close(fd)
        self.next += stride
        self.blocks[addr] = _Block(addr, size, shm.name, shm)
        return addr

    def free(self, addr: int, *, own: bool = False) -> None:
        """Unmap and unlink block ``addr``; mpnpu's system workspace only when ``own``."""
        if addr == self.sys_block:
            if not own:
                print(f"mpnpu: GmFree({addr:#x}): not a block GmAlloc returned", file=sys.stderr)
                return
            self.sys_block = 0
        block = self.blocks.pop(addr, None)
        if block is None:
            print(f"mpnpu: GmFree({addr:#x}): not a block GmAlloc returned (or freed twice)", file=sys.stderr)
            return
        _mmap(addr, _mapped_length(block.size), _PROT_NONE,
              _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_FIXED | _MAP_NORESERVE, -1, 0)
        close_and_unlink(block.shm)

    def close(self) -> None:
        for addr in list(self.blocks):
            self.free(addr, own=True)

    def system_workspace(self, nbytes: int) -> int:
        """The address of mpnpu's own system workspace, at least ``nbytes``: one block, reused while
        large enough (a larger launch gets a larger one). It is GM like the program's blocks (every
        core maps it), but no GmAlloc returned it: snapshots and restores leave it out."""
        if self.sys_block and self.blocks[self.sys_block].size >= nbytes:
            return self.sys_block
        if self.sys_block:
            self.free(self.sys_block, own=True)
        self.sys_block = self.alloc(nbytes)
        return self.sys_block

    def program_blocks(self) -> list[_Block]:
        """The blocks the program GmAlloc'd (mpnpu's system workspace left out)."""
        return [b for a, b in self.blocks.items() if a != self.sys_block]


_gm: _Gm | None = None
_devices: dict[tuple[int, KernelType, Any], Any] = {}
_launches = 0


def _memory() -> _Gm:
    global _gm
    if _gm is None:
        _gm = _Gm()
    return _gm


_memory()  # the reservation exists before any core process is forked


_Entry = TypeVar("_Entry", bound=Callable[..., int])


def _ends_cleanly_when_interrupted(fn: _Entry) -> _Entry:
    """An entry point the C++ library calls: a Ctrl-C or SIGTERM that lands in it (forwarded by
    libmpnpu_cpudebug, which hands signals to this interpreter only while a call is in progress)
    releases every core process and segment and ends the program with 130 / 143, in one line."""

    @functools.wraps(fn)
    def entry(*args: Any) -> int:
        try:
            return fn(*args)
        except KeyboardInterrupt as e:
            code = exit_code_for_interrupt(e)
            name = "SIGTERM" if isinstance(e, Terminated) else "Ctrl-C"
            print(f"mpnpu: interrupted ({name}) in {_current_call or fn.__name__}: every core process ended, "
                  f"nothing left behind", file=sys.stderr)
            shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # the program ends here, as the signal would have ended it (no C++ unwinding)

    return entry  # type: ignore[return-value]


def install_signal_handlers(interrupt: int = 1, terminate: int = 1) -> int:
    """Python's side of libmpnpu_cpudebug's forwarding: Ctrl-C raises KeyboardInterrupt and SIGTERM
    :class:`Terminated` in whatever call into mpnpu is running. The library asks for each signal
    the program left at its default (``interrupt``: SIGINT, ``terminate``: SIGTERM); one the program
    ignores or handles stays as it is."""
    if interrupt:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if terminate:
        signal.signal(signal.SIGTERM, raise_terminated)
    return 0


#: what the program is doing in mpnpu now ("ICPU_RUN_KF(add) at test_add.cpp:40"), for messages
_current_call = ""


@_ends_cleanly_when_interrupted
def gm_alloc(size: int) -> int:
    """GmAlloc: the address of ``size`` bytes of GM, zero-filled."""
    return _memory().alloc(int(size))


@_ends_cleanly_when_interrupted
def gm_free(addr: int) -> int:
    _memory().free(int(addr))
    return 0


def shutdown() -> int:
    """End every core process and unlink every segment (at exit, and before a failing exit)."""
    for dev in list(_devices.values()):
        dev.close()
    _devices.clear()
    if _gm is not None:
        _gm.close()
    return 0


atexit.register(shutdown)


# -- the kernel the core processes run -------------------------------------------------------------------


@dataclass(frozen=True)
class CpuDebugKernel:
    """A kernel linked into the host program (a kernel object for the runtime): every core process
    is a fork of that program, so the kernel function and the program's kernel runtime are at the
    same addresses there; GM blocks are mapped in at their addresses on first use."""

    name: str
    fn: int
    exports: int
    params: tuple[str, ...]
    slots: tuple[int, ...]
    regions: tuple[tuple[int, int, str, str], ...]  # (addr, size, segment, name) of every live GmAlloc block
    kernel_type: KernelType
    tiling_key: int = 0
    #: the program chose the kernel mode (SetKernelMode): the kernel's declared type does not overrule it
    host_mode: bool = False
    #: mpnpu's system workspace for this launch (one of ``regions``), 0: none
    sys_fallback: int = 0

    __mpnpu_pipes__ = "own"

    @property
    def mpnpu_kernel_name(self) -> str:
        return self.name

    def __call__(self, *args: Any) -> None:
        _map_blocks(self.regions)
        lib = _program_library(self.exports, self.fn, self.params)
        regions = sorted((bridge.Region(addr, size, _region_tensor(name, segment, size))
                          for addr, size, segment, name in self.regions), key=lambda r: r.addr)
        bridge.run_slots(lib, self.kernel_type, list(self.slots), regions, tiling_key=self.tiling_key,
                         host_mode=self.host_mode, sys_fallback=self.sys_fallback)


_mapped: dict[int, str] = {}  # in a core process: address -> segment mapped there


def _map_blocks(regions: tuple[tuple[int, int, str, str], ...]) -> None:
    for addr, size, segment, _ in regions:
        if _mapped.get(addr) == segment:
            continue
        fd = os.open(os.path.join("/dev/shm", segment), os.O_RDWR)
        try:
            _mmap(addr, _mapped_length(size), _PROT_RW, _MAP_SHARED | _MAP_FIXED, fd, 0)
        finally:
            os.close(fd)
        _mapped[addr] = segment


def _region_tensor(name: str, segment: str, size: int) -> GlobalTensor:
    from mpnpu.runtime.dtypes import uint8

    return GlobalTensor(name, uint8, (size,), segment, 0, (1,), 0, size)


_program_libs: dict[tuple[int, int], bridge.Library] = {}


def _program_library(exports_addr: int, fn: int, params: tuple[str, ...]) -> bridge.Library:
    key = (exports_addr, fn)
    lib = _program_libs.get(key)
    if lib is None:
        table = abi.Exports.from_address(exports_addr)
        run = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(abi.Launch), ctypes.c_void_p,
                               ctypes.POINTER(ctypes.c_uint64), ctypes.c_int32)(table.run)

        def run_entry(launch, slots, n, _run=run, _fn=fn):  # type: ignore[no-untyped-def]
            return _run(launch, _fn, slots, n)

        lib = _program_libs[key] = bridge.Library.from_functions(
            "the host program", params, run_entry,
            ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p))(table.events),
            ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p),
                             ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_char_p))(table.site),
            ctypes.CFUNCTYPE(ctypes.POINTER(abi.Fault))(table.fault),
        )
    return lib


# -- ICPU_RUN_KF ----------------------------------------------------------------------------------------------


def _split_args(text: str) -> list[str]:
    """'x, y, (uint8_t*)(t)' -> ['x', 'y', 't']: the arguments as the test wrote them, casts removed."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    names = []
    for a in out:
        a = a.strip()
        a = re.sub(r"^\(\s*[\w:\s]+\*+\s*\)\s*", "", a)  # a C cast
        a = re.sub(r"^(?:reinterpret_cast|static_cast)<[^>]*>", "", a).strip()
        names.append(a.strip("() ") or "?")
    return names


@dataclass(frozen=True)
class _Controls:
    """What the environment asks of a launch (the MPNPU_* settings of the module docstring)."""

    drop: tuple[str, ...]
    racecheck: bool | str  # True, or "fail": a hazard fails the program
    initcheck: bool | str  # the same for initcheck (local memory: the program's GM writes are its own)
    synccheck: bool | str
    timeline: str
    repeat: int
    timeout_s: float
    directed: bool
    sync_log: str
    no_auto_sync: bool
    pipes: str = settings.PIPES.default
    pipe_latency_us: float = settings.PIPE_LATENCY_US.default
    stall_grace_s: float = settings.STALL_GRACE.default
    default_kernel_mode: str = settings.DEFAULT_KERNEL_MODE.default

    @classmethod
    def from_env(cls) -> _Controls:
        """The settings as the environment has them now; a bad one is a UsageError (one line)."""
        drop, timeline = settings.from_env(settings.DROP_SYNC), settings.from_env(settings.TIMELINE)
        for entry in drop or ():
            # a CPU-debug program's sync points are its lines (an operator's names, S1, mean nothing here)
            if not _FILE_LINE.fullmatch(entry):
                raise UsageError(f"MPNPU_DROP_SYNC={','.join(drop or ())!r}: {entry!r} is not a sync call site: "
                                 "give FILE:LINE of the sync call (add.cpp:45, the file by any path suffix)")
        return cls(drop=drop or (), racecheck=settings.from_env(settings.RACECHECK),
                   initcheck=settings.from_env(settings.INITCHECK), synccheck=settings.from_env(settings.SYNCCHECK),
                   timeline=timeline or "",
                   repeat=settings.from_env(settings.REPEAT), timeout_s=settings.from_env(settings.TIMEOUT),
                   directed=settings.from_env(settings.DIRECTED), sync_log=settings.from_env(settings.SYNC_LOG) or "",
                   no_auto_sync=settings.from_env(settings.NO_AUTO_SYNC),
                   pipes=settings.from_env(settings.PIPES),
                   pipe_latency_us=settings.from_env(settings.PIPE_LATENCY_US),
                   stall_grace_s=settings.from_env(settings.STALL_GRACE),
                   default_kernel_mode=settings.from_env(settings.DEFAULT_KERNEL_MODE))


_FILE_LINE = re.compile(r"[^:,]+:[0-9]+")


@functools.lru_cache(maxsize=None)
def _check_drop_sites(drop: tuple[str, ...], caller: str) -> None:
    """MPNPU_DROP_SYNC entries checked as ``--drop-sync`` checks them, before the launch. The sources
    looked in: the file of the program's ICPU_RUN_KF line, the files it ``#include "..."``s and the
    headers beside them, and any other source compiled into the program under the entry's file name
    (a kernel built as a translation unit of its own: its sync calls carry its path as a string in
    the program, :func:`_compiled_paths`). An entry naming one of those files at a line with no sync
    call is a UsageError naming the nearest ones; so is one naming a file compiled into no part of the
    program, which could drop nothing. Only a file compiled in whose source is no longer on disk is
    let through (a traced launch then says whether the entry skipped anything)."""
    from mpnpu.ascendc.build import syncpoints

    if not drop or not caller or not os.path.isfile(caller):
        return
    files = set(syncpoints.local_includes([caller]))
    files |= {os.path.join(os.path.dirname(f), h) for f in list(files) for h in os.listdir(os.path.dirname(f))
              if h.endswith((".h", ".hpp"))}
    for entry in drop:
        name = entry.rpartition(":")[0]
        suffix = os.sep + name.lstrip("./")
        known = {f for f in files if f == os.path.abspath(name) or f.endswith(suffix)}
        if not known:
            compiled = _compiled_paths(os.path.basename(name))
            named = {p for p in compiled if p == name or p.endswith(suffix)}
            if not named:
                also = f" (sources of that name in it: {', '.join(sorted(compiled))})" if compiled else ""
                raise UsageError(f"MPNPU_DROP_SYNC={','.join(drop)!r}: {entry!r} names a file compiled into no part "
                                 f"of this program{also}, so it can drop no sync call: give FILE:LINE of a sync call "
                                 "in the kernel's sources (the file by any path suffix)")
            known = {os.path.abspath(p) for p in named if os.path.isfile(p)}
        if known:
            try:
                syncpoints.resolve([entry], syncpoints.kernel_sync_points(sorted(known)))
            except UsageError as e:
                raise UsageError(f"MPNPU_DROP_SYNC={','.join(drop)!r}: {e}") from None


def _compiled_paths(file_name: str, limit: int = 64) -> set[str]:
    """The source paths ending in ``file_name`` that the program's files (its executable and the
    libraries mapped into this process) hold as strings: a sync call's site is its file's
    ``__FILE__``, so a kernel source compiled in is among them. Empty when none holds the name."""
    needle = file_name.encode()
    try:
        with open("/proc/self/maps") as maps:
            mapped = {line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6}
    except OSError:
        return {file_name}  # (no /proc: nothing to look in, so nothing to refuse)
    found: set[str] = set()
    # (not /dev: the program's GM blocks and other shared memory hold data, not its code)
    for path in sorted(p for p in mapped if p.startswith("/") and not p.startswith("/dev/")
                       and not p.endswith(" (deleted)")):
        try:
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                at = m.find(needle)
                while at >= 0 and len(found) < limit:
                    end = at + len(needle)
                    if end < len(m) and m[end] == 0:  # (the whole string ends there: a path, not a prefix)
                        start = m.rfind(b"\0", max(0, at - 4096), at) + 1 or max(0, at - 4096)
                        found.add(m[start:end].decode(errors="replace"))
                    at = m.find(needle, end)
        except (OSError, ValueError):
            continue  # (gone, special, or empty: not a file the program's code is in)
    return found


def _dropped_nothing(trace: Any, drop: tuple[str, ...], where: str) -> None:
    """Say which MPNPU_DROP_SYNC entries skipped no sync call in this traced launch (a line that holds
    no sync call, or one this launch did not reach): the run had every sync there in place."""
    from mpnpu.runtime.trace import DroppedSyncEvent

    skipped = {ev.site for events in trace.events for ev in events if type(ev) is DroppedSyncEvent}
    for entry in drop:
        if not any(site == entry or site.endswith("/" + entry) for site in skipped):
            print(f"mpnpu: {where}: MPNPU_DROP_SYNC entry {entry} skipped nothing in this launch (no sync call "
                  f"ran at that line)", file=sys.stderr)


def _device(block_dim: int, kernel_type: KernelType, controls: _Controls) -> Any:
    """The device of this block_dim and kernel type with the controls' runtime options (one per set
    of them: a program whose environment changes between launches gets a device for each)."""
    from mpnpu.runtime.config import RuntimeOptions
    from mpnpu.runtime.device import Device

    options = RuntimeOptions(launch_timeout_s=controls.timeout_s, auto_sync=not controls.no_auto_sync,
                             pipes=controls.pipes, pipe_latency_us=controls.pipe_latency_us,
                             stall_grace_s=controls.stall_grace_s)
    key = (block_dim, kernel_type, options)
    dev = _devices.get(key)
    if dev is None:
        dev = _devices[key] = Device(block_dim, kernel_type=kernel_type, options=options)
    return dev


def _snapshot() -> dict[int, bytes]:
    return {b.addr: ctypes.string_at(b.addr, b.size) for b in _memory().program_blocks()}


def _restore(snap: dict[int, bytes]) -> None:
    for addr, data in snap.items():
        if addr in _memory().blocks:
            ctypes.memmove(addr, data, len(data))


@_ends_cleanly_when_interrupted
def run_kf(desc_addr: int) -> int:
    """ICPU_RUN_KF: launch, report, and return 0, or the exit status the program must end with."""
    global _current_call
    d = abi.CpuDebugLaunch.from_address(desc_addr)
    kernel = (d.kernel or b"?").decode()
    where = f"ICPU_RUN_KF({kernel}) at {os.path.basename((d.file or b'?').decode())}:{d.line}"
    _current_call = where  # kept if an interruption ends the program, for its message
    try:
        controls = _Controls.from_env()
        _check_drop_sites(controls.drop, (d.file or b"").decode())
    except UsageError as e:  # a bad setting: the program's usage error, as a command's would be
        print(f"mpnpu: {where}: {e}", file=sys.stderr)
        shutdown()
        return int(ExitCode.USAGE)
    if d.block_dim == 0:
        # Outside the documented 1..65535: the chip's runtime refuses the launch and no core runs;
        # the program goes on (a unit test may launch 0 blocks on purpose).
        print(f"mpnpu: {where}: block_dim 0 launches no core (outside the documented 1..65535, a launch "
              "the chip's runtime refuses): nothing ran", file=sys.stderr)
        _current_call = ""
        return 0
    try:
        status = _run_kf(d, kernel, where, controls)
    except MpnpuError as e:
        message = _explain_fault_address(str(e), _region_names)
        print(f"mpnpu: {where}: {message}{_mode_hint(d.kernel_mode, message)}", file=sys.stderr)
        shutdown()
        return 3
    _current_call = ""
    return status


def _mode_hint(kernel_mode: int, message: str) -> str:
    """Why a cube core ran vector code, when the program never chose a kernel mode: MIX_MODE is the
    CPU-debug default, so a vector-only kernel launched without SetKernelMode runs on cube cores too
    (on the chip its compiler would have launched vector cores only)."""
    if kernel_mode in _MODES or "and this is a cube core" not in message \
            or settings.from_env(settings.DEFAULT_KERNEL_MODE) != "mix":
        return ""
    return (" (the program never called SetKernelMode, so this launch ran in MIX_MODE, the CPU-debug "
            "default, with a cube core per block; a vector-only kernel is tested with "
            "AscendC::SetKernelMode(KernelMode::AIV_MODE))")


def _run_kf(d: abi.CpuDebugLaunch, kernel: str, where: str, controls: _Controls) -> int:
    global _launches
    kt = _MODES.get(d.kernel_mode) or _DEFAULT_MODES[controls.default_kernel_mode]
    params = tuple(p for p in (d.signature or b"").decode().split(",") if p)
    slots = tuple(int(d.slots[i]) for i in range(d.n_args))
    names = _split_args((d.arg_names or b"").decode())
    gm = _memory()
    # where REGIST_MATMUL_OBJ keeps its state when the kernel's workspace is too small for it (the
    # vendor's CPU-debug library keeps its own elsewhere: tests pass a few KiB)
    sys_fallback = (gm.system_workspace(workspace_bytes(max(1, int(d.block_dim)), KFC_MAX_OBJECTS))
                    if kt in (KernelType.MIX_1_1, KernelType.MIX_1_2) else 0)  # (only a mix kernel has a server)
    regions = []
    _region_names.clear()
    for b in gm.blocks.values():
        named = [n for n, s, p in zip(names, slots, params) if p == "p" and s == b.addr]
        regions.append((b.addr, allocated_bytes(b.size), b.segment, named[0] if named else f"gm@{b.addr:#x}"))
        if named:
            _region_names[b.addr] = named[0]
    hk = CpuDebugKernel(kernel, int(d.fn), int(d.exports), params, slots, tuple(regions), kt, int(d.tiling_key),
                        d.kernel_mode in _MODES, sys_fallback)
    repeat = controls.repeat
    trace = bool(controls.racecheck) or bool(controls.timeline) or bool(controls.sync_log) \
        or bool(controls.initcheck) or bool(controls.synccheck)
    dev = _device(d.block_dim, kt, controls)
    # (racecheck: a read that may be a polling loop's first look is probed from the same GM)
    before = _snapshot() if repeat > 1 or controls.directed or controls.racecheck else None
    first: dict[int, bytes] | None = None
    differ: list[int] = []
    status = 0
    finished = 0
    try:
        for r in range(repeat):
            if before is not None and r:
                _restore(before)
            result = dev.launch_with(LaunchOptions(drop_syncs=controls.drop, trace=trace or controls.directed), hk)
            _launches += 1
            if result.trace is not None:
                traced, hazards = result.trace, None
                if controls.racecheck:
                    from mpnpu.racecheck import analyze

                    hazards = analyze(traced)
                    if hazards and before is not None:  # (a launch with no hazard has nothing a probe could explain)
                        traced, hazards = _probe_polls(dev, hk, controls.drop, traced, hazards, before, where)
                status = max(status, _report_trace(traced, where, controls.racecheck, controls.timeline, hazards),
                             _report_checks(traced, where, controls))
                if controls.drop and r == 0:
                    _dropped_nothing(traced, controls.drop, where)
                if controls.sync_log:
                    log_sync_sites(traced, kernel, controls.sync_log)
                if controls.directed:  # the traced launch was the scout: the program sees the directed run's GM
                    result = _directed_rerun(dev, hk, controls.drop, result._replace(trace=traced), before,
                                             where) or result
            if repeat > 1:  # (the runs compared with the first)
                now = _snapshot()
                if first is None:
                    first = now
                elif now != first:
                    differ.append(r + 1)
            finished = r + 1
    except KeyboardInterrupt:
        if repeat > 1:  # what was measured so far, then the interruption's own line
            _say_repeats(where, finished, repeat, differ)
        raise
    if repeat > 1:
        _say_repeats(where, finished, repeat, differ)
    return status


#: per kernel, what earlier probes of this program showed: poll site -> whether the reader spun there
_probe_verdicts: dict[str, dict[tuple[str, str, int], bool]] = {}


def _probe_polls(dev: Any, hk: "CpuDebugKernel", drop: tuple[str, ...], trace: Any, hazards: list[Any],
                 before: dict[int, bytes], where: str) -> tuple[Any, list[Any]]:
    """(``trace`` with the polling loops its probes showed, racecheck's hazards with them), for a
    launch with ``hazards`` (mpnpu.racecheck.poll_probe): each probe runs the launch again from the GM
    it started with, holding a writer; GM is then put back as the launch left it, for the program to
    read. A line on stderr per probe; a probe that fails (the held writer made the reader go wrong)
    shows nothing. A line an earlier launch of the kernel was probed at is not probed again."""
    from mpnpu.racecheck import analyze
    from mpnpu.racecheck.poll_probe import probe_first_looks
    from mpnpu.racecheck.polls import first_looks

    looks = first_looks(trace)
    if not looks:
        return trace, hazards
    after = _snapshot()

    def relaunch(plan: Any) -> Any:
        _restore(before)
        try:
            return dev.launch_with(LaunchOptions(drop_syncs=drop, trace=True, hold=plan), hk).trace
        except MpnpuError as e:
            print(f"mpnpu: {where}: poll probe failed ({type(e).__name__}): {str(e).splitlines()[0]}",
                  file=sys.stderr)
            return None

    try:
        probed, probes = probe_first_looks(trace, relaunch, looks=looks,
                                           known=_probe_verdicts.setdefault(hk.name, {}))
    finally:
        _restore(after)
    for p in probes:
        print(f"mpnpu: {where}: poll probe: {p.describe()}", file=sys.stderr)
    return (probed, analyze(probed)) if probed is not trace else (trace, hazards)


#: directed runs of one launch until the hold reversed the pair (each from the same GM)
_DIRECTED_TRIES = 6


def _directed_rerun(dev: Any, hk: "CpuDebugKernel", drop: tuple[str, ...], scout: Any,
                    before: dict[int, bytes] | None, where: str) -> Any:
    """The launch again from the same GM, holding the first core of racecheck's first hazard between
    cores until its partner has made the conflicting access (None: no such hazard, the scout stands)."""
    from mpnpu.racecheck.directed import hold_pairs

    _, pairs = hold_pairs(scout.trace)
    chosen = next((ps[0] for ps in pairs.values() if ps), None)
    if chosen is None or before is None:
        return None
    from mpnpu.runtime.hold import REVERSED

    plan = chosen.plan()
    for _ in range(_DIRECTED_TRIES):  # a hold ends early when the other cores look blocked (a loaded machine)
        _restore(before)
        result = dev.launch_with(LaunchOptions(drop_syncs=drop, hold=plan), hk)
        if result.hold is not None and result.hold.outcome == REVERSED:
            break
    outcome = result.hold.outcome if result.hold is not None else "not reached"
    print(f"mpnpu: {where}: directed run: {plan.describe()} ({outcome})", file=sys.stderr)
    return result


_FAULT_ADDRESS = re.compile(r"fault address (0x[0-9a-f]+)")
#: GmAlloc'd block address -> the kernel argument it was passed as, in the launch running now
_region_names: dict[int, str] = {}


def _explain_fault_address(message: str, names: dict[int, str]) -> str:
    """A core's fault address said in GM's terms: which GmAlloc'd block it lies past the end of, and
    by how many bytes (the pages after a block's last one are never mapped, so such a read faults)."""
    m = _FAULT_ADDRESS.search(message)
    if m is None:
        return message
    addr = int(m.group(1), 16)
    below = [b for b in _memory().program_blocks() if b.addr <= addr]
    if not below:
        return message
    block = max(below, key=lambda b: b.addr)
    past = addr - (block.addr + block.size)
    if past < 0:
        return message
    name = names.get(block.addr, f"the GmAlloc block at {block.addr:#x}")
    return message[:m.end()] + f" ({past} bytes past the end of {name}, {block.size} bytes)" + message[m.end():]


def _say_repeats(where: str, finished: int, repeat: int, differ: list[int]) -> None:
    """The repeats' verdict on stderr: which finished runs differ from the first (an interrupted
    series says how many of its runs finished, and speaks of those alone)."""
    of = f"{finished} of {repeat} runs finished (interrupted); " if finished < repeat else ""
    if finished == 0:
        print(f"mpnpu: {where}: no run finished (interrupted)", file=sys.stderr)
    elif differ:
        print(f"mpnpu: {where}: {of}{len(differ)} of {finished} runs differ from the first: runs "
              f"{', '.join(map(str, differ))}", file=sys.stderr)
    else:
        print(f"mpnpu: {where}: {of or f'{repeat} runs, '}every one gave the first run's results", file=sys.stderr)


def _report_checks(trace: Any, where: str, controls: _Controls) -> int:
    """initcheck and synccheck on one launch, reported to stderr; 1 when one set to ``fail`` finds a defect."""
    if not (controls.initcheck or controls.synccheck):
        return 0
    from mpnpu.racecheck.findings import INITCHECK, SYNCCHECK
    from mpnpu.racecheck.initcheck import initcheck
    from mpnpu.racecheck.synccheck import synccheck
    from mpnpu.report.checks import format_findings

    status = 0
    for name, mode, check in ((INITCHECK, controls.initcheck, initcheck), (SYNCCHECK, controls.synccheck, synccheck)):
        if not mode:
            continue
        found = check(trace)
        print(f"mpnpu: {where}: {name}", file=sys.stderr)
        print(format_findings(found, launches_checked=1, checks=(name,)), file=sys.stderr)
        if mode == "fail" and any(f.is_error for f in found):
            status = 1
    return status


def _report_trace(trace: Any, where: str, racecheck: bool | str, timeline: str, hazards: list[Any] | None = None
                  ) -> int:
    status = 0
    if racecheck:
        from mpnpu.racecheck import analyze
        from mpnpu.report.hazards import format_hazards

        if hazards is None:
            hazards = analyze(trace)
        assumed = ("assuming the compiler's automatic synchronisation; MPNPU_NO_AUTO_SYNC=1 for a kernel built "
                   "without it" if trace.auto_sync else "assuming no automatic synchronisation (MPNPU_NO_AUTO_SYNC=1)")
        print(f"mpnpu: {where}: racecheck ({assumed})", file=sys.stderr)
        print(format_hazards(hazards, launches_analyzed=1), file=sys.stderr)
        if hazards and racecheck == "fail":
            status = 1
    if timeline:
        path = timeline if _launches <= 1 else f"{os.path.splitext(timeline)[0]}.{_launches}.json"
        _write_timeline(trace, path, where)
    return status


def _write_timeline(trace: Any, path: str, where: str) -> None:
    from mpnpu.harness.timeline.model import build_timeline
    from mpnpu.report.chrome_trace import write_chrome_trace

    write_chrome_trace(path, [build_timeline(trace, label=where)])
    print(f"mpnpu: {where}: timeline written to {path}", file=sys.stderr)
