"""Hazards that are consequences of another (issue 21, item 5): grouped under their root cause in
racecheck's hazards, their text and JSON, race-directed reproduction, the audit and its repairs.

The rule (docs/directed-reproduction.md, "Consequences") is a function of a trace, so most tests
build the trace of the user's compaction kernel by hand: aiv0 and aiv1 publish counts, S1 dropped,
each reads every count and scatters to y at the offset they give. Core ids at block_dim 1: cube 0,
aiv0 1, aiv1 2.
"""

from __future__ import annotations

import pytest

from mpnpu.directed.confirm import (
    BY_DIRECTED_RUNS,
    CONSEQUENCE,
    HARMFUL,
    Confirmation,
    DirectedRun,
    directed_consequences,
    grouped_confirmations,
)
from mpnpu.directed.repair import no_suggestion_note
from mpnpu.errors import LaunchError
from mpnpu.racecheck import HazardLog, analyze
from mpnpu.report.hazards import format_hazards
from mpnpu.runtime.hold import ORDERED, REVERSED, HoldPlan
from mpnpu.runtime.trace import READ, WRITE, Access, DroppedSyncEvent, LaunchTrace, StageEvent
from tests.compact import compact, site
from tests.runtime_util import device

Y = 1024  # where y lives in the segment (counts at 0)


def acc(kind: str, lo: int, hi: int, tensor: str, stage: str, line: int, t0: int, t1: int) -> Access:
    offset = Y if tensor == "y" else 0
    return Access(kind, tensor, "gm", ((offset + lo, offset + hi),), offset, 4, stage, f"c/compact.py:{line}", t0, t1)


def drop(name: str = "S1", stage: str = "Count") -> DroppedSyncEvent:
    return DroppedSyncEvent(name, "sync_all", stage, "c/compact.py:46")


def core(v: int, *, read_at: int, y: tuple[int, int], y_before_read: bool = False, extra: tuple = (),
         y_stage: str = "Scatter") -> tuple:
    """One vector core of the compaction kernel: publish counts[v] at t 100 (aiv1: at t 10), read
    every count at ``read_at``, write y[y0:y1] at t 400 + v (bytes)."""
    t = 100 if v == 0 else 10
    publish = acc(WRITE, 4 * v, 4 * v + 4, "counts", "Count", 44, t, t + 10)
    read = acc(READ, 0, 8, "counts", "Scatter", 48, read_at, read_at + 10)
    scatter = acc(WRITE, y[0], y[1], "y", y_stage, 56, 400 + v, 410 + v)
    body = [scatter, read] if y_before_read else [read, scatter]
    return (StageEvent("Count", "c/compact.py:40"), publish, drop(), StageEvent("Scatter", "c/compact.py:47"),
            *body[:1], *extra, *body[1:])


def launch(*, stale: bool = True, **kw) -> LaunchTrace:
    """aiv1's read comes before aiv0's publish ends (t 110) when ``stale``: it reads a stale count,
    its offset is wrong, and its y range overlaps aiv0's."""
    aiv0 = core(0, read_at=300, y=(0, 128))
    aiv1 = core(1, read_at=50 if stale else 200, y=(64, 192), **kw)
    return LaunchTrace(1, "k", ((), aiv0, aiv1), frozenset({"S1"}))


RAW_KEY = ("RAW", "counts", "Count", "c/compact.py:44", "Scatter", "c/compact.py:48")
WAW_KEY = ("WAW", "y", "Scatter", "c/compact.py:56", "Scatter", "c/compact.py:56")


def by_key(hazards) -> dict:
    return {h.key: h for h in hazards}


def test_a_write_after_a_stale_read_is_a_consequence_of_the_hazard_that_read_it() -> None:
    """Today both are reported as two bugs of their own."""
    hazards = by_key(analyze(launch()))
    assert set(hazards) == {RAW_KEY, WAW_KEY}
    assert hazards[RAW_KEY].root is None and hazards[RAW_KEY].dropped_syncs == ("S1",)
    assert hazards[WAW_KEY].root == RAW_KEY and hazards[WAW_KEY].is_consequence


def test_without_a_stale_read_it_is_a_hazard_of_its_own() -> None:
    """The same overlap, but aiv1's read came after aiv0's publish: what it read was right, so the
    overlap does not come from the race on counts."""
    assert by_key(analyze(launch(stale=False)))[WAW_KEY].root is None


def test_an_access_before_the_stale_read_does_not_depend_on_it() -> None:
    assert by_key(analyze(launch(y_before_read=True)))[WAW_KEY].root is None


def test_a_hazard_that_names_a_dropped_sync_of_its_own_is_not_a_consequence() -> None:
    """aiv0 writes y in Scatter, aiv1 in Final, with S2 dropped between them on both: restoring S1
    alone would not order that pair."""
    aiv0 = (*core(0, read_at=300, y=(0, 128)), drop("S2", "Scatter"), StageEvent("Final", "c/compact.py:60"))
    aiv1 = core(1, read_at=50, y=(64, 192), y_stage="Final",
                extra=(drop("S2", "Scatter"), StageEvent("Final", "c/compact.py:60")))
    hazards = by_key(analyze(LaunchTrace(1, "k", ((), aiv0, aiv1), frozenset({"S1", "S2"}))))
    waw = next(h for k, h in hazards.items() if k[0] == "WAW")
    assert waw.dropped_syncs == ("S2",) and waw.root is None


def test_over_launches_the_root_stays_only_if_it_held_in_every_launch() -> None:
    log = HazardLog()
    log.add(analyze(launch()))
    log.add(analyze(launch()))
    assert by_key(log.hazards())[WAW_KEY].root == RAW_KEY
    log.add(analyze(launch(stale=False)))
    assert by_key(log.hazards())[WAW_KEY].root is None


def test_the_report_groups_it_under_its_root_and_json_stays_compatible() -> None:
    hazards = analyze(launch())
    text = format_hazards(hazards)
    lines = text.splitlines()
    assert lines[0].startswith("====== ERROR: Potential RAW hazard detected at GM tensor counts[0:2]")
    assert [ln for ln in lines if "ERROR" in ln] == [lines[0]]  # one bug, not two
    assert ("======    consequence of this hazard (its accesses come after a read that saw the wrong data through "
            "it): WAW at GM tensor y[16:32] (x1 in 1 launch):") in lines
    assert "WRITE by vector core 1 (block 0, sub 1) in Scatter at c/compact.py:56" in text
    assert lines[-1] == "====== SUMMARY: 2 hazards (1 RAW, 0 WAR, 1 WAW), 1 of them a consequence of another"
    d = by_key(hazards)
    assert "root" not in d[RAW_KEY].to_dict()
    waw = d[WAW_KEY].to_dict()
    assert waw["root"] == {"kind": "RAW", "tensor": "counts", "first_stage": "Count", "first_site": "c/compact.py:44",
                           "second_stage": "Scatter", "second_site": "c/compact.py:48"}
    assert set(waw) - {"root"} == set(d[RAW_KEY].to_dict())


# -- race-directed reproduction: "fails only when the root is reversed too" ------------------------------


def _run(outcome: str, passed: bool) -> DirectedRun:
    return DirectedRun(1, 0, HoldPlan(1, "a", 0, 2, "b", 0), "aiv0", "aiv1", outcome, passed)


def test_a_hazard_harmful_only_with_the_drops_is_a_consequence_of_the_harmful_one() -> None:
    """The WAW's own directed runs gave wrong results, but the same holds on the fixed kernel
    reversed its pair every time (nothing orders it there either) with every result right."""
    hazards = by_key(analyze(launch(stale=False)))  # racecheck's rule does not apply here
    raw = Confirmation(hazards[RAW_KEY], [_run(REVERSED, False)] * 3, [_run(ORDERED, True)] * 3)
    waw = Confirmation(hazards[WAW_KEY], [_run(REVERSED, False), _run(REVERSED, True)],
                       [_run(REVERSED, True)] * 2)
    assert raw.verdict == waw.verdict == HARMFUL
    directed_consequences([waw, raw])
    assert (waw.root, waw.root_by, waw.verdict, raw.verdict) == (RAW_KEY, BY_DIRECTED_RUNS, CONSEQUENCE, HARMFUL)
    assert grouped_confirmations([waw, raw]) == [(raw, [waw])]
    assert waw.to_dict()["root"]["tensor"] == "counts"


def test_a_hazard_ordered_on_the_fixed_kernel_stays_a_root() -> None:
    hazards = by_key(analyze(launch(stale=False)))
    raw = Confirmation(hazards[RAW_KEY], [_run(REVERSED, False)], [_run(ORDERED, True)])
    other = Confirmation(hazards[WAW_KEY], [_run(REVERSED, False)], [_run(ORDERED, True)])
    directed_consequences([raw, other])
    assert other.root is None and other.verdict == HARMFUL


def test_no_repair_between_a_line_and_itself() -> None:
    """Today: "a sync belongs between compact.py:40 and compact.py:40"."""
    waw = by_key(analyze(launch(stale=False)))[WAW_KEY]
    note = no_suggestion_note(waw)
    assert "between c/compact.py:56 and c/compact.py:56" not in note
    assert note.startswith("both accesses are the same line, c/compact.py:56 in Scatter, run by different cores")


# -- the user's kernel, its race forced by holds -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_the_kernels_overlapping_scatter_is_grouped_under_the_stale_count() -> None:
    """Held launches of the compaction kernel with S1 dropped: aiv0 is held before it publishes its
    count until aiv1 has read the counts, so aiv1 reads the count the previous case left and writes
    at a wrong offset. Where that overlaps aiv0's range racecheck reports a WAW on y: a consequence
    of the RAW on counts, in every launch that shows it. (The stale value is whatever the
    predecessor case left on a fresh device: the same in every run.)"""
    op = compact.OPERATOR
    plan = HoldPlan(1, site("PUBLISH"), 0, 2, site("READ COUNTS"), 0, 5.0, 0.2)
    waws, raw_key = [], ("RAW", "counts", "Count", site("PUBLISH"), "Scatter", site("READ COUNTS"))
    for index in range(1, 9):
        with device(1) as dev:
            op.run(dev, op.make_case(0, index - 1))
            with dev.launch_settings(hold=plan):
                try:
                    _, result = op.run(dev, op.make_case(0, index), drop_syncs=frozenset({"S1"}), trace=True)
                except LaunchError:  # a stale count far past y's end: a memcheck error, no trace
                    continue
        hazards = by_key(analyze(result.trace))
        assert raw_key in hazards
        waws += [h for k, h in hazards.items() if k[0] == "WAW"]
    assert waws, "no held launch overlapped the two scatters"
    assert all(h.key == ("WAW", "y", "Scatter", site("SCATTER"), "Scatter", site("SCATTER")) and h.root == raw_key
               for h in waws)
