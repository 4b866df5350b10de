"""Reusing the analysis of identical launches (mpnpu.racecheck.reuse): the same hazards as analysing
every launch, exactly — roots and consequences recomputed from each launch's own times — on hand-made
traces and on the traces of every kernel of the gallery, FLOMS and the compaction kernel."""

from __future__ import annotations

import pytest

from mpnpu.errors import LaunchError, TraceError
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.operators.protocol import device_for, unavailable_reason
from mpnpu.operators.registry import load_operator, registered
from mpnpu.racecheck import HazardLog, analyze
from mpnpu.racecheck.reuse import AnalysisCache, launch_key
from mpnpu.report.hazards import format_hazard_log
from mpnpu.runtime.trace import (
    READ,
    WRITE,
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    LaunchTrace,
    StageEvent,
    SyncAllEvent,
    timing_free_key,
)
from tests import compact

pytestmark = [pytest.mark.usefixtures("no_leaks", "time_limit"), pytest.mark.time_limit(180)]


def acc(kind: str, lo: int, hi: int, tensor: str, stage: str, line: int, t0: int, t1: int, **kw) -> Access:
    offset = 1024 if tensor == "y" else 0
    return Access(kind, tensor, "gm", ((offset + lo, offset + hi),), offset, 4, stage, f"c/compact.py:{line}", t0, t1,
                  **kw)


def compaction(read_at: int, shift: int = 0) -> LaunchTrace:
    """The compaction kernel's trace of tests/test_consequences.py: aiv1 reads the counts at
    ``read_at`` (before aiv0's publish ends at 110: a stale read, and aiv1's scatter is then a
    consequence of it); ``shift`` moves every other time, which changes nothing."""
    def core(v: int, read: int) -> tuple:
        t = (100 if v == 0 else 10) + shift
        return (StageEvent("Count", "c/compact.py:40", shift),
                acc(WRITE, 4 * v, 4 * v + 4, "counts", "Count", 44, t, t + 10),
                DroppedSyncEvent("S1", "sync_all", "Count", "c/compact.py:46"),
                StageEvent("Scatter", "c/compact.py:47"),
                acc(READ, 0, 8, "counts", "Scatter", 48, read, read + 10),
                acc(WRITE, 64 * v, 64 * v + 128, "y", "Scatter", 56, 400 + v + shift, 410 + v + shift))

    return LaunchTrace(1, "k", ((), core(0, 300 + shift), core(1, read_at)), frozenset({"S1"}))


def test_a_launch_the_same_but_for_its_times_reuses_the_analysis_and_its_own_times_decide_the_roots() -> None:
    cache = AnalysisCache()
    stale, fresh, shifted = compaction(read_at=50), compaction(read_at=200), compaction(read_at=51, shift=7)
    assert launch_key(stale) == launch_key(fresh) == launch_key(shifted)
    for trace in (stale, fresh, shifted, fresh, stale):
        assert cache.analyze(trace) == analyze(trace)
    assert (cache.analysed, cache.reused, len(cache)) == (1, 4, 1)
    # the reused analysis recomputed the consequence from each launch's own times
    assert [h.root is not None for h in cache.analyze(stale)] != [h.root is not None for h in cache.analyze(fresh)]


def test_anything_but_the_times_makes_another_analysis() -> None:
    base = compaction(read_at=50)
    aiv1 = list(base.events[2])
    others = [
        base._replace(dropped_syncs=frozenset()),
        base._replace(block_dim=2, events=base.events + ((),) * 3),
        base._replace(auto_sync=False),
        base._replace(kernel="other"),
        base._replace(events=(base.events[0], base.events[1], tuple(aiv1[:-1]))),
        base._replace(events=(base.events[0], base.events[1], (*aiv1[:-1], aiv1[-1]._replace(ran_on="PIPE_MTE3")))),
        base._replace(events=(base.events[0], base.events[1], (*aiv1[:-1], aiv1[-1]._replace(site="c/compact.py:57")))),
    ]
    keys = {launch_key(t) for t in [base, *others]}
    assert len(keys) == 1 + len(others)
    # two event types with the same other fields are two keys
    set_, wait = FlagSetEvent(0, 1, "", "s", "k.py:1"), FlagWaitEvent(0, 1, "", "s", "k.py:1")
    assert timing_free_key((set_,)) != timing_free_key((wait,))
    cache = AnalysisCache()
    for t in [base, *others]:
        if t.block_dim == 1:
            assert cache.analyze(t) == analyze(t)
    assert cache.reused == 0


def test_an_inconsistent_trace_raises_every_time_and_is_not_kept() -> None:
    bad = LaunchTrace(1, "k", ((SyncAllEvent(False, "", "s", "k.py:1"),), (), ()), frozenset())
    cache = AnalysisCache()
    for _ in range(2):
        with pytest.raises(TraceError):
            cache.analyze(bad)
    assert (len(cache), cache.analysed, cache.reused) == (0, 0, 0)


def test_the_cache_keeps_at_most_its_entries() -> None:
    cache = AnalysisCache(max_entries=2)
    traces = [compaction(read_at=50)._replace(kernel=f"k{i}") for i in range(3)]
    for t in traces:
        cache.analyze(t)
    assert len(cache) == 2
    cache.analyze(traces[0])  # dropped as the least recently used: analysed again
    assert (cache.analysed, cache.reused) == (4, 0)
    cache.analyze(traces[0])
    assert cache.reused == 1


def test_the_log_and_its_report_say_how_many_launches_were_analysed() -> None:
    log, cache = HazardLog(), AnalysisCache()
    for read_at in (50, 200, 50, 60):
        log.add(cache.analyze(compaction(read_at)), reused=cache.last_reused)
    assert (log.launches_analyzed, log.launches_reused, log.launches_analysed_in_full) == (4, 3, 1)
    assert log.launch_counts() == {"checked": 4, "analysed": 1, "reused": 3}
    assert format_hazard_log(log).splitlines()[-1].endswith(
        "in 4 launches checked (1 of 4 launches analysed; the rest had the same accesses and sync order as one "
        "analysed)")
    merged = log.merged(log)
    assert (merged.launches_analyzed, merged.launches_reused) == (8, 6)
    plain = HazardLog()
    plain.add(analyze(compaction(50)))
    assert "analysed" not in format_hazard_log(plain)


# -- every kernel the tests cover -----------------------------------------------------------------

#: every operator shipped (FLOMS and the gallery, in Python and C++), and the compaction kernel, whose
#: incident has consequences that come and go with the launch's timing
OPERATORS = sorted(registered()) + [compact.ref()]


@pytest.mark.parametrize("name", OPERATORS)
def test_reuse_gives_the_hazards_of_analysing_every_launch(name: str) -> None:
    """Two cases of the incident and the fixed kernel, three times over: each launch's hazards (kinds, sites, counts,
    core pairs, dropped syncs, roots) equal those of its own full analysis, and every repeat reused."""
    op = load_operator(name)
    if unavailable_reason(op):
        pytest.skip(unavailable_reason(op))
    variants = make_variants(op, ("incident", "fixed"))
    cache = AnalysisCache()
    checked = 0
    with device_for(op, 1) as dev:
        for _ in range(3):
            for index in range(2):
                case = op.make_case(0, index)
                for v in variants:
                    try:
                        _, launch = op.run(dev, case, drop_syncs=v.dropped, trace=True)
                    except LaunchError:  # (a dropped flag wait can overflow a counter: no trace)
                        continue
                    assert cache.analyze(launch.trace) == analyze(launch.trace), (name, v.name, index)
                    checked += 1
    assert cache.analysed + cache.reused == checked
    assert cache.reused >= checked // 3  # a case's launches repeat (a race may change a kernel's path)


def test_a_batch_reports_how_many_launches_it_analysed() -> None:
    """The runner's cache: every launch checked, the repeats reused, the counts in the JSON."""
    op = load_operator(compact.ref())
    variants = make_variants(op, ("incident", "fixed"))
    with device_for(op, 1) as dev:
        res = run_batch(op, cases=3, repeat=3, variants=variants, device=dev, racecheck=True)
    for v in variants:
        r = res.variants[v.name]
        log = r.hazard_log
        assert log.launches_analyzed == r.case_runs - r.launch_errors  # (a failed launch has no trace)
        assert log.launches_reused >= (3 if v.expected_clean else 0)
        assert res.to_dict()["variants"][v.name]["racecheck_launches"] == log.launch_counts()
