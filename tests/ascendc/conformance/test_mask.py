"""The mask register: SetVectorMask (bits and lane counts, normal and counter), SetMaskCount /
SetMaskNorm / ResetMask, level-0 calls with isSetMask false (MASK_PLACEHOLDER) and true (which
leave their mask in the register), and the count forms (which leave normal mode, all lanes on)."""

from __future__ import annotations

import pytest
from cases import Layout
from vecref import Sim, scalar_bits


def tensors(sim, T="f16", nbytes=8192):
    lay = Layout(sim)
    for n in ("dst", "a", "b"):
        lay.add(n, T, nbytes)


def add(sim, T="f16", **kw):
    sim.call("Add", T=T, dst="dst", src0="a", src1="b", **kw)


def test_set_vector_mask_bits_then_placeholder(run):
    sim = Sim(32768, seed=1)
    tensors(sim)
    sim.call("SetVectorMask", T="f16", form="bits", hi=0x8000000000000001, lo=0x00F0000F0000F00F)
    add(sim, form="bits", mask0=0, mask1=0, repeat=3, setmask=0)  # MASK_PLACEHOLDER: the register's bits
    add(sim, form="len", len=0, repeat=2, setmask=0, dblk=2, s0rep=4)
    run(sim)


@pytest.mark.parametrize("T,n", [("f16", 100), ("f16", 128), ("f16", 300), ("f32", 37), ("f32", 64), ("f32", 70),
                                 ("f16", 0)])
def test_set_vector_mask_len(run, T, n):
    """Normal mode: the first n lanes (more than a repeat holds is a full repeat); 0 is a no-op."""
    sim = Sim(32768, seed=2)
    tensors(sim, T)
    sim.call("SetVectorMask", T=T, form="len", len=n)
    add(sim, T=T, form="len", len=0, repeat=2, setmask=0)
    run(sim)


def test_counter_mode_placeholder(run):
    """Counter mode: the register holds an element count; repeatTime is ignored."""
    sim = Sim(32768, seed=3)
    tensors(sim, "f32")
    sim.call("MaskOps", T="f16", op="count")
    sim.call("SetVectorMask", T="f32", form="len", len=150, mode=1)
    add(sim, T="f32", form="bits", mask0=0, mask1=0, repeat=1, setmask=0)
    sim.call("SetVectorMask", T="f32", form="bits", hi=0xDEAD, lo=70, mode=1)  # counter: high word ignored
    add(sim, T="f32", form="len", len=0, repeat=9, setmask=0, drep=16, s0rep=16)
    sim.call("MaskOps", T="f16", op="norm")
    sim.call("MaskOps", T="f16", op="reset")
    add(sim, T="f32", form="len", len=0, repeat=1, setmask=0)
    run(sim)


def test_counter_mode_set_by_the_call(run):
    """In counter mode a level-0 call with isSetMask=true loads its mask as the count."""
    sim = Sim(32768, seed=4)
    tensors(sim)
    sim.call("MaskOps", T="f16", op="count")
    add(sim, form="len", len=200, repeat=1)
    add(sim, form="bits", mask0=77, mask1=0xFFFF, repeat=1)
    add(sim, form="len", len=0, repeat=1, setmask=0)  # still 77
    run(sim)


def test_level0_mask_stays_in_the_register(run):
    sim = Sim(32768, seed=5)
    tensors(sim)
    add(sim, form="bits", mask0=0xAAAA, mask1=0x5555 << 40, repeat=1)
    add(sim, form="len", len=0, repeat=3, setmask=0)  # the same lanes again
    sim.call("Exp", T="f16", dst="dst", src="a", form="len", len=0, repeat=2, setmask=0)
    run(sim)


def test_count_form_leaves_normal_mode_all_lanes(run):
    """A count call (isSetMask true) ends in normal mode with every lane on, whatever was set before."""
    sim = Sim(32768, seed=6)
    tensors(sim)
    sim.call("MaskOps", T="f16", op="count")
    sim.call("SetVectorMask", T="f16", form="len", len=33, mode=1)
    sim.call("Adds", T="f16", dst="dst", src="a", scalar=scalar_bits(1.0, "f16"), form="count", count=50)
    add(sim, form="len", len=0, repeat=2, setmask=0)  # all 128 lanes, 2 repeats
    run(sim)


def test_mask_zero_is_a_no_op(run):
    sim = Sim(32768, seed=7)
    tensors(sim)
    add(sim, form="bits", mask0=0, mask1=0, repeat=5)
    add(sim, form="len", len=0, repeat=5)
    sim.call("Duplicate", T="f16", dst="dst", scalar=scalar_bits(1.0, "f16"), form="count", count=0)
    run(sim)


def test_32bit_lanes_ignore_the_high_word(run):
    sim = Sim(32768, seed=8)
    tensors(sim, "f32")
    add(sim, T="f32", form="bits", mask0=0x0F, mask1=0xFFFFFFFFFFFFFFFF, repeat=2)
    run(sim)


def test_registers_reset_per_launch_default(run):
    """A fresh core starts in normal mode with every lane on."""
    sim = Sim(32768, seed=9)
    tensors(sim)
    add(sim, form="len", len=0, repeat=1, setmask=0)
    run(sim)
