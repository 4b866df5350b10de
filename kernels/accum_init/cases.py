"""Seeded cases of the split-K matmul: case ``index`` of stream ``seed`` is a pure function of both.

Shapes change from case to case, so each call is handed GM blocks that the previous call left
holding other values (the caching allocator never clears): a partial sum that a late zeroing
wipes, or that lands on stale data, shows as a wrong ``c``.
"""

from __future__ import annotations

import numpy as np

from mpnpu import Case

DTYPES = ("float16", "bfloat16", "float32")
BASE_K = 64


def make(rng: np.random.Generator, index: int, dtypes: tuple[str, ...] = DTYPES) -> Case:
    """M, N in 16..64, K in 64..384 (1..6 K-chunks of 64), inputs ~ N(0, 1/sqrt(K)) in one dtype."""
    m, n = (int(v) for v in rng.integers(16, 65, size=2))
    k = int(rng.integers(64, 385))
    dtype = dtypes[int(rng.integers(len(dtypes)))]
    scale = 1.0 / np.sqrt(np.sqrt(k))  # so that c ~ N(0, 1) whatever K
    a = rng.standard_normal((m, k)) * scale
    b = rng.standard_normal((k, n)) * scale
    return Case(index, inputs={"a": a, "b": b}, dtypes={"a": dtype, "b": dtype},
                outputs={"c": ((m, n), "float32")}, params=(BASE_K,),
                label=f"M={m} N={n} K={k} {dtype}")
