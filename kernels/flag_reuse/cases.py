"""Seeded cases of matmul + SiLU: case ``index`` of stream ``seed`` is a pure function of both.

Every tile of a call holds different values, so a vector core that reads a slot after the cube
core overwrote it with a later tile writes that tile's values into the wrong columns.
"""

from __future__ import annotations

import numpy as np

from mpnpu import Case

DTYPES = ("float16", "bfloat16", "float32")
BASE_N = 64
BASE_K = 64
MAX_TILES = 6  # per cube core at block_dim 1: well inside a flag counter's 15 pending sets
SLOTS = 24  # two slots per AI core the device can have (block_dim <= 24)


def make(rng: np.random.Generator, index: int, dtypes: tuple[str, ...] = DTYPES) -> Case:
    """M in 16..64, K in 256..768, N in 3..6 tiles of 64 columns (the last one partial)."""
    m, k = int(rng.integers(16, 65)), int(rng.integers(256, 769))
    n = int(rng.integers(2 * BASE_N + 1, MAX_TILES * BASE_N + 1))
    dtype = dtypes[int(rng.integers(len(dtypes)))]
    x = rng.standard_normal((m, k))
    w = 2.0 * rng.standard_normal((k, n)) / np.sqrt(k)
    bias = 0.5 * rng.standard_normal(n)
    return Case(index, inputs={"x": x, "w": w, "bias": bias}, dtypes={"x": dtype, "w": dtype, "bias": dtype},
                outputs={"out": ((m, n), dtype)},
                workspace={"slots": ((SLOTS, 2, m, BASE_N), "float32")},
                params=(BASE_N, BASE_K), label=f"M={m} N={n} K={k} {dtype} ({-(-n // BASE_N)} tiles)")
