"""The FLOMS case generator, and the FLOMS tolerances measured on generated cases.

The precision tests simulate the device's numerics (float32 matmul; in memory-saving mode the tile
rounded to the input dtype before the float32 max/exp) and check two things on many cases: the
tolerances pass every correct result (sufficient), and a single wrongly gathered logit, the
incident's symptom, still fails predicted_logits with a large relative error (tight enough).
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest

from mpnpu.errors import UsageError
from mpnpu.kernels.fused_linear_online_max_sum.cases import (
    Case,
    CaseSpace,
    generate_cases,
    make_case,
)
from mpnpu.kernels.fused_linear_online_max_sum.golden import golden, logits
from mpnpu.kernels.fused_linear_online_max_sum.precision import tolerances
from mpnpu.kernels.fused_linear_online_max_sum.spec import check_inputs
from mpnpu.operators.compare import Tolerance, compare_outputs, relative_error
from mpnpu.runtime.dtypes import from_float32, round_to, to_float32

BOTH_MODES = CaseSpace(return_logits=(False, True))


def _in_shard(case: Case) -> np.ndarray:
    t = case.target.astype(np.int64)
    return (t >= case.vocab_start_index) & (t < case.vocab_end_index)


# -- reproducibility and variety ---------------------------------------------------------------


def test_make_case_is_a_function_of_seed_and_index() -> None:
    a, b = make_case(5, 7), generate_cases(5, 9)[7]
    assert a.describe() == b.describe()
    for name in ("input", "weight", "target"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    other = make_case(6, 7)
    assert not (other.input.shape == a.input.shape and np.array_equal(other.input, a.input))


def test_every_case_has_different_data() -> None:
    cases = generate_cases(0, 30, replace(CaseSpace(), bt=(1, 4), h=(32, 33), v=(256, 257)))
    assert len({c.input.tobytes() for c in cases}) == 30
    assert len({c.weight.tobytes() for c in cases}) == 30


def test_cases_respect_the_space_and_the_contract() -> None:
    space = replace(CaseSpace(), bt=(3, 40), h=(5, 9), v=(16, 40)).only("bfloat16", "int32")
    for case in generate_cases(1, 25, space):
        assert 3 <= case.bt <= 40 and 5 <= case.h <= 9 and 16 <= case.v <= 40
        assert (case.input_dtype, case.target_dtype, case.return_logits) == ("bfloat16", "int32", False)
        assert case.input.dtype == np.uint16 and case.target.dtype == np.int32
        assert case.vocab_end_index - case.vocab_start_index == case.v
        assert case.vocab_start_index % case.v == 0  # one shard of a global vocab
        check_inputs(*case.inputs()[:6], case.target_dtype)


def test_every_case_has_targets_inside_and_outside_the_shard() -> None:
    for case in generate_cases(2, 40, replace(CaseSpace(), bt=(2, 12), v=(8, 16))):
        inside = _in_shard(case)
        assert inside.any() and not inside.all(), case.describe()
        assert (case.target >= 0).all()  # targets are global vocab ids


def test_boundary_targets_appear() -> None:
    space = replace(CaseSpace(), p_boundary=1.0, bt=(50, 50), v=(8, 8))
    seen: set[str] = set()
    for case in generate_cases(3, 10, space):
        s, e = case.vocab_start_index, case.vocab_end_index
        edges = {s: "start", e - 1: "last", e: "end", s - 1: "before"}
        seen |= {edges[t] for t in case.target.tolist()}
    assert seen == {"start", "last", "end", "before"}


def test_only_forces_one_dtype_combination() -> None:
    space = CaseSpace().only("float16", "int64", return_logits=True)
    combos = {(c.input_dtype, c.target_dtype, c.return_logits) for c in generate_cases(4, 12, space)}
    assert combos == {("float16", "int64", True)}
    assert {c.input_dtype for c in generate_cases(4, 12)} == {"float16", "bfloat16"}


def test_case_is_frozen_and_its_arrays_read_only() -> None:
    case = make_case(0, 0)
    with pytest.raises(FrozenInstanceError):
        case.bt = 3  # type: ignore[misc]
    with pytest.raises(ValueError):
        case.input[0, 0] = 1


def test_describe_is_one_line() -> None:
    text = make_case(0, 3).describe()
    assert text.startswith("case 3 (seed 0): BT=") and "\n" not in text


def test_degenerate_shapes_generate() -> None:
    space = replace(CaseSpace(), bt=(0, 1), h=(0, 0), v=(1, 1))
    for case in generate_cases(0, 6, space):
        out = golden(*case.inputs())
        assert out["sum_exp_logits"].tolist() == [1.0] * case.bt


@pytest.mark.parametrize(
    "change",
    [
        dict(bt=(5, 2)),
        dict(v=(0, 4)),
        dict(h=(1, 70000)),
        dict(input_dtypes=("float32",)),
        dict(target_dtypes=()),
        dict(p_outside=1.5),
        dict(n_shards=(1, 1)),
        dict(target_gap=(0.0, 0.1)),
    ],
)
def test_case_space_rejects_bad_settings(change: dict) -> None:
    with pytest.raises(UsageError):
        CaseSpace(**change)


def test_make_case_rejects_negative_seed() -> None:
    with pytest.raises(UsageError):
        make_case(-1, 0)


# -- realism: targets near the row max, moderate |L| ---------------------------------------------


def test_target_logits_sit_just_below_the_row_max() -> None:
    gaps, spreads, abs_max = [], [], []
    for case in generate_cases(7, 12):
        lg = logits(case.input, case.weight, case.input_dtype)
        rows = np.flatnonzero(_in_shard(case))
        cols = case.target[rows].astype(np.int64) - case.vocab_start_index
        gaps += list(lg[rows].max(axis=1) - lg[rows, cols])
        spreads += list(lg[rows].max(axis=1) - np.median(lg[rows], axis=1))
        abs_max.append(np.abs(lg).max())
    # The 0.3 cap is the top of target_gap; input rounding may push a few rows a little past it.
    assert np.median(gaps) < 0.05 and np.quantile(gaps, 0.95) < 0.3
    assert np.median(spreads) > 2.5
    assert 2.0 < np.median(abs_max) and max(abs_max) < 12.0


# -- precision: tolerances sufficient for correct device numerics, tight enough for wrong gathers -


def _device(case: Case) -> tuple[dict, np.ndarray, np.ndarray]:
    """Correct outputs computed the way the device does; also the tile the vector cores saw and
    the row maxes. Integer outputs are taken from the golden: they involve no arithmetic."""
    x, w = to_float32(case.input, case.input_dtype), to_float32(case.weight, case.input_dtype)
    lg = x @ w.T  # float32 accumulation, like the cube
    tile = lg if case.return_logits else round_to(lg, case.input_dtype)
    row_max = tile.max(axis=1)
    sum_exp = np.exp(tile - row_max[:, None]).sum(axis=1, dtype=np.float32)
    inside = _in_shard(case)
    col = np.where(inside, case.target.astype(np.int64) - case.vocab_start_index, 0)
    predicted = np.where(inside, tile[np.arange(case.bt), col] - row_max, 0).astype(np.float32)
    out = dict(golden(*case.inputs()))
    out.update(logits_max=row_max, sum_exp_logits=sum_exp, predicted_logits=predicted)
    if case.return_logits:
        out["vocab_parallel_logits"] = from_float32(lg, case.input_dtype)
    return out, tile, row_max


def _sim_cases() -> list[Case]:
    return generate_cases(11, 40, BOTH_MODES)


@pytest.mark.slow
def test_tolerances_pass_simulated_device_numerics() -> None:
    for case in _sim_cases():
        actual, _, _ = _device(case)
        result = compare_outputs(actual, golden(*case.inputs()), tolerances(case))
        assert result.passed, (case.describe(), result.failed_outputs)


def test_storage_rounding_allowance_is_needed() -> None:
    """Without the allowance, memory-saving bfloat16 cases fail although the device is correct."""
    failures = 0
    for case in generate_cases(12, 10, CaseSpace().only("bfloat16")):
        actual, _, _ = _device(case)
        base = {n: (Tolerance(1e-3, 1e-5) if not t.exact else t) for n, t in tolerances(case).items()}
        failures += not compare_outputs(actual, golden(*case.inputs()), base).passed
    assert failures >= 5


def _wrong_gather(case: Case, actual: dict, tile: np.ndarray, row_max: np.ndarray, row: int,
                  rng: np.random.Generator) -> dict:
    """``actual`` with predicted_logits[row] gathered from a wrong column (as with a stale
    masked_target)."""
    right = int(case.target[row]) - case.vocab_start_index
    col = (right + 1 + int(rng.integers(case.v - 1))) % case.v  # any column but the right one
    bad = actual["predicted_logits"].copy()
    bad[row] = tile[row, col] - row_max[row]
    return {**actual, "predicted_logits": bad}


@pytest.mark.slow
def test_a_single_wrong_gather_fails_predicted_logits_only() -> None:
    rng = np.random.default_rng(0)
    tried = caught = 0
    for case in _sim_cases():
        actual, tile, row_max = _device(case)
        gold, tol = golden(*case.inputs()), tolerances(case)
        for row in rng.choice(np.flatnonzero(_in_shard(case)), size=3):
            result = compare_outputs(_wrong_gather(case, actual, tile, row_max, int(row), rng), gold, tol)
            tried += 1
            caught += result.failed_outputs == ["predicted_logits"]
    # A wrong column whose logit happens to lie within tolerance of the target's escapes (~0.05%).
    assert caught >= tried - 1, (caught, tried)


@pytest.mark.slow
def test_wrong_gathers_show_relative_errors_of_tens_to_thousands() -> None:
    rel = []
    rng = np.random.default_rng(1)
    for case in _sim_cases():
        actual, tile, row_max = _device(case)
        gold = golden(*case.inputs())["predicted_logits"].astype(np.float64)
        rows = np.flatnonzero(_in_shard(case))
        right = case.target[rows].astype(np.int64) - case.vocab_start_index
        cols = (right + 1 + rng.integers(case.v - 1, size=rows.size)) % case.v
        wrong = (tile[rows, cols] - row_max[rows]).astype(np.float64)
        rel.append(relative_error(wrong, gold[rows]))
    rel = np.concatenate(rel)
    assert np.mean(rel >= 10) > 0.9
    assert 30 < np.median(rel) < 3000


def test_tolerance_values_follow_the_derivation() -> None:
    ms = tolerances({"input_dtype": "bfloat16", "return_logits": False, "logits_abs_max": 4.0})
    r = 2 * 2.0**-8 * 4.0
    assert ms["predicted_logits"] == Tolerance(1e-3, 1e-5 + r)
    assert ms["logits_max"] == Tolerance(1e-3, 1e-5 + r / 2)
    assert ms["sum_exp_logits"] == Tolerance(1e-3 + r * (1 + r), 1e-5)
    assert ms["target_mask"].exact and ms["masked_target"].exact
    rl = tolerances({"input_dtype": "float16", "return_logits": True, "logits_abs_max": 4.0})
    assert rl["predicted_logits"] == Tolerance(1e-3, 1e-5)
    assert rl["vocab_parallel_logits"] == Tolerance(1e-3, 1e-5, storage_dtype="float16")
    bf = tolerances({"input_dtype": "bf16", "return_logits": True, "logits_abs_max": 4.0})
    assert bf["vocab_parallel_logits"].rtol == 2.0**-7 and bf["vocab_parallel_logits"].storage_dtype == "bfloat16"


def test_tolerances_need_the_case_parameters() -> None:
    with pytest.raises(UsageError, match="logits_abs_max"):
        tolerances({"input_dtype": "float16", "return_logits": False})
