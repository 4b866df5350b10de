"""Element-wise calls: two-source (Add Sub Mul Div Max Min And Or AddRelu SubRelu), one-source (Exp Ln Abs Sqrt
Rsqrt Reciprocal Relu Not), tensor-scalar (Adds Muls Maxs Mins LeakyRelu), FusedMulAdd and Axpy, in every
element type they take and every form, against the numpy reference."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cases import GROUPS, Layout, group, run_group
from vecref import SIZE, Sim, lanes_for, scalar_bits


def seed_of(*parts) -> int:
    return zlib.crc32("/".join(parts).encode())


BINARY_KEYS = [("dblk", "drep"), ("s0blk", "s0rep"), ("s1blk", "s1rep")]
UNARY_KEYS = [("dblk", "drep"), ("sblk", "srep")]

# input ranges that keep each call away from undefined inputs (log of negatives, division by 0)
RANGES = {
    "Div": {"src1": (0.5, 4.0)},
    "Ln": {"src": (0.05, 20.0)},
    "Log": {"src": (0.05, 20.0)},
    "Sqrt": {"src": (0.0, 50.0)},
    "Rsqrt": {"src": (0.05, 50.0)},
    "Reciprocal": {"src": (0.1, 20.0)},
    "Exp": {"src": (-6.0, 6.0)},
}


def int_range(dt, op):
    if dt == "i16" and op in ("Add", "Sub", "Mul", "Adds", "Muls", "AddRelu", "SubRelu"):
        return (-32768, 32767)  # wrap-around exercised
    if dt in ("i32",) and op in ("Add", "Sub", "Mul", "Adds", "Muls"):
        return (-(2 ** 31), 2 ** 31 - 1)
    if dt in ("u16",):
        return (0, 65535)
    return (-1000, 1000)


def operand_range(op, dt, name):
    if dt[0] in "iu":
        return int_range(dt, op)
    return RANGES.get(op, {}).get(name, (-10.0, 10.0))


CALLS_BINARY = [(op, t) for op, (_, ts) in Sim.BINARY.items() for t in ts]
CALLS_UNARY = [(op, t) for op, (_, ts) in Sim.UNARY.items() for t in ts]
CALLS_SCALAR = [(op, t) for op, (_, ts) in Sim.SCALAR.items() for t in ts]
SCALARS = {"f16": 1.5, "bf16": -2.25, "f32": 0.3125, "i16": -7, "i32": 123457}


@pytest.mark.parametrize("grp", list(GROUPS))
@pytest.mark.parametrize("op,T", CALLS_BINARY, ids=[f"{o}-{t}" for o, t in CALLS_BINARY])
def test_binary(run, op, T, grp):
    lanes = lanes_for(SIZE[T])
    sim = Sim(192 * 1024, seed=seed_of(op, T, grp))
    sizes = {n: (T, operand_range(op, T, n)) for n in ("dst", "src0", "src1")}
    run_group(sim, group(lanes, BINARY_KEYS, grp), BINARY_KEYS, lanes, sizes,
              lambda kw, inplace: sim.call(op, T=T, dst="src0" if inplace else "dst", src0="src0", src1="src1", **kw))
    run(sim)


@pytest.mark.parametrize("grp", list(GROUPS))
@pytest.mark.parametrize("op,T", CALLS_UNARY, ids=[f"{o}-{t}" for o, t in CALLS_UNARY])
def test_unary(run, op, T, grp):
    lanes = lanes_for(SIZE[T])
    sim = Sim(192 * 1024, seed=seed_of(op, T, grp))
    sizes = {n: (T, operand_range(op, T, n)) for n in ("dst", "src")}
    run_group(sim, group(lanes, UNARY_KEYS, grp), UNARY_KEYS, lanes, sizes,
              lambda kw, inplace: sim.call(op, T=T, dst="src" if inplace else "dst", src="src", **kw))
    run(sim)


@pytest.mark.parametrize("grp", list(GROUPS))
@pytest.mark.parametrize("op,T", CALLS_SCALAR, ids=[f"{o}-{t}" for o, t in CALLS_SCALAR])
def test_scalar(run, op, T, grp):
    lanes = lanes_for(SIZE[T])
    sim = Sim(192 * 1024, seed=seed_of(op, T, grp))
    sizes = {n: (T, operand_range(op, T, n)) for n in ("dst", "src")}
    sc = scalar_bits(SCALARS[T], T)
    run_group(sim, group(lanes, UNARY_KEYS, grp), UNARY_KEYS, lanes, sizes,
              lambda kw, inplace: sim.call(op, T=T, dst="src" if inplace else "dst", src="src", scalar=sc, **kw))
    run(sim)


@pytest.mark.parametrize("op", list(Sim.SCALAR))
@pytest.mark.parametrize("setmask", [1, 0])
def test_scalar_second_signature_and_count_without_mask(run, op, setmask):
    """The <T, U, isSetMask> signature; a count call with isSetMask=false runs the register's mask."""
    T = "f16"
    sim = Sim(8192, seed=5)
    lay = Layout(sim)
    lay.add("dst", T, 1024)
    lay.add("src", T, 1024)
    if not setmask:
        sim.set_regs(0x00FF00FF00FF00FF, 0xF0F0, False)
    sim.call(op, T=T, dst="dst", src="src", scalar=scalar_bits(0.75, T), form="count", count=200,
             setmask=setmask, uform=1)
    run(sim)


@pytest.mark.parametrize("counter", [False, True])
def test_count_without_mask_counter_mode(run, counter):
    """isSetMask=false count form: counter mode runs the register's element count."""
    sim = Sim(16384, seed=9)
    lay = Layout(sim)
    lay.add("dst", "f32", 4096)
    lay.add("src", "f32", 4096)
    sim.set_regs(150 if counter else 0xFFFF0000FFFF0000, 0, counter)
    sim.call("Adds", T="f32", dst="dst", src="src", scalar=scalar_bits(1.0, "f32"), form="count", count=1,
             setmask=0)
    run(sim)


@pytest.mark.parametrize("grp", list(GROUPS))
@pytest.mark.parametrize("T", ["f16", "f32"])
def test_fused_mul_add(run, T, grp):
    """FusedMulAdd: dst = src0 * dst + src1 (dst read and written), every form, in place too."""
    lanes = lanes_for(SIZE[T])
    sim = Sim(192 * 1024, seed=seed_of("FusedMulAdd", T, grp))
    sizes = {n: (T, (-10.0, 10.0)) for n in ("dst", "src0", "src1")}
    run_group(sim, group(lanes, BINARY_KEYS, grp), BINARY_KEYS, lanes, sizes,
              lambda kw, inplace: sim.call("FusedMulAdd", T=T, dst="src0" if inplace else "dst", src0="src0",
                                           src1="src1", **kw))
    run(sim)


AXPY = [("f16", "f16"), ("f32", "f32"), ("f32", "f16")]


@pytest.mark.parametrize("grp", list(GROUPS))
@pytest.mark.parametrize("T,U", AXPY, ids=[f"{t}-{u}" for t, u in AXPY])
def test_axpy(run, T, U, grp):
    lanes = lanes_for(max(SIZE[T], SIZE[U]))
    sim = Sim(192 * 1024, seed=seed_of(T, U, grp))
    items = [(v, kw) for v, kw in group(lanes, UNARY_KEYS, grp) if not (kw.get("inplace") and T != U)]
    sizes = {"dst": (T, (-10.0, 10.0)), "src": (U, (-10.0, 10.0))}
    sc = scalar_bits(-1.25, U)
    run_group(sim, items, UNARY_KEYS, lanes, sizes,
              lambda kw, inplace: sim.call("Axpy", T=T, U=U, dst="src" if inplace else "dst", src="src", scalar=sc,
                                           **kw))
    run(sim)


def test_and_or_32bit_count_as_halves(run):
    """And/Or count forms take 32-bit integers as pairs of 16-bit halves (count counts halves)."""
    sim = Sim(8192, seed=3)
    lay = Layout(sim)
    for n in ("dst", "src0", "src1"):
        lay.add(n, "i32", 1024, -(2 ** 31), 2 ** 31 - 1)
    sim.call("And", T="i32", dst="dst", src0="src0", src1="src1", form="count", count=2 * 100)
    sim.call("Or", T="i32", dst="src0", src0="src0", src1="src1", form="count", count=2 * 37 + 1)
    run(sim)


def test_accumulate_into_dst_with_repeat_stride_0(run):
    """dst == src1 with dstRepStride = src1RepStride = 0: each repeat adds into the same block."""
    sim = Sim(16384, seed=4)
    lay = Layout(sim)
    lay.add("acc", "f32", 256, data=np.zeros(64, np.float32))
    lay.add("x", "f32", 256 * 8)
    sim.call("Add", T="f32", dst="acc", src0="x", src1="acc", form="len", len=64, repeat=8,
             drep=0, s0rep=8, s1rep=0)
    run(sim)


def test_half_rounding_is_nearest_even(run):
    """Half results round once to nearest-even: sums that land exactly between two halves."""
    sim = Sim(4096, seed=0)
    a = np.array([1.0, 1.0, 2048.0, 2048.0, -1.0, 65504.0, 0.0009765625, 3.0] * 16, np.float16)
    b = np.array([2.0 ** -11, 3 * 2.0 ** -11, 1.0, 3.0, -(2.0 ** -11), 16.0, 2.0 ** -24, 2.0 ** -10] * 16, np.float16)
    sim.tensor("a", "f16", 0, 128, a)
    sim.tensor("b", "f16", 256, 128, b)
    sim.tensor("c", "f16", 512, 128)
    sim.call("Add", T="f16", dst="c", src0="a", src1="b", form="count", count=128)
    sim.call("Mul", T="f16", dst="b", src0="a", src1="b", form="count", count=128)
    run(sim)
    got = sim.get(sim.tensors["c"])
    assert got[0] == np.float16(1.0) and got[1] == np.float16(1.001953125) and got[2] == np.float16(2048.0)


# Through a pointer of the documented function type (kernels pass Div or Exp as a template argument
# and call it later): the same results and accesses as the direct calls, count and level-0 forms.
PTR_GROUPS = ["count", "level0"]


def _via_pointer(items):
    return [(v, dict(kw, ptr=1)) for v, kw in items]


@pytest.mark.parametrize("grp", PTR_GROUPS)
@pytest.mark.parametrize("op,T", CALLS_BINARY, ids=[f"{o}-{t}" for o, t in CALLS_BINARY])
def test_binary_through_pointer(run, op, T, grp):
    lanes = lanes_for(SIZE[T])
    sim = Sim(192 * 1024, seed=seed_of(op, T, grp, "ptr"))
    sizes = {n: (T, operand_range(op, T, n)) for n in ("dst", "src0", "src1")}
    run_group(sim, _via_pointer(group(lanes, BINARY_KEYS, grp)), BINARY_KEYS, lanes, sizes,
              lambda kw, inplace: sim.call(op, T=T, dst="src0" if inplace else "dst", src0="src0", src1="src1", **kw))
    run(sim)


@pytest.mark.parametrize("grp", PTR_GROUPS)
@pytest.mark.parametrize("op,T", CALLS_UNARY, ids=[f"{o}-{t}" for o, t in CALLS_UNARY])
def test_unary_through_pointer(run, op, T, grp):
    lanes = lanes_for(SIZE[T])
    sim = Sim(192 * 1024, seed=seed_of(op, T, grp, "ptr"))
    sizes = {n: (T, operand_range(op, T, n)) for n in ("dst", "src")}
    run_group(sim, _via_pointer(group(lanes, UNARY_KEYS, grp)), UNARY_KEYS, lanes, sizes,
              lambda kw, inplace: sim.call(op, T=T, dst="src" if inplace else "dst", src="src", **kw))
    run(sim)


def test_error_through_pointer_names_the_call(run):
    """A count past the end of a tensor, through a pointer: the same one-line error."""
    sim = Sim(16384, seed=2)
    lay = Layout(sim)
    lay.add("dst", "f16", 512)
    lay.add("src0", "f16", 2048)
    lay.add("src1", "f16", 2048)
    sim.call("Div", T="f16", dst="dst", src0="src0", src1="src1", form="count", count=300, ptr=1,
             expect_error="Div: count 300 exceeds dst's 256 elements")
    run(sim)
