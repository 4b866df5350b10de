"""Cast: every type pair of the Atlas A2/A3 table with every round mode it takes, on random
values plus the edge ones (ties, values just off a tie, overflow, negatives into unsigned,
subnormals, zeros, infinities), against an exact-arithmetic reference; the level-0 forms; and
the pairs and modes that are not allowed."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cases import Layout
from vecref import NP, SIZE, Sim, f32_to_bf16, lanes_for, scalar_bits

NONE, RINT, FLOOR, CEIL, ROUND, TRUNC, ODD = range(7)
ROUNDING = [RINT, FLOOR, CEIL, ROUND, TRUNC]

# (src, dst): round modes
PAIRS = {
    ("i8", "f16"): [NONE], ("u8", "f16"): [NONE],
    ("i16", "f16"): [NONE] + ROUNDING, ("i16", "f32"): [NONE],
    ("f16", "i8"): [NONE] + ROUNDING, ("f16", "u8"): [NONE] + ROUNDING,
    ("f16", "i16"): ROUNDING, ("f16", "i32"): ROUNDING, ("f16", "f32"): [NONE],
    ("bf16", "i32"): ROUNDING, ("bf16", "f32"): [NONE],
    ("i32", "i16"): [NONE], ("i32", "f32"): [NONE] + ROUNDING, ("i32", "i64"): [NONE],
    ("f32", "i16"): ROUNDING, ("f32", "f16"): [NONE] + ROUNDING + [ODD], ("f32", "bf16"): ROUNDING,
    ("f32", "i32"): ROUNDING, ("f32", "f32"): [NONE] + ROUNDING, ("f32", "i64"): ROUNDING,
    ("i64", "i32"): [NONE], ("i64", "f32"): ROUNDING,
}
CASES = [(s, d, m) for (s, d), ms in PAIRS.items() for m in ms]


def values(src: str, dst: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if src in ("i8", "u8", "i16", "i32", "i64"):
        info = np.iinfo(NP[src])
        v = rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True)
        edge = [0, 1, -1, info.min, info.max, 2049, 2051, 4097, -4099, 65519, 65520, 2 ** 24 + 1, 2 ** 25 + 3,
                -(2 ** 25) - 3, 2 ** 31 - 1, 2 ** 35 + 2 ** 12 + 2 ** 11, -(2 ** 35) - 2 ** 11]
        edge = [e for e in edge if info.min <= e <= info.max]
        v[:len(edge)] = edge
        return v.astype(NP[src])
    f = rng.uniform(-300, 300, n)
    f[n // 3:2 * n // 3] = rng.uniform(-4, 4, n - n // 3 - n // 3 if n > 2 else 0)[: 2 * n // 3 - n // 3]
    edge = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 127.5, -128.5, 255.5, 256.0, -0.75, 0.499, 1e-7,
            65504.0, 65520.0, 70000.0, -70000.0, 1e9, -3e9, 6e-8, 2.0 ** -24 * 1.5, np.inf, -np.inf,
            0.5 + 2 ** -12, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 2.0 ** 22 + 0.5, 1e30, 3.4e38, 2.90573e-06]
    f[:len(edge)] = edge
    if src == "f16":
        with np.errstate(over="ignore"):
            return f.astype(np.float16)
    if src == "bf16":
        return f32_to_bf16(f.astype(np.float32))
    f32 = f.astype(np.float32)
    # values exactly between two halves, and one float ulp either side of them
    mid = (np.float32(1.0) + np.float32(2.0 ** -11) * np.arange(1, 41, 2)).astype(np.float32)
    k = len(edge)
    f32[k:k + len(mid)] = mid
    f32[k + len(mid):k + 2 * len(mid)] = np.nextafter(mid, np.float32(2))
    f32[k + 2 * len(mid):k + 3 * len(mid)] = -np.nextafter(mid, np.float32(0))
    if dst in ("f16", "bf16"):
        # NaNs with payloads, a negative one, a signalling one: each narrows to the canonical quiet NaN
        # (float -> float keeps a NaN as it is, and the reference does not model that)
        nans = np.array([0x7F800001, 0xFFC12345, 0x7FBFFFFF], np.uint32).view(np.float32)
        f32[k + 3 * len(mid):k + 3 * len(mid) + 3] = nans
    return f32


@pytest.mark.parametrize("src,dst,mode", CASES, ids=[f"{s}-{d}-m{m}" for s, d, m in CASES])
def test_cast_count(run, src, dst, mode):
    lanes = lanes_for(max(SIZE[src], SIZE[dst]))
    n = lanes * 3 + 5
    sim = Sim(32768, seed=zlib.crc32(f"{src}{dst}{mode}".encode()))
    lay = Layout(sim)
    data = np.resize(values(src, dst, n, sim.rng), (n * SIZE[src] + 64) // SIZE[src])
    lay.add("src", src, n * SIZE[src] + 64, data=data)
    lay.add("dst", dst, n * SIZE[dst] + 64)
    if (src, dst) == ("i32", "f16"):
        sim.call("SetDeqScale", T="f16", scale=scalar_bits(0.25, "f16"))
    sim.call("Cast", T=dst, U=src, dst="dst", src="src", round=mode, form="count", count=n)
    run(sim)


def test_cast_dequant_scale(run):
    """int32 -> half multiplies by the SetDeqScale scale (round mode ignored)."""
    sim = Sim(8192, seed=2)
    lay = Layout(sim)
    lay.add("src", "i32", 512, data=np.arange(-64, 64, dtype=np.int32) * 37)
    lay.add("dst", "f16", 512)
    sim.call("Cast", T="f16", U="i32", dst="dst", src="src", round=CEIL, form="count", count=64)  # scale 1.0
    sim.call("SetDeqScale", T="f16", scale=scalar_bits(-1.5, "f16"))
    sim.call("Cast", T="f16", U="i32", dst="dst", src="src", round=TRUNC, form="count", count=128)
    run(sim)


LEVEL0 = [
    # (src, dst, mode, kwargs): widening with the documented 8/4 repeat strides, narrowing, masks
    ("f16", "f32", NONE, dict(form="len", len=64, repeat=8, dblk=1, sblk=1, drep=8, srep=4)),
    ("f16", "i32", CEIL, dict(form="bits", mask0=0xF0F0F0F0F0F0F0F0, mask1=0, repeat=3, drep=8, srep=4)),
    ("f32", "f16", RINT, dict(form="len", len=40, repeat=5, drep=4, srep=8)),
    ("f32", "f16", ODD, dict(form="bits", mask0=0x123456789ABCDEF1, mask1=0, repeat=2, dblk=2, drep=9, sblk=1, srep=8)),
    ("f16", "i8", FLOOR, dict(form="len", len=128, repeat=2, drep=4, srep=8)),
    ("f16", "u8", ROUND, dict(form="bits", mask0=(1 << 64) - 1, mask1=0xFF00FF00FF00FF00, repeat=2, drep=4, srep=8)),
    ("i32", "f32", TRUNC, dict(form="len", len=64, repeat=4, sblk=0, srep=0)),
    ("f32", "bf16", RINT, dict(form="len", len=64, repeat=3, drep=4, srep=8, setmask=0, preset=(0xFFFF, 0, False))),
    ("bf16", "f32", NONE, dict(form="bits", mask0=10, mask1=0, repeat=1, preset=(0, 0, True))),  # counter: 10 elements
]


@pytest.mark.parametrize("src,dst,mode,kw", LEVEL0, ids=[f"{s}-{d}-m{m}-{i}" for i, (s, d, m, _) in enumerate(LEVEL0)])
def test_cast_level0(run, src, dst, mode, kw):
    sim = Sim(65536, seed=zlib.crc32(f"{src}{dst}{mode}{kw}".encode()))
    lay = Layout(sim)
    n = 6000
    lay.add("src", src, n, data=np.resize(values(src, dst, 512, sim.rng), n // SIZE[src]))
    lay.add("dst", dst, 12000)
    kw = dict(kw)
    if "preset" in kw:
        sim.set_regs(*kw.pop("preset"))
    sim.call("Cast", T=dst, U=src, dst="dst", src="src", round=mode, **kw)
    run(sim)


@pytest.mark.parametrize("src,dst,mode,msg", [
    ("bf16", "f16", RINT, "bfloat16_t -> half is not a supported conversion"),
    ("u8", "f32", NONE, "uint8_t -> float is not a supported conversion"),
    ("f32", "i8", RINT, "float -> int8_t is not a supported conversion"),
    ("f16", "bf16", RINT, "half -> bfloat16_t is not a supported conversion"),
    ("f16", "f32", RINT, "half -> float does not take CAST_RINT"),
    ("f32", "i32", NONE, "float -> int32_t does not take CAST_NONE"),
    ("f32", "bf16", ODD, "float -> bfloat16_t does not take CAST_ODD"),
    ("i32", "i16", FLOOR, "int32_t -> int16_t does not take CAST_FLOOR"),
])
def test_cast_refused(run, src, dst, mode, msg):
    sim = Sim(4096, seed=1)
    lay = Layout(sim)
    lay.add("src", src, 512)
    lay.add("dst", dst, 512)
    sim.call("Cast", T=dst, U=src, dst="dst", src="src", round=mode, form="count", count=8, expect_error=msg)
    run(sim)
