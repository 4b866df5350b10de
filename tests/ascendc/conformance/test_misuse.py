"""Misuse: each is one line naming the call and the rule, raised before anything is written
(repeatTime over 255, a count past the end of a tensor, a negative count, an element type the
call does not take, an operand not 32-byte aligned, accesses outside a tensor's buffer)."""

from __future__ import annotations

import pytest
from cases import Layout
from vecref import Sim, scalar_bits

API, READ, WRITE = 1, 2, 3


def three(sim, T="f16", nbytes=4096, offset=0):
    lay = Layout(sim)
    lay.at = offset
    for n in ("dst", "a", "b"):
        lay.add(n, T, nbytes)


REPEAT_CALLS = [
    ("Add", dict(T="f16", dst="dst", src0="a", src1="b", form="len", len=128)),
    ("Exp", dict(T="f32", dst="dst", src="a", form="bits", mask0=1, mask1=0)),
    ("Adds", dict(T="i16", dst="dst", src="a", scalar=1, form="len", len=5)),
    ("Duplicate", dict(T="f16", dst="dst", scalar=0, form="len", len=5)),
    ("Cast", dict(T="f32", U="f16", dst="dst", src="a", round=0, form="len", len=64)),
    ("Select", dict(T="f16", U="u8", dst="dst", src0="a", src1="b", sel_mask="b", sel=2, form="len", len=64)),
    ("Compare", dict(T="f16", U="u8", dst="dst", src0="a", src1="b", cmp=0, form="len", len=64)),
    ("Brcb", dict(T="f16", dst="dst", src="a")),
    ("Gather", dict(T="f16", dst="dst", src="a", offset="b", form="len", len=8)),
]


@pytest.mark.parametrize("repeat", [256, 1000, -1])
@pytest.mark.parametrize("name,kw", REPEAT_CALLS, ids=[c for c, _ in REPEAT_CALLS])
def test_repeat_over_255(run, name, kw, repeat):
    sim = Sim(16384, seed=1)
    three(sim, kw["T"] if kw["T"] != "f32" or name != "Cast" else "f32")
    sim.call(name, repeat=repeat, **kw, expect_error=f"{name}: repeatTime {repeat} is outside [0, 255]")
    run(sim)


@pytest.mark.parametrize("which", ["dst", "src0", "src1"])
def test_count_past_tensor(run, which):
    sim = Sim(16384, seed=2)
    lay = Layout(sim)
    sizes = {"dst": 2048, "src0": 2048, "src1": 2048}
    sizes[which] = 512  # 256 halves
    for n, b in sizes.items():
        lay.add(n, "f16", b)
    sim.call("Mul", T="f16", dst="dst", src0="src0", src1="src1", form="count", count=300,
             expect_error=f"Mul: count 300 exceeds {which}'s 256 elements")
    run(sim)


@pytest.mark.parametrize("name,kw,msg", [
    ("Cast", dict(T="f32", U="f16", dst="dst", src="a", round=0), "Cast: count 2000 exceeds dst's 1024 elements"),
    ("Duplicate", dict(T="i32", dst="dst", scalar=1), "Duplicate: count 2000 exceeds dst's 1024 elements"),
    ("Exp", dict(T="f32", dst="dst", src="a"), "Exp: count 2000 exceeds dst's 1024 elements"),
    ("Compare", dict(T="f32", U="u8", dst="dst", src0="a", src1="b", cmp=1), "Compare: count 2000 exceeds src0's 1024"),
    ("Gather", dict(T="f32", dst="dst", src="a", offset="b"), "Gather: count 2000 exceeds dst's 1024 elements"),
])
def test_count_past_tensor_other_calls(run, name, kw, msg):
    sim = Sim(32768, seed=3)
    three(sim, kw["T"] if name != "Compare" else "f32")
    sim.call(name, form="count", count=2000, **kw, expect_error=msg)
    run(sim)


def test_negative_count(run):
    sim = Sim(16384, seed=4)
    three(sim)
    sim.call("Adds", T="f16", dst="dst", src="a", scalar=0, form="count", count=-5,
             expect_error="Adds: count -5 is negative")
    run(sim)


@pytest.mark.parametrize("name,T,kw,msg", [
    ("Add", "u8", dict(src0="a", src1="b"), "Add: element type uint8_t is not supported (it takes int16_t, half, "
                                             "bfloat16_t, int32_t, float)"),
    ("Div", "i32", dict(src0="a", src1="b"), "Div: element type int32_t is not supported (it takes half, float)"),
    ("AddRelu", "i32", dict(src0="a", src1="b"), "AddRelu: element type int32_t is not supported (it takes int16_t, "
                                                 "half, float)"),
    ("SubRelu", "bf16", dict(src0="a", src1="b"), "SubRelu: element type bfloat16_t is not supported"),
    ("And", "f16", dict(src0="a", src1="b"), "And: element type half is not supported"),
    ("Exp", "i16", dict(src="a"), "Exp: element type int16_t is not supported (it takes half, float)"),
    ("Relu", "i16", dict(src="a"), "Relu: element type int16_t is not supported (it takes half, int32_t, float)"),
    ("Not", "f32", dict(src="a"), "Not: element type float is not supported"),
    ("Abs", "i32", dict(src="a"), "Abs: element type int32_t is not supported"),
    ("Adds", "u16", dict(src="a", scalar=1), "Adds: element type uint16_t is not supported"),
    ("LeakyRelu", "bf16", dict(src="a", scalar=1), "LeakyRelu: element type bfloat16_t is not supported"),
    ("Duplicate", "i8", dict(scalar=1), "Duplicate: element type int8_t is not supported"),
    ("CreateVecIndex", "u16", dict(scalar=1), "CreateVecIndex: element type uint16_t is not supported"),
])
def test_unsupported_type(run, name, T, kw, msg):
    sim = Sim(16384, seed=5)
    three(sim, T)
    sim.call(name, T=T, dst="dst", form="count", count=16, **kw, expect_error=msg)
    run(sim)


def test_fused_mul_add_integer_refused(run):
    sim = Sim(16384, seed=7)
    lay = Layout(sim)
    for n in ("dst", "src0", "src1"):
        lay.add(n, "i32", 256)
    sim.call("FusedMulAdd", T="i32", dst="dst", src0="src0", src1="src1", form="count", count=64,
             expect_error="FusedMulAdd: element type int32_t is not supported (it takes half, float)")
    run(sim)


def test_fused_mul_add_count_past_the_tensor(run):
    sim = Sim(16384, seed=8)
    lay = Layout(sim)
    lay.add("dst", "f32", 256)  # (bytes: 64 floats)
    lay.add("src0", "f32", 1024)
    lay.add("src1", "f32", 1024)
    sim.call("FusedMulAdd", T="f32", dst="dst", src0="src0", src1="src1", form="count", count=128,
             expect_error="FusedMulAdd: count 128 exceeds dst's 64 elements")
    run(sim)


def test_axpy_pair_refused(run):
    sim = Sim(16384, seed=6)
    lay = Layout(sim)
    lay.add("dst", "f16", 1024)
    lay.add("src", "f32", 1024)
    sim.call("Axpy", T="f16", U="f32", dst="dst", src="src", scalar=scalar_bits(1.0, "f32"), form="count", count=8,
             expect_error="Axpy: dst half with src float is not supported")
    run(sim)


@pytest.mark.parametrize("which", ["dst", "src0", "src1"])
def test_unaligned_operand(run, which):
    sim = Sim(16384, seed=7)
    offs = {"dst": 0, "src0": 2048, "src1": 4096}
    offs[which] += 16
    for n, o in offs.items():
        sim.tensor(n, "f16", o, 512)
    sim.call("Sub", T="f16", dst="dst", src0="src0", src1="src1", form="count", count=64,
             expect_error=f"Sub: {which} must start 32-byte aligned in UB (it starts at byte {offs[which]})")
    run(sim)


def test_unaligned_other_calls(run):
    sim = Sim(16384, seed=8)
    sim.tensor("dst", "f32", 8, 256)
    sim.tensor("src", "f16", 2048, 256)
    sim.call("Cast", T="f32", U="f16", dst="dst", src="src", round=0, form="count", count=64,
             expect_error="Cast: dst must start 32-byte aligned in UB (it starts at byte 8)")
    run(sim)


def test_reduce_dst_alignment_follows_its_unit(run):
    """ReduceRepeat's dst needs the alignment of one result: 8 bytes for a float [value, index]."""
    sim = Sim(16384, seed=9)
    sim.tensor("src", "f32", 0, 1024)
    sim.tensor("dst", "f32", 4100, 64)
    sim.call("ReduceRepeat", T="f32", dst="dst", src="src", rtype=1, form="len", len=64, repeat=1, drep=1,
             order=0, expect_error="ReduceRepeat: dst must start 8-byte aligned in UB (it starts at byte 4100)")
    run(sim)


@pytest.mark.parametrize("kind,which", [(WRITE, "dst"), (READ, "src0"), (READ, "src1")])
def test_memcheck_outside_buffer(run, kind, which):
    """A level-0 hull that leaves its tensor's buffer is memcheck's illegal read / write."""
    sim = Sim(32768, seed=10)
    lay = Layout(sim)
    for n in ("dst", "src0", "src1"):
        t = lay.add(n, "f32", 1024)
        t.tight = True
    strides = {"dst": "drep", "src0": "s0rep", "src1": "s1rep"}
    sim.call("Add", T="f32", dst="dst", src0="src0", src1="src1", form="len", len=64, repeat=2,
             **{strides[which]: 40}, expect_error="Add", error_kind=kind)
    run(sim)


def test_memcheck_count_form_tight(run):
    sim = Sim(32768, seed=11)
    lay = Layout(sim)
    t = lay.add("dst", "f16", 256)
    t.tight = True
    sim.call("Duplicate", T="f16", dst="dst", scalar=0, form="bits", mask0=1, mask1=1 << 63, repeat=2,
             expect_error="Duplicate", error_kind=WRITE)
    run(sim)
