"""The library's ReduceSum<float, Pattern::Reduce::AR / RA> (kernels/reduce_lib.cpp) against numpy, to
the bit: AR sums each row as Sum does (each 64-float repeat by a tree of adjacent pairs, the repeats
then one after another), RA each column row after row; with and without a sharedTmpBuffer; racecheck
sees no hazard; srcInnerPad false and overlapping operands are errors at the call's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]

KERNEL = Path(__file__).parent / "kernels" / "reduce_lib.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")


@pytest.fixture(scope="module")
def kernel():
    from mpnpu.ascendc import compile_kernel

    return compile_kernel(str(KERNEL), "reduce_lib", flags=WARN, kernel_type=KernelType.AIV)


def row_sums(x: np.ndarray) -> np.ndarray:
    rows, cols = x.shape
    reps = -(-cols // 64)
    v = np.zeros((rows, reps * 64), np.float32)
    v[:, :cols] = x
    v = v.reshape(rows, reps, 64)
    while v.shape[-1] > 1:  # adjacent pairs, each sum rounded to float
        v = (v[..., 0::2] + v[..., 1::2]).astype(np.float32)
    total = v[:, 0, 0].copy()
    for r in range(1, reps):
        total = (total + v[:, r, 0]).astype(np.float32)
    return total


def col_sums(x: np.ndarray) -> np.ndarray:
    total = x[0].copy()
    for r in range(1, x.shape[0]):
        total = (total + x[r]).astype(np.float32)
    return total


def run(kernel, rows, cols, pattern, tmp, misuse=0, seed=0):
    x = np.random.default_rng(seed).normal(size=(rows, cols)).astype(np.float32)
    ld = -(-cols // 8) * 8
    padded = np.full((rows, ld), np.nan, np.float32)  # the padding must not be summed
    padded[:, :cols] = x
    outs = rows if pattern == 0 else cols
    with device(1, kernel_type=KernelType.AIV) as dev:
        src = dev.to_device("src", padded)
        dst = dev.to_device("dst", np.zeros(-(-outs // 8) * 8, np.float32))
        r = dev.launch_with(LaunchOptions(trace=True), kernel, src, dst, rows, cols, pattern, tmp, misuse)
        got = dev.to_host(dst)[:outs]
    return got, (row_sums(x) if pattern == 0 else col_sums(x)), r


@pytest.mark.parametrize("rows,cols", [(3, 5), (4, 64), (2, 200), (7, 130)])
@pytest.mark.parametrize("pattern", [0, 1])
@pytest.mark.parametrize("tmp", [0, 1])
def test_reduce_sum_ar_ra_equal_numpy_to_the_bit(kernel, rows, cols, pattern, tmp) -> None:
    got, ref, r = run(kernel, rows, cols, pattern, tmp, seed=rows * cols)
    np.testing.assert_array_equal(got, ref)
    assert analyze(r.trace) == []


@pytest.mark.parametrize("misuse,message", [(1, "srcInnerPad must be true"), (2, "dstTensor overlaps srcTensor")])
def test_misuse_is_an_error_at_the_call(kernel, misuse, message) -> None:
    line = next(i for i, t in enumerate(KERNEL.read_text().splitlines(), 1) if "// the call" in t)
    with pytest.raises(KernelError, match=message) as e:
        run(kernel, 4, 16, 0, 1, misuse)
    assert f"reduce_lib.cpp:{line}" in str(e.value), str(e.value)
