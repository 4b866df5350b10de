"""Fill / InitConstValue (mpnpu/cube/basic.h) on a cube kernel of our own: L1 filled on MTE2 and L0A on
MTE1, repeats and gaps as documented (the matrix product shows which fractals hold the value); an L0C
tensor is an error at the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]


@pytest.mark.parametrize("av,bv", [(1.0, 2.0), (-0.5, 3.0)])
def test_fill_sets_the_blocks_it_names(av: float, bv: float) -> None:
    with device(1, kernel_type=KernelType.AIC) as dev:
        c = dev.to_device("c", np.full(48 * 16, -7, np.float32))
        r = dev.launch_with(LaunchOptions(trace=True), kernel("cube/fill.cpp", "fill_cube"), c, np.float32(av),
                            np.float32(bv), 0)
        got = dev.to_host(c).reshape(48, 16)
    want = np.zeros((48, 16), np.float32)
    want[0:16] = want[32:48] = av * bv * 16  # fractals 0 and 2 of A hold av; fractal 1 stays 0
    np.testing.assert_array_equal(got, want)
    assert analyze(r.trace) == []


def test_filling_an_l0c_tensor_is_an_error_at_the_line() -> None:
    with device(1, kernel_type=KernelType.AIC) as dev:
        c = dev.empty("c", 48 * 16, "float32")
        with pytest.raises(KernelError) as ei:
            dev.launch(kernel("cube/fill.cpp", "fill_cube"), c, np.float32(1), np.float32(1), 1)
    msg = str(ei.value)
    assert "Fill: dst must be in L1, L0A or L0B (A1/B1, A2, B2), it is in L0C" in msg, msg
    assert f"cube/fill.cpp:{line_of('cube/fill.cpp', '// an L0C tensor')}" in msg, msg
