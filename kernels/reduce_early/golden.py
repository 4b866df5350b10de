"""float64 golden of RMSNorm."""

from __future__ import annotations

import numpy as np

from mpnpu import Case

from .cases import EPS


def golden(case: Case) -> dict[str, np.ndarray]:
    """y = x / sqrt(mean(x², axis=1) + eps) * gamma from the stored inputs, in float64."""
    x = case.value("x")
    rstd = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS)
    return {"y": x * rstd * case.value("gamma")}
