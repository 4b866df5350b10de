"""Library calls built on the vector unit, and vector calls outside the element-wise families, against the numpy
reference: BroadCast / Broadcast, GatherMask."""

from __future__ import annotations

import pytest
from cases import Layout
from vecref import SIZE, Sim

BROADCAST_TYPES = ["i8", "u8", "f16", "f32"]

# (dim, axis, dst shape, src shape): column to rows, a row repeated, a scalar to a vector; tails
# (columns that are not a whole 32-byte block), one row, no broadcast at all.
BROADCAST_SHAPES = [
    (2, 1, (5, 16), (5, 1)),
    (2, 1, (7, 13), (7, 1)),
    (2, 1, (3, 1), (3, 1)),
    (2, 1, (1, 70), (1, 1)),
    (2, 0, (6, 32), (1, 32)),
    (2, 0, (3, 64), (1, 64)),
    (2, 0, (1, 32), (1, 32)),
    (1, 0, (37,), (1,)),
    (1, 0, (8,), (8,)),
]


def _shape_kw(dim, axis, ds, ss):
    kw = dict(dim=dim, axis=axis, d0=ds[0], s0=ss[0])
    if dim == 2:
        kw.update(d1=ds[1], s1=ss[1])
    return kw


@pytest.mark.parametrize("T", BROADCAST_TYPES)
@pytest.mark.parametrize("dim,axis,ds,ss", BROADCAST_SHAPES, ids=[f"{d}d-ax{a}-{ds}-{ss}" for d, a, ds, ss in
                                                                  BROADCAST_SHAPES])
@pytest.mark.parametrize("form", ["plain", "tmp", "alias"])
def test_broadcast(run, T, dim, axis, ds, ss, form):
    sim = Sim(16384, seed=len(ds) * 31 + axis)
    lay = Layout(sim)
    lay.add("dst", T, 4096, -100, 100)
    lay.add("src", T, 1024, -100, 100)
    lay.add("scratch", "u8", 1024, 0, 255)
    sim.call("BroadCast", T=T, dst="dst", src="src", tmp=int(form == "tmp"), alias=int(form == "alias"),
             **({"scratch": "scratch"} if form == "tmp" else {}), **_shape_kw(dim, axis, ds, ss))
    run(sim)


def test_broadcast_axis0_in_place(run):
    """An axis-0 broadcast into its own source (public kernels do it): the first row stays, the rest copy it."""
    sim = Sim(8192, seed=3)
    lay = Layout(sim)
    lay.add("x", "f32", 4096)
    sim.call("BroadCast", T="f32", dst="x", src="x", **_shape_kw(2, 0, (4, 16), (1, 16)))
    run(sim)


@pytest.mark.parametrize("kw,msg", [
    (_shape_kw(2, 1, (4, 16), (3, 1)),
     "BroadCast: srcShape [3, 1] does not broadcast to dstShape [4, 16] along axis 1"),
    (_shape_kw(2, 0, (4, 16), (2, 16)), "does not broadcast to dstShape [4, 16] along axis 0"),
    (_shape_kw(2, 0, (4, 12), (1, 12)), "with axis 0 a source row must be a multiple of 32 bytes"),
    (_shape_kw(2, 1, (64, 64), (64, 1)), "BroadCast: dstShape holds 4096 elements, more than dst's 1024"),
    (_shape_kw(1, 0, (8,), (3,)), "BroadCast: srcShape [3] does not broadcast to dstShape [8]"),
])
def test_broadcast_misuse(run, kw, msg):
    sim = Sim(16384, seed=1)
    lay = Layout(sim)
    lay.add("dst", "f32", 4096)
    lay.add("src", "f32", 1024)
    sim.call("BroadCast", T="f32", dst="dst", src="src", **kw, expect_error=msg)
    run(sim)


def test_broadcast_overlap_and_type_are_errors(run):
    sim = Sim(16384, seed=1)
    lay = Layout(sim)
    lay.add("x", "f32", 4096)
    sim.tensor("y", "f32", 32, 512)  # 32 bytes into x: inside the 16 source elements
    sim.call("BroadCast", T="f32", dst="y", src="x", **_shape_kw(2, 1, (16, 8), (16, 1)),
             expect_error="BroadCast: dst and src overlap")
    run(sim)
    sim = Sim(16384, seed=1)
    lay = Layout(sim)
    lay.add("dst", "i32", 4096)
    lay.add("src", "i32", 1024)
    sim.call("BroadCast", T="i32", dst="dst", src="src", **_shape_kw(2, 1, (8, 8), (8, 1)),
             expect_error="BroadCast: element type int32_t is not supported (it takes int8_t, uint8_t, half, float)")
    run(sim)


# -- GatherMask ---------------------------------------------------------------------------------------

GM_TYPES = ["i16", "u16", "f16", "bf16", "i32", "u32", "f32"]
PATTERN_DT = {2: "u16", 4: "u32"}


def _gm_layout(T, seed, pdt=None):
    sim = Sim(32768, seed=seed)
    lay = Layout(sim)
    lay.add("dst", T, 8192, -100, 100)
    lay.add("src", T, 8192, -100, 100)
    lay.add("cnt", "u64", 32, 0, 0)
    if pdt:
        lay.add("pat", pdt, 512, 0, 65535 if pdt == "u16" else 2 ** 32 - 1)
    return sim


# (id, kwargs): normal mode (256 bytes a repeat, mask ignored) and counter mode (``mask`` elements a
# repeat), block and repeat strides, one repeat, none
GM_SHAPES = [
    ("normal", dict(reduce=0, mask=0, repeat=3)),
    ("normal_strided", dict(reduce=0, mask=0, repeat=2, blk=2, srep=17)),
    ("counter_tail", dict(reduce=1, mask=37, repeat=4, srep=5)),
    ("counter_rows", dict(reduce=1, mask=24, repeat=3, srep=3)),
    ("none", dict(reduce=0, mask=0, repeat=0)),
]


@pytest.mark.parametrize("T", GM_TYPES)
@pytest.mark.parametrize("fixed", range(1, 8))
def test_gather_mask_fixed_patterns(run, T, fixed):
    sim = _gm_layout(T, fixed)
    for _, kw in GM_SHAPES:
        sim.call("GatherMask", T=T, dst="dst", src="src", cnt="cnt", fixed=fixed, **kw)
    run(sim)


@pytest.mark.parametrize("T", GM_TYPES)
@pytest.mark.parametrize("shape", [n for n, _ in GM_SHAPES])
@pytest.mark.parametrize("prep", [0, 1])
def test_gather_mask_pattern_tensor(run, T, shape, prep):
    pdt = PATTERN_DT[SIZE[T]]
    sim = _gm_layout(T, len(shape) + prep, pdt)
    sim.call("GatherMask", T=T, dst="dst", src="src", cnt="cnt", pattern="pat", pdt=pdt, prep=prep,
             **dict(GM_SHAPES)[shape])
    run(sim)


def test_gather_mask_in_place_and_counter_mode_after(run):
    """dst == src (the documented in-place use), and the call leaves counter mode for normal mode."""
    sim = _gm_layout("f32", 5, "u32")
    sim.set_regs(100, 0, True)
    sim.call("GatherMask", T="f32", dst="src", src="src", cnt="cnt", fixed=2, reduce=0, repeat=4)
    sim.call("GatherMask", T="f32", dst="src", src="src", cnt="cnt", pattern="pat", pdt="u32", reduce=1, mask=50,
             repeat=2, srep=8)
    run(sim)


@pytest.mark.parametrize("T,kw,msg", [
    ("f32", dict(fixed=0, repeat=1), "GatherMask: fixed pattern 0 is outside [1, 7]"),
    ("f32", dict(fixed=8, repeat=1), "GatherMask: fixed pattern 8 is outside [1, 7]"),
    ("i8", dict(fixed=1, repeat=1), "GatherMask: element type int8_t is not supported"),
    ("f32", dict(pattern="pat", pdt="u16", repeat=1), "GatherMask: a uint16_t pattern tensor does not go with float"),
    ("f32", dict(fixed=7, reduce=1, mask=0, repeat=1), "GatherMask: mask 0 in counter mode"),
    ("f32", dict(fixed=7, repeat=40), "GatherMask: 2560 kept elements exceed dst's 2048"),
])
def test_gather_mask_misuse(run, T, kw, msg):
    sim = _gm_layout(T, 9, "u16")
    sim.call("GatherMask", T=T, dst="dst", src="src", cnt="cnt", **kw, expect_error=msg)
    run(sim)


# -- Sigmoid, Sign ----------------------------------------------------------------------------------------

LIB_FORMS = [("count", 200), ("count", 37), ("count", 0), ("tmp_count", 129), ("tmp", None), ("whole", None),
             ("ptr", 77)]


@pytest.mark.parametrize("op", ["Sigmoid", "Sign"])
@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("form,count", LIB_FORMS, ids=[f"{f}-{c}" for f, c in LIB_FORMS])
def test_lib_unary(run, op, T, form, count):
    sim = Sim(16384, seed=len(form) + (count or 0))
    lay = Layout(sim)
    lay.add("dst", T, 1024, -100, 100)
    x = lay.add("src", T, 1024, -12, 12)
    lay.add("scratch", "u8", 1024, 0, 255)
    if op == "Sign":  # zeros of both signs among the values
        v = sim.get(x)
        v[::7] = 0
        v[3::11] = -0.0
        sim.put(x, 0, v)
    kw = dict(form=form)
    if count is not None:
        kw["count"] = count
    if form.startswith("tmp"):
        kw["scratch"] = "scratch"
    sim.call(op, T=T, dst="dst", src="src", **kw)
    run(sim)


@pytest.mark.parametrize("kw,msg", [
    (dict(T="f32", dst="dst", src="src", form="count", count=300), "Sigmoid: count 300 exceeds dst's 256 elements"),
    (dict(T="f32", dst="src", src="src", form="count", count=8), "Sigmoid: dst and src overlap"),
    (dict(T="i32", dst="dst", src="src", form="count", count=8), "Sigmoid: element type int32_t is not supported"),
])
def test_lib_unary_misuse(run, kw, msg):
    sim = Sim(16384, seed=2)
    lay = Layout(sim)
    lay.add("dst", kw["T"], 1024)
    lay.add("src", kw["T"], 4096)
    sim.call("Sigmoid", **kw, expect_error=msg)
    run(sim)


@pytest.mark.parametrize("form,count", [("whole", None), ("tmp", None), ("tmp_count", 100), ("tmp_count", 0)])
@pytest.mark.parametrize("T", ["f16", "f32"])
def test_log_library_forms(run, form, count, T):
    """Log's whole-tensor and temporary-buffer forms compute as its count form."""
    sim = Sim(16384, seed=4)
    lay = Layout(sim)
    lay.add("dst", T, 1024, -5, 5)
    lay.add("src", T, 1024, 0.05, 20.0)
    lay.add("scratch", "u8", 256, 0, 255)
    kw = dict(form=form)
    if count is not None:
        kw["count"] = count
    if form != "whole":
        kw["scratch"] = "scratch"
    sim.call("LogLib", T=T, dst="dst", src="src", **kw)
    run(sim)


# RoundMode numbering of mpnpu's params.h: 1 RINT, 2 FLOOR, 3 CEIL, 4 ROUND, 6 ODD
ROUND = {"RINT": 1, "FLOOR": 2, "CEIL": 3, "ROUND": 4, "ODD": 6}


@pytest.mark.parametrize("U,mode", [("f16", "ODD"), ("i32", "ROUND"), ("i32", "CEIL"), ("i32", "FLOOR"),
                                    ("i32", "RINT")])
@pytest.mark.parametrize("alias", [0, 1])
def test_scalar_cast(run, U, mode, alias):
    """ScalarCast<float, U, mode> (and the scalar Cast) on halves, ties, large values, infinities, NaN."""
    import numpy as np

    special = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 1e-8, -1e-8, 65504.0, 65520.0, 1e5, 3e9, -3e9,
                        np.inf, -np.inf, np.nan, 2.0 ** -25, 1.0009765625, 1.00048828125], np.float32)
    sim = Sim(8192, seed=6)
    lay = Layout(sim)
    src = lay.add("src", "f32", 1024, -70000.0, 70000.0)
    sim.put(src, 0, special)
    lay.add("dst", U, 1024, 0, 0)
    sim.call("ScalarCast", T=U, src="src", dst="dst", round=ROUND[mode], n=200, alias=alias)
    run(sim)
