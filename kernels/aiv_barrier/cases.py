"""Seeded cases of matmul + bias + ReLU: case ``index`` of stream ``seed`` is a pure function of both.

Shapes change from case to case, so the workspace a call is handed still holds what an earlier
call left there: a vector core that reads y_ws before the cube core wrote it reads other values.
"""

from __future__ import annotations

import numpy as np

from mpnpu import Case

DTYPES = ("float16", "bfloat16", "float32")
BASE_K = 64


def make(rng: np.random.Generator, index: int, dtypes: tuple[str, ...] = DTYPES) -> Case:
    """M in 8..64, N in 16..128, K in 32..1024; x, w scaled so that x @ w ~ N(0, 1); bias ~ N(0, 0.5)."""
    m, n, k = int(rng.integers(8, 65)), int(rng.integers(16, 129)), int(rng.integers(32, 1025))
    dtype = dtypes[int(rng.integers(len(dtypes)))]
    x = rng.standard_normal((m, k))
    w = rng.standard_normal((k, n)) / np.sqrt(k)
    bias = 0.5 * rng.standard_normal(n)
    return Case(index, inputs={"x": x, "w": w, "bias": bias}, dtypes={"x": dtype, "w": dtype, "bias": dtype},
                outputs={"out": ((m, n), dtype)},
                workspace={"y_ws": ((m, n), "float32"), "bias_ws": ((n,), "float32")},
                params=(BASE_K,), label=f"M={m} N={n} K={k} {dtype}")
