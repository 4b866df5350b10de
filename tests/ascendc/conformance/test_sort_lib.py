"""The sorting library (Concat, Sort, Extract, the library's MrgSort) and the basic MrgSort with GetMrgSortResult
against libref's numpy models: both score types, one repeat and several, full and per-repeat sorts, ties, NaN
and signed zeros, queues of unequal lengths with tails, the exhausted-suspension stop, a temporary buffer
smaller than the merge wants, and misuse."""

from __future__ import annotations

import numpy as np
import pytest
from cases import Layout
from libref import LibSim, descending, records
from vecref import NP, SIZE


def _scores(rng: np.random.Generator, T: str, n: int) -> np.ndarray:
    """Small integers (ties), a few fractions, signed zeros and, past the first 40, a NaN."""
    s = rng.integers(-12, 12, n).astype(np.float64)
    s[::7] += 0.5
    s[3::11] = 0.0
    s[5::13] = -0.0
    if n > 40:
        s[40] = np.nan
    return s.astype(NP[T])


def _sort_layout(T: str, n: int, seed: int, tmp_bytes: int | None = None):
    sim = LibSim(65536, seed=seed)
    lay = Layout(sim)
    rng = np.random.default_rng(seed)
    lay.add("concat", T, max(n, 16) * SIZE[T], data=np.resize(_scores(rng, T, max(n, 16)), max(n, 16)))
    lay.add("index", "u32", max(n, 8) * 4, data=rng.permutation(max(n, 8)).astype(np.uint32) + 1000)
    lay.add("dst", T, max(n, 4) * 8, data=np.zeros(max(n, 4) * 8 // SIZE[T], NP[T]))
    lay.add("tmp", T, tmp_bytes if tmp_bytes is not None else max(n, 4) * 8, -1, 1)
    return sim, lay


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("repeat", [1, 3, 8])
@pytest.mark.parametrize("full", [0, 1])
def test_sort(run, T, repeat, full):
    sim, _ = _sort_layout(T, 32 * repeat, seed=repeat * 10 + full)
    sim.call("Sort", T=T, dst="dst", concat="concat", index="index", tmp="tmp", repeat=repeat, full=full)
    run(sim)


def test_sort_reference_is_descending_and_stable():
    """The model itself: larger first, equal scores in their order, NaN first."""
    s = np.array([1.0, 3.0, np.nan, 3.0, -0.0, 0.0, 2.0], np.float32)
    assert descending(s).tolist() == [2, 1, 3, 6, 0, 4, 5]


@pytest.mark.parametrize("T", ["f16", "f32"])
def test_sort_zero_repeats_and_small_tmp(run, T):
    """repeatTime 0 touches nothing; a tmp smaller than the merge's copy is used as far as it goes."""
    sim, _ = _sort_layout(T, 128, seed=3, tmp_bytes=256)
    sim.call("Sort", T=T, dst="dst", concat="concat", index="index", tmp="tmp", repeat=0, full=1)
    sim.call("Sort", T=T, dst="dst", concat="concat", index="index", tmp="tmp", repeat=4, full=1)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
def test_concat_then_sort_then_extract(run, T):
    """The kernels' sequence: Concat into an unset tensor, a full Sort of it, Extract back into the inputs."""
    sim, lay = _sort_layout(T, 96, seed=11)
    sim.call("Sort", T=T, dst="dst", concat="concat", index="index", tmp="tmp", repeat=3, full=1, viaconcat=1)
    sim.call("Extract", T=T, value="concat", index="index", sorted="dst", repeat=3)
    run(sim)
    got = sim.get(sim.tensors["concat"])[:96].astype(np.float64)
    assert np.isnan(got[0]) and np.all(np.diff(got[1:]) <= 0)


@pytest.mark.parametrize("T", ["f16", "f32"])
def test_concat_is_src(run, T):
    sim, lay = _sort_layout(T, 64, seed=2)
    lay.add("out", "u32", 32, data=np.zeros(8, np.uint32))
    sim.call("Concat", T=T, src="concat", tmp="tmp", repeat=4, out="out")
    run(sim)
    c = sim.tensors["concat"]
    assert sim.get(sim.tensors["out"])[:2].tolist() == [c.offset, c.elems]


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("repeat", [1, 5])
def test_extract(run, T, repeat):
    n = 32 * repeat
    sim = LibSim(16384, seed=repeat)
    lay = Layout(sim)
    lay.add("sorted", "u8", n * 8, 0, 255)
    lay.add("value", T, n * SIZE[T] + 64)
    lay.add("index", "u32", n * 4 + 64)
    sim.call("Extract", T=T, value="value", index="index", sorted="sorted", repeat=repeat)
    run(sim)


def _queue(rng, T: str, n: int, first_index: int) -> np.ndarray:
    s = _scores(rng, T, n)
    order = descending(s)
    return records(s[order], np.arange(first_index, first_index + n)[order]).reshape(-1)


def _mrg_layout(T: str, lens: list[int], seed: int):
    sim = LibSim(65536, seed=seed)
    lay = Layout(sim)
    rng = np.random.default_rng(seed)
    for q, n in enumerate(lens):
        lay.add(f"q{q + 1}", "u8", max(n, 4) * 8, data=np.resize(_queue(rng, T, max(n, 1), 100 * q), max(n, 4) * 8))
    total = max(sum(lens), 4)
    lay.add("dst", "u8", total * 8, data=np.zeros(total * 8, np.uint8))
    lay.add("out", "u32", 32, data=np.zeros(8, np.uint32))
    lay.add("res", "u16", 32, data=np.zeros(16, np.uint16))
    for name in ("dst",):
        t = sim.tensors[name]
        sim.tensor(name, T, t.offset, t.elems // SIZE[T])
    for q in range(len(lens)):
        t = sim.tensors[f"q{q + 1}"]
        sim.tensor(t.name, T, t.offset, t.elems // SIZE[T])
    return sim


MERGES = [([32, 32, 32, 32], 15), ([17, 5, 40], 7), ([0, 9], 3), ([64, 3, 1, 30], 15)]


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("lens,valid", MERGES, ids=["4x32", "17-5-40", "0-9", "64-3-1-30"])
@pytest.mark.parametrize("suspend", [0, 1])
@pytest.mark.parametrize("lib", [0, 1], ids=["basic", "library"])
def test_mrgsort(run, T, lens, valid, suspend, lib):
    sim = _mrg_layout(T, lens, seed=len(lens) + sum(lens))
    kw = {f"q{q + 1}": f"q{q + 1}" for q in range(len(lens))}
    kw.update({f"len{q}": n for q, n in enumerate(lens)})
    if lib:
        kw["out"] = "out"
    sim.call("MrgSort", T=T, dst="dst", valid=valid, repeat=1, suspend=suspend, lib=lib, **kw)
    if suspend:
        sim.call("MrgSortResult", T="f32", out="res")
    run(sim)


def test_mrgsort_result_after_a_merge_without_suspension_is_an_error(run):
    sim = _mrg_layout("f32", [8, 8], seed=1)
    sim.call("MrgSort", T="f32", dst="dst", q1="q1", q2="q2", len0=8, len1=8, valid=3, repeat=1)
    sim.call("MrgSortResult", T="f32", out="res",
             expect_error="GetMrgSortResult: the counts are defined after a MrgSort with ifExhaustedSuspension set")
    run(sim)


@pytest.mark.parametrize("call,kw,msg", [
    ("Sort", dict(T="i32", repeat=1, full=1), "Sort: element type int32_t is not supported (it takes half, float)"),
    ("Sort", dict(T="f32", repeat=256, full=0), "Sort: repeatTime 256 is outside [0, 255]"),
    ("Sort", dict(T="f32", repeat=2, full=1, tmp="dst"), "Sort: tmp overlaps dst"),
    ("Sort", dict(T="f16", repeat=2, full=1, tmp="index"), "Sort: tmp overlaps index"),
    ("Extract", dict(T="f32", value="concat", index="index", sorted="dst", repeat=-1),
     "Extract: repeatTime -1 is outside [0, 255]"),
    ("Extract", dict(T="i32", value="concat", index="index", sorted="dst", repeat=1),
     "Extract: element type int32_t is not supported"),
    ("Concat", dict(T="f32", src="concat", tmp="tmp", repeat=5, out="index"),
     "Concat: repeatTime 5 covers 80 scores, past the end of src (64 elements)"),
    ("Concat", dict(T="i32", src="concat", tmp="tmp", repeat=1, out="index"), "Concat: element type int32_t"),
])
def test_sort_misuse(run, call, kw, msg):
    T = kw["T"]
    sim, _ = _sort_layout(T if T != "i32" else "f32", 64, seed=4)
    if T == "i32":
        for name in ("concat", "dst", "tmp"):
            t = sim.tensors[name]
            sim.tensor(name, "i32", t.offset, t.elems * SIZE["f32"] // 4)
    if call == "Sort":
        kw = dict(dict(dst="dst", concat="concat", index="index", tmp="tmp"), **kw)
    sim.call(call, expect_error=msg, **kw)
    run(sim)


def test_library_mrgsort_repeat_zero_is_an_error(run):
    sim = _mrg_layout("f32", [8, 8], seed=1)
    sim.call("MrgSort", T="f32", dst="dst", q1="q1", q2="q2", len0=8, len1=8, valid=3, repeat=0, lib=1, out="out",
             expect_error="MrgSort: repeatTime 0 is outside [1, 255]")
    run(sim)
