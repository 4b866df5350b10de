"""BlockReduceMax / Min / Sum on float through a compiled kernel (the engine's 8-blocks-at-a-time
path for whole repeats): exactly the documented results, with NaN, signed zeros and ties."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

REPEATS = 32
N = REPEATS * 64

SOURCE = r'''#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t N = 2048, R = N / 64;
extern "C" __global__ __aicore__ void block_reduce(GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    og.SetGlobalBuffer((__gm__ float*)out, 3 * R * 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo;
    pipe.InitBuffer(bx, N * sizeof(float));
    pipe.InitBuffer(bo, 3 * R * 8 * sizeof(float));
    LocalTensor<float> a = bx.Get<float>(), o = bo.Get<float>();
    DataCopy(a, xg, N);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    BlockReduceMax(o, a, R, 64, 1, 1, 8);
    BlockReduceMin(o[R * 8], a, R, 64, 1, 1, 8);
    BlockReduceSum(o[2 * R * 8], a, R, 64, 1, 1, 8);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, 3 * R * 8);
}
'''


def scan(block: np.ndarray, larger: bool) -> np.float32:
    """Lane 0, then any lane strictly larger (smaller): NaN only from lane 0, the first of ties."""
    m = block[0]
    for v in block[1:]:
        if (v > m) if larger else (v < m):
            m = v
    return m


def tree(block: np.ndarray) -> np.float32:
    v = list(block)
    while len(v) > 1:
        v = [np.float32(v[2 * i] + v[2 * i + 1]) for i in range(len(v) // 2)]
    return v[0]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    src = tmp_path_factory.mktemp("block_reduce") / "block_reduce.cpp"
    src.write_text(SOURCE)
    return compile_kernel(str(src), "block_reduce", kernel_type=KernelType.AIV)


@pytest.mark.slow
def test_block_results_are_the_scan_and_the_tree(kernel) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1e3, N).astype(np.float32)
    pool = np.array([np.nan, 0.0, -0.0, 1.0, 1.0, -np.inf, np.inf, 3e38, -3e38], np.float32)
    special = rng.random(N) < 0.3
    x[special] = rng.choice(pool, special.sum())
    x[:8] = [np.nan, 5, 1, 2, 3, 4, 5, 6]  # NaN in lane 0 wins
    x[8:16] = [1, np.nan, 7, 2, np.nan, 7, 0, 1]  # NaN elsewhere is passed over
    x[16:24] = [-0.0, 0.0, 0.0, -0.0, -0.0, 0.0, -0.0, 0.0]  # ties: the first
    with Device(1, kernel_type=KernelType.AIV) as dev:
        xt = dev.to_device("x", x)
        out = dev.empty("out", (3 * REPEATS * 8,), "float32")
        dev.launch(kernel, xt, out)
        got = dev.to_host(out).reshape(3, -1)
    blocks = x.reshape(-1, 8)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.array([[scan(b, True) for b in blocks], [scan(b, False) for b in blocks],
                         [tree(b) for b in blocks]], np.float32)
    assert got.view(np.uint32)[:2].tobytes() == want.view(np.uint32)[:2].tobytes()  # max, min: every bit
    np.testing.assert_array_equal(got[2], want[2])  # sums: the same value, NaN where NaN
    assert np.isnan(got[0, 0]) and got[0, 1] == 7 and np.signbit(got[0, 2]) and np.signbit(got[1, 2])
