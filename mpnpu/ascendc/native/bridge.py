"""The core-process side of a compiled kernel: load its library, run one launch through the C ABI,
and turn what the library reports (trace records, faults) into the runtime's own terms.

::

    core process                       kernel library (include/mpnpu/bridge.h)
    ───────────────────────────        ──────────────────────────────────────────
    run(kernel, args)
      slots  = GM addresses, scalars
      launch = identity, regions, ...  mpnpu_run(launch, slots) ── the kernel, with its API calls
                                          SyncAll / flags / holds ──► callbacks below ──► kcontext
      events ◄─ mpnpu_events            (trace records, when traced: shipped as written, see .records)
      fault  ◄─ mpnpu_fault             (memcheck, API misuse: raised here as the launch's error)

The callbacks are the kernel-context seam's services (mpnpu.runtime.kcontext), reached through the
core's native facet (mpnpu.runtime.seam.NativeCore, the only view of the core this module has):
SyncAll, flags and holds have one implementation for Python and C++ kernels. While the C++ code runs, the context's
event list is set aside, so the library's own records (in program order) are the core's trace.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol, Sequence

import numpy as np

from mpnpu import settings
from mpnpu.errors import KernelAPIError, MpnpuError, SyncTimeoutError, UnsupportedError
from mpnpu.runtime import kcontext
from mpnpu.runtime.distinct import distinct
from mpnpu.runtime.gm import GlobalTensor
from mpnpu.runtime.memcheck import ILLEGAL_READ, ILLEGAL_WRITE, gm_fault, gm_fault_unknown, local_fault
from mpnpu.runtime.pipe_events import Pipe
from mpnpu.runtime.seam import NativeCore, current_native_core
from mpnpu.runtime.sync import LAST_WORDS_BYTES, WHERE_BYTES
from mpnpu.runtime.topology import CoreType, KernelType

from . import abi
from .records import RecordChunk
from .windows import GAP_BYTES, WINDOWS

_PIPES = {p.value: p for p in Pipe}
#: KernelType -> the kernel API's kernel type number (abi.KT_*)
KERNEL_TYPE_NUMBERS = {KernelType.AIV: abi.KT_AIV_ONLY, KernelType.AIC: abi.KT_AIC_ONLY,
                       KernelType.MIX_1_1: abi.KT_MIX_AIC_1_1, KernelType.MIX_1_2: abi.KT_MIX_AIC_1_2}


def site_name(path: str, line: int) -> str:
    """'op_kernel/add.cpp:45': parent folder, file, line (as include/mpnpu/rt.h names sites, with
    "." and ".." resolved lexically)."""
    if path.startswith("+") and line == 0:  # a sync a launch inserted: named by its spec
        return path
    path = os.path.normpath(path) if path else "?"
    parent = os.path.basename(os.path.dirname(path))
    return f"{parent}/{os.path.basename(path)}:{line}" if parent else f"{os.path.basename(path)}:{line}"


# -- the loaded library -------------------------------------------------------------------------------


@dataclass
class Library:
    """A loaded kernel and its runtime's entry points: a kernel library's exported functions, or the
    table a host program that links its kernel in hands over (include/mpnpu/cpudebug.h)."""

    path: str
    params: tuple[str, ...]  # "p", "i4", "u8", "f", "d", ... (include/mpnpu/bridge.h)
    run: Any  # (launch*, slots, n) -> MPNPU_RUN_*
    events: Any  # (const MpnpuEvent** out) -> count
    site: Any  # (id, &file, &line, &func) -> found
    fault: Any  # () -> MpnpuFault*
    #: ``run`` without ctypes' argument conversion: (byref(launch), slots array, int), or None
    run_unconverted: Any = None
    #: the library's native serving loop (include/mpnpu/native/serve.h), or None (a host program's table)
    serve: Any = None
    #: (serve struct, segment key, root offset, bytes, address) -> 1: a window into the loop's table
    serve_window: Any = None
    #: site id -> (site name, function): the library keeps a site's id for as long as it is loaded in
    #: the process (include/mpnpu/native/rt.h, CoreState::sites), so its name is looked up once
    site_names: dict[int, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def from_functions(cls, path: str, params: tuple[str, ...], run: Any, events: Any, site: Any,
                       fault: Any) -> "Library":
        return cls(path, params, run, events, site, fault)


_LOADED: dict[str, Library] = {}


def load(path: str) -> Library:
    """Load (once per process) the kernel library at ``path`` and check its ABI."""
    lib = _LOADED.get(path)
    if lib is not None:
        return lib
    try:
        dll = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as e:
        raise KernelAPIError(f"cannot load the kernel library {path}: {e}") from None
    try:
        abi.declare(dll)
    except AttributeError as e:
        raise KernelAPIError(f"{path} is not an mpnpu kernel library ({e})") from None
    version = dll.mpnpu_abi_version()
    if version != abi.ABI_VERSION:
        raise KernelAPIError(f"{path} was built for ABI {version}, this mpnpu speaks {abi.ABI_VERSION}: rebuild it")
    params = tuple(p for p in dll.mpnpu_entry_signature().decode().split(",") if p)
    unconverted = dll["mpnpu_run"]  # (a second handle: the declared one converts its arguments)
    unconverted.restype = ctypes.c_int32
    lib = _LOADED[path] = Library(path, params, dll.mpnpu_run, dll.mpnpu_events, dll.mpnpu_site, dll.mpnpu_fault,
                                  unconverted, dll.mpnpu_serve, dll.mpnpu_serve_window)
    return lib


def describe_params(params: Sequence[str]) -> str:
    """'GM_ADDR x3, uint32_t': how a parameter list reads in an error."""
    names = {"p": "pointer (GM_ADDR)", "f": "float", "d": "double"}
    out = []
    for p in params:
        if p in names:
            out.append(names[p])
        elif p[0] == "s":
            out.append(f"struct of {p[1:]} bytes")
        else:
            out.append(f"{'int' if p[0] == 'i' else 'uint'}{8 * int(p[1:])}_t")
    return ", ".join(out)


def check_arguments(kernel_name: str, params: Sequence[str], args: Sequence[Any]) -> None:
    """One UsageError naming the first argument that does not fit the kernel's parameter list."""
    from mpnpu.errors import UsageError

    if len(args) != len(params):
        raise UsageError(f"kernel {kernel_name} takes {len(params)} arguments ({describe_params(params)}), "
                         f"the launch passes {len(args)}")
    for i, (kind, arg) in enumerate(zip(params, args)):
        # (every launch checks its arguments: the common cases cost one test each, the words only an error)
        if kind == "p":
            if arg is None or isinstance(arg, GlobalTensor):
                continue
            raise UsageError(f"argument {i + 1} of kernel {kernel_name} is a {describe_params([kind])}: pass a GM "
                             f"tensor (GlobalTensor) or None, not {type(arg).__name__}")
        if kind[0] == "s":
            raise UsageError(f"argument {i + 1} of kernel {kernel_name} is a {describe_params([kind])} passed by "
                             "value: a launch from Python passes GM tensors and numbers; pass the struct in GM "
                             "(a tiling tensor), or run the program that launches it (mpnpu samples, CPU-debug)")
        if kind in ("f", "d"):
            if isinstance(arg, (bool, GlobalTensor)) or not isinstance(arg, (int, float, np.integer, np.floating)):
                raise UsageError(f"argument {i + 1} of kernel {kernel_name} is a {describe_params([kind])}, got "
                                 f"{type(arg).__name__}")
            continue
        if isinstance(arg, GlobalTensor) or not isinstance(arg, (bool, int, np.integer)):
            raise UsageError(f"argument {i + 1} of kernel {kernel_name} is a {describe_params([kind])}, got "
                             f"{type(arg).__name__}")
        bits = 8 * int(kind[1:])
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if kind[0] == "i" else (0, (1 << bits) - 1)
        if not lo <= int(arg) <= hi:
            raise UsageError(f"argument {i + 1} of kernel {kernel_name} is a {describe_params([kind])}: {int(arg)} "
                             "does not fit")


# -- one launch on this core ------------------------------------------------------------------------------


@dataclass
class Region:
    """A GM allocation as the kernel sees it: where it is in this process, and the runtime's view of
    it (its root tensor: name, segment, offset in the segment, dtype) for trace records and errors."""

    addr: int  # in this process
    size: int
    tensor: GlobalTensor


class CallbackTarget(Protocol):
    """What the library's callbacks into the core process act on while a kernel runs: a
    :class:`_Launch`, or a native serving loop's view of the launch it runs now."""

    core: NativeCore
    pending: BaseException | None  # what a callback raised

    @property
    def lib(self) -> Library:
        """The library of the launch running now."""
        ...

    def site(self, site_id: int) -> tuple[str, str]:
        """(site name, function) of the launch's site ``site_id``."""
        ...

    def flag_was_set(self, mode: int, flag_id: int) -> None:
        """A callback set flag (mode, id)."""
        ...


class _Launch:
    """What one launch on this core needs while the library runs (the callbacks read it)."""

    __slots__ = ("lib", "core", "pending", "sites")

    def __init__(self, lib: Library, core: NativeCore) -> None:
        self.lib = lib
        self.core = core
        self.pending: BaseException | None = None  # what a callback raised
        self.sites = lib.site_names  # site id -> (site name, function)

    def flag_was_set(self, mode: int, flag_id: int) -> None:
        """A callback set flag (mode, id) (the core process's port marks it; see mpnpu.ascendc.native.serve)."""

    def site(self, site_id: int) -> tuple[str, str]:
        got = self.sites.get(site_id)
        if got is None:
            f, ln, fn = ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_char_p()
            if self.lib.site(site_id, ctypes.byref(f), ctypes.byref(ln), ctypes.byref(fn)):
                # (ids are a launch's own, the names are not: a traced batch names the same sites
                # every launch, and site_name's path work costs more than the library's call)
                raw = (f.value, ln.value, fn.value)
                got = _SITE_NAMES.get(raw)
                if got is None:
                    got = _SITE_NAMES[raw] = (site_name((raw[0] or b"?").decode(errors="replace"), raw[1]),
                                              (raw[2] or b"?").decode(errors="replace"))
                self.sites[site_id] = got
            else:
                got = ("?", "?")  # (not kept: no such site yet)
        return got


#: (file, line, function) as a library reports a site -> (site name, function)
_SITE_NAMES: dict[tuple[bytes | None, int, bytes | None], tuple[str, str]] = {}


_current: CallbackTarget | None = None


@contextlib.contextmanager
def callbacks_to(target: CallbackTarget) -> Iterator[None]:
    """The library's callbacks act on ``target`` inside the block (a native serving loop's launches:
    mpnpu.ascendc.native.serve)."""
    global _current
    _current = target
    try:
        yield
    finally:
        _current = None


def _guard(fn: Callable[..., int]) -> Callable[..., int]:
    """A callback body: any exception is kept for the core process and reported as failure (1)."""

    def call(*args: Any) -> int:
        launch = _current
        if launch is None:
            return 1
        try:
            return fn(launch, *args) or 0
        except BaseException as e:
            if launch is not None and launch.pending is None:
                launch.pending = e
            return 1

    return call


@_guard
def _sync_all(launch: CallbackTarget, aiv_only: int, site_id: int) -> int:
    launch.core.sync_all(bool(aiv_only), launch.site(site_id)[0])
    return 0


@_guard
def _flag_set(launch: CallbackTarget, mode: int, flag_id: int, pipe: int, site_id: int) -> int:
    launch.core.flag_set(mode, flag_id, _PIPES[abi.PIPE_NAMES[pipe]], launch.site(site_id)[0])
    launch.flag_was_set(mode, flag_id)
    return 0


@_guard
def _flag_wait(launch: CallbackTarget, mode: int, flag_id: int, site_id: int, resolved: Any) -> int:
    if mode == abi.ANY_MODE:
        mode = launch.core.flag_wait_mode(flag_id, launch.site(site_id)[0])
    resolved[0] = mode
    launch.core.flag_wait(mode, flag_id, launch.site(site_id)[0])
    return 0


@_guard
def _hold(launch: CallbackTarget, site_id: int, after: int) -> int:
    hold = launch.core.hold
    if hold is not None:
        site = launch.site(site_id)[0]
        (hold.after if after else hold.before)(site)
    return 0


@_guard
def _sync_error(launch: CallbackTarget, kind: int, a: int, b: int, c: int) -> int:
    """A sync the library made natively failed: raise what the core process's own path raises."""
    core = launch.core
    if kind == abi.NATIVE_SYNC_ALL_TIMEOUT:
        raise core.sync_all_timeout(bool(a), b)
    if kind == abi.NATIVE_FLAG_TIMEOUT:
        core.raise_flag_timeout(a, b)
    if kind == abi.NATIVE_FLAG_OVERFLOW:
        core.raise_overflow(a, b, c)
    raise SyncTimeoutError("SyncAll: the barrier's shared state is not one its protocol allows (a core died "
                           "inside it?)", sync="sync_all")


# One set of callbacks per process (ctypes keeps them alive as long as these references live).
_CORE_CALLS = abi.CoreCalls(abi.SyncAllFn(_sync_all), abi.FlagSetFn(_flag_set), abi.FlagWaitFn(_flag_wait),
                            abi.HoldFn(_hold), abi.SyncErrorFn(_sync_error))

#: MPNPU_NATIVE_SYNC=0 in the environment: every SyncAll and flag of a C++ kernel calls back into the
#: core process (as before native syncs existed), e.g. to measure the two side by side.
NATIVE_SYNC_ENV = "MPNPU_NATIVE_SYNC"


def native_sync_for(core: NativeCore) -> tuple[Any, Any] | None:
    """This core's MpnpuNativeSync (and its used-flags array), or None where syncs call back."""
    if not settings.from_env(settings.NATIVE_SYNC):
        return None
    routes = core.native_routes()
    if routes is None:
        return None
    nat = abi.NativeSync()
    nat.abi = abi.ABI_VERSION
    nat.core_id = core.core_id
    nat.status, nat.st_columns = routes.status, routes.st_columns
    nat.flag_modes, nat.flag_counter_max = routes.flag_modes, routes.flag_counter_max
    nat.timeout_ns = int(core.sync_timeout_s * 1e9)
    nat.spin_ns = int(core.spin_s * 1e9)
    core.on_spin_change(lambda spin_s: setattr(nat, "spin_ns", int(spin_s * 1e9)))
    for target, (lock, sleeping, woken, wait_sem, words, parties) in (
            (nat.barrier_all, routes.barrier_all), (nat.barrier_aiv, routes.barrier_aiv)):
        target.lock, target.sleeping, target.woken, target.wait_sem = lock, sleeping, woken, wait_sem
        target.words, target.parties = words, parties
    for (mode, flag_id), (outgoing, incoming) in routes.flags.items():
        if len(outgoing) > abi.NATIVE_MAX_ROUTES or len(incoming) > abi.NATIVE_MAX_ROUTES:
            continue  # (not on this chip's topologies) left to the core process's path
        f = nat.flags[mode][flag_id]
        f.valid, f.n_out, f.n_in = 1, len(outgoing), len(incoming)
        for i, (receiver, handle, wake) in enumerate(outgoing):
            f.out_receiver[i], f.out_sem[i], f.out_wake[i] = receiver, handle, wake
        for i, handle in enumerate(incoming):
            f.in_sem[i] = handle
    nat.mode_wake = routes.mode_wake
    used = ctypes.c_uint64(0)
    nat.used = ctypes.addressof(used)
    return nat, used


def _report_native_flags(core: NativeCore, used: Any) -> None:
    """Mark the flags the library set natively in this launch as the core process's own sets are
    marked (the parent clears the counters of every flag set), and clear the library's marks."""
    mask = used.value
    if not mask:
        return
    used.value = 0
    while mask:
        bit = (mask & -mask).bit_length() - 1  # the lowest bit set
        mask &= mask - 1
        core.mark_flag_set(bit // abi.FLAG_IDS, bit % abi.FLAG_IDS)


def run(lib: Library, kernel_type: KernelType, args: Sequence[Any], *, tiling_key: int = 0,
        sys_workspace_bytes: int = 0, memcheck: bool = True,
        stages: Sequence[tuple[str, tuple[int, ...]]] = ()) -> None:
    """Run the library's kernel on this core with ``args`` (GM tensors and scalars)."""
    slots, regions = slots_of(lib.params, args)
    run_slots(lib, kernel_type, slots, regions, tiling_key, sys_workspace_bytes, memcheck, stages)


def run_slots(lib: Library, kernel_type: KernelType, slots: list[int], regions: Sequence[Region],
              tiling_key: int = 0, sys_workspace_bytes: int = 0, memcheck: bool = True,
              stages: Sequence[tuple[str, tuple[int, ...]]] = (), host_mode: bool = False,
              sys_fallback: int = 0) -> None:
    """Run the kernel on this core with its arguments already as 64-bit slots, pointing into
    ``regions`` (sorted by address: the library indexes them in that order); ``stages``: where the
    stages a launch inserts syncs at are (a library built with stage hooks, mpnpu.ascendc.build.stagehooks);
    ``host_mode``: the host program chose ``kernel_type`` (a CPU-debug launch after SetKernelMode), so the
    kernel's own KERNEL_TASK_TYPE_DEFAULT does not overrule it; ``sys_fallback``: the address of a system
    workspace of mpnpu's own, one of ``regions`` (0: none), where REGIST_MATMUL_OBJ keeps its state when
    the kernel's workspace is too small for it."""
    global _current
    # (every line here is paid by every core of every launch: an empty C++ launch is mostly this)
    core = kcontext.current().native
    n, n_slots = len(regions), len(slots)
    hit = _STRUCTS.get((id(core), kernel_type))
    if hit is None or n > _MAX_ARGS or n_slots > _MAX_ARGS:
        if core.kernel_type is not kernel_type:
            raise KernelAPIError(f"a {kernel_type.value} kernel launched on a {core.kernel_type.value} "
                                 "device")
        hit = _launch_struct(core, kernel_type, n_slots, n)
    launch, c_slots, c_regions, last, native = hit
    # the library records this core's trace itself (see the module docstring)
    events, dropped, hold, hooks = core.set_events_aside(), core.dropped_syncs, core.hold, core.stage_hooks
    # What a batch's launches mostly repeat (the caching allocator hands out the same blocks) is
    # written only when it changes: each ctypes field write costs as much as the C++ launch itself.
    settings = (events is not None, memcheck, tiling_key, sys_workspace_bytes, dropped, hold, host_mode, sys_fallback)
    if settings != last[0]:
        _write_settings(launch, settings)
        last[0] = settings
    _write_arguments(launch, c_slots, c_regions, last, slots, regions)
    last[2] = None  # (the arrays are no launcher's: see launcher)
    # (the records point into what _inserts returns while the kernel runs)
    try:
        keep = _inserts(launch, core, stages) if hooks is not None or launch.n_inserts else None
    except BaseException:
        core.restore_events(events)
        raise
    state = _current = _Launch(lib, core)
    try:
        rc = lib.run(launch, c_slots, n_slots)
    finally:
        _current = None
        core.restore_events(events)
        del keep
        if native is not None and native[1].value:
            _report_native_flags(core, native[1])
    if events is not None:
        records = _trace_records(state, regions)
        if records is not None:
            # (a part of the core's trace among its events: PackedEvents.pack ships it as it is)
            events.append(records)
    if rc == abi.RUN_OK:
        return
    if rc == abi.RUN_CORE_CALL_ERROR and state.pending is not None:
        raise state.pending
    raise _fault_error(state, regions, rc)


def launcher(lib: Library, kernel_type: KernelType, tiling_key: int = 0, sys_workspace_bytes: int = 0,
             memcheck: bool = True,
             stages: Sequence[tuple[str, tuple[int, ...]]] = ()) -> Callable[[Sequence[Any]], None]:
    """``run`` for one library and launch settings, as a function of the arguments alone: the same
    launch, with a short path for what a batch repeats (every argument a GM tensor or None, no trace,
    no dropped syncs, no hold, no inserted syncs) that does only the work that changes per launch.

    Why: an empty C++ launch on a core is all Python around one C call, paid by every core of every
    launch while its caches are cold from the other processes. Measured per core inside the kernel
    call (scripts/bench_ascendc.py's empty kernel, interleaved): the general path (slots_of, then
    run_slots) 9.6 us, this one 4.8 us, the C call alone 3.1 us, an empty Python kernel 1.2 us."""
    params = lib.params
    n_params = len(params)
    pointers_only = all(p == "p" for p in params)
    # run_slots' settings for such a launch
    plain: tuple[Any, ...] = (False, memcheck, tiling_key, sys_workspace_bytes, frozenset(), None, False, 0)
    bound: list[Any] = []  # [core, launch, byref(launch), c_slots, c_regions, last, used, _Launch]
    repeat: list[Any] = [None, -1]  # [the arguments' GM places at the last marshalling, windows' generation]
    windows_of = WINDOWS
    call = lib.run_unconverted or lib.run

    def general(args: Sequence[Any]) -> None:
        slots, regions = slots_of(params, args)
        run_slots(lib, kernel_type, slots, regions, tiling_key, sys_workspace_bytes, memcheck, stages)
        core = kcontext.current().native
        if not bound or bound[0] is not core:
            launch, c_slots, c_regions, last, native = _STRUCTS[(id(core), kernel_type)]
            bound[:] = [core, launch, ctypes.byref(launch), c_slots, c_regions, last,
                        native[1] if native is not None else None, _Launch(lib, core)]

    def run_args(args: Sequence[Any]) -> None:
        global _current
        core = current_native_core()
        if not bound or bound[0] is not core or not pointers_only or len(args) != n_params or not core.plain:
            general(args)
            return
        _, launch, p_launch, c_slots, c_regions, last, used, state = bound
        # The tensors of a batch's launches repeat (the caching allocator hands out the same blocks):
        # when they are the last launch's and this launcher wrote the arrays the library reads, with
        # no window unmapped since, the slots and regions are already in place.
        # (only run_slots writes inserts or other settings, and it clears last[2]: checked on a change)
        seen = [(a.segment, a.offset, a.root_offset, a.root_nbytes) if type(a) is GlobalTensor
                else None if a is None else _NOT_GM for a in args]
        if seen != repeat[0] or last[2] is not run_args or windows_of.generation != repeat[1]:
            if launch.n_inserts:
                general(args)  # (it clears them)
                return
            slots, regions = slots_of(params, args)  # (an argument that is no GM tensor: its error)
            _write_arguments(launch, c_slots, c_regions, last, slots, regions)
            if last[0] != plain:
                _write_settings(launch, plain)
                last[0] = plain
            last[2] = run_args
            repeat[:] = [seen, windows_of.generation]
        state.pending = None  # (one _Launch for every launch of this library on this core)
        _current = state
        try:
            rc = call(p_launch, c_slots, n_params)
        finally:
            _current = None
            if used is not None and used.value:
                _report_native_flags(core, used)
        if rc != abi.RUN_OK:
            pending, state.pending = state.pending, None  # (not kept alive by the reused _Launch)
            raise launch_error(state, pending, params, args, rc)

    def native_entry() -> NativeEntry | None:
        """What a native serving loop needs to run this launcher's plain launches on this core
        (mpnpu.ascendc.native.serve), once a launch has set this core's launch struct up; None if it
        cannot (a library built with stage hooks or without the loop)."""
        if not bound or stages or lib.serve is None or n_params > _MAX_ARGS:
            return None
        core, launch, _, c_slots, c_regions, last, used, _ = bound
        if core is not current_native_core():
            return None
        return NativeEntry(lib, launch, c_slots, c_regions, last, used, n_params, memcheck, tiling_key,
                           sys_workspace_bytes)

    run_args.native_entry = native_entry  # type: ignore[attr-defined]
    return run_args


@dataclass
class NativeEntry:
    """A kernel's launch on this core as a native serving loop runs it (see launcher.native_entry)."""

    lib: Library
    launch: Any  # this core's abi.Launch for the kernel type
    slots: Any  # its slot array
    regions: Any  # its region array
    #: the launch struct's record of what it holds (see _launch_struct): a loop that wrote the
    #: struct invalidates it, so that the core process's next launch writes everything again
    last: list[Any]
    used: Any  # the native flag marks (c_uint64), or None
    n_params: int
    memcheck: bool
    tiling_key: int
    sys_workspace_bytes: int


#: what launcher's record of the last launch's arguments holds for one that is neither a GM tensor nor
#: None (compared by identity: never equal to a recorded launch, which had none)
_NOT_GM = object()


def _write_arguments(launch: Any, c_slots: Any, c_regions: Any, last: list[Any], slots: Sequence[int],
                     regions: Sequence[Region]) -> None:
    """Write a launch's slots and regions (slots_of's) into a launch struct's arrays, and its region
    count when that changed (``last[1]``, see _launch_struct)."""
    n = len(regions)
    if n == 1:
        r = regions[0]
        c_regions[0], c_regions[1] = r.addr, r.size
    else:
        c_regions[:2 * n] = [v for r in regions for v in (r.addr, r.size)]
    if n != last[1]:
        launch.n_regions = last[1] = n
    c_slots[:len(slots)] = slots


def _write_settings(launch: Any, settings: tuple[Any, ...]) -> None:
    """Write a launch's per-launch settings (see run_slots) into the library's launch struct."""
    traced, memcheck, tiling_key, sys_workspace_bytes, dropped, hold, host_mode, sys_fallback = settings
    launch.trace = 1 if traced else 0
    launch.host_mode = 1 if host_mode else 0
    launch.sys_fallback = sys_fallback
    launch.memcheck = 1 if memcheck else 0
    launch.tiling_key = tiling_key
    launch.sys_workspace_bytes = sys_workspace_bytes
    if dropped:
        names = [d.encode() for d in sorted(dropped)]
        c_dropped = (ctypes.c_char_p * len(names))(*names)
        launch.n_dropped, launch.dropped = len(names), c_dropped
    else:
        launch.n_dropped = 0
    launch.hold_site = hold.site.encode() if hold is not None else None


def _inserts(launch: Any, core: NativeCore, stages: Sequence[tuple[str, tuple[int, ...]]]) -> list[Any]:
    """Fill the launch's inserted syncs for this core (its StageHooks, at its stages' functions);
    returns what must stay alive while the kernel runs."""
    hooks = core.stage_hooks
    if hooks is None:
        launch.n_inserts, launch.inserts = 0, None
        return []
    if not stages:
        raise UnsupportedError("syncs can be inserted into a C++ kernel only through a kernel object mpnpu built "
                               "(Device.launch_with checks out its instrumented build)")
    where = dict(stages)
    records = []
    for entering, table in ((1, hooks.on_entry), (0, hooks.on_exit)):
        for stage, inserts in table.items():
            for ins in inserts:
                if ins.kind == "flag":
                    kind = abi.INS_FLAG_WAIT if entering else abi.INS_FLAG_SET
                else:
                    kind = abi.INS_SYNC_AIV if ins.kind == "sync_aiv" else abi.INS_SYNC_ALL
                for offset in where.get(stage, ()):
                    records.append((offset, entering, kind, ins.mode, ins.flag_id, ins.name.encode(), stage.encode()))
    array = (abi.Insert * max(1, len(records)))()
    for i, (offset, entering, kind, mode, flag_id, name, stage_name) in enumerate(records):
        array[i].fn_offset, array[i].at_entry, array[i].kind = offset, entering, kind
        array[i].mode, array[i].flag_id = mode, flag_id
        array[i].name, array[i].stage = name, stage_name
    launch.n_inserts, launch.inserts = len(records), array
    return [array, records]


_MAX_ARGS = abi.SERVE_MAX_ARGS  # the slot and region arrays (a native serving loop fills them too)
_STRUCTS: dict[tuple[int, KernelType], tuple[Any, Any, Any, list[Any], Any]] = {}


def _launch_struct(core: NativeCore, kernel_type: KernelType, n_slots: int,
                   n_regions: int) -> tuple[Any, Any, Any, list[Any], Any]:
    """This core's launch struct for ``kernel_type`` with what never changes between its launches set
    once (identity, callbacks, pipes), its slot and region arrays, and a list holding the
    per-launch settings, the region count last written into it and the launcher that wrote the
    arrays last (or None); a launch sets only what changed."""
    if n_slots > _MAX_ARGS or n_regions > _MAX_ARGS:
        raise KernelAPIError(f"a kernel takes at most {_MAX_ARGS} arguments here, got {n_slots}")
    key = (id(core), kernel_type)
    hit = _STRUCTS.get(key)
    if hit is None:
        launch = abi.Launch()
        launch.abi = abi.ABI_VERSION
        launch.core_type = 1 if core.core_type is CoreType.CUBE else 0
        launch.kernel_type = KERNEL_TYPE_NUMBERS[kernel_type]
        launch.block_idx = core.block_idx
        launch.block_num = core.block_num
        launch.subblock_idx = core.sub_block_idx
        launch.subblock_num = core.sub_block_num
        launch.task_ration = core.sub_block_num
        launch.core_calls = ctypes.pointer(_CORE_CALLS)
        launch.last_words = core.last_words_address()
        launch.last_words_size = LAST_WORDS_BYTES
        launch.calls = core.calls_address()
        launch.where = core.where_address()
        launch.where_size = WHERE_BYTES
        # A C++ kernel orders its own pipes: asynchronous unless the launch asks for them in order.
        launch.pipes = ((0 if core.pipes_mode == "sync" else abi.PipesFlag.ASYNC)
                        | (abi.PipesFlag.AUTO_SYNC if core.auto_sync else 0))
        launch.pipe_latency_ns = int(core.pipe_latency_us * 1000)
        launch.sync_timeout_ns = int(core.sync_timeout_s * 1e9)
        native = native_sync_for(core)
        if native is not None:
            launch.native = ctypes.pointer(native[0])
        c_slots = (ctypes.c_uint64 * _MAX_ARGS)()
        # The regions as a flat array of (addr, size) pairs (MpnpuRegion's layout): filled with one
        # slice assignment per launch instead of a Structure proxy per field.
        c_regions = (ctypes.c_uint64 * (2 * _MAX_ARGS))()
        launch.regions = ctypes.cast(c_regions, ctypes.POINTER(abi.Region))
        hit = _STRUCTS[key] = (launch, c_slots, c_regions, [None, -1, None], native)
    return hit


def slots_of(params: Sequence[str], args: Sequence[Any], trim: bool = True) -> tuple[list[int], list[Region]]:
    """The 64-bit slots of the kernel's arguments and the GM allocations they point into
    (``trim=False``: as they are mapped now, after a launch; no window is unmapped first)."""
    if len(args) != len(params):
        raise KernelAPIError(f"the kernel takes {len(params)} arguments ({describe_params(params)}), got {len(args)}")
    slots: list[int] = []
    regions: dict[tuple[str, int, int], Region] = {}
    # (per launch and core: every attribute lookup here is paid once per argument per launch)
    windows, append = WINDOWS.mapped, slots.append
    if trim and len(windows) > WINDOWS.max_windows:
        WINDOWS.trim()  # (before this launch maps anything: no pointer of it can be unmapped)
    for kind, arg in zip(params, args):
        if kind == "p":
            if arg is None:
                append(0)
                continue
            if not isinstance(arg, GlobalTensor):
                raise KernelAPIError(f"a pointer parameter needs a GM tensor, got {type(arg).__name__}")
            segment, root_offset, nbytes = arg.segment, arg.root_offset, arg.root_nbytes
            if not segment:  # a tensor without elements: a valid, unusable pointer
                append(0)
                continue
            # (attached and prefaulted already: the core does that for every launch argument)
            # The allocation's own window (mpnpu.ascendc.native.windows): pointers derived from it cannot
            # reach another tensor unnoticed.
            key = (segment, root_offset, nbytes)
            root = windows.get(key)
            if root is None:
                root = WINDOWS.address(segment, root_offset, nbytes)
            append(root + arg.offset - root_offset)
            if key not in regions:
                regions[key] = Region(root, nbytes, arg)
        elif kind == "f":
            append(int(np.float32(arg).view(np.uint32)))
        elif kind == "d":
            append(int(np.float64(arg).view(np.uint64)))
        else:
            append(int(arg) & 0xFFFF_FFFF_FFFF_FFFF)
    out = list(regions.values())
    if len(out) > 1:
        out.sort(key=_region_addr)
    return slots, out


def _region_addr(r: Region) -> int:
    return r.addr


def _trace_records(state: _Launch, regions: Sequence[Region]) -> RecordChunk | None:
    """The library's trace records of this launch as they ship to the parent (None: none), which
    decodes them into trace events only if something reads them (:mod:`.records`)."""
    ptr = ctypes.c_void_p()
    n = state.lib.events(ctypes.byref(ptr))
    if n <= 0 or not ptr.value:
        return None
    data = ctypes.string_at(ptr.value, n * abi.EVENT_DTYPE.itemsize)
    # (distinct, not np.unique: its hashing path took 0.9 ms a launch in the core processes, most of
    # what tracing a compiled kernel cost there)
    used = distinct(np.frombuffer(data, dtype=abi.EVENT_DTYPE)["site"]).tolist()
    return RecordChunk(data, _site_table(state, used),
                       tuple((r.tensor.name, r.tensor.segment, r.tensor.root_offset) for r in regions))


def _site_table(state: _Launch, ids: Sequence[int]) -> tuple[tuple[int, str, str], ...]:
    """(id, site, function) of each of this launch's site ``ids``: :meth:`_Launch.site` for every
    site a traced launch names (a hundred or so), with one set of out-arguments for all the calls."""
    f, ln, fn = ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_char_p()
    args = (ctypes.byref(f), ctypes.byref(ln), ctypes.byref(fn))
    call, known, names = state.lib.site, state.sites, _SITE_NAMES
    out = []
    for i in ids:
        got = known.get(i)
        if got is None:
            if call(i, *args):
                raw = (f.value, ln.value, fn.value)
                got = known[i] = names.get(raw) or state.site(i)
            else:
                got = ("?", "?")
        out.append((i, *got))
    return tuple(out)


def launch_error(state: CallbackTarget, pending: BaseException | None, params: Sequence[str], args: Sequence[Any],
                 rc: int) -> BaseException:
    """The error of a launch of ``args`` whose library returned ``rc``: what a callback raised
    (``pending``), else the fault the library reported, on the regions as the library indexed
    them (the windows the launch used, none unmapped since)."""
    if rc == abi.RUN_CORE_CALL_ERROR and pending is not None:
        return pending
    return _fault_error(state, slots_of(params, args, trim=False)[1], rc)


def _fault_error(state: CallbackTarget, regions: Sequence[Region], rc: int) -> MpnpuError:
    """The Python error for a fault the library reported."""
    f = state.lib.fault().contents
    message = f.message.decode(errors="replace")
    site, func = state.site(f.site) if f.site >= 0 else ("?", "?")
    where = f" at {site} ({func})" if f.site >= 0 else ""
    if rc == abi.RUN_CXX_EXCEPTION:
        return KernelAPIError(f"{message}{where}")
    if f.kind in (abi.FAULT_ILLEGAL_READ, abi.FAULT_ILLEGAL_WRITE):
        kind = ILLEGAL_READ if f.kind == abi.FAULT_ILLEGAL_READ else ILLEGAL_WRITE
        call = message or "an access"  # (the library names the call; the words are memcheck's)
        if f.mem >= 0:
            return local_fault(kind, call, site, func, abi.MEMORY_NAMES[f.mem], f.start, f.stop, f.limit_lo,
                               f.limit_hi)
        start, stop, region = f.start, f.stop, f.region
        if region < 0:
            # Past the end of an allocation, in the unmapped gap after its window: that allocation
            # is the one the pointer came from (mpnpu.ascendc.native.windows).
            owner = [i for i, r in enumerate(regions) if r.addr <= start < r.addr + r.size + GAP_BYTES]
            if not owner:
                return gm_fault_unknown(kind, call, site, func, start, stop)
            region = owner[-1]
            start, stop = start - regions[region].addr, stop - regions[region].addr
        t = regions[region].tensor
        return gm_fault(kind, call, site, func, t.name, t.dtype.name, t.dtype.itemsize, t.root_nbytes, start, stop)
    cls = UnsupportedError if f.kind == abi.FAULT_UNSUPPORTED else KernelAPIError
    return cls(f"{message}{where}", site=site)
