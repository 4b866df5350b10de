"""Stream compaction, as a new user wrote it (issue 21): keep the elements of ``x`` above a threshold.

Every vector core takes a slice of ``x``, counts the elements it keeps and publishes the count in GM
(``counts[v]``); an AIV-only barrier (S1); then every core reads all the counts, adds up those of
the cores before it to find where its results go, and scatters them to ``y`` at that offset. The
output's size is the total count. Without S1 a core can read a count another core has not written
yet (the workspace block still holds the previous case's counts): its offset is wrong, so its
results overwrite another core's, leave a gap, or land past the end of ``y``.

``mistake`` selects one deliberate user mistake for the tests of issue 21 (each is a separate
operator below): "" none; "past_end" the last core reads 32 elements past the end of ``x``;
"negative" a slice with a negative start; "local" a slice past the end of a UB tensor; "raise" the
kernel raises on vector core 1.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mpnpu import Case, KernelOperator
from mpnpu import api as ac
from mpnpu.api import TPosition


def compact(x, y, counts, threshold, mistake=""):
    if not ac.is_aiv():
        return
    n = x.shape[0]
    v, parts = ac.get_block_idx(), 2 * ac.get_block_num()
    lo, hi = v * n // parts, (v + 1) * n // parts
    with ac.stage("Count"):
        xs = ac.alloc_local(TPosition.VECIN, hi - lo, "float32")
        if mistake == "past_end" and v == parts - 1:
            ac.data_copy(xs, x[n - (hi - lo) + 32:n + 32])  # MISTAKE past_end
        elif mistake == "negative" and v == 0:
            ac.data_copy(xs, x[-4:hi - lo - 4])  # MISTAKE negative
        else:
            ac.data_copy(xs, x[lo:hi])
        keep = xs[xs > threshold]
        mine = ac.alloc_local(TPosition.VECOUT, 1, "int32")
        mine[0] = keep.size
        ac.data_copy(counts[v:v + 1], mine)  # PUBLISH
    ac.sync_all(aiv_only=True, name="S1")
    with ac.stage("Scatter"):
        every = ac.alloc_local(TPosition.VECIN, parts, "int32")
        ac.data_copy(every, counts[0:parts])  # READ COUNTS
        offset = int(every[:v].sum())
        if mistake == "raise" and v == 1:
            raise ValueError(f"offset {offset} is not what core 1 expected")  # MISTAKE raise
        out = ac.alloc_local(TPosition.VECOUT, keep.size, "float32")
        if mistake == "local":
            out[0:keep.size + 8] = 0  # MISTAKE local
        out[...] = keep
        ac.data_copy(y[offset:offset + keep.size], out)  # SCATTER


def make(rng: np.random.Generator, index: int) -> Case:
    n = int(rng.integers(64, 513))
    x = rng.standard_normal(n).astype(np.float32)
    threshold = float(rng.uniform(-0.5, 0.5))
    total = int((x > threshold).sum())
    return Case(index, inputs={"x": x}, outputs={"y": ((total,), "float32")},
                workspace={"counts": ((48,), "int32")}, params=(threshold,), label=f"n={n} kept={total}")


def golden(case: Case) -> dict[str, np.ndarray]:
    x = case.value("x")
    return {"y": x[x > case.params[0]]}


OPERATOR = KernelOperator(
    name="compact",
    kernel=compact,
    sync_points={"S1": "SyncAll<true> between publishing the counts and reading them"},
    incident={"S1"},
    make=make,
    golden=golden,
    stages=("Count", "Scatter"),
    description="stream compaction: per-core counts in GM, an AIV-only barrier, scatter at the offsets",
    unwritten=None,  # its consequence tests read the count the predecessor case left, as on the device
)


def _with_mistake(mistake: str) -> KernelOperator:
    def make_mistaken(rng: np.random.Generator, index: int) -> Case:
        case = make(rng, index)
        case.params = (*case.params, mistake)
        return case

    return dataclasses.replace(OPERATOR, name=f"compact-{mistake.replace('_', '-')}", make=make_mistaken)


PAST_END = _with_mistake("past_end")
NEGATIVE = _with_mistake("negative")
LOCAL = _with_mistake("local")
RAISES = _with_mistake("raise")


def wrong_golden(case: Case) -> dict[str, np.ndarray]:
    x = case.value("x")
    return {"y": np.concatenate([x, x])}  # MISTAKE golden: every element twice, not the kept ones


BAD_GOLDEN = dataclasses.replace(OPERATOR, name="compact-bad-golden", golden=wrong_golden)
