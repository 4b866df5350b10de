"""The SoftMax family's newer calls against numpy (kernels/softmax_family.cpp): LogSoftMax (log10 of the
softmax, over the original row length), SoftmaxFlashV2 with and without the update, SoftmaxFlashV3 (the
page's part means, both update settings), AdjustSoftMaxRes (the rows whose max has the given bits),
SoftmaxGrad's pairwise row sum; float and half (and half data with float statistics); padded rows; the
sharedTmpBuffer at and above the host helpers' minimum, below it (an error at the kernel's line) and
the framework's form; the host helpers' sizes and the tiling they fill."""

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

KERNEL = Path(__file__).parent / "kernels" / "softmax_family.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
# types: (code, data dtype, statistics dtype)
TYPES = {"f32": (0, np.float32, np.float32), "f16": (1, np.float16, np.float16), "f16_f32": (2, np.float16, np.float32)}
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float16: dict(rtol=4e-3, atol=2e-3)}


@pytest.fixture(scope="module")
def kernel():
    from mpnpu.ascendc import compile_kernel

    return compile_kernel(str(KERNEL), "softmax_family", flags=WARN, kernel_type=KernelType.AIV)


def launch(kernel, mode, types, m, k, ori_k=None, tmp=0, flag=0, x=None, stats=None, trace=False, seed=0):
    code, dt, st = TYPES[types]
    ori_k = k if ori_k is None else ori_k
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, (m, k)).astype(dt) if x is None else x.astype(dt)
    per_u = 32 // np.dtype(st).itemsize
    per_t = 32 // np.dtype(dt).itemsize
    if stats is None:  # inSum, inMax, inMean: one value a row
        stats = (rng.uniform(0.5, 3, m), rng.uniform(-1, 5, m), rng.uniform(-1, 1, m))
    stats = tuple(np.asarray(s, np.float64).astype(st) for s in stats)
    blocks = np.concatenate([np.repeat(s[:, None], per_u, axis=1).ravel() for s in stats])
    with device(1, kernel_type=KernelType.AIV) as dev:
        args = [dev.to_device("x", x.ravel()), dev.to_device("stats", blocks),
                dev.to_device("y", np.zeros(m * k, dt)), dev.to_device("out", np.zeros(4 * m * 32, np.uint8)),
                dev.to_device("misc", np.zeros(24, np.uint32))]
        r = dev.launch_with(LaunchOptions(trace=trace), kernel, *args, m, k, ori_k, mode, code, tmp, flag)
        y = dev.to_host(args[2]).reshape(m, k)
        out = dev.to_host(args[3])
        misc = dev.to_host(args[4])
    s_bytes = m * 32
    rows = [out[i * s_bytes:(i + 1) * s_bytes].view(st).reshape(m, per_u) for i in range(3)]
    exp_max = out[3 * s_bytes:].view(dt).reshape(m, per_t)
    return dict(x=x, stats=stats, y=y, sum=rows[0], max=rows[1], mean=rows[2], exp_max=exp_max, misc=misc, r=r)


def check(got, want, dt):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), **TOL[dt])


def row(v, out):  # every element of a row's block is the row's value
    assert np.all(out == out[:, :1])
    return out[:, 0].astype(np.float64), v


@pytest.mark.parametrize("types", ["f32", "f16"])
@pytest.mark.parametrize("m,k,ori_k,tmp", [(4, 64, 64, 0), (3, 48, 37, 0), (2, 128, 128, 4096), (8, 32, 30, 0)])
def test_log_softmax_is_log10_of_the_softmax(kernel, types, m, k, ori_k, tmp) -> None:
    res = launch(kernel, 0, types, m, k, ori_k, tmp=tmp, seed=k + m)
    _, dt, _ = TYPES[types]
    x = res["x"].astype(np.float64)
    mx = x[:, :ori_k].max(axis=1, keepdims=True)
    e = np.exp(x - mx)
    s = e[:, :ori_k].sum(axis=1, keepdims=True)
    check(res["y"], np.log10(e / s), dt)
    check(*row(s[:, 0], res["sum"]), dt)
    np.testing.assert_array_equal(res["max"][:, 0], mx[:, 0].astype(dt))


@pytest.mark.parametrize("types", ["f32", "f16", "f16_f32"])
@pytest.mark.parametrize("update", [False, True])
def test_flash_v2_with_and_without_the_update(kernel, types, update) -> None:
    m, k, ori_k = 4, 64, 50
    res = launch(kernel, 2 if update else 1, types, m, k, ori_k, seed=7 + update, trace=True)
    _, dt, st = TYPES[types]
    x = res["x"].astype(np.float64)
    in_sum, in_max, _ = (s.astype(np.float64) for s in res["stats"])
    mx = x[:, :ori_k].max(axis=1)
    if update:
        mx = np.maximum(mx, in_max)
    e = np.exp(x - mx[:, None])
    s = e[:, :ori_k].sum(axis=1)
    if update:
        em = np.exp(in_max - mx)
        s = s + em * in_sum
        check(*row(em, res["exp_max"]), dt)
    check(res["y"], e, dt)
    check(*row(s, res["sum"]), st)
    check(*row(mx, res["max"]), st)
    assert analyze(res["r"].trace) == []


def flash_v3_reference(x, in_sum, in_max, in_mean, update, loop=3, alpha=0.9375):
    """The page's formula with its part means, in float32 as the device adds (first 512 by 8s, later repeats
    lane by lane, then 8 lanes a part)."""
    x = x.astype(np.float32)
    m, k = x.shape
    scalar = np.float32(alpha / (1 - alpha))
    lanes = x[:, :512].reshape(m, 64, 8).sum(axis=2, dtype=np.float32)
    for rep in range(8, k // 64):
        lanes = lanes + x[:, rep * 64:(rep + 1) * 64]
    local = lanes.reshape(m, 8, 8).sum(axis=2, dtype=np.float32) / np.float32(k // 8)
    mean = local.sum(axis=1, dtype=np.float32) / np.float32(8)
    shift = (mean[:, None] - local) * scalar
    xs = x - np.repeat(shift, k // 8, axis=1)
    a = (mean + in_mean * np.float32(loop - 1)) / np.float32(loop) if update else mean
    cur = (mean - a) * scalar
    mx = cur + xs.max(axis=1)
    prev = (in_mean - a) * scalar
    if update:
        mx = np.maximum(mx, prev + in_max)
    y = np.exp(xs - (mx - cur)[:, None])
    s = y.sum(axis=1, dtype=np.float64)
    em = np.exp(in_max - mx + prev)
    if update:
        s = s + em * in_sum
    return y, s, mx, a, em


@pytest.mark.parametrize("update", [0, 1])
@pytest.mark.parametrize("k", [512, 1024])
def test_flash_v3_follows_the_pages_part_means(kernel, update, k) -> None:
    m = 4
    res = launch(kernel, 4, "f16_f32", m, k, seed=k + update, tmp=0 if update else 0, flag=update)
    in_sum, in_max, in_mean = (s.astype(np.float32) for s in res["stats"])
    y, s, mx, a, em = flash_v3_reference(res["x"], in_sum, in_max, in_mean, bool(update))
    check(res["y"], y, np.float16)
    check(*row(s, res["sum"]), np.float32)
    check(*row(mx, res["max"]), np.float32)
    check(*row(a, res["mean"]), np.float32)
    if update:
        check(*row(em, res["exp_max"]), np.float16)


@pytest.mark.parametrize("types", ["f32", "f16", "f16_f32"])
@pytest.mark.parametrize("hit", [True, False])
def test_adjust_softmax_res_sets_the_rows_whose_max_has_the_bits(kernel, types, hit) -> None:
    m, k = 4, 32
    _, dt, st = TYPES[types]
    x = np.random.default_rng(3).uniform(-2, 2, (m, k))
    x[1, 5] = 7.0  # row 1's max, exact in both types
    bits = int(np.array(7.0 if hit else 7.5, st).view(np.uint16 if st == np.float16 else np.uint32))
    res = launch(kernel, 3, types, m, k, x=x, flag=bits)
    xf = res["x"].astype(np.float64)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    if hit:
        want[1] = -1.0
    check(res["y"], want, dt)
    assert res["misc"][0] == int(hit)


@pytest.mark.parametrize("types", ["f32", "f16"])
def test_softmax_grad_row_sum_is_pairwise(kernel, types) -> None:
    m, k = 3, 960
    res = launch(kernel, 5, types, m, k, seed=11)
    _, dt, _ = TYPES[types]
    x = res["x"].astype(np.float64)
    d = (x * x).sum(axis=1, keepdims=True)
    check(res["y"], (x - d) * x, dt)


@pytest.mark.parametrize("types", ["f32", "f16_f32"])
@pytest.mark.parametrize("m,ori_k,tmp", [(4, 64, 1000), (5, 37, 300), (8, 200, 2048), (16, 128, 8 * 512),
                                         (16, 128, 6 * 512)])
def test_host_helpers_sizes_and_tiling(kernel, types, m, ori_k, tmp) -> None:
    res = launch(kernel, 6, types, m, -(-ori_k // 16) * 16, ori_k, tmp=tmp)
    k16 = -(-ori_k // 16) * 16
    lo, hi = k16 * 4, m * k16 * 4
    assert list(res["misc"][:10]) == [lo, hi] * 5
    split = min(m, tmp // lo)
    stat_size = np.dtype(TYPES[types][2]).itemsize
    assert list(res["misc"][10:16]) == [m, k16, split, m // split, m % split, 32 // stat_size]
    split_k = min(m, tmp // (k16 * 4))  # the kernel side's form: the call's srcK as given (here k16)
    assert list(res["misc"][16:20]) == [m, k16, split_k, m % split_k]
    data_size = np.dtype(TYPES[types][1]).itemsize  # IsBasicBlockInSoftMax: k a multiple of 64 in
    basic = k16 % 64 == 0 and 256 // data_size <= k16 < 2048 and split % 8 == 0 and (m % split) % 8 == 0
    assert res["misc"][20] == int(basic)  # [256 / size, 2048), the split's rows multiples of 8


@pytest.mark.parametrize("mode,k,tmp,message", [
    (0, 64, 224, "LogSoftMax: sharedTmpBuffer has 224 bytes, below the minimum 256"),
    (5, 64, 128, "SoftmaxGrad: sharedTmpBuffer has 128 bytes, below the minimum 256"),
    (1, 64, 32, "SoftmaxFlashV2: sharedTmpBuffer has 32 bytes, below the minimum 256"),
    (4, 256, 4096, "SoftmaxFlashV3: srcK 256: mpnpu's model of the page's reduction takes a multiple of 64"),
])
def test_misuse_is_an_error_at_the_kernels_line(kernel, mode, k, tmp, message) -> None:
    with pytest.raises(KernelError, match=message) as e:
        launch(kernel, mode, "f16_f32" if mode == 4 else "f32", 2, k, tmp=tmp, flag=1 if mode == 4 else 0)
    assert "softmax_family.cpp:" in str(e.value)
