"""A small operator built with KernelOperator, for the operator-loading and helper tests.

Two-phase sum: every vector core writes the sum of its slice of ``x`` to ``partials[v]`` (GM
workspace), then all cores meet at SyncAll "B1", then vector core 0 adds the partials into
``total``. Without B1 core 0 can read a partial another core has not written yet (this case's
workspace block still holds the previous case's partials).
"""

from __future__ import annotations

import numpy as np

from mpnpu import api
from mpnpu.operators.kernel import Case, KernelOperator
from mpnpu.operators.protocol import OperatorOption


def two_phase_sum(x, total, partials, n: int) -> None:
    if api.is_aiv():
        v, nv = api.get_block_idx(), 2 * api.get_block_num()
        lo, hi = n * v // nv, n * (v + 1) // nv
        part = np.zeros(hi - lo, np.float32)
        if hi > lo:
            api.data_copy(part, x[lo:hi])
        api.data_copy(partials[v:v + 1], np.array([part.sum(dtype=np.float32)], np.float32))
    api.sync_all(name="B1")
    if api.is_aiv() and api.get_block_idx() == 0:
        nv = 2 * api.get_block_num()
        got = np.empty(nv, np.float32)
        api.data_copy(got, partials[0:nv])
        api.data_copy(total, np.array([got.sum(dtype=np.float32)], np.float32))


def make(rng: np.random.Generator, index: int, scale: int = 1) -> Case:
    n = int(rng.integers(8, 200))
    x = (scale * rng.standard_normal(n)).astype(np.float32)
    return Case(index, inputs={"x": x}, outputs={"total": ((1,), "float32")},
                workspace={"partials": ((48,), "float32")}, params=(n,), label=f"n={n}")


def golden(case: Case) -> dict[str, np.ndarray]:
    return {"total": np.array([case.value("x").sum()])}


OPERATOR = KernelOperator(
    name="two_phase_sum",
    kernel=two_phase_sum,
    sync_points={"B1": "SyncAll between writing the partial sums and reading them"},
    incident={"B1"},
    make=make,
    golden=golden,
    options=(OperatorOption("scale", 1, "multiplies the inputs"),),
    stages=("partials", "total"),
)

NOT_AN_OPERATOR = object()
