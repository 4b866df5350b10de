"""References for the normalization calls (runner/ops_norm.cpp): LayerNorm in both forms, Normalize, DeepNorm,
RmsNorm, LayerNormGrad, LayerNormGradBeta, WelfordUpdate, WelfordFinalize, and the host helpers' buffer sizes.

The numbers follow the pages' formulas in float64, each sum taken in order along its row (as mpnpu documents),
rounded once to the output's type. The temporary buffer follows mpnpu's documented row model
(tiling/normalization_tiling.h), written out again here: a call keeps ``bufs`` float intermediates per element of
the rows of a pass; a tiling helper's stack gives the rows a pass takes."""

from __future__ import annotations

import numpy as np
from vecref import SIZE, Sim, from_f32, to_f32

# float intermediates per element, before the half copy (+1 for half data)
BUFS = {"LayerNorm": 2, "LayerNormAR": 2, "Normalize": 1, "LayerNormGrad": 4, "LayerNormGradBeta": 2,
        "DeepNorm": 3, "RmsNorm": 1, "WelfordUpdate": 1, "WelfordFinalize": 2}
F32_TOL = 2.4e-7  # two float ulps


def bufs(call: str, sz: int) -> int:
    return BUFS[call] + (1 if sz == 2 and call != "WelfordFinalize" else 0)


def rows_bytes(call: str, sz: int, rows: int, width: int) -> int:
    b = bufs(call, sz) * rows * width * 4
    if call == "RmsNorm":
        b += -(-rows // 8) * 8 * 4
    return b


def rows_fitting(call: str, sz: int, rows: int, width: int, stack: int) -> int:
    r = 0
    while r < rows and rows_bytes(call, sz, r + 1, width) <= stack:
        r += 1
    return r


def padded(n: int, sz: int) -> int:
    per = 32 // sz
    return -(-n // per) * per


def tmp_minmax(call: str, sz: int, rows: int, width: int) -> tuple[int, int]:
    return rows_bytes(call, sz, rows, width), rows_bytes(call, sz, 1, width)


def row_sum(a: np.ndarray) -> np.ndarray:
    """Sums along the last axis, in order (the model's order)."""
    acc = np.zeros(a.shape[:-1])
    for j in range(a.shape[-1]):
        acc = acc + a[..., j]
    return acc


def f32_bits(v: float) -> int:
    return int(np.array([v], np.float32).view(np.uint32)[0])


def as_f32(bits) -> float:
    return float(np.array([int(bits)], np.uint32).view(np.float32)[0])


class NormSim(Sim):
    def _load(self, exp, name: str, n: int) -> np.ndarray:
        t = self.tensors[name]
        self.acc(exp, "R", t, 0, n * SIZE[t.dt])
        return to_f32(self.rd(t, np.arange(n) * SIZE[t.dt]), t.dt).astype(np.float64)

    def _store(self, exp, name: str, v: np.ndarray, exact: bool = False) -> None:
        t = self.tensors[name]
        v = np.asarray(v, np.float64).reshape(-1)
        self.acc(exp, "W", t, 0, len(v) * SIZE[t.dt])
        self.wr(t, np.arange(len(v)) * SIZE[t.dt], from_f32(v.astype(np.float32), t.dt))
        if not exact:
            exp.approx.append((name, F32_TOL, 0.0, 1))

    def _tmp(self, exp, scratch, need: int) -> None:
        if scratch is not None and need:
            t = self.tensors[scratch]
            self.acc(exp, "W", t, 0, need)
            self.acc(exp, "R", t, 0, need)

    @staticmethod
    def _eps(T: str, bits) -> float:
        """A float scalar as the call takes it, of type T."""
        return float(to_f32(from_f32(np.array([as_f32(bits)], np.float32), T), T)[0])

    @staticmethod
    def _affine(x, mean, rstd, gamma, beta):
        y = (x - mean[:, None]) * rstd[:, None]
        if gamma is not None:
            y = y * gamma[None, :]
        if beta is not None:
            y = y + beta[None, :]
        return y

    @staticmethod
    def _stats(x: np.ndarray, n: int):
        mean = row_sum(x[:, :n]) / n
        dev = x[:, :n] - mean[:, None]
        return mean, row_sum(dev * dev) / n

    # -- LayerNorm [B, S, H] and DeepNorm --------------------------------------------------------------------

    def _bsh(self, exp, call, T, b, s, h, orih, stack, form, y, mean, var, x, gamma, beta, eps, scratch=None,
             gx=None, alpha=None):
        sz, rows, h, n = SIZE[T], int(b) * int(s), int(h), int(orih)
        xv = self._load(exp, x, rows * h).reshape(rows, h)
        if gx is not None:
            xv = self._eps(T, alpha) * xv + self._load(exp, gx, rows * h).reshape(rows, h)
        g, bt = self._load(exp, gamma, h), self._load(exp, beta, h)
        width_call = call
        p = rows_fitting(width_call, sz, rows, h, int(stack))
        self._tmp(exp, scratch if form == "tmp" else None, rows_bytes(call, sz, min(p, rows), h))
        m, v = self._stats(xv, n)
        self._store(exp, y, self._affine(xv, m, 1.0 / np.sqrt(v + self._eps(T, eps)), g, bt))
        self._store(exp, mean, m)
        self._store(exp, var, v)

    def ref_LayerNorm(self, exp, **kw):
        self._bsh(exp, "LayerNorm", **kw)

    def ref_DeepNorm(self, exp, basic, reuse, **kw):
        self._bsh(exp, "DeepNorm", **kw)

    # -- LayerNorm [A, R] and Normalize ----------------------------------------------------------------------

    def _ar(self, exp, call, T, U, a, r, rp, form, y, out2, x, gamma, beta, eps, no_gamma, no_beta, need,
            scratch=None, mean_out=None, mean_in=None, var_in=None, rstd_out=True):
        a, r, rp = int(a), int(r), int(rp)
        xv = self._load(exp, x, a * rp).reshape(a, rp)
        g = None if no_gamma else self._load(exp, gamma, rp)
        bt = None if no_beta else self._load(exp, beta, rp)
        if mean_in is not None:
            m, v = self._load(exp, mean_in, a), self._load(exp, var_in, a)
        self._tmp(exp, scratch if form == "tmp" else None, need)
        if mean_in is None:
            m, v = self._stats(xv, r)
        rstd = 1.0 / np.sqrt(v + as_f32(eps))
        self._store(exp, y, self._affine(xv, m, rstd, g, bt))
        if mean_out is not None:
            self._store(exp, mean_out, m)
        self._store(exp, out2, rstd if rstd_out else v)

    def ref_LayerNormAR(self, exp, T, U, a, r, rp, ta, stack, cfg, form, y, mean, rstd, x, gamma, beta, eps,
                        scratch=None):
        sz, cfg = SIZE[T], int(cfg)
        p = rows_fitting("LayerNormAR", sz, int(ta), padded(int(r), sz), int(stack))
        need = rows_bytes("LayerNormAR", sz, min(p, int(a)), int(rp))
        self._ar(exp, "LayerNormAR", T, U, a, r, rp, form, y, rstd, x, gamma, beta, eps, cfg == 1, cfg == 2, need,
                 scratch, mean_out=mean, rstd_out=cfg != 3)

    def ref_Normalize(self, exp, T, U, a, r, rp, cfg, form, y, rstd, mean, var, x, gamma, beta, eps, scratch=None,
                      cfga=None):
        sz, cfg = SIZE[T], int(cfg)
        need = 0
        if form == "tmp":
            have = self.tensors[scratch].elems
            need = rows_bytes("Normalize", sz, max(1, rows_fitting("Normalize", sz, int(a), int(rp), have)), int(rp))
        self._ar(exp, "Normalize", T, U, a, r, rp, form, y, rstd, x, gamma, beta, eps, cfg == 1, cfg == 2, need,
                 scratch, mean_in=mean, var_in=var)

    # -- RmsNorm ---------------------------------------------------------------------------------------------

    def ref_RmsNorm(self, exp, T, b, s, h, orih, stack, basic, form, dst, src, gamma, eps, scratch=None):
        sz, rows, h, n = SIZE[T], int(b) * int(s), int(h), int(orih)
        xv = self._load(exp, src, rows * h).reshape(rows, h)
        g = self._load(exp, gamma, h)
        p = rows_fitting("RmsNorm", sz, rows, h, int(stack))
        self._tmp(exp, scratch if form == "tmp" else None, rows_bytes("RmsNorm", sz, min(p, rows), h))
        k = 1.0 / np.sqrt(row_sum(xv[:, :n] * xv[:, :n]) / n + self._eps(T, eps))
        self._store(exp, dst, (xv * k[:, None]) * g[None, :])

    # -- LayerNormGrad / LayerNormGradBeta ----------------------------------------------------------------------

    def ref_LayerNormGrad(self, exp, T, b, s, h, orih, stack, form, pdx, res, dy, x, var, mean, gamma, eps,
                          scratch=None):
        sz, rows, h, n = SIZE[T], int(b) * int(s), int(h), int(orih)
        d = self._load(exp, dy, rows * h).reshape(rows, h)
        xv = self._load(exp, x, rows * h).reshape(rows, h)
        vv, mv, g = self._load(exp, var, rows), self._load(exp, mean, rows), self._load(exp, gamma, h)
        p = rows_fitting("LayerNormGrad", sz, rows, h, int(stack))
        self._tmp(exp, scratch if form == "tmp" else None, rows_bytes("LayerNormGrad", sz, min(p, rows), h))
        rs = 1.0 / np.sqrt(vv + self._eps(T, eps))
        xl = d * g[None, :]
        dev = xv - mv[:, None]
        pd_var = row_sum(-0.5 * xl[:, :n] * dev[:, :n] * (rs * rs * rs)[:, None])
        pd_mean = row_sum(-xl[:, :n] * rs[:, None]) + pd_var * (1.0 / n) * row_sum(-2.0 * dev[:, :n])
        out = xl * rs[:, None] + pd_var[:, None] * 2.0 * (1.0 / n) * dev + (pd_mean * (1.0 / n))[:, None]
        self._store(exp, pdx, out)
        self._store(exp, res, dev * rs[:, None])

    def ref_LayerNormGradBeta(self, exp, T, b, s, h, orih, stack, form, pdg, pdb, res, dy, scratch=None):
        sz, rows, h = SIZE[T], int(b) * int(s), int(h)
        rv = self._load(exp, res, rows * h).reshape(rows, h)
        dv = self._load(exp, dy, rows * h).reshape(rows, h)
        p = rows_fitting("LayerNormGradBeta", sz, rows, h, int(stack))
        self._tmp(exp, scratch if form == "tmp" else None, rows_bytes("LayerNormGradBeta", sz, min(p, rows), h))
        self._store(exp, pdg, row_sum((dv * rv).T))
        self._store(exp, pdb, row_sum(dv.T))

    # -- Welford -------------------------------------------------------------------------------------------------

    def ref_WelfordUpdate(self, exp, T, ab, k, nrec, inplace, form, om, ov, im, iv, x, scratch=None, rn=1):
        n, k = int(ab), int(k)
        rd = n if int(inplace) else k
        m = self._load(exp, im, rd).astype(np.float32)
        v = self._load(exp, iv, rd).astype(np.float32)
        xv = self._load(exp, x, k).astype(np.float32)
        self._tmp(exp, scratch if form == "tmp" else None, rows_bytes("WelfordUpdate", SIZE[T], 1, n))
        nr = np.float32(as_f32(nrec))
        delta = xv - m[:k]
        m1 = m[:k] + delta * nr
        v[:k] = v[:k] + delta * (xv - m1)
        m[:k] = m1
        self._store(exp, om, m, exact=True)
        self._store(exp, ov, v, exact=True)

    def ref_WelfordFinalize(self, exp, rn, ab, hc, hl, tc, tl, abrec, rrec, rrecc, corr, form, om, ov, im, iv,
                            counts=None, scratch=None, T="f32"):
        n = int(ab)
        m, v = self._load(exp, im, n), self._load(exp, iv, n)
        if counts is not None:
            c = self._load(exp, counts, n)
        else:
            c = np.where(np.arange(n) < int(hl), float(int(hc)), float(int(tc)))
        self._tmp(exp, scratch if form == "tmp" else None, rows_bytes("WelfordFinalize", 4, 1, n))
        mean = row_sum(c * m) * as_f32(rrec)
        var = row_sum(v + c * (m - mean) ** 2) * as_f32(rrecc if int(corr) else rrec)
        self._store(exp, om, np.array([mean]))
        self._store(exp, ov, np.array([var]))

    # -- host helpers --------------------------------------------------------------------------------------------

    def ref_NormHost(self, exp, T, op, d0, d1, out, d2=0, d3=0):
        sz, d0, d1, d2, d3 = SIZE[T], int(d0), int(d1), int(d2), int(d3)
        ok = 1
        if op in ("LayerNorm", "LayerNormGrad", "LayerNormGradBeta"):
            hi, lo = tmp_minmax(op, sz, d0 * d1, d2)
        elif op in ("LayerNormAR", "Normalize"):
            hi, lo = tmp_minmax(op, sz, d0, padded(d1, sz))
        elif op in ("DeepNorm", "RmsNorm"):
            hmax = 2040 if op == "DeepNorm" else 2047
            ok = int(not d3 or (d2 % 64 == 0 and d2 <= hmax and (d0 * d1) % 8 == 0))
            hi, lo = tmp_minmax(op, sz, d0 * d1, d2) if ok else (0, 0)
        elif op == "WelfordUpdate":
            hi, lo = tmp_minmax(op, sz, 1, d0 * d1)
        else:
            hi, lo = tmp_minmax(op, sz, 1, d0)
        self.put(self.tensors[out], 0, np.array([hi, lo, ok], np.uint32))
