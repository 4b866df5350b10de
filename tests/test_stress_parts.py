"""Tests of the stress building blocks (mpnpu.harness.stats, mpnpu.harness.stress.*) on real dummy processes.

Every test that starts processes owns them through the ``dummies`` fixture or the object under test,
and the autouse ``no_leftover_children`` fixture fails the test if any child process survives it.
Timing-based checks use generous slack: the machine has 2 CPUs shared with other test runs.
"""

from __future__ import annotations

import ctypes
import json
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import psutil
import pytest

from mpnpu.errors import UsageError
from mpnpu.harness import stats
from mpnpu.harness.stress import (
    BackgroundLoad,
    ChaosEntry,
    ChaosRunner,
    ChaosSchedule,
    Migrator,
    ProcessGoneError,
    apply_affinity,
    available_cpus,
    delta,
    pack,
    read_affinity,
    restore,
    resume_all,
    sample,
    spread,
)
from tests.waiting import wait_for, wait_until

#: every test: no child process (nor GM segment) left behind (conftest's one leak check)
pytestmark = pytest.mark.usefixtures("no_leaks")

CTX = multiprocessing.get_context("fork")
Z95 = 1.959963984540054  # Φ⁻¹(0.975)
CPUS = available_cpus()
needs_two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 usable CPUs")


# -- fixtures and helpers ---------------------------------------------------------------------------


def _sleeper(parent_pid: int) -> None:
    deadline = time.monotonic() + 30  # bounded even if the fixture's cleanup never ran
    while time.monotonic() < deadline and os.getppid() == parent_pid:
        time.sleep(0.01)


def _busy(parent_pid: int) -> None:
    deadline = time.monotonic() + 30
    x = 0
    while time.monotonic() < deadline and os.getppid() == parent_pid:
        for i in range(10_000):
            x ^= i


@pytest.fixture
def dummies() -> Iterator[Callable[..., list[multiprocessing.process.BaseProcess]]]:
    """Factory of dummy child processes (sleeping or busy); all killed and joined at teardown."""
    owned: list[multiprocessing.process.BaseProcess] = []

    def make(n: int, busy: bool = False) -> list[multiprocessing.process.BaseProcess]:
        procs = [CTX.Process(target=_busy if busy else _sleeper, args=(os.getpid(),), daemon=True) for _ in range(n)]
        for p in procs:
            p.start()
            owned.append(p)
        return procs

    try:
        yield make
    finally:
        for p in owned:
            if p.is_alive():
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
            p.join(2)


def status(pid: int) -> str:
    try:
        return psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return "gone"


def stop_episodes(pids: list[int], wanted: int) -> Callable[[], bool]:
    """A predicate, polled: True once ``wanted`` separate suspensions (running -> stopped) of any
    of ``pids`` have been seen."""
    seen = {"n": 0, "stopped": set()}

    def check() -> bool:
        for pid in pids:
            stopped = status(pid) == psutil.STATUS_STOPPED
            if stopped and pid not in seen["stopped"]:
                seen["n"] += 1
            (seen["stopped"].add if stopped else seen["stopped"].discard)(pid)
        return seen["n"] >= wanted

    return check


def dead_pid(dummies: Callable[..., list]) -> int:
    """A pid that existed and is gone (killed and reaped)."""
    (p,) = dummies(1)
    p.kill()
    p.join(2)
    return p.pid


def exited(pid: int) -> bool:
    return status(pid) in ("gone", psutil.STATUS_ZOMBIE)  # a re-parented zombie may wait for init


def set_subreaper(on: bool) -> None:
    """prctl(PR_SET_CHILD_SUBREAPER): orphaned descendants are re-parented to this process."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def reap_adopted(pid: int, timeout: float) -> None:
    """Reap an adopted orphan once it has exited (waitpid with WNOHANG, polled: never blocks)."""
    def reaped() -> bool:
        try:
            return os.waitpid(pid, os.WNOHANG)[0] == pid
        except ChildProcessError:  # not our child (already reaped, or adopted by someone else)
            return True

    wait_for(reaped, timeout, interval=0.01)


def fixed_schedule(entries: list[tuple[float, int, float]], n_targets: int, duration_s: float) -> ChaosSchedule:
    return ChaosSchedule.from_dict(
        {
            "format": "mpnpu.chaos_schedule/1",
            "seed": 0,
            "n_targets": n_targets,
            "duration_s": duration_s,
            "mean_interval_s": 0.1,
            "max_suspend_s": 1.0,
            "min_suspend_s": 0.01,
            "entries": [list(e) for e in entries],
        }
    )


# -- stats ------------------------------------------------------------------------------------------


def test_wilson_interval_known_values() -> None:
    z2 = Z95 * Z95
    n = 10
    # k = 0: centre - half = 0 exactly, hi = z²/(n + z²)
    lo, hi = stats.wilson_interval(0, n)
    assert lo == 0.0 and hi == pytest.approx(z2 / (n + z2), rel=1e-9)
    assert hi == pytest.approx(0.2775, abs=1e-4)  # published table value
    # k = n: mirror image
    lo, hi = stats.wilson_interval(n, n)
    assert hi == 1.0 and lo == pytest.approx(n / (n + z2), rel=1e-9)
    # k = 5: centre 0.5, half = z/(1 + z²/n) · sqrt(0.25/n + z²/(4n²))
    half = Z95 / (1 + z2 / n) * math.sqrt(0.25 / n + z2 / (4 * n * n))
    lo, hi = stats.wilson_interval(5, n)
    assert (lo, hi) == pytest.approx((0.5 - half, 0.5 + half), rel=1e-9)
    assert (lo, hi) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_interval_properties() -> None:
    n = 40
    bounds = [stats.wilson_interval(k, n) for k in range(n + 1)]
    for k, (lo, hi) in enumerate(bounds):
        assert 0.0 <= lo <= k / n <= hi <= 1.0
    los, his = zip(*bounds)
    assert all(a < b for a, b in zip(los[1:], los[2:])) and all(a < b for a, b in zip(his, his[1:-1]))
    # more data at the same rate → narrower; more confidence → wider
    w = lambda lo_hi: lo_hi[1] - lo_hi[0]  # noqa: E731
    assert w(stats.wilson_interval(30, 100)) < w(stats.wilson_interval(3, 10))
    assert w(stats.wilson_interval(3, 10, 0.99)) > w(stats.wilson_interval(3, 10, 0.95))
    for bad in [(-1, 5), (6, 5), (1, -1)]:
        with pytest.raises(ValueError):
            stats.wilson_interval(*bad)
    with pytest.raises(ValueError):
        stats.wilson_interval(1, 5, confidence=1.0)


def test_zero_failure_bounds() -> None:
    assert stats.rule_of_three(100) == pytest.approx(0.03)
    assert stats.rule_of_three(0) == 1.0 and stats.rule_of_three(1) == 1.0
    exact = stats.zero_failure_upper_bound(100, 0.95)
    assert (1 - exact) ** 100 == pytest.approx(0.05, rel=1e-9)  # the defining equation
    assert exact < stats.rule_of_three(100) and exact == pytest.approx(0.03, rel=0.02)
    assert stats.zero_failure_upper_bound(0) == 1.0
    assert stats.zero_failure_upper_bound(10, 0.99) > stats.zero_failure_upper_bound(10, 0.95)


def test_trials_to_detect_is_the_smallest_sufficient_n() -> None:
    assert stats.trials_to_detect(0.01, 0.99) == 459  # ln(0.01)/ln(0.99) = 458.2
    assert stats.trials_to_detect(0.5, 0.75) == 2  # exactly on the boundary: 1 - 0.5² = 0.75
    assert stats.trials_to_detect(1.0) == 1
    for p in (0.3, 0.05, 0.001, 1e-6):
        for c in (0.5, 0.9, 0.99):
            n = stats.trials_to_detect(p, c)
            assert stats.detect_probability(p, n) >= c
            assert n == 1 or stats.detect_probability(p, n - 1) < c
    assert stats.detect_probability(0.5, 2) == pytest.approx(0.75)
    assert stats.detect_probability(0.2, 0) == 0.0
    with pytest.raises(ValueError):
        stats.trials_to_detect(0.0)


# -- chaos schedule -------------------------------------------------------------------------------


def test_chaos_schedule_is_determined_by_its_arguments() -> None:
    args = dict(n_targets=6, duration_s=2.0, mean_interval_s=0.02, max_suspend_s=0.005)
    a = ChaosSchedule.generate(7, **args)
    assert a == ChaosSchedule.generate(7, **args)
    assert a.entries != ChaosSchedule.generate(8, **args).entries
    assert a.entries != ChaosSchedule.generate(7, **{**args, "max_suspend_s": 0.004}).entries
    assert 50 < len(a) < 200  # ~duration/mean = 100 entries
    times = [e.t_offset_s for e in a]
    assert times == sorted(times) and 0 <= times[0] and times[-1] < 2.0
    assert {e.target_index for e in a} == set(range(6))
    assert all(0.005 / 100 <= e.suspend_s <= 0.005 for e in a)


def test_chaos_schedule_json_round_trip_and_validation() -> None:
    a = ChaosSchedule.generate(3, 4, 1.0, 0.05, 0.01)
    text = json.dumps(a.to_dict())
    b = ChaosSchedule.from_dict(json.loads(text))
    assert b == a and isinstance(b[0], ChaosEntry)
    bad = json.loads(text)
    bad["entries"][0][1] = 4  # target index out of range
    with pytest.raises(UsageError):
        ChaosSchedule.from_dict(bad)
    with pytest.raises(UsageError):
        ChaosSchedule.from_dict({**a.to_dict(), "format": "something else"})


def test_chaos_schedule_stream_positions_when_looping() -> None:
    s = ChaosSchedule.generate(5, 2, 0.5, 0.05, 0.01)
    n = len(s)
    assert s.stream_time(n) == pytest.approx(0.5 + s[0].t_offset_s)
    for m in (0, 1, n - 1, n, 3 * n + 2):
        assert s.position_at(s.stream_time(m)) == m + 1
        assert s.stream_entry(m).target_index == s[m % n].target_index
    assert s.position_at(0.0) == 0 if s[0].t_offset_s > 0 else 1


# -- chaos runner ---------------------------------------------------------------------------------


def test_chaos_runner_suspends_target_and_stop_resumes(dummies) -> None:
    a, b = dummies(2)
    runner = ChaosRunner(fixed_schedule([(0.0, 0, 5.0)], 2, 10.0), [a.pid, b.pid]).start()
    try:
        assert threading.active_count() == 1  # no threads in the parent: it forks core processes later
        assert wait_for(lambda: status(a.pid) == psutil.STATUS_STOPPED, 2.0), status(a.pid)
        assert status(b.pid) != psutil.STATUS_STOPPED
        # held for the scheduled 5 s: not released within the next 0.1 s
        assert not wait_for(lambda: status(a.pid) != psutil.STATUS_STOPPED, 0.1), status(a.pid)
    finally:
        t = time.monotonic()
        report = runner.stop()
        stop_s = time.monotonic() - t
    assert stop_s < 0.5
    assert status(a.pid) != psutil.STATUS_STOPPED and status(b.pid) != psutil.STATUS_STOPPED
    assert report.reported and report.entries_executed == 1 and report.cut_short == 1
    assert 0.05 < report.suspended_s_by_target[0] < 2.0 and report.suspended_s_by_target[1] == 0.0
    assert report.next_entry == 1 and not report.finished
    assert runner.stop() is report  # idempotent


def test_chaos_runner_runs_schedule_to_the_end(dummies) -> None:
    procs = dummies(3)
    sched = ChaosSchedule.generate(11, 3, 0.3, 0.02, 0.02)
    runner = ChaosRunner(sched, [p.pid for p in procs]).start()
    try:
        assert runner.wait(5.0)
    finally:
        report = runner.stop()
    assert report.finished and report.next_entry == len(sched)
    assert report.entries_executed == len(sched) and report.entries_vanished == 0
    # merged overlaps on one target are counted once, so total ≤ scheduled sum (+ timer slack)
    assert 0 < report.suspended_s_total <= sched.total_suspend_s + 0.01 * len(sched) + 0.2
    assert all(status(p.pid) != psutil.STATUS_STOPPED for p in procs)


def test_chaos_helper_sigterm_resumes_by_itself(dummies) -> None:
    (a,) = dummies(1)
    runner = ChaosRunner(fixed_schedule([(0.0, 0, 30.0)], 1, 60.0), [a.pid]).start()
    try:
        assert wait_for(lambda: status(a.pid) == psutil.STATUS_STOPPED, 2.0)
        os.kill(runner.helper_pid, signal.SIGTERM)  # e.g. multiprocessing's atexit for daemon children
        assert wait_for(lambda: not runner.running, 2.0)
        assert status(a.pid) != psutil.STATUS_STOPPED  # resumed by the helper's finally, before stop()
    finally:
        report = runner.stop()
    assert report.reported and report.cut_short == 1 and report.entries_executed == 1


def test_chaos_helper_sigkilled_parent_still_resumes(dummies) -> None:
    (a,) = dummies(1)
    runner = ChaosRunner(fixed_schedule([(0.0, 0, 30.0)], 1, 60.0), [a.pid]).start()
    try:
        assert wait_for(lambda: status(a.pid) == psutil.STATUS_STOPPED, 2.0)
        os.kill(runner.helper_pid, signal.SIGKILL)  # the helper's finally cannot run
        assert wait_for(lambda: not runner.running, 2.0)
        assert status(a.pid) == psutil.STATUS_STOPPED  # still held: only the parent can fix it now
    finally:
        report = runner.stop()
    assert status(a.pid) != psutil.STATUS_STOPPED
    assert not report.reported and report.next_entry == 1  # estimated from elapsed time


def test_chaos_runner_skips_and_counts_vanished_pids(dummies) -> None:
    a, b = dummies(2)
    sched = fixed_schedule([(0.3, 1, 0.01), (0.32, 0, 0.01), (0.34, 1, 0.01)], 2, 0.5)
    runner = ChaosRunner(sched, [a.pid, b.pid]).start()
    try:
        b.kill()
        b.join(2)  # reaped before the first entry at 0.3 s
        assert runner.wait(5.0)
    finally:
        report = runner.stop()
    assert report.entries_vanished == 2 and report.entries_executed == 1 and report.finished
    assert status(a.pid) != psutil.STATUS_STOPPED


def test_chaos_runner_loops_and_continues_on_new_pids(dummies) -> None:
    old = dummies(2)
    sched = fixed_schedule([(0.01, 0, 0.005), (0.03, 1, 0.005)], 2, 0.05)  # 40 entries/s when looping
    runner = ChaosRunner(sched, [p.pid for p in old], loop=True).start()
    try:
        # six suspensions seen from outside: the 2-entry schedule went round at least three times
        wait_until(stop_episodes([p.pid for p in old], 6), timeout=30, interval=0.001,
                   what="six suspensions of the old targets")
    finally:
        first = runner.stop()
    assert first.next_entry >= 6 and not first.finished  # went round the 2-entry schedule several times
    assert first.entries_executed == first.next_entry
    new = dummies(2)  # "the pool was rebuilt"
    runner2 = ChaosRunner(sched, [p.pid for p in new], loop=True, start_entry=first.next_entry).start()
    try:
        wait_until(stop_episodes([p.pid for p in new], 1), timeout=30, interval=0.001,
                   what="a suspension of the new targets")
    finally:
        second = runner2.stop()
    assert second.start_entry == first.next_entry and second.next_entry > second.start_entry
    assert second.entries_executed == second.next_entry - second.start_entry
    assert all(status(p.pid) != psutil.STATUS_STOPPED for p in old + new)
    with pytest.raises(UsageError):
        ChaosRunner(sched, [new[0].pid])  # 2 targets need 2 pids


# -- helpers exit by themselves when their owner dies -------------------------------------------------


def _outlive_parent(seconds: float) -> None:
    time.sleep(seconds)


def _owner_then_die(kind: str, target_pid: int, conn) -> None:
    """Runs in an intermediate process: start a helper, report its pids, die without cleanup."""
    sibling = None
    if kind.startswith("chaos"):
        obj = ChaosRunner(fixed_schedule([(0.0, 0, 30.0)], 1, 60.0), [target_pid]).start()
        wait_for(lambda: status(target_pid) == psutil.STATUS_STOPPED, 2.0)
        pids = [obj.helper_pid]
        if kind == "chaos+sibling":
            # Like a core process forked after the helper: it inherits the owner's pipe end, so the
            # helper sees no EOF when the owner dies and must notice through getppid().
            sibling = CTX.Process(target=_outlive_parent, args=(5.0,))
            sibling.start()
    elif kind == "migrator":
        obj = Migrator([target_pid], seed=1).start()
        pids = [obj.helper_pid]
    else:
        obj = BackgroundLoad(2, 30.0).start()
        pids = obj.pids
    conn.send((pids, sibling.pid if sibling else None))
    os._exit(0)


@pytest.mark.parametrize("kind", ["chaos", "chaos+sibling", "migrator", "load"])
def test_helpers_exit_when_their_parent_dies(dummies, kind: str) -> None:
    (target,) = dummies(1)
    original = read_affinity([target.pid])
    recv, send = CTX.Pipe(duplex=False)
    owner = CTX.Process(target=_owner_then_die, args=(kind, target.pid, send))
    helper_pids: list[int] = []
    sibling = None
    # As a subreaper, this process adopts the orphaned helpers, so it can reap them (PID 1 of a
    # container may not) and the leftover check sees any that survive.
    set_subreaper(True)
    try:
        owner.start()
        assert recv.poll(5.0)
        helper_pids, sibling = recv.recv()
        assert wait_for(lambda: exited(owner.pid), 3.0)
        assert wait_for(lambda: all(exited(p) for p in helper_pids), 3.0), [status(p) for p in helper_pids]
        assert sibling is None or not exited(sibling)  # so the pipe end really was still held
    finally:
        if sibling is not None and not exited(sibling):
            os.kill(sibling, signal.SIGKILL)  # adopted orphan, not a multiprocessing child: end it by pid
        # join only now: the sibling holds the owner's sentinel pipe too, join would wait for it
        owner.join(5)
        for pid in helper_pids + ([sibling] if sibling else []):
            reap_adopted(pid, timeout=2.0)
        set_subreaper(False)
    assert owner.exitcode == 0
    assert status(target.pid) != psutil.STATUS_STOPPED  # the chaos helper resumed on its way out
    if kind == "migrator":
        assert read_affinity([target.pid]) == original  # the migrator restored on its way out


# -- placement ------------------------------------------------------------------------------------


def test_spread_pack_read_and_restore(dummies) -> None:
    procs = dummies(3)
    pids = [p.pid for p in procs]
    original = read_affinity(pids)
    assert all(cpus == CPUS for cpus in original.values())  # children inherit our affinity
    try:
        applied = spread(pids, CPUS)
        assert applied == {pid: [CPUS[i % len(CPUS)]] for i, pid in enumerate(pids)}
        assert read_affinity(pids) == applied
        if len(CPUS) >= 2:
            assert len({tuple(c) for c in applied.values()}) == 2
        applied = pack(pids, CPUS[::-1])
        assert applied == {pid: [CPUS[-1]] for pid in pids} and read_affinity(pids) == applied
    finally:
        assert sorted(restore(original)) == sorted(pids)
    assert read_affinity(pids) == original


def test_placement_errors_gone_pid_and_bad_cpu(dummies) -> None:
    (alive,) = dummies(1)
    gone = dead_pid(dummies)
    before = read_affinity([alive.pid])
    with pytest.raises(ProcessGoneError) as info:
        read_affinity([alive.pid, gone])
    assert info.value.details["pid"] == gone and str(gone) in str(info.value)
    with pytest.raises(ProcessGoneError):
        spread([alive.pid, gone], [CPUS[-1]])
    assert read_affinity([alive.pid]) == before  # all-or-nothing: the alive pid was put back
    with pytest.raises(ProcessGoneError):
        apply_affinity({gone: [CPUS[0]]})
    with pytest.raises(UsageError):
        pack([alive.pid], [max(CPUS) + 1000])
    assert restore({gone: [CPUS[0]]}) == []  # restoring a gone pid is not an error


@needs_two_cpus
def test_migrator_moves_processes_and_restores(dummies) -> None:
    procs = dummies(2)
    pids = [p.pid for p in procs]
    original = read_affinity(pids)
    mig = Migrator(pids, seed=3, min_interval_s=0.005, max_interval_s=0.01).start()
    seen: set[tuple[int, ...]] = set()
    singles = {(c,) for c in CPUS}
    try:
        assert threading.active_count() == 1
        def every_cpu_seen() -> bool:
            seen.update(tuple(c) for c in read_affinity(pids).values())
            return singles <= seen

        wait_for(every_cpu_seen, 1.0, interval=0.003)
    finally:
        t = time.monotonic()
        report = mig.stop()
        stop_s = time.monotonic() - t
    assert stop_s < 0.5
    # every CPU was used (with 2 CPUs, chance of missing one over ~100 ticks × 2 pids is negligible);
    # the only multi-CPU set ever seen is the original one, before the first tick
    assert singles <= seen and seen - singles <= {tuple(CPUS)}, seen
    assert read_affinity(pids) == original
    assert report.reported and report.moves >= 2 and report.ticks >= 1 and report.vanished == 0


# -- background load ------------------------------------------------------------------------------


def test_background_load_runs_then_stops() -> None:
    load = BackgroundLoad(2, 10.0)
    with load:
        pids = load.pids
        assert len(pids) == 2 and load.alive() == 2
        # they really spin: CPU time accumulates (how fast depends on the machine's load)
        wait_until(lambda: sum(sum(psutil.Process(p).cpu_times()[:2]) for p in pids) > 0.05,
                   what="the load processes to use CPU time")
        t = time.monotonic()
    stop_s = time.monotonic() - t
    assert stop_s < 1.0 and load.alive() == 0
    assert all(status(p) == "gone" for p in pids)


def test_background_load_ends_by_itself_after_duration() -> None:
    load = BackgroundLoad(1, 0.3, cpus=[CPUS[0]])
    load.start()
    try:
        assert read_affinity(load.pids) == {load.pids[0]: [CPUS[0]]}
        assert wait_for(lambda: load.alive() == 0, 3.0, interval=0.02)
        assert [p.exitcode for p in load._procs] == [0]  # exited normally, was not killed
    finally:
        load.stop()


# -- contention -----------------------------------------------------------------------------------


def test_contention_sample_and_delta(dummies) -> None:
    busy, idle = dummies(1, busy=True) + dummies(1)
    gone = dead_pid(dummies)
    before = sample([busy.pid, idle.pid, gone])
    assert set(before) == {busy.pid, idle.pid}  # the vanished pid is left out, not an error
    b, i = psutil.Process(busy.pid), psutil.Process(idle.pid)
    wait_until(lambda: b.cpu_times().user - before[busy.pid]["cpu_user_s"] > 0.06
               and i.num_ctx_switches().voluntary - before[idle.pid]["ctx_switches_voluntary"] >= 5,
               timeout=30, what="the busy process to spin and the idle one to sleep")
    after = sample([busy.pid, idle.pid])
    d = delta(before, after)
    assert set(d[busy.pid]) == {"ctx_switches_involuntary", "ctx_switches_voluntary", "cpu_user_s", "cpu_system_s"}
    assert d[busy.pid]["cpu_user_s"] > 0.05 > d[idle.pid]["cpu_user_s"]
    assert d[idle.pid]["ctx_switches_voluntary"] >= 5  # sleeps 10 ms at a time
    assert all(v >= 0 for row in d.values() for v in row.values())
    reused = {busy.pid: {**after[busy.pid], "create_time": after[busy.pid]["create_time"] + 1}}
    assert delta(before, reused) == {}  # a pid reused by another process is not compared
    assert resume_all([gone]) == 0
