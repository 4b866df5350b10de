"""Duplicate (scalar and tensor forms), CreateVecIndex, Brcb, Gather and Gatherb."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cases import Layout, random_mask
from vecref import SIZE, Sim, lanes_for, scalar_bits

FILL_TYPES = ["i16", "u16", "f16", "bf16", "i32", "u32", "f32"]


def seed(*p):
    return zlib.crc32("/".join(map(str, p)).encode())


DUP_FORMS = {
    "count": dict(form="count", count=1000),
    "count_one": dict(form="count", count=1),
    "bits": dict(form="bits", repeat=3),
    "len_strides": dict(form="len", len=20, repeat=4, dblk=2, drep=20),
    "dst_blk0": dict(form="len", len=64, repeat=2, dblk=0, drep=8),
    "nosetmask": dict(form="len", len=0, repeat=2, setmask=0),
    "counter": dict(form="bits", repeat=1, counter=True),
    "repeat255": dict(form="len", len=128, repeat=255),
}
SCAL = {"i16": -1234, "u16": 54321, "f16": -3.5, "bf16": 1.25, "i32": -99999999, "u32": 4000000000, "f32": 2.5e-3}


@pytest.mark.parametrize("form", list(DUP_FORMS))
@pytest.mark.parametrize("T", FILL_TYPES)
def test_duplicate(run, T, form):
    lanes = lanes_for(SIZE[T])
    kw = dict(DUP_FORMS[form])
    sim = Sim(192 * 1024, seed=seed("dup", T, form))
    lay = Layout(sim)
    lay.add("dst", T, 70000)
    lo, hi = random_mask(sim.rng, lanes)
    if kw["form"] == "bits":
        kw.update(mask0=lo, mask1=hi)
    if kw.get("setmask") == 0:
        sim.set_regs(lo, hi, False)
    if kw.pop("counter", False):
        sim.set_regs(0, 0, True)
        kw.update(mask0=lanes * 2 + 3, mask1=0)
    sim.call("Duplicate", T=T, dst="dst", scalar=scalar_bits(SCAL[T], T), **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "i32"])
def test_duplicate_tensor_form(run, T):
    sim = Sim(8192, seed=seed("dupt", T))
    lay = Layout(sim)
    lay.add("src", T, 64)
    lay.add("dst", T, 2048)
    sim.call("Duplicate", T=T, dst="dst", src="src", form="tensor", count=300)
    run(sim)


IDX_TYPES = ["i16", "f16", "i32", "f32"]
FIRST = {"i16": -300, "f16": -20.0, "i32": 2 ** 31 - 100, "f32": 0.5}


@pytest.mark.parametrize("form", ["count", "count_tail", "bits", "len_strides"])
@pytest.mark.parametrize("T", IDX_TYPES)
def test_create_vec_index(run, T, form):
    lanes = lanes_for(SIZE[T])
    sim = Sim(32768, seed=seed("cvi", T, form))
    lay = Layout(sim)
    lay.add("dst", T, 16384)
    lo, hi = random_mask(sim.rng, lanes)
    kw = {"count": dict(form="count", count=lanes * 4), "count_tail": dict(form="count", count=lanes * 2 + 11),
          "bits": dict(form="bits", mask0=lo, mask1=hi, repeat=3),
          "len_strides": dict(form="len", len=lanes - 3, repeat=3, dblk=2, drep=17)}[form]
    sim.call("CreateVecIndex", T=T, dst="dst", scalar=scalar_bits(FIRST[T], T), **kw)
    run(sim)


@pytest.mark.parametrize("repeat,dblk,drep", [(1, 1, 8), (5, 1, 8), (3, 2, 16), (4, 0, 8), (3, 1, 0), (255, 1, 8)])
@pytest.mark.parametrize("T", FILL_TYPES)
def test_brcb(run, T, repeat, dblk, drep):
    sim = Sim(192 * 1024, seed=seed("brcb", T, repeat, dblk, drep))
    lay = Layout(sim)
    lay.add("src", T, 8 * 255 * 4 + 64)
    lay.add("dst", T, 255 * 256 + 64 if repeat == 255 else 8192)
    sim.call("Brcb", T=T, dst="dst", src="src", repeat=repeat, dblk=dblk, drep=drep)
    run(sim)


def test_brcb_overlap_refused(run):
    sim = Sim(8192, seed=1)
    sim.tensor("buf", "f16", 0, 2048)
    sim.call("Brcb", T="f16", dst="buf", src="buf", repeat=2, dblk=1, drep=8,
             expect_error="Brcb: src and dst overlap")
    run(sim)


def gather_offsets(sim, n, nsrc, size, base):
    return (sim.rng.integers(0, nsrc - base // size, n) * size).astype(np.uint32)


@pytest.mark.parametrize("form", ["count", "count_tail", "bits", "len_drep"])
@pytest.mark.parametrize("T", FILL_TYPES)
def test_gather(run, T, form):
    lanes = lanes_for(SIZE[T])
    sim = Sim(65536, seed=seed("gather", T, form))
    lay = Layout(sim)
    nsrc = 2048 // SIZE[T]
    base = 64
    lay.add("src", T, 2048)
    lay.add("offset", "u32", 4 * lanes * 5, data=gather_offsets(sim, lanes * 5, nsrc, SIZE[T], base))
    lay.add("dst", T, 16384)
    lo, hi = random_mask(sim.rng, lanes)
    kw = {"count": dict(form="count", count=lanes * 3), "count_tail": dict(form="count", count=lanes + 9),
          "bits": dict(form="bits", mask0=lo, mask1=hi, repeat=3, drep=8),
          "len_drep": dict(form="len", len=lanes // 2 + 1, repeat=4, drep=11)}[form]
    sim.call("Gather", T=T, dst="dst", src="src", offset="offset", base=base, **kw)
    run(sim)


def test_gather_misaligned_offset_refused(run):
    sim = Sim(16384, seed=2)
    lay = Layout(sim)
    lay.add("src", "f32", 1024)
    off = np.arange(64, dtype=np.uint32) * 4
    off[10] = 6
    lay.add("offset", "u32", 256, data=off)
    lay.add("dst", "f32", 1024)
    sim.call("Gather", T="f32", dst="dst", src="src", offset="offset", form="count", count=64,
             expect_error="srcOffset[10] = 6 is not a multiple of the element size (4 bytes)")
    run(sim)


def test_gather_in_place_spread(run):
    """dst may be src: a repeat reads all its sources before it writes (spreading 8 values over 64
    lanes in place, as normalisation kernels do with per-row results)."""
    sim = Sim(16384, seed=3)
    lay = Layout(sim)
    lay.add("buf", "f32", 1024)
    lay.add("offset", "u32", 256, data=(np.arange(64, dtype=np.uint32) // 8) * 4)
    sim.call("Gather", T="f32", dst="buf", src="buf", offset="offset", form="count", count=64)
    run(sim)


def test_gather_in_place_within_each_repeat(run):
    """Several repeats in place are fine while each repeat gathers only from the lanes it writes."""
    sim = Sim(16384, seed=4)
    lay = Layout(sim)
    lay.add("buf", "f32", 1024)
    rev = np.concatenate([(r * 64 + 63 - np.arange(64)) for r in range(3)]).astype(np.uint32) * 4
    lay.add("offset", "u32", 4 * 192, data=rev)
    sim.call("Gather", T="f32", dst="buf", src="buf", offset="offset", form="count", count=192)
    run(sim)


def test_gather_in_place_across_repeats_refused(run):
    """A repeat gathering what an earlier repeat of the same call wrote has no settled result."""
    sim = Sim(16384, seed=5)
    lay = Layout(sim)
    lay.add("buf", "f32", 1024)
    lay.add("offset", "u32", 4 * 128, data=(np.arange(128, dtype=np.uint32) // 8) * 4)
    sim.call("Gather", T="f32", dst="buf", src="buf", offset="offset", form="count", count=128,
             expect_error="Gather: repeat 1 gathers element 8 of src, which an earlier repeat of this call wrote")
    run(sim)


@pytest.mark.parametrize("repeat,dblk,drep", [(1, 1, 8), (3, 2, 17), (2, 0, 8)])
@pytest.mark.parametrize("T", ["u16", "u32"])
def test_gatherb(run, T, repeat, dblk, drep):
    sim = Sim(32768, seed=seed("gatherb", T, repeat, dblk, drep))
    lay = Layout(sim)
    lay.add("src", T, 4096)
    lay.add("offset", "u32", 32 * repeat, data=(sim.rng.integers(0, 4096 // 32, 8 * repeat) * 32).astype(np.uint32))
    lay.add("dst", T, 8192)
    sim.call("Gatherb", T=T, dst="dst", src="src", offset="offset", repeat=repeat, dblk=dblk, drep=drep)
    run(sim)


def test_gatherb_refused(run):
    sim = Sim(16384, seed=3)
    lay = Layout(sim)
    lay.add("src", "u16", 1024)
    lay.add("offset", "u32", 32, data=np.array([0, 32, 64, 96, 100, 0, 0, 0], np.uint32))
    lay.add("dst", "u16", 1024)
    sim.call("Gatherb", T="u16", dst="dst", src="src", offset="offset", repeat=1,
             expect_error="offset[4] = 100 is not 32-byte aligned")
    run(sim)
    sim2 = Sim(16384, seed=3)
    lay = Layout(sim2)
    lay.add("src", "f16", 1024)
    lay.add("offset", "u32", 32, data=np.zeros(8, np.uint32))
    lay.add("dst", "f16", 1024)
    sim2.call("Gatherb", T="f16", dst="dst", src="src", offset="offset", repeat=1,
              expect_error="element type half is not supported (it takes uint16_t, uint32_t)")
    run(sim2)
