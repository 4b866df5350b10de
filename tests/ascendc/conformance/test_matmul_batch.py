"""Batch matmul against numpy: IterateBatch and IterateNBatch with A, B and C in the NORMAL, BSNGD,
SBNGD and BNGS1S2 layouts (one matrix of s rows x d columns per (batch, head, group), the layout's
order of the five axes in GM), B stored transposed or not, a bias row per C matrix (isBiasBatch) or
one for all, the smaller of batchA / batchB broadcast, tails in M and N; through MatmulImpl on a cube
core, the pure cube form after SetBatchNum, and Matmul driven by a vector core (kernels/matmul_batch.cpp),
whose requests the race detector sees ordered; misuse at the call's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpnpu.ascendc.matmul_tiling import workspace_bytes
from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]

KERNEL = Path(__file__).parent / "kernels" / "matmul_batch.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
BIAS, TRANS_B, NBATCH, ASYNC, CUBE_FORM, NO_END, PEEK, DUAL = 1, 2, 4, 8, 16, 32, 64, 128
LAYOUTS = {"NORMAL": 0, "BSNGD": 1, "SBNGD": 2, "BNGS1S2": 3}
M, N, K, BASE = 40, 48, 24, 32  # tails in M and N


@pytest.fixture(scope="module")
def kernels():
    from mpnpu.ascendc import compile_kernel

    return {KernelType.AIC: compile_kernel(str(KERNEL), "mm_batch", flags=WARN, kernel_type=KernelType.AIC),
            KernelType.MIX_1_2: compile_kernel(str(KERNEL), "mm_batch", flags=WARN, kernel_type=KernelType.MIX_1_2,
                                               defines={"MPNPU_TEST_CLIENT": "1"})}


def place(mats: np.ndarray, layout: str) -> np.ndarray:
    """Matrices [batch, heads, groups, s, d] laid out in GM as ``layout`` says (flattened)."""
    order = {"NORMAL": (0, 1, 2, 3, 4), "BNGS1S2": (0, 1, 2, 3, 4), "BSNGD": (0, 3, 1, 2, 4),
             "SBNGD": (3, 0, 1, 2, 4)}[layout]
    return np.ascontiguousarray(mats.transpose(order)).ravel()


def unplace(flat: np.ndarray, layout: str, shape: tuple[int, ...]) -> np.ndarray:
    order = {"NORMAL": (0, 1, 2, 3, 4), "BNGS1S2": (0, 1, 2, 3, 4), "BSNGD": (0, 3, 1, 2, 4),
             "SBNGD": (3, 0, 1, 2, 4)}[layout]
    stored = flat.reshape([shape[i] for i in order])
    return stored.transpose(np.argsort(order))


def run(kernels, layout: str, flags: int, *, batches=1, heads=1, groups=(3, 3), batch=None, loops=1,
        kt=KernelType.AIC, seed=0, trace=False):
    """``groups``: A's and B's groups; ``batch``: (batchA, batchB) of one call (default: a whole head row)."""
    ga, gb = groups
    gc = max(ga, gb)
    batch_a, batch_b = batch or (heads * ga, heads * gb)
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 4, (batches, heads, ga, M, K)).astype(np.float16)  # exact in half
    b = rng.integers(-4, 4, (batches, heads, gb, K, N)).astype(np.float16)
    b_store = b.transpose(0, 1, 2, 4, 3) if flags & TRANS_B else b
    bias = rng.integers(-8, 8, (batches * heads * gc, N)).astype(np.float32)
    sentinel = np.float32(-777.0)
    c0 = np.full(batches * heads * gc * M * N, sentinel, np.float32)
    with device(1, kernel_type=kt) as dev:
        args = [dev.to_device("a", place(a, layout)), dev.to_device("b", place(b_store, layout)),
                dev.to_device("bias", bias.ravel()), dev.to_device("c", c0), dev.to_device("cws", c0.copy()),
                dev.to_device("offs", np.full(8, -1, np.int32)),
                dev.to_device("workspace", np.zeros(workspace_bytes(1, 1), np.uint8))]
        r = dev.launch_with(LaunchOptions(trace=trace), kernels[kt], *args, M, N, K, BASE, LAYOUTS[layout], batches,
                            heads, ga, gb, batch_a, batch_b, loops, flags)
        out = dev.to_host(args[4] if flags & NBATCH else args[3])
        offs = dev.to_host(args[5])
    # the reference: C matrix q (counted over batch, head, group) of call l = q // batchC takes A and B
    # matrices l * batchA + j // (batchC // batchA) and l * batchB + j // (batchC // batchB), j = q % batchC
    batch_c = max(batch_a, batch_b)
    af = a.reshape(-1, M, K).astype(np.float32)
    bf = b.reshape(-1, K, N).astype(np.float32)
    done = loops * batch_c
    ref = np.full((batches * heads * gc, M, N), np.nan, np.float32)
    for q in range(done):
        l_, j = divmod(q, batch_c)
        qa, qb = l_ * batch_a + j // (batch_c // batch_a), l_ * batch_b + j // (batch_c // batch_b)
        ref[q] = af[qa] @ bf[qb]
        if flags & BIAS:
            ref[q] += bias[0] if flags & NBATCH else bias[q]
    got = unplace(out, layout, (batches, heads, gc, M, N)).reshape(-1, M, N)
    return got, ref, done, offs, r


def check(got, ref, done) -> None:
    np.testing.assert_array_equal(got[:done], ref[:done])
    assert (got[done:] == np.float32(-777.0)).all(), "IterateBatch wrote past the matrices it computes"


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("flags", [0, BIAS | TRANS_B])
def test_iterate_batch_equals_numpy_on_the_cube_core(kernels, layout, flags) -> None:
    got, ref, done, _, _ = run(kernels, layout, flags, seed=flags + LAYOUTS[layout])
    check(got, ref, done)


@pytest.mark.parametrize("layout", ["BSNGD", "NORMAL"])
def test_the_smaller_batch_is_broadcast(kernels, layout) -> None:
    got, ref, done, _, _ = run(kernels, layout, BIAS, groups=(4, 2), seed=3)
    check(got, ref, done)
    got, ref, done, _, _ = run(kernels, layout, TRANS_B, groups=(2, 4), seed=4)
    check(got, ref, done)


def test_the_pure_cube_form_takes_set_batch_num(kernels) -> None:
    got, ref, done, _, _ = run(kernels, "BNGS1S2", CUBE_FORM | BIAS, groups=(2, 2), seed=6)
    check(got, ref, done)


@pytest.mark.parametrize("layout", ["BSNGD", "SBNGD", "NORMAL"])
def test_iterate_n_batch_writes_each_call_to_the_workspace(kernels, layout) -> None:
    # two batches x two heads of three groups, one head per call: four calls; one bias row for all
    got, ref, done, _, _ = run(kernels, layout, NBATCH | BIAS | TRANS_B, batches=2, heads=2, batch=(3, 3), loops=4,
                               seed=7)
    assert done == got.shape[0]
    check(got, ref, done)


@pytest.mark.parametrize("layout", ["BSNGD", "BNGS1S2"])
def test_batch_matmul_through_a_vector_cores_matmul(kernels, layout) -> None:
    got, ref, done, _, r = run(kernels, layout, BIAS | TRANS_B, kt=KernelType.MIX_1_2, seed=8, trace=True)
    check(got, ref, done)
    assert analyze(r.trace) == []
    got, ref, done, offs, r = run(kernels, layout, NBATCH | ASYNC, batches=2, heads=1, batch=(3, 3), loops=2,
                                  kt=KernelType.MIX_1_2, seed=9, trace=True)
    check(got, ref, done)
    assert analyze(r.trace) == []
    # GetBatchTensorC<false> gives each call's first C matrix, where the layout puts it
    first = {"BSNGD": [0, M * 3 * N], "BNGS1S2": [0, 3 * M * N]}[layout]
    assert offs[:2].tolist() == first and offs[2] == -1


def test_reading_c_before_the_async_n_batch_is_waited_for_is_a_race(kernels) -> None:
    # the cube core's writes of C are ordered by the requests' cross-core flags: a vector core that reads C
    # before GetBatchTensorC (or WaitIterateBatch) waited for the answer races the cube core's write
    got, ref, done, _, r = run(kernels, "BNGS1S2", NBATCH | ASYNC | PEEK, batches=2, batch=(3, 3), loops=2,
                               kt=KernelType.MIX_1_2, seed=12, trace=True)
    check(got, ref, done)
    line = next(i for i, t in enumerate(KERNEL.read_text().splitlines(), 1) if "// the early read" in t)
    # (RAW or WAR, as the two processes happened to run: either way unordered)
    hazards = [h for h in analyze(r.trace) if h.tensor == "cws" and h.kind in ("RAW", "WAR")]
    assert hazards, analyze(r.trace)
    h = hazards[0]
    assert {h.first.core[:4], h.second.core[:4]} == {"cube", "vect"}, h
    assert f"kernels/matmul_batch.cpp:{line}" in (h.first.site, h.second.site), h


def test_a_kernel_with_one_matmul_object_may_leave_end_out(kernels) -> None:
    # (End is what switching between objects needs; the dev kit's batch samples never call it)
    got, ref, done, _, r = run(kernels, "NORMAL", BIAS | NO_END, kt=KernelType.MIX_1_2, seed=10, trace=True)
    check(got, ref, done)
    assert analyze(r.trace) == []


def test_mix_dual_master_on_a_vector_core_is_refused_at_the_call(kernels) -> None:
    line = next(i for i, t in enumerate(KERNEL.read_text().splitlines(), 1) if "// the batch call" in t)
    with pytest.raises(KernelError, match=r"UnsupportedError: .*enableMixDualMaster on a vector core") as e:
        run(kernels, "NORMAL", DUAL, kt=KernelType.MIX_1_2)
    assert f"matmul_batch.cpp:{line}" in str(e.value), str(e.value)


def test_batch_counts_that_do_not_divide_are_an_error_at_the_call(kernels) -> None:
    line = next(i for i, t in enumerate(KERNEL.read_text().splitlines(), 1) if "// the batch call" in t)
    with pytest.raises(KernelError, match=r"Matmul::IterateBatch: batchA \(3\) and batchB \(2\) must divide") as e:
        run(kernels, "NORMAL", 0, groups=(3, 3), batch=(3, 2))
    assert f"matmul_batch.cpp:{line}" in str(e.value), str(e.value)
