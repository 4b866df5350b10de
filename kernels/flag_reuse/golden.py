"""float64 golden of matmul + SiLU, and the tolerance of the device's float32 path."""

from __future__ import annotations

import numpy as np

from mpnpu import Case, Tolerance, default_tolerance


def golden(case: Case) -> dict[str, np.ndarray]:
    """out = silu(x @ w + bias), silu(y) = y / (1 + exp(-y)), from the stored inputs, in float64."""
    y = case.value("x") @ case.value("w") + case.value("bias")
    return {"out": y / (1.0 + np.exp(-y))}


def tolerance(case: Case) -> dict[str, Tolerance]:
    """The output dtype's rule, with an absolute allowance for the float32 matmul's rounding."""
    rule = default_tolerance(case.dtypes["x"])
    bound = float((np.abs(case.value("x")) @ np.abs(case.value("w"))).max(initial=0.0))
    return {"out": Tolerance(rtol=rule.rtol, atol=max(rule.atol, 64 * np.finfo(np.float32).eps * bound),
                             storage_dtype=rule.storage_dtype)}
