"""Exp on float: within 1 ulp of the correctly rounded e^x, the IEEE specials, and the same bits
whichever path the engine takes (a whole vectorised row, in place, or lane by lane under a mask)."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

N = 4096  # 64 repeats of 64 lanes

SOURCE = r'''#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t N = 4096;
extern "C" __global__ __aicore__ void exp_paths(GM_ADDR x, GM_ADDR rowOut, GM_ADDR inPlaceOut, GM_ADDR laneOut) {
    GlobalTensor<float> xg, rg, ig, lg;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    rg.SetGlobalBuffer((__gm__ float*)rowOut, N);
    ig.SetGlobalBuffer((__gm__ float*)inPlaceOut, N);
    lg.SetGlobalBuffer((__gm__ float*)laneOut, N);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bz;
    pipe.InitBuffer(bx, N * sizeof(float));
    pipe.InitBuffer(by, N * sizeof(float));
    pipe.InitBuffer(bz, N * sizeof(float));
    LocalTensor<float> a = bx.Get<float>(), b = by.Get<float>(), c = bz.Get<float>();
    DataCopy(a, xg, N);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Exp(b, a, N);                        // count form, dst apart from src: whole rows
    Duplicate(c, 0.0f, N);
    uint64_t mask[2] = {~uint64_t(1), 0};  // every lane but lane 0: lane by lane
    Exp(c, a, mask, N / 64, UnaryRepeatParams(1, 1, 8, 8));
    Exp(a, a, N);                        // in place: whole rows
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(rg, b, N);
    DataCopy(ig, a, N);
    DataCopy(lg, c, N);
}
'''


def exp_rounded(x: np.ndarray) -> np.ndarray:
    """e^x in double, rounded once to float (inf where it overflows float)."""
    with np.errstate(over="ignore"):
        return np.exp(x.astype(np.float64)).astype(np.float32)


def ordered(v: np.ndarray) -> np.ndarray:
    """Float bits as integers in the order of the floats (ulp distance = difference)."""
    i = v.astype(np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    src = tmp_path_factory.mktemp("exp") / "exp_paths.cpp"
    src.write_text(SOURCE)
    return compile_kernel(str(src), "exp_paths", kernel_type=KernelType.AIV)


def run(kernel, x: np.ndarray) -> dict[str, np.ndarray]:
    with Device(1, kernel_type=KernelType.AIV) as dev:
        xt = dev.to_device("x", x.astype(np.float32))
        outs = {n: dev.empty(n, (N,), "float32") for n in ("row", "in_place", "lane")}
        dev.launch(kernel, xt, outs["row"], outs["in_place"], outs["lane"])
        return {n: dev.to_host(t) for n, t in outs.items()}


@pytest.mark.slow
def test_every_path_is_within_one_ulp_and_gives_the_same_bits(kernel) -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-104, 89, N // 2), rng.normal(0, 3, N // 4),
                        rng.uniform(-1e-3, 1e-3, N // 4)]).astype(np.float32)
    out = run(kernel, x)
    want = exp_rounded(x)
    assert np.abs(ordered(out["row"]) - ordered(want)).max() <= 1
    assert out["in_place"].tobytes() == out["row"].tobytes()
    lanes = np.arange(N) % 64 != 0
    assert out["lane"][lanes].tobytes() == out["row"][lanes].tobytes()
    assert not out["lane"][~lanes].any()  # the masked-off lanes were left alone


@pytest.mark.slow
def test_the_specials_overflow_and_the_subnormal_range(kernel) -> None:
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72, 88.7229, 88.73, 1000.0, -87.3, -100.0,
                         -103.9, -103.97, -104.5, -1000.0, 1e-30, -1e-30], np.float32)
    x = np.resize(specials, N)
    got = run(kernel, x)["row"][:len(specials)]
    want = exp_rounded(specials)
    assert np.isnan(got[2]) and np.isnan(want[2])
    finite = ~np.isnan(want)
    assert np.abs(ordered(got[finite]) - ordered(want[finite])).max() <= 1
    assert got[0] == np.inf and got[1] == 0.0 and got[7] == np.inf and got[13] == 0.0
