"""fused_linear_online_max_sum as a mixed cube/vector kernel, written against mpnpu's device API.

Every core of the launch runs :func:`main`; it branches on the core type like an Ascend C kernel
(``if ASCEND_IS_AIC`` / ``if ASCEND_IS_AIV``). The four stages and the sync points between them::

    InitOutputAndWorkspace  (vector)  workspace max := -inf, sum := 0; predicted_logits := 0;
                                      masked_target, target_mask := 0 (32-byte blocks, round-robin)
    ── S0: SyncAll ──
    TargetProcess           (vector)  masked targets of this core's rows -> workspace (for
                                      CVProcess) and the masked_target output; target_mask
    ── S1: SyncAll ──                 (dropped in the incident: nothing orders the next stage's
                                       masked-target reads after other cores' writes)
    CVProcess               cube:     tile = input @ weightᵀ -> ping-pong GM buffer -> set flag 5
                            vector:   wait flag 5 (W5); online max/sum of half the tile's rows;
                                      gather the logit at masked_target; atomic add into
                                      predicted_logits; release the buffer with flag 6/7 (W67)
    ── S2: SyncAll ──
    AllReduceProcess        (vector)  merge the per-cube-core partials; predicted -= max; mask

Data moves only through ``data_copy`` / ``fixpipe`` (GM <-> local), so each access can be traced;
arithmetic happens on local tensors with numpy. No sleep, delay or data change appears anywhere:
whether a core reads masked_target before another wrote it is up to the OS scheduler alone.

Inside each core the data movement runs on asynchronous pipes (the kernel is ``pipelined``), and
the kernel orders them as production Ascend C does, with SetFlag/WaitFlag pairs between the pipe
that produces a buffer and the pipe that uses it (``sync_pipes``): MTE2 -> V before computing on
what was copied in, V -> MTE3 before copying a result out, MTE3 -> V / MTE3 -> MTE2 before a
buffer (or a GM row this core just wrote) is reused, MTE2 -> MTE1 -> M -> FIX along the matmul,
and the tile-ready flag raised on PIPE_FIX, once the tile has landed in GM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpnpu import api as ac
from mpnpu import float32
from mpnpu.api import GlobalTensor, HardEvent, Pipe, TPosition

from . import probes
from .syncs import FLAG_BUFFER_FREE, FLAG_TILE_READY
from .tiling import Tiling


@dataclass
class KernelArgs:
    """The GM tensors of one call, as the cores see them (the workspace already carved)."""

    input: GlobalTensor
    weight: GlobalTensor
    target: GlobalTensor
    logits_max: GlobalTensor
    sum_exp_logits: GlobalTensor
    predicted_logits: GlobalTensor
    target_mask: GlobalTensor
    masked_target: GlobalTensor
    vocab_parallel_logits: GlobalTensor
    online_max: GlobalTensor  # [block_dim, BT] float32, one row of partials per cube core
    online_sum: GlobalTensor  # [block_dim, BT] float32
    tile_buffers: GlobalTensor  # [block_dim, 2, base_m, base_n] ping-pong tiles per cube core
    masked_target_ws: GlobalTensor  # [BT] TargetProcess -> CVProcess hand-off
    tiling: Tiling


@ac.pipelined
def main(input, weight, target, logits_max, sum_exp_logits, predicted_logits, target_mask,
         masked_target, vocab_parallel_logits, workspace, tiling: Tiling) -> None:
    """Kernel entry point (the ``__global__ __aicore__`` function)."""
    t = tiling
    args = KernelArgs(
        input, weight, target, logits_max, sum_exp_logits, predicted_logits, target_mask,
        masked_target, vocab_parallel_logits,
        online_max=workspace.carve("workspace.online_max", t.online_max_offset, (t.block_dim, t.bt), "float32"),
        online_sum=workspace.carve("workspace.online_sum", t.online_sum_offset, (t.block_dim, t.bt), "float32"),
        tile_buffers=workspace.carve("workspace.tile", t.tile_buffers_offset,
                                     (t.block_dim, 2, t.base_m, t.base_n), t.tile_dtype),
        masked_target_ws=workspace.carve("workspace.masked_target", t.masked_target_offset, (t.bt,), t.target_dtype),
        tiling=t,
    )
    with ac.stage("InitOutputAndWorkspace"):
        if ac.is_aiv():
            init_output_and_workspace(args)
    ac.sync_all(name="S0")
    with ac.stage("TargetProcess"):
        if ac.is_aiv():
            target_process(args)
    ac.sync_all(name="S1")
    with ac.stage("CVProcess"):
        if ac.is_aic():
            cv_process_cube(args)
        else:
            cv_process_vector(args)
    ac.sync_all(name="S2")
    with ac.stage("AllReduceProcess"):
        if ac.is_aiv():
            all_reduce_process(args)


# -- stage 1: InitOutputAndWorkspace (vector) -------------------------------------------------------


def init_output_and_workspace(a: KernelArgs) -> None:
    t = a.tiling
    _clear_target_outputs(a)
    r0, r1 = t.vector_rows(ac.get_block_idx())
    n = r1 - r0
    if n == 0:
        return
    ub = ac.alloc_local(TPosition.VECCALC, n, float32)
    ub.fill(-np.inf)
    ac.sync_pipes(HardEvent.V_MTE3)
    for cube in range(t.block_dim):
        ac.data_copy(a.online_max[cube, r0:r1], ub)
    ac.sync_pipes(HardEvent.MTE3_V)  # the copies out have read ub before it is refilled
    ub.fill(0.0)
    ac.sync_pipes(HardEvent.V_MTE3)
    for cube in range(t.block_dim):
        ac.data_copy(a.online_sum[cube, r0:r1], ub)
    ac.sync_pipes(HardEvent.MTE3_V)
    ub.fill(t.probe_value if probes.initialises_to_sentinel(t.probe) else 0.0)
    ac.sync_pipes(HardEvent.V_MTE3)
    ac.data_copy(a.predicted_logits[r0:r1], ub)


_BLOCK = 32  # bytes: the DataCopy unit


def _clear_target_outputs(a: KernelArgs) -> None:
    """Zero masked_target and target_mask in 32-byte blocks dealt round-robin to the vector cores.

    TargetProcess later writes the same bytes split by rows (8-row chunks), so a block this core
    clears is mostly written by *another* core: S0 is what orders the two.
    """
    t = a.tiling
    vector, n_vector = ac.get_block_idx(), 2 * t.block_dim
    for out in (a.masked_target, a.target_mask):
        if out.size == 0 or not probes.writes_output(t.probe, out.name):
            continue
        per_block = _BLOCK // out.dtype.itemsize
        full, tail = divmod(out.size, per_block)
        mine = range(vector, full, n_vector)
        if len(mine):
            blocks = out[:full * per_block].reshape(full, per_block)[vector::n_vector]
            zeros = ac.alloc_local(TPosition.VECOUT, blocks.shape, out.dtype)
            zeros.fill(0)
            ac.sync_pipes(HardEvent.V_MTE3)
            ac.data_copy(blocks, zeros)
        if tail and full % n_vector == vector:
            zeros = ac.alloc_local(TPosition.VECOUT, tail, out.dtype)
            zeros.fill(0)
            ac.sync_pipes(HardEvent.V_MTE3)
            ac.data_copy(out[full * per_block:], zeros)


# -- stage 2: TargetProcess (vector) ------------------------------------------------------------------


def target_process(a: KernelArgs) -> None:
    t = a.tiling
    r0, r1 = t.vector_rows(ac.get_block_idx())
    n = r1 - r0
    if n == 0:
        return
    target = ac.alloc_local(TPosition.VECIN, n, t.target_dtype)
    ac.data_copy(target, a.target[r0:r1])
    ac.sync_pipes(HardEvent.MTE2_V)
    out_of_shard = (target < t.vocab_start_index) | (target >= t.vocab_end_index)
    masked = ac.alloc_local(TPosition.VECOUT, n, t.target_dtype)
    masked[...] = np.where(out_of_shard, 0, target - t.vocab_start_index)
    ac.sync_pipes(HardEvent.V_MTE3)
    ac.data_copy(a.masked_target_ws[r0:r1], masked)
    if probes.writes_output(t.probe, "masked_target"):
        ac.data_copy(a.masked_target[r0:r1], masked)
    # One bit per row, LSB first. The padding bits of the last byte are computed as for target 0.
    n_bytes = -(-n // 8)
    bits = np.full(n_bytes * 8, (0 < t.vocab_start_index) or (0 >= t.vocab_end_index), dtype=bool)
    bits[:n] = out_of_shard
    mask = ac.alloc_local(TPosition.VECOUT, n_bytes, "uint8")
    mask[...] = np.packbits(bits, bitorder="little")
    ac.sync_pipes(HardEvent.V_MTE3)
    if probes.writes_output(t.probe, "target_mask"):
        ac.data_copy(a.target_mask[r0 // 8:r0 // 8 + n_bytes], mask)


# -- stage 3: CVProcess -----------------------------------------------------------------------------------


def cv_process_cube(a: KernelArgs) -> None:
    """Compute this cube core's tiles into its ping-pong buffers, handing each to the vector cores."""
    t = a.tiling
    cube = ac.get_block_idx()
    a1 = ac.alloc_local(TPosition.A1, (t.base_m, t.base_k), t.input_dtype)
    b1 = ac.alloc_local(TPosition.B1, (t.base_n, t.base_k), t.input_dtype)
    a2 = ac.alloc_local(TPosition.A2, (t.base_m, t.base_k), t.input_dtype)
    b2 = ac.alloc_local(TPosition.B2, (t.base_n, t.base_k), t.input_dtype)
    c1 = ac.alloc_local(TPosition.CO1, (t.base_m, t.base_n), float32)
    tiles = t.tiles_of_cube(cube)
    for k, tile in enumerate(tiles):
        buf = k % 2
        if k >= 2:  # the buffer still holds tile k-2 until both vector cores release it
            ac.cross_core_wait_flag(FLAG_BUFFER_FREE[buf], mode=2, name="W67")
        m0, m1, n0, n1 = t.tile(tile)
        tm, tn = m1 - m0, n1 - n0
        acc = c1[:tm, :tn]
        if k:
            ac.sync_pipes(HardEvent.FIX_M)  # the previous tile has left L0C before the matmul rewrites it
        if t.h == 0:
            acc.fill(0.0)
        for k0 in range(0, t.h, t.base_k):
            kw = min(t.base_k, t.h - k0)
            if k or k0:
                ac.sync_pipes(HardEvent.MTE1_MTE2)  # L1 was loaded into L0 before it is refilled
            ac.data_copy(a1[:tm, :kw], a.input[m0:m1, k0:k0 + kw])
            ac.data_copy(b1[:tn, :kw], a.weight[n0:n1, k0:k0 + kw])
            ac.sync_pipes(HardEvent.MTE2_MTE1)
            if k or k0:
                ac.sync_pipes(HardEvent.M_MTE1)  # the last matmul has read L0A/L0B
            ac.load_data(a2[:tm, :kw], a1[:tm, :kw])
            ac.load_data(b2[:tn, :kw], b1[:tn, :kw])
            ac.sync_pipes(HardEvent.MTE1_M)
            ac.mmad(acc, a2[:tm, :kw], b2[:tn, :kw], accumulate=k0 > 0, transpose_b=True)
        ac.sync_pipes(HardEvent.M_FIX)
        ac.fixpipe(a.tile_buffers[cube, buf, :tm, :tn], acc)
        if t.return_logits and probes.writes_output(t.probe, "vocab_parallel_logits"):
            ac.fixpipe(a.vocab_parallel_logits[m0:m1, n0:n1], acc)
        # Raised on PIPE_FIX: the vector cores are told only once the tile has landed in GM.
        ac.cross_core_set_flag(FLAG_TILE_READY, mode=2, pipe=Pipe.FIX)
    # Take back the last releases so that no flag is left set when the kernel ends.
    for k in range(max(0, len(tiles) - 2), len(tiles)):
        ac.cross_core_wait_flag(FLAG_BUFFER_FREE[k % 2], mode=2, name="W67")


def cv_process_vector(a: KernelArgs) -> None:
    """For each tile of this AI core: online max/sum of our half of its rows, gather the target logit."""
    t = a.tiling
    vector = ac.get_block_idx()
    cube, sub = vector // 2, ac.get_subblock_idx()
    half_m = (t.base_m + 1) // 2
    tile_ub = ac.alloc_local(TPosition.VECIN, (half_m, t.base_n), t.tile_dtype)
    x_ub = ac.alloc_local(TPosition.VECCALC, (half_m, t.base_n), float32)
    max_ub = ac.alloc_local(TPosition.VECCALC, half_m, float32)
    sum_ub = ac.alloc_local(TPosition.VECCALC, half_m, float32)
    target_ub = ac.alloc_local(TPosition.VECIN, half_m, t.target_dtype)
    gathered_ub = ac.alloc_local(TPosition.VECOUT, half_m, float32)
    for k, tile in enumerate(t.tiles_of_cube(cube)):
        buf = k % 2
        ac.cross_core_wait_flag(FLAG_TILE_READY, mode=2, name="W5")
        m0, m1, n0, n1 = t.tile(tile)
        ra, rb = t.half_rows(m0, m1, sub)
        nr, tn = rb - ra, n1 - n0
        if nr:
            if k:
                # The last tile's copies out have read the UB buffers (and landed in the GM rows
                # read back below) before they are refilled.
                ac.sync_pipes(HardEvent.MTE3_MTE2)
                ac.sync_pipes(HardEvent.MTE3_V)
            x_tile, x = tile_ub[:nr, :tn], x_ub[:nr, :tn]
            ac.data_copy(x_tile, a.tile_buffers[cube, buf, ra - m0:rb - m0, :tn])
            ac.sync_pipes(HardEvent.MTE2_V)
            ac.cast(x, x_tile)
            _update_online_max_sum(a, x, cube, ra, rb, max_ub[:nr], sum_ub[:nr])
            # The gather reads the masked targets, which TargetProcess wrote on *other* vector
            # cores: only S1 orders this read after those writes.
            masked = target_ub[:nr]
            ac.data_copy(masked, a.masked_target_ws[ra:rb])
            ac.sync_pipes(HardEvent.MTE2_V)
            gathered = gathered_ub[:nr]
            dependency = probes.copied_dependency(t.probe)
            if dependency:
                copy_dependency(dependency, x, masked, n0, gathered)
            else:
                gather_target_logit(x, masked, n0, gathered, probes.pipe_barriers(t.probe))
            ac.sync_pipes(HardEvent.V_MTE3)
            if probes.cv_writes_predicted(t.probe):
                ac.set_atomic_add()
                ac.data_copy(a.predicted_logits[ra:rb], gathered)
                ac.set_atomic_none()
        ac.cross_core_set_flag(FLAG_BUFFER_FREE[buf], mode=2)


def gather_target_logit(x: np.ndarray, masked: np.ndarray, n0: int, out: np.ndarray, barriers: bool) -> None:
    """out[r] = x[r, masked[r] - n0] where that column is in this tile, else 0.

    ``barriers`` puts a PipeBarrier<PIPE_ALL> between every step (probe O7): it orders this core's
    pipes only, so it cannot make another core's masked targets arrive sooner.
    """
    if barriers:
        ac.pipe_barrier()
    col = masked.astype(np.int64) - n0
    if barriers:
        ac.pipe_barrier()
    hit = (col >= 0) & (col < x.shape[1])
    if barriers:
        ac.pipe_barrier()
    picked = x[np.arange(x.shape[0]), np.clip(col, 0, x.shape[1] - 1)]
    if barriers:
        ac.pipe_barrier()
    out[...] = np.where(hit, picked, 0.0)
    if barriers:
        ac.pipe_barrier()


def copy_dependency(dependency: str, x: np.ndarray, masked: np.ndarray, n0: int, out: np.ndarray) -> None:
    """Probe O8: hand predicted_logits one of its inputs instead of the gathered logit.

    The values are chosen so that a correct run is exactly reproducible whatever the order of the
    atomic adds: the cube result only from the row's first tile (one term), masked targets as
    small integers (exact float sums).
    """
    if dependency == "vocab_parallel_logits":
        out[...] = x[:, 0] if n0 == 0 else 0.0
    else:
        out[...] = masked


def _update_online_max_sum(a: KernelArgs, x: np.ndarray, cube: int, ra: int, rb: int,
                           running_max: np.ndarray, running_sum: np.ndarray) -> None:
    gm_max, gm_sum = a.online_max[cube, ra:rb], a.online_sum[cube, ra:rb]
    ac.data_copy(running_max, gm_max)
    ac.data_copy(running_sum, gm_sum)
    ac.sync_pipes(HardEvent.MTE2_V)
    new_max = np.maximum(running_max, x.max(axis=1))
    running_sum *= np.exp(running_max - new_max)
    running_sum += np.exp(x - new_max[:, None]).sum(axis=1)
    running_max[...] = new_max
    ac.sync_pipes(HardEvent.V_MTE3)
    ac.data_copy(gm_max, running_max)
    ac.data_copy(gm_sum, running_sum)


# -- stage 4: AllReduceProcess (vector) ---------------------------------------------------------------


def all_reduce_process(a: KernelArgs) -> None:
    t = a.tiling
    r0, r1 = t.vector_rows(ac.get_block_idx())
    n = r1 - r0
    if n == 0:
        return
    maxes = ac.alloc_local(TPosition.VECIN, (t.block_dim, n), float32)
    sums = ac.alloc_local(TPosition.VECIN, (t.block_dim, n), float32)
    ac.data_copy(maxes, a.online_max[:, r0:r1])
    ac.data_copy(sums, a.online_sum[:, r0:r1])
    ac.sync_pipes(HardEvent.MTE2_V)
    global_max = ac.alloc_local(TPosition.VECOUT, n, float32)
    global_max[...] = maxes.max(axis=0)
    total = ac.alloc_local(TPosition.VECOUT, n, float32)
    total[...] = (sums * np.exp(maxes - global_max)).sum(axis=0)
    target = ac.alloc_local(TPosition.VECIN, n, t.target_dtype)
    ac.data_copy(target, a.target[r0:r1])
    raw = ac.alloc_local(TPosition.VECCALC, n, float32)
    ac.data_copy(raw, a.predicted_logits[r0:r1])
    ac.sync_pipes(HardEvent.MTE2_V)
    out_of_shard = (target < t.vocab_start_index) | (target >= t.vocab_end_index)
    ac.sync_pipes(HardEvent.V_MTE3)
    if probes.writes_output(t.probe, "logits_max"):
        ac.data_copy(a.logits_max[r0:r1], global_max)
    if probes.writes_output(t.probe, "sum_exp_logits"):
        ac.data_copy(a.sum_exp_logits[r0:r1], total)
    if probes.allreduce_writes_predicted(t.probe):
        raw[...] = np.where(out_of_shard, 0.0, raw - global_max)
        ac.sync_pipes(HardEvent.V_MTE3)
        ac.data_copy(a.predicted_logits[r0:r1], raw)
