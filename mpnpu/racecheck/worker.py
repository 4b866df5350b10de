"""Racecheck's analysis in a process of its own, at the lowest CPU priority.

A batch's parent analyses traced launches on a worker thread while the next launches run
(:mod:`mpnpu.racecheck.background`). On a machine whose CPUs the core processes already keep busy,
that thread takes CPU time from the cores at their own priority, and the interpreter from the
batch loop. :class:`AnalysisProcess` moves the analysis into a child process forked from the parent
with its :class:`~mpnpu.racecheck.reuse.AnalysisCache`, which lowers its own priority to the least
(``nice`` 19): it runs on CPU time the cores leave idle, and catches up once the batch has run.
Nothing else changes: the worker thread hands each launch over and goes on, and the hazards come
back in launch order to the logs they were meant for (all of them before the batch's analysis
finishes), so the logs, the report and the exit code are those of the analysis in the parent.

A waiting core process looks again and again, giving its CPU away between looks
(``sched_yield``, :mod:`mpnpu.runtime.spin`). A yield hands the CPU to whatever else may run, this
child too, and a busy ``nice`` 19 process keeps it until the scheduler's next tick: measured on the
project's 2-CPU machine, a process yielding in a loop on a CPU shared with a busy ``nice`` 19 process
lost up to 4-5 ms per yield. A core that waits 50 us for a SyncAll would notice it 4 ms late. So while the
child analyses, an interval timer gives the CPU back every :data:`YIELD_EVERY_S` (:class:`_YieldingOften`),
which bounds what a yield to it costs; it is off while the child waits for work.

The child never outlives the parent (the kernel's parent-death signal, and a check of its parent
while it waits for work), ignores Ctrl-C (the parent decides), and is ended when the batch's
analysis closes. A failure in it is the same error in the parent; its death is a TraceError naming
how it ended.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import signal
import threading
from collections import deque
from multiprocessing.connection import Connection
from typing import Any, Callable, NoReturn

from mpnpu.errors import TraceError
from mpnpu.racecheck.hazards import Hazard
from mpnpu.racecheck.reuse import AnalysisCache
from mpnpu.runtime.procutil import (
    describe_exit,
    end_processes,
    fork_process,
    set_parent_death_signal,
    signals_blocked,
)
from mpnpu.runtime.trace import LaunchTrace

#: the child's priority: the least, so the core processes always run first
NICENESS = 19
#: while analysing, the child gives its CPU back this often (module docstring): a core that yielded to it
#: gets it back within about this long, and 5000 yields a second cost the child about 1% of its time
YIELD_EVERY_S = 0.0002
#: how often a wait (either side) looks again whether the other process is still there
_POLL_S = 0.5
_STOP = b"stop"
_ERROR = "error"  # (the first item of an answer that is a failure)
#: fork, as the core pool's processes: the child has the parent's modules already imported
_CONTEXT = multiprocessing.get_context("fork")


def _serve(conn: Connection, parent_end: Connection, cache: AnalysisCache, parent: int) -> None:
    """The child: analyse each trace sent, in order; answer (hazards, reused) or ("error", exception).

    A thread of its own takes every message off the pipe as it comes, so the parent never waits to
    send while this process answers (each side only ever waits to read)."""
    parent_end.close()  # (the parent's end, inherited: held here, the pipe would never end)
    set_parent_death_signal()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (Ctrl-C reaches the whole group: the parent decides)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (not the parent's handler: ending it ends it)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))  # (blocked for the fork)
    try:
        os.nice(NICENESS)
    except OSError:
        pass  # (a priority that cannot be lowered only means sharing the CPUs as the thread did)
    inbox: queue.SimpleQueue[bytes] = queue.SimpleQueue()

    def take() -> None:
        while True:
            try:
                msg = conn.recv_bytes()
            except (EOFError, OSError):
                msg = _STOP  # (the parent is gone)
            inbox.put(msg)
            if msg == _STOP:
                return

    with signals_blocked(signal.SIGALRM):  # (the thread inherits the mask: the timer's signal is the analysis's)
        threading.Thread(target=take, name="mpnpu-racecheck-inbox", daemon=True).start()
    yielding = _YieldingOften(YIELD_EVERY_S)
    while True:
        try:
            msg = inbox.get(timeout=_POLL_S)
        except queue.Empty:
            if os.getppid() != parent:
                return
            continue
        if msg == _STOP:
            return
        try:
            with yielding:
                hazards = cache.analyze(pickle.loads(msg))
            reply: tuple[Any, Any] = (hazards, cache.last_reused)
        except Exception as e:  # (any failure is the parent's to raise, as the thread's would be)
            reply = (_ERROR, e)
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return  # (the parent is gone)
        except Exception as e:  # (an error that does not pickle: its text)
            conn.send((_ERROR, TraceError(f"racecheck's analysis failed: {type(e).__name__}: {e}")))


class _YieldingOften:
    """While the block runs, this process gives its CPU away (``sched_yield``) every ``period_s``
    seconds, from a SIGALRM handler (module docstring). The timer is a real-time one: a CPU-time
    timer is only looked at on the scheduler's tick, which is what it is there to beat."""

    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        signal.signal(signal.SIGALRM, _give_cpu_away)

    def __enter__(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, self.period_s, self.period_s)

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0.0, 0.0)


def _give_cpu_away(signum: int, frame: object) -> None:
    os.sched_yield()


class AnalysisProcess:
    """Racecheck's analysis of launches (:meth:`mpnpu.racecheck.reuse.AnalysisCache.analyze`), done by
    a child process (module docstring): :meth:`send` hands a launch over and goes on, its hazards
    reaching their callback, in the order sent, from a later :meth:`send` or :meth:`collect`;
    :meth:`close` ends the child. ``cache``: the cache it starts with (the child has its own copy
    from the fork); ``max_in_flight``: launches sent and not yet answered before :meth:`send` waits."""

    def __init__(self, cache: AnalysisCache, max_in_flight: int = 64) -> None:
        self.max_in_flight = max_in_flight
        self._waiting: deque[Callable[[list[Hazard], bool], None]] = deque()
        self._conn, child_end = _CONTEXT.Pipe()
        # (SIGINT and SIGTERM pending while it forks: none reaches the child before its own handlers)
        with signals_blocked(signal.SIGINT, signal.SIGTERM):
            self._proc = fork_process(_CONTEXT, _serve, (child_end, self._conn, cache, os.getpid()),
                                      "mpnpu-racecheck-analysis", close_after_start=(child_end,))

    def send(self, trace: LaunchTrace, done: Callable[[list[Hazard], bool], None]) -> None:
        """Have ``trace`` analysed; ``done(hazards, reused)`` is called with what
        ``AnalysisCache.analyze`` finds (``reused``: its ``last_reused``). Raises what an earlier
        launch's analysis raised."""
        while len(self._waiting) >= self.max_in_flight:
            self._receive()
        try:
            self._conn.send_bytes(pickle.dumps(trace, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            self._ended()
        self._waiting.append(done)
        self.collect(block=False)

    def collect(self, block: bool = True) -> None:
        """Hand the answers that have come to their callbacks; ``block``: wait for every one."""
        while self._waiting and (block or self._conn.poll(0)):
            self._receive()

    def _receive(self) -> None:
        try:
            while not self._conn.poll(_POLL_S):
                if not self._proc.is_alive():
                    self._ended()
            hazards, reused = self._conn.recv()
        except (EOFError, OSError):
            self._ended()
        done = self._waiting.popleft()
        if isinstance(hazards, str) and hazards == _ERROR:
            raise reused
        done(list(hazards), bool(reused))

    def _ended(self) -> NoReturn:
        self._proc.join(1.0)
        raise TraceError(f"racecheck's analysis process ended without a result ({describe_exit(self._proc.exitcode)})")

    def close(self) -> None:
        """End the child (it stops by itself once told; it is killed if it does not); answers not
        collected are dropped (:meth:`collect` them first)."""
        try:
            self._conn.send_bytes(_STOP)
        except OSError:
            pass  # (already gone)
        end_processes([self._proc], grace_s=1.0, term_s=1.0)
        self._conn.close()
