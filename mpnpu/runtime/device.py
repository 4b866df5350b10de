"""The device: GM, a core pool, and kernel launches.

::

    Device(block_dim)
     ├─ GlobalMemory: shared-memory segments + caching allocator (stale data stays, as on chip)
     ├─ CorePool: 3*block_dim core processes (mpnpu.runtime.pool), forked once, serving every launch
     │    └─ SyncObjects: SyncAll barriers, flag counters, atomic lock, status board
     └─ launch(kernel, *args) ─ LaunchCommand, pickled once ─► every core's pipe ─► kernel on every core
                               ◄─ LaunchDone | LaunchFailed ─ each core's pipe, or its sentinel if it died

The parent only dispatches and collects; it never takes part in a barrier. While a launch runs it
watches replies, process sentinels and, on a short tick, the status board (mpnpu.runtime.watchdog),
so that a SyncAll some core can no longer reach or a flag wait nobody can satisfy is reported
within milliseconds instead of at a timeout.

Any failed launch (a core raised, died, deadlocked, timed out) throws the whole pool away and forks
a fresh one, because a core killed inside ``Barrier.wait`` wedges that barrier for good; GM
survives, so the next case still sees the last case's stale blocks. docs/device-model.md tells
the whole model.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import time
import weakref
from dataclasses import dataclass
from multiprocessing import resource_tracker
from typing import Any, Callable, Iterator, NamedTuple, Sequence, cast

import numpy as np

from mpnpu.errors import DeviceClosedError, DeviceConfigError, TraceError, UsageError

from . import native_trace, protocol
from .checks import check_launch_width, cores_at_once
from .config import (
    DEFAULT_BLOCK_DIM,
    DEFAULT_OPTIONS,
    DEFAULT_SPEC,
    PLAIN_LAUNCH,
    DeviceSpec,
    LaunchOptions,
    RuntimeOptions,
)
from .core import kernel_name, kernel_reference, resolve_kernel
from .dtypes import DTypeLike, from_float32, get_dtype
from .gm import GlobalMemory, GlobalTensor, sweep_stale_segments
from .hold import HoldOutcome, HoldPlan, check_plan
from .insert import parse_inserts
from .pool import CorePool, Waves
from .protocol import LaunchCommand
from .seam import KernelHooks, hooks_of, pipes_mark, plain_launch
from .spin import with_env_spin
from .sync import ST_COLUMNS
from .topology import KernelType, Topology
from .trace import LaunchTrace, PackedEvents, TraceEvent
from .trace_board import TraceBoard

#: called with the device after it replaced its core pool by a fresh one (new pids)
RebuildListener = Callable[["Device"], None]


class LaunchResult(NamedTuple):
    """What a successful launch returns."""

    launch_id: int
    kernel: str
    elapsed_s: float  # parent's wall time from dispatch to the last reply
    core_elapsed_s: tuple[float, ...]  # each core's time inside the kernel function, by core id
    trace: LaunchTrace | None  # per-core events, when launched with LaunchOptions(trace=True)
    hold: HoldOutcome | None = None  # what the hold did, when launched with a HoldPlan


@dataclass
class _State:
    """Everything that must be released, held apart from the Device so a finalizer can reach it."""

    gm: GlobalMemory
    pool: CorePool | None = None
    busy: bool = False
    closed: bool = False


class Device:
    """An emulated NPU: ``block_dim`` AI cores, each 1 cube + 2 vector core processes, and GM.

    Use it as a context manager (or call :meth:`close`) so that core processes and shared-memory
    segments are always released::

        with Device(block_dim=2) as dev:
            x = dev.to_device("x", np.arange(64, dtype=np.float32))
            y = dev.empty("y", (64,), "float32")
            dev.launch("mykernels:double", x, y)
            print(dev.to_host(y))
    """

    def __init__(
        self,
        block_dim: int = DEFAULT_BLOCK_DIM,
        *,
        spec: DeviceSpec = DEFAULT_SPEC,
        options: RuntimeOptions = DEFAULT_OPTIONS,
        start_method: str = "fork",
        sweep_stale: bool = False,
        kernel_type: KernelType = KernelType.MIX_1_2,
    ) -> None:
        """``options.gm_poison`` fills freed GM blocks (the one way to set it). ``sweep_stale``:
        first unlink GM segments that earlier runs, now dead, left in /dev/shm (see
        :func:`mpnpu.runtime.gm.sweep_stale_segments`; the CLIs do this at start-up).
        ``kernel_type``: which cores a launch starts (mpnpu.runtime.topology.KernelType): by default
        each AI core is 1 cube + 2 vector core processes; a vector-only device runs ``block_dim``
        vector core processes, and so on."""
        check_launch_width(block_dim, spec, kernel_type)
        if start_method not in multiprocessing.get_all_start_methods():
            raise DeviceConfigError(f"start method {start_method!r} is not available here")
        self.topology = Topology(block_dim, kernel_type)
        self.spec = spec
        self.options = options
        self.start_method = start_method
        self._mp = multiprocessing.get_context(start_method)
        self._launch_id = 0
        self._settings: dict[str, Any] = {}  # launch_settings() in force
        #: kernel (function or reference) -> its checked reference and what that offers (mpnpu.runtime.seam)
        self._refs: dict[Any, tuple[Any, KernelHooks]] = {}
        self._flags_left: list[tuple[int, int, int]] = []
        self._generation = 0
        self._rebuild_listeners: list[RebuildListener] = []
        #: names of the stale segments unlinked at construction (``sweep_stale=True``)
        self.swept_segments: list[str] = sweep_stale_segments() if sweep_stale else []
        # Start the resource tracker before forking, so that every core shares the parent's one
        # (a core that started its own would unlink GM segments when it exits).
        resource_tracker.ensure_running()
        self._state = _State(GlobalMemory(options.gm_segment_bytes, options.gm_poison))
        self._finalizer = weakref.finalize(self, _release, self._state, options.shutdown_grace_s)
        try:
            self._start_pool()
        except BaseException:
            self.close()
            raise

    # -- properties -------------------------------------------------------------------------

    @property
    def block_dim(self) -> int:
        return self.topology.block_dim

    @property
    def gm(self) -> GlobalMemory:
        return self._state.gm

    @property
    def closed(self) -> bool:
        return self._state.closed

    @property
    def pool_generation(self) -> int:
        """1 for the first core pool, +1 every time a fresh pool is forked (the pids change)."""
        return self._generation

    def core_pids(self) -> list[int]:
        """Pids of the current core processes, by core id (they change when the pool is rebuilt)."""
        pool = self._ensure_pool()
        return pool.pids()

    def status_board(self) -> np.ndarray:
        """A snapshot of the status board: one row per core id, columns ``mpnpu.runtime.sync.ST_*``
        (state, SyncAll counts, the flag it waits for, progress), as the watchdog reads it.

        Never forks: between a failed launch's pool and the next one every core reads as idle."""
        self._ensure_open()
        pool = self._state.pool
        if pool is None:
            return np.zeros((self.topology.n_cores, ST_COLUMNS), dtype=np.int64)
        board: np.ndarray = pool.sync.status_view().copy()
        return board

    def add_rebuild_listener(self, listener: RebuildListener) -> None:
        """Call ``listener(device)`` every time the device forks a fresh core pool to replace one it
        threw away (after a failed or interrupted launch), once the new processes are running and
        before the launch's error is raised. Exceptions from the listener propagate."""
        self._rebuild_listeners.append(listener)

    def remove_rebuild_listener(self, listener: RebuildListener) -> None:
        """Stop calling a listener added by :meth:`add_rebuild_listener` (no error if absent)."""
        if listener in self._rebuild_listeners:
            self._rebuild_listeners.remove(listener)

    @property
    def kernel_type(self) -> KernelType:
        return self.topology.kernel_type

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.topology.n_cores} core processes"
        kind = "" if self.kernel_type is KernelType.MIX_1_2 else f", {self.kernel_type.value}"
        return f"Device(block_dim={self.block_dim}{kind}, {state})"

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- pool -------------------------------------------------------------------------------

    def _start_pool(self) -> CorePool:
        self._flags_left = []
        # (MPNPU_SPIN_US is read here, so that a bad value is one error in the parent, never one per core)
        pool = self._state.pool = CorePool.fork(self._mp, self.topology, self.spec, with_env_spin(self.options))
        self._generation += 1
        if self._generation > 1:
            for listener in list(self._rebuild_listeners):
                listener(self)
        return pool

    def _ensure_pool(self) -> CorePool:
        if self._state.closed:
            raise DeviceClosedError("the device is closed")
        return self._state.pool or self._start_pool()

    def _drop_pool(self) -> None:
        pool, self._state.pool = self._state.pool, None
        if pool is not None:
            pool.kill()

    # -- memory -----------------------------------------------------------------------------

    def empty(self, name: str, shape: Sequence[int] | int, dtype: DTypeLike, fill: int | None = None, *,
              poison: bool = False) -> GlobalTensor:
        """Allocate a GM tensor. Its contents are whatever the reused block held (not zeroed), or
        with ``fill`` (0..255) that byte in every byte. ``poison``: the fill is a pattern that marks
        bytes as not written yet (as the operators' 0xFF), not data: initcheck still counts them as
        unwritten."""
        self._ensure_open()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        t = self.gm.alloc(name, shape, dtype)
        if fill is not None:
            self.gm.fill_bytes(t, fill, data=not poison)
        return t

    def to_device(self, name: str, array: np.ndarray, dtype: DTypeLike | None = None) -> GlobalTensor:
        """Allocate a GM tensor and copy host data into it.

        ``dtype="bfloat16"`` accepts either uint16 bit patterns or float values (rounded).
        """
        self._ensure_open()
        arr = np.asarray(array)
        d = get_dtype(dtype if dtype is not None else arr.dtype)
        if arr.dtype != d.storage:
            if d.is_float and arr.dtype.kind == "f":
                arr = from_float32(arr.astype(np.float32), d)
            else:
                raise UsageError(f"cannot store {arr.dtype} data as {d.name} in GM tensor {name}")
        t = self.gm.alloc(name, arr.shape, d)
        self.gm.write(t, arr)
        return t

    def to_host(self, t: GlobalTensor) -> np.ndarray:
        """Copy a GM tensor to a host numpy array (storage dtype: bfloat16 comes back as uint16)."""
        self._ensure_open()
        return self.gm.read(t)

    def free(self, *tensors: GlobalTensor) -> None:
        """Return tensors' blocks to the caching allocator (contents stay unless poisoning)."""
        self._ensure_open()
        for t in tensors:
            self.gm.free(t)

    @contextlib.contextmanager
    def scope(self) -> Iterator["AllocationScope"]:
        """Allocations made through the yielded scope are freed when the block ends."""
        s = AllocationScope(self)
        try:
            yield s
        finally:
            if not self.closed:
                s.free_all()

    def _ensure_open(self) -> None:
        if self._state.closed:
            raise DeviceClosedError("the device is closed")

    # -- launch -----------------------------------------------------------------------------

    def launch(self, kernel: str | Callable[..., Any], /, *args: Any, **kwargs: Any) -> LaunchResult:
        """Run ``kernel(*args, **kwargs)`` on every core of the device and wait for all of them.

        ``kernel`` is a module-level function or a reference "package.module:function" or
        "path/to/file.py:function". Every argument goes to the kernel; to trace the launch, drop
        sync points, hold a core or insert syncs, use :meth:`launch_with`.

        Raises a :class:`LaunchError` subclass naming the core and the reason if any core raises,
        dies, deadlocks or the launch times out; the pool is rebuilt before it is raised.
        """
        return self.launch_with(PLAIN_LAUNCH, kernel, *args, **kwargs)

    def launch_with(self, options: LaunchOptions, kernel: str | Callable[..., Any], /, *args: Any,
                    **kwargs: Any) -> LaunchResult:
        """:meth:`launch` with :class:`~mpnpu.runtime.config.LaunchOptions`: ``trace`` records every
        GM access and sync for race analysis; ``drop_syncs`` names sync points (the ``name=`` of
        sync calls) to skip; ``timeout_s`` bounds the launch; ``hold`` (a
        :class:`mpnpu.runtime.hold.HoldPlan`) holds one core before one GM access until another core
        has made another (race-directed reproduction; the result's ``hold`` says what happened);
        ``insert_syncs`` adds syncs at stage boundaries (:mod:`mpnpu.runtime.insert`, e.g.
        ``("after:TargetProcess",)``). Launches inside :meth:`launch_settings` get that block's
        ``hold`` / ``insert_syncs`` unless the options name their own.
        """
        if not isinstance(options, LaunchOptions):
            raise UsageError(f"launch_with takes a LaunchOptions first, got {type(options).__name__}")
        try:
            known = self._refs.get(kernel)
        except TypeError:  # an unhashable "kernel": kernel_reference explains what is wrong
            known = None
        if known is None:
            ref = kernel_reference(kernel)
            resolve_kernel(ref)  # a wrong reference is a one-line UsageError here, not 3N tracebacks
            known = self._refs[kernel] = (ref, hooks_of(ref))
        ref, hooks = known
        if hooks.check is not None:  # a kernel object that can tell a bad launch before any core runs
            hooks.check(self.topology, args, kwargs)
        pool = self._ensure_pool()
        dropped, trace, hold, insert_syncs = options.drop_syncs, options.trace, options.hold, options.insert_syncs
        if trace and pipes_mark(resolve_kernel(ref)) != "own":
            native_trace.prepare()  # (a Python kernel's records made in C: built here once, loaded by the cores)
        if hold is None:
            hold = self._settings.get("hold")
        if not insert_syncs:
            insert_syncs = self._settings.get("insert_syncs", ())
        inserts = parse_inserts(insert_syncs) if insert_syncs else ()
        # A reference that cannot change (a name, or a kernel object that says so) is sent once per
        # pool and by handle after that; any other kernel object travels whole, with its state now.
        reusable = isinstance(ref, str) or hooks.immutable
        if inserts and hooks.with_inserts is not None:  # a kernel object that must be built differently
            ref = hooks.with_inserts(inserts)
            reusable = False  # (made for this launch)
        if hold is not None:
            check_plan(hold, self.topology.n_cores)
        try:
            # Framed once, written to every core.
            sent = pool.kernel_handles.get(id(ref)) if reusable else None
            if sent is not None:
                wire_kernel: Any = sent[0]
            else:
                handle = len(pool.kernel_handles) + 1
                wire_kernel = (handle, ref) if reusable else ref
            command = LaunchCommand(self._launch_id + 1, wire_kernel, args, kwargs, dropped, trace, hold, inserts)
            framed = None
            # A plain launch of a kernel object a core may serve natively (a compiled kernel it has
            # run before: see mpnpu.ascendc.native.serve) goes as a native command; the core reads the
            # pickled command at its tail when it cannot.
            if sent is not None and hooks.native is not None and not kwargs \
                    and plain_launch(trace, dropped, hold, inserts):
                kinds = hooks.native.mpnpu_native
                if kinds is not None:
                    framed = protocol.frame_native(command, sent[0], args, kinds)
            if framed is None:
                framed = protocol.frame(command)
        except Exception as e:
            raise UsageError(f"launch arguments of {kernel_name(ref)} cannot be sent to the cores: {e}") from None
        self._launch_id += 1
        launch_id = self._launch_id
        # (every launch takes them: a buffer that lived through a launch may hold what it wrote)
        unwritten = self.gm.take_unwritten()
        limit = self.options.launch_timeout_s if options.timeout_s is None else options.timeout_s
        if self._flags_left:
            pool.sync.clear_flags(self._flags_left)
        pool.sync.reset_for_launch(any(mode == 0 for _, mode, _ in self._flags_left), bool(self._flags_left))
        if hold is not None:
            pool.sync.hold_board.arm()
        else:
            pool.sync.hold_board.reset()
        self._flags_left = []
        self._state.busy = True
        start = time.perf_counter()
        # A launch wider than the device's cores runs in waves, as on the chip (mpnpu.runtime.checks).
        at_once = cores_at_once(self.spec, self.kernel_type)
        waves = None
        if self.block_dim > at_once:
            waves = Waves(framed, [self.topology.block_cores(b) for b in range(self.block_dim)], at_once)
        try:
            if waves is None:
                pool.broadcast(framed)
            else:
                pool.broadcast(framed, waves.first())
            if sent is None and reusable:  # (a core that missed it is dead: the pool is replaced)
                pool.kernel_handles[id(ref)] = (handle, ref)
            replies, failure = pool.collect(launch_id, kernel_name(ref), limit, self.options, waves)
        except BaseException:
            # Ctrl-C / SIGTERM / anything unexpected mid-launch: the cores are in an unknown
            # state, so end them now; a later launch forks a fresh pool.
            self._drop_pool()
            self._state.busy = False
            raise
        elapsed = time.perf_counter() - start
        self._state.busy = False
        if failure is not None:
            self._drop_pool()
            self._start_pool()
            raise failure
        done = [r for r in replies if r is not None]
        # Sets a kernel did not wait for would leak into the next launch; note where to clear.
        self._flags_left = [(r.core_id, mode, flag_id) for r in done for mode, flag_id in r.flags_set]
        launch_trace = None
        if trace:
            # traced: every reply carries its events, or its core put them on the trace board
            board = pool.sync.traces
            # (a core's events from the board stay pickled until something reads them: racecheck's
            # analysis process gets them as they came, PackedEvents.pickled)
            shipped = tuple(r.events if r.events is not None else _board_events(board, r.core_id) for r in done)
            if any(e is None for e in shipped):
                raise TraceError(f"launch {launch_id}: a core's trace is neither in its reply nor on the trace board")
            events = cast("tuple[Sequence[TraceEvent], ...]", shipped)
            launch_trace = LaunchTrace(self.block_dim, kernel_name(ref), events, dropped, self.kernel_type,
                                       self.options.auto_sync, unwritten)
        outcome = pool.sync.hold_board.outcome() if hold is not None else None
        per_core = tuple(r.elapsed_s for r in done)
        return LaunchResult(launch_id, kernel_name(ref), elapsed, per_core, launch_trace, outcome)

    @contextlib.contextmanager
    def launch_settings(self, *, hold: HoldPlan | None = None, insert_syncs: Sequence[str] = ()) -> Iterator[None]:
        """Give every launch inside the block this ``hold`` and ``insert_syncs`` (see :meth:`launch`).

        For tools that drive an operator's own host code, which calls ``launch`` itself.
        """
        parse_inserts(insert_syncs)  # a bad spec fails here, before any launch
        saved = self._settings
        self._settings = {"hold": hold, "insert_syncs": tuple(insert_syncs)}
        try:
            yield
        finally:
            self._settings = saved

    # -- shutdown ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every core process and unlink every GM segment. Idempotent."""
        self._finalizer()


class AllocationScope:
    """Allocations that are freed together (one test case's tensors, say)."""

    def __init__(self, device: Device) -> None:
        self._device = device
        self._tensors: list[GlobalTensor] = []

    def empty(self, name: str, shape: Sequence[int] | int, dtype: DTypeLike, fill: int | None = None, *,
              poison: bool = False) -> GlobalTensor:
        t = self._device.empty(name, shape, dtype, fill, poison=poison)
        self._tensors.append(t)
        return t

    def to_device(self, name: str, array: np.ndarray, dtype: DTypeLike | None = None) -> GlobalTensor:
        t = self._device.to_device(name, array, dtype)
        self._tensors.append(t)
        return t

    def free_all(self) -> None:
        while self._tensors:
            self._device.gm.free(self._tensors.pop())


def _release(state: _State, grace_s: float) -> None:
    """Finalizer of a Device: stop the pool, unlink GM. Runs once, at close() or at exit."""
    if state.closed:
        return
    state.closed = True
    try:
        if state.pool is not None:
            state.pool.kill(0.0 if state.busy else grace_s)
    finally:
        state.pool = None
        state.gm.close()


__all__ = ["AllocationScope", "Device", "LaunchResult", "RebuildListener"]


def _board_events(board: TraceBoard, core_id: int) -> PackedEvents | None:
    """The events core ``core_id`` put on the trace board (PackedEvents, as core.run_launch ships
    them), unpickled only when first read; None: it put nothing."""
    data = board.take(core_id)
    return None if data is None else PackedEvents.pickled(data)
