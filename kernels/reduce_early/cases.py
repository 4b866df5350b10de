"""Seeded cases of the split-hidden RMSNorm: case ``index`` of stream ``seed`` is a pure function of both.

Row counts and row scales change from case to case, so a partial read before its core wrote it
(the previous call's value left in the workspace block) gives a visibly wrong normalisation.
"""

from __future__ import annotations

import numpy as np

from mpnpu import Case

DTYPES = ("float16", "bfloat16", "float32")
EPS = 1e-6
MAX_VECTOR_CORES = 48  # 2 per AI core, block_dim <= 24: one partials row each


def make(rng: np.random.Generator, index: int, dtypes: tuple[str, ...] = DTYPES) -> Case:
    """R in 1..32 rows, H in 64..1024; each row has its own scale (log-uniform in 0.1..10)."""
    rows, h = int(rng.integers(1, 33)), int(rng.integers(64, 1025))
    dtype = dtypes[int(rng.integers(len(dtypes)))]
    scale = np.exp(rng.uniform(np.log(0.1), np.log(10.0), size=(rows, 1)))
    x = rng.standard_normal((rows, h)) * scale
    gamma = 1.0 + 0.2 * rng.standard_normal(h)
    return Case(index, inputs={"x": x, "gamma": gamma}, dtypes={"x": dtype, "gamma": dtype},
                outputs={"y": ((rows, h), dtype)},
                workspace={"partials": ((MAX_VECTOR_CORES, rows), "float32")},
                params=(EPS,), label=f"R={rows} H={h} {dtype}")
