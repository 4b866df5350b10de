"""TransData against numpy (kernels/transdata.cpp): the four conversions (NCDHW <-> NDC1HWC0, NCDHW <->
FRACTAL_Z_3D) of each 16-bit type, shapes with an H x W tail (padded rows), C and N not multiples of 16, with
and without a sharedTmpBuffer; GetTransDataMaxMinTmpSize's sizes; a buffer below them, a wrong destination
shape, a float tensor and dst == src refused at the kernel's line. And the Layout structures: the offsets of
every coordinate of column-major, row-major, padded and nested layouts against numpy / hand computation."""

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

KERNEL = Path(__file__).parent / "kernels" / "transdata.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
PAD = 0xABCD  # an NCDHW source's row padding: must never reach the result


@pytest.fixture(scope="module")
def kernel():
    from mpnpu.ascendc import compile_kernel

    return compile_kernel(str(KERNEL), "transdata", flags=WARN, kernel_type=KernelType.AIV)


@pytest.fixture(scope="module")
def layout_kernel():
    from mpnpu.ascendc import compile_kernel

    return compile_kernel(str(KERNEL), "layout_index", flags=WARN, kernel_type=KernelType.AIV)


def ceil16(x: int) -> int:
    return -(-x // 16)


def tmp_bytes(kind: int, n: int, c: int, d: int, h: int, w: int) -> int:
    """mpnpu's model (the dev kit sample's reservations), in bytes of a 16-bit type."""
    c1, n1, hwp = ceil16(c), ceil16(n), ceil16(h * w) * 16
    elems = {1: d * hwp + d * c1 * 16 * hwp,
             2: 512 + d * c1 * 16 * hwp,
             3: c * d * hwp + n1 * 16 * d * c1 * 16 * hwp,
             4: d * c1 * hwp * n1 * 256 * (1 if c % 16 == 0 and n % 16 == 0 else 2)}[kind]
    return 2 * elems


def reference(kind: int, src: np.ndarray, n: int, c: int, d: int, h: int, w: int) -> np.ndarray:
    """The expected destination (flat), from the flat source as it lies in UB."""
    c1, n1, hw, hwp = ceil16(c), ceil16(n), h * w, ceil16(h * w) * 16
    if kind in (1, 3):
        x = src.reshape(n, c, d, hwp)[..., :hw]
        if kind == 1:
            p = np.zeros((n, c1 * 16, d, hw), src.dtype)
            p[:, :c] = x
            return p.reshape(n, c1, 16, d, hw).transpose(0, 3, 1, 4, 2).ravel()
        p = np.zeros((n1 * 16, c1 * 16, d, hw), src.dtype)
        p[:n, :c] = x
        return p.reshape(n1, 16, c1, 16, d, hw).transpose(4, 2, 5, 0, 1, 3).ravel()
    if kind == 2:
        full = src.reshape(n, d, c1, hw, 16).transpose(0, 2, 4, 1, 3).reshape(n, c1 * 16, d, hw)
    else:
        full = src.reshape(d, c1, hw, n1, 16, 16).transpose(3, 4, 1, 5, 0, 2).reshape(n1 * 16, c1 * 16, d, hw)
    out = np.zeros((n, c, d, hwp), src.dtype)
    out[..., :hw] = full[:n, :c]
    return out.ravel()


def transdata(kernel, kind, dims, type_=0, tmp=1, tmp_bytes_=0, misuse=0, seed=0, trace=False):
    n, c, d, h, w = dims
    c1, n1, hwp = ceil16(c), ceil16(n), ceil16(h * w) * 16
    ncdhw, split = n * c * d * hwp, (n * d * c1 * h * w * 16 if kind <= 2 else d * c1 * h * w * n1 * 256)
    src_n, dst_n = (ncdhw, split) if kind in (1, 3) else (split, ncdhw)
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 0x10000, src_n, dtype=np.uint32).astype(np.uint16)
    if kind in (1, 3):
        src.reshape(n, c, d, hwp)[..., h * w:] = PAD
    with device(1, kernel_type=KernelType.AIV) as dev:
        args = [dev.to_device("src", src), dev.to_device("dst", np.full(dst_n, 0x7777, np.uint16)),
                dev.to_device("misc", np.zeros(8, np.uint32))]
        r = dev.launch_with(LaunchOptions(trace=trace), kernel, *args, n, c, d, h, w, kind, type_, tmp, tmp_bytes_,
                            misuse)
        got, misc = dev.to_host(args[1]), dev.to_host(args[2])
    return got, reference(kind, src, n, c, d, h, w), misc, r


DIMS = [(16, 16, 1, 3, 5),  # the sample's shape: H x W = 15, a tail of one element a row
        (2, 32, 2, 2, 8),  # the pages' example (H x W = 16, no padding), C1 = 2
        (3, 20, 2, 3, 7),  # C and N not multiples of 16, H x W = 21 (padded to 32)
        (17, 5, 1, 1, 1)]  # N1 = 2, a single-element row


@pytest.mark.parametrize("kind", [1, 2, 3, 4], ids=["ncdhw_ndc1hwc0", "ndc1hwc0_ncdhw", "ncdhw_fz3d", "fz3d_ncdhw"])
@pytest.mark.parametrize("dims", DIMS, ids=["x".join(map(str, d)) for d in DIMS])
def test_transdata_equals_numpy(kernel, kind, dims) -> None:
    got, want, misc, _ = transdata(kernel, kind, dims, seed=kind * 7 + sum(dims))
    np.testing.assert_array_equal(got, want)
    assert not np.any(got == PAD) or kind in (2, 4)
    assert list(misc[:2]) == [tmp_bytes(kind, *dims)] * 2


@pytest.mark.parametrize("type_", [0, 1, 2, 3], ids=["half", "bfloat16_t", "int16_t", "uint16_t"])
@pytest.mark.parametrize("kind", [1, 4])
def test_each_type_with_and_without_a_buffer(kernel, type_, kind) -> None:
    for tmp in (0, 1):
        got, want, _, r = transdata(kernel, kind, (3, 20, 2, 3, 7), type_=type_, tmp=tmp, seed=type_,
                                    trace=tmp == 1 and type_ == 0)
        np.testing.assert_array_equal(got, want)
        if tmp == 1 and type_ == 0:
            assert analyze(r.trace) == []


def test_the_pages_example(kernel) -> None:
    """The pages' NCDHW -> NDC1HWC0 example: 0..511 as NCDHW (1, 32, 1, 2, 8) (the data it prints; its params
    say D = 2) becomes NDC1HWC0 (1, 1, 2, 2, 8, 16): C0 rows of the 16 channels' values at each (h, w),
    0 16 32 ... 240, then 1 17 ... 241; the second C1 block starts at 256. Checked by hand, not by reference()."""
    n, c, d, h, w = 1, 32, 1, 2, 8
    src = np.arange(512, dtype=np.uint16)
    with device(1, kernel_type=KernelType.AIV) as dev:
        args = [dev.to_device("src", src), dev.to_device("dst", np.zeros(512, np.uint16)),
                dev.to_device("misc", np.zeros(8, np.uint32))]
        dev.launch_with(LaunchOptions(), kernel, *args, n, c, d, h, w, 1, 0, 1, 0, 0)
        got = dev.to_host(args[1]).reshape(n, d, 2, h, w, 16)
    assert got[0, 0, 0, 0, 0].tolist() == list(range(0, 256, 16))
    assert got[0, 0, 0, 0, 1].tolist() == list(range(1, 257, 16))
    assert got[0, 0, 0, 1, 7].tolist() == list(range(15, 271, 16))
    assert got[0, 0, 1, 0, 0].tolist() == list(range(256, 512, 16))
    assert got[0, 0, 1, 1, 7, 15] == 511


def test_buffer_above_the_minimum_and_below_it(kernel) -> None:
    dims = (3, 20, 2, 3, 7)
    need = tmp_bytes(3, *dims)
    got, want, _, _ = transdata(kernel, 3, dims, tmp_bytes_=need + 64)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(KernelError, match=rf"TransData: sharedTmpBuffer has {need - 32} bytes, below the minimum "
                                          rf"{need} \(GetTransDataMaxMinTmpSize\)") as e:
        transdata(kernel, 3, dims, tmp_bytes_=need - 32)
    assert "transdata.cpp:" in str(e.value)


@pytest.mark.parametrize("kind,type_,misuse,message", [
    (1, 0, 1, r"TransData: params.dstLayout's shape \(3, 2, 3, 3, 7, 16\) is not the NDC1HWC0 shape "
              r"\(3, 2, 2, 3, 7, 16\) of the NCDHW shape \(3, 20, 2, 3, 7\)"),
    (4, 0, 1, r"TransData: params.srcLayout's shape \(2, 3, 3, 7, 1, 16, 16\) is not the FRACTAL_Z_3D shape "
              r"\(2, 2, 3, 7, 1, 16, 16\)"),
    (3, 4, 0, r"TransData: element type float is not supported \(it takes int16_t, uint16_t, half, bfloat16_t\)"),
    (2, 0, 2, r"TransData: dstTensor overlaps srcTensor"),
])
def test_misuse_is_an_error_at_the_kernels_line(kernel, kind, type_, misuse, message) -> None:
    with pytest.raises(KernelError, match=message) as e:
        transdata(kernel, kind, (3, 20, 2, 3, 7), type_=type_, misuse=misuse)
    assert "transdata.cpp:" in str(e.value)


def test_layout_offsets(layout_kernel) -> None:
    with device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.full(136, -1, np.int32))
        dev.launch_with(LaunchOptions(), layout_kernel, out)
        got = dev.to_host(out)
    idx = np.indices((3, 4, 5)).reshape(3, -1)
    # (3, 4, 5) : (1, 3, 12) is column-major: numpy's Fortran order; (20, 5, 1) is row-major
    np.testing.assert_array_equal(got[:60], np.ravel_multi_index(idx, (3, 4, 5), order="F"))
    np.testing.assert_array_equal(got[60:120], np.ravel_multi_index(idx, (3, 4, 5), order="C"))
    # the pages' (4, 2) : (4, 1): rows four elements apart, two used
    assert got[120:128].tolist() == [0, 1, 4, 5, 8, 9, 12, 13]
    # ((2, 4), (3, 5)) : ((3, 6), (1, 24)) at (11, 12): (11 % 2, 11 // 2) . (3, 6) + (12 % 3, 12 // 3) . (1, 24)
    assert got[128] == 1 * 3 + 5 * 6 + 0 * 1 + 4 * 24 == 129
    assert got[129] == (5 % 4) * 4 + (5 // 4) * 1
    assert got[130:136].tolist() == [3, 4, 5, 1, 3, 12]
