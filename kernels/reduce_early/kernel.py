"""RMSNorm with the hidden dimension split across vector cores: the "cross-core reduction read too
early" race (a two-phase reduction without its barrier).

``y[R, H] = x / sqrt(mean(x², axis=1) + eps) * gamma``. Rows are long, so each vector core takes a
slice of the columns of every row; a row's sum of squares then needs every core's slice::

    PartialSumSq  (vector)  partials[v, :] = sum over my columns of x²   (one float32 per row)
    ── S1: SyncAll<true> ──  (vector cores only; missing in the incident)
    Normalize     (vector)  total = sum over v of partials[v, :]; y[:, my columns] = x * rsqrt(total / H + eps) * gamma

Without S1 a core reads the other cores' partials right after writing its own: a core that got
ahead reads a slot another core has not written yet, i.e. whatever the previous call left in that
workspace block, and normalises its columns with a wrong sum. SyncAll<true> is the right barrier
here (only vector cores write and read the partials); the cube cores have nothing to do.
"""

from __future__ import annotations

import numpy as np

from mpnpu import api as ac
from mpnpu.api import HardEvent, TPosition


@ac.pipelined
def main(x, gamma, y, partials, eps: float) -> None:
    """Kernel entry point: x [R, H], gamma [H], y [R, H] in one float dtype; partials
    [>= 2*block_dim, R] float32 workspace, one row of partial sums per vector core."""
    if not ac.is_aiv():
        return
    rows, h = x.shape
    v, parts = ac.get_block_idx(), 2 * ac.get_block_num()
    c0, c1 = v * h // parts, (v + 1) * h // parts
    xs = ac.alloc_local(TPosition.VECIN, (rows, c1 - c0), x.dtype)
    x32 = ac.alloc_local(TPosition.VECCALC, (rows, c1 - c0), "float32")
    ac.data_copy(xs, x[:, c0:c1])
    ac.sync_pipes(HardEvent.MTE2_V)
    ac.cast(x32, xs)
    with ac.stage("PartialSumSq"):
        mine = ac.alloc_local(TPosition.VECOUT, rows, "float32")
        np.einsum("ij,ij->i", x32, x32, out=mine)
        ac.sync_pipes(HardEvent.V_MTE3)
        ac.data_copy(partials[v], mine)
    ac.sync_all(aiv_only=True, name="S1")
    with ac.stage("Normalize"):
        g = ac.alloc_local(TPosition.VECIN, c1 - c0, gamma.dtype)
        g32 = ac.alloc_local(TPosition.VECCALC, c1 - c0, "float32")
        ac.data_copy(g, gamma[c0:c1])
        ac.sync_pipes(HardEvent.MTE2_V)
        ac.cast(g32, g)
        every = ac.alloc_local(TPosition.VECIN, (parts, rows), "float32")
        ac.data_copy(every, partials[:parts])  # the other cores' partials: only S1 orders this read
        ac.sync_pipes(HardEvent.MTE2_V)
        with np.errstate(invalid="ignore", divide="ignore"):  # a stale partial can be anything
            rstd = 1.0 / np.sqrt(every.sum(axis=0) / h + eps)
        x32 *= rstd[:, None]
        x32 *= g32
        out = ac.alloc_local(TPosition.VECOUT, (rows, c1 - c0), y.dtype)
        ac.cast(out, x32)
        ac.sync_pipes(HardEvent.V_MTE3)
        ac.data_copy(y[:, c0:c1], out)
