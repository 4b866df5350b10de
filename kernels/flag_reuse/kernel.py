"""Matmul + SiLU through ping-pong GM slots: the "flag reused before it was consumed" race.

``out[M, N] = silu(x[M, K] @ w[K, N] + bias[N])``, N cut into tiles of ``base_n`` columns. Each
cube core computes its tiles one after another into its two GM slots (ping-pong) and hands each to
its two vector cores with a cross-core flag; each vector core adds the bias and applies SiLU to its
half of the tile's rows::

    cube:    tile i:  [FW: wait flag 4+i%2, slot i%2 free]  slot[i%2] = x @ w[:, tile]  set flag 3
    vector:  tile i:  R: wait flag 3   rows = slot[i%2][my half]   [FS: set flag 4+i%2]
                      out[my half, tile] = silu(rows + bias[tile])

As written, the kernel has no vector -> cube "slot free" handshake (FS/FW): two slots looked like
enough, and the cube sets flag 3 again for each next tile whether or not the vector cores took the
previous ones. Flags count, so no set is lost, but when a vector core falls two tiles behind (it
was scheduled late) the cube has already overwritten the slot it is about to read: that core
writes another tile's values into its columns.

Dropping only FS (the releases are never set) leaves the cube core waiting for a flag no core will
ever set; the launch's watchdog reports it as a deadlock naming the flag and the cores.
"""

from __future__ import annotations

import numpy as np

from mpnpu import api as ac
from mpnpu.api import HardEvent, Pipe, TPosition

from .syncs import FLAG_SLOT_FREE, FLAG_TILE_READY


@ac.pipelined
def main(x, w, bias, out, slots, base_n: int, base_k: int) -> None:
    """Kernel entry point: x [M, K], w [K, N], bias [N], out [M, N] in one float dtype; slots
    [>= block_dim, 2, M, base_n] float32: two tile slots per cube core."""
    with ac.stage("Pipeline"):
        if ac.is_aic():
            produce_tiles(x, w, slots, base_n, base_k)
        else:
            consume_tiles(slots, bias, out, base_n)


def tiles_of(ai_core: int, n: int, base_n: int) -> range:
    """Column offsets of an AI core's tiles (round-robin over the AI cores)."""
    return range(ai_core * base_n, n, ac.get_block_num() * base_n)


def produce_tiles(x, w, slots, base_n: int, base_k: int) -> None:
    """Cube core: each tile of x @ w (K in chunks of base_k through L0A/L0B) into slot i % 2,
    announced with flag 3."""
    (m, k), n = x.shape, w.shape[1]
    cube = ac.get_block_idx()
    a1 = ac.alloc_local(TPosition.A1, (m, base_k), x.dtype)
    b1 = ac.alloc_local(TPosition.B1, (base_k, base_n), w.dtype)
    a2 = ac.alloc_local(TPosition.A2, (m, base_k), x.dtype)
    b2 = ac.alloc_local(TPosition.B2, (base_k, base_n), w.dtype)
    acc = ac.alloc_local(TPosition.CO1, (m, base_n), "float32")
    tiles = tiles_of(cube, n, base_n)
    for i, n0 in enumerate(tiles):
        tn = min(base_n, n - n0)
        if i:
            ac.sync_pipes(HardEvent.FIX_M)  # the last tile has left L0C
        for k0 in range(0, k, base_k):
            kw = min(base_k, k - k0)
            if i or k0:
                ac.sync_pipes(HardEvent.MTE1_MTE2)  # L1 was loaded into L0 before it is refilled
            ac.data_copy(a1[:, :kw], x[:, k0:k0 + kw])
            ac.data_copy(b1[:kw, :tn], w[k0:k0 + kw, n0:n0 + tn])
            ac.sync_pipes(HardEvent.MTE2_MTE1)
            if i or k0:
                ac.sync_pipes(HardEvent.M_MTE1)  # the last matmul has read L0A/L0B
            ac.load_data(a2[:, :kw], a1[:, :kw])
            ac.load_data(b2[:kw, :tn], b1[:kw, :tn])
            ac.sync_pipes(HardEvent.MTE1_M)
            ac.mmad(acc[:, :tn], a2[:, :kw], b2[:kw, :tn], accumulate=k0 > 0)
        ac.sync_pipes(HardEvent.M_FIX)
        if i >= 2:  # slot i % 2 still holds tile i - 2 until both vector cores release it
            ac.cross_core_wait_flag(FLAG_SLOT_FREE[i % 2], mode=2, name="FW")
        ac.fixpipe(slots[cube, i % 2, :, :tn], acc[:, :tn])
        # raised on PIPE_FIX: once the tile has landed in the slot
        ac.cross_core_set_flag(FLAG_TILE_READY, mode=2, pipe=Pipe.FIX)
    # Take back the last releases, so that no flag is left set when the kernel ends.
    for i in range(max(0, len(tiles) - 2), len(tiles)):
        ac.cross_core_wait_flag(FLAG_SLOT_FREE[i % 2], mode=2, name="FW")


def consume_tiles(slots, bias, out, base_n: int) -> None:
    """Vector core: SiLU(tile + bias) of its half of each tile's rows; a slot is released as soon
    as it is read."""
    m, n = out.shape
    cube = ac.get_block_idx() // 2
    half = (m + 1) // 2
    r0, r1 = (0, half) if ac.get_subblock_idx() == 0 else (half, m)
    y = ac.alloc_local(TPosition.VECIN, (r1 - r0, base_n), "float32")
    b = ac.alloc_local(TPosition.VECIN, base_n, bias.dtype)
    b32 = ac.alloc_local(TPosition.VECCALC, base_n, "float32")
    result = ac.alloc_local(TPosition.VECOUT, (r1 - r0, base_n), out.dtype)
    for i, n0 in enumerate(tiles_of(cube, n, base_n)):
        tn = min(base_n, n - n0)
        ac.cross_core_wait_flag(FLAG_TILE_READY, mode=2, name="R")
        if i:
            ac.sync_pipes(HardEvent.V_MTE2)  # the last tile's compute has read y and b
        ac.data_copy(y[:, :tn], slots[cube, i % 2, r0:r1, :tn])
        # raised on PIPE_MTE2: the slot is free once the copy out of it has been made
        ac.cross_core_set_flag(FLAG_SLOT_FREE[i % 2], mode=2, pipe=Pipe.MTE2, name="FS")
        ac.data_copy(b[:tn], bias[n0:n0 + tn])
        ac.sync_pipes(HardEvent.MTE2_V)
        if i:
            ac.sync_pipes(HardEvent.MTE3_V)  # the last result has been copied out
        ac.cast(b32[:tn], b[:tn])
        t = y[:, :tn]
        t += b32[:tn]
        t *= 1.0 / (1.0 + np.exp(-t))
        ac.cast(result[:, :tn], t)
        ac.sync_pipes(HardEvent.V_MTE3)
        ac.data_copy(out[r0:r1, n0:n0 + tn], result[:, :tn])
