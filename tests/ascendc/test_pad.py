"""Pad and UnPad (the library's width padding of a [height, width] tensor) on a kernel of our own,
tests/ascendc_kernels/pad.cpp, against numpy: both Pad cases (an unaligned width padded left and right;
an aligned width whose redundant columns are set), UnPad, float and half, the framework's and a caller's
buffer (at and above the minimum; below it and other misuse: errors at the kernel's line), and the host
helpers' sizes."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx, run_host_program
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

SRC = "pad.cpp"


def _run(mode: int, data: str, h: int, w: int, ori_w: int, left: int, right: int, tmp_bytes: int = 0):
    k = kernel(SRC, "pad", kernel_type=KernelType.AIV, DATA_T=data)
    dt = np.dtype(np.float32 if data == "float" else np.float16)
    x = np.arange(512).astype(dt)
    y0 = np.full(512, -1, dt)
    with device(1, kernel_type=KernelType.AIV) as dev:
        y = dev.to_device("y", y0)
        r = dev.launch_with(LaunchOptions(trace=True), k, dev.to_device("x", x), y, np.int32(mode), np.int32(h),
                            np.int32(w), np.int32(ori_w), np.int32(left), np.int32(right), np.int32(tmp_bytes))
        return x, y0, dev.to_host(y), r.trace


@pytest.mark.parametrize("data", ["float", "half"])
@pytest.mark.parametrize("mode,tmp", [(0, 0), (1, 64), (1, 1024)])
def test_pad_an_unaligned_width_left_and_right(mode: int, tmp: int, data: str) -> None:
    w, left, right = 13, 1, 2
    h = 8 if data == "float" else 16  # h x 13 elements: 32-byte aligned in all
    per = 8 if data == "float" else 16
    aw = -(-w // per) * per
    x, y0, got, trace = _run(mode, data, h, w, w, left, right, tmp)
    want = y0.copy().reshape(-1)
    for i in range(h):
        want[i * aw:i * aw + left] = 7
        want[i * aw + left:i * aw + left + w] = x[i * w:(i + 1) * w]
        want[i * aw + left + w:i * aw + left + w + right] = 7
    np.testing.assert_array_equal(got, want)
    assert analyze(trace) == []


def test_pad_an_aligned_width_sets_the_redundant_columns() -> None:
    h, w, ori_w, right = 4, 16, 13, 2
    x, y0, got, trace = _run(0, "float", h, w, ori_w, 0, right)
    want = y0.copy()
    body = x[:h * w].reshape(h, w).copy()
    body[:, ori_w:ori_w + right] = 7
    want[:h * w] = body.ravel()
    np.testing.assert_array_equal(got, want)
    assert analyze(trace) == []


@pytest.mark.parametrize("data", ["float", "half"])
@pytest.mark.parametrize("mode", [2, 3])
def test_unpad_drops_the_right_columns(mode: int, data: str) -> None:
    h, w, right = 8, 32, 3
    x, y0, got, trace = _run(mode, data, h, w, w, 0, right, 128 if mode == 3 else 0)
    want = y0.copy()
    want[:h * (w - right)] = x[:h * w].reshape(h, w)[:, :w - right].ravel()
    np.testing.assert_array_equal(got, want)
    assert analyze(trace) == []


@pytest.mark.parametrize("mode, args, message, text", [
    (1, (8, 13, 13, 1, 2, 32), "Pad: sharedTmpBuffer has 32 bytes, below the minimum 64", "Pad(yl, xl, pp, tmp, pt)"),
    (0, (8, 13, 13, 3, 2, 0), "Pad: leftPad 3 \\+ width 13 \\+ rightPad 2 is past the aligned width 16",
     "Pad(yl, xl, pp, pt)"),
    (0, (4, 16, 16, 0, 1, 0), "Pad: width 16 is 32-byte aligned with no redundant columns", "Pad(yl, xl, pp, pt)"),
    (2, (8, 32, 32, 0, 8, 0), "UnPad: rightPad 8 must be above 0 and below one 32-byte block",
     "UnPad(yl, xl, up, ut)"),
    (2, (8, 13, 13, 0, 1, 0), "UnPad: width 13 is not 32-byte aligned", "UnPad(yl, xl, up, ut)"),
    (10, (8, 13, 13, 1, 2, 0), "Pad: dstTensor and srcTensor overlap", "Pad(xl[64], xl, pp, pt)"),
])
def test_misuse_is_an_error_at_the_kernels_line(mode: int, args: tuple, message: str, text: str) -> None:
    with pytest.raises(KernelError, match=message) as e:
        _run(mode, "float", *args)
    assert f"{SRC}:{line_of(SRC, text)}" in str(e.value), str(e.value)


HOST = r"""
#include <cstdio>
#include "tiling/tiling_api.h"
#include "kernel_operator.h"
int main() {
    uint32_t mx = 0, mn = 0;
    AscendC::GetPadMaxMinTmpSize(AscendC::TensorShape({320, 63}), 2, mx, mn);
    std::printf("pad %u %u\n", mx, mn);
    platform_ascendc::PlatformAscendC* plat = platform_ascendc::PlatformAscendCManager::GetInstance();
    AscendC::GetUnPadMaxMinTmpSize(*plat, AscendC::TensorShape({8, 8}), 4, mx, mn);
    std::printf("unpad %u %u\n", mx, mn);
    optiling::PadTiling t;
    AscendC::PadTilingFunc(AscendC::TensorShape({320, 64}), AscendC::TensorShape({320, 63}), 512, 2, t);
    std::printf("tiling %u %u %u %u\n", t.srcHeight, t.srcWidth, t.srcOriWidth, t.tmpBufSize);
    return 0;
}
"""


def test_the_host_helpers(tmp_path) -> None:
    """At least one aligned row, at most every row; the tiling carries the shapes."""
    assert run_host_program(tmp_path, HOST) == ["pad 40960 128", "unpad 256 32", "tiling 320 64 63 512"]
