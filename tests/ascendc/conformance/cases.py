"""Shared case builders: operand layouts sized to what a form touches, and the level-0 variants
every element-wise call is run through (bit masks with holes, lane counts shorter and longer
than a repeat, block and repeat strides including 0, repeat 255, in place, masks set outside the
call, counter mode)."""

from __future__ import annotations

import numpy as np
from vecref import SIZE, Sim, random_values


def span(kw: dict, size: int, blk_key: str, rep_key: str, lanes: int) -> int:
    """Bytes an operand needs for a call (generous)."""
    if kw["form"] == "count":
        return max(int(kw.get("count", 0)) * size, 32) + 256
    rep = int(kw.get("repeat", 1))
    if kw.get("counter_total"):
        rep = max(rep, -(-int(kw["counter_total"]) // lanes))
    blk = int(kw.get(blk_key, 1))
    rs = int(kw.get(rep_key, 8))
    return max(rep - 1, 0) * rs * 32 + 7 * max(blk, 1) * 32 + 32 + 256


class Layout:
    """Tensors placed one after another (32-byte aligned) in a Sim's image."""

    def __init__(self, sim: Sim):
        self.sim = sim
        self.at = 0

    def add(self, name: str, dt: str, nbytes: int, lo=-10.0, hi=10.0, data=None):
        nbytes = -(-nbytes // 32) * 32
        elems = nbytes // SIZE[dt]
        if self.at + nbytes > self.sim.size:
            raise ValueError(f"layout: {name} does not fit ({self.at + nbytes} > {self.sim.size})")
        t = self.sim.tensor(name, dt, self.at, elems)
        if data is None:
            data = random_values(self.sim.rng, dt, elems, lo, hi)
        self.sim.put(t, 0, data)
        self.at += nbytes
        return t


def random_mask(rng: np.random.Generator, lanes: int) -> tuple[int, int]:
    """A bit mask with holes (roughly half the lanes on)."""
    lo = int(rng.integers(0, 1 << 63)) | int(rng.integers(0, 2)) << 63
    hi = (int(rng.integers(0, 1 << 63)) | int(rng.integers(0, 2)) << 63) if lanes > 64 else 0
    return lo, hi


# Level-0 variants: (id, kwargs builder(rng, lanes, strides) -> dict). strides: names of the
# block/repeat keys for (dst, srcs...).
def variants(lanes: int, keys) -> list[tuple[str, dict]]:
    dst_blk, dst_rep = keys[0]
    out = []
    rng = np.random.default_rng(lanes)
    lo, hi = random_mask(rng, lanes)
    out.append(("count_full", dict(form="count", count=lanes * 3)))
    out.append(("count_tail", dict(form="count", count=lanes * 2 + 7)))
    out.append(("count_one", dict(form="count", count=1)))
    out.append(("count_zero", dict(form="count", count=0)))
    out.append(("bits_holes", dict(form="bits", mask0=lo, mask1=hi, repeat=3)))
    out.append(("len_short", dict(form="len", len=max(1, lanes // 2 - 3), repeat=2)))
    out.append(("len_over", dict(form="len", len=lanes + 50, repeat=1)))
    st = {k: 2 for k, _ in keys[1:]}
    st.update({r: 19 for _, r in keys[1:]})
    st.update({dst_blk: 1, dst_rep: 10})
    out.append(("strides", dict(form="len", len=lanes, repeat=3, **st)))
    z = {k: 0 for k, _ in keys[1:]}
    z.update({r: 0 for _, r in keys[1:]})
    out.append(("src_stride0", dict(form="bits", mask0=lo, mask1=hi, repeat=4, **z)))
    out.append(("dst_rep0", dict(form="len", len=lanes, repeat=3, **{dst_rep: 0})))
    # three 255-repeat operands do not fit in UB: two-source calls run this one in place
    out.append(("repeat255", dict(form="len", len=lanes, repeat=255, inplace=len(keys) > 2)))
    out.append(("repeat0", dict(form="len", len=lanes, repeat=0)))
    out.append(("inplace", dict(form="bits", mask0=lo, mask1=hi, repeat=2, inplace=True)))
    out.append(("outside_mask", dict(form="len", len=lanes, repeat=2, setmask=0, preset=(lo, hi, False))))
    out.append(("counter_level0", dict(form="bits", mask0=lanes * 2 + 5, mask1=0, repeat=1,
                                       preset=(0, 0, True), counter_total=lanes * 2 + 5)))
    return out


# The variants run together, one job per group (each job's calls see what the previous ones wrote).
GROUPS = {
    "count": ["count_full", "count_tail", "count_one", "count_zero"],
    "level0": ["bits_holes", "len_short", "len_over", "strides", "src_stride0", "dst_rep0", "repeat0", "inplace"],
    "repeat255": ["repeat255"],
    "register": ["outside_mask", "counter_level0"],
}


def group(lanes: int, keys, name: str) -> list[tuple[str, dict]]:
    v = dict(variants(lanes, keys))
    return [(n, v[n]) for n in GROUPS[name]]


def run_group(sim: Sim, items, keys, lanes: int, sizes: dict, make_call) -> None:
    """Lay out every operand big enough for all the group's calls, then make them in order.
    ``sizes``: operand name -> (element type, value range); ``make_call(kw, inplace)``."""
    lay = Layout(sim)
    for (bk, rk), (name, (dt, rng)) in zip(keys, sizes.items()):
        need = max(span(kw, SIZE[dt], bk, rk, lanes) for _, kw in items)
        lay.add(name, dt, need, *rng)
    for i, (_vid, kw) in enumerate(items):
        if "preset" in kw:
            lo, hi, counter = kw["preset"]
            if i == 0:
                sim.set_regs(lo, hi, counter)
            elif counter:
                sim.call("MaskOps", T="f16", op="count")
        make_call({k: v for k, v in kw.items() if k not in ("inplace", "preset", "counter_total")},
                  bool(kw.get("inplace")))
