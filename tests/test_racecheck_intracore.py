"""Race detection inside a core (mpnpu.racecheck.intracore) on hand-built traces, cross-checked
against a brute-force happens-before (graph reachability) on random traces; and on real launches
of the two intra-core race kernels."""

from __future__ import annotations

import random
from collections import defaultdict, deque

import pytest

from mpnpu import LaunchOptions
from mpnpu.racecheck import HazardLog, analyze
from mpnpu.racecheck.intracore import analyze_local, core_clocks, core_conflicts
from mpnpu.report.hazards import format_hazards
from mpnpu.runtime.trace import (
    ATOMIC,
    READ,
    WRITE,
    Access,
    DroppedSyncEvent,
    LaunchTrace,
    LocalAccess,
    PipeSyncEvent,
    SyncAllEvent,
)
from tests.runtime_util import device

PIPES = ("PIPE_S", "PIPE_V", "PIPE_M", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3", "PIPE_FIX")


def la(kind, pipe, start=0, stop=64, memory="UB", site="k.py:1") -> LocalAccess:
    return LocalAccess(kind, memory, start, stop, f"PIPE_{pipe}", "S", site)


def st(event, eid=0, name="") -> PipeSyncEvent:
    return PipeSyncEvent("set", f"PIPE_{event.split('_')[0]}", event, eid, name, "S", "k.py:2")


def wt(event, eid=0, name="") -> PipeSyncEvent:
    return PipeSyncEvent("wait", f"PIPE_{event.split('_')[1]}", event, eid, name, "S", "k.py:3")


def barrier(pipe="ALL") -> PipeSyncEvent:
    return PipeSyncEvent("barrier", f"PIPE_{pipe}", "", 0, "", "S", "k.py:4")


def trace_of(events) -> LaunchTrace:
    # block_dim 1: cube 0, vector cores 1 and 2; the events go to vector core 1
    return LaunchTrace(1, "k", ((), tuple(events), ()), frozenset())


def pairs(events) -> set[tuple[int, int]]:
    return set(core_conflicts(core_clocks(events)))


# -- hand-built ---------------------------------------------------------------------------------


def test_vector_read_without_mte2_v_is_a_raw_hazard() -> None:
    events = [la(WRITE, "MTE2", site="k.py:10"), la(READ, "V", site="k.py:11")]
    (h,) = analyze_local(trace_of(events))
    assert (h.kind, h.tensor, h.first.pipe, h.second.pipe, h.scope) == ("RAW", "UB", "PIPE_MTE2", "PIPE_V", "local")
    assert "RAW hazard detected at UB bytes [0:64] of vector core 0" in format_hazards([h])
    assert "between PIPE_MTE2 and PIPE_V" in format_hazards([h])


def test_flag_barrier_and_syncall_each_order_the_pair() -> None:
    w, r = la(WRITE, "MTE2"), la(READ, "V")
    assert pairs([w, st("MTE2_V"), wt("MTE2_V"), r]) == set()
    assert pairs([w, barrier("MTE2"), r]) == set()
    assert pairs([w, barrier(), r]) == set()
    assert pairs([w, SyncAllEvent(False, "", "S", "k.py:5"), r]) == set()
    # the wrong event, or a barrier on another pipe, orders nothing
    assert pairs([w, st("MTE3_V"), wt("MTE3_V"), r]) == {(0, 1)}
    assert pairs([w, barrier("MTE3"), r]) == {(0, 1)}


def test_same_pipe_reads_and_disjoint_bytes_are_not_hazards() -> None:
    assert pairs([la(WRITE, "MTE2"), la(WRITE, "MTE2")]) == set()
    assert pairs([la(READ, "MTE3"), la(READ, "V")]) == set()
    assert pairs([la(WRITE, "MTE2", 0, 32), la(READ, "V", 32, 64)]) == set()
    assert pairs([la(WRITE, "MTE2", memory="L1"), la(READ, "MTE1", memory="L0A")]) == set()


def gm(kind, pipe, ranges=((0, 64),), site="k.py:20", tensor="t") -> Access:
    return Access(kind, tensor, "seg", tuple(ranges), 0, 4, "S", site, pipe=f"PIPE_{pipe}")


def test_a_core_reading_back_its_own_gm_write_through_another_pipe_is_a_hazard() -> None:
    w, r = gm(WRITE, "MTE3", site="k.py:20"), gm(READ, "MTE2", ((32, 96),), site="k.py:21")
    (h,) = analyze_local(trace_of([la(WRITE, "V", memory="UB"), w, r]))
    assert (h.kind, h.tensor, h.scope, h.first.pipe, h.second.pipe) == ("RAW", "t", "core", "PIPE_MTE3", "PIPE_MTE2")
    assert h.element_range == (8, 16)  # bytes [32:64] of a 4-byte tensor at offset 0
    text = format_hazards([h])
    assert "RAW hazard detected at GM tensor t[8:16] inside vector core 0" in text
    assert "no MTE3_MTE2 sync (set_flag/wait_flag, queue, pipe_barrier or SyncAll)" in text
    # what orders it: the flag, a barrier on MTE3, a SyncAll; a dropped SyncAll is named
    assert pairs([w, st("MTE3_MTE2"), wt("MTE3_MTE2"), r]) == set()
    assert pairs([w, barrier("MTE3"), r]) == set()
    assert pairs([w, SyncAllEvent(False, "S1", "S", "k.py:5"), r]) == set()
    (h,) = analyze_local(trace_of([la(WRITE, "V"), w, DroppedSyncEvent("S1", "sync_all", "S", "k.py:5"), r]))
    assert h.dropped_syncs == ("S1",) and "(sync point S1 was dropped)" in h.missing_sync


def test_gm_pairs_inside_a_core_need_shared_bytes_a_write_and_two_pipes() -> None:
    # two strided views: the same hull, no byte in common
    assert pairs([gm(WRITE, "MTE3", ((0, 16), (64, 80))), gm(READ, "MTE2", ((16, 32), (80, 96)))]) == set()
    assert pairs([gm(WRITE, "MTE3", ((0, 16), (64, 80))), gm(READ, "MTE2", ((16, 32), (70, 96)))]) == {(0, 1)}
    assert pairs([gm(ATOMIC, "MTE3"), gm(ATOMIC, "FIX")]) == set()  # atomic adds commute
    assert pairs([gm(READ, "MTE2"), gm(READ, "MTE2")]) == set()
    assert pairs([gm(WRITE, "MTE3"), gm(READ, "MTE3")]) == set()  # one pipe runs in order
    other = gm(READ, "MTE2")._replace(segment="other")
    assert pairs([gm(WRITE, "MTE3"), other]) == set()
    # GM accesses of a launch whose kernel does not order its pipes carry no pipe: not analysed here
    assert pairs([gm(WRITE, "MTE3")._replace(pipe=""), gm(READ, "MTE2")._replace(pipe="")]) == set()


def test_wait_on_a_pipe_does_not_order_the_scalar_unit() -> None:
    # MTE3 waits for V, but a later MTE2 copy is not behind that wait: WAR between MTE3 and MTE2
    events = [la(READ, "MTE3"), st("MTE3_V"), wt("MTE3_V"), la(WRITE, "MTE2")]
    assert pairs(events) == {(0, 1)}  # (indices among the accesses)
    # the MTE3 -> MTE2 flag does order it
    assert pairs([la(READ, "MTE3"), st("MTE3_MTE2"), wt("MTE3_MTE2"), la(WRITE, "MTE2")]) == set()


def test_jth_wait_pairs_with_jth_set_and_dropped_syncs_are_named() -> None:
    events = [
        la(WRITE, "MTE2", site="k.py:1"), st("MTE2_V", 1),
        la(WRITE, "MTE2", site="k.py:2"), DroppedSyncEvent("F", "set_flag", "S", "k.py:6"),
        wt("MTE2_V", 1), la(READ, "V", site="k.py:3"),
    ]
    (h,) = analyze_local(trace_of(events))
    assert h.first.site == "k.py:2" and h.dropped_syncs == ("F",)
    assert "sync point F was dropped" in h.missing_sync


def test_wait_without_set_is_inconsistent() -> None:
    with pytest.raises(ValueError, match="inconsistent trace"):
        core_clocks([wt("MTE2_V")])


def test_local_hazards_merge_in_the_hazard_log_and_json() -> None:
    log = HazardLog()
    events = [la(WRITE, "MTE2"), la(READ, "V")]
    for _ in range(3):
        log.add(analyze(trace_of(events)))
    (d,) = log.to_dicts()
    assert d["scope"] == "local" and d["launches"] == 3 and d["first"]["pipe"] == "PIPE_MTE2"


# -- brute force ------------------------------------------------------------------------------


def brute_force_pairs(events) -> set[tuple[int, int]]:
    """Happens-before as reachability in the event graph, written independently of the clocks."""
    nodes = list(range(len(events)))
    preds: dict[int, set[int]] = defaultdict(set)
    last_on: dict[str, int] = {}
    last_s: int | None = None
    sets: dict[tuple, deque] = defaultdict(deque)

    def pipe_of(ev) -> str:
        barrier = isinstance(ev, SyncAllEvent) or (isinstance(ev, PipeSyncEvent) and ev.op == "barrier")
        return "PIPE_S" if barrier else ev.pipe

    for i, ev in enumerate(events):
        p = pipe_of(ev)
        if p in last_on:
            preds[i].add(last_on[p])
        if p != "PIPE_S" and last_s is not None:
            preds[i].add(last_s)  # issued after what the scalar unit waited for
        if isinstance(ev, SyncAllEvent) or (isinstance(ev, PipeSyncEvent) and ev.op == "barrier"):
            drained = PIPES if isinstance(ev, SyncAllEvent) or ev.pipe == "PIPE_ALL" else (ev.pipe,)
            preds[i] |= {last_on[q] for q in drained if q in last_on}
        if isinstance(ev, PipeSyncEvent) and ev.op == "set":
            sets[(ev.event, ev.event_id)].append(i)
        if isinstance(ev, PipeSyncEvent) and ev.op == "wait":
            preds[i].add(sets[(ev.event, ev.event_id)].popleft())
        last_on[p] = i
        if p == "PIPE_S":
            last_s = i
    reach: dict[int, set[int]] = {}
    for i in nodes:  # predecessors always come earlier: one pass in order
        r = set()
        for q in preds[i]:
            r |= reach[q] | {q}
        reach[i] = r
    acc = [i for i, ev in enumerate(events) if isinstance(ev, LocalAccess)]
    out = set()
    for x, i in enumerate(acc):
        for y in range(x + 1, len(acc)):
            j = acc[y]
            a, b = events[i], events[j]
            if a.memory != b.memory or a.pipe == b.pipe or (a.kind == READ and b.kind == READ):
                continue
            if not (a.start < b.stop and b.start < a.stop):
                continue
            if i not in reach[j] and j not in reach[i]:
                out.add((x, y))
    return out


def random_events(rng: random.Random, n: int) -> list:
    events: list = []
    outstanding: dict[tuple, int] = defaultdict(int)
    events_names = ("MTE2_V", "V_MTE2", "V_MTE3", "MTE3_V", "MTE3_MTE2", "MTE2_MTE1", "MTE1_M", "M_FIX", "FIX_M", "V_S")
    for _ in range(n):
        r = rng.random()
        if r < 0.55:
            pipe = rng.choice(PIPES[1:])
            start = rng.randrange(0, 96, 16)
            events.append(la(rng.choice((READ, WRITE)), pipe[5:], start, start + rng.choice((16, 32)),
                             memory=rng.choice(("UB", "L1"))))
        elif r < 0.75:
            ev, eid = rng.choice(events_names), rng.randrange(2)
            events.append(st(ev, eid))
            outstanding[(ev, eid)] += 1
        elif r < 0.92:
            ready = [k for k, v in outstanding.items() if v]
            if ready:
                ev, eid = rng.choice(ready)
                outstanding[(ev, eid)] -= 1
                events.append(wt(ev, eid))
        elif r < 0.98:
            events.append(barrier(rng.choice(("ALL", "MTE2", "MTE3", "V", "FIX"))))
        else:
            events.append(SyncAllEvent(False, "", "S", "k.py:9"))
    return events


def test_matches_brute_force_happens_before_on_random_traces() -> None:
    rng = random.Random(14)
    found = 0
    for _ in range(300):
        events = random_events(rng, rng.randrange(5, 60))
        got = pairs(events)
        assert got == brute_force_pairs(events), events
        found += len(got)
    assert found > 100  # the random traces do contain races


# -- real launches ----------------------------------------------------------------------------


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_intra_core_kernels_report_exactly_their_dropped_sync() -> None:
    from mpnpu.kernels.double_buffer_reuse.operator import OPERATOR as dbr
    from mpnpu.kernels.vecin_early_read.operator import OPERATOR as ver

    with device(1) as dev:
        case = ver.make_case(0, 0)  # 11 tiles: buffers are reused
        checks = {
            frozenset(): set(),
            frozenset({"QIN:MTE2_V"}): {("RAW", "PIPE_MTE2", "PIPE_V")},
            frozenset({"QOUT:MTE3_V"}): {("WAR", "PIPE_MTE3", "PIPE_V")},
            frozenset({"QOUT:V_MTE3"}): {("RAW", "PIPE_V", "PIPE_MTE3")},
            # PIPE_V runs inline, so this one cannot corrupt a run; the detector still sees it
            frozenset({"QIN:V_MTE2"}): {("WAR", "PIPE_V", "PIPE_MTE2")},
        }
        for drops, expected in checks.items():
            _, launch = ver.run(dev, case, drop_syncs=drops, trace=True)
            found = analyze(launch.trace)
            assert {(h.kind, h.first.pipe, h.second.pipe) for h in found} == expected, drops
            assert all(h.dropped_syncs == tuple(drops) for h in found)
        case = dbr.make_case(0, 0)
        _, launch = dbr.run(dev, case, trace=True)
        assert analyze(launch.trace) == []
        _, launch = dbr.run(dev, case, drop_syncs=frozenset({"R"}), trace=True)
        found = {(h.kind, h.first.pipe, h.second.pipe) for h in analyze(launch.trace)}
        assert ("WAR", "PIPE_MTE3", "PIPE_MTE2") in found


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_cross_core_flag_raised_on_another_pipe_than_the_copy_is_a_gm_race() -> None:
    import numpy as np

    from mpnpu.api import Pipe

    n = 256
    with device(1) as dev:
        data = dev.to_device("data", np.zeros((2, n), np.int32))
        seen = dev.to_device("seen", np.zeros((2, n), np.int32))
        for pipe, expected in ((Pipe.MTE3, set()), (Pipe.MTE2, {("RAW", "data")})):
            launch = dev.launch_with(LaunchOptions(trace=True), "tests.kernels_for_pipes:publish_then_flag",
                                     data, seen, 1, n, pipe)
            found = {(h.kind, h.tensor) for h in analyze(launch.trace) if h.scope == "GM"}
            assert found == expected, pipe
