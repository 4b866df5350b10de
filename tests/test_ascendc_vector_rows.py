"""The vectorised rows of the vector engine give the very bits of its lane-by-lane path.

Each float call with a row (two-source, tensor-scalar, one-source, and the Casts between float,
half and bfloat16) runs three ways on the same inputs, IEEE specials included (NaN with payloads
and signs, infinities, signed zeros, subnormals, values past the largest half and bfloat16): the
count form (one row over every lane), in place where the call allows it (the row reads a lane
before it writes it), and a level-0 form whose mask leaves out lane 0 of every repeat (the lane
loop). Every lane must hold the same bits, but where both operands of an addition or a
multiplication are NaN: which payload the result keeps is the compiler's choice on either path (it
may order a commutative operation either way), so there any NaN will do.
"""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

N = 1024  # 16 repeats of 64 lanes

BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min")
SCALAR = ("Adds", "Muls", "Maxs", "Mins", "LeakyRelu")
UNARY = ("Abs", "Sqrt", "Rsqrt", "Reciprocal", "Relu")
CASTS = ("HalfToFloat", "FloatToHalf", "Bf16ToFloat", "FloatToBf16")
OPS = BINARY + SCALAR + UNARY + CASTS


def _case(i: int, op: str) -> str:
    if op in BINARY:
        calls = (f"{op}(r, x, y, N); {op}(l, x, y, mask, N / 64, BinaryRepeatParams(1, 1, 1, 8, 8, 8)); "
                 f"{op}(p, p, y, N);")
    elif op in SCALAR:
        calls = (f"{op}(r, x, k, N); {op}(l, x, k, mask, N / 64, UnaryRepeatParams(1, 1, 8, 8)); "
                 f"{op}(p, p, k, N);")
    elif op in UNARY:
        calls = f"{op}(r, x, N); {op}(l, x, mask, N / 64, UnaryRepeatParams(1, 1, 8, 8)); {op}(p, p, N);"
    else:
        src, dst, mode, reps = {
            "HalfToFloat": ("h", "r", "CAST_NONE", "8, 4"), "FloatToHalf": ("x", "rh", "CAST_RINT", "4, 8"),
            "Bf16ToFloat": ("g", "r", "CAST_NONE", "8, 4"), "FloatToBf16": ("x", "rb", "CAST_RINT", "4, 8"),
        }[op]
        lane_dst = {"r": "l", "rh": "lh", "rb": "lb"}[dst]
        calls = (f"Cast({dst}, {src}, RoundMode::{mode}, N); "
                 f"Cast({lane_dst}, {src}, RoundMode::{mode}, mask, N / 64, UnaryRepeatParams(1, 1, {reps}));")
    return f"        case {i}: {calls} break;"


SOURCE = r'''#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t N = %d;
// op: which call (see the test); rowOut / laneOut / inPlaceOut: N floats' bytes each.
extern "C" __global__ __aicore__ void rows(GM_ADDR xs, GM_ADDR ys, GM_ADDR hs, GM_ADDR gs, GM_ADDR rowOut,
                                           GM_ADDR laneOut, GM_ADDR inPlaceOut, uint32_t op, float k) {
    GlobalTensor<float> xg, yg, rg, lg, pg;
    GlobalTensor<half> hg;
    GlobalTensor<bfloat16_t> gg;
    xg.SetGlobalBuffer((__gm__ float*)xs, N);
    yg.SetGlobalBuffer((__gm__ float*)ys, N);
    hg.SetGlobalBuffer((__gm__ half*)hs, N);
    gg.SetGlobalBuffer((__gm__ bfloat16_t*)gs, N);
    rg.SetGlobalBuffer((__gm__ float*)rowOut, N);
    lg.SetGlobalBuffer((__gm__ float*)laneOut, N);
    pg.SetGlobalBuffer((__gm__ float*)inPlaceOut, N);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bh, bgb, br, bl, bp;
    for (TBuf<TPosition::VECCALC>* b : {&bx, &by, &bh, &bgb, &br, &bl, &bp}) pipe.InitBuffer(*b, N * sizeof(float));
    LocalTensor<float> x = bx.Get<float>(), y = by.Get<float>(), r = br.Get<float>(), l = bl.Get<float>(),
                       p = bp.Get<float>();
    LocalTensor<half> h = bh.Get<half>(), rh = r.ReinterpretCast<half>(), lh = l.ReinterpretCast<half>();
    LocalTensor<bfloat16_t> g = bgb.Get<bfloat16_t>(), rb = r.ReinterpretCast<bfloat16_t>(),
                            lb = l.ReinterpretCast<bfloat16_t>();
    DataCopy(x, xg, N);
    DataCopy(y, yg, N);
    DataCopy(p, xg, N);
    DataCopy(h, hg, N);
    DataCopy(g, gg, N);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Duplicate(r, 0.0f, N);
    Duplicate(l, 0.0f, N);
    uint64_t mask[2] = {~uint64_t(1), 0};  // every lane but lane 0 of each repeat: the lane loop
    switch (op) {
%s
        default: break;
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(rg, r, N);
    DataCopy(lg, l, N);
    DataCopy(pg, p, N);
}
''' % (N, "\n".join(_case(i, op) for i, op in enumerate(OPS)))


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
    rng = np.random.default_rng(seed)
    specials = _specials32()
    x = rng.normal(0, 20, N).astype(np.float32)
    y = rng.normal(0, 20, N).astype(np.float32)
    # specials against specials and against ordinary values, at every lane position of a repeat
    x[rng.choice(N, 3 * len(specials), replace=False)] = np.tile(specials, 3)
    y[rng.choice(N, 3 * len(specials), replace=False)] = np.tile(specials, 3)
    h = rng.integers(0, 1 << 16, N, dtype=np.uint32).astype(np.uint16)  # every kind of half, NaNs included
    g = rng.integers(0, 1 << 16, N, dtype=np.uint32).astype(np.uint16)
    return {"x": x, "y": y, "h": h, "g": g}


def _run(kernel, dev: Device, op: str, inputs: dict[str, np.ndarray], k: float) -> dict[str, bytes]:
    with dev.scope() as gm:
        args = [gm.to_device("x", inputs["x"]), gm.to_device("y", inputs["y"]), gm.to_device("h", inputs["h"]),
                gm.to_device("g", inputs["g"])]
        outs = [gm.empty(n, (N,), "float32") for n in ("row", "lane", "in_place")]
        dev.launch(kernel, *args, *outs, np.uint32(OPS.index(op)), np.float32(k))
        return {n: dev.to_host(t).tobytes() for n, t in zip(("row", "lane", "in_place"), outs)}


def _lanes(raw: bytes, size: int) -> np.ndarray:
    """The result's lanes as integers (bits), lane 0 of each repeat left out."""
    v = np.frombuffer(raw, np.uint32 if size == 4 else np.uint16)[:N]
    return v[np.arange(N) % 64 != 0]


def _both_nan_operands(op: str, inputs: dict[str, np.ndarray], k: float) -> np.ndarray:
    """Lanes (as _lanes keeps them) where a commutative IEEE operation has two NaN operands."""
    x = np.isnan(inputs["x"])
    other = np.isnan(inputs["y"]) if op in BINARY else np.full(N, np.isnan(k))
    both = x & other if op in ("Add", "Mul", "Adds", "Muls", "LeakyRelu") else np.zeros(N, bool)
    return both[np.arange(N) % 64 != 0]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("op", OPS)
def test_row_lane_and_in_place_give_the_same_bits(kernel, op: str, seed: int) -> None:
    inputs = _inputs(seed)
    size = 2 if op in ("FloatToHalf", "FloatToBf16") else 4
    with Device(1, kernel_type=KernelType.AIV) as dev:
        for k in (0.75, -3.5, float("nan"), float("-inf")):
            out = _run(kernel, dev, op, inputs, k)
            row, lane = _lanes(out["row"], size), _lanes(out["lane"], size)
            differ = np.flatnonzero((row != lane) & ~_both_nan_operands(op, inputs, k))
            assert differ.size == 0, (f"{op} (scalar {k}): row and lane loop differ at {differ.size} lanes, e.g. "
                                      f"{row[differ[0]]:#x} vs {lane[differ[0]]:#x}")
            if op not in CASTS:
                assert out["in_place"] == out["row"], f"{op} (scalar {k}): in place differs from the row"
            if op not in SCALAR:
                break  # (the scalar matters only to the tensor-scalar calls)


def test_the_rows_compute_what_numpy_computes_on_the_specials(kernel) -> None:
    """A row that agreed with the lane loop on wrong values would pass the test above: spot-check
    the values themselves where numpy computes the same IEEE operation."""
    inputs = _inputs(3)
    x, y = inputs["x"], inputs["y"]
    with np.errstate(all="ignore"):
        want = {"Add": x + y, "Mul": x * y, "Max": np.where(x > y, x, y), "Min": np.where(x < y, x, y),
                "Abs": np.abs(x), "Relu": np.where(x > 0, x, np.float32(0)), "Adds": x + np.float32(0.75),
                "Maxs": np.where(x > np.float32(0.75), x, np.float32(0.75))}
    with Device(1, kernel_type=KernelType.AIV) as dev:
        for op, expected in want.items():
            got = np.frombuffer(_run(kernel, dev, op, inputs, 0.75)["row"], np.float32)
            same = (got == expected) | (np.isnan(got) & np.isnan(expected))
            assert same.all(), f"{op}: {np.count_nonzero(~same)} lanes differ from numpy"
            # signed zeros: the sign must be the IEEE operation's
            zeros = expected == 0
            assert (np.signbit(got[zeros]) == np.signbit(expected[zeros])).all(), f"{op}: a zero's sign differs"
