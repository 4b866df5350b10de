"""Matmul + bias + ReLU epilogue: the "AIV-only barrier where the cube is a party" race.

``out[M, N] = relu(x[M, K] @ w[K, N] + bias[N])``. The cube cores compute the matmul into a GM
workspace; meanwhile the vector cores widen the bias to float32 into another workspace, each its
own slice of columns. Every vector core then needs the whole bias row *and* its rows of the
matmul::

    Prepare    cube:    y_ws[rows of this cube core] = x @ w          (Mmad, one Fixpipe at the end)
               vector:  bias_ws[columns of this vector core] = float32(bias)
    ── V1: SyncAll<true> ──   vector cores only: orders the bias slices between vector cores
    ── S1: SyncAll ──         all cores: orders the cube's y_ws write (missing in the incident)
    Epilogue   vector:  out[rows] = relu(y_ws[rows] + bias_ws)

As written, the kernel has V1 only: SyncAll<true>() is a barrier among the vector cores, and the
cube core is not a party to it, so it says nothing about whether the cube's Fixpipe has landed.
A vector core that passes V1 before the cube has finished reads the previous call's stale y_ws.
The fix is the all-core SyncAll<false>() (S1); with it, V1 is redundant but harmless.
"""

from __future__ import annotations

import numpy as np

from mpnpu import api as ac
from mpnpu.api import HardEvent, TPosition


@ac.pipelined
def main(x, w, bias, out, y_ws, bias_ws, base_k: int) -> None:
    """Kernel entry point: x [M, K], w [K, N], bias [N], out [M, N] in one float dtype;
    y_ws [M, N] and bias_ws [N] float32 workspaces."""
    with ac.stage("Prepare"):
        if ac.is_aic():
            matmul(x, w, y_ws, base_k)
        else:
            widen_bias(bias, bias_ws)
    if ac.is_aiv():
        ac.sync_all(aiv_only=True, name="V1")
    ac.sync_all(name="S1")
    with ac.stage("Epilogue"):
        if ac.is_aiv():
            bias_relu(y_ws, bias_ws, out)


def matmul(x, w, y_ws, base_k: int) -> None:
    """y_ws[rows of this cube core] = x[rows] @ w, accumulated over K-chunks in L0C."""
    (m, k), n = x.shape, w.shape[1]
    i, parts = ac.get_block_idx(), ac.get_block_num()
    r0, r1 = i * m // parts, (i + 1) * m // parts  # this core's share
    rows = r1 - r0
    if rows == 0:
        return
    a1 = ac.alloc_local(TPosition.A1, (rows, base_k), x.dtype)
    b1 = ac.alloc_local(TPosition.B1, (base_k, n), w.dtype)
    a2 = ac.alloc_local(TPosition.A2, (rows, base_k), x.dtype)
    b2 = ac.alloc_local(TPosition.B2, (base_k, n), w.dtype)
    acc = ac.alloc_local(TPosition.CO1, (rows, n), "float32")
    for k0 in range(0, k, base_k):
        kw = min(base_k, k - k0)
        if k0:
            ac.sync_pipes(HardEvent.MTE1_MTE2)  # L1 was loaded into L0 before it is refilled
        ac.data_copy(a1[:, :kw], x[r0:r1, k0:k0 + kw])
        ac.data_copy(b1[:kw], w[k0:k0 + kw])
        ac.sync_pipes(HardEvent.MTE2_MTE1)
        if k0:
            ac.sync_pipes(HardEvent.M_MTE1)  # the last matmul has read L0A/L0B
        ac.load_data(a2[:, :kw], a1[:, :kw])
        ac.load_data(b2[:kw], b1[:kw])
        ac.sync_pipes(HardEvent.MTE1_M)
        ac.mmad(acc, a2[:, :kw], b2[:kw], accumulate=k0 > 0)
    ac.sync_pipes(HardEvent.M_FIX)
    ac.fixpipe(y_ws[r0:r1], acc)


def widen_bias(bias, bias_ws) -> None:
    """bias_ws[columns of this vector core] = bias as float32."""
    i, parts = ac.get_block_idx(), 2 * ac.get_block_num()
    c0, c1 = i * bias.shape[0] // parts, (i + 1) * bias.shape[0] // parts  # this core's share
    if c1 > c0:
        raw = ac.alloc_local(TPosition.VECIN, c1 - c0, bias.dtype)
        wide = ac.alloc_local(TPosition.VECOUT, c1 - c0, "float32")
        ac.data_copy(raw, bias[c0:c1])
        ac.sync_pipes(HardEvent.MTE2_V)
        ac.cast(wide, raw)
        ac.sync_pipes(HardEvent.V_MTE3)
        ac.data_copy(bias_ws[c0:c1], wide)


def bias_relu(y_ws, bias_ws, out) -> None:
    """out[rows of this vector core] = relu(y_ws[rows] + bias_ws), cast to out's dtype."""
    m, n = out.shape
    i, parts = ac.get_block_idx(), 2 * ac.get_block_num()
    r0, r1 = i * m // parts, (i + 1) * m // parts  # this core's share
    if r1 == r0:
        return
    y = ac.alloc_local(TPosition.VECIN, (r1 - r0, n), "float32")
    b = ac.alloc_local(TPosition.VECIN, n, "float32")
    ac.data_copy(y, y_ws[r0:r1])  # written by a cube core: only S1 orders this read after it
    ac.data_copy(b, bias_ws)  # written by every vector core: V1 orders this read
    ac.sync_pipes(HardEvent.MTE2_V)
    np.maximum(y + b, 0.0, out=y)
    result = ac.alloc_local(TPosition.VECOUT, (r1 - r0, n), out.dtype)
    ac.cast(result, y)
    ac.sync_pipes(HardEvent.V_MTE3)
    ac.data_copy(out[r0:r1], result)

