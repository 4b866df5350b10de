"""The generic precision rule of mpnpu.operators.compare (docs/precision.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpnpu.errors import UsageError
from mpnpu.operators.compare import (
    CaseComparison,
    Tolerance,
    compare_output,
    compare_outputs,
    relative_error,
)
from mpnpu.runtime.dtypes import from_float32

TOL = Tolerance(rtol=1e-3, atol=1e-5)
EXACT = Tolerance(rtol=0.0, atol=0.0, exact=True)


def _with_failures(n_total: int, n_failed: int) -> tuple[np.ndarray, np.ndarray]:
    golden = np.ones(n_total, dtype=np.float32)
    actual = golden.copy()
    actual[:n_failed] = 2.0
    return actual, golden


def test_element_on_the_tolerance_boundary_passes_and_just_beyond_fails() -> None:
    tol = Tolerance(rtol=0.5, atol=0.25)  # bound for g = 1 is exactly 0.75, representable
    golden = np.array([1.0])
    assert compare_output("x", np.array([1.75]), golden, tol).passed
    assert not compare_output("x", np.array([np.nextafter(1.75, 2.0)]), golden, tol).passed


@pytest.mark.parametrize(
    "n_total, n_failed, passed",
    [
        (100, 1, False),  # small output: one failing element is more than 0.1%
        (999, 1, False),
        (1000, 1, True),  # exactly 0.1% is not "more than"
        (1000, 2, False),
        (3000, 3, True),
        (3000, 4, False),
    ],
)
def test_fail_fraction_boundary(n_total: int, n_failed: int, passed: bool) -> None:
    actual, golden = _with_failures(n_total, n_failed)
    result = compare_output("x", actual, golden, TOL)
    assert result.passed is passed
    assert (result.n_failed, result.n_total) == (n_failed, n_total)


def test_metrics_by_hand() -> None:
    golden = np.array([1.0, 2.0, 4.0, 0.0])
    actual = np.array([1.0, 2.002, 8.0, 0.0])  # rel errors 0, 1e-3 (within rtol+atol), 1, 0
    result = compare_output("x", actual, golden, TOL)
    rel = [0.0, 0.002 / (2 + 1e-7), 4 / (4 + 1e-7), 0.0]
    assert result.n_failed == 1 and result.first_failing == (2,)
    assert result.mare == pytest.approx(max(rel))
    assert result.mere == pytest.approx(sum(rel) / 4)
    assert result.max_rel_error == pytest.approx(rel[2])  # failing elements only


def test_max_rel_error_ignores_passing_elements() -> None:
    tol = Tolerance(rtol=0.0, atol=1.0)  # passes a 0.5 error on a tiny golden: huge rel error, passing
    result = compare_output("x", np.array([0.5, 10.0]), np.array([1e-3, 5.0]), tol)
    assert result.mare == pytest.approx(0.499 / (1e-3 + 1e-7))
    assert result.max_rel_error == pytest.approx(5.0 / (5.0 + 1e-7))


def test_relative_error_uses_epsilon_where_golden_is_zero() -> None:
    rel = relative_error(np.array([1e-7, 0.0]), np.array([0.0, 0.0]))
    assert rel.tolist() == pytest.approx([1.0, 0.0])


@pytest.mark.parametrize(
    "actual, golden, passed",
    [
        (np.nan, 1.0, False),  # NaN in actual fails
        (1.0, np.nan, False),  # golden NaN needs an actual NaN
        (np.nan, np.nan, True),
        (np.inf, np.inf, True),
        (-np.inf, np.inf, False),
        (np.inf, 1.0, False),
    ],
)
def test_nan_and_inf(actual: float, golden: float, passed: bool) -> None:
    assert compare_output("x", np.array([actual]), np.array([golden]), TOL).passed is passed


def test_exact_counts_unequal_elements_and_ignores_fail_fraction() -> None:
    golden = np.arange(10_000, dtype=np.int32)
    actual = golden.copy()
    actual[[3, 7]] += 1
    result = compare_output("idx", actual, golden, EXACT)
    assert not result.passed and result.n_failed == 2 and result.first_failing == (3, 7)
    assert compare_output("idx", golden.copy(), golden, EXACT).passed


def test_exact_needs_same_dtype() -> None:
    golden = np.arange(4, dtype=np.int64)
    result = compare_output("idx", golden.astype(np.int32), golden, EXACT)
    assert not result.passed and "dtype" in result.reason


def test_shape_mismatch_fails_with_reason() -> None:
    result = compare_output("x", np.zeros(3), np.zeros(4), TOL)
    assert not result.passed and "shape" in result.reason and "(3,)" in result.reason


def test_empty_outputs_pass() -> None:
    result = compare_output("x", np.zeros((0,)), np.zeros((0,)), TOL)
    assert result.passed and result.n_total == 0


def test_storage_dtype_decodes_bfloat16() -> None:
    one, two = from_float32(np.array([1.0]), "bfloat16"), from_float32(np.array([2.0]), "bfloat16")
    loose = Tolerance(rtol=1e-2, atol=0.0)
    # As raw uint16 the bit patterns differ by under 1%; as bfloat16 values, 1.0 vs 2.0.
    assert compare_output("x", two, one, loose).passed
    assert not compare_output("x", two, one, Tolerance(1e-2, 0.0, storage_dtype="bfloat16")).passed


def test_compare_outputs_collects_failures_across_outputs() -> None:
    golden = {"a": np.ones(10, np.float32), "b": np.arange(3, dtype=np.int32), "c": np.ones(2, np.float32)}
    actual = {"a": np.ones(10, np.float32), "b": np.array([0, 1, 5], np.int32)}
    result = compare_outputs(actual, golden, {"a": TOL, "b": EXACT, "c": TOL})
    assert isinstance(result, CaseComparison)
    assert not result.passed
    assert result.failed_outputs == ["b", "c"]
    assert "missing" in result.outputs["c"].reason
    assert result.outputs["b"].max_rel_error == pytest.approx(3 / (2 + 1e-7))
    assert result.max_rel_error_failing == float("inf")  # a missing output counts as failing everywhere
    json.dumps(result.to_dict())  # reports must be able to serialise it


def test_max_rel_error_failing_is_max_over_outputs() -> None:
    golden = {"a": np.ones(10, np.float32), "b": np.full(10, 2.0, np.float32)}
    actual = {"a": np.full(10, 1.5, np.float32), "b": np.full(10, 20.0, np.float32)}
    result = compare_outputs(actual, golden, {"a": TOL, "b": TOL})
    assert result.max_rel_error_failing == pytest.approx(18 / (2 + 1e-7))
    assert compare_outputs(golden, golden, {"a": TOL, "b": TOL}).max_rel_error_failing == 0.0


def test_missing_tolerance_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="b"):
        compare_outputs({"a": np.ones(1)}, {"a": np.ones(1), "b": np.ones(1)}, {"a": TOL})
