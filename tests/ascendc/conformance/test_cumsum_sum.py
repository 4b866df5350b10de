"""CumSum and Sum against libref's numpy models: both element types, one row and several, rows that take several
repeats and tails inside a repeat, both axes with and without the last row, with and without (and with a small)
temporary buffer, the host helpers' sizes, and misuse."""

from __future__ import annotations

import numpy as np
import pytest
from cases import Layout
from libref import LibSim
from vecref import NP, SIZE


def _cumsum_layout(T: str, rows: int, cols: int, seed: int, scratch: int = 16384):
    sim = LibSim(65536, seed=seed)
    lay = Layout(sim)
    n = rows * cols
    lay.add("src", T, n * SIZE[T] + 64, -4, 4)
    lay.add("dst", T, n * SIZE[T] + 64, data=np.zeros((n * SIZE[T] + 64) // SIZE[T], NP[T]))
    lay.add("last", T, max(rows, cols) * SIZE[T] + 32, data=np.zeros((max(rows, cols) * SIZE[T] + 32) // SIZE[T],
                                                                        NP[T]))
    lay.add("scratch", "u8", scratch, 0, 255)
    return sim


def _as_i32(sim: LibSim, T: str) -> LibSim:
    """For the element-type misuse: src and dst retyped to int32 (same bytes)."""
    if T == "i32":
        for name in ("src", "dst"):
            t = sim.tensors[name]
            sim.tensor(name, "i32", t.offset, t.elems)
    return sim


SHAPES = [(1, 64), (4, 8), (3, 48), (17, 16)]


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("rows,cols", SHAPES, ids=[f"{r}x{c}" for r, c in SHAPES])
@pytest.mark.parametrize("axis", ["last", "first"])
@pytest.mark.parametrize("lastrow", [0, 1])
@pytest.mark.parametrize("scratch", [True, False], ids=["tmp", "no_tmp"])
def test_cumsum(run, T, rows, cols, axis, lastrow, scratch):
    if cols * SIZE[T] % 32:
        cols *= 2
    sim = _cumsum_layout(T, rows, cols, seed=rows * 3 + cols + lastrow)
    kw = dict(scratch="scratch") if scratch else {}
    if lastrow:
        kw["last"] = "last"
    sim.call("CumSum", T=T, dst="dst", src="src", outter=rows, inner=cols, axis=axis, lastrow=lastrow, **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
def test_cumsum_in_place_default_config_and_small_tmp(run, T):
    """The default config (last axis, no last row), dst the source itself, and a scratch smaller than the
    model's widened copy (used as far as it goes)."""
    sim = _cumsum_layout(T, 4, 32, seed=8, scratch=64)
    sim.call("CumSum", T=T, dst="dst", src="src", outter=4, inner=32, axis="last", dflt=1)
    sim.call("CumSum", T=T, dst="src", src="src", outter=4, inner=32, axis="first", scratch="scratch")
    run(sim)


def test_cumsum_matches_the_pages_example(run):
    """Four rows of eight ones: along the rows 1..8 each, last values [8 8 8 8]; down the columns rows of 1..4,
    last row eight 4s."""
    sim = _cumsum_layout("f32", 4, 8, seed=1)
    sim.put(sim.tensors["src"], 0, np.ones(32, np.float32))
    sim.call("CumSum", T="f32", dst="dst", src="src", outter=4, inner=8, axis="last", lastrow=1, last="last")
    run(sim)
    assert sim.get(sim.tensors["dst"])[:8].tolist() == list(range(1, 9))
    assert sim.get(sim.tensors["last"])[:4].tolist() == [8, 8, 8, 8]


@pytest.mark.parametrize("T,kw,msg", [
    ("f32", dict(outter=2, inner=12), "CumSum: inner 12 x sizeof(float) is not a multiple of 32 bytes"),
    ("f16", dict(outter=0, inner=16), "CumSum: cumSumInfo {outter 0, inner 16}: both must be above 0"),
    ("f32", dict(outter=100, inner=64), "CumSum: count 6400 exceeds dstTensor's"),
    ("f32", dict(outter=2, inner=8, sklansky=1), "CumSum: the algorithm 1 is not on this chip"),
    ("f32", dict(outter=1, inner=32, lastrow=1, last="last", axis="first"),
     "CumSum: count 32 exceeds lastRowTensor's 24"),
    ("i32", dict(outter=1, inner=8), "CumSum: element type int32_t is not supported (it takes half, float)"),
    ("f16", dict(outter=4, inner=16, scratch="dst"), "CumSum: sharedTmpBuffer overlaps dstTensor"),
])
def test_cumsum_misuse(run, T, kw, msg):
    sim = _as_i32(_cumsum_layout("f32" if T == "i32" else T, 4, 16, seed=2), T)
    if kw.get("scratch") == "dst":
        t = sim.tensors["dst"]
        sim.tensor("over", "u8", t.offset, 256)
        kw = dict(kw, scratch="over")
    sim.call("CumSum", T=T, dst="dst", src="src", expect_error=msg, **dict(dict(axis="last"), **kw))
    run(sim)


def _sum_layout(T: str, rows: int, inner: int, seed: int, scratch: int = 1024):
    sim = LibSim(65536, seed=seed)
    lay = Layout(sim)
    lay.add("src", T, rows * inner * SIZE[T] + 64, -4, 4)
    lay.add("dst", T, rows * SIZE[T] + 64, data=np.zeros((rows * SIZE[T] + 64) // SIZE[T], NP[T]))
    lay.add("scratch", "u8", scratch, 0, 255)
    return sim


def _inner(n: int, T: str) -> int:
    per = 32 // SIZE[T]
    return -(-n // per) * per


SUMS = [(1, 3), (2, 3), (4, 64), (3, 200), (5, 130), (1, 1000)]


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("rows,n", SUMS, ids=[f"{r}x{n}" for r, n in SUMS])
@pytest.mark.parametrize("scratch", [True, False], ids=["tmp", "no_tmp"])
def test_sum(run, T, rows, n, scratch):
    inner = _inner(n, T)
    sim = _sum_layout(T, rows, inner, seed=rows + n)
    kw = dict(scratch="scratch") if scratch else {}
    sim.call("Sum", T=T, dst="dst", src="src", outter=rows, inner=inner, n=n, **kw)
    run(sim)


def test_sum_matches_the_pages_example(run):
    """A 2 x 3 half matrix padded to 16 a row: [6, 15]."""
    sim = _sum_layout("f16", 2, 16, seed=1)
    x = np.zeros(32, np.float16)
    x[:3], x[16:19] = [1, 2, 3], [4, 5, 6]
    sim.put(sim.tensors["src"], 0, x)
    sim.call("Sum", T="f16", dst="dst", src="src", outter=2, inner=16, n=3, scratch="scratch")
    run(sim)
    assert sim.get(sim.tensors["dst"])[:2].tolist() == [6, 15]


@pytest.mark.parametrize("T,kw,msg", [
    ("f32", dict(outter=2, inner=16, n=3), "Sum: sumParams.inner 16 is not n 3 rounded up to 32 bytes (8 for float)"),
    ("f16", dict(outter=2, inner=16, n=0), "Sum: sumParams.n 0 is outside [1, inner 16]"),
    ("f16", dict(outter=2, inner=16, n=17), "Sum: sumParams.n 17 is outside [1, inner 16]"),
    ("f32", dict(outter=2, inner=8, n=8, rdim=0), "Sum: reduceDim 0 is not supported"),
    ("f32", dict(outter=2, inner=8, n=8, basic=1), "Sum: isBasicBlock is reserved and not supported"),
    ("i32", dict(outter=1, inner=8, n=8), "Sum: element type int32_t is not supported (it takes half, float)"),
    ("f32", dict(outter=20, inner=8, n=8), "Sum: count 160 exceeds srcTensor's"),
    ("f32", dict(outter=2, inner=8, n=8, dst="src"), "Sum: dstTensor overlaps srcTensor"),
    ("f32", dict(outter=2, inner=8, n=8, scratch="src"), "Sum: sharedTmpBuffer overlaps srcTensor"),
])
def test_sum_misuse(run, T, kw, msg):
    sim = _as_i32(_sum_layout("f32" if T == "i32" else T, 4, 16, seed=2), T)
    if kw.get("scratch") == "src":
        sim.tensor("over", "u8", sim.tensors["src"].offset, 64)
        kw = dict(kw, scratch="over")
    kw = dict(dict(dst="dst", src="src"), **kw)
    sim.call("Sum", T=T, expect_error=msg, **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("op", ["Sum", "CumSum"])
def test_host_helpers(run, T, op):
    sim = LibSim(4096, seed=0)
    lay = Layout(sim)
    for n in (1, 64, 1000):
        lay.add(f"out{n}", "u32", 32, data=np.zeros(8, np.uint32))
        sim.call("LibHost", T=T, op=op, n=n, out=f"out{n}")
    run(sim)
    if op == "Sum":
        assert sim.get(sim.tensors["out1000"])[:2].tolist() == ([64, 64] if T == "f32" else [32, 32])
