"""The library's activations (Gelu, FasterGelu, Silu, Swish, GeGLU, SwiGLU), Fmod, Xor, the Taylor Exp, Power
with its buffer forms, the tmp-buffer Axpy, Arange, DropOut and Select with a bytes-mask shape, against numpy
(actref.py): every documented form, both element types, counts with tails, a temporary buffer at, above and
below its minimum, misuse; and the host helpers' sizes."""

from __future__ import annotations

import numpy as np
import pytest
from actref import NODES, ActSim, lib_tmp
from cases import Layout
from vecref import SIZE

FOUR = ("tmp_count", "tmp", "count", "whole")
FORMS = {"Gelu": ("tmp_count", "count"), "FasterGelu": ("tmp_count", "count"), "Silu": ("count",),
         "Swish": ("count",), "GeGLU": FOUR, "SwiGLU": FOUR, "Fmod": FOUR, "Exp": ("tmp_count", "count"),
         "Power": FOUR, "PowerTS": FOUR, "PowerST": FOUR}
# count: a tail (not a 32-byte block), a whole number of repeats plus one, one element, none
COUNTS = {"tmp_count": (37, 129, 0), "count": (77, 1), "tmp": (None,), "whole": (None,)}
CASES = [(op, form, n) for op, forms in FORMS.items() for form in forms for n in COUNTS[form]]
RANGE = {"Exp": (-10, 10), "Power": (0.5, 3), "PowerTS": (0.5, 3), "PowerST": (-3, 3), "Fmod": (-50, 50)}


def _layout(T: str, op: str, seed: int, scratch: int = 4096, src_bytes: int = 1024):
    sim = ActSim(16384, seed=seed)
    lay = Layout(sim)
    lay.add("dst", T, 1024, -100, 100)
    lo, hi = RANGE.get(op, (-6, 6))
    lay.add("src0", T, src_bytes, lo, hi)
    lay.add("src1", T, src_bytes, 0.5 if op == "Fmod" else lo, 7 if op == "Fmod" else hi)
    lay.add("scratch", "u8", scratch, 0, 255)
    return sim, lay


def _kw(op: str, form: str, count, T: str) -> dict:
    kw: dict = dict(form=form)
    if count is not None:
        kw["count"] = count
    if form.startswith("tmp"):
        kw["scratch"] = "scratch"
    if op in ("GeGLU", "SwiGLU", "Fmod", "Xor", "Power"):
        kw["src1"] = "src1"
    if op in ("Swish", "SwiGLU"):
        kw["beta"] = 1.702
    if op == "Exp":
        kw["level"] = 10
    if op in ("PowerTS", "PowerST"):
        kw["scalar"] = int(np.array([1.5 if op == "PowerTS" else 2.0], {"f16": np.float16, "f32": np.float32}[T])
                           .view({"f16": np.uint16, "f32": np.uint32}[T])[0])
    return kw


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("op,form,count", CASES, ids=[f"{o}-{f}-{c}" for o, f, c in CASES])
def test_act_lib(run, op, T, form, count):
    sim, _ = _layout(T, op, seed=len(op) * 7 + len(form) + (count or 0))
    sim.call("Act", T=T, op=op, dst="dst", src0="src0", **_kw(op, form, count, T))
    run(sim)


@pytest.mark.parametrize("level", [0, 3, 15])
def test_exp_taylor_levels(run, level):
    """The Taylor level: 0 is e^x itself; a few terms are visibly off; many agree with e^x."""
    sim, _ = _layout("f32", "Exp", seed=level)
    sim.call("Act", T="f32", op="Exp", dst="dst", src0="src0", form="count", count=100, level=level)
    run(sim)


@pytest.mark.parametrize("T", ["i16", "u16"])
@pytest.mark.parametrize("form,count", [("tmp_count", 37), ("tmp_count", 0), ("tmp", None), ("count", 130),
                                        ("whole", None)])
def test_xor(run, T, form, count):
    sim = ActSim(16384, seed=3)
    lay = Layout(sim)
    lay.add("dst", T, 1024, 0, 0)
    lo, hi = (-32768, 32767) if T == "i16" else (0, 65535)
    lay.add("src0", T, 1024, lo, hi)
    lay.add("src1", T, 1024, lo, hi)
    lay.add("scratch", "u8", 2048, 0, 255)
    sim.call("Act", T=T, op="Xor", dst="dst", src0="src0", **_kw("Xor", form, count, T))
    run(sim)


@pytest.mark.parametrize("op", ["Power", "PowerTS"])
def test_power_int32(run, op):
    """int32 powers exactly (negative exponents: 0 but for bases 1 and -1), and in place (dst the source)."""
    sim = ActSim(16384, seed=4)
    lay = Layout(sim)
    lay.add("dst", "i32", 1024, 0, 0)
    lay.add("src0", "i32", 1024, -5, 5)
    lay.add("src1", "i32", 1024, -2, 9)
    lay.add("scratch", "u8", 2048, 0, 255)
    kw = dict(src1="src1") if op == "Power" else dict(scalar=3)
    sim.call("Act", T="i32", op=op, dst="dst", src0="src0", form="tmp_count", count=100, scratch="scratch", **kw)
    sim.call("Act", T="i32", op=op, dst="src0", src0="src0", form="count", count=60, **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("op", ["Gelu", "FasterGelu"])
def test_gelu_in_place(run, op, T):
    """Gelu and FasterGelu may write over their source (documented)."""
    sim, _ = _layout(T, op, seed=5)
    sim.call("Act", T=T, op=op, dst="src0", src0="src0", form="count", count=200)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("op", ["Gelu", "GeGLU", "Fmod", "Exp", "Power"])
@pytest.mark.parametrize("extra", [0, 32])
def test_tmp_minimum(run, op, T, extra):
    """A sharedTmpBuffer of exactly the minimum (or a little more) works for any count; the call uses what it
    has, up to its maximum."""
    lo, _ = lib_tmp(0, SIZE[T], NODES[op])
    sim, _ = _layout(T, op, seed=9, scratch=lo + extra)
    sim.call("Act", T=T, op=op, dst="dst", src0="src0", **_kw(op, "tmp_count", 1024 // SIZE[T], T))
    run(sim)


@pytest.mark.parametrize("T,U,count", [("f32", "f16", 37), ("f32", "f16", 512), ("f16", "f16", 200),
                                       ("f32", "f32", 129), ("f32", "f16", 0)])
def test_axpy_lib(run, T, U, count):
    sim = ActSim(16384, seed=count)
    lay = Layout(sim)
    lay.add("dst", T, 2048, -50, 50)
    lay.add("src", U, 1024, -50, 50)
    lay.add("scratch", "u8", 2048, 0, 255)
    sim.call("AxpyLib", T=T, U=U, dst="dst", src="src", scalar=2.5, scratch="scratch", count=count)
    run(sim)


@pytest.mark.parametrize("T,first,diff,count", [("f32", -3.5, 0.25, 100), ("f16", 1.0, 0.5, 37),
                                                ("i32", -7, 3, 65), ("i16", 5, 0, 16), ("f32", 2.0, 1.0, 1)])
def test_arange(run, T, first, diff, count):
    sim = ActSim(4096, seed=1)
    Layout(sim).add("dst", T, 1024, 0, 0)
    sim.call("Arange", T=T, dst="dst", first=first, diff=diff, count=count)
    run(sim)


# (m, k, mk, mode): byte mode equal rows, byte mode padded rows, bit mode back to back, bit mode padded rows,
# and the same with the mode given
DROPOUT = [(2, 64, 64, 0), (2, 64, 96, 0), (4, 64, 8, 0), (3, 64, 32, 0), (2, 64, 96, 1), (2, 64, 64, 2),
           (4, 64, 8, 3), (3, 64, 32, 4)]


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("m,k,mk,mode", DROPOUT)
@pytest.mark.parametrize("tmp", [True, False])
def test_dropout(run, T, m, k, mk, mode, tmp):
    sim = ActSim(32768, seed=m * k + mk)
    lay = Layout(sim)
    lay.add("dst", T, m * k * SIZE[T], 0, 0)
    lay.add("src", T, m * k * SIZE[T], -100, 100)
    lay.add("mask", "u8", m * mk, 0, 255 if mk * 8 <= k or mk < k else 1)
    lay.add("scratch", "u8", 1024, 0, 255)
    kw = dict(scratch="scratch") if tmp else {}
    sim.call("DropOut", T=T, dst="dst", src="src", mask="mask", keep=0.625, m=m, k=k, mk=mk, mode=mode, **kw)
    run(sim)


@pytest.mark.parametrize("T,U", [("f32", "u8"), ("f32", "u16"), ("f16", "u8"), ("f16", "i32")])
@pytest.mark.parametrize("first", [1, 0])
@pytest.mark.parametrize("mk", [0, 32])  # the mask's rows as long as the source's, or 32 longer
def test_select_lib(run, T, U, first, mk):
    m, k = 3, 32
    mk += k
    sim = ActSim(32768, seed=first + mk)
    lay = Layout(sim)
    lay.add("dst", T, m * k * SIZE[T], 0, 0)
    lay.add("src", T, m * k * SIZE[T], -100, 100)
    lay.add("mask", U, m * mk * SIZE[U], 0, 1)
    lay.add("scratch", "u8", 1024, 0, 255)
    sim.call("SelectLib", T=T, U=U, dst="dst", src="src", mask="mask", scratch="scratch", scalar=35.5,
             first=first, m=m, k=k, mk=mk)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("op", ["GeGLU", "SwiGLU", "Fmod", "Xor", "Axpy", "Exp", "Power", "Gelu", "Silu", "Swish",
                                "DropOut", "Select", "Arange"])
def test_act_host_helpers(run, op, T):
    """The host helpers' sizes for short and long shapes (the model in actref.py)."""
    for n in (1, 64, 1000):
        sim = ActSim(4096, seed=n)
        Layout(sim).add("out", "u32", 32, data=np.zeros(8, np.uint32))
        sim.call("ActHost", T=T, op=op, n=n, out="out")
        run(sim)


def _misuse(T, op, msg, form="count", count=8, scratch=4096, dst="dst", **extra):
    sim, _ = _layout(T, op, seed=2, scratch=scratch)
    if dst not in sim.tensors:  # a view of src0 starting one block in
        sim.tensor(dst, T, sim.tensors["src0"].offset + 32, 64)
    kw = {**_kw(op, form, count, T), **extra}
    sim.call("Act", T=T, op=op, dst=dst, src0="src0", **kw, expect_error=msg)
    return sim


@pytest.mark.parametrize("T,op,form,count,scratch,dst,msg", [
    ("f32", "Gelu", "count", 300, 4096, "dst", "Gelu: count 300 exceeds dst's 256 elements"),
    ("f16", "GeGLU", "tmp_count", 600, 4096, "dst", "GeGLU: count 600 exceeds dst's 512 elements"),
    ("i32", "Gelu", "count", 8, 4096, "dst", "Gelu: element type int32_t is not supported (it takes half, float)"),
    ("i32", "SwiGLU", "count", 8, 4096, "dst", "SwiGLU: element type int32_t is not supported"),
    ("f32", "Xor", "count", 8, 4096, "dst", "Xor: element type float is not supported (it takes int16_t, uint16_t)"),
    ("i16", "Fmod", "count", 8, 4096, "dst", "Fmod: element type int16_t is not supported"),
    ("f32", "Gelu", "tmp_count", 8, 224,  "dst",
     "Gelu: sharedTmpBuffer has 224 bytes, fewer than the 256 the call needs"),
    ("f16", "GeGLU", "tmp", None, 992, "dst", "GeGLU: sharedTmpBuffer has 992 bytes, fewer than the 1024"),
    ("f32", "Fmod", "tmp_count", 0, 480, "dst", "Fmod: sharedTmpBuffer has 480 bytes, fewer than the 512"),
    ("f32", "Power", "tmp_count", 8, 256, "dst", "Power: sharedTmpBuffer has 256 bytes, fewer than the 512"),
    ("f32", "Exp", "tmp_count", 8, 128, "dst", "Exp: sharedTmpBuffer has 128 bytes"),
    ("f32", "Silu", "count", 16, 4096, "src0", "Silu: dst and src overlap (the call takes separate operands)"),
    ("f32", "GeGLU", "count", 16, 4096, "src1", "GeGLU: dst and srcTensor1 overlap"),
    ("f32", "Fmod", "count", 16, 4096, "shifted", "Fmod: dst and src0Tensor overlap"),
    ("f32", "Gelu", "count", 16, 4096, "shifted", "Gelu: dst and src overlap without being the same tensor"),
    ("f32", "Exp", "count", 16, 4096, "src0", "Exp: dst and src overlap"),
])
def test_act_lib_misuse(run, T, op, form, count, scratch, dst, msg):
    run(_misuse(T, op, msg, form, count, scratch, dst))


@pytest.mark.parametrize("op,what", [("GeGLU", "dst"), ("Fmod", "src1Tensor"), ("Gelu", "src")])
def test_act_lib_tmp_overlap(run, op, what):
    sim, _ = _layout("f32", op, seed=2)
    on = {"dst": "dst", "src1Tensor": "src1", "src": "src0"}[what]
    sim.tensor("tmp_on", "u8", sim.tensors[on].offset, 1024)
    kw = {**_kw(op, "tmp_count", 16, "f32"), "scratch": "tmp_on"}
    sim.call("Act", T="f32", op=op, dst="dst", src0="src0", **kw,
             expect_error=f"{op}: sharedTmpBuffer overlaps {what} (the call takes separate operands)")
    run(sim)


@pytest.mark.parametrize("T,U,scratch,msg", [
    ("f16", "f32", 2048, "Axpy: dst half with src float is not supported"),
    ("f32", "f16", 256, "Axpy: sharedTmpBuffer has 256 bytes, fewer than the 512 the call needs"),
])
def test_axpy_lib_misuse(run, T, U, scratch, msg):
    sim = ActSim(16384, seed=1)
    lay = Layout(sim)
    lay.add("dst", T, 1024, 0, 1)
    lay.add("src", U, 1024, 0, 1)
    lay.add("scratch", "u8", scratch, 0, 255)
    sim.call("AxpyLib", T=T, U=U, dst="dst", src="src", scalar=1.0, scratch="scratch", count=8, expect_error=msg)
    run(sim)


@pytest.mark.parametrize("first,diff,count,msg", [
    (0.0, 1.0, 0, "Arange: count 0 must be greater than 0"),
    (0.0, -1.0, 8, "Arange: diffValue -1 must be at least 0"),
    (0.0, 1.0, 300, "Arange: count 300 is outside the destination's 256 elements"),
])
def test_arange_misuse(run, first, diff, count, msg):
    sim = ActSim(4096, seed=1)
    Layout(sim).add("dst", "f32", 1024, 0, 0)
    sim.call("Arange", T="f32", dst="dst", first=first, diff=diff, count=count, expect_error=msg)
    run(sim)


@pytest.mark.parametrize("T,m,k,mk,mode,keep,scratch,msg", [
    ("f32", 2, 64, 64, 0, 0.0, 1024, "DropOut: keepProb 0 is outside (0, 1)"),
    ("f32", 2, 64, 64, 0, 1.5, 1024, "DropOut: keepProb 1.5 is outside (0, 1)"),
    ("f32", 2, 60, 64, 0, 0.5, 1024, "DropOut: srcLastAxis 60 is not 32-byte aligned"),
    ("f32", 2, 64, 4, 0, 0.5, 1024, "DropOut: maskLastAxis 4 covers neither"),
    ("f32", 2, 64, 64, 7, 0.5, 1024, "DropOut: dropOutMode 7 is not one of 0 to 4"),
    ("f32", 2, 64, 64, 0, 0.5, 128, "DropOut: sharedTmpBuffer has 128 bytes, fewer than the 256"),
    ("i32", 2, 64, 64, 0, 0.5, 1024, "DropOut: element type int32_t is not supported"),
    ("f32", 2, 8, 32, 4, 0.5, 1024, "DropOut: with padded mask rows the valid values of a row (1)"),
])
def test_dropout_misuse(run, T, m, k, mk, mode, keep, scratch, msg):
    sim = ActSim(32768, seed=1)
    lay = Layout(sim)
    lay.add("dst", T, max(32, m * k * SIZE[T]), 0, 0)
    lay.add("src", T, max(32, m * k * SIZE[T]), -1, 1)
    lay.add("mask", "u8", max(32, m * mk), 0, 1)
    lay.add("scratch", "u8", scratch, 0, 255)
    sim.call("DropOut", T=T, dst="dst", src="src", mask="mask", keep=keep, m=m, k=k, mk=mk, mode=mode,
             scratch="scratch", expect_error=msg)
    run(sim)
