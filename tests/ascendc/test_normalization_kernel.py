"""The normalization calls on a kernel of our own, tests/ascendc_kernels/normalization.cpp: RmsNorm with its
buffer from PopStackBuffer and LayerNorm with a sharedTmpBuffer of the host helper's minimum, against numpy;
racecheck sees no hazard with the kernel's flags, and without the one before the call the copy in races it;
misuse is an error at the kernel's line. (The calls' forms, types and errors in detail:
tests/ascendc/conformance/test_normalization.py.)"""

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

R, H = 8, 64
SRC = "normalization.cpp"


def _run(mode: int, drop: tuple[str, ...] = ()):
    k = kernel(SRC, "normalization", kernel_type=KernelType.AIV)
    rng = np.random.default_rng(mode)
    x = rng.uniform(-3, 3, (R, H)).astype(np.float32)
    g = rng.uniform(-2, 2, H).astype(np.float32)
    b = rng.uniform(-2, 2, H).astype(np.float32)
    with device(1, kernel_type=KernelType.AIV) as dev:
        y = dev.empty("y", R * H + 2 * R, "float32")
        r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), k, dev.to_device("x", x.ravel()),
                            dev.to_device("g", g), dev.to_device("b", b), y, np.int32(mode))
        return x, g, b, dev.to_host(y), r.trace


def test_rmsnorm_with_the_rest_of_ub_as_its_buffer() -> None:
    x, g, _, y, trace = _run(0)
    xf = x.astype(np.float64)
    want = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-5) * g
    np.testing.assert_allclose(y[:R * H].reshape(R, H), want, rtol=2e-6, atol=1e-6)
    assert analyze(trace) == []


def test_layernorm_with_a_buffer_of_the_minimum() -> None:
    x, g, b, y, trace = _run(1)
    xf = x.astype(np.float64)
    mean, var = xf.mean(axis=1), xf.var(axis=1)
    want = (xf - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * g + b
    np.testing.assert_allclose(y[:R * H].reshape(R, H), want, rtol=2e-6, atol=1e-5)
    np.testing.assert_allclose(y[R * H:R * H + R], mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y[R * H + R:], var, rtol=1e-6)
    assert analyze(trace) == []


@pytest.mark.slow
def test_without_the_flag_before_it_the_copy_in_races_the_call() -> None:
    wait = f"{SRC}:{line_of(SRC, 'WaitFlag<HardEvent::MTE2_V>(0)')}"
    *_, trace = _run(1, drop=(wait,))
    raw = [h for h in analyze(trace) if (h.first.pipe, h.second.pipe) == ("PIPE_MTE2", "PIPE_V")]
    assert raw and {h.kind for h in raw} == {"RAW"}, analyze(trace)
    call = line_of(SRC, "LayerNorm<float>(dst, mean, var, src, g, b, tmp, 1e-5f, tiling);")
    assert {h.second.site for h in raw} == {f"ascendc_kernels/{SRC}:{call}"}


@pytest.mark.slow
@pytest.mark.parametrize("mode, message, text", [
    (10, "LayerNorm: sharedTmpBuffer has 480 bytes, fewer than the 512", "LayerNorm<float>(dst, mean"),
    (11, "LayerNorm: outputMean and gamma overlap", "the mean over gamma"),
])
def test_misuse_is_an_error_at_the_kernels_line(mode: int, message: str, text: str) -> None:
    with pytest.raises(KernelError, match=message) as e:
        _run(mode)
    assert f"{SRC}:{line_of(SRC, text)}" in str(e.value), str(e.value)
