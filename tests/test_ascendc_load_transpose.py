"""LoadDataWithTranspose (L1 -> L0B, PIPE_MTE1): a float B [k, n] as it is in GM reaches Mmad's Zn
through squares of two 16 x 8 fractals transposed into two fractals ``dstFracGap`` apart; a half B
through one transposed 16 x 16 fractal per square. Checked against numpy's float32 matmul."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx, source
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")


@pytest.mark.parametrize("dtype,types", [("float32", 0), ("float16", 1)])
def test_matmul_with_b_transposed_into_l0b(dtype, types) -> None:
    k = compile_kernel(source("cube/load_transpose.cpp"), "load_transpose", flags=WARN)
    rng = np.random.default_rng(7)
    with device(1, kernel_type=KernelType.AIC) as dev:
        for m, n, kk in ((16, 16, 16), (20, 40, 37), (33, 8, 70), (48, 72, 64)):
            a = rng.standard_normal((m, kk)).astype(dtype)
            b = rng.standard_normal((kk, n)).astype(dtype)
            c = dev.empty("c", (m, n), "float32")
            launch = dev.launch_with(LaunchOptions(trace=True), k, dev.to_device("a", a), dev.to_device("b", b), c,
                                     m, n, kk, types)
            ref = a.astype(np.float32) @ b.astype(np.float32)
            np.testing.assert_allclose(dev.to_host(c), ref, rtol=1e-5, atol=1e-4 * np.abs(ref).max())
            assert analyze(launch.trace) == []
