"""TopK and the library's ReduceMax against numpy (kernels/topk.cpp). TopK: each row's k largest or smallest
of its first n values in order, ties by position, with their positions or the given indices, finished rows'
indices set to n, the padding after k untouched; Normal and Small modes, float and half, with tmpLocal at and
above the host helper's minimum, below it (an error at the kernel's line) and without one; TopKConfig's
order; the host helpers. ReduceMax<T, AR / RA>: each row's (column's) largest, half and float, with and
without a sharedTmpBuffer, and GetReduceMaxMaxMinTmpSize."""

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

KERNEL = Path(__file__).parent / "kernels" / "topk.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
INIT_INDEX, FINISH, SMALL, LARGEST, TMP, SMALLEST_CFG = 1, 2, 4, 8, 16, 32
PAD_VALUE, PAD_INDEX = -7.0, -9


@pytest.fixture(scope="module")
def kernel():
    from mpnpu.ascendc import compile_kernel

    return compile_kernel(str(KERNEL), "topk", flags=WARN, kernel_type=KernelType.AIV)


def topk(kernel, dt, outter, inner, n, k, flags, tmp=0, seed=0, trace=False):
    rng = np.random.default_rng(seed)
    x = rng.integers(-20, 20, (outter, inner)).astype(dt)  # (small integers: many ties)
    x[:, n:] = 1000 if not flags & LARGEST else -1000  # padding that would win if it were read
    small = bool(flags & SMALL)
    index = rng.permutation(10_000)[: outter * inner if small else inner].astype(np.int32)
    finish = np.zeros(32, np.bool_)
    finish[:outter] = rng.integers(0, 2, outter).astype(np.bool_)
    per = 32 // np.dtype(dt).itemsize
    k_pad = k if small else -(-k // per) * per
    k_pad_i = k if small else -(-k // 8) * 8
    with device(1, kernel_type=KernelType.AIV) as dev:
        args = [dev.to_device("src", x.ravel()), dev.to_device("index", index),
                dev.to_device("fin", finish.view(np.uint8)),
                dev.to_device("dst", np.full(outter * k_pad, PAD_VALUE, dt)),
                dev.to_device("dsti", np.full(outter * k_pad_i, PAD_INDEX, np.int32)),
                dev.to_device("misc", np.zeros(8, np.uint32))]
        r = dev.launch_with(LaunchOptions(trace=trace), kernel, *args, 0, 0 if dt == np.float32 else 1, outter,
                            inner, n, k, flags, tmp)
        vals = dev.to_host(args[3]).reshape(outter, k_pad)
        idx = dev.to_host(args[4]).reshape(outter, k_pad_i)
        misc = dev.to_host(args[5])
    largest = bool(flags & LARGEST) and not flags & SMALLEST_CFG
    want_v = np.full((outter, k_pad), PAD_VALUE, dt)
    want_i = np.full((outter, k_pad_i), PAD_INDEX, np.int32)
    for r_ in range(outter):
        key = x[r_, :n].astype(np.float64)
        order = np.argsort(-key if largest else key, kind="stable")[:k]
        want_v[r_, :k] = x[r_, order]
        pos = order if not flags & INIT_INDEX else index[(r_ * inner if small else 0) + order]
        want_i[r_, :k] = n if flags & FINISH and finish[r_] else pos
    return vals, idx, want_v, want_i, misc, r


CASES = [  # (outter, inner, n, k, flags)
    (3, 64, 64, 5, LARGEST), (2, 96, 70, 9, 0), (4, 32, 32, 32, LARGEST | INIT_INDEX),
    (3, 64, 50, 3, FINISH | LARGEST), (2, 128, 100, 17, INIT_INDEX | FINISH), (1, 4096, 4000, 8, LARGEST),
    # Small mode: outter x k whole 32-byte blocks of either type (the kernel copies its rows back to back)
    (4, 32, 32, 4, SMALL | LARGEST), (2, 32, 20, 8, SMALL | INIT_INDEX),
    (1, 32, 32, 16, SMALL | INIT_INDEX | SMALLEST_CFG | LARGEST),
]


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("tmp", [False, True])
@pytest.mark.parametrize("outter,inner,n,k,flags", CASES)
def test_topk_equals_numpy(kernel, dt, tmp, outter, inner, n, k, flags) -> None:
    vals, idx, want_v, want_i, misc, r = topk(kernel, dt, outter, inner, n, k, flags | (TMP if tmp else 0),
                                              seed=outter * k + flags, trace=tmp and k == 5)
    np.testing.assert_array_equal(vals, want_v)
    np.testing.assert_array_equal(idx, want_i)
    per_row = 16 * inner
    want_tmp = per_row * (outter if flags & SMALL else 1)
    assert list(misc[:4]) == [want_tmp, want_tmp, want_tmp, -(-k // 8) * 8]
    if tmp and k == 5:
        assert analyze(r.trace) == []


def test_topk_tmp_above_the_minimum_and_below_it(kernel) -> None:
    vals, idx, want_v, want_i, _, _ = topk(kernel, np.float32, 2, 64, 64, 4, LARGEST | TMP, tmp=64 * 16 + 96)
    np.testing.assert_array_equal(vals, want_v)
    np.testing.assert_array_equal(idx, want_i)
    with pytest.raises(KernelError, match=r"TopK: tmpLocal has 992 bytes, below the minimum 1024") as e:
        topk(kernel, np.float32, 2, 64, 64, 4, LARGEST | TMP, tmp=992)
    assert "topk.cpp:" in str(e.value)


@pytest.mark.parametrize("outter,inner,n,k,flags,message", [
    (2, 64, 64, 65, 0, r"TopK: k 65 is outside \[1, n 64\]"),
    (2, 48, 40, 4, 0, r"TopK: TopKInfo \{outter 2, inner 48\}: inner must be a positive multiple of 32"),
    (2, 64, 64, 4, SMALL, r"inner must be a positive multiple of 32 \(Small mode: exactly 32\)"),
    (2, 32, 32, 4, SMALL | FINISH, r"TopK: isHasfinish is not supported in Small mode"),
])
def test_topk_misuse_is_an_error_at_the_kernels_line(kernel, outter, inner, n, k, flags, message) -> None:
    with pytest.raises(KernelError, match=message) as e:
        topk(kernel, np.float32, outter, inner, n, k, flags)
    assert "topk.cpp:" in str(e.value)


def reduce_max(kernel, dt, rows, cols, ra, tmp, seed=0):
    per = 32 // np.dtype(dt).itemsize
    ld = -(-cols // per) * per
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, cols)).astype(dt)
    padded = np.full((rows, ld), 1e4, dt)  # the padding must not count
    padded[:, :cols] = x
    outs = cols if ra else rows
    with device(1, kernel_type=KernelType.AIV) as dev:
        args = [dev.to_device("src", padded.ravel()), dev.to_device("dst", np.zeros(outs, dt)),
                dev.to_device("misc", np.zeros(8, np.uint32))]
        dev.launch_with(LaunchOptions(), kernel, args[0], args[0], args[0], args[1], args[1], args[2], 1,
                        0 if dt == np.float32 else 1, rows, cols, 0, int(ra), TMP if tmp else 0, 0)
        got = dev.to_host(args[1])
        misc = dev.to_host(args[2])
    return got, x.max(axis=0 if ra else 1), misc, ld * np.dtype(dt).itemsize


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("rows,cols", [(3, 5), (4, 64), (7, 130)])
@pytest.mark.parametrize("ra", [False, True])
@pytest.mark.parametrize("tmp", [False, True])
def test_reduce_max_ar_ra_equal_numpy(kernel, dt, rows, cols, ra, tmp) -> None:
    got, want, misc, row_bytes = reduce_max(kernel, dt, rows, cols, ra, tmp, seed=rows * cols)
    np.testing.assert_array_equal(got, want)
    assert list(misc[:2]) == [-(-row_bytes // 32) * 32] * 2
