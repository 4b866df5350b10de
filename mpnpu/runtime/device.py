"""The device: a persistent pool of core processes over shared-memory GM, and kernel launches.

::

    Device(block_dim)
     ├─ GlobalMemory: shared-memory segments + caching allocator (stale data stays, as on chip)
     ├─ pool: 3*block_dim core processes (mpnpu.runtime.core), forked once, serving every launch
     │    └─ SyncObjects: SyncAll barriers, flag counters, atomic lock, status board
     └─ launch(kernel, *args) ─ pickled once ─► every core's pipe ─► kernel runs on every core
                               ◄─ ("ok" | "error", ...) ─ each core's pipe, or its sentinel if it died

The parent only dispatches and collects; it never takes part in a barrier. While a launch runs it
watches three things at once (one selector): replies, process sentinels (a core that died) and, on
a short tick, the status board, so that a SyncAll some core can no longer reach or a flag wait
nobody can satisfy is reported within milliseconds instead of at a timeout.

Any failed launch (a core raised, died, deadlocked, timed out) throws the whole pool away — cores
killed, barriers and locks discarded — and forks a fresh one: a core killed inside
``Barrier.wait`` wedges that barrier for good (PITFALLS), so reusing sync objects after a failure
is never safe. GM survives a rebuild, so the next case still sees the last case's stale blocks.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import selectors
import signal
import threading
import time
import weakref
from dataclasses import dataclass, field
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np

from mpnpu.errors import (
    CoreDiedError,
    DeadlockError,
    DeviceClosedError,
    DeviceConfigError,
    KernelError,
    LaunchError,
    LaunchTimeoutError,
    MpnpuError,
    SyncAllNotReachedError,
    UsageError,
)

from . import wire
from .config import DEFAULT_OPTIONS, DEFAULT_SPEC, DeviceSpec, RuntimeOptions
from .core import (
    MSG_EXIT,
    MSG_LAUNCH,
    REPLY_OK,
    core_main,
    kernel_reference,
    resolve_kernel,
)
from .dtypes import DTypeLike, from_float32, get_dtype
from .gm import GlobalMemory, GlobalTensor, sweep_stale_segments
from .procutil import signals_blocked
from .sync import (
    ST_PROGRESS,
    ST_STATE,
    ST_SYNC_AIV,
    ST_SYNC_ALL,
    ST_WAIT_ID,
    ST_WAIT_MODE,
    CoreState,
    SyncObjects,
)
from .topology import Topology
from .trace import LaunchTrace


class LaunchResult(NamedTuple):
    """What a successful launch returns."""

    launch_id: int
    kernel: str
    elapsed_s: float  # parent's wall time from dispatch to the last reply
    core_elapsed_s: tuple[float, ...]  # each core's time inside the kernel function, by core id
    trace: LaunchTrace | None  # per-core events, when launched with trace=True


class _RemoteTraceback(Exception):
    """Carries a core's formatted traceback as the ``__cause__`` of a KernelError."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return "\n" + self.tb


@dataclass
class _Pool:
    sync: SyncObjects
    procs: list[BaseProcess]
    conns: list[Connection]
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    fds: list[int] = field(default_factory=list)  # the conns' file descriptors, by core id

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]


@dataclass
class _State:
    """Everything that must be released, held apart from the Device so a finalizer can reach it."""

    gm: GlobalMemory
    pool: _Pool | None = None
    busy: bool = False
    closed: bool = False


def describe_exit(exitcode: int | None) -> str:
    """'killed by signal SIGKILL', 'exit code 3', ..."""
    if exitcode is None:
        return "ended without an exit status"
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


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
        block_dim: int = 2,
        *,
        spec: DeviceSpec = DEFAULT_SPEC,
        options: RuntimeOptions = DEFAULT_OPTIONS,
        gm_poison: int | None = None,
        start_method: str = "fork",
    ) -> None:
        if not isinstance(block_dim, int) or isinstance(block_dim, bool) or block_dim < 1:
            raise DeviceConfigError(f"block_dim must be a positive integer, got {block_dim!r}")
        if block_dim > spec.ai_cores:
            raise DeviceConfigError(
                f"block_dim {block_dim} exceeds the {spec.ai_cores} AI cores of the device ({spec.name}); "
                f"on the chip SyncAll would hang. Use at most {spec.ai_cores}.",
                block_dim=block_dim, ai_cores=spec.ai_cores,
            )
        if start_method not in multiprocessing.get_all_start_methods():
            raise DeviceConfigError(f"start method {start_method!r} is not available here")
        self.topology = Topology(block_dim)
        self.spec = spec
        self.options = options
        self.start_method = start_method
        self._mp = multiprocessing.get_context(start_method)
        self._launch_id = 0
        self._refs: dict[Any, str] = {}  # kernel (function or reference) -> checked reference
        self._flags_left: list[tuple[int, int, int]] = []
        self.pool_generation = 0  # bumped every time a fresh pool is forked (pids change)
        self.swept_segments = sweep_stale_segments()
        # Start the resource tracker before forking, so that every core shares the parent's one
        # (a core that started its own would unlink GM segments when it exits).
        resource_tracker.ensure_running()
        poison = gm_poison if gm_poison is not None else options.gm_poison
        self._state = _State(GlobalMemory(options.gm_segment_bytes, poison))
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

    def core_pids(self) -> list[int]:
        """Pids of the current core processes, by core id (they change when the pool is rebuilt)."""
        pool = self._ensure_pool()
        return pool.pids()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.topology.n_cores} core processes"
        return f"Device(block_dim={self.block_dim}, {state})"

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- pool -------------------------------------------------------------------------------

    def _start_pool(self) -> None:
        self._flags_left = []
        sync = SyncObjects(self._mp, self.topology)
        procs: list[BaseProcess] = []
        conns: list[Connection] = []
        pool = _Pool(sync, procs, conns)
        self._state.pool = pool
        # The kernel sends the parent-death signal when the forking *thread* ends: a pool forked
        # from a short-lived thread would be killed with it.
        death_signal = threading.current_thread() is threading.main_thread()
        # SIGINT/SIGTERM stay pending while we fork, so that none can reach a core before it has
        # set its own handlers; the parent receives them right after.
        with signals_blocked(signal.SIGINT, signal.SIGTERM):
            for info in self.topology.cores:
                parent_end, child_end = self._mp.Pipe(duplex=True)
                proc = self._mp.Process(
                    target=core_main,
                    name=f"mpnpu-{info.short}",
                    args=(info.core_id, self.block_dim, child_end, sync, self.spec, self.options, os.getpid(),
                          death_signal),
                    daemon=True,
                )
                try:
                    proc.start()
                finally:
                    child_end.close()  # later cores must not inherit it, or a death shows no EOF
                procs.append(proc)
                conns.append(parent_end)
                pool.fds.append(parent_end.fileno())
                pool.selector.register(parent_end, selectors.EVENT_READ, ("reply", info.core_id))
                pool.selector.register(proc.sentinel, selectors.EVENT_READ, ("exit", info.core_id))
        self.pool_generation += 1

    def _ensure_pool(self) -> _Pool:
        if self._state.closed:
            raise DeviceClosedError("the device is closed")
        if self._state.pool is None:
            self._start_pool()
        assert self._state.pool is not None
        return self._state.pool

    def _rebuild(self) -> None:
        _kill_pool(self._state.pool)
        self._state.pool = None
        self._start_pool()

    # -- memory -----------------------------------------------------------------------------

    def empty(self, name: str, shape: Sequence[int] | int, dtype: DTypeLike) -> GlobalTensor:
        """Allocate a GM tensor. Its contents are whatever the reused block held (not zeroed)."""
        self._ensure_open()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return self.gm.alloc(name, shape, dtype)

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

    def launch(
        self,
        kernel: str | Callable,
        *args: Any,
        trace: bool = False,
        drop_syncs: Sequence[str] = (),
        timeout: float | None = None,
        **kwargs: Any,
    ) -> LaunchResult:
        """Run ``kernel(*args, **kwargs)`` on every core of the device and wait for all of them.

        ``kernel`` is a module-level function or a reference "package.module:function" or
        "path/to/file.py:function". ``drop_syncs`` names sync points (the ``name=`` of sync calls)
        to skip in this launch. ``trace`` records every GM access and sync for race analysis.

        Raises a :class:`LaunchError` subclass naming the core and the reason if any core raises,
        dies, deadlocks or the launch times out; the pool is rebuilt before it is raised.
        """
        try:
            ref = self._refs.get(kernel)
        except TypeError:  # an unhashable "kernel": kernel_reference explains what is wrong
            ref = None
        if ref is None:
            ref = kernel_reference(kernel)
            resolve_kernel(ref)  # a wrong reference is a one-line UsageError here, not 3N tracebacks
            self._refs[kernel] = ref
        pool = self._ensure_pool()
        dropped = frozenset(drop_syncs)
        try:
            payload = pickle.dumps((MSG_LAUNCH, self._launch_id + 1, ref, args, kwargs, dropped, bool(trace)),
                                   protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            raise UsageError(f"launch arguments of {ref} cannot be sent to the cores: {e}") from None
        self._launch_id += 1
        launch_id = self._launch_id
        limit = self.options.launch_timeout_s if timeout is None else timeout
        if self._flags_left:
            pool.sync.clear_flags(self._flags_left)
        pool.sync.reset_for_launch(any(mode == 0 for _, mode, _ in self._flags_left))
        self._flags_left = []
        self._state.busy = True
        start = time.perf_counter()
        try:
            # Framed once, written to every core.
            framed = wire.frame(payload)
            for fd in pool.fds:
                if not wire.write_all(fd, framed):
                    break  # a dead core; its sentinel will tell _collect which
            replies, failure = self._collect(pool, launch_id, ref, limit)
        except BaseException:
            # Ctrl-C / SIGTERM / anything unexpected mid-launch: the cores are in an unknown
            # state, so end them now; a later launch forks a fresh pool.
            _kill_pool(pool)
            self._state.pool = None
            self._state.busy = False
            raise
        elapsed = time.perf_counter() - start
        self._state.busy = False
        if failure is not None:
            self._rebuild()
            raise failure
        core_elapsed = tuple(r[3] for r in replies)
        # Sets a kernel did not wait for would leak into the next launch; note where to clear.
        self._flags_left = [(core_id, mode, flag_id) for core_id, r in enumerate(replies) if r[5]
                            for mode, flag_id in r[5]]
        launch_trace = None
        if trace:
            launch_trace = LaunchTrace(self.block_dim, ref, tuple(r[4] for r in replies), dropped)
        return LaunchResult(launch_id, ref, elapsed, core_elapsed, launch_trace)

    def _collect(self, pool: _Pool, launch_id: int, ref: str, limit: float) -> tuple[list, LaunchError | None]:
        """Wait for every core's reply; return (replies by core id, the failure if any)."""
        topo = self.topology
        n = topo.n_cores
        replies: list[Any] = [None] * n
        pending = set(range(n))
        failures: list[tuple[int, str, Any]] = []  # (core id, "error"|"died", payload) in arrival order
        deadline = time.monotonic() + limit
        first_failure_at: float | None = None
        watchdog: _Watchdog | None = None  # made at the first check: most launches end before it
        tick = self.options.watchdog_interval_s
        next_check = time.monotonic() + tick
        while pending:
            now = time.monotonic()
            if first_failure_at is not None and now - first_failure_at >= self.options.failure_grace_s:
                break
            if now >= deadline:
                running = ", ".join(topo.core(i).label for i in sorted(pending)[:4])
                more = f" and {len(pending) - 4} more" if len(pending) > 4 else ""
                return replies, LaunchTimeoutError(
                    f"launch of {ref} did not finish within {limit:g} s; still running: {running}{more}",
                    pending=sorted(pending),
                )
            for key, _ in pool.selector.select(timeout=min(tick, deadline - now)):
                kind, core_id = key.data
                if kind == "reply":
                    if core_id not in pending:
                        continue
                    try:
                        reply = pickle.loads(wire.recv(key.fd))
                    except (EOFError, OSError):
                        failures.append((core_id, "died", None))
                        pending.discard(core_id)
                        continue
                    if reply[1] != launch_id:
                        continue
                    pending.discard(core_id)
                    if reply[0] == REPLY_OK:
                        replies[core_id] = reply
                    else:
                        failures.append((core_id, "error", reply[3]))
                else:  # a core process ended: cores never end by themselves while the pool lives
                    conn = pool.conns[core_id]
                    if core_id in pending and conn.poll(0):
                        continue  # read its last reply first; the sentinel stays ready
                    failures.append((core_id, "died", None))
                    pending.discard(core_id)
                    pool.selector.unregister(key.fileobj)
            if failures:
                if any(kind == "died" for _, kind, _ in failures):
                    break  # barriers may be wedged: nobody else will report
                first_failure_at = first_failure_at or time.monotonic()
                continue
            now = time.monotonic()
            if now >= next_check:
                next_check = now + tick
                if watchdog is None:
                    watchdog = _Watchdog(pool.sync, topo, self.options.stall_grace_s, pool.procs)
                problem = watchdog.check(now)
                if problem is not None:
                    return replies, problem
        if failures:
            return replies, self._describe_failure(pool, ref, failures)
        return replies, None

    def _describe_failure(self, pool: _Pool, ref: str, failures: list[tuple[int, str, Any]]) -> LaunchError:
        topo = self.topology
        # The root cause is a core that raised for its own reasons or died; cores whose waits
        # timed out because of it come last.
        primary = next((f for f in failures if f[1] == "died"), None) or next(
            (f for f in failures if not f[2]["secondary"]), failures[0])
        core_id, kind, payload = primary
        label = topo.core(core_id).label
        others = [topo.core(c).label for c, _, _ in failures if c != core_id]
        also = f" (and {len(others)} other core{'s' if len(others) > 1 else ''} failed after it)" if others else ""
        if kind == "died":
            proc = pool.procs[core_id]
            proc.join(0.5)
            how = describe_exit(proc.exitcode)
            return CoreDiedError(
                f"{label} died during {ref} ({how}){also}; the core pool was rebuilt",
                core=label, core_id=core_id, exitcode=proc.exitcode, others=others,
            )
        err = KernelError(
            f"{label} raised {payload['type']}: {payload['message']}{also}",
            core=label, core_id=core_id, error_type=payload["type"], error_message=payload["message"],
            remote_traceback=payload["traceback"], others=others,
        )
        cause: BaseException = _RemoteTraceback(payload["traceback"])
        if payload["pickled"] is not None:
            try:
                original = pickle.loads(payload["pickled"])
                original.__cause__ = cause
                cause = original
            except Exception:
                pass
        err.__cause__ = cause
        return err

    # -- shutdown ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every core process and unlink every GM segment. Idempotent."""
        self._finalizer()


class AllocationScope:
    """Allocations that are freed together (one test case's tensors, say)."""

    def __init__(self, device: Device) -> None:
        self._device = device
        self._tensors: list[GlobalTensor] = []

    def empty(self, name: str, shape: Sequence[int] | int, dtype: DTypeLike) -> GlobalTensor:
        t = self._device.empty(name, shape, dtype)
        self._tensors.append(t)
        return t

    def to_device(self, name: str, array: np.ndarray, dtype: DTypeLike | None = None) -> GlobalTensor:
        t = self._device.to_device(name, array, dtype)
        self._tensors.append(t)
        return t

    def free_all(self) -> None:
        while self._tensors:
            self._device.gm.free(self._tensors.pop())


class _Watchdog:
    """Reads the status board during a launch and names waits that can never end."""

    _BLOCKED = (CoreState.IN_SYNC_ALL, CoreState.IN_SYNC_AIV, CoreState.IN_FLAG_WAIT)

    def __init__(self, sync: SyncObjects, topology: Topology, stall_grace_s: float,
                 procs: Sequence[BaseProcess | int] = ()) -> None:
        self._sync = sync
        self._topo = topology
        self._grace = stall_grace_s
        self._procs = procs  # core processes (or pids), by core id; read only when needed
        self._stall_key: bytes | None = None
        self._stall_since = 0.0
        self._flag_suspect: tuple[int, int, int] | None = None

    def _asleep(self, core_id: int) -> bool | None:
        """Is the core's process asleep in a blocking wait (True), or running or stopped (False)?

        None where that cannot be read (no /proc). A core between taking a flag and writing
        "running" back to the status board executes no blocking call, so a core the status board
        shows waiting *and* the OS shows asleep really is blocked in that wait.
        """
        if core_id >= len(self._procs):
            return None
        proc = self._procs[core_id]
        pid = proc if isinstance(proc, int) else proc.pid
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            return None
        # "S": asleep in an interruptible wait, which is how a futex (semaphore, lock) blocks.
        end = stat.rindex(b")")
        return stat[end + 2:end + 3] == b"S"

    def check(self, now: float) -> LaunchError | None:
        st = self._sync.status_view().copy()
        state = st[:, ST_STATE]
        if not np.isin(state, self._BLOCKED).any():
            self._stall_key = None
            return None
        return self._unreachable_sync_all(st, state) or self._unsatisfiable_flag(st, state) or self._stall(st, state, now)

    def _unreachable_sync_all(self, st: np.ndarray, state: np.ndarray) -> LaunchError | None:
        for aiv_only, col, waiting_state in ((False, ST_SYNC_ALL, CoreState.IN_SYNC_ALL),
                                             (True, ST_SYNC_AIV, CoreState.IN_SYNC_AIV)):
            waiting = np.flatnonzero(state == waiting_state)
            if waiting.size == 0:
                continue
            k = int(st[waiting, col].max())
            parties = self._topo.barrier_parties(aiv_only)
            finished = [p for p in parties if state[p] == CoreState.DONE and st[p, col] < k]
            if finished:
                what = "SyncAll (vector cores only)" if aiv_only else "SyncAll"
                p = finished[0]
                n_done = int(st[p, col])
                return SyncAllNotReachedError(
                    f"{what} #{k} can never complete: {self._topo.core(p).label} finished the kernel after "
                    f"{n_done} {what} call{'s' if n_done != 1 else ''}, while {waiting.size} core"
                    f"{'s' if waiting.size != 1 else ''} wait in it",
                    sync_count=k, never_arrived=[self._topo.core(c).label for c in finished],
                    waiting=[self._topo.core(int(c)).label for c in waiting],
                )
        return None

    def _unsatisfiable_flag(self, st: np.ndarray, state: np.ndarray) -> LaunchError | None:
        suspect = None
        for r in np.flatnonzero(state == CoreState.IN_FLAG_WAIT):
            r = int(r)
            mode, flag_id = int(st[r, ST_WAIT_MODE]), int(st[r, ST_WAIT_ID])
            missing = [s for s in self._topo.flag_senders(mode, r) if self._sync.flag_count(mode, flag_id, r, s) == 0]
            # A sender that finished never sets again; nor does the waiter itself while it waits
            # (modes 0 and 1 need the waiter's own set too).
            if not (missing and all(s == r or state[s] == CoreState.DONE for s in missing)):
                continue
            # The snapshot may be stale: the waiter can have taken the last set already (hence
            # the zero count) without having written "running" back yet. A sender that is done
            # never sets again, so the wait is hopeless only if the waiter is still in a wait on
            # this flag *after* the counts were read and is asleep in it (it blocks in no other
            # call between taking the flag and updating its status). Where the OS state cannot
            # be read, the same suspect on two consecutive checks has to do.
            asleep = self._asleep(r)
            row = self._sync.status_view()[r]
            still = (int(row[ST_STATE]) == CoreState.IN_FLAG_WAIT and int(row[ST_WAIT_MODE]) == mode
                     and int(row[ST_WAIT_ID]) == flag_id)
            key = (r, mode, flag_id)
            if not still or asleep is False or (asleep is None and self._flag_suspect != key):
                suspect = suspect or key
                continue
            label = self._topo.core(r).label
            finished = [s for s in missing if s != r]
            if finished:
                why = f"{self._topo.core(finished[0]).label} can no longer set: it finished the kernel"
            else:
                why = f"it has not set itself (a mode {mode} wait needs a set from the waiter too)"
            return DeadlockError(
                f"{label} waits on flag {flag_id} (mode {mode}) that {why}",
                waiter=label, flag_id=flag_id, mode=mode,
                missing=[self._topo.core(s).label for s in missing],
            )
        self._flag_suspect = suspect
        return None

    def _stall(self, st: np.ndarray, state: np.ndarray, now: float) -> LaunchError | None:
        settled = np.isin(state, self._BLOCKED) | (state == CoreState.DONE)
        if not settled.all():
            self._stall_key = None
            return None
        key = st[:, ST_PROGRESS].tobytes()
        if key != self._stall_key:
            self._stall_key, self._stall_since = key, now
            return None
        if now - self._stall_since < self._grace:
            return None
        blocked = [int(c) for c in np.flatnonzero(np.isin(state, self._BLOCKED))]
        # A core stopped (SIGSTOP, e.g. stress chaos) or preempted right after its wait returned
        # still shows as blocked: only cores the OS also shows asleep count.
        if any(self._asleep(c) is False for c in blocked):
            return None
        waits = []
        for c in blocked:
            c = int(c)
            s = state[c]
            if s == CoreState.IN_FLAG_WAIT:
                what = f"flag {int(st[c, ST_WAIT_ID])} (mode {int(st[c, ST_WAIT_MODE])})"
            elif s == CoreState.IN_SYNC_AIV:
                what = f"SyncAll (vector cores only) #{int(st[c, ST_SYNC_AIV])}"
            else:
                what = f"SyncAll #{int(st[c, ST_SYNC_ALL])}"
            waits.append(f"{self._topo.core(c).short} in {what}")
        return DeadlockError(
            f"deadlock: every running core has been blocked for {self._grace:g} s ({'; '.join(waits[:6])}"
            f"{'; ...' if len(waits) > 6 else ''})",
            waits=waits,
        )


def _kill_pool(pool: _Pool | None, grace_s: float = 0.0) -> None:
    """End a pool's processes: ask politely (if grace_s), then SIGKILL, then reap. Never hangs."""
    if pool is None:
        return
    if grace_s > 0:
        for conn in pool.conns:
            try:
                conn.send_bytes(pickle.dumps((MSG_EXIT,)))
            except OSError:
                pass
        deadline = time.monotonic() + grace_s
        for proc in pool.procs:
            proc.join(max(0.0, deadline - time.monotonic()))
    for proc in pool.procs:
        if proc.exitcode is None:
            try:
                proc.kill()
            except (OSError, AttributeError):
                pass
    for proc in pool.procs:
        proc.join(2.0)
    try:
        pool.selector.close()
    except Exception:
        pass
    for conn in pool.conns:
        conn.close()
    for proc in pool.procs:
        try:
            proc.close()
        except ValueError:
            pass  # still running after SIGKILL + 2 s: nothing more we can do without hanging


def _release(state: _State, grace_s: float) -> None:
    """Finalizer of a Device: stop the pool, unlink GM. Runs once, at close() or at exit."""
    if state.closed:
        return
    state.closed = True
    try:
        _kill_pool(state.pool, 0.0 if state.busy else grace_s)
    finally:
        state.pool = None
        state.gm.close()


__all__ = ["AllocationScope", "Device", "LaunchResult", "describe_exit", "MpnpuError"]
