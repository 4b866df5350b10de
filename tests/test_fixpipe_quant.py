"""The fixpipe's conversions out of L0C (Fixpipe to GM and to L1, quantPre with ReLU), against a numpy
reference of the documented rules: a scale word's low 32 bits as a float with 10 mantissa bits, its
mode-control bit and shift, its 9-bit offset; int8_t / uint8_t results rounded to nearest even and
saturated; a vector mode's words read before the instruction writes (here: the same L1 bytes). Our own
kernel: tests/ascendc_kernels/cube/fixpipe_quant.cpp."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import line_of, needs_cxx, source
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]

WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
NO_QUANT, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8, VQF322B8, REQ8, VREQ8 = range(9)
OUT = {np.float16: 0, np.int8: 1, np.uint8: 2, "bf16": 3}


@pytest.fixture(scope="module")
def kernel():
    from mpnpu.ascendc import compile_kernel

    return compile_kernel(source("cube/fixpipe_quant.cpp"), "fixpipe_quant", flags=WARN, kernel_type=KernelType.AIC)


def word(scale: float, offset: int = 0, signed: bool = True, shift: int | None = None) -> int:
    """A scale word as the documentation lays it out (shift N: 1..16, with the mode-control bit)."""
    w = int(np.array([scale], np.float32).view(np.uint32)[0])
    w |= (offset & 0x1FF) << 37
    w |= int(signed) << 46
    if shift is not None:
        w |= ((shift - 1) & 0xF) << 32 | 1 << 36
    return w


def scale_of(w: int) -> np.float32:
    return np.array([w & 0xFFFFE000], np.uint32).view(np.float32)[0]


def reference(c: np.ndarray, mode: int, words: np.ndarray, relu: bool, out) -> np.ndarray:
    """The documented conversion of L0C values ``c`` ([m, n]; float32 or int32), one word per column."""
    if mode in (F322F16, F322BF16):
        x = np.maximum(c, 0) if relu else c
        return x.astype(np.float16) if mode == F322F16 else x
    x = c.astype(np.int64)
    shifted = np.array([(int(w) >> 36) & 1 for w in words], bool)
    if c.dtype == np.int32 and shifted.any():
        n = np.array([((int(w) >> 32) & 0xF) + 1 for w in words])
        x = np.where(shifted, np.clip(x >> n, -32768, 32767), x)
    x = x.astype(np.float64) if c.dtype == np.int32 else c.astype(np.float64)
    s = np.array([scale_of(int(w)) for w in words], np.float64)
    x = np.where(x >= 0, x * s, 0.0 if relu else x * s)
    if out is np.float16:
        return np.clip(x, -65504, 65504).astype(np.float16)
    off = np.array([((int(w) >> 37) & 0x1FF) - (512 if (int(w) >> 37) & 0x100 else 0) for w in words])
    info = np.iinfo(out)
    return np.clip(np.rint(x + off), info.min, info.max).astype(out)


def launch(kernel, a, b_t, words, out, mode, scalar, relu, to_l1):
    m, k = a.shape
    n = b_t.shape[0]
    itemsize = 2 if out == "bf16" else np.dtype(out).itemsize
    oc0 = 32 // itemsize
    size = -(-n // oc0) * oc0 * -(-m // 16) * 16 if to_l1 else m * n
    with device(1, kernel_type=KernelType.AIC) as dev:
        c = dev.to_device("c", np.zeros(size * itemsize, np.uint8))
        w = dev.to_device("w", words.view(np.uint8))
        dev.launch(kernel, dev.to_device("a", a), dev.to_device("b", b_t), w, c, m, n, k,
                   0 if a.dtype == np.float16 else 1, OUT[out], mode, scalar, int(relu), int(to_l1))
        raw = dev.to_host(c)
    dt = np.uint16 if out == "bf16" else out
    got = raw.view(dt)
    if to_l1:  # NZ with 32-byte fractals: column block j // oc0, row i, element j % oc0
        mp = -(-m // 16) * 16
        got = got.reshape(-1, mp, oc0)[:, :m, :].transpose(1, 0, 2).reshape(m, -1)[:, :n]
    else:
        got = got.reshape(m, n)
    return got


def operands(rng, m, n, k, ints: bool):
    if ints:
        return rng.integers(-128, 128, (m, k)).astype(np.int8), rng.integers(-128, 128, (n, k)).astype(np.int8)
    return rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((n, k)).astype(np.float16)


CASES = [
    # (inputs int8?, out, mode, per-column words?, relu, word args)
    (False, np.float16, F322F16, False, False, {}),
    (False, np.float16, F322F16, False, True, {}),
    (True, np.float16, DEQF16, False, False, {"scale": 0.0078125}),
    (True, np.float16, VDEQF16, True, True, {}),
    (True, np.float16, DEQF16, False, False, {"scale": 0.5, "shift": 3}),
    (False, np.int8, QF322B8, False, False, {"scale": 20.0, "offset": -3}),
    (False, np.uint8, VQF322B8, True, False, {"signed": False}),
    (True, np.int8, REQ8, False, True, {"scale": 0.01, "offset": 5}),
    (True, np.uint8, VREQ8, True, False, {"signed": False, "offset": 100}),
    (True, np.int8, REQ8, False, False, {"scale": 0.25, "shift": 2}),
]


@pytest.mark.parametrize("to_l1", [0, 1, 2], ids=["to GM", "to L1", "to L1 by the older DataCopy"])
@pytest.mark.parametrize(("ints", "out", "mode", "vector", "relu", "args"), CASES)
def test_a_conversion_out_of_l0c_follows_the_documented_rule(kernel, to_l1, ints, out, mode, vector, relu, args):
    if to_l1 == 2 and vector:
        pytest.skip("the older copy's vector modes read SetFixPipeConfig's table, which this kernel does not set")
    rng = np.random.default_rng(mode * 10 + int(relu))
    m, n, k = 20, 40, 64
    a, b_t = operands(rng, m, n, k, ints)
    if vector:  # a scale per column, and an offset per column unless the case gives one
        scales = rng.uniform(0.001, 0.05, n) if ints else rng.uniform(5, 40, n)
        offsets = rng.integers(-20, 20, n)
        words = np.array([word(float(s), **{"offset": int(o), **args}) for s, o in zip(scales, offsets)], np.uint64)
        scalar = 0
    else:
        scalar = word(**args) if args else 0
        words = np.full(n, scalar, np.uint64)
    c = (a.astype(np.int32) @ b_t.astype(np.int32).T).astype(np.int32) if ints else \
        (a.astype(np.float32) @ b_t.astype(np.float32).T)
    got = launch(kernel, a, b_t, words, out, mode, scalar, relu, to_l1)
    want = reference(c, mode, words, relu, out)
    if out is np.float16:
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
    else:
        # a product lands within float rounding of a .5 now and then: one step apart there
        assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
        assert np.mean(got == want) > 0.99


def test_a_mode_that_does_not_convert_to_the_destination_type_is_refused_at_the_line(kernel) -> None:
    rng = np.random.default_rng(1)
    a, b_t = operands(rng, 16, 32, 32, False)
    with pytest.raises(KernelError, match=r"quantPre REQ8 does not convert float L0C data to 1-byte elements") as e:
        launch(kernel, a, b_t, np.zeros(32, np.uint64), np.int8, REQ8, 0, False, False)
    assert f"fixpipe_quant.cpp:{line_of('cube/fixpipe_quant.cpp', '// the Fixpipe to GM')}" in str(e.value)


def test_no_quant_is_refused_on_the_way_to_l1(kernel) -> None:
    rng = np.random.default_rng(2)
    a, b_t = operands(rng, 16, 32, 32, False)
    with pytest.raises(KernelError, match=r"quantPre NoQuant is not taken on the way to L1"):
        launch(kernel, a, b_t, np.zeros(32, np.uint64), np.float16, NO_QUANT, 0, False, True)
