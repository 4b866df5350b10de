"""Racecheck's pipe clocks of one core from a compiled kernel's record columns
(mpnpu/racecheck/records_clocks.py) equal the event-by-event walk's
(mpnpu.racecheck.intracore.core_clocks with columns=False): on random record streams of every sync
kind, and on every C++ gallery kernel's launches, incident and fixed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mpnpu.ascendc.native import abi
from mpnpu.ascendc.native.records import RecordChunk
from mpnpu.errors import TraceError
from mpnpu.racecheck import intracore, records_clocks
from mpnpu.racecheck.intracore import CoreAccesses, core_clocks
from mpnpu.runtime.trace import PackedEvents
from tests.ascendc_util import have_compiler

SITES = tuple((i, f"k.cpp:{10 + i}", f"Stage{i % 3}") for i in range(6))
REGIONS = (("x", "seg0", 0), ("y", "seg0", 4096), ("w", "seg1", 64))
PIPES = [abi.PIPE_NAMES.index(p) for p in ("PIPE_S", "PIPE_V", "PIPE_MTE2", "PIPE_MTE3", "PIPE_M", "PIPE_FIX")]
#: (set pipe, wait pipe, its HardEvent) pairs, so that every random wait can be given a set before it
EVENTS = [(abi.PIPE_NAMES.index("PIPE_" + e.split("_")[0]), abi.PIPE_NAMES.index("PIPE_" + e.split("_")[1]),
           abi.HARD_EVENTS.index(e)) for e in ("MTE2_V", "V_MTE3", "MTE2_MTE3", "V_MTE2", "MTE3_MTE2", "S_V", "V_S")]


def _chunk(rows: list[dict[str, int]]) -> RecordChunk:
    rec = np.zeros(len(rows), dtype=abi.EVENT_DTYPE)
    for i, row in enumerate(rows):
        for k, v in row.items():
            rec[i][k] = v
    return RecordChunk(rec.tobytes(), SITES, REGIONS)


def _random_stream(rng: np.random.Generator, n: int, scalar_local: bool) -> list[dict[str, int]]:
    """Accesses of every kind, intra-core set/wait pairs (each wait after its set), barriers,
    SyncAll, cross-core flag sets and waits in every mode, dropped syncs, with times."""
    rows: list[dict[str, int]] = []
    pending: list[tuple[int, int, int]] = []  # sets not yet waited: (wait pipe, event, id)
    for _ in range(n):
        r = rng.random()
        site = int(rng.integers(0, len(SITES)))
        times = {"t0": int(rng.integers(1, 100)), "t1": int(rng.integers(100, 200))}
        if r < 0.5:
            pipes = PIPES if scalar_local else PIPES[1:]
            rows.append({"type": abi.EV_LOCAL, "kind": ord(rng.choice(["R", "W"])), "pipe": int(rng.choice(pipes)),
                         "mem": int(rng.integers(0, 3)), "site": site, "start": int(rng.integers(0, 8)) * 32,
                         "run": int(rng.integers(0, 96)), **times})
        elif r < 0.62:
            rows.append({"type": abi.EV_GM, "kind": ord(rng.choice(["R", "W", "A"])), "pipe": int(rng.choice(PIPES)),
                         "mem": int(rng.integers(0, 2)), "index": int(rng.integers(0, len(REGIONS))), "site": site,
                         "start": int(rng.integers(0, 16)) * 8, "run": int(rng.integers(1, 64)),
                         "stride": int(rng.integers(0, 128)), "count": int(rng.integers(1, 4)), **times})
        elif r < 0.72:
            set_pipe, wait_pipe, event = EVENTS[int(rng.integers(0, len(EVENTS)))]
            ident = int(rng.integers(0, 2))
            rows.append({"type": abi.EV_PIPE_SYNC, "kind": ord("s"), "pipe": set_pipe, "aux": event,
                         "index": ident, "site": site})
            pending.append((wait_pipe, event, ident))
        elif r < 0.82 and pending:
            wait_pipe, event, ident = pending.pop(int(rng.integers(0, len(pending))))
            rows.append({"type": abi.EV_PIPE_SYNC, "kind": ord("w"), "pipe": wait_pipe, "aux": event,
                         "index": ident, "site": site})
        elif r < 0.87:
            rows.append({"type": abi.EV_PIPE_SYNC, "kind": ord("b"), "pipe": int(rng.choice(PIPES + [6])),
                         "aux": -1, "site": site})
        elif r < 0.9:
            rows.append({"type": abi.EV_SYNC_ALL, "site": site, **times})
        elif r < 0.95:
            flag = {"mem": int(rng.integers(0, 3)), "index": int(rng.integers(0, 2)), "site": site, **times}
            rows.append({"type": abi.EV_FLAG_SET, "pipe": int(rng.choice(PIPES)), **flag})
            if rng.random() < 0.7:
                rows.append({"type": abi.EV_FLAG_WAIT, **flag})
        else:
            rows.append({"type": abi.EV_DROPPED, "index": int(rng.integers(0, len(abi.DROPPED_CALLS))),
                         "site": site, **times})
    return rows


def _canonical(ca: CoreAccesses) -> dict[str, Any]:
    """The columns, with memory ids numbered by first appearance (the ids are only compared for
    equality)."""
    first: dict[int, int] = {}
    memory = [first.setdefault(m, len(first)) for m in ca.memory.tolist()]
    out = {name: getattr(ca, name).tolist() for name in ("pos", "pipe", "stamp", "clock", "write", "start", "stop",
                                                          "atomic")}
    return {**out, "memory": memory, "events": list(ca.events), "dropped": list(ca.dropped)}


def _both(events: PackedEvents, auto_sync: bool) -> tuple[Any, Any]:
    def run(columns: bool) -> Any:
        try:
            return _canonical(core_clocks(events, auto_sync, columns=columns))
        except TraceError as exc:
            return str(exc)
    return run(True), run(False)


@pytest.mark.parametrize("seed", range(60))
def test_random_streams_get_the_same_clocks_both_ways(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scalar_local = seed % 3 != 0
    chunks = tuple(_chunk(_random_stream(rng, int(rng.integers(5, 150)), scalar_local))
                   for _ in range(int(rng.integers(1, 3))))
    for auto_sync in (True, False):
        fast, slow = _both(PackedEvents(chunks), auto_sync)
        assert fast == slow


def test_the_columns_are_taken_where_they_can_be() -> None:
    """Not a vacuous comparison: the column path answers for vector and scalar accesses, and leaves
    a trace with more scalar accesses to local memory than it looks back for to the event walk."""
    vector = [{"type": abi.EV_LOCAL, "kind": ord("W"), "pipe": abi.PIPE_NAMES.index("PIPE_V"), "run": 32}]
    scalar = [{"type": abi.EV_LOCAL, "kind": ord("R"), "pipe": abi.PIPE_NAMES.index("PIPE_S"), "run": 4}]
    assert records_clocks.core_clocks(PackedEvents((_chunk(vector),)), True) is not None
    assert records_clocks.core_clocks(PackedEvents((_chunk(vector + scalar),)), True) is not None
    many = vector + scalar * (records_clocks._MAX_LOOKED_BACK + 1)
    assert records_clocks.core_clocks(PackedEvents((_chunk(many),)), True) is None
    assert records_clocks.core_clocks(PackedEvents((_chunk(many),)), False) is not None


def test_a_scalar_read_waits_for_the_vector_write_it_reads() -> None:
    """The automatic synchronisation in the columns: a scalar read of what V wrote is ordered after
    it; one of other bytes is not."""
    v, s = abi.PIPE_NAMES.index("PIPE_V"), abi.PIPE_NAMES.index("PIPE_S")
    rows = [{"type": abi.EV_LOCAL, "kind": ord("W"), "pipe": v, "start": 0, "run": 32},
            {"type": abi.EV_LOCAL, "kind": ord("R"), "pipe": s, "start": 64, "run": 4},
            {"type": abi.EV_LOCAL, "kind": ord("R"), "pipe": s, "start": 0, "run": 4}]
    ca = records_clocks.core_clocks(PackedEvents((_chunk(rows),)), True)
    assert ca is not None
    p_v = int(ca.pipe[0])
    assert ca.clock[1, p_v] < ca.stamp[0]
    assert ca.clock[2, p_v] >= ca.stamp[0]


def test_an_access_after_a_wait_sees_the_set_pipes_work() -> None:
    """The clocks themselves, by hand: MTE2 copy, set MTE2_V, wait MTE2_V, a V access."""
    mte2, v = abi.PIPE_NAMES.index("PIPE_MTE2"), abi.PIPE_NAMES.index("PIPE_V")
    event = abi.HARD_EVENTS.index("MTE2_V")
    rows = [{"type": abi.EV_LOCAL, "kind": ord("W"), "pipe": mte2, "run": 32},
            {"type": abi.EV_PIPE_SYNC, "kind": ord("s"), "pipe": mte2, "aux": event},
            {"type": abi.EV_PIPE_SYNC, "kind": ord("w"), "pipe": v, "aux": event},
            {"type": abi.EV_LOCAL, "kind": ord("R"), "pipe": v, "run": 32}]
    ca = records_clocks.core_clocks(PackedEvents((_chunk(rows),)), True)
    assert ca is not None
    p_mte2, p_v = ca.pipe.tolist()
    assert ca.clock[1, p_mte2] >= ca.stamp[0]  # the V read has seen the MTE2 write
    assert ca.clock[0, p_v] < ca.stamp[1]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["accum-init", "aiv-barrier", "double-buffer-reuse", "flag-reuse", "floms",
                                  "reduce-early", "vecin-early-read"])
def test_the_gallery_in_cxx_gets_the_same_clocks_both_ways(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from mpnpu.harness.runner import make_variants, run_batch
    from mpnpu.operators.registry import load_operator

    if not have_compiler():
        pytest.skip("no C++ compiler")
    differ: list[str] = []
    taken = [0]

    def both(events: Any, auto_sync: bool = True, columns: bool = True) -> CoreAccesses:
        fast = records_clocks.core_clocks(events, auto_sync)
        slow = core_clocks(events, auto_sync, columns=False)
        if fast is not None:
            taken[0] += 1
            if _canonical(fast) != _canonical(slow):
                differ.append(f"{name}: core of {len(events)} events differs")
        return slow

    monkeypatch.setattr(intracore, "core_clocks", both)
    monkeypatch.setenv("MPNPU_RACECHECK_PROCESS", "0")  # (the analysis in this process, where the counts are)
    op = load_operator(f"{name}-cxx")
    run_batch(op, cases=3, repeat=1, variants=make_variants(op, ("incident", "fixed")), racecheck=True)
    assert differ == []
    assert taken[0] > 0


@pytest.mark.parametrize("seed", range(30))
def test_the_layout_is_decodings_without_the_events(seed: int) -> None:
    """RecordChunk.layout (what PackedEvents.time_index and Records.positions give without decoding)
    against decode: the time index, and each record's event, stages and flag sets' pipes included
    (some records untimed, so some functions' runs get no stage)."""
    rng = np.random.default_rng(500 + seed)
    rows = _random_stream(rng, int(rng.integers(1, 120)), True)
    for row in rows:
        if rng.random() < 0.3:
            row["t0"] = row["t1"] = 0
    if rng.random() < 0.3:
        rows.append({"type": 200, "site": 1})  # a record type this runtime does not know: no event
    chunk = _chunk(rows)
    events, index = chunk.decode()
    laid_index, position = chunk.layout()
    assert laid_index.tolist() == index.tolist()
    made = position >= 0
    assert made.tolist() == [row["type"] != 200 for row in rows]
    for r in np.flatnonzero(made).tolist():
        ev = events[int(position[r])]
        assert type(ev).__name__ != "StageEvent"
        assert ev == chunk.events_at(np.array([r]))[0][0]
    packed = PackedEvents((chunk, _chunk(rows[: len(rows) // 2 + 1])))
    decoded = PackedEvents(packed.parts)
    decoded.events()  # (decoding sets the time index from decode's)
    assert packed.time_index().tolist() == decoded.time_index().tolist()
    assert len(packed) == len(decoded.events())
