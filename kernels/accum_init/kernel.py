"""Split-K matmul with atomic accumulation: the "accumulator not yet initialised" race.

``c[M, N] = a[M, K] @ b[K, N]`` with K cut into chunks of ``base_k``. The output comes from the
caching allocator uncleared, so the vector cores zero it first; then every cube core multiplies
its own K-chunks and adds each partial product into ``c`` with an atomic Fixpipe::

    InitOutput     (vector)  c[rows of this vector core] := 0
    ── S0: SyncAll ──        (missing in the incident)
    SplitKMatmul   (cube)    for each of its K-chunks: L0C = a[:, k] @ b[k, :]; c += L0C (atomic)

Without S0 nothing orders a vector core's zeroing after a cube core's first atomic add: when a
vector core is scheduled late, its zeroing wipes a partial sum that was already added (or the
cube adds onto the previous call's stale values before the zeroing lands). Atomics order the
adds among themselves, never against a plain write.
"""

from __future__ import annotations

from mpnpu import api as ac
from mpnpu.api import HardEvent, TPosition


@ac.pipelined
def main(a, b, c, base_k: int) -> None:
    """Kernel entry point: ``a`` [M, K], ``b`` [K, N] (float16/bfloat16/float32), ``c`` [M, N] float32."""
    with ac.stage("InitOutput"):
        if ac.is_aiv():
            init_output(c)
    ac.sync_all(name="S0")
    with ac.stage("SplitKMatmul"):
        if ac.is_aic():
            split_k_matmul(a, b, c, base_k)


def init_output(c) -> None:
    """Zero this vector core's share of the rows of ``c``."""
    m, n = c.shape
    i, parts = ac.get_block_idx(), 2 * ac.get_block_num()
    r0, r1 = i * m // parts, (i + 1) * m // parts  # this core's share
    if r1 > r0:
        zeros = ac.alloc_local(TPosition.VECOUT, (r1 - r0, n), "float32")
        zeros.fill(0.0)
        ac.sync_pipes(HardEvent.V_MTE3)
        ac.data_copy(c[r0:r1], zeros)


def split_k_matmul(a, b, c, base_k: int) -> None:
    """This cube core's K-chunks (round-robin over the cube cores), each added atomically into c."""
    (m, k), n = a.shape, c.shape[1]
    cube, n_cube = ac.get_block_idx(), ac.get_block_num()
    a1 = ac.alloc_local(TPosition.A1, (m, base_k), a.dtype)
    b1 = ac.alloc_local(TPosition.B1, (base_k, n), b.dtype)
    a2 = ac.alloc_local(TPosition.A2, (m, base_k), a.dtype)
    b2 = ac.alloc_local(TPosition.B2, (base_k, n), b.dtype)
    acc = ac.alloc_local(TPosition.CO1, (m, n), "float32")
    for j, k0 in enumerate(range(cube * base_k, k, n_cube * base_k)):
        kw = min(base_k, k - k0)
        if j:
            ac.sync_pipes(HardEvent.MTE1_MTE2)  # L1 was loaded into L0 before it is refilled
        ac.data_copy(a1[:, :kw], a[:, k0:k0 + kw])
        ac.data_copy(b1[:kw], b[k0:k0 + kw])
        ac.sync_pipes(HardEvent.MTE2_MTE1)
        if j:
            ac.sync_pipes(HardEvent.M_MTE1)  # the last matmul has read L0A/L0B
        ac.load_data(a2[:, :kw], a1[:, :kw])
        ac.load_data(b2[:kw], b1[:kw])
        ac.sync_pipes(HardEvent.MTE1_M)
        if j:
            ac.sync_pipes(HardEvent.FIX_M)  # the last chunk has left L0C
        ac.mmad(acc, a2[:, :kw], b2[:kw])
        ac.sync_pipes(HardEvent.M_FIX)
        ac.set_atomic_add()
        ac.fixpipe(c, acc)  # c += this chunk's partial product
        ac.set_atomic_none()

