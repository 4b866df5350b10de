"""Happens-before race detection on hand-built traces (no processes).

Core ids: block_dim 1 -> cube 0, vector cores 1 (aiv0) and 2 (aiv1).
block_dim 2 -> cubes 0, 1; vector cores 2, 3 (AI core 0) and 4, 5 (AI core 1).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from mpnpu.racecheck import (
    HazardLog,
    analyze,
    compute_clocks,
    find_conflicts,
    stage_order,
)
from mpnpu.racecheck import detect as detect_mod
from mpnpu.report.hazards import format_hazards
from mpnpu.runtime.topology import Topology
from mpnpu.runtime.trace import (
    ATOMIC,
    READ,
    WRITE,
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    LaunchTrace,
    StageEvent,
    SyncAllEvent,
)

# -- builders ---------------------------------------------------------------------------------


def acc(kind, start=0, stop=16, *, tensor="t", stage="S", site="k.py:1", segment="gm",
        offset=0, itemsize=4, ranges=None) -> Access:
    return Access(kind, tensor, segment, tuple(ranges) if ranges else ((start, stop),), offset, itemsize, stage, site)


def sync(stage="S", name="S1", aiv_only=False) -> SyncAllEvent:
    return SyncAllEvent(aiv_only, name, stage, "k.py:50")


def fset(mode, fid, stage="S") -> FlagSetEvent:
    return FlagSetEvent(mode, fid, "", stage, "k.py:60")


def fwait(mode, fid, stage="S") -> FlagWaitEvent:
    return FlagWaitEvent(mode, fid, "", stage, "k.py:61")


def mk(block_dim: int, per_core: dict[int, list]) -> LaunchTrace:
    n = 3 * block_dim
    return LaunchTrace(block_dim, "k", tuple(tuple(per_core.get(c, ())) for c in range(n)), frozenset())


def core_pairs(hazards) -> set:
    return set().union(*(h.core_pairs for h in hazards)) if hazards else set()


# -- SyncAll ----------------------------------------------------------------------------------


def _target_then_cv(with_sync: bool) -> LaunchTrace:
    """aiv1 writes masked_target in TargetProcess, aiv0 reads it in CVProcess.

    The reader is the lower core id and its read has the lower trace position, so only the stage
    order can name the hazard RAW.
    """
    s1 = [sync("TargetProcess")] if with_sync else [DroppedSyncEvent("S1", "sync_all", "TargetProcess", "k.py:130")]
    reader = [StageEvent("TargetProcess", "k.py:100"), *s1, StageEvent("CVProcess", "k.py:200"),
              acc(READ, 0, 64, tensor="masked_target", stage="CVProcess", site="k.py:201")]
    writer = [StageEvent("TargetProcess", "k.py:100"),
              acc(WRITE, 32, 64, tensor="masked_target", stage="TargetProcess", site="k.py:120"),
              *s1, StageEvent("CVProcess", "k.py:200")]
    cube = [sync("TargetProcess")] if with_sync else []
    return mk(1, {0: cube, 1: reader, 2: writer})


def test_missing_syncall_reports_raw_with_stages():
    (h,) = analyze(_target_then_cv(with_sync=False))
    assert h.kind == "RAW"
    assert (h.first.stage, h.first.site, h.first.access, h.first.core_id) == ("TargetProcess", "k.py:120", "WRITE", 2)
    assert (h.second.stage, h.second.site, h.second.access, h.second.core_id) == ("CVProcess", "k.py:201", "READ", 1)
    assert h.first.core == "vector core 1 (block 0, sub 1)"
    assert h.tensor == "masked_target"
    assert h.element_range == (8, 16)  # bytes 32..64 of int32
    assert h.missing_sync == "no SyncAll between TargetProcess and CVProcess (sync point S1 was dropped)"
    assert h.count == 1 and h.core_pairs == {("aiv1", "aiv0")}


def test_syncall_orders_everything():
    assert analyze(_target_then_cv(with_sync=True)) == []


def test_aiv_only_syncall_orders_vector_cores_but_not_cube():
    w = acc(WRITE, 0, 16, stage="A", site="k.py:1")
    t = mk(1, {
        0: [acc(READ, 0, 16, stage="B", site="k.py:3")],
        1: [w, sync("A", aiv_only=True)],
        2: [sync("A", aiv_only=True), acc(READ, 0, 16, stage="B", site="k.py:2")],
    })
    hz = analyze(t)
    assert core_pairs(hz) == {("aiv0", "aic0")}
    assert [h.kind for h in hz] == ["RAW"]
    # An all-core SyncAll over the same spot orders the cube too.
    t2 = mk(1, {0: [sync("A"), *t.events[0]], 1: [w, sync("A")], 2: [sync("A"), acc(READ, 0, 16, stage="B")]})
    assert analyze(t2) == []


def test_cube_core_in_vector_only_syncall_is_inconsistent():
    t = mk(1, {0: [sync(aiv_only=True)], 1: [sync(aiv_only=True)], 2: [sync(aiv_only=True)]})
    with pytest.raises(ValueError, match="vector-only SyncAll"):
        analyze(t)


# -- cross-core flags -------------------------------------------------------------------------


def test_flag_mode2_cube_set_orders_both_vector_waits():
    cube = [acc(WRITE, 0, 64, site="k.py:10"), fset(2, 5)]
    v0 = [fwait(2, 5), acc(READ, 0, 32, site="k.py:20")]
    v1 = [fwait(2, 5), acc(READ, 32, 64, site="k.py:20")]
    assert analyze(mk(1, {0: cube, 1: v0, 2: v1})) == []
    # aiv1 reading without its wait races with the cube's write, aiv0 still does not.
    hz = analyze(mk(1, {0: cube, 1: v0, 2: [acc(READ, 32, 64, site="k.py:20")]}))
    assert core_pairs(hz) == {("aic0", "aiv1")}
    assert hz[0].kind == "RAW"


def test_flag_mode2_cube_wait_needs_both_vector_sets():
    v0 = [acc(WRITE, 0, 16, site="k.py:1"), fset(2, 6)]
    v1 = [acc(WRITE, 16, 32, site="k.py:1"), fset(2, 6)]
    cube = [fwait(2, 6), acc(READ, 0, 32, site="k.py:2")]
    assert analyze(mk(1, {0: cube, 1: v0, 2: v1})) == []
    # A write by aiv1 after its set is not covered by the cube's wait.
    v1_late = [*v1, acc(WRITE, 16, 32, site="k.py:9")]
    (h,) = analyze(mk(1, {0: cube, 1: v0, 2: v1_late}))
    assert h.core_pairs == {("aic0", "aiv1")} and {h.first.site, h.second.site} == {"k.py:2", "k.py:9"}
    # With only aiv0's set the cube's wait could never have returned.
    with pytest.raises(ValueError, match="waited 1 time"):
        analyze(mk(1, {0: cube, 1: v0, 2: [acc(WRITE, 16, 32)]}))


def test_flag_jth_wait_pairs_with_jth_set():
    cube = [acc(WRITE, 0, 64, site="k.py:a"), fset(2, 5), acc(WRITE, 0, 64, site="k.py:b"), fset(2, 5)]
    v0 = [fwait(2, 5), acc(READ, 0, 64, site="k.py:c"), fwait(2, 5), acc(READ, 0, 64, site="k.py:d")]
    conf = find_conflicts(mk(1, {0: cube, 1: v0}))
    # Only the 1st read vs the 2nd write: the 2nd write comes after the 1st set only.
    assert conf.pairs() == {((1, 1), (0, 2))}
    (h,) = analyze(mk(1, {0: cube, 1: v0}))
    assert (h.kind, h.first.site, h.second.site) == ("WAR", "k.py:c", "k.py:b")
    # Two sets before a single wait: the wait returns after the 1st set, so the 2nd write races.
    hz = analyze(mk(1, {0: cube, 1: [fwait(2, 5), acc(READ, 0, 64, site="k.py:c")]}))
    assert [(h.first.site, h.second.site) for h in hz] == [("k.py:c", "k.py:b")]


def test_flag_mode0_counts_every_vector_including_own_set():
    vec = {c: [acc(WRITE, 16 * (c - 2), 16 * (c - 1), site="k.py:1"), fset(0, 1), fwait(0, 1),
               acc(READ, 0, 64, site="k.py:2")] for c in range(2, 6)}
    assert analyze(mk(2, vec)) == []
    late = dict(vec)
    late[5] = [*vec[5][:2], acc(WRITE, 48, 64, site="k.py:9"), *vec[5][2:]]
    (h,) = analyze(mk(2, late))
    cores = {p[0] for p in h.core_pairs} | {p[1] for p in h.core_pairs}
    assert h.count == 3 and cores == {"aiv0", "aiv1", "aiv2", "aiv3"}
    assert all("aiv3" in p for p in h.core_pairs)
    # Core 2 never sets: every vector wait (its own included) lacks a set.
    missing = dict(vec)
    missing[2] = [acc(WRITE, 0, 16), fwait(0, 1), acc(READ, 0, 64)]
    with pytest.raises(ValueError, match="vector core 0 \\(block 0, sub 0\\) set it for that core only 0"):
        analyze(mk(2, missing))


def test_flag_mode0_cube_cores():
    t = mk(2, {0: [acc(WRITE, 0, 16, site="k.py:1"), fset(0, 3), fwait(0, 3)],
               1: [fset(0, 3), fwait(0, 3), acc(READ, 0, 16, site="k.py:2")]})
    assert analyze(t) == []
    t_unsynced = mk(2, {0: [acc(WRITE, 0, 16, site="k.py:1")], 1: [acc(READ, 0, 16, site="k.py:2")]})
    assert len(analyze(t_unsynced)) == 1


def test_flag_mode1_syncs_the_two_vectors_of_one_ai_core_only():
    t = mk(2, {
        2: [acc(WRITE, 0, 16, site="k.py:1"), fset(1, 2)],
        3: [fset(1, 2), fwait(1, 2), acc(READ, 0, 16, site="k.py:2")],
        4: [acc(READ, 0, 16, site="k.py:3")],  # AI core 1: not in the flag's group
    })
    (h,) = analyze(t)
    assert h.core_pairs == {("aiv0", "aiv2")} and h.second.site == "k.py:3"
    with pytest.raises(ValueError, match="mode 1"):
        analyze(mk(1, {0: [fset(1, 2)]}))


# -- conflicts --------------------------------------------------------------------------------


def test_atomics_conflict_with_plain_accesses_only():
    # The vector cores go on to AllReduceProcess, which puts it after CVProcess in stage order.
    v0 = [StageEvent("CVProcess", "k.py:0"), acc(ATOMIC, 0, 16, stage="CVProcess", site="k.py:a"),
          StageEvent("AllReduceProcess", "k.py:0")]
    v1 = [StageEvent("CVProcess", "k.py:0"), acc(ATOMIC, 0, 16, stage="CVProcess", site="k.py:b"),
          StageEvent("AllReduceProcess", "k.py:0")]
    assert analyze(mk(1, {1: v0, 2: v1})) == []
    cube = [StageEvent("AllReduceProcess", "k.py:0"), acc(READ, 0, 16, stage="AllReduceProcess", site="k.py:c")]
    hz = analyze(mk(1, {0: cube, 1: v0, 2: v1}))
    assert sorted((h.kind, h.first.access, h.second.access, h.first.site) for h in hz) == [
        ("RAW", "ATOMIC", "READ", "k.py:a"), ("RAW", "ATOMIC", "READ", "k.py:b")]
    cube_w = [StageEvent("AllReduceProcess", "k.py:0"), acc(WRITE, 0, 16, stage="AllReduceProcess", site="k.py:c")]
    assert {h.kind for h in analyze(mk(1, {0: cube_w, 1: v0}))} == {"WAW"}


def test_same_core_accesses_never_reported():
    t = mk(1, {1: [acc(WRITE), acc(READ), acc(ATOMIC), acc(WRITE)], 2: [acc(READ, 100, 104)]})
    assert analyze(t) == []


def test_non_overlapping_ranges_not_reported():
    # Adjacent byte ranges of one tensor.
    assert analyze(mk(1, {1: [acc(WRITE, 0, 16)], 2: [acc(WRITE, 16, 32)]})) == []
    # The same bytes in different segments.
    assert analyze(mk(1, {1: [acc(WRITE, 0, 16, segment="a")], 2: [acc(WRITE, 0, 16, segment="b")]})) == []
    # Interleaved 2D tiles of a [4, 8] float32 tensor (row = 32 bytes): columns 0:4 vs 4:8.
    left = [(32 * r, 32 * r + 16) for r in range(4)]
    right = [(32 * r + 16, 32 * r + 32) for r in range(4)]
    v0 = [acc(WRITE, ranges=left, site="k.py:L")]
    v1 = [acc(WRITE, ranges=right, site="k.py:R")]
    assert analyze(mk(1, {1: v0, 2: v1})) == []
    # Columns 3:5 straddle both: one access pair per writer, however many rows overlap.
    mid = [(32 * r + 12, 32 * r + 20) for r in range(4)]
    hz = analyze(mk(1, {0: [acc(READ, ranges=mid, site="k.py:M")], 1: v0, 2: v1}))
    by_site = {({h.first.site, h.second.site} - {"k.py:M"}).pop(): h for h in hz}
    assert set(by_site) == {"k.py:L", "k.py:R"}
    assert by_site["k.py:L"].count == 1
    assert by_site["k.py:L"].element_range == (3, 28)  # element 3 of row 0 .. element 27 of row 3
    assert by_site["k.py:R"].element_range == (4, 29)


def test_element_range_uses_tensor_offset_and_itemsize():
    t = mk(1, {1: [acc(WRITE, 64, 96, offset=64, itemsize=2)], 2: [acc(READ, 80, 128, offset=64, itemsize=2)]})
    (h,) = analyze(t)
    assert h.element_range == (8, 16)


def test_war_and_waw_named_by_stage_order_then_trace_position():
    st = {1: [StageEvent("A", "k.py:0"), StageEvent("B", "k.py:0")]}
    # Earlier-stage access on the higher core id.
    war = mk(1, {1: [*st[1], acc(WRITE, stage="B", site="k.py:w")], 2: [acc(READ, stage="A", site="k.py:r")]})
    (h,) = analyze(war)
    assert (h.kind, h.first.site, h.first.stage, h.second.stage) == ("WAR", "k.py:r", "A", "B")
    assert h.missing_sync == "no SyncAll between A and B"
    waw = mk(1, {1: [*st[1], acc(WRITE, stage="B", site="k.py:2")], 2: [acc(ATOMIC, stage="A", site="k.py:1")]})
    (h,) = analyze(waw)
    assert (h.kind, h.first.site, h.first.access) == ("WAW", "k.py:1", "ATOMIC")
    # Same stage: the earlier trace position comes first, whatever the core id.
    same = mk(1, {1: [acc(READ, site="k.py:x"), acc(WRITE, site="k.py:late")], 2: [acc(READ, site="k.py:y")]})
    (h,) = analyze(same)
    assert (h.kind, h.first.site, h.second.site) == ("WAR", "k.py:y", "k.py:late")
    assert h.missing_sync == "no sync between the two accesses in S"


def test_stage_order_merges_cores():
    t = mk(1, {
        0: [StageEvent("CVProcess", "k"), StageEvent("AllReduceProcess", "k")],
        1: [StageEvent("InitOutputAndWorkspace", "k"), StageEvent("TargetProcess", "k"), StageEvent("CVProcess", "k")],
        2: [acc(WRITE, stage="InitOutputAndWorkspace"), acc(WRITE, stage="TargetProcess")],
    })
    assert stage_order(t) == ["InitOutputAndWorkspace", "TargetProcess", "CVProcess", "AllReduceProcess"]


# -- merging and reports ----------------------------------------------------------------------


def _two_hazard_launch() -> LaunchTrace:
    tp, cv = StageEvent("TargetProcess", "k"), StageEvent("CVProcess", "k")
    return mk(1, {
        1: [tp, acc(WRITE, 0, 16, tensor="masked_target", stage="TargetProcess", site="k.py:120"),
            acc(WRITE, 16, 32, tensor="masked_target", stage="TargetProcess", site="k.py:120")],
        2: [tp, cv, acc(READ, 0, 32, tensor="masked_target", stage="CVProcess", site="k.py:201"),
            acc(READ, 0, 32, tensor="masked_target", stage="CVProcess", site="k.py:201"),
            acc(WRITE, 64, 68, tensor="other", stage="CVProcess", site="k.py:300")],
        0: [cv, acc(READ, 64, 68, tensor="other", stage="CVProcess", site="k.py:301")],
    })


def test_merge_counts_within_and_across_launches():
    hz = analyze(_two_hazard_launch())
    assert [(h.tensor, h.count) for h in hz] == [("masked_target", 4), ("other", 1)]
    log = HazardLog()
    log.add(hz)
    log.add(analyze(_two_hazard_launch()))
    log.add([])
    assert log.launches_analyzed == 3 and len(log) == 2
    top = log.hazards()[0]
    assert (top.tensor, top.count, top.launches, top.element_range) == ("masked_target", 8, 2, (0, 8))
    d = log.to_dicts()[0]
    assert {"kind", "tensor", "count", "launches", "element_range", "missing_sync", "first", "second"} <= set(d)
    assert {"core", "core_id", "stage", "site", "access"} <= set(d["first"])
    assert d["first"]["core"] == "vector core 0 (block 0, sub 0)" and d["second"]["access"] == "READ"


def test_format_text_reads_like_mssanitizer():
    log = HazardLog()
    for _ in range(5):
        log.add(analyze(_target_then_cv(with_sync=False)))
    text = format_hazards(log.hazards())
    assert text.splitlines() == [
        "====== ERROR: Potential RAW hazard detected at GM tensor masked_target[8:16] (x5 in 5 launches):",
        "======    WRITE by vector core 1 (block 0, sub 1) in TargetProcess at k.py:120",
        "======    READ  by vector core 0 (block 0, sub 0) in CVProcess at k.py:201",
        "======    missing sync: no SyncAll between TargetProcess and CVProcess (sync point S1 was dropped)",
        "====== SUMMARY: 1 hazard (1 RAW, 0 WAR, 0 WAW)",
    ]
    assert format_hazards([]) == "====== SUMMARY: 0 hazards (0 RAW, 0 WAR, 0 WAW)"


def test_dropped_sync_named_only_when_between_the_accesses():
    # S0 was dropped too, but it lies before both accesses: only S1 sits between them.
    drop = lambda name, stage: DroppedSyncEvent(name, "sync_all", stage, "k.py:1")  # noqa: E731
    w = [drop("S0", "Init"), StageEvent("TargetProcess", "k"), acc(WRITE, stage="TargetProcess"),
         drop("S1", "TargetProcess"), StageEvent("CVProcess", "k"), drop("S2", "CVProcess")]
    r = [drop("S0", "Init"), StageEvent("TargetProcess", "k"), drop("S1", "TargetProcess"),
         StageEvent("CVProcess", "k"), acc(READ, stage="CVProcess"), drop("S2", "CVProcess")]
    (h,) = analyze(mk(1, {1: w, 2: r}))
    assert h.dropped_syncs == ("S1",)


# -- inconsistent traces ----------------------------------------------------------------------


def test_inconsistent_traces_raise():
    with pytest.raises(ValueError, match="waited 1 time"):
        analyze(mk(1, {1: [fwait(2, 5)]}))
    with pytest.raises(ValueError, match="different numbers of SyncAll"):
        analyze(mk(1, {0: [sync()], 1: [sync()], 2: []}))
    with pytest.raises(ValueError, match="3 cores"):
        analyze(LaunchTrace(1, "k", ((), ()), frozenset()))
    # Counts match but the cube waits for sets the vectors make only after a SyncAll it has not reached.
    circular = mk(1, {0: [fwait(2, 6), sync()], 1: [sync(), fset(2, 6)], 2: [sync(), fset(2, 6)]})
    with pytest.raises(ValueError, match="circular"):
        analyze(circular)
    with pytest.raises(ValueError, match="access kind"):
        analyze(mk(1, {1: [acc("X")]}))


# -- cross-check against a brute-force reference ----------------------------------------------


def _random_trace(rng: np.random.Generator, block_dim: int) -> LaunchTrace:
    """Phases of random accesses separated by random (always completable) syncs."""
    topo = Topology(block_dim)
    evs: dict[int, list] = defaultdict(list)

    def accesses(c: int, phase: int, k: int) -> None:
        for _ in range(int(rng.integers(0, k + 1))):
            seg = str(rng.choice(["gm", "ws"]))
            start = int(rng.integers(0, 10)) * 4
            kind = str(rng.choice([READ, WRITE, ATOMIC]))
            rng_ranges = ((start, start + int(rng.integers(1, 4)) * 4),)
            if rng.random() < 0.3:  # a second, disjoint range (2D tile)
                rng_ranges += ((start + 40, start + 48),)
            evs[c].append(Access(kind, seg, seg, rng_ranges, 0, 4, f"P{phase}", f"k.py:{int(rng.integers(0, 4))}"))

    for phase in range(int(rng.integers(2, 6))):
        st = f"P{phase}"
        for c in topo.all_ids:
            evs[c].append(StageEvent(st, "k"))
            accesses(c, phase, 3)
        what = str(rng.choice(["all", "aiv", "down", "up", "m0", "m1", "none"]))
        skip = lambda: rng.random() < 0.3  # noqa: E731  (a receiver that does not wait: counts drift)
        if what in ("all", "aiv"):
            for c in topo.barrier_parties(what == "aiv"):
                evs[c].append(SyncAllEvent(what == "aiv", "", st, "k"))
        elif what == "down":
            for k in range(block_dim):
                evs[k].append(FlagSetEvent(2, 5, "", st, "k"))
                accesses(k, phase, 2)
                for v in topo.vector_ids_of(k):
                    if not skip():
                        evs[v].append(FlagWaitEvent(2, 5, "", st, "k"))
        elif what == "up":
            for k in range(block_dim):
                for v in topo.vector_ids_of(k):
                    evs[v].append(FlagSetEvent(2, 6, "", st, "k"))
                    accesses(v, phase, 2)
                if not skip():
                    evs[k].append(FlagWaitEvent(2, 6, "", st, "k"))
        elif what in ("m0", "m1"):
            mode = 0 if what == "m0" else 1
            for v in topo.vector_ids:
                evs[v].append(FlagSetEvent(mode, 1, "", st, "k"))
                accesses(v, phase, 1)
            for v in topo.vector_ids:
                if not skip():
                    evs[v].append(FlagWaitEvent(mode, 1, "", st, "k"))
    for c in topo.all_ids:
        accesses(c, 99, 2)
    return LaunchTrace(block_dim, "k", tuple(tuple(evs[c]) for c in topo.all_ids), frozenset())


def _reference_pairs(trace: LaunchTrace) -> set:
    """Conflicting unordered pairs by explicit graph reachability and an O(n^2) pair loop."""
    topo = Topology(trace.block_dim)
    succ: dict = defaultdict(set)
    sets: dict = defaultdict(list)  # (mode, id, r, s) -> set nodes in order
    waits: dict = defaultdict(list)  # (mode, id, r) -> wait nodes in order
    rounds: dict = defaultdict(list)  # (aiv_only, k) -> SyncAll nodes
    for c, evs in enumerate(trace.events):
        nbar = defaultdict(int)
        for p, ev in enumerate(evs):
            if p + 1 < len(evs):
                succ[(c, p)].add((c, p + 1))
            if isinstance(ev, FlagSetEvent):
                for r in topo.flag_receivers(ev.mode, c):
                    sets[(ev.mode, ev.flag_id, r, c)].append((c, p))
            elif isinstance(ev, FlagWaitEvent):
                waits[(ev.mode, ev.flag_id, c)].append((c, p))
            elif isinstance(ev, SyncAllEvent):
                rounds[(ev.aiv_only, nbar[ev.aiv_only])].append((c, p))
                nbar[ev.aiv_only] += 1
    for (mode, fid, r), ws in waits.items():
        for j, w in enumerate(ws):
            for s in topo.flag_senders(mode, r):
                succ[sets[(mode, fid, r, s)][j]].add(w)
    for key, nodes in rounds.items():
        hub = ("barrier", key)
        for c, p in nodes:
            succ[(c, p)].add(hub)
            if p + 1 < len(trace.events[c]):
                succ[hub].add((c, p + 1))

    def reach(a) -> set:
        seen, stack = set(), [a]
        while stack:
            for nxt in succ[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    accs = [((c, p), ev) for c, evs in enumerate(trace.events) for p, ev in enumerate(evs) if isinstance(ev, Access)]
    reachable = {node: reach(node) for node, _ in accs}
    order = {s: i for i, s in enumerate(stage_order(trace))}
    out = set()
    for i, (na, a) in enumerate(accs):
        for nb, b in accs[i + 1:]:
            if na[0] == nb[0] or a.segment != b.segment or (a.kind == READ and b.kind == READ):
                continue
            if a.kind == ATOMIC and b.kind == ATOMIC:
                continue
            if not any(s1 < e2 and s2 < e1 for s1, e1 in a.ranges for s2, e2 in b.ranges):
                continue
            if nb in reachable[na] or na in reachable[nb]:
                continue
            ka, kb = (order[a.stage], na[1], na[0]), (order[b.stage], nb[1], nb[0])
            out.add((na, nb) if ka < kb else (nb, na))
    return out


def test_matches_brute_force_reference_on_random_traces(monkeypatch):
    rng = np.random.default_rng(1234)
    n_racy = 0
    for i in range(60):
        trace = _random_trace(rng, block_dim=1 + i % 2)
        expected = _reference_pairs(trace)
        assert find_conflicts(trace).pairs() == expected, f"trace {i}"
        n_racy += bool(expected)
        if i % 10 == 0:  # tiny chunks exercise the chunked candidate enumeration
            monkeypatch.setattr(detect_mod, "_CHUNK", 3)
            assert find_conflicts(trace).pairs() == expected, f"trace {i} (chunked)"
            monkeypatch.setattr(detect_mod, "_CHUNK", 1 << 20)
    assert 10 < n_racy < 60  # the generator makes both racy and race-free traces


def test_vector_clock_own_component_counts_sync_events():
    t = mk(1, {0: [sync()], 1: [sync(), fset(1, 2), fwait(1, 2)], 2: [sync(), fset(1, 2)]})
    vc = compute_clocks(t)
    assert vc.n_epochs(1) == 4 and vc.clock(1, 3)[1] == 4
    # aiv1's set (end of its epoch 1) is acquired by aiv0's wait: aiv0's last epoch sees it.
    assert bool(vc.happens_before(2, 1, 1, 3)) and not bool(vc.happens_before(2, 2, 1, 3))


def test_unsorted_ranges_are_rejected():
    with pytest.raises(ValueError, match="sorted and disjoint"):
        analyze(mk(1, {1: [acc(WRITE, ranges=[(32, 48), (0, 16)], site="k.py:7")]}))
