"""The core pool: 3*block_dim core processes forked once and serving every launch until a failure.

::

    CorePool.fork ── SyncObjects (barriers, flag counters, atomic lock, status board), then per core:
                     a pipe + a forked core process (mpnpu.runtime.core.core_main)
    broadcast     ── one framed LaunchCommand written to every core's pipe
    collect       ── one poll over every pipe (replies) and every process sentinel (deaths),
                     with a watchdog tick in between: replies by core id, or the LaunchError;
                     the finished cores' replies wait on the reply board (mpnpu.runtime.replies)
                     until the last one's message wakes the parent
    kill          ── ExitCommand (if there is time), SIGKILL, reap: never hangs

A pool that saw a failed launch is never reused: a core killed inside ``Barrier.wait`` wedges that
barrier for good, so the device kills the pool and forks a fresh one (docs/device-model.md,
"Process model").
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any, Sequence

from mpnpu.errors import DeadlockError, LaunchError, LaunchTimeoutError

from . import protocol, wire
from .config import DeviceSpec, RuntimeOptions
from .core import core_main
from .failures import CoreFailure, describe_failure
from .procutil import end_processes, fork_process, signals_blocked
from .protocol import ExitCommand, LaunchDone, LaunchFailed
from .sync import SyncObjects
from .topology import Topology
from .watchdog import Watchdog

#: how often the parent looks for a finished block while blocks of a wide launch wait to start (s)
WAVE_POLL_S = 0.002


@dataclass
class Waves:
    """A launch wider than the device's cores, as the chip runs it: at most ``at_once`` blocks at a
    time, the next block (in block order) started when one ends."""

    framed: bytes  # the launch command every block's cores get
    blocks: list[tuple[int, ...]]  # core ids of each block, in block order
    at_once: int
    started: int = 0

    @property
    def waiting(self) -> bool:
        return self.started < len(self.blocks)

    def unstarted(self) -> list[int]:
        """Core ids of the blocks not started yet."""
        return [c for block in self.blocks[self.started:] for c in block]

    def first(self) -> list[int]:
        """Core ids of the first wave (marked started)."""
        self.started = min(self.at_once, len(self.blocks))
        return [c for block in self.blocks[:self.started] for c in block]

    def start_more(self, pool: "CorePool", pending: set[int]) -> None:
        """Start blocks while fewer than ``at_once`` started blocks still have a core running."""
        running = sum(1 for block in self.blocks[:self.started] if any(c in pending for c in block))
        while running < self.at_once and self.waiting:
            pool.broadcast(self.framed, self.blocks[self.started])
            self.started += 1
            running += 1


@dataclass
class CorePool:
    """The live core processes of a device, their pipes and the sync objects they share."""

    topology: Topology
    sync: SyncObjects
    procs: list[BaseProcess] = field(default_factory=list)
    conns: list[Connection] = field(default_factory=list)
    fds: list[int] = field(default_factory=list)  # the conns' file descriptors, by core id
    # One persistent poll object over every pipe and sentinel; what each fd is, by fd. (The
    # selectors module would wrap every event in Python objects, on the launch's hot path.)
    poller: select.poll = field(default_factory=select.poll)
    watched: dict[int, tuple[bool, int]] = field(default_factory=dict)  # fd -> (is a sentinel, core id)
    #: kernel references every core of this pool has been sent: id(reference) -> (handle, reference).
    #: A later launch sends the handle alone (see LaunchCommand.kernel); a new pool starts empty.
    kernel_handles: dict[int, tuple[int, Any]] = field(default_factory=dict)

    @classmethod
    def fork(cls, mp: BaseContext, topology: Topology, spec: DeviceSpec, options: RuntimeOptions) -> "CorePool":
        """Fork a core process per core. On failure the processes forked so far are ended."""
        pool = cls(topology, SyncObjects(mp, topology))
        # The kernel sends the parent-death signal when the forking *thread* ends: a pool forked
        # from a short-lived thread would be killed with it.
        death_signal = threading.current_thread() is threading.main_thread()
        try:
            # SIGINT/SIGTERM stay pending while we fork, so that none can reach a core before it has
            # set its own handlers; the parent receives them right after.
            with signals_blocked(signal.SIGINT, signal.SIGTERM):
                for info in topology.cores:
                    parent_end, child_end = mp.Pipe(duplex=True)
                    try:
                        proc = fork_process(
                            mp, core_main,
                            (info.core_id, topology, child_end, pool.sync, spec, options, os.getpid(),
                             death_signal),
                            f"mpnpu-{info.short}", close_after_start=(child_end,),
                        )
                    except BaseException:
                        parent_end.close()
                        raise
                    pool.procs.append(proc)
                    pool.conns.append(parent_end)
                    pool.fds.append(parent_end.fileno())
                    pool._watch(parent_end.fileno(), False, info.core_id)
                    pool._watch(proc.sentinel, True, info.core_id)
        except BaseException:
            pool.kill()
            raise
        return pool

    def _watch(self, fd: int, sentinel: bool, core_id: int) -> None:
        self.watched[fd] = (sentinel, core_id)
        self.poller.register(fd, select.POLLIN)

    def pids(self) -> list[int]:
        """Pids of the core processes, by core id."""
        return [p.pid for p in self.procs if p.pid is not None]

    def broadcast(self, framed: bytes, cores: Sequence[int] | None = None) -> None:
        """Write one framed message to every core (or to ``cores``); stops at a dead core (its
        sentinel tells)."""
        for fd in self.fds if cores is None else [self.fds[c] for c in cores]:
            if not wire.write_all(fd, framed):
                break

    def collect(self, launch_id: int, ref: str, limit: float, options: RuntimeOptions,
                waves: Waves | None = None) -> tuple[list[LaunchDone | None], LaunchError | None]:
        """Wait for every core's reply to launch ``launch_id``: (replies by core id, the failure if any).

        Returns early with the failure when a core died (barriers may be wedged: nobody else will
        report), ``options.failure_grace_s`` after a core raised, when the watchdog names a wait
        that can never end, or at ``limit`` seconds. ``waves``: the blocks of a launch wider than
        the device's cores not started yet, each started here as an earlier block ends.
        """
        topo = self.topology
        n = topo.n_cores
        replies: list[LaunchDone | None] = [None] * n
        pending = set(range(n))
        failures: list[CoreFailure] = []  # in arrival order
        deadline = time.monotonic() + limit
        first_failure_at: float | None = None
        watchdog: Watchdog | None = None  # made at the first check: most launches end before it
        tick = options.watchdog_interval_s
        next_check = time.monotonic() + tick
        board = self.sync.replies

        def unstarted() -> Sequence[int]:
            """The blocks of a wide launch not started yet (what the watchdog names as not started)."""
            return waves.unstarted() if waves else ()

        while pending:
            if waves is not None and waves.waiting and first_failure_at is None and not failures:
                board.take(launch_id, pending, replies)  # (a finished core wakes nobody: look)
                waves.start_more(self, pending)
            now = time.monotonic()
            if first_failure_at is not None and now - first_failure_at >= options.failure_grace_s:
                break
            if now >= deadline:
                board.take(launch_id, pending, replies)
                if not pending:
                    break
                running = ", ".join(topo.core(i).label for i in sorted(pending)[:4])
                more = f" and {len(pending) - 4} more" if len(pending) > 4 else ""
                watchdog = watchdog or Watchdog(self.sync, topo, options.stall_grace_s, self.procs)
                stuck = watchdog.describe_stuck(sorted(pending)[:8], unstarted())
                return replies, LaunchTimeoutError(
                    f"launch of {ref} did not finish within {limit:g} s; still running: {running}{more} ({stuck})",
                    pending=sorted(pending), stuck=stuck,
                )
            wait_s = min(tick, deadline - now)
            if waves is not None and waves.waiting:
                wait_s = min(wait_s, WAVE_POLL_S)
            if first_failure_at is not None:  # (the cores that finish meanwhile wake nobody)
                wait_s = min(wait_s, first_failure_at + options.failure_grace_s - now)
            events = self.poller.poll(max(0.0, wait_s) * 1000.0)
            if not events:  # a tick: rows a message did not announce (see ReplyBoard.post)
                board.take(launch_id, pending, replies)
            for fd, _ in events:
                sentinel, core_id = self.watched[fd]
                if not sentinel:
                    if core_id not in pending:
                        continue
                    try:
                        reply = protocol.recv(fd)
                    except (EOFError, OSError):
                        failures.append(CoreFailure(core_id, None))
                        pending.discard(core_id)
                        continue
                    if not isinstance(reply, (LaunchDone, LaunchFailed)) or reply.launch_id != launch_id:
                        continue
                    pending.discard(core_id)
                    if isinstance(reply, LaunchDone):
                        replies[core_id] = reply
                    else:
                        failures.append(CoreFailure(core_id, reply.error))
                else:  # a core process ended: cores never end by themselves while the pool lives
                    if core_id in pending and self.conns[core_id].poll(0):
                        continue  # read its last reply first; the sentinel stays ready
                    failures.append(CoreFailure(core_id, None))
                    pending.discard(core_id)
                    self.poller.unregister(fd)
            if pending and board.all_done():
                board.take(launch_id, pending, replies)
            if failures:
                if any(f.error is None for f in failures):
                    break  # barriers may be wedged: nobody else will report
                first_failure_at = first_failure_at or time.monotonic()
                continue
            now = time.monotonic()
            if now >= next_check:
                next_check = now + tick
                if watchdog is None:
                    watchdog = Watchdog(self.sync, topo, options.stall_grace_s, self.procs)
                problem = watchdog.check(now, unstarted())
                if problem is not None:
                    return replies, problem
        if failures:
            err = describe_failure(topo, self.procs, ref, failures, self.sync.read_last_words)
            if pending and all(f.error is not None and f.error.secondary for f in failures):
                # Only waits timed out, and cores are still at work: the cause is where those are,
                # not the core that gave up waiting first.
                watchdog = watchdog or Watchdog(self.sync, topo, options.stall_grace_s, self.procs)
                stuck = watchdog.describe_stuck(sorted(pending)[:8], unstarted())
                hang = DeadlockError(f"hang: {stuck}; the cores waiting for them timed out: {err}",
                                     stuck=stuck, timed_out=[topo.core(f.core_id).label for f in failures])
                hang.__cause__ = err
                return replies, hang
            return replies, err
        return replies, None

    def kill(self, grace_s: float = 0.0) -> None:
        """End every core process: ask politely (if ``grace_s``), then SIGKILL, then reap. Never hangs."""
        if grace_s > 0:
            exit_message = protocol.encode(ExitCommand())
            for conn in self.conns:
                try:
                    conn.send_bytes(exit_message)
                except OSError:
                    pass
        end_processes(self.procs, grace_s=grace_s, kill_wait_s=2.0)
        for conn in self.conns:
            conn.close()
        for proc in self.procs:
            try:
                proc.close()
            except ValueError:
                pass  # still running after SIGKILL + 2 s: nothing more we can do without hanging
