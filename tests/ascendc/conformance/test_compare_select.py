"""Compare (into UB bits and into the compare-mask register), Compares / CompareScalar,
GetCmpMask / SetCmpMask and Select in its three modes, every form."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cases import Layout, random_mask
from vecref import NP, SIZE, Sim, lanes_for, random_values, scalar_bits

MODES = {"LT": 0, "GT": 1, "EQ": 2, "LE": 3, "GE": 4, "NE": 5}


def seed(*p):
    return zlib.crc32("/".join(map(str, p)).encode())


def pair_inputs(sim, lay, T, nbytes):
    """src0 and src1 with some lanes equal (so EQ / LE / GE see ties)."""
    n = nbytes // SIZE[T]
    a = random_values(sim.rng, T, n, -5, 5)
    b = random_values(sim.rng, T, n, -5, 5)
    same = sim.rng.random(n) < 0.3
    b[same] = a[same]
    lay.add("src0", T, nbytes, data=a)
    lay.add("src1", T, nbytes, data=b)
    return a


CMP_CASES = [(t, u, m) for t in ("f16", "f32") for u in ("u8", "i8") for m in MODES] + [("i32", "u8", "EQ")]
CMP_FORMS = {
    "count_aligned": dict(form="count"),
    "count_tail": dict(form="count", tail=True),
    "bits_ignored_mask": dict(form="bits", mask0=0x0F0F, mask1=0, repeat=3),
    "len_strides": dict(form="len", len=7, repeat=4, s0blk=2, s0rep=17, s1blk=1, s1rep=8, dblk=3, drep=1),
    "repeat0": dict(form="len", len=64, repeat=0),
}


@pytest.mark.parametrize("form", list(CMP_FORMS))
@pytest.mark.parametrize("T,U,mode", CMP_CASES, ids=[f"{t}-{u}-{m}" for t, u, m in CMP_CASES])
def test_compare(run, T, U, mode, form):
    kw = dict(CMP_FORMS[form])
    lanes = lanes_for(SIZE[T])
    sim = Sim(32768, seed=seed(T, U, mode, form))
    lay = Layout(sim)
    pair_inputs(sim, lay, T, 8192)
    lay.add("dst", U, 512)
    if kw["form"] == "count":
        kw["count"] = lanes * 5 + (lanes // 2 if kw.pop("tail", False) else 0)
    sim.call("Compare", T=T, U=U, dst="dst", src0="src0", src1="src1", cmp=MODES[mode], **kw)
    run(sim)


@pytest.mark.parametrize("form", ["count", "bits", "len"])
@pytest.mark.parametrize("name", ["Compares", "CompareScalar"])
@pytest.mark.parametrize("T,mode", [("f16", "LT"), ("f16", "GE"), ("f32", "NE"), ("f32", "LE"), ("f32", "EQ"),
                                     ("i32", "EQ"), ("f16", "GT")])
def test_compares(run, name, T, mode, form):
    lanes = lanes_for(SIZE[T])
    sim = Sim(32768, seed=seed(name, T, mode, form))
    lay = Layout(sim)
    a = random_values(sim.rng, T, 4096 // SIZE[T], -5, 5)
    a[::3] = a[1]  # ties with the scalar
    lay.add("src0", T, 4096, data=a)
    lay.add("dst", "u8", 256)
    kw = {"count": dict(form="count", count=lanes * 3 + 3),
          "bits": dict(form="bits", mask0=5, mask1=0, repeat=2, sblk=1, srep=8),
          "len": dict(form="len", len=lanes, repeat=3, sblk=2, srep=16)}[form]
    sim.call(name, T=T, U="u8", dst="dst", src0="src0", scalar=scalar_bits(a[1], T), cmp=MODES[mode], **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("form,setmask", [("reg_bits", 1), ("reg_len", 1), ("reg_len", 0)])
@pytest.mark.parametrize("mode", ["LT", "EQ", "GE"])
def test_compare_into_register(run, T, form, setmask, mode):
    """One repeat into the 128-bit compare mask (lanes outside the mask give 0), read back with GetCmpMask."""
    sim = Sim(16384, seed=seed(T, form, setmask, mode))
    lay = Layout(sim)
    pair_inputs(sim, lay, T, 1024)
    lay.add("out", "u8", 256)
    if not setmask:
        sim.set_regs(0xFFFF00000000FFFF, 0x00000000FFFFFFFF, False)
    lo, hi = random_mask(sim.rng, lanes_for(SIZE[T]))
    sim.call("Compare", T=T, U="u8", src0="src0", src1="src1", cmp=MODES[mode], form=form, mask0=lo, mask1=hi,
             len=37, setmask=setmask, s0blk=1, s1blk=2, s0rep=8, s1rep=8)
    sim.call("CmpMask", T="u8", op="get", dst="out")
    run(sim)


def test_set_cmp_mask_round_trip(run):
    sim = Sim(4096, seed=3)
    lay = Layout(sim)
    lay.add("src", "u8", 64)
    lay.add("out", "u8", 64)
    sim.call("CmpMask", T="u8", op="set", src="src")
    sim.call("CmpMask", T="u8", op="get", dst="out")
    run(sim)


@pytest.mark.parametrize("T,U,mode,msg", [
    ("i32", "u8", "LT", "int32_t takes CMPMODE::EQ only"),
    ("f16", "u16", "LT", "the result tensor must be uint8_t or int8_t, not uint16_t"),
    ("i16", "u8", "EQ", "element type int16_t is not supported"),
])
def test_compare_refused(run, T, U, mode, msg):
    sim = Sim(8192, seed=1)
    lay = Layout(sim)
    pair_inputs(sim, lay, T, 1024)
    lay.add("dst", U, 256)
    sim.call("Compare", T=T, U=U, dst="dst", src0="src0", src1="src1", cmp=MODES[mode], form="count",
             count=256 // SIZE[T], expect_error=msg)
    run(sim)


def test_compares_signed_result_refused(run):
    sim = Sim(8192, seed=1)
    lay = Layout(sim)
    lay.add("src0", "f16", 512)
    lay.add("dst", "i8", 256)
    sim.call("Compares", T="f16", U="i8", dst="dst", src0="src0", scalar=scalar_bits(1.0, "f16"), cmp=0,
             form="count", count=128, expect_error="the result tensor must be uint8_t, not int8_t")
    run(sim)


# -- Select ----------------------------------------------------------------------------------------------

SEL_FORMS = {
    "count": dict(form="count", count=None),
    "count_tail": dict(form="count", count="tail"),
    "bits": dict(form="bits", repeat=4),
    "len_strides": dict(form="len", len=None, repeat=3, dblk=2, drep=17, s0blk=1, s0rep=8, s1blk=3, s1rep=24),
    "nosetmask": dict(form="len", len=0, repeat=3, setmask=0),
    "counter": dict(form="bits", repeat=1, counter=True),
}
SEL_CASES = [(t, u, m) for t in ("f16", "f32") for u in ("u8", "u16", "u32", "u64") for m in (0, 1, 2)]


@pytest.mark.parametrize("form", list(SEL_FORMS))
@pytest.mark.parametrize("T,U,mode", SEL_CASES, ids=[f"{t}-{u}-m{m}" for t, u, m in SEL_CASES])
def test_select(run, T, U, mode, form):
    lanes = lanes_for(SIZE[T])
    kw = dict(SEL_FORMS[form])
    sim = Sim(65536, seed=seed(T, U, mode, form))
    lay = Layout(sim)
    for n in ("dst", "src0", "src1"):
        lay.add(n, T, 16384)
    lay.add("sel_mask", U, 1024, data=np.frombuffer(sim.rng.bytes(1024), NP[U]).copy())
    lo, hi = random_mask(sim.rng, lanes)
    if kw["form"] == "count":
        kw["count"] = lanes * 4 + (lanes // 3 if kw["count"] == "tail" else 0)
    if kw["form"] == "bits":
        kw.update(mask0=lo, mask1=hi)
    if kw.get("len", 1) is None:
        kw["len"] = lanes - 5
    if kw.get("setmask") == 0:
        sim.set_regs(lo, hi, False)
    if kw.pop("counter", False):
        sim.set_regs(0, 0, True)
        kw.update(mask0=lanes * 3 + 1, mask1=0)
    args = dict(T=T, U=U, dst="dst", src0="src0", sel="sel_mask".replace("sel_mask", str(mode)), sel_mask="sel_mask")
    args["sel"] = mode
    if mode == 1:
        args["scalar"] = scalar_bits(-7.5, T)
    else:
        args["src1"] = "src1"
    sim.call("Select", **args, **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_select_without_mask_argument(run, T, mode):
    """The forms that take the vector mask register and the compare-mask register (SetCmpMask):
    mode 0 its bits, mode 1 the scalar it holds, mode 2 the select mask's UB address."""
    lanes = lanes_for(SIZE[T])
    sim = Sim(65536, seed=seed("nomask", T, mode))
    lay = Layout(sim)
    for n in ("dst", "src0", "src1"):
        lay.add(n, T, 8192)
    sel = lay.add("sel_mask", "u8", 512, data=np.frombuffer(sim.rng.bytes(512), np.uint8).copy())
    if mode == 0:
        lay.add("reg", "u8", 32, data=np.frombuffer(sim.rng.bytes(32), np.uint8).copy())
    elif mode == 1:
        reg = np.zeros(32, np.uint8)
        reg[:SIZE[T]] = np.array([scalar_bits(3.25, T)], np.uint64).view(np.uint8)[:SIZE[T]]
        lay.add("reg", "u8", 32, data=reg)
    else:
        lay.add("reg", "i64", 32, data=np.array([sel.offset, 0, 0, 0], np.int64))
    lo, hi = random_mask(sim.rng, lanes)
    sim.set_regs(lo, hi, False)
    sim.call("CmpMask", T="u8" if mode < 2 else "i64", op="set", src="reg")
    args = dict(T=T, U="u8", dst="dst", src0="src0", sel=mode, form="nomask", repeat=3, dblk=1, drep=8)
    if mode == 1:
        args.update(sel_mask="sel_mask", scalar=0)
    else:
        args["src1"] = "src1"
    sim.call("Select", **args)
    run(sim)


@pytest.mark.parametrize("case,msg", [
    ("tensor_mode1", "VSEL_TENSOR_SCALAR_MODE takes a scalar src1, not a tensor"),
    ("scalar_mode2", "a scalar src1 needs VSEL_TENSOR_SCALAR_MODE, not VSEL_TENSOR_TENSOR_MODE"),
    ("int_type", "element type int32_t is not supported"),
    ("signed_mask", "the select mask must be uint8_t, uint16_t, uint32_t or uint64_t, not int8_t"),
])
def test_select_refused(run, case, msg):
    T = "i32" if case == "int_type" else "f16"
    U = "i8" if case == "signed_mask" else "u8"
    sim = Sim(16384, seed=1)
    lay = Layout(sim)
    for n in ("dst", "src0", "src1"):
        lay.add(n, T, 1024)
    lay.add("sel_mask", U, 256)
    args = dict(T=T, U=U, dst="dst", src0="src0", sel_mask="sel_mask", form="count", count=64)
    if case == "tensor_mode1":
        args.update(sel=1, src1="src1")
    elif case == "scalar_mode2":
        args.update(sel=2, scalar=0)
    else:
        args.update(sel=2, src1="src1")
    sim.call("Select", expect_error=msg, **args)
    run(sim)
