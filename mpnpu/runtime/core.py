"""The core process: one per cube or vector core, serving every launch of a device's lifetime.

Life of a core process (forked by :class:`mpnpu.runtime.device.Device`)::

    start: ignore SIGINT (the parent turns Ctrl-C into an orderly shutdown), die with the parent
           (PR_SET_PDEATHSIG), one BLAS thread, install its CoreContext in mpnpu.runtime.kcontext
    loop:  wait for a message on its pipe (polling the parent's pid while idle)
           LaunchCommand -> run the kernel function -> LaunchDone on the reply board
                            (mpnpu.runtime.replies), or sent: the launch's last, LaunchFailed
           ExitCommand   -> return
           (the message types are in mpnpu.runtime.protocol)

Nothing here ever waits without a timeout: barrier and flag waits are bounded by the sync timeout,
and the idle loop wakes every second to check that the parent is still alive.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import os
import pickle
import select
import signal
import sys
import time
import traceback
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any, Callable, Union

import numpy as np

from mpnpu.errors import SyncTimeoutError, UsageError

from . import kcontext, native_trace, protocol
from .config import DeviceSpec, RuntimeOptions
from .gm import GlobalTensor, SegmentTable
from .hold import HoldPlan, HoldRunner, runner_for
from .insert import InsertedSync, StageHooks, hooks_for
from .local import TPipe, make_arenas, memcheck_local
from .pipes import PipeEngine
from .procutil import available_cpu_count, limit_blas_threads, set_parent_death_signal
from .protocol import (
    ErrorReport,
    ExitCommand,
    LaunchCommand,
    LaunchDone,
    LaunchFailed,
    Reply,
)
from .seam import KernelObject, NativeCore, NativeServing, Served, ServesNatively, pipes_mark, plain_launch
from .spin import spin_budget_s, spin_until
from .sync import WHERE_SIGNAL, AnyFlagPort, CoreState, SyncObjects
from .topology import CoreInfo, CoreType, Topology
from .trace import PackedEvents, TraceEvent

#: how often a core whose wait budget is 0 (its CPUs crowded) looks at its CPUs again, in seconds:
#: its waits never look, and the check is a system call on the path of the cores queued behind it
SPIN_RECHECK_S = 0.05


class CoreContext:
    """What the kernel-facing API needs to know inside one core process."""

    def __init__(self, info: CoreInfo, topology: Topology, sync: SyncObjects, spec: DeviceSpec,
                 options: RuntimeOptions) -> None:
        self.info = info
        self.topology = topology
        self.sync = sync
        self.spec = spec
        self.options = options
        self.segments = SegmentTable()
        self.tpipe = TPipe(info, spec, make_arenas(info, spec))  # the local-buffer allocator (Ascend C TPipe)
        self.stage = "kernel"
        self.atomic_add = False
        self.dropped_syncs: frozenset[str] = frozenset()
        self.events: list[TraceEvent] | None = None
        self.flag_ports: dict[tuple[int, int], AnyFlagPort] = {}  # (mode, id) -> this core's end
        self.sync_all_site = ""  # where this core last called SyncAll in this launch
        self.sync_all_ids_site = ""  # where it last used a flag id SyncAll is built on, in this launch
        self.kernels: dict[int, Any] = {}  # handle -> kernel reference (LaunchCommand.kernel)
        self.hold: HoldRunner | None = None  # in a race-directed launch
        self.stage_hooks: StageHooks | None = None  # when a launch inserts syncs
        self.pipes = PipeEngine(info.label, options.sync_timeout_s, int(options.pipe_latency_us * 1000))
        #: seconds a wait of this core looks before it sleeps (mpnpu.runtime.spin), for the CPUs this
        #: process may use (inherited at the fork, changed by a re-pin): see refresh_spin
        cpus = available_cpu_count()
        self.spin_s = spin_budget_s(options.spin_us, topology.n_cores, cpus)
        #: the CPUs spin_s was worked out for (-1: the options fix the budget)
        self.spin_cpus = -1 if options.spin_us is not None else cpus
        self._spin_checked = time.monotonic()  # when a crowded core last looked at its CPUs
        #: told the new budget when refresh_spin changes it (the C++ library's copy)
        self.spin_listeners: list[Callable[[float], None]] = []
        #: the launch's kernel orders its own pipes (api.pipelined): trace local-memory accesses
        self.pipe_aware = False
        #: the launch running (or run last) is plain (mpnpu.runtime.seam.plain_launch): set by begin_launch
        self.plain = True
        #: a kernel object's native serving loop (see offer_native), or None: this core reads its pipe
        self.native_loop: NativeServing | None = None
        self._native_offered: set[int] = set()  # kernel handles offered to it
        #: what a front end's native runtime may see and do of this core (its only view of it)
        self.native = NativeCore(self)

    def refresh_spin(self, force: bool = False) -> None:
        """Work the wait budget out again for the CPUs this process may use now (between launches).

        Runs after every reply, while the launch's other cores (and the parent, woken by the last
        reply) may be queued for this CPU: with more core processes than CPUs, a launch pays for
        every microsecond here once per core queued behind this one. So it is kept to one system
        call, and a crowded core (budget 0) makes it at most every SPIN_RECHECK_S: a budget the
        options give never changes, and the default one depends only on how many CPUs there are
        (not on which, and without sorting them). ``force``: now, whatever the budget (a native
        serving loop saw the CPUs change)."""
        if self.options.spin_us is not None:
            return
        if not self.spin_s and not force:
            now = time.monotonic()
            if now - self._spin_checked < SPIN_RECHECK_S:
                return
            self._spin_checked = now
        cpus = available_cpu_count()
        self.spin_cpus = cpus
        spin_s = spin_budget_s(None, self.topology.n_cores, cpus)
        if spin_s != self.spin_s:
            self.spin_s = spin_s  # (Python flag waits read it at each wait)
            for listener in self.spin_listeners:
                listener(spin_s)

    def begin_launch(self, dropped_syncs: frozenset[str], trace: bool, hold: HoldPlan | None = None,
                     inserts: tuple[InsertedSync, ...] = ()) -> None:
        self.tpipe.reset()
        self.stage = "kernel"
        self.atomic_add = False
        self.plain = plain_launch(trace, dropped_syncs, hold, inserts)
        self.dropped_syncs = dropped_syncs
        self.events = [] if trace else None
        if trace:
            native_trace.activate()  # (the C recorder of Python kernels' records: once per process)
        self.hold = None if hold is None else runner_for(
            hold, self.info.core_id, self.sync.hold_board, self.sync.status_view(),
            (int(CoreState.IN_SYNC_ALL), int(CoreState.IN_SYNC_AIV), int(CoreState.IN_FLAG_WAIT)),
            (int(CoreState.DONE), int(CoreState.FAILED)))
        if self.hold is not None:
            self.hold.on_hold = self.pipes.wake_pipes
        self.stage_hooks = hooks_for(inserts, self.info.core_type is CoreType.CUBE)
        for port in self.flag_ports.values():
            port.used = False
        self.sync_all_site = ""
        self.sync_all_ids_site = ""

    def start_pipes(self, kernel: Callable[..., Any]) -> PipeEngine:
        """Choose how this launch runs its pipes: asynchronously for a kernel that orders them
        itself (marked ``api.pipelined``), in order for one written without intra-core syncs;
        ``RuntimeOptions.pipes`` "async" / "sync" overrides the kernel's mark. A kernel marked
        "own" (a compiled kernel) orders its pipes and runs them itself: this engine stays in order."""
        mark = pipes_mark(kernel)
        self.pipe_aware = mark in ("async", "own")
        mode = self.options.pipes
        self.pipes.reset(mark != "own" and (mode == "async" or (mode == "kernel" and self.pipe_aware)))
        return self.pipes

    def offer_native(self, handle: int, kernel: object) -> None:
        """After a plain launch of kernel ``handle`` ran here: a kernel object that serves natively
        (mpnpu.runtime.seam.ServesNatively, e.g. a compiled kernel) may serve this core's later
        launches of it without this process's Python; once per handle."""
        if handle in self._native_offered:
            return
        self._native_offered.add(handle)
        if isinstance(kernel, ServesNatively):
            self.native_loop = kernel.mpnpu_native_register(self.native, handle, self.native_loop)

    def flags_set(self) -> tuple[tuple[int, int], ...]:
        """(mode, id) of every flag this core set in the current launch."""
        return tuple((p.mode, p.flag_id) for p in self.flag_ports.values() if p.used)


# -- kernel references -------------------------------------------------------------------------


#: a kernel as the runtime sends it to the cores: "module:function" / "path.py:function", or a
#: kernel object (see :func:`is_kernel_object`)
KernelRef = Union[str, Any]


def is_kernel_object(kernel: object) -> bool:
    """A kernel given as an object rather than a function (mpnpu.runtime.seam.KernelObject, with
    its name a string): the optional protocols it may also satisfy, and what the runtime does with
    each, are declared in :mod:`mpnpu.runtime.seam`. The runtime knows nothing else about it."""
    return isinstance(kernel, KernelObject) and isinstance(getattr(kernel, "mpnpu_kernel_name", None), str)


def kernel_name(ref: KernelRef) -> str:
    """How reports and errors name a kernel reference."""
    return ref if isinstance(ref, str) else ref.mpnpu_kernel_name


def kernel_reference(kernel: str | Callable[..., Any]) -> KernelRef:
    """Normalise a kernel given as a function or as "module:function" / "path.py:function"
    (a kernel object is its own reference)."""
    if is_kernel_object(kernel):
        return kernel
    if callable(kernel):
        module, qualname = getattr(kernel, "__module__", None), getattr(kernel, "__qualname__", "")
        if not module or "<" in qualname:
            raise UsageError(f"kernel {kernel!r} is not importable by name; define it at module level")
        if module == "__main__":
            path = getattr(sys.modules["__main__"], "__file__", None)
            if not path:
                raise UsageError("a kernel defined in an interactive __main__ cannot be imported by core processes")
            return f"{os.path.abspath(path)}:{qualname}"
        return f"{module}:{qualname}"
    if not isinstance(kernel, str) or ":" not in kernel:
        raise UsageError(f"kernel must be a function or 'module:function', got {kernel!r}")
    return kernel


_RESOLVED: dict[str, Callable[..., Any]] = {}


#: folders :func:`add_folder_to_path` put on sys.path in this process
_ADDED_FOLDERS: set[str] = set()


def add_folder_to_path(path: str) -> None:
    """Put the folder of a kernel or operator file on ``sys.path``, last (running the file would put
    it first): the file imports its siblings by name (``from my_kernel import main``, a kernel
    reference ``"my_kernel:main"``), and a sibling never hides an installed module (one named like
    an installed module loses to it). Core processes forked after it inherit the path; for those
    forked before, :func:`sibling_reference` names such a kernel by its file."""
    folder = os.path.dirname(os.path.abspath(path))
    _ADDED_FOLDERS.add(folder)
    if folder not in sys.path:
        sys.path.append(folder)


def sibling_reference(ref: str) -> str:
    """``"module:function"`` for a top-level module found in a folder :func:`add_folder_to_path`
    added, as ``"path/to/module.py:function"``: core processes forked before that folder went on
    sys.path (a device opened before the operator was loaded) import it by file. Any other
    reference is returned as it is. Finds the module without running it."""
    target, sep, attr = ref.rpartition(":")
    if not sep or not _ADDED_FOLDERS or target.endswith(".py") or "." in target:
        return ref
    try:
        spec = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        return ref
    origin = getattr(spec, "origin", None) or ""
    if origin.endswith(".py") and os.path.dirname(origin) in _ADDED_FOLDERS:
        return f"{origin}:{attr}"
    return ref


def resolve_kernel(ref: KernelRef) -> Callable[..., Any]:
    """Import the function a kernel reference names (cached per process); a kernel object is
    already the callable."""
    if not isinstance(ref, str):
        return ref  # type: ignore[no-any-return]  # a kernel object: callable
    fn: Any = _RESOLVED.get(ref)
    if fn is not None:
        return fn  # type: ignore[no-any-return]  # a checked callable
    target, _, attr = ref.rpartition(":")
    try:
        if target.endswith(".py"):
            name = "mpnpu_kernel_" + str(abs(hash(os.path.abspath(target))))
            module = sys.modules.get(name)
            if module is None:
                add_folder_to_path(target)
                spec = importlib.util.spec_from_file_location(name, target)
                if spec is None or spec.loader is None:
                    raise UsageError(f"{target} is not a Python file")
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
        fn = module
        for part in attr.split("."):
            fn = getattr(fn, part)
    except Exception as e:  # any import-time failure is the user's kernel reference being wrong
        raise UsageError(f"cannot load kernel {ref!r}: {type(e).__name__}: {e}") from None
    if not callable(fn):
        raise UsageError(f"kernel {ref!r} is not a function")
    _RESOLVED[ref] = fn
    return fn  # type: ignore[no-any-return]  # a checked callable


# -- the process -------------------------------------------------------------------------------


def core_main(core_id: int, topology: Topology, conn: Connection, sync: SyncObjects, spec: DeviceSpec,
              options: RuntimeOptions, parent_pid: int, death_signal: bool = True) -> None:
    """Entry point of a core process.

    ``death_signal``: die with the parent (PR_SET_PDEATHSIG). Linux sends that signal when the
    *thread* that forked us ends, so the parent passes False when it forks from a thread other
    than the main one; the core then only notices a dead parent by polling while idle.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # The parent forked us with SIGINT/SIGTERM blocked so that none could land before the lines
    # above; now they are safe to receive.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    if death_signal:
        set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(0)
    limit_blas_threads(1)
    # The chip computes on NaN and inf without a word: a kernel that read data another core had not
    # written yet (a race) must not print numpy's "invalid value" warnings into the tool's output.
    np.seterr(all="ignore")
    ctx = CoreContext(topology.core(core_id), topology, sync, spec, options)
    kcontext.install(ctx)

    def say_where(signum: int, frame: FrameType | None) -> None:
        # The watchdog asks a core that makes no progress where it is (docs/device-model.md,
        # "Watchdog"): a Python kernel's line. (A C++ kernel's library answers in C while it runs.)
        sync.write_where(core_id, kcontext.report_where(frame) or kcontext.OUTSIDE_KERNEL)

    signal.signal(WHERE_SIGNAL, say_where)
    memcheck_local(options.memcheck)
    # A persistent poll object: Connection.poll() builds a selector on every call, which costs
    # more than the rest of an empty launch.
    fd = conn.fileno()
    replies = sync.replies
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    def answer(reply: Reply) -> bool:
        """Reply on the board, unless this core is the launch's last (then the message wakes the
        parent); False: the parent is gone."""
        return replies.post(core_id, reply, options.sync_timeout_s) or protocol.send(fd, reply)

    replied = False
    while True:
        loop = ctx.native_loop
        if loop is not None:  # the loop reads the pipe, runs what it can, hands the rest back
            try:
                kind, value = loop.serve(fd, replied)
            except (EOFError, OSError):
                return
            replied = False
            if kind is Served.MESSAGE:
                message = protocol.decode(value)
            elif kind is Served.IDLE:
                if os.getppid() != parent_pid:
                    os._exit(0)
                continue
            elif kind is Served.FAILED:
                launch_id, error = value
                ctx.sync.set_state(core_id, CoreState.FAILED)
                if not answer(LaunchFailed(launch_id, core_id, error_report(error))):
                    return
                continue
            elif kind is Served.REPLY:
                if not answer(value):
                    return
                replied = True
                continue
            else:  # Served.CLOSED
                return
        else:
            # Launches of a batch come back to back: after a reply, look for the next command a while
            # before sleeping (an idle core only sleeps).
            if replied and ctx.spin_s and not poller.poll(0):
                spin_until(lambda: bool(poller.poll(0)), ctx.spin_s)
            replied = False
            if not poller.poll(1000):
                if os.getppid() != parent_pid:
                    os._exit(0)
                continue
            try:
                message = protocol.recv(fd)
            except (EOFError, OSError):
                return
        if type(message) is LaunchCommand:
            if not answer(run_launch(ctx, message)):
                return
            replied = True
            ctx.refresh_spin()  # (after the reply: off the launch's path)
        elif type(message) is ExitCommand:
            return


def run_launch(ctx: CoreContext, command: LaunchCommand) -> Reply:
    """Run one kernel launch on this core and build the reply for the parent.

    A traced launch runs with the cyclic garbage collector paused. Its records (a few per
    instruction) and the closures of its timed copies are thousands of young objects, and the
    collector went over the live ones every 700 allocations: about a twelfth of what tracing cost a
    core of FLOMS in Python (a perf profile, side by side with a plain batch). What the kernel leaves
    in a cycle is collected after the launch, as anything else is, and the collector is on again
    after it whatever the kernel did with it."""
    if not command.trace or not gc.isenabled():
        return _run_launch(ctx, command)
    gc.disable()
    try:
        return _run_launch(ctx, command)
    finally:
        gc.enable()


def _run_launch(ctx: CoreContext, command: LaunchCommand) -> Reply:
    core_id = ctx.info.core_id
    launch_id, kernel, args, kwargs, dropped_syncs, trace, hold, inserts = command  # once: attribute reads cost more
    handle: int | None = None
    if type(kernel) is int:  # a reference this pool was sent before (LaunchCommand.kernel)
        handle, kernel = kernel, ctx.kernels.get(kernel)
        if kernel is None:  # (never: a pool's cores get every handle before its use)
            ctx.sync.set_state(core_id, CoreState.FAILED)
            return LaunchFailed(launch_id, core_id, error_report(
                RuntimeError(f"launch {launch_id} names kernel handle {handle}, which this core was never sent")))
    elif type(kernel) is tuple:
        handle, kernel = kernel
        ctx.kernels[handle] = kernel
    for arg in args:
        # Attach (and prefault) new GM segments before the kernel starts, not inside it.
        if isinstance(arg, GlobalTensor) and arg.segment:
            ctx.segments.get(arg.segment)
    ctx.begin_launch(dropped_syncs, trace, hold, inserts)
    start = time.perf_counter()
    try:
        fn = resolve_kernel(kernel)
        pipes = ctx.start_pipes(fn)
        fn(*args, **kwargs)
        if pipes.asynchronous:
            pipes.finish()  # the kernel ends when its pipes have drained
    except BaseException as e:  # any failure of the kernel is reported, even SystemExit
        ctx.pipes.abort()
        ctx.sync.set_state(core_id, CoreState.FAILED)
        return LaunchFailed(launch_id, core_id, error_report(e))
    finally:
        events = ctx.events
        ctx.events = None
    elapsed = time.perf_counter() - start
    ctx.sync.set_state(core_id, CoreState.DONE)
    if handle is not None and ctx.plain:
        ctx.offer_native(handle, fn)
    # (packed: columns of plain values, and a compiled kernel's records as written, pickle and unpickle far
    # faster than NamedTuples; the parent decodes them only if something reads them)
    packed = PackedEvents.pack(events) if events is not None else None
    if packed is not None and ctx.sync.traces.put(core_id, packed):
        packed = None  # (on the trace board: the reply is as small as an untraced launch's)
    return LaunchDone(launch_id, core_id, elapsed, packed, ctx.flags_set())


#: frames of a core's traceback that reports show (the innermost ones)
TRACEBACK_TAIL_FRAMES = 4


def error_report(e: BaseException) -> ErrorReport:
    """Describe an exception for the parent (the exception itself only if it survives pickling),
    with the kernel line it came from and the last frames of its traceback."""
    try:
        data = pickle.dumps(e)
        pickle.loads(data)
        pickled: bytes | None = data
    except Exception:
        pickled = None
    site, function = kcontext.traceback_site(e.__traceback__)
    frames = traceback.extract_tb(e.__traceback__)[-TRACEBACK_TAIL_FRAMES:]
    tail = "".join(traceback.format_list(frames)) + "".join(traceback.format_exception_only(type(e), e))
    return ErrorReport(
        type=type(e).__name__,
        message=str(e),
        traceback="".join(traceback.format_exception(type(e), e, e.__traceback__)),
        pickled=pickled,
        # A wait that timed out is usually a consequence of another core's failure.
        secondary=isinstance(e, SyncTimeoutError),
        site=site,
        function=function,
        tail=tail,
    )
