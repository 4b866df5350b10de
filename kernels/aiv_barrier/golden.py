"""float64 golden of matmul + bias + ReLU, and the tolerance of the device's float32 path."""

from __future__ import annotations

import numpy as np

from mpnpu import Case, Tolerance, default_tolerance


def golden(case: Case) -> dict[str, np.ndarray]:
    """out = relu(x @ w + bias) from the stored inputs, in float64."""
    return {"out": np.maximum(case.value("x") @ case.value("w") + case.value("bias"), 0.0)}


def tolerance(case: Case) -> dict[str, Tolerance]:
    """The output dtype's rule, with an absolute allowance for the float32 matmul's rounding
    (a few float32 ulps of sum_k |x||w|) on elements near zero."""
    dtype = case.dtypes["x"]
    bound = float((np.abs(case.value("x")) @ np.abs(case.value("w"))).max(initial=0.0))
    rule = default_tolerance(dtype)
    return {"out": Tolerance(rtol=rule.rtol, atol=max(rule.atol, 64 * np.finfo(np.float32).eps * bound),
                             storage_dtype=rule.storage_dtype)}
