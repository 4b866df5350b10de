"""Background processes of the stress layer: CPU load, and the plumbing every stress helper shares.

:class:`BackgroundLoad` starts N processes that spin on the CPU, so the core processes compete for
time slices (oversubscription makes the OS preempt cores mid-stage). The same
module holds the small helper-process protocol that :class:`~mpnpu.harness.stress.placement.Migrator` and
:class:`~mpnpu.harness.stress.chaos.ChaosRunner` use::

    parent (owns the helper)                      helper process (fork, daemon)
      start() ── fork ───────────────────────────▶ ignore SIGINT, SIGTERM → SystemExit
                                                  loop: wait on the pipe ≤ 0.1 s, do one step,
                                                        exit if a message/EOF came or getppid() changed
      stop()  ── "stop" over the pipe ──────────▶ finally: undo its effects, send its report
              ◀───────────── report ────────────
              wait ≤ timeout, then SIGTERM, then SIGKILL (procutil.end_processes); then undo again
              from the parent side

Why processes and not threads: the device forks its core processes from the same parent later, and
forking a process that has threads is unsafe (3.12+ warns). Why ``get_context("fork")`` explicitly:
the default start method changes in Python 3.14, and fork is the cheap one (docs/device-model.md,
"Why fork"). Starting and ending the processes goes through :mod:`mpnpu.runtime.procutil`, as the
core pool's does.
Why poll ``getppid()`` and not rely on pipe EOF alone: any process forked later by the parent (core
processes) inherits the parent's pipe end, so EOF may never come when the parent dies.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from mpnpu.errors import UsageError
from mpnpu.runtime.procutil import end_processes, fork_process

__all__ = ["BackgroundLoad"]

#: The one start method the stress layer uses (see the module docstring).
MP_CONTEXT = multiprocessing.get_context("fork")

#: Longest a helper sleeps between checks of its parent and its pipe: bounds stop latency and how
#: long a helper outlives a dead parent.
WATCH_INTERVAL_S = 0.1


# -- helper-process plumbing (used by placement.Migrator and chaos.ChaosRunner) -------------------


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    # Turn SIGTERM into SystemExit so the helper's `finally` (resume / restore) runs.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def child_signals(graceful_term: bool) -> None:
    """Install a helper's signal policy: the parent alone decides when helpers stop.

    SIGINT (a Ctrl-C reaches the whole process group) is ignored, so the parent can stop helpers in
    order. With ``graceful_term`` SIGTERM raises SystemExit so ``finally`` blocks run.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if graceful_term:
        signal.signal(signal.SIGTERM, _raise_exit)
    # A helper forked while its owner had SIGINT/SIGTERM blocked (the sweep blocks them while it
    # starts and stops perturbers, so a Ctrl-C cannot land half-way) inherits that mask; left
    # blocked, SIGTERM from stop()/atexit would do nothing and only SIGKILL (no cleanup) would end it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def shield_cleanup() -> None:
    """Ignore SIGTERM from here on: called first thing in a helper's cleanup so a late terminate()
    from the parent cannot cut a resume/restore short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def should_stop(conn: multiprocessing.connection.Connection, parent_pid: int, timeout: float) -> bool:
    """Helper side: sleep up to ``min(timeout, WATCH_INTERVAL_S)``; True if asked to stop.

    Any message, EOF or pipe error means stop; so does a changed ``getppid()`` (the parent died and
    the helper was re-parented).
    """
    try:
        if conn.poll(max(0.0, min(timeout, WATCH_INTERVAL_S))):
            conn.recv()
            return True
    except (EOFError, OSError):
        return True
    return os.getppid() != parent_pid


def sleep_or_stop(conn: multiprocessing.connection.Connection, parent_pid: int, duration_s: float) -> bool:
    """Helper side: sleep ``duration_s`` unless asked to stop first (then return True at once)."""
    deadline = time.monotonic() + duration_s
    while True:
        remaining = deadline - time.monotonic()
        if should_stop(conn, parent_pid, remaining):
            return True
        if remaining <= WATCH_INTERVAL_S:
            return False


def _helper_main(
    child_conn: multiprocessing.connection.Connection,
    parent_conn: multiprocessing.connection.Connection,
    parent_pid: int,
    body: Callable[..., None],
    report: Any,
    args: tuple[Any, ...],
) -> None:
    parent_conn.close()  # the parent's end; holding it here would hide the parent's EOF
    child_signals(graceful_term=True)
    try:
        body(child_conn, parent_pid, report, *args)
    finally:
        shield_cleanup()
        try:
            child_conn.send(report)
        except OSError:  # parent gone: nobody to tell
            pass
        child_conn.close()


class HelperOwner:
    """What a perturber that drives one :class:`HelperProcess` reports about it (shared by the
    chaos runner and the migrator). Subclasses set ``_helper`` and, once stopped, ``_report``."""

    _helper: "HelperProcess | None" = None
    _report: Any = None

    @property
    def running(self) -> bool:
        """True while the helper process is at work."""
        helper = self._helper
        return helper is not None and self._report is None and helper.process is not None and helper.process.is_alive()

    @property
    def helper_pid(self) -> int | None:
        """Pid of the helper process (None before start)."""
        helper = self._helper
        return helper.process.pid if helper is not None and helper.process is not None else None


class HelperProcess:
    """Parent-side handle of one helper process running ``body(conn, parent_pid, report, *args)``.

    ``body`` updates the mutable ``report`` as it goes and undoes its own effects in ``finally``;
    the report is sent back after that and returned by :meth:`stop` (None if the helper died
    without reporting, e.g. SIGKILL).
    """

    def __init__(self, name: str, body: Callable[..., None], report: Any, args: tuple[Any, ...]) -> None:
        self._name, self._body, self._report, self._args = name, body, report, args
        self._conn: multiprocessing.connection.Connection | None = None
        self.process: multiprocessing.process.BaseProcess | None = None

    def start(self) -> None:
        self._conn, child_conn = MP_CONTEXT.Pipe(duplex=True)
        try:
            # A daemon: multiprocessing's atexit terminates it (SIGTERM → its cleanup runs) if the
            # owner exits without stop().
            self.process = fork_process(
                MP_CONTEXT, _helper_main, (child_conn, self._conn, os.getpid(), self._body, self._report, self._args),
                self._name, close_after_start=(child_conn,),
            )
        except BaseException:
            self._conn.close()
            raise

    def stop(self, timeout: float = 1.0) -> Any:
        """Ask the helper to stop, collect its report, make sure it has exited."""
        report = None
        if self.process is None or self._conn is None:
            return None
        try:
            try:
                self._conn.send("stop")
            except OSError:  # helper already gone (finished, or killed)
                pass
            try:
                if self._conn.poll(timeout):
                    report = self._conn.recv()
            except (EOFError, OSError):
                pass
        finally:
            # SIGTERM lets its cleanup (resume, restore) run; SIGKILL only if that hangs.
            end_processes([self.process], grace_s=timeout, term_s=0.5, kill_wait_s=1.0)
            self._conn.close()
        return report


# -- background CPU load --------------------------------------------------------------------------


def _spin(deadline_s: float, parent_pid: int) -> None:
    child_signals(graceful_term=False)  # nothing to clean up: default SIGTERM kills at once
    x = 0
    while time.monotonic() < deadline_s and os.getppid() == parent_pid:
        # ~0.5 ms of pure-Python work between checks: busy enough to take whole time slices, and the
        # checks (one syscall) stay far below 1 % of the time.
        for i in range(20_000):
            x ^= i


class BackgroundLoad:
    """``n_procs`` busy-looping processes, each ending by itself after ``duration_s`` or when its
    parent dies, whichever comes first.

    ``cpus``: pin load process ``i`` to ``cpus[i % len(cpus)]`` (None: the OS places them), e.g. to
    load exactly the CPUs the core processes were packed on. Use as a context manager, or call
    :meth:`start` and :meth:`stop` (in ``finally``).
    """

    def __init__(self, n_procs: int, duration_s: float, cpus: Sequence[int] | None = None) -> None:
        if n_procs < 0:
            raise UsageError(f"BackgroundLoad: n_procs must be >= 0, got {n_procs}")
        if not duration_s > 0:
            raise UsageError(f"BackgroundLoad: duration_s must be > 0, got {duration_s}")
        if cpus is not None and len(cpus) == 0:
            raise UsageError("BackgroundLoad: cpus is empty")
        self.n_procs = n_procs
        self.duration_s = float(duration_s)
        self.cpus = list(cpus) if cpus is not None else None
        self._procs: list[multiprocessing.process.BaseProcess] = []

    @property
    def pids(self) -> list[int]:
        """Pids of the load processes started (including ones that have already finished)."""
        return [p.pid for p in self._procs if p.pid is not None]

    def alive(self) -> int:
        """How many load processes are still running."""
        return sum(p.is_alive() for p in self._procs)

    def start(self) -> "BackgroundLoad":
        if self._procs:
            raise UsageError("BackgroundLoad already started")
        deadline = time.monotonic() + self.duration_s  # CLOCK_MONOTONIC is system-wide: valid in children
        parent = os.getpid()
        try:
            for i in range(self.n_procs):
                p = fork_process(MP_CONTEXT, _spin, (deadline, parent), f"mpnpu-load-{i}")
                self._procs.append(p)
                if self.cpus:
                    # Pinned from here rather than by the child, so the placement holds when start() returns.
                    assert p.pid is not None  # started
                    os.sched_setaffinity(p.pid, {self.cpus[i % len(self.cpus)]})
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 1.0) -> None:
        """Kill every load process and join it; returns within about ``timeout`` seconds."""
        # SIGKILL at once: a spin loop has nothing to clean up.
        end_processes(self._procs, kill_wait_s=timeout)

    def __enter__(self) -> "BackgroundLoad":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
