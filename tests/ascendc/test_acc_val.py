"""GetAccVal: the accumulator register a ReduceSum sets, read by the scalar unit. A vector-pipe write
and a scalar read of the core's special-register bytes (memory "SPR"), so racecheck wants them
ordered: by the kernel's V_S flag, or, in a kernel built with the compiler's automatic
synchronisation (the default), by the sync the compiler inserts (docs/pipes.md)."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions, RuntimeOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]


def _run(n: int, *, auto_sync: bool = True, drop: tuple[str, ...] = ()):
    k = kernel("acc_val.cpp", "acc_val")
    x = np.random.default_rng(n).uniform(-4, 4, 1024).astype(np.float32)
    with device(1, kernel_type=KernelType.AIV, options=RuntimeOptions(auto_sync=auto_sync)) as dev:
        xd = dev.to_device("x", x)
        out = dev.empty("out", 8, "float32")
        r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), k, xd, out, np.int32(n))
        return r.trace, dev.to_host(out), x


def _site(text: str) -> str:
    return f"ascendc_kernels/acc_val.cpp:{line_of('acc_val.cpp', text)}"


@pytest.mark.parametrize("n", [64, 200, 1024])
def test_getaccval_returns_the_reducesum_result(n: int) -> None:
    trace, out, x = _run(n)
    # the count form: the repeat sums of 64 lanes, added in order
    ref = np.float32(0)
    for r in range(0, n, 64):
        ref = np.float32(ref + np.float32(x[r:min(r + 64, n)].astype(np.float64).sum()))
    assert out[0] == pytest.approx(float(ref), rel=1e-5, abs=1e-5)
    assert out[1] == out[0] and out[2] == 0.0  # the raw form: the float's bits in the low bytes
    assert out[3] == out[0]  # GetReduceRepeatSumSpr: the same register
    assert analyze(trace) == []


def test_the_v_s_flag_orders_the_read_without_auto_sync() -> None:
    trace, _, _ = _run(200, auto_sync=False)
    assert analyze(trace) == []


def test_without_the_flag_or_auto_sync_the_read_races_the_reducesum() -> None:
    wait = f"acc_val.cpp:{line_of('acc_val.cpp', 'WaitFlag<HardEvent::V_S>(1)')}"
    trace, _, _ = _run(200, auto_sync=False, drop=(wait,))
    spr = [h for h in analyze(trace) if (h.first.pipe, h.second.pipe) == ("PIPE_V", "PIPE_S")]
    assert spr, analyze(trace)
    assert {h.kind for h in spr} == {"RAW"}
    assert {h.first.site for h in spr} == {_site("ReduceSum(d, t, w, n)")}
    assert {h.second.site for h in spr} == {_site("GetAccVal<float>()"), _site("uint64_t raw = GetAccVal()"),
                                            _site("GetReduceRepeatSumSpr<float>()")}


def test_auto_sync_orders_the_read_when_the_kernel_has_no_flag() -> None:
    wait = f"acc_val.cpp:{line_of('acc_val.cpp', 'WaitFlag<HardEvent::V_S>(1)')}"
    trace, out, _ = _run(200, drop=(wait,))
    assert trace.auto_sync and analyze(trace) == []
