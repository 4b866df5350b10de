"""Racecheck's analysis (and initcheck's and synccheck's) on a worker thread of the parent, while the
next launches run.

A batch's parent spends most of a launch waiting for its cores (in ``poll``, without the GIL), and
the cores spend the parent's analysis of the previous launch waiting for their next command. Run
one after the other, the two add up; :class:`BackgroundAnalysis` overlaps them: the batch loop
hands each traced launch to a worker thread and goes on to the next case-run, and the worker adds
each launch's hazards to its variant's log in the order the launches ran (:meth:`BackgroundAnalysis.submit`;
initcheck's and synccheck's findings likewise, through :meth:`BackgroundAnalysis.later`). Nothing
reads a log before :meth:`BackgroundAnalysis.finish`, so the logs, the report and the exit code are
those of the analysis in line, launch for launch.

The GIL is the one cost: while the worker analyses, a reply that wakes the main thread waits for
the worker to yield the interpreter, after at most ``sys.getswitchinterval()`` (5 ms by default,
longer than an empty launch). While a :class:`BackgroundAnalysis` is open the interval is
``switch_interval_s`` (0.5 ms), and restored when it closes.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from types import TracebackType
from typing import Callable

from mpnpu.errors import TraceError
from mpnpu.racecheck.hazards import HazardLog
from mpnpu.racecheck.reuse import AnalysisCache
from mpnpu.racecheck.worker import AnalysisProcess
from mpnpu.runtime.trace import LaunchTrace

#: jobs waiting for the worker before submit / later block (a launch with racecheck and checks
#: queues two): each holds a launch's packed trace, and a
#: batch whose analysis cannot keep up must not fill the parent's memory
DEFAULT_MAX_PENDING = 64
#: how soon the main thread gets the interpreter back from the worker (see the module docstring)
DEFAULT_SWITCH_INTERVAL_S = 0.0005
#: how often a wait for the worker looks again whether it is still alive (it cannot block: it only
#: computes, so this only bounds the reaction to a worker that died)
_POLL_S = 1.0


class BackgroundAnalysis:
    """Analyse traced launches with ``cache`` (racecheck), and run other jobs given to :meth:`later`
    (initcheck's and synccheck's), on a worker thread, in the order given; use as a context manager::

        with BackgroundAnalysis(cache) as analysis:
            for ...: analysis.submit(trace, log)
            analysis.finish()   # every job has run: every submitted launch is in its log; re-raises an error

    Leaving the block without :meth:`finish` (an interrupt, a failure) drops the jobs not yet
    run and waits only for the one in progress: an interrupted batch's logs hold the launches
    analysed and checked by then (with ``in_process``, the launches the child process has answered
    by then).
    """

    def __init__(self, cache: AnalysisCache | None, *, max_pending: int = DEFAULT_MAX_PENDING,
                 switch_interval_s: float = DEFAULT_SWITCH_INTERVAL_S, in_process: bool = False) -> None:
        self.cache = cache  # None: no racecheck, only the jobs given to later()
        #: racecheck's analyses are made by a child process at the lowest priority (mpnpu.racecheck.worker),
        #: the worker thread handing each over and waiting for it; else on the worker thread itself
        self.in_process = in_process
        self._process: AnalysisProcess | None = None
        self.max_pending = max_pending
        self.switch_interval_s = switch_interval_s
        self._pending: deque[Callable[[], None]] = deque()
        self._cond = threading.Condition()
        self._busy = False  # the worker holds a job taken off _pending
        self._closing = False
        self._error: BaseException | None = None
        self._saved_interval: float | None = None
        self._worker = threading.Thread(target=self._work, name="mpnpu-trace-analysis", daemon=True)

    def __enter__(self) -> BackgroundAnalysis:
        if self.in_process and self.cache is not None:
            try:  # (forked before the worker thread exists: a process with threads must not fork)
                self._process = AnalysisProcess(self.cache)
            except OSError:
                self._process = None  # (no process to be had: the thread analyses, as without in_process)
        self._saved_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._saved_interval, self.switch_interval_s))
        self._worker.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with self._cond:
            self._pending.clear()  # (after finish: already empty)
            self._closing = True
            self._cond.notify_all()
        while self._worker.is_alive():
            self._worker.join(_POLL_S)
        if self._process is not None:
            try:  # (left early: the launches the child has answered reach their logs, as on the thread)
                self._process.collect(block=False)
            except Exception:  # (an error found now is the child's; the block is being left anyway)
                pass
            self._process.close()
        if self._saved_interval is not None:
            sys.setswitchinterval(self._saved_interval)

    def submit(self, trace: LaunchTrace, log: HazardLog) -> None:
        """Queue ``trace`` for racecheck's analysis into ``log``; blocks while ``max_pending`` jobs
        wait. Raises the error an earlier job raised."""
        cache = self.cache
        if cache is None:
            raise TraceError("this background analysis was opened without racecheck's cache")

        process = self._process
        if process is not None:  # (its answer reaches the log in order, from a later job or finish)
            self.later(lambda: process.send(trace, lambda hazards, reused: log.add(hazards, reused=reused)))
            return

        def analyse() -> None:
            log.add(cache.analyze(trace), reused=cache.last_reused)

        self.later(analyse)

    def later(self, job: Callable[[], None]) -> None:
        """Queue ``job`` to run on the worker after the jobs queued before it; blocks while
        ``max_pending`` jobs wait. Raises the error an earlier job raised."""
        with self._cond:
            while len(self._pending) >= self.max_pending and self._error is None:
                self._wait()
            self._raise_error()
            self._pending.append(job)
            self._cond.notify_all()

    def finish(self) -> None:
        """Wait until every job given has run (every submitted launch analysed); raises the first error a
        job raised."""
        with self._cond:
            while (self._pending or self._busy) and self._error is None:
                self._wait()
            self._raise_error()
        if self._process is not None:  # (the worker thread is idle now: this thread collects the rest)
            try:
                self._process.collect()
            except BaseException as e:
                with self._cond:
                    self._error = e  # (as a job's error: later submits raise it too)
                raise

    def _wait(self) -> None:
        if not self._worker.is_alive():
            raise TraceError("the trace analysis thread (racecheck, initcheck, synccheck) ended without a result")
        self._cond.wait(_POLL_S)

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:
                    return
                job = self._pending.popleft()
                self._busy = True
                self._cond.notify_all()  # (room for a blocked submit)
            try:
                job()
            except BaseException as e:  # any failure reaches the batch through submit or finish
                with self._cond:
                    self._error = e
                    self._pending.clear()
                    self._busy = False
                    self._cond.notify_all()
                return
            with self._cond:
                self._busy = False
                self._cond.notify_all()

