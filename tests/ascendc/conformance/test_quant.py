"""AscendQuant and AscendAntiQuant against numpy (kernels/quant.cpp). Quant: round half to even of
src * scale + offset computed in half (operands and each step), saturated to int8, for scalars and
per-channel tensors (the scale, and the offset, repeating every scaleCount elements), every documented
form with and without the buffer and counts, float and half, counts that stop short of the tensor (the
rest of dst untouched). AntiQuant: scale * (src + offset) per group of rows (or, transposed, of
columns), each step rounded to half for a half destination, in float for bfloat16_t; the parameters'
shape from AntiQuantShapeInfo, from offset's ShapeInfo, or taken as one row; the scalar forms. Misuse
at the kernel's line."""

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

KERNEL = Path(__file__).parent / "kernels" / "quant.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
SCALE, OFFSET = np.float32(1.75), np.float32(-2.5)
INIT = 99  # what dst held


@pytest.fixture(scope="module")
def kernel():
    from mpnpu.ascendc import compile_kernel

    return compile_kernel(str(KERNEL), "quant", flags=WARN, kernel_type=KernelType.AIV)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def quantise(kernel, dt, form, n=256, cal=None, count=64, seed=0, trace=False):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-80, 80, n)
    x[::5] = np.round(x[::5] / 4) * 4  # ties: 1.75 * 4j - 2.5 ends in .5
    x = x.astype(dt)
    par = rng.uniform(-3, 3, 512 // np.dtype(dt).itemsize).astype(dt)
    cal = n if cal is None else cal
    with device(1, kernel_type=KernelType.AIV) as dev:
        args = [dev.to_device("src", x), dev.to_device("par", par), dev.to_device("dst", np.full(n, INIT, np.int8))]
        r = dev.launch_with(LaunchOptions(trace=trace), kernel, *args, 0, 0 if dt == np.float32 else 1, n, cal,
                            count, form, 0)
        out = dev.to_host(args[2])
    per = 256 // np.dtype(dt).itemsize
    scale, offset = par[:per].astype(np.float32), par[per:].astype(np.float32)
    whole = form in (2, 3, 6, 7)
    used = n if whole else cal
    width = count  # (the parameter tensors are count elements: the whole forms take their size)
    idx = np.arange(used)
    r_ = (lambda v: np.asarray(v, np.float32).astype(np.float16).astype(np.float32))  # noqa: E731  (in half)
    if form < 4:
        v = r_(r_(r_(x[:used]) * r_(SCALE)) + r_(OFFSET))
    else:
        off = offset[idx % width] if form in (5, 6) else r_(OFFSET)
        v = r_(r_(r_(x[:used]) * r_(scale[idx % width])) + r_(off))
    want = np.full(n, INIT, np.int8)
    want[:used] = np.clip(np.rint(v), -128, 127).astype(np.int8)
    return out, want, r


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("form,cal", [(0, 200), (1, 37), (2, None), (3, None), (4, 192), (5, 128), (6, None),
                                      (7, None), (0, 0)])
def test_quant_every_form_equals_numpy(kernel, dt, form, cal) -> None:
    out, want, r = quantise(kernel, dt, form, cal=cal, seed=form, trace=form == 4)
    np.testing.assert_array_equal(out, want)
    if form == 4:
        assert analyze(r.trace) == []


def antiquantise(kernel, out_t, form, k=8, cols=64, groups=2, transpose=False, shape_from=0, seed=0):
    rng = np.random.default_rng(seed)
    src = rng.integers(-128, 128, (cols, k) if transpose else (k, cols)).astype(np.int8)
    par = rng.uniform(-4, 4, 2048 // 2).astype(np.float32)
    par_dev = bf16_bits(par) if out_t == "bf16" else par.astype(np.float16)
    par = from_bf16(par_dev) if out_t == "bf16" else par_dev.astype(np.float32)
    n = k * cols
    with device(1, kernel_type=KernelType.AIV) as dev:
        args = [dev.to_device("src", src.ravel()), dev.to_device("par", par_dev),
                dev.to_device("dst", np.zeros(n, np.uint16))]
        dev.launch_with(LaunchOptions(), kernel, *args, 1, 0 if out_t == "f16" else 1, k, cols, groups, form,
                        int(transpose) | shape_from << 1)
        out = dev.to_host(args[2]).view(np.uint16)
    got = from_bf16(out) if out_t == "bf16" else out.view(np.float16).astype(np.float32)
    np_ = groups * cols
    scale, offset = par[:np_], par[512:512 + np_]
    shape = (cols, groups) if transpose else (groups, cols)
    scale, offset = scale.reshape(shape), offset.reshape(shape)
    gs = k // groups
    if transpose:
        s, o = np.repeat(scale, gs, axis=1), np.repeat(offset, gs, axis=1)
    else:
        s, o = np.repeat(scale, gs, axis=0), np.repeat(offset, gs, axis=0)
    if form == 1:
        o = np.zeros_like(o)
    if form == 2:
        s, o = np.float32(0.5), np.float32(-3.0)
    x = src.astype(np.float32)
    if out_t == "f16":
        h = lambda v: np.asarray(v, np.float32).astype(np.float16).astype(np.float32)  # noqa: E731
        want = h(s * h(x + o))
    else:
        want = from_bf16(bf16_bits(s * (x + o)))
    return got.reshape(src.shape), want


@pytest.mark.parametrize("out_t", ["f16", "bf16"])
@pytest.mark.parametrize("form", [0, 1, 2, 3])
@pytest.mark.parametrize("transpose", [False, True])
def test_antiquant_groups_equal_numpy(kernel, out_t, form, transpose) -> None:
    got, want = antiquantise(kernel, out_t, form, k=8 if not transpose else 64, cols=64 if not transpose else 16,
                             groups=2 if not transpose else 4, transpose=transpose, seed=form)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape_from", [1, 2])
def test_antiquant_shape_from_shape_info_or_one_row(kernel, shape_from) -> None:
    groups = 4 if shape_from == 1 else 1
    got, want = antiquantise(kernel, "f16", 0, k=8, cols=32, groups=groups, shape_from=shape_from, seed=3)
    np.testing.assert_array_equal(got, want)


def test_quant_misuse_is_an_error_at_the_kernels_line(kernel) -> None:
    for form, cal, count, message in [
        (4, 192, 48, "AscendQuant: scaleCount 48 is not a positive multiple of 32"),
        (4, 48, 32, "AscendQuant: calCount 48 is not a multiple of scaleCount 32"),
        (8, 64, 64, "AscendQuant: srcTensor and dstTensor overlap"),
        (1, 300, 64, "AscendQuant: count 300 exceeds srcTensor's 256 elements"),
    ]:
        with pytest.raises(KernelError, match=message) as e:
            quantise(kernel, np.float32, form, cal=cal, count=count)
        assert "quant.cpp:" in str(e.value)


def test_antiquant_misuse_is_an_error_at_the_kernels_line(kernel) -> None:
    with pytest.raises(KernelError, match=r"AscendAntiQuant: k 8 is not a multiple of the parameters' 3 groups") as e:
        antiquantise(kernel, "f16", 0, k=8, cols=32, groups=3)
    assert "quant.cpp:" in str(e.value)
