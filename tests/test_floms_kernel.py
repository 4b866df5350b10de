"""The FLOMS kernel on the emulated device, with every sync point in place, against the CPU golden.

Deterministic properties only: with S0/S1/S2/W5/W67 all in place the kernel must match the golden
(under precision.tolerances) on every call, whatever the scheduler does. Covered: every input dtype x
target dtype x mode; shapes that are not multiples of the tile sizes (partial tiles in M, N and K,
more tiles than ping-pong buffers); BT = 0; H = 0 (docs/operator-floms.md: logits_max 0, sum_exp V, predicted 0);
block_dim 1, 2, 3 (including cores with no rows or no tiles); targets on the shard boundaries;
vocab_start_index 0. Bad input raises UsageError before any GM is allocated or any core launched.
The caching allocator hands the next call the previous call's blocks, stale data included.

One module-scoped Device serves the module: block_dim 1 unless a test asks for another through
indirect parametrization (pytest then closes the cached device before making the new one; two live
Devices in one process would also collide on GM segment names, see the report). Every test runs
under conftest's ``no_leaks`` (no core process, no /dev/shm segment left behind by the test).
"""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import DeviceConfigError, UsageError
from mpnpu.kernels.fused_linear_online_max_sum.golden import golden
from mpnpu.kernels.fused_linear_online_max_sum.op import (
    TileSizes,
    fused_linear_online_max_sum,
)
from mpnpu.kernels.fused_linear_online_max_sum.precision import tolerances
from mpnpu.kernels.fused_linear_online_max_sum.spec import OUTPUT_NAMES, output_specs
from mpnpu.operators.compare import compare_outputs
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.dtypes import from_float32

pytestmark = [pytest.mark.usefixtures("no_leaks")]

#: GM segments big enough that every call of this module fits in the first one (a segment created
#: mid-test by the shared device would otherwise look like a leak to ``no_leaks``).
OPTIONS = RuntimeOptions(gm_segment_bytes=8 << 20, launch_timeout_s=60.0)
#: small tiles so that small shapes still span many tiles (3 x 4 for BT=37, V=101) and K steps
SMALL_TILES = TileSizes(base_m=16, base_n=32, base_k=16)

DTYPES = [(i, t) for i in ("float16", "bfloat16") for t in ("int32", "int64")]


@pytest.fixture(scope="module")
def dev(request):
    block_dim = getattr(request, "param", 1)
    with Device(block_dim, options=OPTIONS) as d:
        # Warm up: creates the GM segment and faults in the kernel's imports in every core.
        _run(d, *_inputs(8, 16, 32, "float16", "int32", 0))
        yield d


def _inputs(bt, h, v, input_dtype, target_dtype, start, *, end=None, seed=0):
    """Random storage arrays and a target vector that hits every boundary of [start, end).

    Targets (when BT allows): start, end - 1 (in), start - 1, end (out), then a mix of in-shard
    ids and ids far outside, shuffled.
    """
    end = start + v if end is None else end
    rng = np.random.default_rng(seed)
    x = from_float32(rng.standard_normal((bt, h)), input_dtype)
    w = from_float32(rng.standard_normal((v, h)) / np.sqrt(max(h, 1)), input_dtype)
    edges = [start, end - 1, start - 1, end]
    rest = np.where(rng.random(bt) < 0.7, rng.integers(start, max(end, start + 1), bt),
                    rng.integers(end, end + 5 * v + 1, bt))
    t = np.concatenate([edges, rest])[:bt]
    rng.shuffle(t)
    return x, w, t.astype(target_dtype), start, end, input_dtype


def _run(d, x, w, t, start, end, input_dtype, return_logits=False, **kw):
    return fused_linear_online_max_sum(d, x, w, t, start, end, input_dtype, return_logits, **kw)


def _assert_matches_golden(run, x, w, t, start, end, input_dtype, return_logits=False):
    gold = golden(x, w, t, start, end, input_dtype, return_logits)
    tol = tolerances({"input_dtype": input_dtype, "return_logits": return_logits, "input": x, "weight": w})
    out = run.outputs
    assert tuple(out) == OUTPUT_NAMES
    for name, g in gold.items():
        assert out[name].shape == g.shape and out[name].dtype == g.dtype, name
    cmp = compare_outputs(out, gold, tol)
    assert cmp.passed, cmp.to_dict()
    # Rows whose target is outside the shard are exactly 0, not merely close to it.
    mask = (t.astype(np.int64) < start) | (t.astype(np.int64) >= end)
    assert np.all(out["predicted_logits"][mask] == 0.0)
    return gold


# -- correctness with every sync in place --------------------------------------------------------


@pytest.mark.parametrize("return_logits", [False, True], ids=["memory-saving", "return_logits"])
@pytest.mark.parametrize("input_dtype,target_dtype", DTYPES)
def test_matches_golden_for_every_dtype_and_mode(dev, input_dtype, target_dtype, return_logits) -> None:
    # 37 x 45 x 101 with 16 x 32 x 16 tiles: partial tiles in M, N and K; 12 tiles > 2 ping-pong buffers.
    args = _inputs(37, 45, 101, input_dtype, target_dtype, start=2 * 101)
    run = _run(dev, *args, return_logits, tiles=SMALL_TILES)
    assert run.tiling.n_tiles == 12
    _assert_matches_golden(run, *args, return_logits)


@pytest.mark.parametrize("return_logits", [False, True], ids=["memory-saving", "return_logits"])
def test_default_tiles_with_shapes_not_multiples_of_them(dev, return_logits) -> None:
    # With the default tiles (128 x 256 x 128): 2 x 2 tiles, the last ones partial, K 128 + 32.
    args = _inputs(150, 160, 300, "bfloat16", "int64", start=300)
    run = _run(dev, *args, return_logits)
    t = run.tiling
    assert (t.n_tiles_m, t.n_tiles_n) == (2, 2) and 150 % t.base_m and 300 % t.base_n and 160 % t.base_k
    _assert_matches_golden(run, *args, return_logits)


@pytest.mark.parametrize("return_logits", [False, True], ids=["memory-saving", "return_logits"])
def test_vocab_start_index_zero(dev, return_logits) -> None:
    # Targets include -1 (start - 1), 0, V - 1 and V.
    args = _inputs(29, 24, 64, "float16", "int64", start=0, seed=3)
    assert -1 in args[2] and 0 in args[2] and 63 in args[2] and 64 in args[2]
    _assert_matches_golden(_run(dev, *args, return_logits, tiles=SMALL_TILES), *args, return_logits)


def test_shard_narrower_than_weight(dev) -> None:
    # end - start < V: weight rows past the shard's end exist but their ids are out of shard.
    args = _inputs(40, 32, 96, "float16", "int32", start=10, end=80, seed=4)
    gold = _assert_matches_golden(_run(dev, *args, tiles=SMALL_TILES), *args)
    assert gold["target_mask"].any() and not np.all(gold["target_mask"] == 255)


@pytest.mark.parametrize("return_logits", [False, True], ids=["memory-saving", "return_logits"])
def test_bt_zero(dev, return_logits) -> None:
    args = _inputs(0, 16, 40, "bfloat16", "int32", start=40)
    run = _run(dev, *args, return_logits, tiles=SMALL_TILES)
    specs = output_specs(0, 40, "bfloat16", "int32", return_logits)
    for name, (shape, _) in specs.items():
        assert run.outputs[name].shape == shape, name
    _assert_matches_golden(run, *args, return_logits)


@pytest.mark.parametrize("return_logits", [False, True], ids=["memory-saving", "return_logits"])
def test_h_zero(dev, return_logits) -> None:
    v = 70
    args = _inputs(19, 0, v, "float16", "int64", start=v)
    # H = 0 after a call that left other values in the same blocks: the zeros must be written.
    _run(dev, *_inputs(19, 8, v, "float16", "int64", start=v), return_logits, tiles=SMALL_TILES)
    run = _run(dev, *args, return_logits, tiles=SMALL_TILES)
    out = run.outputs
    assert np.all(out["logits_max"] == 0.0)
    assert np.all(out["sum_exp_logits"] == float(v))
    assert np.all(out["predicted_logits"] == 0.0)
    if return_logits:
        assert out["vocab_parallel_logits"].shape == (19, v) and not out["vocab_parallel_logits"].any()
    _assert_matches_golden(run, *args, return_logits)


def test_results_are_reproducible_between_other_calls(dev) -> None:
    """With every sync in place a call's outputs do not depend on what the blocks held before."""
    a = _inputs(33, 40, 90, "bfloat16", "int32", start=90, seed=5)
    b = _inputs(33, 40, 90, "bfloat16", "int32", start=90, seed=6)  # same shapes: same blocks
    first = _run(dev, *a, tiles=SMALL_TILES).outputs
    _run(dev, *b, tiles=SMALL_TILES)
    again = _run(dev, *a, tiles=SMALL_TILES).outputs
    for name in OUTPUT_NAMES:
        assert np.array_equal(first[name], again[name]), name


@pytest.mark.slow
@pytest.mark.parametrize("dev", [2, 3], indirect=True, ids=["block_dim=2", "block_dim=3"])
def test_block_dim_2_and_3(dev) -> None:
    assert len(dev.core_pids()) == 3 * dev.block_dim
    # 12 tiles over the cube cores; rows over 2*block_dim vector cores, the last without rows.
    args = _inputs(37, 45, 101, "float16", "int64", start=101)
    _assert_matches_golden(_run(dev, *args, tiles=SMALL_TILES), *args)
    args = _inputs(70, 100, 300, "bfloat16", "int32", start=0, seed=1)
    _assert_matches_golden(_run(dev, *args, True), *args, True)
    # One tile only (cube cores 1.. have none), 5 rows (vector cores 1.. have none).
    args = _inputs(5, 20, 30, "bfloat16", "int32", start=30, seed=2)
    run = _run(dev, *args, tiles=SMALL_TILES)
    assert run.tiling.n_tiles == 1
    _assert_matches_golden(run, *args)


# -- bad input: UsageError before anything is allocated or launched ----------------------------


def _bad_calls():
    x, w, t, start, end, dt = _inputs(16, 8, 32, "float16", "int32", start=32)
    good = dict(input=x, weight=w, target=t, vocab_start_index=start, vocab_end_index=end, input_dtype=dt)
    f32 = x.astype(np.float32)
    yield "input 1-D", dict(good, input=x[0])
    yield "input 3-D", dict(good, input=x[None])
    yield "weight H differs", dict(good, weight=w[:, :7])
    yield "target length differs", dict(good, target=t[:15])
    yield "target 2-D", dict(good, target=t[:, None])
    yield "V = 0", dict(good, weight=w[:0], vocab_start_index=0, vocab_end_index=0)
    yield "H > 65534", dict(good, input=np.zeros((1, 65535), np.float16), weight=np.zeros((32, 65535), np.float16),
                            target=t[:1])
    yield "input stored as float32", dict(good, input=f32)
    yield "weight dtype differs from input", dict(good, weight=from_float32(w.astype(np.float32), "bfloat16"))
    yield "float32 input dtype", dict(good, input=f32, weight=w.astype(np.float32), input_dtype="float32")
    yield "unknown input dtype", dict(good, input_dtype="float8")
    yield "float target", dict(good, target=t.astype(np.float32))
    yield "int16 target", dict(good, target=t.astype(np.int16))
    yield "list input", dict(good, input=x.tolist())
    yield "start > end", dict(good, vocab_start_index=40, vocab_end_index=39)
    yield "negative start", dict(good, vocab_start_index=-1, vocab_end_index=31)
    yield "shard wider than V", dict(good, vocab_start_index=0, vocab_end_index=33)
    yield "float start", dict(good, vocab_start_index=32.0)
    yield "bool end", dict(good, vocab_start_index=0, vocab_end_index=True)
    for tiles in (TileSizes(base_m=15), TileSizes(base_m=0), TileSizes(base_n=-1), TileSizes(base_k=0),
                  TileSizes(base_k=2.5)):
        yield f"tiles {tiles}", dict(good, tiles=tiles)
    yield "unknown probe", dict(good, probe="no-such-probe")
    yield "unknown sync point in drop_syncs", dict(good, drop_syncs=("S1", "S9"))
    yield "drop_syncs as a bare string", dict(good, drop_syncs="S1")


BAD_CALLS = list(_bad_calls())


@pytest.mark.parametrize("kwargs", [c[1] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_input_is_a_usage_error_before_anything_runs(dev, monkeypatch, kwargs) -> None:
    def must_not_run(*a, **k):
        raise AssertionError("GM was allocated or a launch started for a call with bad input")

    before = dev.gm.stats()
    monkeypatch.setattr(dev.gm, "alloc", must_not_run)
    monkeypatch.setattr(dev, "launch", must_not_run)
    with pytest.raises(UsageError) as info:
        fused_linear_online_max_sum(dev, **kwargs)
    assert "\n" not in str(info.value) and str(info.value)
    assert dev.gm.stats() == before


@pytest.mark.parametrize("block_dim", [0, -1, 97, True, 1.5])
def test_bad_block_dim_is_a_device_config_error(block_dim) -> None:
    with pytest.raises(DeviceConfigError) as info:
        Device(block_dim, options=OPTIONS)
    assert isinstance(info.value, UsageError)  # the CLIs turn it into exit code 2
    if block_dim == 97:  # (a launch wider than the cores runs in waves, up to 4 of them)
        assert "4 waves of the 24 AI cores" in str(info.value)


# -- the caching allocator hands the next call stale blocks --------------------------------------


def test_next_call_gets_the_previous_calls_blocks_with_their_data(dev) -> None:
    """What turns a too-early read into a wrong answer (docs/incident.md, "Why a batch"): nothing is
    cleared between calls.

    Call A runs normally. Replaying its allocations by hand hands out A's blocks with A's outputs in
    them. Call B (same shapes, other targets) with the masked_target / target_mask copy-outs disabled
    (probe only-predicted) returns A's masked_target and target_mask, not its own, while its
    predicted_logits (still written) is B's own and correct.
    """
    a = _inputs(48, 32, 64, "float16", "int32", start=64, seed=10)
    b = _inputs(48, 32, 64, "float16", "int32", start=64, seed=11)
    gold_b = golden(*b)
    run_a = _run(dev, *a, tiles=SMALL_TILES)
    out_a = run_a.outputs
    assert not np.array_equal(out_a["masked_target"], gold_b["masked_target"])
    assert not np.array_equal(out_a["target_mask"], gold_b["target_mask"])

    # Replay op.py's allocation order through the device: the same blocks come back, not cleared.
    x, w, t = a[0], a[1], a[2]
    specs = output_specs(48, 64, "float16", "int32", False)
    with dev.scope() as gm:
        for name, arr in (("input", x), ("weight", w), ("target", t)):
            gm.empty(name, arr.shape, arr.dtype if name == "target" else "float16")
        outs = {name: gm.empty(name, shape, dtype) for name, (shape, dtype) in specs.items()}
        ws = gm.empty("workspace", run_a.tiling.workspace_bytes, "uint8")
        assert np.array_equal(dev.to_host(outs["masked_target"]), out_a["masked_target"])
        assert np.array_equal(dev.to_host(outs["target_mask"]), out_a["target_mask"])
        assert np.array_equal(dev.to_host(outs["logits_max"]), out_a["logits_max"])
        # The workspace's masked-target hand-off (what CVProcess reads) still holds A's values too.
        tl = run_a.tiling
        ws_masked = dev.to_host(ws)[tl.masked_target_offset:tl.masked_target_offset + 48 * 4].view(np.int32)
        assert np.array_equal(ws_masked, out_a["masked_target"])

    out_b = _run(dev, *b, tiles=SMALL_TILES, probe="only-predicted").outputs
    assert np.array_equal(out_b["masked_target"], out_a["masked_target"])  # stale: A's, not B's
    assert np.array_equal(out_b["target_mask"], out_a["target_mask"])
    tol = tolerances({"input_dtype": "float16", "return_logits": False, "input": b[0], "weight": b[1]})
    cmp = compare_outputs({"predicted_logits": out_b["predicted_logits"]},
                          {"predicted_logits": gold_b["predicted_logits"]},
                          {"predicted_logits": tol["predicted_logits"]})
    assert cmp.passed, cmp.to_dict()
