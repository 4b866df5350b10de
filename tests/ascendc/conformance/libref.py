"""Reference models of the sorting library (Concat, Sort, Extract, the library's MrgSort), the basic MrgSort
with GetMrgSortResult, CumSum and Sum, written from their API pages, independently of the headers: what each
computes and which bytes it reads and writes. :class:`LibSim` is a :class:`vecref.Sim` that knows them.

Records are 8 bytes: the score in the low bytes (half: 2 bytes, then 2 zero bytes), the uint32 index in the
high 4. Scores order from largest to smallest, equal ones in their order, NaN (whose place the pages leave
open) before every number, as mpnpu places it.
"""

from __future__ import annotations

import numpy as np
from vecref import NP, SIZE, Sim, compute, from_f32, to_f32, tree_sum


def records(scores: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """(score, index) records as rows of 8 bytes."""
    out = np.zeros((len(scores), 8), np.uint8)
    sz = scores.dtype.itemsize
    out[:, :sz] = np.ascontiguousarray(scores).view(np.uint8).reshape(-1, sz)
    out[:, 4:] = np.ascontiguousarray(idx.astype(np.uint32)).view(np.uint8).reshape(-1, 4)
    return out


def descending(scores: np.ndarray) -> np.ndarray:
    """The stable order of scores from largest to smallest, NaNs first."""
    key = -scores.astype(np.float64)
    key[np.isnan(key)] = -np.inf
    return np.argsort(key, kind="stable")


def score_key(rec: np.ndarray, dt: str) -> float:
    """A record's score as a number that orders like the merge: larger first, NaN above everything."""
    v = float(rec[:SIZE[dt]].copy().view(NP[dt])[0])
    return np.inf if np.isnan(v) else v


class LibSim(Sim):
    def __init__(self, size: int = 65536, seed: int = 0):
        super().__init__(size, seed)
        self.mrg: tuple[list[int], bool] | None = None  # the last MrgSort's counts, and its suspension flag

    def _records_of(self, t, n: int) -> np.ndarray:
        return self.rd(t, np.arange(n * 8), "u8").reshape(n, 8)

    def _scratch(self, exp, t, need: int) -> None:
        used = min(t.elems * SIZE[t.dt], need)
        if used:
            self.acc(exp, "W", t, 0, used)
            self.acc(exp, "R", t, 0, used)

    # -- sorting -------------------------------------------------------------------------------------------

    def ref_Concat(self, exp, T, src, tmp, repeat, out):
        """Nothing moves: the prepared tensor is src itself."""
        s = self.tensors[src]
        self.put(self.tensors[out], 0, np.array([s.offset, s.elems], np.uint32))

    def ref_Sort(self, exp, T, dst, concat, index, tmp, repeat, full, viaconcat=0):
        n = 32 * int(repeat)
        if n == 0:
            return
        c, ix, d = self.tensors[concat], self.tensors[index], self.tensors[dst]
        self.acc(exp, "R", c, 0, n * SIZE[T])
        self.acc(exp, "R", ix, 0, n * 4)
        if int(full) and int(repeat) > 1:
            self._scratch(exp, self.tensors[tmp], n * 8)
        self.acc(exp, "W", d, 0, n * 8)
        scores = self.rd(c, np.arange(n) * SIZE[T])
        idx = self.rd(ix, np.arange(n) * 4)
        group = n if int(full) else 32
        order = np.concatenate([g + descending(scores[g:g + group]) for g in range(0, n, group)])
        self.wr(d, np.arange(n * 8), records(scores[order], idx[order]).reshape(-1), "u8")

    def ref_Extract(self, exp, T, value, index, sorted, repeat):
        n = 32 * int(repeat)
        if n == 0:
            return
        s, v, ix = self.tensors[sorted], self.tensors[value], self.tensors[index]
        self.acc(exp, "R", s, 0, n * 8)
        self.acc(exp, "W", v, 0, n * SIZE[T])
        self.acc(exp, "W", ix, 0, n * 4)
        recs = self._records_of(s, n)
        self.wr(v, np.arange(n) * SIZE[T], np.ascontiguousarray(recs[:, :SIZE[T]]).view(NP[T]).reshape(-1))
        self.wr(ix, np.arange(n) * 4, np.ascontiguousarray(recs[:, 4:]).view(np.uint32).reshape(-1))

    def ref_MrgSort(self, exp, T, dst, q1, q2, len0, len1, valid, repeat, q3=None, q4=None, len2=0, len3=0,
                    suspend=0, lib=0, out=None):
        """One repeat: the queues' heads compared, the best taken, until all are empty (or, suspending, one
        is)."""
        k = {3: 2, 7: 3, 15: 4}[int(valid)]
        names = [q1, q2, q3, q4][:k]
        lens = [int(x) for x in (len0, len1, len2, len3)][:k]
        queues = []
        for name, n in zip(names, lens):
            t = self.tensors[name]
            if n:
                self.acc(exp, "R", t, 0, n * 8)
            queues.append(self._records_of(t, n))
        pos = [0] * k
        merged = []
        while True:
            live = [q for q in range(k) if pos[q] < lens[q]]
            if not live or (int(suspend) and len(live) < k):
                break
            best = live[0]
            for q in live[1:]:
                if score_key(queues[q][pos[q]], T) > score_key(queues[best][pos[best]], T):
                    best = q
            merged.append(queues[best][pos[best]])
            pos[best] += 1
        d = self.tensors[dst]
        if merged:
            self.acc(exp, "W", d, 0, len(merged) * 8)
            self.wr(d, np.arange(len(merged) * 8), np.concatenate(merged), "u8")
        counts = pos + [0] * (4 - k)
        self.mrg = (counts, bool(int(suspend)))
        exp.spr.append(("W", 1))
        if int(lib):
            self.put(self.tensors[out], 0, np.array(counts, np.uint32))

    def ref_MrgSortResult(self, exp, T, out):
        assert self.mrg is not None and self.mrg[1], "the test expects an error here"
        exp.spr.append(("R", 0))
        self.put(self.tensors[out], 0, np.array(self.mrg[0], np.uint16))

    # -- CumSum and Sum ------------------------------------------------------------------------------------

    def ref_CumSum(self, exp, T, dst, src, outter, inner, axis, lastrow=0, last=None, scratch=None, **kw):
        rows, cols = int(outter), int(inner)
        n, sz = rows * cols, SIZE[T]
        s, d = self.tensors[src], self.tensors[dst]
        self.acc(exp, "R", s, 0, n * sz)
        x = to_f32(self.rd(s, np.arange(n) * sz), T).astype(np.float32).reshape(rows, cols)
        if scratch is not None and T == "f16":
            self._scratch(exp, self.tensors[scratch], n * 4)
        self.acc(exp, "W", d, 0, n * sz)
        y = np.cumsum(x, axis=1 if axis == "last" else 0, dtype=np.float32)  # in order, in float
        self.wr(d, np.arange(n) * sz, from_f32(y.reshape(-1), T))
        if int(lastrow):
            lr = y[:, -1] if axis == "last" else y[-1, :]
            self.acc(exp, "W", self.tensors[last], 0, len(lr) * sz)
            self.wr(self.tensors[last], np.arange(len(lr)) * sz, from_f32(np.ascontiguousarray(lr), T))

    @staticmethod
    def sum_tmp(n: int, dt: str) -> int:
        """mpnpu's temporary-buffer bytes for Sum: one row's repeat sums, rounded up to 32 bytes."""
        lanes = 256 // SIZE[dt]
        return -(-(-(-n // lanes) * SIZE[dt]) // 32) * 32

    def ref_Sum(self, exp, T, dst, src, outter, inner, n, scratch=None):
        rows, inner, n, sz = int(outter), int(inner), int(n), SIZE[T]
        if rows == 0:
            return
        s, d = self.tensors[src], self.tensors[dst]
        self.acc(exp, "R", s, 0, rows * inner * sz)
        if scratch is not None:
            self._scratch(exp, self.tensors[scratch], self.sum_tmp(n, T))
        self.acc(exp, "W", d, 0, rows * sz)
        lanes = 256 // sz
        out = []
        for r in range(rows):
            row = self.rd(s, (r * inner + np.arange(n)) * sz)
            total = None
            for first in range(0, n, lanes):
                v = np.zeros(lanes, NP[T])
                part = row[first:first + lanes]
                v[:len(part)] = part
                t = tree_sum(v, T)
                total = t if total is None else compute(T, lambda a, b: a + b, np.array([total]), np.array([t]))[0]
            out.append(total)
        self.wr(d, np.arange(rows) * sz, np.array(out, NP[T]))

    def ref_LibHost(self, exp, T, op, n, out):
        if op == "Sum":
            v = self.sum_tmp(int(n), T)
        else:
            v = int(n) * 4 if T == "f16" else 0
        self.put(self.tensors[out], 0, np.array([v, v], np.uint32))
