"""initcheck and synccheck read a compiled kernel's records as they are (mpnpu/racecheck/records_scan.py):
the same findings as walking the decoded events one by one, on random record streams and on every
C++ kernel launched here (the gallery's, incident and fixed, and the defects of checks.cpp)."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.ascendc.native import abi
from mpnpu.ascendc.native.records import RecordChunk
from mpnpu.racecheck import checks as trace_checks
from mpnpu.racecheck.initcheck import _unwritten_local_reads, initcheck
from mpnpu.racecheck.records_scan import records_of, unwritten_local_reads
from mpnpu.racecheck.synccheck import synccheck
from mpnpu.runtime.topology import KernelType, Topology
from mpnpu.runtime.trace import PackedEvents
from tests.ascendc_util import have_compiler, needs_cxx
from tests.test_checks import checks_cpp_trace

SITES = tuple((i, f"k.cpp:{10 + i}", f"Stage{i % 3}") for i in range(6))
PIPES = [abi.PIPE_NAMES.index(p) for p in ("PIPE_S", "PIPE_V", "PIPE_MTE2", "PIPE_MTE3", "PIPE_M", "PIPE_ALL")]
EVENTS = [abi.HARD_EVENTS.index(e) for e in ("MTE2_V", "V_MTE3", "MTE2_MTE3", "V_MTE2", "MTE3_MTE2", "S_V")]


def _chunk(rows: list[dict[str, int]]) -> RecordChunk:
    rec = np.zeros(len(rows), dtype=abi.EVENT_DTYPE)
    for i, row in enumerate(rows):
        for k, v in row.items():
            rec[i][k] = v
    return RecordChunk(rec.tobytes(), SITES, (("x", "seg", 0),))


def _random_local(rng: np.random.Generator, n: int) -> list[dict[str, int]]:
    rows = []
    for _ in range(n):
        start = int(rng.integers(0, 64)) * int(rng.choice([1, 4, 32]))
        rows.append({"type": abi.EV_LOCAL, "kind": ord("R") if rng.random() < 0.5 else ord("W"),
                     "pipe": int(rng.choice(PIPES[:4])), "mem": int(rng.integers(0, 3)),
                     "site": int(rng.integers(0, len(SITES))), "start": start, "run": int(rng.integers(0, 96)),
                     "t0": 1, "t1": 2})
    return rows


def _random_sync_stream(rng: np.random.Generator, n: int) -> list[dict[str, int]]:
    rows = []
    for _ in range(n):
        r = rng.random()
        site = int(rng.integers(0, len(SITES)))
        if r < 0.55:
            rows.append({"type": int(rng.choice([abi.EV_LOCAL, abi.EV_GM])), "kind": ord("R"),
                         "pipe": int(rng.choice(PIPES[:5])), "site": site, "run": 4, "count": 1, "t0": 1, "t1": 2})
        elif r < 0.85:
            rows.append({"type": abi.EV_PIPE_SYNC, "kind": ord("s") if rng.random() < 0.5 else ord("w"),
                         "pipe": int(rng.choice(PIPES[:5])), "aux": int(rng.choice(EVENTS)),
                         "index": int(rng.integers(0, 2)), "site": site})
        elif r < 0.95:
            rows.append({"type": abi.EV_PIPE_SYNC, "kind": ord("b"), "pipe": int(rng.choice(PIPES)), "aux": -1,
                         "site": site})
        else:
            rows.append({"type": abi.EV_SYNC_ALL, "site": site, "t0": 1, "t1": 2})
    return rows


class _Trace:
    """As much of a LaunchTrace as synccheck reads, one core."""

    def __init__(self, events: PackedEvents) -> None:
        self.events = (events,)
        self.topology = Topology(1, KernelType.AIV)


@pytest.mark.parametrize("seed", range(40))
def test_unwritten_local_reads_match_the_event_walk(seed: int) -> None:
    rng = np.random.default_rng(seed)
    chunks = [_chunk(_random_local(rng, int(rng.integers(1, 60)))) for _ in range(int(rng.integers(1, 3)))]
    events = PackedEvents(tuple(chunks))
    records = records_of(events)
    assert records is not None
    fast = [(ev.memory, ev.start, ev.stop, ev.site, ev.stage, ev.pipe) for ev in _unwritten_local_reads(events, True)]
    slow = [(ev.memory, ev.start, ev.stop, ev.site, ev.stage, ev.pipe) for ev in _unwritten_local_reads(events, False)]
    assert fast == slow
    assert len(unwritten_local_reads(records)) == len(slow)


def test_a_read_is_written_when_any_byte_of_its_hull_was() -> None:
    rows = [{"type": abi.EV_LOCAL, "kind": ord("W"), "start": 32, "run": 8},
            {"type": abi.EV_LOCAL, "kind": ord("R"), "start": 0, "run": 64},  # byte 32 written: not reported
            {"type": abi.EV_LOCAL, "kind": ord("R"), "start": 40, "run": 8},  # nothing of [40, 48): reported
            {"type": abi.EV_LOCAL, "kind": ord("R"), "start": 0, "run": 64, "mem": 1}]  # another memory
    records = records_of(PackedEvents((_chunk(rows),)))
    assert records is not None
    assert unwritten_local_reads(records).tolist() == [2, 3]


@pytest.mark.parametrize("seed", range(40))
def test_sync_steps_give_the_event_walks_findings(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    chunks = tuple(_chunk(_random_sync_stream(rng, int(rng.integers(5, 120)))) for _ in range(int(rng.integers(1, 3))))
    trace = _Trace(PackedEvents(chunks))
    fast = synccheck(trace)  # type: ignore[arg-type]
    slow = synccheck(trace, from_records=False)  # type: ignore[arg-type]
    assert fast == slow


# -- on real kernels -------------------------------------------------------------------------------


@pytest.fixture
def compared(monkeypatch) -> list[str]:
    """Every check a batch runs is run both ways; the list collects the launches that differ."""
    differ: list[str] = []
    seen = [0]

    def both(check, name):
        def run(trace):
            fast, slow = check(trace), check(trace, from_records=False)
            seen[0] += 1
            if fast != slow:
                differ.append(f"{name}: {fast} != {slow}")
            return fast
        return run

    monkeypatch.setattr(trace_checks, "initcheck", both(initcheck, "initcheck"))
    monkeypatch.setattr(trace_checks, "synccheck", both(synccheck, "synccheck"))
    yield differ
    assert seen[0] > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["accum-init", "aiv-barrier", "double-buffer-reuse", "flag-reuse", "floms",
                                  "reduce-early", "vecin-early-read"])
def test_the_gallery_in_cxx_gets_the_same_findings_both_ways(name: str, compared: list[str]) -> None:
    from mpnpu.harness.runner import make_variants, run_batch
    from mpnpu.operators.registry import load_operator

    if not have_compiler():
        pytest.skip("no C++ compiler")
    op = load_operator(f"{name}-cxx")
    run_batch(op, cases=3, repeat=1, variants=make_variants(op, ("incident", "fixed")), initcheck=True,
              synccheck=True)
    assert compared == []


@needs_cxx
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_the_defects_of_a_cxx_kernel_are_found_both_ways(mode: int) -> None:
    trace = checks_cpp_trace(mode)
    assert records_of(trace.events[0]) is not None
    fast = initcheck(trace) + synccheck(trace)
    assert fast == initcheck(trace, from_records=False) + synccheck(trace, from_records=False)
    assert (fast != []) == (mode != 0)


@pytest.mark.parametrize("seed", range(20))
def test_issued_accesses_move_the_clocks_as_issuing_them_one_by_one(seed: int) -> None:
    """Issued.apply's sum of a run of accesses against synccheck's clocks issuing each in turn,
    from random clocks (every component, the scalar unit's included)."""
    from mpnpu.racecheck.pipe_clocks import N as _N
    from mpnpu.racecheck.records_scan import _PIPE_OF_BYTE, Issued, _issued
    from mpnpu.racecheck.synccheck import _Clocks

    rng = np.random.default_rng(seed)
    rows = [{"type": abi.EV_LOCAL, "kind": ord("R"), "pipe": int(rng.choice(PIPES[:5])), "run": 4}
            for _ in range(int(rng.integers(1, 40)))]
    rec = np.frombuffer(_chunk(rows).data, dtype=abi.EVENT_DTYPE)
    start = [[int(v) for v in rng.integers(0, 9, _N)] for _ in range(_N)]
    one_by_one = _Clocks()
    one_by_one.vc = [list(r) for r in start]
    for p in _PIPE_OF_BYTE[rec["pipe"]].tolist():
        one_by_one.issue(p)
    summed = [list(r) for r in start]
    access = np.ones(len(rec), dtype=bool)
    issued = _issued(rec, access, np.zeros(len(rec), dtype=np.int64), _PIPE_OF_BYTE[rec["pipe"]])
    assert list(issued) == [0] and isinstance(issued[0], Issued)
    issued[0].apply(summed)
    assert summed == one_by_one.vc
