"""float64 golden of the split-K matmul, and how far the device's float32 result may be from it."""

from __future__ import annotations

import numpy as np

from mpnpu import Case, Tolerance


def golden(case: Case) -> dict[str, np.ndarray]:
    """c = a @ b from the stored inputs, in float64 (the operator rounds it to float32 once)."""
    return {"c": case.value("a") @ case.value("b")}


def tolerance(case: Case) -> dict[str, Tolerance]:
    """The device sums float32 products chunk by chunk: its error is a few float32 ulps of
    sum_k |a||b|, so near-zero elements get an absolute allowance scaled by that sum."""
    bound = float((np.abs(case.value("a")) @ np.abs(case.value("b"))).max(initial=0.0))
    return {"c": Tolerance(rtol=1e-5, atol=64 * np.finfo(np.float32).eps * bound)}
