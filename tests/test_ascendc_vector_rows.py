"""The vectorised rows of the vector engine give the very bits of its lane-by-lane path.

Each float call with a row (two-source, tensor-scalar, one-source but Exp, which has its own test,
and the Casts between float, half and bfloat16) runs on the same inputs as: the count form (one
row over every lane), the level-0 form under masks without lane 0 and without lane 63 of every
repeat (the lane loop: together they cover every lane), under a prefix mask (one row per repeat),
in place (dst == src0, and dst == src1 for two-source calls), and a two-source call with src1 one
block read by every block (row and lane loop). Counts that end inside a repeat and inside an
8-lane step run the rows' tails. The inputs hold every pair of IEEE specials (NaN with payloads
and signs, infinities, signed zeros, subnormals, values next to the half and bfloat16 maxima),
and the tensor-scalar calls take special scalars. Every lane must hold the same bits, but where
both operands of an addition or a multiplication are NaN: which payload the result keeps is the
compiler's choice on either path (it may order a commutative operation either way), so there any
NaN will do. Duplicate's and ReduceSum's rows are checked by the conformance suite.
"""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx

# slow as a whole: its library takes seconds to build, and the fast loop reaches the same rows through the
# conformance sample (tests/ascendc/conformance)
pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]

N = 1024  # 16 repeats of 64 lanes

BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min")
SCALAR = ("Adds", "Muls", "Maxs", "Mins", "LeakyRelu")
UNARY = ("Abs", "Sqrt", "Rsqrt", "Reciprocal", "Relu")
CASTS = ("HalfToFloat", "FloatToHalf", "Bf16ToFloat", "FloatToBf16")
OPS = BINARY + SCALAR + UNARY + CASTS


#: the kernel's outputs, N floats' bytes each, in this order
OUTS = ("row", "lane0", "lane63", "prefix", "in_place", "in_place1", "block", "block_lane")
PREFIX = 37  # lanes of the prefix mask: a run shorter than a repeat (the per-repeat rows)


def _case(i: int, op: str) -> str:
    """One switch case: op on ``count`` elements as a count form (row), under the masks (lane loop
    without lane 0, without lane 63, the prefix of PREFIX lanes), in place, and (two-source calls)
    with src1 one block read by every block (row and lane loop)."""
    if op in BINARY:
        p = "BinaryRepeatParams(1, 1, 1, 8, 8, 8)"
        calls = (f"{op}(o[0], x, y, count); {op}(o[1], x, y, m0, rep, {p}); {op}(o[2], x, y, m63, rep, {p}); "
                 f"{op}(o[3], x, y, mp, rep, {p}); {op}(o[4], o[4], y, count); {op}(o[5], x, o[5], count); "
                 f"{op}(o[6], x, y, full, rep, BinaryRepeatParams(1, 1, 0, 8, 8, 0)); "
                 f"{op}(o[7], x, y, m0, rep, BinaryRepeatParams(1, 1, 0, 8, 8, 0));")
    elif op in SCALAR:
        p = "UnaryRepeatParams(1, 1, 8, 8)"
        calls = (f"{op}(o[0], x, k, count); {op}(o[1], x, k, m0, rep, {p}); {op}(o[2], x, k, m63, rep, {p}); "
                 f"{op}(o[3], x, k, mp, rep, {p}); {op}(o[4], o[4], k, count);")
    elif op in UNARY:
        p = "UnaryRepeatParams(1, 1, 8, 8)"
        calls = (f"{op}(o[0], x, count); {op}(o[1], x, m0, rep, {p}); {op}(o[2], x, m63, rep, {p}); "
                 f"{op}(o[3], x, mp, rep, {p}); {op}(o[4], o[4], count);")
    else:
        src, half_out, mode, reps = {
            "HalfToFloat": ("h", False, "CAST_NONE", "8, 4"), "FloatToHalf": ("x", True, "CAST_RINT", "4, 8"),
            "Bf16ToFloat": ("g", False, "CAST_NONE", "8, 4"), "FloatToBf16": ("x", True, "CAST_RINT", "4, 8"),
        }[op]
        dst = ("oh" if op == "FloatToHalf" else "ob") if half_out else "o"
        p = f"UnaryRepeatParams(1, 1, {reps})"
        calls = (f"Cast({dst}[0], {src}, RoundMode::{mode}, count); "
                 f"Cast({dst}[1], {src}, RoundMode::{mode}, m0, rep, {p}); "
                 f"Cast({dst}[2], {src}, RoundMode::{mode}, m63, rep, {p}); "
                 f"Cast({dst}[3], {src}, RoundMode::{mode}, mp, rep, {p});")
    return f"        case {i}: {{ {calls} }} break;"


SOURCE = r"""#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t N = %d;
// op: which call (see the test); out: %d x N floats (OUTS); count: elements of the count forms.
extern "C" __global__ __aicore__ void rows(GM_ADDR xs, GM_ADDR ys, GM_ADDR hs, GM_ADDR gs, GM_ADDR out, uint32_t op,
                                           float k, uint32_t count) {
    GlobalTensor<float> xg, yg, og;
    GlobalTensor<half> hg;
    GlobalTensor<bfloat16_t> gg;
    xg.SetGlobalBuffer((__gm__ float*)xs, N);
    yg.SetGlobalBuffer((__gm__ float*)ys, N);
    hg.SetGlobalBuffer((__gm__ half*)hs, N);
    gg.SetGlobalBuffer((__gm__ bfloat16_t*)gs, N);
    og.SetGlobalBuffer((__gm__ float*)out, %d * N);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bh, bgb, bo;
    pipe.InitBuffer(bx, N * sizeof(float));
    pipe.InitBuffer(by, N * sizeof(float));
    pipe.InitBuffer(bh, N * sizeof(float));
    pipe.InitBuffer(bgb, N * sizeof(float));
    pipe.InitBuffer(bo, %d * N * sizeof(float));
    LocalTensor<float> x = bx.Get<float>(), y = by.Get<float>(), all = bo.Get<float>();
    LocalTensor<half> h = bh.Get<half>();
    LocalTensor<bfloat16_t> g = bgb.Get<bfloat16_t>();
    LocalTensor<float> o[%d];
    LocalTensor<half> oh[%d];
    LocalTensor<bfloat16_t> ob[%d];
    for (int i = 0; i < %d; ++i) {
        o[i] = all[i * N];
        oh[i] = o[i].ReinterpretCast<half>();
        ob[i] = o[i].ReinterpretCast<bfloat16_t>();
    }
    DataCopy(x, xg, N);
    DataCopy(y, yg, N);
    DataCopy(h, hg, N);
    DataCopy(g, gg, N);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Duplicate(all, 0.0f, %d * N);
    DataCopy(o[4], x, N);  // the in-place operands
    DataCopy(o[5], y, N);
    const uint64_t m0[2] = {~uint64_t(1), 0};                  // every lane but lane 0: the lane loop
    const uint64_t m63[2] = {~(uint64_t(1) << 63), 0};         // every lane but lane 63
    const uint64_t mp[2] = {(uint64_t(1) << %d) - 1, 0};       // a prefix: one row per repeat
    const uint64_t full[2] = {~uint64_t(0), 0};
    const int32_t rep = int32_t((count + 63) / 64);
    switch (op) {
%s
        default: break;
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, all, %d * N);
}
""" % (N, len(OUTS), len(OUTS), len(OUTS), len(OUTS), len(OUTS), len(OUTS), len(OUTS), len(OUTS), PREFIX,
       "\n".join(_case(i, op) for i, op in enumerate(OPS)), len(OUTS))


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    src = tmp_path_factory.mktemp("rows") / "rows.cpp"
    src.write_text(SOURCE)
    return compile_kernel(str(src), "rows", kernel_type=KernelType.AIV)


def _specials32() -> np.ndarray:
    bits = np.array([0x7F800001, 0xFFC12345, 0x7FBFFFFF, 0x7FC00000, 0xFFFFFFFF,  # NaNs
                     0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x00000001, 0x807FFFFF,  # inf, zeros, subnormals
                     0x477FE000, 0x477FF000, 0x477FF001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000,  # near the 16-bit maxima
                     0x33800000, 0x33000001, 0x3F800000, 0xBF800000], np.uint32)
    return bits.view(np.float32)


def _inputs(seed: int) -> dict[str, np.ndarray]:
    """x and y: every pair of specials once (x = specials[i], y = specials[j]), then random values
    with specials among them; h and g: random 16-bit patterns (every kind of half and bfloat16)."""
    rng = np.random.default_rng(seed)
    specials = _specials32()
    cross = len(specials) ** 2
    x = rng.normal(0, 20, N).astype(np.float32)
    y = rng.normal(0, 20, N).astype(np.float32)
    x[:cross] = np.repeat(specials, len(specials))
    y[:cross] = np.tile(specials, len(specials))
    rest = np.arange(cross, N)
    x[rng.choice(rest, len(specials), replace=False)] = specials
    y[rng.choice(rest, len(specials), replace=False)] = specials
    h = rng.integers(0, 1 << 16, N, dtype=np.uint32).astype(np.uint16)
    g = rng.integers(0, 1 << 16, N, dtype=np.uint32).astype(np.uint16)
    return {"x": x, "y": y, "h": h, "g": g}


def _run(kernel, dev: Device, op: str, inputs: dict[str, np.ndarray], k: float, count: int) -> dict[str, np.ndarray]:
    """Each output's first ``count`` lanes as bits (uint32, or uint16 for a narrowing Cast)."""
    with dev.scope() as gm:
        args = [gm.to_device(n, inputs[n]) for n in ("x", "y", "h", "g")]
        out = gm.empty("out", (len(OUTS) * N,), "float32")
        dev.launch(kernel, *args, out, np.uint32(OPS.index(op)), np.float32(k), np.uint32(count))
        raw = dev.to_host(out).reshape(len(OUTS), N)
    narrow = op in ("FloatToHalf", "FloatToBf16")
    return {name: (raw[i].view(np.uint16)[:N] if narrow else raw[i].view(np.uint32))[:count]
            for i, name in enumerate(OUTS)}


def _both_nan_operands(op: str, inputs: dict[str, np.ndarray], k: float, count: int,
                       block: bool = False) -> np.ndarray:
    """Lanes where a commutative IEEE operation has two NaN operands (either payload will do)."""
    x = np.isnan(inputs["x"][:count])
    if op in BINARY:
        y = inputs["y"]
        other = np.isnan(np.resize(y[:8], count) if block else y[:count])
    else:
        other = np.full(count, np.isnan(k))
    if op in ("Add", "Mul", "Adds", "Muls", "LeakyRelu"):
        return x & other
    return np.zeros(count, bool)


def _same(op: str, a: np.ndarray, b: np.ndarray, lanes: np.ndarray, allowed: np.ndarray, what: str) -> None:
    differ = np.flatnonzero((a != b) & lanes & ~allowed)
    assert differ.size == 0, (f"{op}: {what} differ at {differ.size} lanes, e.g. lane {differ[0]}: "
                              f"{a[differ[0]]:#x} vs {b[differ[0]]:#x}")


#: counts: whole repeats, and ones that end inside a repeat and inside an 8-lane step
COUNTS = (1024, 1000, 69, 5)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("op", OPS)
def test_row_lane_and_in_place_give_the_same_bits(kernel, op: str, seed: int) -> None:
    inputs = _inputs(seed)
    scalars = (0.75, -3.5, float("nan"), float("-inf"), float("inf"), 0.0, -0.0, 1e-40) if op in SCALAR else (0.75,)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        for count in COUNTS:
            lane = np.arange(count) % 64
            for k in scalars:
                out = _run(kernel, dev, op, inputs, k, count)
                row = out["row"]
                nan2 = _both_nan_operands(op, inputs, k, count)
                what = f"(count {count}, scalar {k})"
                _same(op, row, out["lane0"], lane != 0, nan2, f"row and lane loop {what}")
                _same(op, row, out["lane63"], lane != 63, nan2, f"row and lane loop {what}")
                _same(op, row, out["prefix"], lane < PREFIX, nan2, f"row and per-repeat rows {what}")
                if op not in CASTS:
                    _same(op, row, out["in_place"], np.ones(count, bool), nan2, f"row and in place {what}")
                if op in BINARY:
                    _same(op, row, out["in_place1"], np.ones(count, bool), nan2, f"row and dst == src1 {what}")
                    block_nan2 = _both_nan_operands(op, inputs, k, count, block=True)
                    # (whole repeats only: the block form runs rep repeats of 64 lanes, and the row
                    # counts what it was given of them)
                    whole = np.arange(count) < count // 64 * 64
                    _same(op, out["block"], out["block_lane"], whole & (lane != 0), block_nan2,
                          f"one-block src1, row and lane loop {what}")


def test_the_rows_compute_what_numpy_computes_on_the_specials(kernel) -> None:
    """A row that agreed with the lane loop on wrong values would pass the test above: check the
    values themselves where numpy computes the same IEEE operation (every pair of specials, lane 0
    of each repeat included), including the sign of zeros."""
    inputs = _inputs(3)
    x, y = inputs["x"], inputs["y"]
    k = np.float32(0.75)
    with np.errstate(all="ignore"):
        want = {"Add": x + y, "Mul": x * y, "Max": np.where(x > y, x, y), "Min": np.where(x < y, x, y),
                "Abs": np.abs(x), "Relu": np.where(x > 0, x, np.float32(0)), "Adds": x + k,
                "Maxs": np.where(x > k, x, k), "Mins": np.where(x < k, x, k),
                "LeakyRelu": np.where(x >= 0, x, x * k), "Sqrt": np.sqrt(x),
                "Rsqrt": np.float32(1) / np.sqrt(x), "Reciprocal": np.float32(1) / x}
    with Device(1, kernel_type=KernelType.AIV) as dev:
        for op, expected in want.items():
            got = _run(kernel, dev, op, inputs, float(k), N)["row"].view(np.float32)
            same = (got == expected) | (np.isnan(got) & np.isnan(expected))
            assert same.all(), f"{op}: {np.count_nonzero(~same)} lanes differ from numpy"
            zeros = expected == 0
            assert (np.signbit(got[zeros]) == np.signbit(expected[zeros])).all(), f"{op}: a zero's sign differs"


def test_the_widening_casts_give_every_16_bit_pattern_its_value(kernel) -> None:
    """Every half and every bfloat16 bit pattern, widened by the row, against numpy's widening
    (a NaN becomes the canonical quiet NaN 0x7FC00000), N patterns a launch."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    with np.errstate(all="ignore"):
        as_half = bits.view(np.float16)
        want_half = np.where(np.isnan(as_half), np.uint32(0x7FC00000), as_half.astype(np.float32).view(np.uint32))
    wide = bits.astype(np.uint32) << 16
    want_bf16 = np.where((wide & 0x7FFFFFFF) > 0x7F800000, np.uint32(0x7FC00000), wide)
    inputs = _inputs(4)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        for op, name, want in (("HalfToFloat", "h", want_half), ("Bf16ToFloat", "g", want_bf16)):
            got = []
            for lo in range(0, 1 << 16, N):
                got.append(_run(kernel, dev, op, {**inputs, name: bits[lo:lo + N]}, 0.75, N)["row"])
            got_all = np.concatenate(got)
            differ = np.flatnonzero(got_all != want)
            assert differ.size == 0, f"{op}: {differ.size} patterns differ, e.g. {bits[differ[0]]:#06x}"
