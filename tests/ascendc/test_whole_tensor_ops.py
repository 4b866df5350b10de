"""The whole-tensor operators (``dst = src0 + src1``, -, *, /, &, |) on a kernel of our own: as many
elements as the destination holds (the Add page: the operator form's count is the destination's whole
length), numpy's results; traced on PIPE_V, so a dropped barrier before the copy-out is a hazard."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]

N = 64  # (the destinations' length; the sources hold 128)


def _run(dtype: str, drop: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    rng = np.random.default_rng(3)
    if dtype == "float32":
        x = rng.uniform(-4, 4, 128).astype(np.float32)
        y = rng.uniform(0.5, 4, 128).astype(np.float32)
    else:
        x = rng.integers(-30000, 30000, 128).astype(np.int16)
        y = rng.integers(-30000, 30000, 128).astype(np.int16)
    k = kernel("whole_tensor.cpp", "whole_tensor", kernel_type=KernelType.AIV,
               MPNPU_TEST_T="float" if dtype == "float32" else "int16_t", MPNPU_TEST_DROP=str(drop))
    with device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.full(4 * N, 7, x.dtype))
        r = dev.launch_with(LaunchOptions(trace=True), k, dev.to_device("x", x), dev.to_device("y", y), out,
                            np.uint32(N))
        return x, y, dev.to_host(out).reshape(4, N), analyze(r.trace)


def test_arithmetic_operators_compute_the_destinations_length() -> None:
    x, y, got, hazards = _run("float32")
    a, b = x[:N], y[:N]
    np.testing.assert_array_equal(got[0], a + b)
    np.testing.assert_array_equal(got[1], a - b)
    np.testing.assert_array_equal(got[2], a * b)
    np.testing.assert_allclose(got[3], a / b, rtol=1e-6)
    assert hazards == []


def test_logic_operators_on_16_bit_integers() -> None:
    x, y, got, hazards = _run("int16")
    a, b = x[:N], y[:N]
    np.testing.assert_array_equal(got, np.stack([a & b, a | b, a, b]))
    assert hazards == []


def test_a_dropped_barrier_after_an_operator_is_a_hazard() -> None:
    *_, hazards = _run("float32", drop=1)
    assert any(h.kind == "RAW" for h in hazards), hazards
