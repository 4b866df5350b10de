"""Reference models of the vector instructions, written from the documented behaviour.

A :class:`Sim` holds a UB image (bytes) with named tensors laid out in it and the vector registers.
Each :meth:`Sim.call` appends the call to the job the C++ runner will execute and applies the
documented semantics to the expected image, noting the byte hull every operand access should
cover (what memcheck checks and the trace records). Element values are computed with numpy:
half and bfloat16 in float32 and rounded once to nearest-even, integers in int64 and wrapped.

The model of one level-0 instruction (docs: SIMD计算说明 / 高维切分, 掩码):

* repeat r, lane j (``lanes`` = 256 bytes / the widest element), active when bit j of the mask
  is set (normal mode) or when r * lanes + j < count (counter mode);
* an operand with elements of ``s`` bytes keeps lane j in block j // (32 // s), at byte
  j % (32 // s) * s of it; block k of repeat r starts at r * repStride * 32 + k * blkStride * 32;
* inactive lanes are neither read nor written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

# -- element types -------------------------------------------------------------------------------

NP = {
    "f16": np.float16, "f32": np.float32, "bf16": np.uint16,
    "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
    "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
}
SIZE = {k: np.dtype(v).itemsize for k, v in NP.items()}
FLOATS = ("f16", "bf16", "f32")
INTS = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64")

ALL_MASK = (1 << 64) - 1


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 bits, nearest-even (NaN stays NaN)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7F800000) == 0x7F800000
    nan &= (u & 0x7FFFFF) != 0
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    r = np.where(nan, (u >> 16) | 0x40, r)
    return r.astype(np.uint16)


def to_f32(v: np.ndarray, dt: str) -> np.ndarray:
    if dt == "bf16":
        return bf16_to_f32(v)
    return np.asarray(v).astype(np.float32)


def from_f32(x: np.ndarray, dt: str) -> np.ndarray:
    x = np.asarray(x, np.float32)
    if dt == "f16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16)
    if dt == "bf16":
        return f32_to_bf16(x)
    return x


def _wrap16(x):
    """An integer array wrapped to int16's range (as an int16 sum stores); a float array unchanged."""
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.integer):
        return ((x + 32768) % 65536) - 32768
    return x


def compute(dt: str, fn, *args):
    """fn over float32 (floating types) or int64 (integers), rounded/wrapped back to dt."""
    if dt in FLOATS:
        with np.errstate(all="ignore"):
            return from_f32(fn(*[to_f32(a, dt) for a in args]), dt)
    with np.errstate(all="ignore"):
        r = fn(*[np.asarray(a).astype(np.int64) for a in args])
    return np.asarray(r, np.int64).astype(NP[dt])


def scalar_bits(value, dt: str) -> int:
    """The bit pattern the runner reinterprets as the scalar."""
    if dt == "bf16":
        return int(f32_to_bf16(np.float32(value)))
    return int(np.array(value, NP[dt]).view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[SIZE[dt]]))


def scalar_value(value, dt: str):
    """The scalar as the element type holds it (a 0-d array of dt)."""
    if dt == "bf16":
        return f32_to_bf16(np.float32(value))
    return np.array(value, NP[dt])


# -- lanes ---------------------------------------------------------------------------------------------

def first_n(n: int) -> int:
    return (1 << min(n, 128)) - 1


def lanes_for(size: int) -> int:
    return 256 // size


@dataclass
class Regs:
    lo: int = ALL_MASK
    hi: int = ALL_MASK
    counter: bool = False
    acc: int = 0  # the accumulator register (ReduceSum's result, GetAccVal): its bits
    cmp: tuple = (0, 0)


def bit_lanes(bits: int, lanes: int) -> np.ndarray:
    return np.array([j for j in range(lanes) if (bits >> j) & 1], np.int64)


def plan_normal(bits: int, repeats: int, lanes: int):
    act = bit_lanes(bits, lanes)
    return [(r, act) for r in range(repeats)] if len(act) else []


def plan_counter(total: int, lanes: int):
    out = []
    for r in range((total + lanes - 1) // lanes):
        n = min(lanes, total - r * lanes)
        out.append((r, np.arange(n, dtype=np.int64)))
    return out


def lane_offsets(lanes: np.ndarray, size: int, blk: int) -> np.ndarray:
    per = 32 // size
    return (lanes // per) * blk + (lanes % per) * size


# -- the image ----------------------------------------------------------------------------------------

@dataclass
class T:
    name: str
    dt: str
    offset: int
    elems: int
    tight: bool = False


class CallError(Exception):
    pass


@dataclass
class Expect:
    """What one call should do: its accesses (kind, tensor, byte lo, byte hi), or an error."""

    accesses: list = field(default_factory=list)
    error: str | None = None
    error_kind: int = 1  # MPNPU_FAULT_API
    approx: list = field(default_factory=list)  # (tensor, rtol, atol, ulps) compared with tolerance
    spr: list = field(default_factory=list)  # (kind, pipe) accesses of the special registers (memory SPR)


class Sim:
    def __init__(self, size: int = 65536, seed: int = 0):
        self.size = size
        self.img = np.zeros(size, np.uint8)
        self.rng = np.random.default_rng(seed)
        self.tensors: dict[str, T] = {}
        self.regs = Regs()
        self.start_regs: Regs | None = None
        self.lines: list[str] = []
        self.expects: list[Expect] = []
        self.initial: np.ndarray | None = None
        self.stopped = False  # a call before raised: later calls are not run

    # -- layout ---------------------------------------------------------------------------------------

    def tensor(self, name: str, dt: str, offset: int, elems: int, data=None, tight: bool = False) -> T:
        t = T(name, dt, offset, elems, tight)
        self.tensors[name] = t
        if data is not None:
            self.put(t, 0, np.asarray(data))
        return t

    def put(self, t: T, first: int, values: np.ndarray) -> None:
        b = np.ascontiguousarray(np.asarray(values, NP[t.dt])).view(np.uint8)
        at = t.offset + first * SIZE[t.dt]
        self.img[at:at + len(b)] = b

    def get(self, t: T, img: np.ndarray | None = None) -> np.ndarray:
        img = self.img if img is None else img
        return img[t.offset:t.offset + t.elems * SIZE[t.dt]].copy().view(NP[t.dt])

    def fill_random(self, t: T, lo=-10.0, hi=10.0) -> np.ndarray:
        v = random_values(self.rng, t.dt, t.elems, lo, hi)
        self.put(t, 0, v)
        return v

    def set_regs(self, lo: int, hi: int, counter: bool) -> None:
        self.regs = Regs(lo, hi, counter)
        self.start_regs = Regs(lo, hi, counter)

    # -- element access --------------------------------------------------------------------------------

    def rd(self, t: T, byte_addrs: np.ndarray, dt: str | None = None) -> np.ndarray:
        dt = dt or t.dt
        s = SIZE[dt]
        a = t.offset + np.asarray(byte_addrs, np.int64)
        if len(a) == 0:
            return np.zeros(0, NP[dt])
        if a.max() + s > self.size or a.min() < 0:
            raise CallError("reference access outside the image")
        idx = a[:, None] + np.arange(s)
        return self.img[idx].reshape(-1).view(NP[dt]).copy()

    def wr(self, t: T, byte_addrs: np.ndarray, values: np.ndarray, dt: str | None = None) -> None:
        dt = dt or t.dt
        s = SIZE[dt]
        a = t.offset + np.asarray(byte_addrs, np.int64)
        if len(a) == 0:
            return
        b = np.ascontiguousarray(np.asarray(values, NP[dt])).view(np.uint8).reshape(-1, s)
        for k in range(s):  # in order: a later lane writing the same byte wins
            self.img[a + k] = b[:, k]

    # -- jobs -----------------------------------------------------------------------------------------

    def job_text(self) -> str:
        out = [f"image {self.size}"]
        for t in self.tensors.values():
            out.append(f"tensor {t.name} {t.dt} {t.offset} {t.elems}" + (" tight" if t.tight else ""))
        if self.start_regs is not None:
            r = self.start_regs
            out.append(f"regs {r.lo:#x} {r.hi:#x} {int(r.counter)}")
        out.extend(self.lines)
        return "\n".join(out) + "\n"

    def call(self, name: str, expect_error: str | None = None, error_kind: int = 1, **kw) -> Expect:
        """Record a call and apply its reference. ``expect_error``: the runner must raise (a
        substring of the one-line message)."""
        if self.initial is None:
            self.initial = self.img.copy()
        args = " ".join(f"{k}={_fmt(v)}" for k, v in kw.items())
        self.lines.append(f"call {name} {args}")
        exp = Expect()
        if expect_error is not None:
            exp.error = expect_error
            exp.error_kind = error_kind
            self.stopped = True
        elif not self.stopped:
            getattr(self, "ref_" + name)(exp, **kw)
        self.expects.append(exp)
        return exp

    # -- shared shapes ---------------------------------------------------------------------------------

    def level0_plan(self, form: str, lanes: int, kw: dict, setmask: bool | None = None):
        setmask = bool(int(kw.get("setmask", 1))) if setmask is None else setmask
        r = self.regs
        if setmask:
            if form == "bits":
                r.lo = int(kw.get("mask0", 0))
                r.hi = int(kw.get("mask1", 0)) if (lanes > 64 or r.counter) else 0
            else:
                n = int(kw["len"])
                if r.counter:
                    r.lo, r.hi = n, 0
                else:
                    b = first_n(min(n, lanes))
                    r.lo, r.hi = b & ALL_MASK, b >> 64
        if r.counter:
            return plan_counter(r.lo, lanes)
        return plan_normal(r.lo | (r.hi << 64), int(kw["repeat"]), lanes)

    def count_plan(self, count: int, lanes: int, setmask: bool = True):
        r = self.regs
        if setmask:
            plan = plan_counter(count, lanes)
            r.lo, r.hi, r.counter = ALL_MASK, ALL_MASK, False
            return plan
        if r.counter:
            return plan_counter(r.lo, lanes)
        return plan_normal(r.lo | (r.hi << 64), 1, lanes)

    def plan_for(self, kw: dict, lanes: int, has_setmask_count: bool = False):
        form = kw["form"]
        if form == "count":
            set_ = bool(int(kw.get("setmask", 1))) if has_setmask_count else True
            return self.count_plan(int(kw["count"]), lanes, set_), "count"
        return self.level0_plan(form, lanes, kw), form

    @staticmethod
    def geo(kw: dict, blk_key: str, rep_key: str, form: str, lanes: int, size: int):
        if form == "count":
            return 32, lanes * size
        return int(kw.get(blk_key, 1)) * 32, int(kw.get(rep_key, 8)) * 32

    def addrs(self, plan, r_index: int, size: int, g) -> np.ndarray:
        r, lanes = plan[r_index]
        return r * g[1] + lane_offsets(lanes, size, g[0])

    def hull(self, exp: Expect, kind: str, t: T, plan, size: int, g) -> None:
        lo, hi = None, None
        for i in range(len(plan)):
            a = self.addrs(plan, i, size, g)
            if len(a) == 0:
                continue
            lo = a.min() if lo is None else min(lo, a.min())
            hi = a.max() + size if hi is None else max(hi, a.max() + size)
        if lo is not None:
            self.acc(exp, kind, t, int(lo), int(hi))

    @staticmethod
    def acc(exp: Expect, kind: str, t: T, lo: int, hi: int) -> None:
        """An access to bytes [lo, hi) of t (recorded as image offsets)."""
        exp.accesses.append((kind, t.offset + lo, t.offset + hi))

    def elementwise(self, exp: Expect, plan, dst: T, gd, srcs: list, fn, dst_reads: bool = False):
        """srcs: (tensor, geo); fn(*src values) -> dst values, per repeat (reads before writes)."""
        for t, g in srcs:
            self.hull(exp, "R", t, plan, SIZE[t.dt], g)
        if dst_reads:
            self.hull(exp, "R", dst, plan, SIZE[dst.dt], gd)
        self.hull(exp, "W", dst, plan, SIZE[dst.dt], gd)
        for i in range(len(plan)):
            vals = [self.rd(t, self.addrs(plan, i, SIZE[t.dt], g)) for t, g in srcs]
            if dst_reads:
                vals.append(self.rd(dst, self.addrs(plan, i, SIZE[dst.dt], gd)))
            self.wr(dst, self.addrs(plan, i, SIZE[dst.dt], gd), fn(*vals))

    # -- binary / unary / scalar ------------------------------------------------------------------------

    BINARY = {
        "Add": (lambda a, b: a + b, ("i16", "f16", "bf16", "i32", "f32")),
        "Sub": (lambda a, b: a - b, ("i16", "f16", "bf16", "i32", "f32")),
        "Mul": (lambda a, b: a * b, ("i16", "f16", "bf16", "i32", "f32")),
        "Div": (lambda a, b: a / b, ("f16", "f32")),
        "Max": (lambda a, b: np.maximum(a, b), ("i16", "f16", "bf16", "i32", "f32")),
        "Min": (lambda a, b: np.minimum(a, b), ("i16", "f16", "bf16", "i32", "f32")),
        "And": (lambda a, b: a & b, ("i16", "u16")),
        "Or": (lambda a, b: a | b, ("i16", "u16")),
        # the compound calls: the sum (difference) as Add (Sub) makes it (an int16 one wrapped), then max with 0
        "AddRelu": (lambda a, b: np.maximum(_wrap16(a + b), 0), ("i16", "f16", "f32")),
        "SubRelu": (lambda a, b: np.maximum(_wrap16(a - b), 0), ("i16", "f16", "f32")),
    }

    def _binary(self, name, exp, T, dst, src0, src1, **kw):
        fn, _ = self.BINARY[name]
        d, a, b = (self.tensors[x] for x in (dst, src0, src1))
        if kw["form"] == "count" and SIZE[T] == 4 and T in ("i32", "u32") and name in ("And", "Or"):
            T = "u16"  # 32-bit words as 16-bit halves, count counting halves
            d, a, b = (self._as(x, "u16") for x in (d, a, b))
        lanes = lanes_for(SIZE[T])
        plan, form = self.plan_for(kw, lanes)
        gd = self.geo(kw, "dblk", "drep", form, lanes, SIZE[T])
        g0 = self.geo(kw, "s0blk", "s0rep", form, lanes, SIZE[T])
        g1 = self.geo(kw, "s1blk", "s1rep", form, lanes, SIZE[T])
        self.elementwise(exp, plan, d, gd, [(a, g0), (b, g1)], lambda x, y: compute(T, fn, x, y))

    def ref_FusedMulAdd(self, exp, T, dst, src0, src1, **kw):
        """dst = src0 * dst + src1, rounded once: half through float (its product is exact there),
        float through float64 (the product is exact there, then one rounding of the sum to float)."""
        d, a, b = (self.tensors[x] for x in (dst, src0, src1))
        lanes = lanes_for(SIZE[T])
        plan, form = self.plan_for(kw, lanes)
        gd = self.geo(kw, "dblk", "drep", form, lanes, SIZE[T])
        g0 = self.geo(kw, "s0blk", "s0rep", form, lanes, SIZE[T])
        g1 = self.geo(kw, "s1blk", "s1rep", form, lanes, SIZE[T])

        def f(x, y, acc):
            if T == "f32":
                w = np.asarray(x, np.float64) * np.asarray(acc, np.float64) + np.asarray(y, np.float64)
                return w.astype(np.float32)
            return from_f32(to_f32(x, T) * to_f32(acc, T) + to_f32(y, T), T)
        self.elementwise(exp, plan, d, gd, [(a, g0), (b, g1)], f, dst_reads=True)

    def _as(self, t: T, dt: str) -> T:
        return T(t.name, dt, t.offset, t.elems * SIZE[t.dt] // SIZE[dt], t.tight)

    UNARY = {
        "Exp": (np.exp, ("f16", "f32")),
        "Ln": (np.log, ("f16", "f32")),
        "Log": (np.log, ("f16", "f32")),  # the math library's name for Ln
        "Abs": (np.abs, ("f16", "f32")),
        "Sqrt": (np.sqrt, ("f16", "f32")),
        "Rsqrt": (lambda x: np.float32(1) / np.sqrt(x), ("f16", "f32")),
        "Reciprocal": (lambda x: np.float32(1) / x, ("f16", "f32")),
        "Relu": (lambda x: np.where(x > 0, x, np.zeros_like(x)), ("f16", "i32", "f32")),
        "Not": (lambda x: ~x, ("i16", "u16")),
    }

    def _unary(self, name, exp, T, dst, src, **kw):
        fn, _ = self.UNARY[name]
        d, s = self.tensors[dst], self.tensors[src]
        lanes = lanes_for(SIZE[T])
        plan, form = self.plan_for(kw, lanes)
        gd = self.geo(kw, "dblk", "drep", form, lanes, SIZE[T])
        gs = self.geo(kw, "sblk", "srep", form, lanes, SIZE[T])
        self.elementwise(exp, plan, d, gd, [(s, gs)], lambda x: compute(T, fn, x))
        if name in ("Exp", "Ln", "Log"):
            exp.approx.append((dst, 2e-6, 1e-30, 1))

    SCALAR = {
        "Adds": (lambda x, s: x + s, ("i16", "f16", "bf16", "i32", "f32")),
        "Muls": (lambda x, s: x * s, ("i16", "f16", "bf16", "i32", "f32")),
        "Maxs": (lambda x, s: np.maximum(x, s), ("i16", "f16", "bf16", "i32", "f32")),
        "Mins": (lambda x, s: np.minimum(x, s), ("i16", "f16", "bf16", "i32", "f32")),
        "LeakyRelu": (lambda x, s: np.where(x >= 0, x, x * s), ("f16", "f32")),
    }

    def _scalar(self, name, exp, T, dst, src, scalar, **kw):
        fn, _ = self.SCALAR[name]
        d, s = self.tensors[dst], self.tensors[src]
        lanes = lanes_for(SIZE[T])
        plan, form = self.plan_for(kw, lanes, has_setmask_count=True)
        gd = self.geo(kw, "dblk", "drep", form, lanes, SIZE[T])
        gs = self.geo(kw, "sblk", "srep", form, lanes, SIZE[T])
        sv = np.array([int(scalar)], np.uint64).astype({2: np.uint16, 4: np.uint32}[SIZE[T]]).view(NP[T])
        self.elementwise(exp, plan, d, gd, [(s, gs)], lambda x: compute(T, fn, x, np.broadcast_to(sv, x.shape)))

    def ref_Axpy(self, exp, T, U, dst, src, scalar, **kw):
        d, s = self.tensors[dst], self.tensors[src]
        lanes = lanes_for(max(SIZE[T], SIZE[U]))
        plan, form = self.plan_for(kw, lanes)
        gd = self.geo(kw, "dblk", "drep", form, lanes, SIZE[T])
        gs = self.geo(kw, "sblk", "srep", form, lanes, SIZE[U])
        sv = np.float32(to_f32(np.array([int(scalar)], np.uint64).astype(np.uint16 if SIZE[U] == 2 else np.uint32)
                               .view(NP[U]), U)[0])

        def f(x, acc):
            p = (sv * to_f32(x, U)).astype(np.float32)
            return from_f32((p + to_f32(acc, T)).astype(np.float32), T)
        self.elementwise(exp, plan, d, gd, [(s, gs)], f, dst_reads=True)

    # -- masks ----------------------------------------------------------------------------------------

    def ref_SetVectorMask(self, exp, T, form, mode=0, **kw):
        r = self.regs
        if form == "bits":
            r.lo = int(kw["lo"])
            r.hi = 0 if int(mode) else int(kw["hi"])
        else:
            n = int(kw["len"])
            if int(mode):
                r.lo, r.hi = n, 0
            else:
                b = first_n(min(n, lanes_for(max(SIZE[T], 2))))
                r.lo, r.hi = b & ALL_MASK, b >> 64

    def ref_MaskOps(self, exp, T, op):
        if op == "count":
            self.regs.counter = True
        elif op == "norm":
            self.regs.counter = False
        else:
            self.regs.lo = self.regs.hi = ALL_MASK

    # -- Cast -----------------------------------------------------------------------------------------

    def ref_Cast(self, exp, T, U, dst, src, round, **kw):
        d, s = self.tensors[dst], self.tensors[src]
        lanes = lanes_for(max(SIZE[T], SIZE[U]))
        plan, form = self.plan_for(kw, lanes)
        gd = self.geo(kw, "dblk", "drep", form, lanes, SIZE[T])
        gs = self.geo(kw, "sblk", "srep", form, lanes, SIZE[U])
        deq = self.deq_scale
        self.elementwise(exp, plan, d, gd, [(s, gs)], lambda x: cast_values(x, U, T, int(round), deq))

    deq_scale = Fraction(1)

    def ref_SetDeqScale(self, exp, T, scale):
        self.deq_scale = Fraction(float(np.array([int(scale)], np.uint16).view(np.float16)[0]))

    # -- Duplicate / CreateVecIndex / Brcb / Gather -----------------------------------------------------

    def ref_Duplicate(self, exp, T, dst, form, **kw):
        d = self.tensors[dst]
        lanes = lanes_for(SIZE[T])
        if form == "tensor":
            s = self.tensors[kw["src"]]
            v = self.rd(s, np.array([0]))
            if int(kw["count"]) > 0:
                self.acc(exp, "R", s, 0, SIZE[T])
            plan = self.count_plan(int(kw["count"]), lanes)
            gd = (32, lanes * SIZE[T])
        else:
            plan, f = self.plan_for(dict(kw, form=form), lanes)
            gd = self.geo(kw, "dblk", "drep", f, lanes, SIZE[T])
            v = np.array([int(kw["scalar"])], np.uint64).astype(np.uint16 if SIZE[T] == 2 else np.uint32).view(NP[T])
        self.hull(exp, "W", d, plan, SIZE[T], gd)
        for i in range(len(plan)):
            a = self.addrs(plan, i, SIZE[T], gd)
            self.wr(d, a, np.repeat(v, len(a)))

    def ref_CreateVecIndex(self, exp, T, dst, form, scalar, **kw):
        d = self.tensors[dst]
        lanes = lanes_for(SIZE[T])
        plan, f = self.plan_for(dict(kw, form=form), lanes)
        gd = self.geo(kw, "dblk", "drep", f, lanes, SIZE[T])
        first = np.array([int(scalar)], np.uint64).astype(np.uint16 if SIZE[T] == 2 else np.uint32).view(NP[T])
        self.hull(exp, "W", d, plan, SIZE[T], gd)
        for i in range(len(plan)):
            r, ln = plan[i]
            idx = (r * lanes + ln).astype(np.int64)
            filled = compute(T, lambda f0, k: f0 + k, np.broadcast_to(first, idx.shape), idx)
            self.wr(d, self.addrs(plan, i, SIZE[T], gd), filled)

    def ref_Brcb(self, exp, T, dst, src, repeat, dblk=1, drep=8):
        d, s = self.tensors[dst], self.tensors[src]
        R = int(repeat)
        blk = (int(dblk) or 1) * 32
        rep = int(drep) * 32
        if R == 0:
            return
        sz = SIZE[T]
        self.acc(exp, "R", s, 0, R * 8 * sz)
        self.acc(exp, "W", d, 0, (R - 1) * rep + 7 * blk + 32)
        vals = self.rd(s, np.arange(R * 8) * sz)
        for r in range(R):
            for j in range(8):
                a = r * rep + j * blk + np.arange(32 // sz) * sz
                self.wr(d, a, np.repeat(vals[r * 8 + j:r * 8 + j + 1], len(a)))

    def ref_Gather(self, exp, T, dst, src, offset, form, base=0, drep=8, **kw):
        d, s, o = self.tensors[dst], self.tensors[src], self.tensors[offset]
        sz = SIZE[T]
        lanes = lanes_for(sz)
        plan, f = self.plan_for(dict(kw, form=form), lanes)
        rep = lanes * sz if f == "count" else int(drep) * 32
        self.hull(exp, "R", o, plan, 4, (32, lanes * 4))
        src_addrs, dst_addrs = [], []
        for r, ln in plan:
            i = r * lanes + ln
            off = self.rd(o, i * 4).astype(np.int64)
            src_addrs.append(int(base) + off)
            dst_addrs.append(r * rep + ln * sz)
        if src_addrs:
            sa = np.concatenate(src_addrs)
            self.acc(exp, "R", s, int(sa.min()), int(sa.max()) + sz)
        self.hull(exp, "W", d, plan, sz, (32, rep))
        vals = [self.rd(s, a) for a in src_addrs]
        for a, v in zip(dst_addrs, vals):
            self.wr(d, a, v)

    def ref_Gatherb(self, exp, T, dst, src, offset, repeat, dblk=1, drep=8):
        d, s, o = self.tensors[dst], self.tensors[src], self.tensors[offset]
        R = int(repeat)
        if R == 0:
            return
        blk, rep = (int(dblk) or 1) * 32, int(drep) * 32
        offs = self.rd(o, np.arange(R * 8) * 4).astype(np.int64)
        self.acc(exp, "R", o, 0, R * 32)
        self.acc(exp, "R", s, int(offs.min()), int(offs.max()) + 32)
        self.acc(exp, "W", d, 0, (R - 1) * rep + 7 * blk + 32)
        blocks = [self.rd(s, offs[i] + np.arange(32), "u8") for i in range(R * 8)]
        for r in range(R):
            for j in range(8):
                self.wr(d, r * rep + j * blk + np.arange(32), blocks[r * 8 + j], "u8")

    # -- TransDataTo5HD / Transpose ----------------------------------------------------------------------

    def ref_TransDataTo5HD(self, exp, T, dst, src, doff, soff, form, dh=0, sh=0, repeat=1, drep=0, srep=0,
                           dlist=None, slist=None):
        """Each repeat gathers the 16 source blocks into a 16 x 32-byte matrix and transposes it as
        documented: 16-bit elements as a 16 x 16 matrix; 32-bit as 16 x 8 (the 8 x 16 result
        fills the destination blocks two per row); 8-bit the 16 x 16 half selected by srcHighHalf,
        written to the half of each destination block selected by dstHighHalf. A single repeat
        starts one repeat stride in (documented)."""
        d, s = self.tensors[dst], self.tensors[src]
        do = [int(x) for x in str(doff).split(",")]
        so = [int(x) for x in str(soff).split(",")]
        if form == "addrtensor":
            self.acc(exp, "R", self.tensors[dlist], 0, 128)
            self.acc(exp, "R", self.tensors[slist], 0, 128)
        R = int(repeat)
        if R == 0:
            return
        sz = SIZE[T]
        b8 = sz == 1
        sstep, dstep = int(srep) * 32, int(drep) * 32
        s0, d0 = (sstep, dstep) if R == 1 else (0, 0)
        sp = 16 if b8 and int(sh) else 0
        dp = 16 if b8 and int(dh) else 0
        plen = 16 if b8 else 32
        for k in range(16):
            self.acc(exp, "R", s, so[k] + s0 + sp, so[k] + s0 + (R - 1) * sstep + sp + plen)
        for k in range(16):
            self.acc(exp, "W", d, do[k] + d0 + dp, do[k] + d0 + (R - 1) * dstep + dp + plen)
        for r in range(R):
            m = np.stack([self.rd(s, so[k] + s0 + r * sstep + np.arange(32), "u8") for k in range(16)])
            if sz == 2:
                out = m.view(np.uint16).T.copy().view(np.uint8)          # 16 blocks of 32 bytes
            elif sz == 4:
                out = m.view(np.uint32).T.copy().reshape(16, 8).view(np.uint8)
            else:
                out = m[:, sp:sp + 16].T.copy()                           # 16 blocks of 16 bytes
            for k in range(16):
                self.wr(d, do[k] + d0 + r * dstep + dp + np.arange(plen), out[k], "u8")

    def ref_Transpose(self, exp, T, dst, src, form, tmp=None, n=0, c=0, h=0, w=0, type=0):
        d, s = self.tensors[dst], self.tensors[src]
        sz = SIZE[T]
        if form == "b16" or int(type) == 10:
            self.acc(exp, "R", s, 0, 512)
            self.acc(exp, "W", d, 0, 512)
            m = self.rd(s, np.arange(256) * 2, "u16").reshape(16, 16)
            self.wr(d, np.arange(256) * 2, m.T.reshape(-1), "u16")
            return
        N, C, HW = int(n), int(c), int(h) * int(w)
        if N * C * HW == 0:
            return
        nbytes = N * C * HW * sz
        self.acc(exp, "R", s, 0, nbytes)
        self.acc(exp, "W", d, 0, nbytes)
        v = self.rd(s, np.arange(N * C * HW) * sz)
        if int(type) == 11:  # NCHW -> NHWC
            out = v.reshape(N, C, HW).transpose(0, 2, 1)
        else:                # NHWC -> NCHW
            out = v.reshape(N, HW, C).transpose(0, 2, 1)
        self.wr(d, np.arange(N * C * HW) * sz, out.reshape(-1))

    # -- library calls on the vector unit ---------------------------------------------------------------

    def ref_BroadCast(self, exp, T, dst, src, dim, axis, d0, s0, d1=1, s1=1, **kw):
        """numpy's broadcast_to on dense ND tensors: [m, 1] -> [m, k] (axis 1), [1, k] -> [m, k] (axis 0),
        [1] -> [n] (dim 1)."""
        d, s = self.tensors[dst], self.tensors[src]
        sz = SIZE[T]
        dshape = (int(d0),) if int(dim) == 1 else (int(d0), int(d1))
        sshape = (int(s0),) if int(dim) == 1 else (int(s0), int(s1))
        n_src, n_dst = int(np.prod(sshape)), int(np.prod(dshape))
        if n_dst == 0:
            return
        self.acc(exp, "R", s, 0, n_src * sz)
        self.acc(exp, "W", d, 0, n_dst * sz)
        vals = self.rd(s, np.arange(n_src) * sz).reshape(sshape)
        self.wr(d, np.arange(n_dst) * sz, np.broadcast_to(vals, dshape).reshape(-1))

    @staticmethod
    def fixed_pattern(p: int, i: np.ndarray) -> np.ndarray:
        return {1: i % 2 == 0, 2: i % 2 == 1, 3: i % 4 == 0, 4: i % 4 == 1, 5: i % 4 == 2, 6: i % 4 == 3,
                7: np.ones(i.shape, bool)}[int(p)]

    def ref_GatherMask(self, exp, T, dst, src, cnt, repeat, reduce=0, mask=0, blk=1, srep=8, prep=0, fixed=None,
                       pattern=None, pdt=None):
        """Elements whose pattern bit is 1, packed into dst in order; the count into cnt; normal mode after."""
        d, s, c = self.tensors[dst], self.tensors[src], self.tensors[cnt]
        sz = SIZE[T]
        n = int(mask) if int(reduce) else 256 // sz
        R = int(repeat)
        i = np.arange(n)
        g = (int(blk) * 32, int(srep) * 32)
        if pattern is not None:
            pt = self.tensors[pattern]
            words = -(-n // (8 * SIZE[pdt]))
            prow = int(prep) * 32
            if R:
                self.acc(exp, "R", pt, 0, (R - 1) * prow + words * SIZE[pdt])
        kept, lo, hi = [], None, None
        for r in range(R):
            offs = r * g[1] + lane_offsets(i, sz, g[0])
            lo = offs.min() if lo is None else min(lo, offs.min())
            hi = offs.max() + sz if hi is None else max(hi, offs.max() + sz)
            if pattern is not None:
                raw = self.rd(pt, r * prow + np.arange(words * SIZE[pdt]), "u8")
                bits = np.unpackbits(raw, bitorder="little")[:n].astype(bool)
            else:
                bits = self.fixed_pattern(int(fixed), i)
            kept.append(offs[bits])
        if R and n:
            self.acc(exp, "R", s, int(lo), int(hi))
        ko = np.concatenate(kept) if kept else np.zeros(0, np.int64)
        vals = self.rd(s, ko)
        if len(ko):
            self.acc(exp, "W", d, 0, len(ko) * sz)
            self.wr(d, np.arange(len(ko)) * sz, vals)
        self.put(c, 0, np.array([len(ko)], np.uint64))
        self.regs.counter = False

    LIB_UNARY = {
        "Sigmoid": lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)),
        "Sign": lambda x: np.where(x > 0, np.float32(1), np.where(x < 0, np.float32(-1), np.float32(0))),
        "LogLib": np.log,
    }

    def _lib_unary(self, name, exp, T, dst, src, form, count=None, scratch=None):
        d, s = self.tensors[dst], self.tensors[src]
        n = d.elems if form in ("tmp", "whole") else int(count)
        if n == 0:
            return
        sz = SIZE[T]
        self.acc(exp, "R", s, 0, n * sz)
        self.acc(exp, "W", d, 0, n * sz)
        x = self.rd(s, np.arange(n) * sz)
        self.wr(d, np.arange(n) * sz, compute(T, self.LIB_UNARY[name], x))
        if name in ("Sigmoid", "LogLib"):
            exp.approx.append((dst, 2e-6, 1e-30, 1))

    def ref_LogLib(self, exp, **kw):
        self._lib_unary("LogLib", exp, **kw)

    def ref_ScalarCast(self, exp, T, src, dst, round, n, alias=0):
        """Scalars converted one by one (no trace record): the vector Cast's element rule."""
        s, d = self.tensors[src], self.tensors[dst]
        x = self.rd(s, np.arange(int(n)) * 4)
        self.wr(d, np.arange(int(n)) * SIZE[T], cast_values(x, "f32", T, int(round)))

    # The math library's one-source calls: the function in float64 of each element's value, rounded to
    # float32 and then (half) to float16, as mpnpu computes them; mpnpu's temporary-buffer model (4 bytes per
    # element of a piece of at least one 256-byte repeat of the input) decides what a sharedTmpBuffer traces.
    MATH = {
        "Acos": np.arccos, "Asin": np.arcsin, "Atan": np.arctan, "Cos": np.cos, "Sin": np.sin, "Tan": np.tan,
        "Cosh": np.cosh, "Sinh": np.sinh, "Tanh": np.tanh, "Floor": np.floor, "Log2": np.log2, "Log10": np.log10,
        "Erf": np.vectorize(math.erf, otypes=[np.float64]), "Erfc": np.vectorize(math.erfc, otypes=[np.float64]),
        "Acosh": np.arccosh, "Asinh": np.arcsinh, "Atanh": np.arctanh, "Ceil": np.ceil, "Trunc": np.trunc,
        "Frac": lambda x: x - np.trunc(x), "Log": np.log,
        "ClampMin": lambda x: np.maximum(x, 0.5), "ClampMax": lambda x: np.minimum(x, 0.5),
    }

    @staticmethod
    def math_tmp(count: int, dt: str) -> tuple[int, int]:
        """mpnpu's (minimum, maximum) temporary-buffer bytes for count elements of dt."""
        per_repeat = 256 // SIZE[dt]
        return 4 * per_repeat, 4 * max(count, per_repeat)

    def ref_MathLib(self, exp, T, op, dst, src, form, count=None, scratch=None):
        d, s = self.tensors[dst], self.tensors[src]
        n = s.elems if form in ("tmp", "whole") else int(count)
        if n == 0:
            return
        sz = SIZE[T]
        self.acc(exp, "R", s, 0, n * sz)
        if scratch is not None:
            used = min(self.tensors[scratch].elems, self.math_tmp(n, T)[1])
            self.acc(exp, "W", self.tensors[scratch], 0, used)
            self.acc(exp, "R", self.tensors[scratch], 0, used)
        self.acc(exp, "W", d, 0, n * sz)
        x = to_f32(self.rd(s, np.arange(n) * sz), T).astype(np.float64)
        with np.errstate(all="ignore"):
            y = np.asarray(self.MATH[op](x), np.float64).astype(np.float32)
        self.wr(d, np.arange(n) * sz, from_f32(y, T))
        # Floor, Ceil, Trunc, Frac, ClampMin, ClampMax are exact; the others, float: 2 ulps (libm and numpy's
        # float64 functions may differ by one ulp before rounding); half: 1 ulp (a float result one ulp off
        # can round to the neighbouring half)
        if op not in ("Floor", "Ceil", "Trunc", "Frac", "ClampMin", "ClampMax"):
            exp.approx.append((dst, 2.4e-7, 0.0, 1))

    def ref_MathHost(self, exp, T, op, n, out):
        lo, hi = self.math_tmp(int(n), T)
        self.put(self.tensors[out], 0, np.array([hi, lo, 4 // SIZE[T], 0], np.uint32))

    def ref_Sigmoid(self, exp, **kw):
        self._lib_unary("Sigmoid", exp, **kw)

    def ref_Sign(self, exp, **kw):
        self._lib_unary("Sign", exp, **kw)

    # -- Compare / Select -------------------------------------------------------------------------------

    CMP = [np.less, np.greater, np.equal, np.less_equal, np.greater_equal, np.not_equal]

    def _compare_ub(self, exp, T, dst, src0, cmp, form, other, **kw):
        d, a = self.tensors[dst], self.tensors[src0]
        sz = SIZE[T]
        lanes = lanes_for(sz)
        if form == "count":
            R = int(kw["count"]) * sz // 256
            g0 = g1 = (32, 256)
        else:
            R = int(kw["repeat"])
            if "src1" in kw:
                g0 = (int(kw.get("s0blk", 1)) * 32, int(kw.get("s0rep", 8)) * 32)
                g1 = (int(kw.get("s1blk", 1)) * 32, int(kw.get("s1rep", 8)) * 32)
            else:
                g0 = g1 = (int(kw.get("sblk", 1)) * 32, int(kw.get("srep", 8)) * 32)
        plan = plan_normal(first_n(lanes), R, lanes)
        self.hull(exp, "R", a, plan, sz, g0)
        if "src1" in kw:
            self.hull(exp, "R", self.tensors[kw["src1"]], plan, sz, g1)
        if R:
            self.acc(exp, "W", d, 0, R * lanes // 8)
        for i in range(len(plan)):
            x = self.rd(a, self.addrs(plan, i, sz, g0))
            x = to_f32(x, T) if T in FLOATS else x
            y = other(i, plan, g1)
            bits = self.CMP[int(cmp)](x, y)
            self.wr(d, plan[i][0] * (lanes // 8) + np.arange(lanes // 8), np.packbits(bits, bitorder="little"), "u8")

    def ref_Compare(self, exp, T, U, src0, src1, cmp, form, **kw):
        sz = SIZE[T]
        b = self.tensors[src1]

        def other(i, plan, g1):
            v = self.rd(b, self.addrs(plan, i, sz, g1))
            return to_f32(v, T) if T in FLOATS else v
        if form in ("reg_bits", "reg_len"):
            lanes = lanes_for(sz)
            plan = self.level0_plan("bits" if form == "reg_bits" else "len", lanes, dict(kw, repeat=1))
            plan = plan[:1]
            a = self.tensors[src0]
            g0 = (int(kw.get("s0blk", 1)) * 32, int(kw.get("s0rep", 8)) * 32)
            g1 = (int(kw.get("s1blk", 1)) * 32, int(kw.get("s1rep", 8)) * 32)
            reg = 0
            if plan:
                self.hull(exp, "R", a, plan, sz, g0)
                self.hull(exp, "R", b, plan, sz, g1)
                x = to_f32(self.rd(a, self.addrs(plan, 0, sz, g0)), T)
                y = to_f32(self.rd(b, self.addrs(plan, 0, sz, g1)), T)
                for j, hit in zip(plan[0][1], self.CMP[int(cmp)](x, y)):
                    if hit:
                        reg |= 1 << int(j)
            self.regs.cmp = (reg & ALL_MASK, reg >> 64)
            return
        self._compare_ub(exp, T, kw.pop("dst"), src0, cmp, form, other, src1=src1, **kw)

    def _compares(self, exp, T, U, dst, src0, scalar, cmp, form, **kw):
        sv = np.array([int(scalar)], np.uint64).astype(np.uint16 if SIZE[T] == 2 else np.uint32).view(NP[T])
        sv = to_f32(sv, T) if T in FLOATS else sv
        def scalar_operand(i: int, plan: Any, g1: Any) -> Any:
            return np.broadcast_to(sv, (len(plan[i][1]),))

        self._compare_ub(exp, T, dst, src0, cmp, form, scalar_operand, **kw)

    def ref_Compares(self, exp, **kw):
        self._compares(exp, **kw)

    def ref_CompareScalar(self, exp, **kw):
        self._compares(exp, **kw)

    def ref_CmpMask(self, exp, T, op, **kw):
        if op == "get":
            d = self.tensors[kw["dst"]]
            self.acc(exp, "W", d, 0, 16)
            lo, hi = self.regs.cmp
            self.wr(d, np.arange(16), np.array([lo, hi], np.uint64).view(np.uint8), "u8")
        else:
            s = self.tensors[kw["src"]]
            self.acc(exp, "R", s, 0, 16)
            b = self.rd(s, np.arange(16), "u8").view(np.uint64)
            self.regs.cmp = (int(b[0]), int(b[1]))

    def ref_Select(self, exp, T, U, dst, src0, sel, form, **kw):
        d, a = self.tensors[dst], self.tensors[src0]
        sz = SIZE[T]
        lanes = lanes_for(sz)
        mode = int(sel)
        scalar = kw.get("scalar")
        if form == "nomask":
            plan = self.level0_plan("len", lanes, kw, setmask=False)
            if scalar is None and mode == 0:
                lo, hi = self.regs.cmp
                selbits = np.array([lo, hi], np.uint64).view(np.uint8)
                sel_t = None
            elif scalar is None:
                # the register holds the select mask's UB address (the image starts at UB byte 0)
                sel_t = T_("sel@", "u8", int(self.regs.cmp[0]), 0)
                selbits = None
            else:
                sel_t = self.tensors[kw["sel_mask"]]
                selbits = None
                lo = self.regs.cmp[0]
                scalar = int(lo) & ((1 << (8 * sz)) - 1)
        else:
            plan, form = self.plan_for(dict(kw, form=form), lanes)
            sel_t = self.tensors[kw["sel_mask"]]
            selbits = None
        cont = mode != 0
        def g(bk: str, rk: str) -> tuple[int, int]:
            if form == "count":
                return (32, lanes * sz)
            return (int(kw.get(bk, 1)) * 32, int(kw.get(rk, 8)) * 32)

        gd, g0, g1 = g("dblk", "drep"), g("s0blk", "s0rep"), g("s1blk", "s1rep")
        # which select bits each lane reads
        bit_idx = [(r * lanes + ln) if cont else ln for r, ln in plan]
        if sel_t is not None and plan:
            allb = np.concatenate(bit_idx)
            self.acc(exp, "R", sel_t, int(allb.min()) // 8, int(allb.max()) // 8 + 1)
        self.hull(exp, "R", a, plan, sz, g0)
        b = None if scalar is not None else self.tensors[kw["src1"]]
        if b is not None:
            self.hull(exp, "R", b, plan, sz, g1)
        self.hull(exp, "W", d, plan, sz, gd)
        for i, (_r, ln) in enumerate(plan):
            if selbits is not None:
                by = selbits[bit_idx[i] // 8]
            else:
                by = self.rd(sel_t, bit_idx[i] // 8, "u8")
            pick = (by >> (bit_idx[i] % 8)) & 1
            x = self.rd(a, self.addrs(plan, i, sz, g0))
            if b is not None:
                y = self.rd(b, self.addrs(plan, i, sz, g1))
            else:
                bits = np.array([int(scalar)], np.uint64).astype(np.uint16 if sz == 2 else np.uint32)
                y = np.repeat(bits.view(NP[T]), len(ln))
            self.wr(d, self.addrs(plan, i, sz, gd), np.where(pick == 1, x, y))

    # -- reductions ------------------------------------------------------------------------------------

    def _rd_lanes(self, t: T, plan, i, g, dt):
        return self.rd(t, self.addrs(plan, i, SIZE[dt], g))

    def ref_ReduceRepeat(self, exp, T, dst, src, form, repeat, drep, rtype, sblk=1, srep=8, order=0, **kw):
        self._reduce_repeat(exp, T, dst, src, form, repeat, drep, rtype, sblk, srep, order, kw)

    def ref_WholeReduce(self, exp, T, dst, src, form, repeat, drep, rtype, sblk=1, srep=8, order=0, **kw):
        self._reduce_repeat(exp, T, dst, src, form, repeat, drep, rtype, sblk, srep, order, kw)

    def _reduce_repeat(self, exp, T, dst, src, form, repeat, drep, rtype, sblk, srep, order, kw):
        d, s = self.tensors[dst], self.tensors[src]
        sz = SIZE[T]
        lanes = lanes_for(sz)
        plan = self.level0_plan(form, lanes, dict(kw, repeat=repeat))
        rtype, order = int(rtype), int(order)
        g = (int(sblk) * 32, int(srep) * 32)
        unit = sz if (rtype == 0 or order == 2) else (4 if order == 3 else 2 * sz)
        self.hull(exp, "R", s, plan, sz, g)
        outs = [r * int(drep) * unit for r, _ in plan]
        if outs:
            self.acc(exp, "W", d, min(outs), max(outs) + unit)
        results = []
        for i, (_r, ln) in enumerate(plan):
            v = self._rd_lanes(s, plan, i, g, T)
            if rtype == 0:
                full = np.zeros(lanes, NP[T])
                full[ln] = v
                results.append((tree_sum(full, T), 0))
            else:
                f = to_f32(v, T)
                k = int(np.argmax(f) if rtype == 1 else np.argmin(f))
                results.append((v[k], int(ln[k])))
        for (r, _), (val, idx) in zip(plan, results):
            at = np.array([r * int(drep) * unit])
            if rtype == 0 or order == 2:
                self.wr(d, at, np.array([val]))
            elif order == 3:
                self.wr(d, at, np.array([idx], np.uint32), "u32")
            else:
                ib = np.array([idx], np.uint16 if sz == 2 else np.uint32).view(NP[T])
                first, second = (np.array([val]), ib) if order == 0 else (ib, np.array([val]))
                self.wr(d, at, first)
                self.wr(d, at + sz, second)

    def ref_ReduceDataBlock(self, exp, T, dst, src, form, repeat, drep, rtype, sblk=1, srep=8, old=0, **kw):
        d, s = self.tensors[dst], self.tensors[src]
        sz = SIZE[T]
        lanes, per = lanes_for(sz), 32 // sz
        plan = self.level0_plan(form, lanes, dict(kw, repeat=repeat))
        rtype = int(rtype)
        g = (int(sblk) * 32, int(srep) * 32)
        unit = 8 * sz
        self.hull(exp, "R", s, plan, sz, g)
        writes = []
        for i, (r, ln) in enumerate(plan):
            v = self._rd_lanes(s, plan, i, g, T)
            for k in range(8):
                sel = (ln // per) == k
                if not sel.any():
                    continue
                if rtype == 0:
                    full = np.zeros(per, NP[T])
                    full[ln[sel] - k * per] = v[sel]
                    out = tree_sum(full, T)
                else:
                    f = to_f32(v[sel], T)
                    out = v[sel][int(np.argmax(f) if rtype == 1 else np.argmin(f))]
                writes.append((r * int(drep) * unit + k * sz, out))
        if writes:
            self.acc(exp, "W", d, min(a for a, _ in writes), max(a for a, _ in writes) + sz)
        for a, v in writes:
            self.wr(d, np.array([a]), np.array([v]))

    def ref_ReducePairElem(self, exp, T, dst, src, form, repeat, drep, sblk=1, srep=8, old=0, rtype=0, **kw):
        """Result k of repeat r at r * drep * 128 + k * size: lanes 2k and 2k+1 added (a lane outside the
        mask counts as 0, half sums rounded to half); a pair with neither lane active is not written."""
        d, s = self.tensors[dst], self.tensors[src]
        sz = SIZE[T]
        lanes = lanes_for(sz)
        plan = self.level0_plan(form, lanes, dict(kw, repeat=repeat))
        g = (int(sblk) * 32, int(srep) * 32)
        self.hull(exp, "R", s, plan, sz, g)
        writes = []
        for i, (r, ln) in enumerate(plan):
            v = self._rd_lanes(s, plan, i, g, T)
            full = np.zeros(lanes, NP[T])
            full[ln] = v
            for k in sorted(set((ln // 2).tolist())):
                out = compute(T, lambda a, b: a + b, full[2 * k:2 * k + 1], full[2 * k + 1:2 * k + 2])[0]
                writes.append((r * int(drep) * 128 + k * sz, out))
        if writes:
            self.acc(exp, "W", d, min(a for a, _ in writes), max(a for a, _ in writes) + sz)
        for a, v in writes:
            self.wr(d, np.array([a]), np.array([v]))

    def ref_Reduce(self, exp, T, dst, src, tmp, form, rtype, index=0, srep=8, **kw):
        d, s, w = self.tensors[dst], self.tensors[src], self.tensors[tmp]
        sz = SIZE[T]
        lanes = lanes_for(sz)
        rtype, index = int(rtype), bool(int(index))
        if form == "count":
            plan = self.count_plan(int(kw["count"]), lanes, bool(int(kw.get("setmask", 1))) if rtype == 0 else True)
            g = (32, lanes * sz)
            first = max(1, int(kw["count"]) // lanes)
        else:
            plan = self.level0_plan(form, lanes, dict(kw), setmask=True)
            g = (32, int(srep) * 32)
            first = int(kw["repeat"])
        if not plan:
            return
        self.hull(exp, "R", s, plan, sz, g)
        if rtype == 0:
            sums = []
            for i, (_r, ln) in enumerate(plan):
                full = np.zeros(lanes, NP[T])
                full[ln] = self._rd_lanes(s, plan, i, g, T)
                sums.append(tree_sum(full, T))
            if form == "count":
                total = sums[0]
                for x in sums[1:]:
                    total = compute(T, lambda a, b: a + b, np.array([total]), np.array([x]))[0]
            else:
                self.acc(exp, "W", w, 0, len(sums) * sz)
                self.wr(w, np.arange(len(sums)) * sz, np.array(sums, NP[T]))
                level = list(sums)
                while len(level) > 1:
                    nxt = []
                    for i in range(0, len(level), lanes):
                        full = np.zeros(lanes, NP[T])
                        chunk = np.array(level[i:i + lanes], NP[T])
                        full[:len(chunk)] = chunk
                        nxt.append(tree_sum(full, T))
                    level = nxt
                total = level[0]
            self.acc(exp, "W", d, 0, sz)
            self.wr(d, np.array([0]), np.array([total], NP[T]))
            # every ReduceSum form also sets the accumulator register, a PIPE_V write of memory SPR
            self.regs.acc = int(np.array([total], NP[T]).view({2: np.uint16, 4: np.uint32}[sz])[0])
            exp.spr.append(("W", 1))
            return
        best_v, best_i = None, None
        pairs = []
        for i, (r, ln) in enumerate(plan):
            v = self._rd_lanes(s, plan, i, g, T)
            f = to_f32(v, T)
            k = int(np.argmax(f) if rtype == 1 else np.argmin(f))
            pairs.append((v[k], int(ln[k])))
            better = best_v is None or (f[k] > to_f32(np.array([best_v]), T)[0] if rtype == 1
                                        else f[k] < to_f32(np.array([best_v]), T)[0])
            if better:
                best_v, best_i = v[k], r * lanes + int(ln[k])
        n_pairs = min(len(plan), first)
        self.acc(exp, "W", w, 0, n_pairs * 2 * sz)
        def ib(i: int) -> Any:
            return np.array([i], np.uint16 if sz == 2 else np.uint32).view(NP[T])[0]

        flat = []
        for val, idx in pairs[:n_pairs]:
            flat += [val, ib(idx)]
        self.wr(w, np.arange(len(flat)) * sz, np.array(flat, NP[T]))
        self.acc(exp, "W", d, 0, (2 if index else 1) * sz)
        out = [best_v] + ([ib(best_i)] if index else [])
        self.wr(d, np.arange(len(out)) * sz, np.array(out, NP[T]))


T_ = T  # the dataclass, for use where a parameter shadows the name


def _fmt(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v)


for _n in Sim.BINARY:
    setattr(Sim, "ref_" + _n, (lambda n: lambda self, exp, **kw: self._binary(n, exp, **kw))(_n))
for _n in Sim.UNARY:
    setattr(Sim, "ref_" + _n, (lambda n: lambda self, exp, **kw: self._unary(n, exp, **kw))(_n))
for _n in Sim.SCALAR:
    setattr(Sim, "ref_" + _n, (lambda n: lambda self, exp, **kw: self._scalar(n, exp, **kw))(_n))


def tree_sum(v: np.ndarray, dt: str):
    """Adjacent pairs added level by level, each sum rounded to dt (ReduceDataBlock's tree)."""
    v = np.asarray(v, NP[dt])
    while len(v) > 1:
        v = compute(dt, lambda a, b: a + b, v[0::2], v[1::2])
    return v[0]


# -- random inputs ------------------------------------------------------------------------------------

def random_values(rng: np.random.Generator, dt: str, n: int, lo=-10.0, hi=10.0) -> np.ndarray:
    if dt in ("f16", "f32"):
        return rng.uniform(lo, hi, n).astype(NP[dt])
    if dt == "bf16":
        return f32_to_bf16(rng.uniform(lo, hi, n).astype(np.float32))
    info = np.iinfo(NP[dt])
    a, b = max(info.min, int(lo)), min(info.max, int(hi))
    return rng.integers(a, b + 1, n, dtype=np.int64).astype(NP[dt])


# -- Cast reference (exact arithmetic with fractions) ----------------------------------------------------

FMT = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127)}  # p, emin, emax
INT_RANGE = {k: (int(np.iinfo(NP[k]).min), int(np.iinfo(NP[k]).max)) for k in INTS}


def exact(v, dt: str):
    """The element as (Fraction, negative?) or 'inf'/'-inf'/'nan'."""
    if dt in FLOATS:
        f = float(to_f32(np.array([v], NP[dt]), dt)[0])
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return Fraction(f), math.copysign(1.0, f) < 0
    return Fraction(int(v)), int(v) < 0


def round_int(x: Fraction, neg: bool, mode: int) -> int:
    """x rounded to an integer: 0/1 nearest-even, 2 floor, 3 ceil, 4 half away, 5 toward zero."""
    a = abs(x)
    q = a.numerator // a.denominator
    rem = a - q
    if mode in (0, 1):
        up = rem > Fraction(1, 2) or (rem == Fraction(1, 2) and q % 2 == 1)
    elif mode == 2:
        up = neg and rem > 0
    elif mode == 3:
        up = not neg and rem > 0
    elif mode == 4:
        up = rem >= Fraction(1, 2)
    else:
        up = False
    q += int(up)
    return -q if neg else q


def round_float(x: Fraction, neg: bool, mode: int, dt: str) -> float:
    """x rounded to float format dt by mode (6: round to odd), finite overflow saturating."""
    p, emin, emax = FMT[dt]
    a = abs(x)
    if a == 0:
        return -0.0 if neg else 0.0
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    qe = max(e, emin) - (p - 1)
    scaled = a / Fraction(2) ** qe
    q = scaled.numerator // scaled.denominator
    rem = scaled - q
    if mode == 6:
        if rem:
            q |= 1
    else:
        q = abs(round_int(Fraction(q) + rem, neg, mode))
    val = Fraction(q) * Fraction(2) ** qe
    top = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if val > top:
        val = top
    f = float(val)
    return -f if neg else f


def cast_values(x: np.ndarray, src: str, dst: str, mode: int, deq: Fraction = Fraction(1)) -> np.ndarray:
    out = []
    for v in np.asarray(x):
        ex = exact(v, src)
        if dst == "f16" and src == "i32":  # dequantisation by the SetDeqScale scale
            val = ex[0] * deq
            neg = (ex[0] < 0) != (deq < 0) if val == 0 else val < 0  # a float product: 0 * -s is -0
            out.append(round_float(val, neg, 1, "f16"))
            continue
        if isinstance(ex, str):
            if dst in FLOATS:
                out.append(float(ex))
            else:
                lo, hi = INT_RANGE[dst]
                out.append(0 if ex == "nan" else (hi if ex == "inf" else lo))
            continue
        val, neg = ex
        if src == "f32" and dst == "f32" and mode == 0:  # CAST_NONE loses nothing here: the value itself
            out.append(float(v))
        elif dst in FLOATS and src == "f32" and dst == "f32":
            r = round_int(val, neg, mode)
            out.append(-0.0 if (r == 0 and neg) else float(r))
        elif dst in FLOATS:
            out.append(round_float(val, neg, mode, dst))
        else:
            lo, hi = INT_RANGE[dst]
            out.append(min(hi, max(lo, round_int(val, neg, mode))))
    if dst in FLOATS:
        arr = np.array(out, np.float64)
        if dst == "bf16":
            return f32_to_bf16(arr.astype(np.float32))  # exact: every value is a bfloat16
        return arr.astype(NP[dst])
    return np.array(out, np.int64).astype(NP[dst])
