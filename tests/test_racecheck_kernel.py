"""Racecheck end to end on the real FLOMS kernel (issue 5): real core processes, real traces.

Happens-before is decided by the kernel's syncs, never by how the OS interleaved the cores, so
every assertion here is deterministic: a dropped sync point is reported on *every* launch — also
on launches whose outputs came out right — and the fixed kernel reports nothing, ever.

Cases are small (BT 65..128, V 256..768: 2 x 1..3 tiles of 64 x 256, at most 6 per cube core), so
that a dropped flag wait cannot overflow a 4-bit flag counter, and, at block_dim 1, the second row
of tiles is always split differently by TargetProcess (rows 0..rpv / rpv..BT, rpv <= 64) and by
CVProcess (tile halves): the masked-target hand-off always crosses cores.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import random

import numpy as np
import pytest

from mpnpu import api
from mpnpu.cli.options import DEFAULT_OPERATOR
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.kernels.fused_linear_online_max_sum.cases import CaseSpace
from mpnpu.kernels.fused_linear_online_max_sum.op import TileSizes
from mpnpu.operators.registry import load_operator
from mpnpu.racecheck import HazardLog, check_case, check_launch, check_launch_with
from mpnpu.report.hazards import format_hazard_log, format_hazards
from mpnpu.report.text.batch import format_batch
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.dtypes import get_dtype
from mpnpu.runtime.gm.tensor import GlobalTensor, c_strides
from mpnpu.runtime.trace import ATOMIC, WRITE, Access, byte_ranges

pytestmark = [pytest.mark.usefixtures("no_leaks", "time_limit"), pytest.mark.time_limit(60)]

SMALL = CaseSpace(bt=(65, 128), v=(256, 768))
# Tiles pinned (not the batch defaults) so the reasoning in the module docstring holds.
OP = dataclasses.replace(load_operator(DEFAULT_OPERATOR), space=SMALL, tiles=TileSizes(64, 256, 64))
MASKED = "workspace.masked_target"


@pytest.fixture
def dev1():
    with Device(1) as dev:
        yield dev


def _signature(hazards) -> list[tuple]:
    """What must be the same on every launch: everything but counts that depend on the case."""
    return sorted(
        (h.kind, h.tensor, h.first.short, h.first.stage, h.first.site, h.first.access,
         h.second.short, h.second.stage, h.second.site, h.second.access, h.missing_sync)
        for h in hazards
    )


def _find(hazards, kind, tensor, first_stage, second_stage, scope="GM"):
    return [h for h in hazards
            if (h.kind, h.tensor, h.first.stage, h.second.stage, h.scope) == (kind, tensor, first_stage, second_stage,
                                                                              scope)]


def _check_read_backs(hazards, dropped, text) -> None:
    """Hazards inside a core on GM: a core reading back through MTE2 what its MTE3 wrote, with
    nothing between them but a dropped SyncAll (which drains the core's pipes)."""
    for h in hazards:
        if h.scope != "core":
            continue
        assert h.first.short == h.second.short and all(a == b for a, b in h.core_pairs), text
        assert (h.first.pipe, h.second.pipe) in {("PIPE_MTE3", "PIPE_MTE2"), ("PIPE_MTE2", "PIPE_MTE3"),
                                                 ("PIPE_MTE3", "PIPE_FIX"), ("PIPE_FIX", "PIPE_MTE3")}, text
        assert h.dropped_syncs and set(h.dropped_syncs) <= set(dropped), text


# -- the incident -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_incident_hazard_reported_on_every_launch_even_passing_ones(dev1):
    """Every launch without S1 has the masked-target RAW; the outputs were right on some of them."""
    passed = 0
    signatures = {}
    n = 16
    for i in range(n):
        case = OP.make_case(0, i % 4)  # 4 cases, 4 launches each: same case, same trace shape
        chk = check_case(OP, dev1, case, drop_syncs={"S1"})
        passed += chk.passed
        raw = _find(chk.hazards, "RAW", MASKED, "TargetProcess", "CVProcess")
        text = format_hazards(chk.hazards)
        assert len(raw) == 1, f"launch {i}: {text}"
        h = raw[0]
        assert (h.first.access, h.second.access) == ("WRITE", "READ")
        assert h.first.short.startswith("aiv") and h.second.short.startswith("aiv")
        assert h.first.short != h.second.short
        assert h.dropped_syncs == ("S1",)
        assert h.missing_sync == "no SyncAll between TargetProcess and CVProcess (sync point S1 was dropped)"
        # And inside each vector core: CVProcess reads back through MTE2 rows of masked_target its
        # own TargetProcess wrote through MTE3; only S1 (its SyncAll drains the pipes) ordered them.
        [back] = _find(chk.hazards, "RAW", MASKED, "TargetProcess", "CVProcess", scope="core")
        assert (back.first.pipe, back.second.pipe) == ("PIPE_MTE3", "PIPE_MTE2"), text
        assert back.dropped_syncs == ("S1",), text
        _check_read_backs(chk.hazards, {"S1"}, text)
        # Only S1 is missing: nothing else races (atomics into predicted_logits included).
        assert len(chk.hazards) == 2, text
        if not chk.passed:
            assert chk.verdict.failed_outputs == ["predicted_logits"]
        signatures.setdefault(case.index, set()).add(tuple(_signature(chk.hazards)))
    assert passed >= 1, "no launch passed the golden comparison; the point is that passing ones are caught too"
    # The same case gives the same report, whichever way the cores happened to run.
    assert all(len(s) == 1 for s in signatures.values()), signatures


# -- each sync point --------------------------------------------------------------------------------

# dropped -> (kind, tensor, first stage, second stage, first access, second access, sync named)
EXPECTED = {
    ("S0",): [
        # Init clears the target outputs in round-robin 32-byte blocks; TargetProcess writes them
        # by 8-row chunks on other cores.
        ("WAW", "masked_target", "InitOutputAndWorkspace", "TargetProcess", "WRITE", "WRITE", "S0"),
        ("WAW", "target_mask", "InitOutputAndWorkspace", "TargetProcess", "WRITE", "WRITE", "S0"),
    ],
    ("S0", "S1"): [
        ("WAW", "predicted_logits", "InitOutputAndWorkspace", "CVProcess", "WRITE", "ATOMIC", "S0"),
        ("RAW", "workspace.online_max", "InitOutputAndWorkspace", "CVProcess", "WRITE", "READ", "S0"),
        ("RAW", "workspace.online_sum", "InitOutputAndWorkspace", "CVProcess", "WRITE", "READ", "S0"),
        ("RAW", MASKED, "TargetProcess", "CVProcess", "WRITE", "READ", "S1"),
    ],
    ("S2",): [
        ("RAW", "predicted_logits", "CVProcess", "AllReduceProcess", "ATOMIC", "READ", "S2"),
        ("WAW", "predicted_logits", "CVProcess", "AllReduceProcess", "ATOMIC", "WRITE", "S2"),
        ("RAW", "workspace.online_max", "CVProcess", "AllReduceProcess", "WRITE", "READ", "S2"),
        ("RAW", "workspace.online_sum", "CVProcess", "AllReduceProcess", "WRITE", "READ", "S2"),
    ],
    ("W5",): [
        ("RAW", "workspace.tile", "CVProcess", "CVProcess", "WRITE", "READ", "W5"),
    ],
    ("W67",): [
        ("WAR", "workspace.tile", "CVProcess", "CVProcess", "READ", "WRITE", "W67"),
    ],
}


@pytest.mark.slow
@pytest.mark.parametrize("dropped", list(EXPECTED), ids=lambda d: "+".join(d))
def test_dropped_sync_point_reports_its_hazard(dev1, dropped):
    for i in range(3):
        case = OP.make_case(1, i)
        chk = check_case(OP, dev1, case, drop_syncs=set(dropped))
        text = format_hazards(chk.hazards)
        for kind, tensor, s1, s2, a1, a2, sync in EXPECTED[dropped]:
            found = _find(chk.hazards, kind, tensor, s1, s2)
            assert found, f"{dropped} case {i}: no {kind} on {tensor} between {s1} and {s2}\n{text}"
            for h in found:
                assert (h.first.access, h.second.access) == (a1, a2), text
                assert sync in h.dropped_syncs, text
                assert f"sync point{'s' if len(h.dropped_syncs) > 1 else ''} " in h.missing_sync
                assert all(a != b for a, b in h.core_pairs), "a core never races with itself"
        _check_read_backs(chk.hazards, dropped, text)
        for h in chk.hazards:
            assert set(h.dropped_syncs) <= set(dropped), text  # never blames a sync that was there
        if dropped == ("W5",) or dropped == ("W67",):
            # The cube writes the tile buffer, its own vector cores read it.
            for h in chk.hazards:
                assert h.scope == "GM", text
                cores = {h.first.short[:3], h.second.short[:3]}
                assert cores == {"aic", "aiv"}, text
                # the flag whose wait was dropped is named, with its set and wait lines
                assert h.missing_sync.startswith("the CrossCoreWaitFlag("), h.missing_sync
                assert "that would take the set at fused_linear_online_max_sum/kernel.py:" in h.missing_sync
                assert dropped[0] in h.missing_sync


def test_s0_alone_reports_only_init_against_target_process(dev1):
    """Dropping S0 alone leaves Init -> CVProcess ordered through S1: only the target outputs,
    which Init clears and TargetProcess writes, are in conflict."""
    for i in range(2):
        chk = check_case(OP, dev1, OP.make_case(1, i), drop_syncs={"S0"})
        assert {(h.tensor, h.first.stage, h.second.stage) for h in chk.hazards} == {
            ("masked_target", "InitOutputAndWorkspace", "TargetProcess"),
            ("target_mask", "InitOutputAndWorkspace", "TargetProcess"),
        }, format_hazards(chk.hazards)


# -- no false positives -----------------------------------------------------------------------------


@pytest.mark.slow
def test_fixed_kernel_has_no_hazard_over_a_batch():
    """The fixed kernel over default cases (the full default batch is 50 x 5: see the report)."""
    op = load_operator(DEFAULT_OPERATOR)
    result = run_batch(op, cases=12, repeat=2, variants=make_variants(op, ["fixed"]), block_dim=1, racecheck=True)
    v = result.variants["fixed"]
    assert v.launch_errors == 0
    assert v.hazard_log.launches_analyzed == 24
    assert len(v.hazard_log) == 0, format_hazard_log(v.hazard_log)
    assert result.to_dict()["variants"]["fixed"]["hazards"] == []


def _overlap(a: Access, b: Access) -> bool:
    return a.segment == b.segment and any(s1 < e2 and s2 < e1 for s1, e1 in a.ranges for s2, e2 in b.ranges)


def test_no_false_positive_from_atomics_or_a_cores_own_accesses():
    """block_dim 2, fixed kernel: the trace really holds (1) atomic adds into predicted_logits
    from several cores on the same bytes, unordered by any sync, and (2) cores re-reading and
    re-writing their own bytes; neither is a hazard."""
    case = OP.make_case(2, 0)
    with Device(2) as dev:
        chk = check_case(OP, dev, case)
    assert chk.passed
    assert chk.hazards == [], format_hazards(chk.hazards)
    events = chk.launch.trace.events
    for evs in events:  # the Access contract, as the parent receives a trace
        for e in evs:
            if isinstance(e, Access):
                assert isinstance(e.ranges, tuple) and all(type(r) is tuple and len(r) == 2 for r in e.ranges)
                assert all(a[1] < b[0] for a, b in zip(e.ranges, e.ranges[1:])), e
    atomics = [(c, e) for c, evs in enumerate(events) for e in evs
               if isinstance(e, Access) and e.kind == ATOMIC and e.tensor == "predicted_logits"]
    assert any(c1 != c2 and _overlap(a, b) for c1, a in atomics for c2, b in atomics), "no cross-core atomic overlap"
    own = 0
    for evs in events:
        acc = [e for e in evs if isinstance(e, Access) and e.tensor == "workspace.online_max"]
        own += sum(1 for i, a in enumerate(acc) for b in acc[i + 1:] if WRITE in (a.kind, b.kind) and _overlap(a, b))
    assert own > 0, "no core re-accessed its own online_max"


# -- reports ----------------------------------------------------------------------------------------


def test_batch_json_and_text_name_cores_stages_and_the_missing_sync():
    result = run_batch(OP, cases=3, repeat=1, variants=make_variants(OP, ["incident", "fixed"]), block_dim=1,
                       racecheck=True)
    d = json.loads(json.dumps(result.to_dict()))
    assert d["racecheck"] is True
    assert d["variants"]["fixed"]["hazards"] == []
    hazards = d["variants"]["incident"]["hazards"]
    (h,) = [h for h in hazards if "scope" not in h]  # between cores: GM hazards carry no "scope"
    (back,) = [h for h in hazards if h.get("scope") == "core"]  # a core reading back its own write
    assert (back["kind"], back["tensor"], back["first"]["pipe"], back["second"]["pipe"]) == (
        "RAW", MASKED, "PIPE_MTE3", "PIPE_MTE2")
    assert back["dropped_syncs"] == ["S1"] and back["first"]["core"] == back["second"]["core"]
    assert (h["kind"], h["tensor"], h["launches"]) == ("RAW", MASKED, 3)
    assert h["count"] >= 3
    for side, stage, access in (("first", "TargetProcess", "WRITE"), ("second", "CVProcess", "READ")):
        assert h[side]["stage"] == stage and h[side]["access"] == access
        assert h[side]["core"].startswith("vector core ")
        assert h[side]["site"].startswith("fused_linear_online_max_sum/kernel.py:")
    assert "between TargetProcess and CVProcess" in h["missing_sync"]
    assert "sync point S1 was dropped" in h["missing_sync"]
    assert h["dropped_syncs"] == ["S1"]

    text = format_batch(result, OP.sync_points)
    assert f"====== ERROR: Potential RAW hazard detected at GM tensor {MASKED}[" in text
    assert "(x" in text and "in 3 of 3 launches):" in text
    assert "WRITE by vector core" in text and "in TargetProcess at fused_linear_online_max_sum/kernel.py:" in text
    assert "READ  by vector core" in text and "in CVProcess at fused_linear_online_max_sum/kernel.py:" in text
    assert "missing sync: no SyncAll between TargetProcess and CVProcess (sync point S1 was dropped)" in text
    assert "====== SUMMARY: 0 hazards (0 RAW, 0 WAR, 0 WAW) in 3 launches checked" in text


# -- check_launch on a kernel of its own ------------------------------------------------------------


def handoff(buf, out, acc) -> None:
    """aiv0 writes buf; SyncAll "S"; aiv1 reads it. Both vector cores atomically add into acc."""
    if not api.is_aiv():
        api.sync_all(name="S")
        return
    v = api.get_block_idx()
    local = api.alloc_local(api.TPosition.VECCALC, 8, "int32")
    if v == 0:
        local[...] = 7
        api.data_copy(buf, local)
    api.set_atomic_add()
    api.data_copy(acc, local)
    api.set_atomic_none()
    api.sync_all(name="S")
    if v == 1:
        api.data_copy(local, buf)
        api.data_copy(out, local)


def test_check_launch(dev1):
    with dev1.scope() as gm:
        buf, out, acc = (gm.to_device(n, np.zeros(8, np.int32)) for n in ("buf", "out", "acc"))
        ref = "tests.test_racecheck_kernel:handoff"
        assert check_launch(dev1, ref, buf, out, acc) == []
        (h,) = check_launch_with(dev1, LaunchOptions(drop_syncs={"S"}), ref, buf, out, acc)
    assert (h.kind, h.tensor, h.first.short, h.second.short) == ("RAW", "buf", "aiv0", "aiv1")
    assert h.first.site.endswith("test_racecheck_kernel.py:" + str(handoff.__code__.co_firstlineno + 9))
    assert h.missing_sync == "no sync between the two accesses in kernel (sync point S was dropped)"
    log = HazardLog()
    log.add([h])
    assert "in 1 of 1 launches" in format_hazard_log(log)


# -- the tracing fast path ----------------------------------------------------------------------------


def _byte_ranges_reference(t: GlobalTensor):
    """Every element's bytes, merged: the definition byte_ranges must meet."""
    if t.size == 0:
        return ()
    idx = np.indices(t.shape).reshape(t.ndim, -1).T if t.ndim else np.zeros((1, 0), np.int64)
    starts = np.unique(t.offset + idx @ np.array(t.strides, dtype=np.int64).reshape(-1))
    out = []
    for s in starts.tolist():
        e = s + t.dtype.itemsize
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return tuple(out)


def test_byte_ranges_matches_its_definition():
    rng = random.Random(5)
    for _ in range(3000):
        d = get_dtype(rng.choice(["float16", "float32", "uint8", "int64"]))
        shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 4)))
        t = GlobalTensor("x", d, shape, "s", 64, c_strides(shape, d.itemsize), 64, 1 << 20)
        index = []
        for dim in shape:
            if rng.random() < 0.2:
                index.append(rng.randrange(dim))
            else:
                a = rng.randrange(dim)
                index.append(slice(a, rng.randint(a, dim), rng.choice([1, 1, 1, 2, 3])))
        view = t[tuple(index)]
        expected = _byte_ranges_reference(view)
        assert byte_ranges(view) == expected, (shape, index)
        # What a traced core records, as the parent receives it.
        shipped = pickle.loads(pickle.dumps(byte_ranges(view, deferred=True)))
        assert isinstance(shipped, tuple) and shipped == expected, (shape, index)
