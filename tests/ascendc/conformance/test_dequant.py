"""AscendDequant against numpy: int32 rows times a scale vector (or a scalar) over the first calCount
elements of each row, every element of the row converted (in float, rounded to the destination type
to nearest even), the padding columns of the destination untouched; the single-row mode that reads
{1, n, calCount} as n / calCount rows; the type combinations of this chip class; misuse at the
kernel's line (kernels/dequant.cpp)."""

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

KERNEL = Path(__file__).parent / "kernels" / "dequant.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
MULTI = 4
# types: (code, destination, scale)
TYPES = {"f32": (0, "float32", "float32"), "f16_u64": (1, "float16", "uint64"), "bf16_f32": (2, "bfloat16", "float32"),
         "f32_bf16": (3, "float32", "bfloat16"), "bf16_bf16": (4, "bfloat16", "bfloat16")}
PAD = -3.0


@pytest.fixture(scope="module")
def kernel():
    from mpnpu.ascendc import compile_kernel

    return compile_kernel(str(KERNEL), "dequant", flags=WARN)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def dequant(kernel, types, m, n, cal, form, seed=0, trace=False):
    code, dst_t, scale_t = TYPES[types]
    rng = np.random.default_rng(seed)
    src = rng.integers(-3000, 3000, (m, n)).astype(np.int32)
    scale = rng.uniform(-2, 2, 128).astype(np.float32)  # (the kernel copies 256 bytes of scale)
    if scale_t == "bfloat16":
        scale_dev = bf16_bits(scale)
        scale = from_bf16(scale_dev)
    elif scale_t == "uint64":  # the float in the low 32 bits, control bits above (not used)
        scale_dev = scale.view(np.uint32).astype(np.uint64) | np.uint64(0xABCD) << np.uint64(40)
        scale_dev = scale_dev[:32].view(np.uint32)  # (as pairs of 32-bit words: no 64-bit device dtype)
    else:
        scale = scale[:64]
        scale_dev = scale
    size = 2 if dst_t in ("float16", "bfloat16") else 4
    n_dst = -(-n * size // 32) * 32 // size
    init = np.full((m, n_dst), PAD, np.float32)
    init_dev = bf16_bits(init) if dst_t == "bfloat16" else init.astype(dst_t)
    with device(1, kernel_type=KernelType.AIV) as dev:
        args = [dev.to_device("src", src), dev.to_device("scale", scale_dev), dev.to_device("dst", init_dev)]
        r = dev.launch_with(LaunchOptions(trace=trace), kernel, *args, m, n, cal, form, code)
        out = dev.to_host(args[2]).reshape(m, n_dst)
    out = from_bf16(out) if dst_t == "bfloat16" else out.astype(np.float32)
    factor = np.ones(n, np.float32)
    single = not form & MULTI and m == 1 and cal and cal % (32 // size) == 0 and n % cal == 0
    if form in (2, 3):
        factor[:cal] = scale[0]
    elif single:
        factor = np.tile(scale[:cal], n // cal)
    else:
        factor[:cal] = scale[:cal]
    want = src.astype(np.float32) * factor
    want = from_bf16(bf16_bits(want)) if dst_t == "bfloat16" else want.astype(dst_t).astype(np.float32)
    ref = np.full((m, n_dst), PAD, np.float32)
    ref[:, :n] = want
    return out, ref, r


# (a uint64_t scale is a tensor form only: forms 2 and 3 take a scalar)
@pytest.mark.parametrize("types,form", [(t, f) for t in TYPES for f in range(4) if t != "f16_u64" or f < 2])
def test_rows_times_the_scale_equal_numpy(kernel, types, form) -> None:
    out, ref, _ = dequant(kernel, types, 4, 24, 13, form, seed=form)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("form", [0, MULTI])
def test_one_row_of_whole_blocks_is_read_as_rows_unless_multi_row(kernel, form) -> None:
    # {1, 48, 16}: float destination (8 a block), 48 % 16 == 0 -> three rows of 16 in single-row mode
    out, ref, r = dequant(kernel, "f32", 1, 48, 16, form, trace=True)
    np.testing.assert_array_equal(out, ref)
    assert analyze(r.trace) == []


def test_misuse_is_an_error_at_the_kernel_line(kernel) -> None:
    with pytest.raises(KernelError, match=r"(?s)AscendDequant: calCount 30 is more than n 24.*dequant\.cpp"):
        dequant(kernel, "f32", 2, 24, 30, 0)
    with pytest.raises(KernelError, match=r"AscendDequant: n 12 is not 32-byte aligned"):
        dequant(kernel, "f32", 2, 12, 4, 0)
