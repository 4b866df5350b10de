"""Precision comparison of an operator's outputs against its golden (docs/precision.md). Knows no operator.

Float outputs: an element fails when |actual − golden| > atol + rtol·|golden|, and an output fails when
MORE than ``fail_fraction`` of its elements fail (Ascend's "double thousandth": 0.1%). Note what that
means for small outputs: with fewer than 1000 elements a single failing element already fails the
output, while a 4096-element output tolerates four. Integer and mask outputs must be binary equal.

The numbers reported per output (docs/precision.md): fail count, MERE (mean relative error) and MARE (max
relative error), both with relative error |a − g| / (|g| + 1e-7), plus the max relative error over the
failing elements only, which is the number the incident was described by ("tens to thousands",
docs/incident.md).

Outputs stored in an emulated dtype (bfloat16 as uint16) are decoded through ``Tolerance.storage_dtype``;
without it a uint16 array would be compared as integers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Optional

import numpy as np

from mpnpu.errors import UsageError
from mpnpu.runtime.dtypes import get_dtype, to_float32

# Keeps relative error finite where the golden is 0 (docs/precision.md).
REL_EPS = 1e-7
# How many failing flat indices an OutputComparison keeps, enough to see a pattern without bloating reports.
MAX_FAILING_SHOWN = 8


@dataclass(frozen=True)
class Tolerance:
    """How one output is judged.

    ``exact``: binary equality (integer and mask outputs); rtol/atol/fail_fraction are then unused.
    ``storage_dtype``: device dtype the arrays are stored as (e.g. ``"bfloat16"`` for uint16 storage);
    None compares the numpy values as they are.
    """

    rtol: float
    atol: float
    exact: bool = False
    fail_fraction: float = 0.001
    storage_dtype: Optional[str] = None


@dataclass
class OutputComparison:
    """The verdict and error statistics of one output.

    ``max_rel_error`` / ``min_rel_error`` are over the failing elements only (0.0 when none fail);
    ``mare`` and ``mere`` are over all elements. ``reason`` says why the output failed when that is not just the numbers
    (shape, dtype, missing). ``first_failing``: the first few failing flat indices.
    """

    name: str
    passed: bool
    n_failed: int
    n_total: int
    max_rel_error: float
    mere: float
    mare: float
    reason: str = ""
    first_failing: tuple[int, ...] = field(default_factory=tuple)
    min_rel_error: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python view for JSON reports."""
        d = asdict(self)
        d["first_failing"] = list(self.first_failing)
        return d


@dataclass
class CaseComparison:
    """The comparisons of every output of one case."""

    outputs: dict[str, OutputComparison]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs.values())

    @property
    def failed_outputs(self) -> list[str]:
        return [name for name, o in self.outputs.items() if not o.passed]

    @property
    def max_rel_error_failing(self) -> float:
        """Max relative error over failing elements, across all outputs (0.0 when none fail)."""
        return max((o.max_rel_error for o in self.outputs.values()), default=0.0)

    @property
    def min_rel_error_failing(self) -> float:
        """Min relative error over failing elements of failed outputs (0.0 when none fail)."""
        return min((o.min_rel_error for o in self.outputs.values() if not o.passed), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python view for JSON reports."""
        return {
            "passed": self.passed,
            "failed_outputs": self.failed_outputs,
            "max_rel_error_failing": self.max_rel_error_failing,
            "outputs": {name: o.to_dict() for name, o in self.outputs.items()},
        }


def compare_output(name: str, actual: Any, golden: Any, tol: Tolerance) -> OutputComparison:
    """Judge one output against its golden under ``tol`` (see the module docstring for the rule)."""
    actual, golden = np.asarray(actual), np.asarray(golden)
    if actual.shape != golden.shape:
        return _broken(name, golden.size, f"shape mismatch: actual {actual.shape}, golden {golden.shape}")
    if tol.exact and actual.dtype != golden.dtype:
        return _broken(name, golden.size, f"dtype mismatch: actual {actual.dtype}, golden {golden.dtype}")
    if golden.size == 0:
        return OutputComparison(name, True, 0, 0, 0.0, 0.0, 0.0)

    a, g = _as_float64(actual, tol.storage_dtype), _as_float64(golden, tol.storage_dtype)
    if tol.exact:
        ok = _binary_equal(actual, golden)
        passed = bool(ok.all())
    else:
        ok = _within_tolerance(a, g, tol)
        n_failed = int(ok.size - np.count_nonzero(ok))
        # A ratio, not n_failed > fail_fraction * n: 1/1000 rounds to exactly the literal 0.001.
        passed = n_failed / ok.size <= tol.fail_fraction
    rel = relative_error(a, g)
    failing = ~ok.reshape(-1)
    return OutputComparison(
        name=name,
        passed=passed,
        n_failed=int(np.count_nonzero(failing)),
        n_total=int(ok.size),
        max_rel_error=float(rel.reshape(-1)[failing].max()) if failing.any() else 0.0,
        min_rel_error=float(rel.reshape(-1)[failing].min()) if failing.any() else 0.0,
        mere=float(rel.mean()),
        mare=float(rel.max()),
        first_failing=tuple(int(i) for i in np.flatnonzero(failing)[:MAX_FAILING_SHOWN]),
    )


def compare_outputs(
    actual: Mapping[str, Any], golden: Mapping[str, Any], tolerances: Mapping[str, Tolerance]
) -> CaseComparison:
    """Compare every output the golden has; an output missing from ``actual`` fails.

    Raises UsageError when a golden output has no tolerance: silently skipping it would pass a case
    nobody judged. Outputs only in ``actual`` are ignored.
    """
    missing_tol = [name for name in golden if name not in tolerances]
    if missing_tol:
        raise UsageError(f"no tolerance given for output(s) {', '.join(missing_tol)}")
    results: dict[str, OutputComparison] = {}
    for name, gold in golden.items():
        if name not in actual:
            results[name] = _broken(name, np.asarray(gold).size, "missing from the actual outputs")
        else:
            results[name] = compare_output(name, actual[name], gold, tolerances[name])
    return CaseComparison(results)


def relative_error(actual: np.ndarray, golden: np.ndarray) -> np.ndarray:
    """|a − g| / (|g| + 1e-7) elementwise; 0 where both agree (also equal infinities, both NaN), inf
    where exactly one is NaN or the difference is otherwise undefined."""
    with np.errstate(invalid="ignore", over="ignore"):
        rel = np.abs(actual - golden) / (np.abs(golden) + REL_EPS)
    same = (actual == golden) | (np.isnan(actual) & np.isnan(golden))
    rel = np.where(same, 0.0, rel)
    return np.where(np.isnan(rel), np.inf, rel)


def _within_tolerance(a: np.ndarray, g: np.ndarray, tol: Tolerance) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        # NaN compares False, so a NaN actual (or a NaN difference) fails here. An infinite golden
        # makes the bound infinite too, so it must be matched exactly (below), not within tolerance.
        ok = (np.abs(a - g) <= tol.atol + tol.rtol * np.abs(g)) & np.isfinite(g)
    within: np.ndarray = ok | (a == g) | (np.isnan(a) & np.isnan(g))
    return within


def _binary_equal(actual: np.ndarray, golden: np.ndarray) -> np.ndarray:
    # Compare bytes, not values: for floats this distinguishes -0.0/+0.0 and NaN payloads.
    width = actual.dtype.itemsize
    as_uint = np.dtype(f"u{width}") if width in (1, 2, 4, 8) else None
    if as_uint is None:
        same: np.ndarray = actual == golden
        return same
    a = np.ascontiguousarray(actual).view(as_uint)
    g = np.ascontiguousarray(golden).view(as_uint)
    same_bits: np.ndarray = a == g
    return same_bits


def _as_float64(values: np.ndarray, storage_dtype: Optional[str]) -> np.ndarray:
    if storage_dtype is not None:
        return to_float32(values, get_dtype(storage_dtype)).astype(np.float64)
    return values.astype(np.float64)


def _broken(name: str, n_total: int, reason: str) -> OutputComparison:
    return OutputComparison(
        name=name,
        passed=False,
        n_failed=int(n_total),
        n_total=int(n_total),
        max_rel_error=float("inf"),
        mere=float("inf"),
        mare=float("inf"),
        reason=reason,
    )
