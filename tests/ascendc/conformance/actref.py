"""Reference models of the library's activations (Gelu, FasterGelu, Silu, Swish, GeGLU, SwiGLU), Fmod, Xor, the
Taylor Exp, Power, the tmp-buffer Axpy, Arange, DropOut and Select with a bytes-mask shape, written from their
API pages: what each computes and which bytes it reads and writes. :class:`ActSim` is a :class:`vecref.Sim`
that knows them.

mpnpu's temporary-buffer model (its own; the pages give only host helpers): a call keeps ``nodes`` float values
per element, at least one 256-byte repeat of the input at a time, so a sharedTmpBuffer needs nodes x 4 x (256 /
sizeof(T)) bytes and the call uses at most nodes x 4 x max(count, 256 / sizeof(T)) of it (traced as written,
then read).
"""

from __future__ import annotations

import numpy as np
from vecref import NP, SIZE, Sim, from_f32, to_f32

NODES = {"Gelu": 1, "FasterGelu": 1, "Silu": 1, "Swish": 1, "GeGLU": 2, "SwiGLU": 2, "Fmod": 2, "Xor": 1,
         "Exp": 1, "Power": 2, "PowerTS": 2, "PowerST": 2, "Axpy": 1, "DropOut": 1}


def lib_tmp(count: int, size: int, nodes: int) -> tuple[int, int]:
    """(minimum, maximum) temporary-buffer bytes for count elements of size bytes."""
    per_repeat = 256 // size
    return nodes * 4 * per_repeat, nodes * 4 * max(count, per_repeat)


def _sigmoid_mul(x: np.ndarray, k: np.ndarray | float) -> np.ndarray:
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-k * x))


def gelu(x: np.ndarray) -> np.ndarray:
    """The tanh approximation: x / (1 + e^(-1.5957691216057308 (x + 0.044715 x^3)))."""
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-1.5957691216057308 * (x + 0.044715 * x ** 3)))


def taylor_exp(x32: np.ndarray, level: int) -> np.ndarray:
    """e^x as e^floor(x) times the series of e^(x - floor(x)) to `level` terms past 1, summed in float32."""
    if level == 0:
        with np.errstate(over="ignore"):
            return np.exp(x32.astype(np.float64))
    xa = np.floor(x32).astype(np.float32)
    f = (x32 - xa).astype(np.float32)
    term = np.ones_like(f)
    total = np.ones_like(f)
    for i in range(1, level + 1):
        term = (term * (f / np.float32(i))).astype(np.float32)
        total = (total + term).astype(np.float32)
    with np.errstate(over="ignore"):
        scale = np.exp(xa.astype(np.float64)).astype(np.float32)
    return scale.astype(np.float64) * total.astype(np.float64)


def int_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """int32 base ^ exponent with wrap-around; a negative exponent gives 1 for 1, +-1 for -1, else 0."""
    out = np.zeros(len(a), np.int64)
    for i, (x, e) in enumerate(zip(a.astype(np.int64), b.astype(np.int64), strict=True)):
        if e < 0:
            out[i] = 1 if x == 1 else ((-1 if e % 2 else 1) if x == -1 else 0)
        else:
            out[i] = pow(int(x), int(e), 1 << 32)
    return (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


class ActSim(Sim):
    def __init__(self, size: int = 65536, seed: int = 0):
        super().__init__(size, seed)

    def _vals(self, name: str, n: int) -> np.ndarray:
        t = self.tensors[name]
        return self.rd(t, np.arange(n) * SIZE[t.dt])

    def _scratch(self, exp, scratch: str | None, n: int, size: int, nodes: int) -> None:
        if scratch is not None:
            used = min(self.tensors[scratch].elems, lib_tmp(n, size, nodes)[1])
            self.acc(exp, "W", self.tensors[scratch], 0, used)
            self.acc(exp, "R", self.tensors[scratch], 0, used)

    def ref_Act(self, exp, T, op, form, dst, src0, src1=None, scratch=None, count=None, beta=None, level=0,
                scalar=None):
        srcs = [src0] if src1 is None else [src0, src1]
        n = self.tensors[src0].elems if form in ("tmp", "whole") else int(count)
        if n == 0:
            return
        sz = SIZE[T]
        for s in srcs:
            self.acc(exp, "R", self.tensors[s], 0, n * sz)
        self._scratch(exp, scratch, n, sz, NODES[op])
        self.acc(exp, "W", self.tensors[dst], 0, n * sz)
        raw = [self._vals(s, n) for s in srcs]
        if op == "Xor":
            self.wr(self.tensors[dst], np.arange(n) * sz, raw[0] ^ raw[1])
            return
        if op in ("PowerTS", "PowerST"):
            s = np.full(n, scalar, np.uint64).astype({2: np.uint16, 4: np.uint32}[sz]).view(NP[T])
            raw = [raw[0], s] if op == "PowerTS" else [s, raw[0]]
        if T == "i32":  # Power on int32, exactly
            self.wr(self.tensors[dst], np.arange(n) * sz, int_power(raw[0], raw[1]))
            return
        x = [to_f32(v, T).astype(np.float64) for v in raw]
        b = float(np.float32(from_f32(np.float32(beta), T))) if op == "Swish" else float(np.float32(beta or 1.0))
        with np.errstate(all="ignore"):
            y = {
                "Gelu": lambda: gelu(x[0]),
                "FasterGelu": lambda: _sigmoid_mul(x[0], 1.702),
                "Silu": lambda: _sigmoid_mul(x[0], 1.0),
                "Swish": lambda: _sigmoid_mul(x[0], b),
                "GeGLU": lambda: x[0] * gelu(x[1]),
                "SwiGLU": lambda: x[0] * _sigmoid_mul(x[1], b),
                "Fmod": lambda: np.fmod(x[0], x[1]),
                "Exp": lambda: taylor_exp(x[0].astype(np.float32), int(level)),
                "Power": lambda: np.power(x[0].astype(np.float32), x[1].astype(np.float32)).astype(np.float64),
                "PowerTS": lambda: np.power(x[0].astype(np.float32), x[1].astype(np.float32)).astype(np.float64),
                "PowerST": lambda: np.power(x[0].astype(np.float32), x[1].astype(np.float32)).astype(np.float64),
            }[op]()
        self.wr(self.tensors[dst], np.arange(n) * sz, from_f32(np.asarray(y).astype(np.float32), T))
        if op != "Fmod":  # Fmod is exact; the others go through exp/pow (libm against numpy: an ulp apart)
            exp.approx.append((dst, 4.8e-7, 0.0, 1))

    def ref_AxpyLib(self, exp, T, U, dst, src, scalar, scratch, count):
        n = int(count)
        if n == 0:
            return
        d, s = self.tensors[dst], self.tensors[src]
        self.acc(exp, "R", s, 0, n * SIZE[U])
        self.acc(exp, "R", d, 0, n * SIZE[T])
        self._scratch(exp, scratch, n, SIZE[U], NODES["Axpy"])
        self.acc(exp, "W", d, 0, n * SIZE[T])
        a = to_f32(from_f32(np.float32(scalar), U), U)
        product = (to_f32(self._vals(src, n), U) * a).astype(np.float32)
        self.wr(d, np.arange(n) * SIZE[T], from_f32(product + to_f32(self._vals(dst, n), T), T))

    def ref_Arange(self, exp, T, dst, first, diff, count):
        n = int(count)
        d = self.tensors[dst]
        self.acc(exp, "W", d, 0, n * SIZE[T])
        i = np.arange(n)
        if T in ("f16", "f32"):
            f = to_f32(from_f32(np.float32(first), T), T)
            s = to_f32(from_f32(np.float32(diff), T), T)
            v = from_f32((f + i.astype(np.float32) * s).astype(np.float32), T)
        else:
            v = ((int(first) + i * int(diff)) & 0xFFFFFFFF).astype(np.uint32).astype(np.int64)
            v = v.astype(np.uint32).view(np.int32).astype(NP[T]) if T != "u32" else v.astype(np.uint32)
        self.wr(d, i * SIZE[T], v)

    def ref_DropOut(self, exp, T, dst, src, mask, keep, m, k, mk, mode=0, scratch=None):
        m, k, mk, mode = int(m), int(k), int(mk), int(mode)
        if mode == 0:  # the page's inference from the shapes
            mode = 2 if mk == k else 1 if mk > k else 3 if mk * 8 == k else 4
        bits, padded = mode >= 3, mode in (1, 4)
        row = -(-k // 8) if bits else k  # a row's valid mask bytes
        n = m * k
        mask_bytes = m * mk if padded else (-(-n // 8) if bits else n)
        mt = self.tensors[mask]
        mv = self.rd(mt, np.arange(mask_bytes), "u8")
        self.acc(exp, "R", mt, 0, mask_bytes)
        sz = SIZE[T]
        self.acc(exp, "R", self.tensors[src], 0, n * sz)
        self._scratch(exp, scratch, n, sz, NODES["DropOut"])
        self.acc(exp, "W", self.tensors[dst], 0, n * sz)
        keep_it = np.zeros((m, k), bool)
        for r in range(m):
            for j in range(k):
                if not bits:
                    keep_it[r, j] = mv[(r * mk if padded else r * k) + j] != 0
                else:
                    bit = r * mk * 8 + j if padded else r * k + j
                    keep_it[r, j] = (mv[bit // 8] >> (bit % 8)) & 1
        x = to_f32(self._vals(src, n), T)
        scale = np.float32(1.0) / np.float32(keep)
        y = np.where(keep_it.reshape(-1), (x * scale).astype(np.float32), np.float32(0))
        self.wr(self.tensors[dst], np.arange(n) * sz, from_f32(y, T))
        if padded and mk != row:  # the valid mask bytes packed to the front
            self.acc(exp, "W", mt, 0, m * row)
            packed = np.concatenate([mv[r * mk:r * mk + row] for r in range(m)])
            self.wr(mt, np.arange(m * row), packed, "u8")

    def ref_SelectLib(self, exp, T, U, dst, src, mask, scratch, scalar, m, k, mk, first=1):
        m, k, mk = int(m), int(k), int(mk)
        n = m * k
        sz, usz = SIZE[T], SIZE[U]
        s, mt = self.tensors[src], self.tensors[mask]
        self.acc(exp, "R", s, 0, n * sz)
        self.acc(exp, "R", mt, 0, m * mk * usz)
        used = min(n * 4, self.tensors[scratch].elems)
        self.acc(exp, "W", self.tensors[scratch], 0, used)
        self.acc(exp, "R", self.tensors[scratch], 0, used)
        self.acc(exp, "W", self.tensors[dst], 0, n * sz)
        mv = self.rd(mt, np.arange(m * mk) * usz).reshape(m, mk)[:, :k].reshape(-1)
        x = self._vals(src, n)
        c = from_f32(np.float32(scalar), T)
        zero = mv == 0
        y = np.where(zero, x, c) if int(first) else np.where(zero, c, x)
        self.wr(self.tensors[dst], np.arange(n) * sz, y.astype(NP[T]))
        if mk != k:
            self.acc(exp, "W", mt, 0, n * usz)
            self.wr(mt, np.arange(n) * usz, mv)

    def ref_ActHost(self, exp, T, op, n, out):
        sz, n = SIZE[T], int(n)
        nodes = {"Select": 0, "Arange": 0}.get(op, NODES.get(op, 1))
        lo, hi = lib_tmp(n * 64 if op == "DropOut" else n, sz, nodes)
        factor = [max(1, nodes * 4 // sz), 0]
        if op in ("Gelu", "Silu", "Swish", "DropOut"):
            factor = [0xFFFFFFFF, 0xFFFFFFFF]
        if op == "Select":
            lo, hi, factor = 0, 4 * n, [0xFFFFFFFF, 0xFFFFFFFF]
        if op == "Arange":
            lo, hi, factor = 0, 0, [0xFFFFFFFF, 0xFFFFFFFF]
        self.put(self.tensors[out], 0, np.array([hi, lo, *factor], np.uint32))
