"""TransDataTo5HD (the LocalTensor-list, address-list, address-tensor and TransDataTo5HDImpl
pointer forms) and Transpose (16 x 16, and the enhanced [N,C,H,W] <-> [N,H,W,C] form), against
numpy transposes of the documented block layouts, with the trace's per-entry byte hulls."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cases import Layout
from vecref import SIZE, Sim

ALL_TYPES = ["i8", "u8", "i16", "u16", "f16", "bf16", "i32", "u32", "f32"]
FORMS = ["tensor", "addr", "impl", "addrtensor"]
API = 1


def seed(*p):
    return zlib.crc32("/".join(map(str, p)).encode())


def csv(xs) -> str:
    return ",".join(str(int(x)) for x in xs)


# (repeat, drep, srep, how the 16 source / destination blocks are placed)
VARIANTS = {
    # one repeat, strides 0: the lists are the blocks (the documented 16-block transpose)
    "single": (1, 0, 0, "dense", "dense"),
    # one repeat with strides: the documented displacement by one stride
    "single_strided": (1, 3, 5, "dense", "dense"),
    # NCHW -> NC1HWC0: sources one HW plane apart, read 1 block a repeat; dst 16 blocks a repeat
    "nchw_5hd": (4, 16, 1, "planes", "dense"),
    # the reverse: sources 16 blocks a repeat, destinations planes apart
    "5hd_nchw": (3, 1, 16, "dense", "planes"),
    # scattered, non-monotonic entries, stride 0 over several repeats (same blocks again)
    "scattered_stride0": (2, 0, 0, "shuffled", "shuffled"),
    # 255 repeats: sources a plane each, the destinations rewritten in place every repeat
    "repeat255": (255, 0, 1, "planes255", "dense"),
}


def place(kind: str, rng) -> list[int]:
    if kind == "dense":
        return [32 * k for k in range(16)]
    if kind == "planes":
        return [32 * 8 * k for k in range(16)]
    if kind == "planes255":
        return [32 * 256 * k for k in range(16)]
    perm = rng.permutation(16)
    return [32 * 3 * int(p) + 32 for p in perm]


def build(T, form, variant, dh=0, sh=0):
    repeat, drep, srep, skind, dkind = VARIANTS[variant]
    big = variant == "repeat255"
    sim = Sim(160 * 1024 if big else 64 * 1024, seed=seed("t5hd", T, form, variant, dh, sh))
    lay = Layout(sim)
    lay.add("src", T, 32 * 256 * 16 + 64 if big else 16384)
    lay.add("dst", T, 16384)
    if form == "addrtensor":
        lay.add("dlist", "u64", 128, data=np.arange(16, dtype=np.uint64) * 7)
        lay.add("slist", "u64", 128, data=np.arange(16, dtype=np.uint64) * 11)
    kw = dict(T=T, dst="dst", src="src", form=form, doff=csv(place(dkind, sim.rng)),
              soff=csv(place(skind, sim.rng)), dh=dh, sh=sh, repeat=repeat, drep=drep, srep=srep)
    if form == "addrtensor":
        kw.update(dlist="dlist", slist="slist")
    return sim, kw


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("T", ALL_TYPES)
def test_trans_data_to_5hd(run, T, variant):
    sim, kw = build(T, "addr", variant)
    sim.call("TransDataTo5HD", **kw)
    run(sim)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("T", ["u8", "f16", "f32"])
@pytest.mark.parametrize("variant", ["single", "nchw_5hd", "scattered_stride0"])
def test_trans_data_to_5hd_forms(run, T, form, variant):
    sim, kw = build(T, form, variant)
    sim.call("TransDataTo5HD", **kw)
    run(sim)


@pytest.mark.parametrize("dh,sh", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("T", ["i8", "u8"])
def test_trans_data_to_5hd_b8_halves(run, T, dh, sh):
    """8-bit: each repeat moves the half of every source block srcHighHalf picks into the half of
    every destination block dstHighHalf picks; the other halves are untouched."""
    for variant in ("single", "nchw_5hd"):
        sim, kw = build(T, "tensor", variant, dh=dh, sh=sh)
        sim.call("TransDataTo5HD", **kw)
        run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
def test_trans_data_to_5hd_half_flags_ignored_for_wider_types(run, T):
    sim, kw = build(T, "addr", "single", dh=1, sh=1)
    sim.call("TransDataTo5HD", **kw)
    run(sim)


def test_trans_data_to_5hd_twice_in_place_round_trip(run):
    """A transpose and its inverse, the second reading what the first wrote (16-bit)."""
    sim, kw = build("f16", "addr", "single")
    sim.call("TransDataTo5HD", **kw)
    kw2 = dict(kw, dst="src", src="dst", doff=kw["soff"], soff=kw["doff"])
    sim.call("TransDataTo5HD", **kw2)
    run(sim)


def test_trans_data_to_5hd_repeat_zero_is_a_nop(run):
    sim, kw = build("f32", "addr", "single")
    kw["repeat"] = 0
    sim.call("TransDataTo5HD", **kw)
    run(sim)


@pytest.mark.parametrize("form", FORMS)
def test_trans_data_to_5hd_unaligned_entry_refused(run, form):
    sim, kw = build("f16", form, "single")
    so = [int(x) for x in kw["soff"].split(",")]
    so[3] += 16
    kw["soff"] = csv(so)
    name = "TransDataTo5HDImpl" if form == "impl" else "TransDataTo5HD"
    sim.call("TransDataTo5HD", **kw, expect_error=f"{name}: srcList[3] must be 32-byte aligned in UB")
    run(sim)


@pytest.mark.parametrize("form", ["addr", "impl"])
def test_trans_data_to_5hd_address_outside_ub_refused(run, form):
    sim, kw = build("f32", form, "single")
    do = [int(x) for x in kw["doff"].split(",")]
    do[5] += 1 << 40
    kw["doff"] = csv(do)
    name = "TransDataTo5HDImpl" if form == "impl" else "TransDataTo5HD"
    sim.call("TransDataTo5HD", **kw, expect_error=f"{name}: dstList[5] (0x")
    run(sim)


def test_trans_data_to_5hd_memcheck_bounds_tensor_entries(run):
    """LocalTensor entries are bounded by their buffer: a repeat stride that runs past it is refused."""
    sim = Sim(16384, seed=3)
    sim.tensor("src", "f16", 0, 256, tight=True)
    sim.tensor("dst", "f16", 4096, 256)
    sim.call("TransDataTo5HD", T="f16", dst="dst", src="src", form="tensor", doff=csv(32 * k for k in range(16)),
             soff=csv(32 * k for k in range(16)), repeat=2, drep=16, srep=16, expect_error="", error_kind=2)
    run(sim)


# -- Transpose ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("T", ["i16", "u16", "f16"])
def test_transpose_16x16(run, T, inplace):
    sim = Sim(8192, seed=seed("tr", T, inplace))
    lay = Layout(sim)
    lay.add("src", T, 512)
    lay.add("dst", T, 512)
    sim.call("Transpose", T=T, dst="src" if inplace else "dst", src="src", form="b16")
    run(sim)


@pytest.mark.parametrize("T", ["f32", "i8", "i32"])
def test_transpose_16x16_type_refused(run, T):
    sim = Sim(8192, seed=1)
    lay = Layout(sim)
    lay.add("src", T, 512)
    lay.add("dst", T, 512)
    sim.call("Transpose", T=T, dst="dst", src="src", form="b16", expect_error="Transpose: element type")
    run(sim)


def ext_sim(T, n, c, h, w, tmp_bytes=65536):
    sim = Sim(128 * 1024, seed=seed("trx", T, n, c, h, w))
    lay = Layout(sim)
    nbytes = max(n * c * h * w * SIZE[T], 32)
    lay.add("src", T, nbytes)
    lay.add("dst", T, nbytes)
    lay.add("tmp", "u8", tmp_bytes)
    return sim


@pytest.mark.parametrize("shape", [(1, 3, 4, 8), (2, 5, 2, 16), (3, 16, 1, 32), (1, 1, 8, 8)])
@pytest.mark.parametrize("ttype", [11, 12])
@pytest.mark.parametrize("T", ["i8", "u16", "f16", "i32", "f32"])
def test_transpose_nchw_nhwc(run, T, ttype, shape):
    n, c, h, w = shape
    sim = ext_sim(T, n, c, h, w)
    sim.call("Transpose", T=T, dst="dst", src="src", tmp="tmp", form="ext", n=n, c=c, h=h, w=w, type=ttype)
    run(sim)


def test_transpose_ext_nd2nd_b16(run):
    sim = ext_sim("u16", 1, 1, 16, 16)
    sim.call("Transpose", T="u16", dst="dst", src="src", tmp="tmp", form="ext", n=0, c=0, h=16, w=16, type=10)
    run(sim)


def test_transpose_ext_zero_size_writes_nothing(run):
    sim = ext_sim("f32", 2, 3, 2, 4)
    sim.call("Transpose", T="f32", dst="dst", src="src", tmp="tmp", form="ext", n=0, c=3, h=2, w=4, type=11)
    run(sim)


@pytest.mark.parametrize("case,kw,msg", [
    ("tmp_small", dict(T="f32", n=1, c=4, h=2, w=4, type=11, tmp_bytes=32),
     "Transpose: sharedTmpBuffer holds 32 bytes, this transpose needs at least 3072"),
    ("tmp_small_rev", dict(T="f16", n=1, c=4, h=4, w=4, type=12, tmp_bytes=2304 - 32),
     "needs at least 4608"),
    ("hw_unaligned", dict(T="f32", n=1, c=2, h=1, w=3, type=11), "hSize * wSize * sizeof(T) = 12 bytes"),
    ("c_range", dict(T="f16", n=1, c=4096, h=1, w=16, type=11), "cSize 4096 is outside [0, 4095]"),
    ("type", dict(T="f16", n=1, c=1, h=16, w=16, type=1), "transposeType 1 is not supported"),
    ("b16_type", dict(T="f16", n=0, c=0, h=16, w=16, type=10), "element type half is not supported"),
])
def test_transpose_ext_misuse(run, case, kw, msg):
    kw = dict(kw)
    T, tmp = kw.pop("T"), kw.pop("tmp_bytes", 65536)
    sim = ext_sim(T, 1, 1, 1, 32 // SIZE[T], tmp)
    sim.call("Transpose", T=T, dst="dst", src="src", tmp="tmp", form="ext", **kw, expect_error=msg)
    run(sim)


def test_transpose_ext_overlap_refused(run):
    sim = ext_sim("f32", 1, 2, 2, 4)
    sim.call("Transpose", T="f32", dst="src", src="src", tmp="tmp", form="ext", n=1, c=2, h=2, w=4, type=11,
             expect_error="Transpose: src and dst overlap")
    run(sim)
