"""The math library's one-source calls (Acos, Asin, Atan, Cos, Sin, Tan, Cosh, Sinh, Tanh, Erf, Erfc, Floor,
Ceil, Trunc, Frac, Acosh, Asinh, Atanh, Log2, Log10) against numpy: every documented form, both element types,
counts with tails, a temporary buffer at, above and below its minimum, in place, misuse; and the host helpers'
sizes."""

from __future__ import annotations

import numpy as np
import pytest
from cases import Layout
from vecref import SIZE, Sim

# Each call's documented forms (tmp_count, tmp, count, whole) plus ptr: the count form through a function
# pointer of the documented type.
ALL = ("tmp_count", "tmp", "count", "whole", "ptr")
FORMS = {op: ALL for op in ("Acos", "Asin", "Atan", "Cos", "Sin", "Tan", "Cosh", "Sinh", "Tanh", "Erf", "Erfc",
                            "Log2", "Acosh", "Asinh", "Atanh", "Trunc", "Frac")}
FORMS["Floor"] = ("tmp_count", "count", "ptr")
FORMS["Ceil"] = ("tmp_count", "count", "ptr")
FORMS["ClampMin"] = FORMS["ClampMax"] = ("tmp_count", "count")  # (the bound: 0.5)
FORMS["Log"] = ("count", "whole")  # (Log<T, false>: the natural logarithm, the vector unit's Ln)
FORMS["Log10"] = ("count", "whole", "ptr")

# Input ranges inside each function's domain (and, for half, mostly inside its range).
RANGE = {"Acos": (-1, 1), "Asin": (-1, 1), "Tan": (-1.5, 1.5), "Cosh": (-9, 9), "Sinh": (-9, 9),
         "Erfc": (-3, 8), "Log2": (1e-3, 1000), "Log10": (1e-3, 1000), "Log": (1e-3, 1000), "Floor": (-300, 300),
         "Ceil": (-300, 300), "Trunc": (-300, 300), "Frac": (-300, 300), "Acosh": (1, 50), "Atanh": (-0.99, 0.99)}

# count: a whole number of repeats, a tail (not a 32-byte block), one element, none; the other forms take the
# whole source (1024 bytes).
COUNTS = {"tmp_count": (129, 37, 1, 0), "count": (200, 37, 0), "ptr": (77,), "tmp": (None,), "whole": (None,)}
CASES = [(op, form, n) for op, forms in FORMS.items() for form in forms for n in COUNTS[form]]


def _layout(op: str, T: str, seed: int, scratch: int = 1024, src_bytes: int = 1024):
    sim = Sim(16384, seed=seed)
    lay = Layout(sim)
    lay.add("dst", T, 1024, -100, 100)
    lo, hi = RANGE.get(op, (-10, 10))
    lay.add("src", T, src_bytes, lo, hi)
    lay.add("scratch", "u8", scratch, 0, 255)
    return sim, lay


def _kw(form: str, count):
    kw: dict = dict(form=form)
    if count is not None:
        kw["count"] = count
    if form.startswith("tmp"):
        kw["scratch"] = "scratch"
    return kw


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("op,form,count", CASES, ids=[f"{o}-{f}-{c}" for o, f, c in CASES])
def test_math_lib(run, op, T, form, count):
    sim, lay = _layout(op, T, seed=len(op) * 7 + len(form) + (count or 0))
    if op in ("Floor", "Ceil", "Trunc", "Frac"):  # integers, halves and values just below an integer among them
        v = sim.get(sim.tensors["src"])
        v[::5] = np.round(v[::5])
        v[1::7] = np.round(v[1::7]) + 0.5
        v[2::9] = np.nextafter(np.round(v[2::9]), np.array(-np.inf, v.dtype))
        sim.put(sim.tensors["src"], 0, v)
    sim.call("MathLib", T=T, op=op, dst="dst", src="src", **_kw(form, count))
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("op", ["Floor", "Log10", "Cos"])
def test_math_lib_in_place(run, op, T):
    """dst is src (public kernels call Floor and Log10 so): each element read before it is written."""
    sim, _ = _layout(op, T, seed=5)
    sim.call("MathLib", T=T, op=op, dst="src", src="src", form="count", count=200)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("extra", [0, 32])
def test_math_lib_tmp_minimum(run, T, extra):
    """A sharedTmpBuffer of exactly the minimum (or a little more) works for any count; the call uses what it
    has, up to its maximum."""
    lo, _ = Sim.math_tmp(0, T)
    sim, _ = _layout("Sin", T, seed=9, scratch=lo + extra)
    sim.call("MathLib", T=T, op="Sin", dst="dst", src="src", form="tmp_count", count=1024 // SIZE[T],
             scratch="scratch")
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("op", [*FORMS, "Sigmoid", "Sign"])
def test_math_host_helpers(run, op, T):
    """GetXxxMaxMinTmpSize and GetXxxTmpBufferFactorSize for short and long shapes; a buffer of the factor
    rule's size holds the piece it promises."""
    for n in (1, 64, 1000):
        sim = Sim(4096, seed=n)
        lay = Layout(sim)
        lay.add("out", "u32", 32, data=np.zeros(8, np.uint32))
        sim.call("MathHost", T=T, op=op, n=n, out="out")
        run(sim)
    lo, hi = Sim.math_tmp(1000, T)
    assert lo == 4 * 256 // SIZE[T] and hi == 4000


def _misuse(T, op, dst, src, msg, form="count", count=8, scratch_bytes=1024, **extra):
    sim, lay = _layout(op, T, seed=2, scratch=scratch_bytes)
    if dst not in sim.tensors:  # a view of src starting one element in
        sim.tensor(dst, T, sim.tensors["src"].offset + 32, 64)
    sim.call("MathLib", T=T, op=op, dst=dst, src=src, **_kw(form, count), **extra, expect_error=msg)
    return sim


@pytest.mark.parametrize("T,op,dst,src,form,count,scratch,msg", [
    ("f32", "Acos", "dst", "src", "count", 300, 1024, "Acos: count 300 exceeds dst's 256 elements"),
    ("f16", "Tanh", "dst", "src", "tmp_count", 600, 1024, "Tanh: count 600 exceeds dst's 512 elements"),
    ("i32", "Cos", "dst", "src", "count", 8, 1024, "Cos: element type int32_t is not supported (it takes half, float)"),
    ("i32", "Floor", "dst", "src", "tmp_count", 8, 1024, "Floor: element type int32_t is not supported"),
    ("f32", "Sin", "dst", "src", "tmp_count", 8, 224,
     "Sin: sharedTmpBuffer has 224 bytes, fewer than the 256 it needs for float (the minimum GetSinMaxMinTmpSize "
     "gives)"),
    ("f16", "Erf", "dst", "src", "tmp", None, 480,
     "Erf: sharedTmpBuffer has 480 bytes, fewer than the 512 it needs for half"),
    ("f16", "Erfc", "dst", "src", "tmp_count", 0, 32, "Erfc: sharedTmpBuffer has 32 bytes"),
    ("f32", "Atan", "shifted", "src", "count", 16, 1024,
     "Atan: dst and src overlap without being the same tensor"),
    ("f32", "Cosh", "dst", "src", "tmp_count", 16, 1024, None),
    ("f32", "Log2", "dst", "src", "tmp_count", 16, 1024, None),
])
def test_math_lib_misuse(run, T, op, dst, src, form, count, scratch, msg):
    if msg is None:  # the temporary buffer overlapping an operand
        sim, lay = _layout(op, T, seed=2)
        s = sim.tensors["src"] if op == "Log2" else sim.tensors["dst"]
        sim.tensor("tmp_on", "u8", s.offset, 1024)
        what = "src" if op == "Log2" else "dst"
        sim.call("MathLib", T=T, op=op, dst="dst", src=src, form=form, count=count, scratch="tmp_on",
                 expect_error=f"{op}: sharedTmpBuffer overlaps {what}")
    else:
        sim = _misuse(T, op, dst, src, msg, form, count, scratch)
    run(sim)
