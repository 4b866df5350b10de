"""The intra-core analysis at scale (mpnpu.racecheck.intracore): the byte index the automatic
synchronisation model builds for a busy memory, and the conflict search that looks only at the
accesses each access is not ordered after, give exactly what a scan of every earlier access and a
test of every pair give, on random traces of many accesses, syncs and scalar reads."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mpnpu.racecheck import intracore
from mpnpu.racecheck.intracore import _Painted, core_clocks, core_conflicts
from mpnpu.runtime.trace import (
    ATOMIC,
    READ,
    WRITE,
    Access,
    DroppedSyncEvent,
    LaunchTrace,
    LocalAccess,
    PipeSyncEvent,
    StridedRanges,
    shared_hull,
)

PIPES = ("PIPE_MTE2", "PIPE_V", "PIPE_MTE3", "PIPE_S")
EVENTS = (("MTE2_V", "PIPE_MTE2", "PIPE_V"), ("V_MTE3", "PIPE_V", "PIPE_MTE3"), ("MTE3_MTE2", "PIPE_MTE3", "PIPE_MTE2"),
          ("V_MTE2", "PIPE_V", "PIPE_MTE2"), ("MTE3_V", "PIPE_MTE3", "PIPE_V"))


def random_core(seed: int, n: int = 600) -> list:
    """A core's events: accesses of random pipes to random ranges of UB (scalar ones small), and
    set/wait pairs now and then (each wait after its set, as a trace has them)."""
    rng = random.Random(seed)
    events: list = []
    pending: list[tuple[str, int]] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.08:
            name, src, _ = rng.choice(EVENTS)
            eid = rng.randrange(2)
            events.append(PipeSyncEvent("set", src, name, eid, "", "s", "k.py:1"))
            pending.append((name, eid))
        elif r < 0.14 and pending:
            name, eid = pending.pop(rng.randrange(len(pending)))
            dst = next(d for e, _, d in EVENTS if e == name)
            events.append(PipeSyncEvent("wait", dst, name, eid, "", "s", "k.py:2"))
        else:
            pipe = rng.choice(PIPES)
            size = rng.randrange(1, 8) if pipe == "PIPE_S" else rng.randrange(32, 2048)
            start = rng.randrange(0, 8192)
            events.append(LocalAccess(rng.choice((READ, WRITE)), "UB", start, start + size, pipe, "s", "k.py:3"))
    return events


def brute_conflicts(ca) -> list[tuple[int, int]]:
    """Every pair tested, as the definition says."""
    out = []
    for j in range(len(ca.pipe)):
        for i in range(j):
            if ca.pipe[i] == ca.pipe[j] or ca.memory[i] != ca.memory[j]:
                continue
            if not (ca.start[i] < ca.stop[j] and ca.start[j] < ca.stop[i]):
                continue
            if not (ca.write[i] or ca.write[j]) or (ca.atomic[i] and ca.atomic[j]):
                continue
            if ca.clock[j, ca.pipe[i]] >= ca.stamp[i] or ca.clock[i, ca.pipe[j]] >= ca.stamp[j]:
                continue
            out.append((i, j))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_byte_index_waits_for_what_a_full_scan_waits_for(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    events = random_core(seed)
    monkeypatch.setattr(intracore, "_SCAN", 10**9)  # every scalar access scans the whole history
    scanned = core_clocks(events).clock
    monkeypatch.setattr(intracore, "_SCAN", 0)  # every scalar access uses the index
    indexed = core_clocks(events).clock
    assert np.array_equal(scanned, indexed)
    monkeypatch.setattr(intracore, "_SCAN", 4)  # the two mixed, as in a real run
    assert np.array_equal(scanned, core_clocks(events).clock)


@pytest.mark.parametrize("seed", range(6))
def test_the_conflict_search_finds_every_unordered_pair_and_nothing_else(seed: int) -> None:
    ca = core_clocks(random_core(seed))
    found = core_conflicts(ca)
    assert found == sorted(brute_conflicts(ca))
    assert found  # (random syncs leave unordered pairs: the comparison is not of two empty lists)


def test_painting_keeps_the_newest_access_of_each_byte() -> None:
    p = _Painted()
    p.paint(10, 20, (0, (1,)))
    p.paint(15, 30, (1, (2,)))
    p.paint(0, 5, (2, (3,)))
    assert p.newest(10, 15) == (0, (1,))  # only the first covers 10..14
    assert p.newest(12, 16) == (1, (2,))  # both do: the newer
    assert p.newest(5, 10) is None and p.newest(30, 40) is None
    assert p.newest(0, 100) == (2, (3,))
    p.paint(0, 100, (3, (4,)))
    assert p.starts == [0, 100] and p.newest(50, 51) == (3, (4,))


def _merged_pair_by_pair(trace):
    """The hazards inside the cores as the definition says: every pair of accesses tested (not the
    conflict search), those sharing a byte kept, a one-pair Hazard per pair merged by key with
    Hazard.merged in the order the pairs come (cores in order, pairs in issue order), then ordered
    by count and key; and the pairs of each key. A core without local accesses recorded no pipes."""
    from collections import defaultdict

    from mpnpu.racecheck.hazards import Hazard
    from mpnpu.racecheck.pipe_clocks import GM_ORDERING_CALLS, INTRA_CALLS

    merged: dict = {}
    pairs: dict = defaultdict(list)
    for c, events in enumerate(trace.events):
        if not any(type(ev) is LocalAccess for ev in events):
            continue
        ca = core_clocks(events, trace.auto_sync)
        info = trace.topology.core(c)
        for i, j in sorted(brute_conflicts(ca)):  # (in issue order of the first access, then the second)
            a, b = ca.events[i], ca.events[j]
            shared = shared_hull(a.ranges, b.ranges) if type(a) is Access else (max(a.start, b.start),
                                                                                 min(a.stop, b.stop))
            if shared is None:
                continue
            byte_lo, byte_hi = shared
            kind = "WAW" if a.kind != READ and b.kind != READ else ("RAW" if a.kind != READ else "WAR")
            on_gm = type(a) is Access
            calls = GM_ORDERING_CALLS if on_gm else INTRA_CALLS
            names = tuple(sorted({d.name or d.call for p, d in ca.dropped
                                  if ca.pos[i] < p < ca.pos[j] and d.call in calls}))
            tensor, (lo, hi) = (a.tensor, a.elements(byte_lo, byte_hi)) if on_gm else (a.memory, (byte_lo, byte_hi))
            h = Hazard(kind=kind, tensor=tensor, first=intracore._site(info, c, tensor, a),
                       second=intracore._site(info, c, tensor, b), count=1, element_range=(lo, hi),
                       gap=intracore._gap(a, b), dropped_syncs=names,
                       core_pairs=frozenset({(info.short, info.short)}), scope="core" if on_gm else "local")
            prev = merged.get(h.key)
            merged[h.key] = h if prev is None else prev.merged(h, same_launch=True)
            pairs[h.key].append(((c, int(ca.pos[i])), (c, int(ca.pos[j])), byte_lo, byte_hi))
    return sorted(merged.values(), key=lambda h: (-h.count, h.key)), pairs


def random_launch(seed: int, auto_sync: bool = True) -> LaunchTrace:
    """Four cores of random_core's kind, their accesses at a few sites and stages of UB and L1 (so
    that pairs merge), GM copies on MTE2 and MTE3 among them (some strided, some atomic, of three
    tensors in one segment, one of them named "UB" like the local memory: its pairs share keys with
    local ones), dropped sync points now and then (some of a call no local hazard names, some
    unnamed); the last core has GM copies only (it recorded no pipes)."""
    rng = random.Random(seed)
    cores = []
    for c in range(4):
        events = []
        for ev in random_core(seed * 10 + c, 300):
            if type(ev) is LocalAccess:
                if c == 3:
                    continue
                ev = ev._replace(memory=rng.choice(("UB", "UB", "L1")), stage=rng.choice(("s", "t")),
                                 site=rng.choice(("k.py:3", "k.py:4", "k.py:5")))
            events.append(ev)
            if rng.random() < 0.12:
                pipe, kind = rng.choice((("PIPE_MTE2", READ), ("PIPE_MTE3", WRITE), ("PIPE_MTE3", ATOMIC)))
                tensor, offset = rng.choice((("x", 0), ("y", 4096), ("UB", 8192)))
                first = offset + 4 * rng.randrange(512)
                ranges = (StridedRanges(first, 64, 256, rng.randrange(2, 6)) if rng.random() < 0.4
                          else ((first, first + 4 * rng.randrange(1, 128)),))
                events.append(Access(kind, tensor, "gm0", ranges, offset, rng.choice((2, 4)), rng.choice(("s", "t")),
                                     rng.choice(("k.py:3", "k.py:11")), pipe=pipe))
            if rng.random() < 0.03:
                events.append(DroppedSyncEvent(rng.choice(("k.py:7", "k.py:8", "")),
                                               rng.choice(("set_flag", "wait_flag", "pipe_barrier", "sync_all")),
                                               "s", "k.py:9"))
        cores.append(tuple(events))
    return LaunchTrace(2, "k", tuple(cores), frozenset({"k.py:7", "k.py:8"}), auto_sync=auto_sync)


@pytest.mark.parametrize("seed, auto_sync", [(0, True), (1, True), (2, False), (3, True), (4, False)])
def test_hazards_inside_cores_merge_as_pair_by_pair_merging_does(seed: int, auto_sync: bool) -> None:
    """analyze_local groups the pairs as arrays (a missing sync around a loop leaves millions of
    them): the same hazards, fields and order, and the same pairs per hazard, as testing every pair
    and merging a one-pair Hazard per pair does."""
    trace = random_launch(seed, auto_sync)
    want, want_pairs = _merged_pair_by_pair(trace)
    assert len(want) > 3 and any(h.dropped_syncs for h in want)  # (the case is not trivial)
    assert {h.scope for h in want} == {"local", "core"}
    assert intracore.analyze_local(trace) == want
    got = intracore.local_pairs(trace)
    assert [h for h, _ in got] == want
    assert all(pairs == want_pairs[h.key] for h, pairs in got)
