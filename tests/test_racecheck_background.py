"""Racecheck's analysis on a worker thread (mpnpu.racecheck.background): the logs it fills equal the
analysis in line, launch for launch and in order; an analysis error reaches the batch; a batch that
analyses slower than it launches is held back rather than queueing without bound; leaving early
drops what is left; the interpreter's switch interval is restored."""

from __future__ import annotations

import signal
import sys
import threading

import psutil
import pytest

from mpnpu.errors import TraceError
from mpnpu.racecheck import HazardLog, analyze
from mpnpu.racecheck.background import BackgroundAnalysis
from mpnpu.racecheck.reuse import AnalysisCache
from mpnpu.racecheck.worker import NICENESS, YIELD_EVERY_S, _give_cpu_away, _YieldingOften
from mpnpu.runtime.trace import LaunchTrace, SyncAllEvent
from tests.test_racecheck_reuse import compaction

pytestmark = [pytest.mark.usefixtures("no_leaks", "time_limit"), pytest.mark.time_limit(60)]

#: how long a test waits for the worker thread to reach a point (it only computes: far more than enough)
WAIT_S = 30.0


class _GatedCache(AnalysisCache):
    """An AnalysisCache whose analyses wait for ``gate``, and say when one has started."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)

    def analyze(self, trace: LaunchTrace) -> list:
        self.started.release()
        assert self.gate.wait(WAIT_S), "the test never opened the gate"
        return super().analyze(trace)


def _bad() -> LaunchTrace:
    return LaunchTrace(1, "k", ((SyncAllEvent(False, "", "s", "k.py:1"),), (), ()), frozenset())


@pytest.mark.parametrize("in_process", [False, True])
def test_the_logs_equal_the_analysis_in_line_launch_for_launch(in_process: bool) -> None:
    traces = [compaction(read_at) for read_at in (50, 200, 50, 60, 300, 51)]
    expected = [HazardLog(), HazardLog()]
    cache = AnalysisCache()
    for i, t in enumerate(traces):
        expected[i % 2].add(cache.analyze(t), reused=cache.last_reused)
    got = [HazardLog(), HazardLog()]
    with BackgroundAnalysis(AnalysisCache(), in_process=in_process) as background:
        for i, t in enumerate(traces):
            background.submit(t, got[i % 2])
        background.finish()
        assert (background._process is not None) == in_process
    for e, g in zip(expected, got):
        assert g.to_dicts() == e.to_dicts()
        assert g.launch_counts() == e.launch_counts()
    assert got[0].to_dicts()  # (the stale reads at 50 make hazards: the comparison is not of empty logs)
    assert [h.to_dict() for h in analyze(traces[0])]


@pytest.mark.parametrize("in_process", [False, True])
def test_an_analysis_error_reaches_finish_and_later_submits(in_process: bool) -> None:
    log = HazardLog()
    with BackgroundAnalysis(AnalysisCache(), in_process=in_process) as background:
        background.submit(compaction(50), log)
        background.submit(_bad(), log)
        with pytest.raises(TraceError, match="inconsistent trace"):
            background.finish()
        with pytest.raises(TraceError):
            background.submit(compaction(60), log)
    assert log.launches_analyzed == 1  # the launch before the bad one


def test_submit_blocks_while_max_pending_launches_wait() -> None:
    cache = _GatedCache()
    log = HazardLog()
    submitted = threading.Event()
    with BackgroundAnalysis(cache, max_pending=1) as background:
        background.submit(compaction(50), log)  # taken by the worker, which waits at the gate
        assert cache.started.acquire(timeout=WAIT_S)
        background.submit(compaction(60), log)  # pending: the queue is full now

        def third() -> None:
            background.submit(compaction(70), log)
            submitted.set()

        t = threading.Thread(target=third, daemon=True)
        t.start()
        # held back: nothing can leave the queue while the worker waits at the gate
        assert not submitted.wait(0.2)
        cache.gate.set()
        assert submitted.wait(WAIT_S)
        t.join(WAIT_S)
        background.finish()
    assert log.launches_analyzed == 3


def test_leaving_without_finish_drops_the_launches_not_yet_analysed() -> None:
    cache = _GatedCache()
    log = HazardLog()
    background = BackgroundAnalysis(cache)

    def open_gate_once_closing() -> None:
        # the launch in progress may finish only once the block is being left
        deadline = threading.Event()
        for _ in range(int(WAIT_S * 1000)):
            if background._closing:
                break
            deadline.wait(0.001)
        cache.gate.set()

    opener = threading.Thread(target=open_gate_once_closing, daemon=True)
    with background:
        for read_at in (50, 60, 70):
            background.submit(compaction(read_at), log)
        assert cache.started.acquire(timeout=WAIT_S)
        opener.start()
    opener.join(WAIT_S)
    assert log.launches_analyzed == 1  # the one in progress; the two behind it were dropped
    assert not background._worker.is_alive()


def test_the_switch_interval_is_short_while_open_and_restored_after() -> None:
    before = sys.getswitchinterval()
    with BackgroundAnalysis(AnalysisCache(), switch_interval_s=before / 10) as background:
        assert sys.getswitchinterval() == pytest.approx(before / 10)
        background.finish()
    assert sys.getswitchinterval() == before


def test_later_jobs_run_in_order_with_the_analyses_and_without_a_cache() -> None:
    order: list[str] = []
    log = HazardLog()

    class _Recording(AnalysisCache):
        def analyze(self, trace: LaunchTrace) -> list:
            order.append("analysis")
            return super().analyze(trace)

    caller = threading.get_ident()
    with BackgroundAnalysis(_Recording()) as background:
        background.later(lambda: order.append("check 1" if threading.get_ident() != caller else "on the caller"))
        background.submit(compaction(50), log)
        background.later(lambda: order.append("check 2"))
        background.finish()
    assert order == ["check 1", "analysis", "check 2"] and log.launches_analyzed == 1
    with BackgroundAnalysis(None) as checks_only:  # (initcheck / synccheck without racecheck)
        checks_only.later(lambda: order.append("check 3"))
        checks_only.finish()
        with pytest.raises(TraceError, match="without racecheck"):
            checks_only.submit(compaction(50), log)
    assert order[-1] == "check 3"


def test_an_error_in_a_later_job_reaches_finish() -> None:
    def fails() -> None:
        raise TraceError("a check failed")

    with BackgroundAnalysis(None) as background:
        background.later(fails)
        with pytest.raises(TraceError, match="a check failed"):
            background.finish()


def test_the_analysis_process_runs_at_the_lowest_priority_and_ends_with_the_block() -> None:
    log = HazardLog()
    with BackgroundAnalysis(AnalysisCache(), in_process=True) as background:
        assert background._process is not None
        child = psutil.Process(background._process._proc.pid)
        background.submit(compaction(50), log)
        background.finish()
        assert child.nice() == NICENESS
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert log.launches_analyzed == 1 and log.to_dicts()


def test_an_analysis_process_that_died_is_an_error_naming_how() -> None:
    log = HazardLog()
    with BackgroundAnalysis(AnalysisCache(), in_process=True) as background:
        assert background._process is not None
        background._process._proc.kill()
        background._process._proc.join(WAIT_S)
        background.submit(compaction(50), log)
        with pytest.raises(TraceError, match="analysis process ended without a result.*SIGKILL"):
            background.finish()
    assert log.launches_analyzed == 0


def test_leaving_early_keeps_the_launches_the_analysis_process_answered() -> None:
    log = HazardLog()
    with pytest.raises(KeyboardInterrupt):
        with BackgroundAnalysis(AnalysisCache(), in_process=True) as background:
            for read_at in (50, 60, 70):
                background.submit(compaction(read_at), log)
            assert background._process is not None
            # an answer has come back (the worker thread reads them only as it sends the next launch)
            assert background._process._conn.poll(WAIT_S)
            raise KeyboardInterrupt
    assert log.launches_analyzed >= 1 and log.to_dicts()


class _TimerProbe(AnalysisCache):
    """Answers every launch with an error that says how the child's real-time interval timer and its
    SIGALRM handler stood while it analysed (the state is the child's: an error is what comes back)."""

    def analyze(self, trace: LaunchTrace) -> list:
        handler = signal.getsignal(signal.SIGALRM)
        raise TraceError(f"timer {signal.getitimer(signal.ITIMER_REAL)[1]!r} handler "
                         f"{getattr(handler, '__name__', handler)}")


def test_the_analysis_process_gives_its_cpu_back_often_while_it_analyses() -> None:
    log = HazardLog()
    with BackgroundAnalysis(_TimerProbe(), in_process=True) as background:
        assert background._process is not None  # (else the probe would answer from this process)
        background.submit(compaction(50), log)
        with pytest.raises(TraceError) as raised:
            background.finish()
    interval, handler = str(raised.value).removeprefix("timer ").split(" handler ")
    assert float(interval) == pytest.approx(YIELD_EVERY_S, abs=1e-5)
    assert handler == "_give_cpu_away"


def test_the_yield_timer_runs_only_inside_its_block() -> None:
    handler, timer = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)  # (the time limit's)
    try:
        yielding = _YieldingOften(0.001)
        assert signal.getsignal(signal.SIGALRM) is _give_cpu_away
        with yielding:
            value, interval = signal.getitimer(signal.ITIMER_REAL)
            assert 0 < value <= 0.001 and interval == pytest.approx(0.001, abs=1e-5)
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, handler)
        signal.setitimer(signal.ITIMER_REAL, *timer)
