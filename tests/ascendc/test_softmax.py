"""SoftMax and SimpleSoftMax (the high-level library's softmax over the last axis) on a kernel of our
own, tests/ascendc_kernels/softmax.cpp, against numpy: float and half data (half with float sums),
padded rows (the max and sum over the original length), in place with a sharedTmpBuffer, the sum and
max outputs (one 32-byte block a row), misuse at the kernel's line, and the synchronisation around
the call: with the kernel's flags, no hazard; without the one before it, the copy in races the call.
SelectWithBytesMask (the masked softmax kernels' other high-level call) on
tests/ascendc_kernels/select_bytes_mask.cpp: both operand orders, in place, and the mask it rewrites."""

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

M, K = 4, 64
SRC = "softmax.cpp"


def _run(mode: int, ori_k: int = K, data: str = "float", sums: str | None = None, drop: tuple[str, ...] = ()):
    defines = {"DATA_T": data if data == "float" else "half"}
    if sums:
        defines["SUM_T"] = sums
    k = kernel(SRC, "softmax", kernel_type=KernelType.AIV, **defines)
    dt = np.float32 if data == "float" else np.float16
    st = np.dtype(np.float32 if (sums or data) == "float" else np.float16)
    per = 32 // st.itemsize
    rng = np.random.default_rng(mode * 100 + ori_k)
    x = rng.uniform(-6, 6, (M, K)).astype(dt)
    with device(1, kernel_type=KernelType.AIV) as dev:
        y = dev.empty("y", M * K, np.dtype(dt).name)
        s = dev.empty("sum", M * per, st.name)
        mx = dev.empty("max", M * per, st.name)
        r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), k, dev.to_device("x", x.ravel()), y, s, mx,
                            np.int32(mode), np.int32(ori_k))
        return (x, dev.to_host(y).reshape(M, K), dev.to_host(s).reshape(M, per), dev.to_host(mx).reshape(M, per),
                r.trace)


def _reference(x: np.ndarray, ori_k: int):
    xf = x.astype(np.float64)
    m = xf[:, :ori_k].max(axis=1, keepdims=True)
    e = np.exp(xf - m)
    s = e[:, :ori_k].sum(axis=1, keepdims=True)
    return e / s, s, m


@pytest.mark.parametrize("ori_k", [K, 50])
def test_softmax_with_sum_and_max_is_numpys_over_the_original_row(ori_k: int) -> None:
    x, y, s, mx, trace = _run(0, ori_k)
    want, ws, wm = _reference(x, ori_k)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(s, np.broadcast_to(ws, s.shape), rtol=1e-5)
    np.testing.assert_array_equal(mx, np.broadcast_to(wm, mx.shape).astype(np.float32))
    if ori_k < K:  # the padding is written too, from the real row's max and sum
        np.testing.assert_allclose(y[:, ori_k:], want[:, ori_k:], rtol=1e-5, atol=1e-7)
        assert np.allclose(y[:, :ori_k].sum(axis=1), 1.0, rtol=1e-5)
    assert analyze(trace) == []


@pytest.mark.slow
def test_half_data_with_float_sums() -> None:
    x, y, s, mx, _ = _run(1, K, data="half", sums="float")
    want, ws, wm = _reference(x, K)
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(s[:, :1], ws, rtol=1e-5)
    assert s.shape == (M, 8) and np.all(s == s[:, :1])


@pytest.mark.slow
def test_in_place_without_sum_and_max_with_a_shared_tmp_buffer() -> None:
    x, y, _, _, trace = _run(2, 40)
    np.testing.assert_allclose(y, _reference(x, 40)[0], rtol=1e-5, atol=1e-7)
    assert analyze(trace) == []


@pytest.mark.slow
def test_simple_softmax_from_the_sum_and_max_is_the_softmax() -> None:
    x, y, _, _, _ = _run(3, 56)
    np.testing.assert_allclose(y, _reference(x, 56)[0], rtol=1e-5, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("front", [False, True])
def test_softmax_grad_and_its_front_form(front: bool) -> None:
    x, y, _, _, trace = _run(5 if front else 4, 48)
    xf = x.astype(np.float64)
    d = (xf[:, :48] * xf[:, :48]).sum(axis=1, keepdims=True)
    if front:  # one 32-byte block a row
        np.testing.assert_allclose(y.ravel()[:M * 8].reshape(M, 8), np.broadcast_to(d, (M, 8)), rtol=1e-5)
    else:
        np.testing.assert_allclose(y, (xf - d) * xf, rtol=1e-5, atol=1e-3)
    assert analyze(trace) == []


@pytest.mark.slow
@pytest.mark.parametrize("mode, message", [
    (10, "SoftMax: srcK 20 is not 32-byte aligned"),
    (11, "SoftMax: sharedTmpBuffer overlaps srcTensor"),
    (12, r"SoftMax: no shape: SoftMaxShapeInfo and the tiling both give 0 x 0"),
])
def test_misuse_is_an_error_at_the_kernels_line(mode: int, message: str) -> None:
    with pytest.raises(KernelError, match=message) as e:
        _run(mode)
    text = {10: "SoftMaxShapeInfo{M, 20, M, 20}", 11: "src.ReinterpretCast<uint8_t>()", 12: "SoftMaxTiling{}"}[mode]
    assert f"{SRC}:{line_of(SRC, text)}" in str(e.value), str(e.value)


@pytest.mark.slow
def test_without_the_flag_before_it_the_copy_in_races_the_call() -> None:
    wait = f"{SRC}:{line_of(SRC, 'WaitFlag<HardEvent::MTE2_V>(0)')}"
    *_, trace = _run(0, drop=(wait,))
    raw = [h for h in analyze(trace) if (h.first.pipe, h.second.pipe) == ("PIPE_MTE2", "PIPE_V")]
    assert raw and {h.kind for h in raw} == {"RAW"}, analyze(trace)
    call = line_of(SRC, "SoftMax<T>(dst, s, m, src, tiling, shape)")
    assert {h.second.site for h in raw} == {f"ascendc_kernels/{SRC}:{call}"}


def _select(mode: int):
    k = kernel("select_bytes_mask.cpp", "select_bytes_mask", kernel_type=KernelType.AIV)
    rng = np.random.default_rng(mode)
    x = rng.uniform(-4, 4, (4, 16)).astype(np.float32)
    mask = rng.integers(0, 3, (4, 64)).astype(np.uint8)  # 0, 1 and 2: any non-zero value selects
    with device(1, kernel_type=KernelType.AIV) as dev:
        y = dev.empty("y", 64, "float32")
        mo = dev.empty("mask_out", 256, "uint8")
        r = dev.launch_with(LaunchOptions(trace=True), k, dev.to_device("x", x.ravel()),
                            dev.to_device("mask", mask.ravel()), y, mo, np.int32(mode))
        return x, mask, dev.to_host(y).reshape(4, 16), dev.to_host(mo), r.trace


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_select_with_bytes_mask_takes_each_mask_rows_first_elements(mode: int) -> None:
    x, mask, y, mask_out, trace = _select(mode)
    on = mask[:, :16] != 0
    want = np.where(on, x, np.float32(-1)) if mode == 1 else np.where(on, np.float32(-1), x)
    np.testing.assert_array_equal(y, want)
    if mode == 2:  # isReuseMask false: the mask is left as it was
        np.testing.assert_array_equal(mask_out, mask.ravel())
    else:  # the mask's rows are longer than the source's: packed to the front, as on the device
        np.testing.assert_array_equal(mask_out[:64], mask[:, :16].ravel())
    assert analyze(trace) == []


@pytest.mark.slow
def test_select_with_a_mask_row_shorter_than_the_source_row_is_an_error_at_the_line() -> None:
    with pytest.raises(KernelError, match="maskLastAxis 8 must be 32-byte aligned and a multiple of 16") as e:
        _select(3)
    line = line_of("select_bytes_mask.cpp", "SelectWithBytesMask(yl, xl, -1.0f, ml, tmp, info)")
    assert f"select_bytes_mask.cpp:{line}" in str(e.value), str(e.value)
