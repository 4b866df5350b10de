"""The sorting library, CumSum, Sum and GetMrgSortResult on a kernel of our own (tests/ascendc_kernels/sort_lib.cpp)
against numpy, through the device: a full sort and its running sum and total, a suspended merge's counts read
after a V_S flag (and the race without it), and misuse reported at the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions, RuntimeOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]


def _run(dt, mode: int = 0, drop: tuple[str, ...] = ()):
    rng = np.random.default_rng(5)
    x = (rng.integers(-30, 30, 96) / 4).astype(dt)  # quarters: ties, exact in half
    with device(1, kernel_type=KernelType.AIV, options=RuntimeOptions(auto_sync=False)) as dev:
        xd = dev.to_device("x", x)
        vals = dev.to_device("vals", np.zeros(96, dt))
        idxs = dev.to_device("idxs", np.zeros(96, np.uint32))
        cums = dev.to_device("cums", np.zeros(96, dt))
        sums = dev.to_device("sums", np.zeros(32 // np.dtype(dt).itemsize, dt))
        counts = dev.to_device("counts", np.zeros(16, np.uint16))
        r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), kernel("sort_lib.cpp", "sort_lib_kernel"),
                            xd, vals, idxs, cums, sums, counts, np.int32(dt == np.float16), np.int32(mode))
        out = [dev.to_host(t) for t in (vals, idxs, cums, sums, counts)]
    return r, x, out


@pytest.mark.parametrize("dt", [np.float32, np.float16], ids=["float", "half"])
def test_sort_extract_cumsum_sum(dt) -> None:
    r, x, (vals, idxs, cums, sums, counts) = _run(dt)
    order = np.argsort(-x.astype(np.float64), kind="stable")
    np.testing.assert_array_equal(idxs, order)
    np.testing.assert_array_equal(vals, x[order])
    want = np.cumsum(x[order].astype(np.float32), dtype=np.float32).astype(dt)
    np.testing.assert_array_equal(cums, want)
    assert sums[0] == pytest.approx(float(x.astype(np.float64).sum()), abs=1e-3)
    # the merge of the first two sorted groups of 32 stops when one runs out: one queue at 32
    assert counts[0] + counts[1] < 64 and max(counts[:2]) == 32 and counts[2] == counts[3] == 0
    assert analyze(r.trace) == []


def test_without_the_v_s_flag_the_counts_read_races_the_merge() -> None:
    wait = f"sort_lib.cpp:{line_of('sort_lib.cpp', 'WaitFlag<HardEvent::V_S>(1)')}"
    r, _, _ = _run(np.float32, drop=(wait,))
    counts_at = f"ascendc_kernels/sort_lib.cpp:{line_of('sort_lib.cpp', '// the counts')}"
    spr = [h for h in analyze(r.trace) if (h.first.pipe, h.second.pipe) == ("PIPE_V", "PIPE_S")
           and h.second.site == counts_at]
    assert spr, analyze(r.trace)
    assert {h.kind for h in spr} == {"RAW"}


@pytest.mark.parametrize("mode,text,msg", [
    (1, "// the full sort", "Sort: repeatTime 300 is outside [0, 255]"),
    (2, "// the counts", "GetMrgSortResult: the counts are defined after a MrgSort with ifExhaustedSuspension"),
])
def test_misuse_is_an_error_at_the_line(mode: int, text: str, msg: str) -> None:
    with pytest.raises(KernelError) as ei:
        _run(np.float32, mode)
    s = str(ei.value)
    assert msg in s, s
    assert f"sort_lib.cpp:{line_of('sort_lib.cpp', text)}" in s, s
