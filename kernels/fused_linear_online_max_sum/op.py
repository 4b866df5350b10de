"""Host side of FLOMS: check inputs, allocate GM, compute the tiling, launch, copy outputs back.

What ``torch_npu.npu_fused_linear_online_max_sum`` does around the kernel. Every tensor of a call
comes from the device's caching allocator and goes back to it when the call returns, so the next
call is handed the same blocks with this call's data still in them — as on the device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from mpnpu import Device, LaunchOptions, LaunchResult, UsageError

from .probes import check_probe
from .spec import (
    OUTPUT_NAMES,
    check_inputs,
    input_dtype_of,
    output_specs,
    target_dtype_of,
)
from .syncs import SYNC_POINTS
from .tiling import DEFAULT_BASE_K, DEFAULT_BASE_M, DEFAULT_BASE_N, Tiling, make_tiling

KERNEL = "mpnpu.kernels.fused_linear_online_max_sum.kernel:main"


@dataclass(frozen=True)
class TileSizes:
    base_m: int = DEFAULT_BASE_M
    base_n: int = DEFAULT_BASE_N
    base_k: int = DEFAULT_BASE_K


@dataclass
class FlomsRun:
    """Outputs of one call (host copies, keyed by spec.OUTPUT_NAMES) and how the launch went."""

    outputs: dict[str, np.ndarray]
    launch: LaunchResult
    tiling: Tiling


def fused_linear_online_max_sum(
    device: Device,
    input: np.ndarray,
    weight: np.ndarray,
    target: np.ndarray,
    vocab_start_index: int,
    vocab_end_index: int,
    input_dtype: str,
    return_logits: bool = False,
    *,
    tiles: TileSizes = TileSizes(),
    drop_syncs: Iterable[str] = (),
    probe: str = "",
    probe_value: float = 0.0,
    trace: bool = False,
    kernel: str = KERNEL,
) -> FlomsRun:
    """Run the operator on ``device``. Inputs are numpy storage arrays (bfloat16 as uint16 bits).
    ``kernel``: the kernel to launch (default the FLOMS kernel; a benchmark may wrap it).

    Bad inputs raise :class:`mpnpu.errors.UsageError` before anything is allocated.
    """
    in_dt = input_dtype_of(input_dtype)
    tgt_dt = target_dtype_of(np.asarray(target).dtype)
    check_inputs(input, weight, target, vocab_start_index, vocab_end_index, in_dt.name, tgt_dt.name)
    if isinstance(drop_syncs, str):
        raise UsageError(f"drop_syncs must be a collection of sync point names, e.g. ('S1',), not {drop_syncs!r}")
    dropped = frozenset(drop_syncs)
    unknown = sorted(dropped - SYNC_POINTS.keys())
    if unknown:  # a typo must not silently run the kernel with every sync in place
        raise UsageError(f"unknown sync point {', '.join(unknown)} in drop_syncs; known: {', '.join(SYNC_POINTS)}")
    bt, h = input.shape
    v = weight.shape[0]
    tiling = make_tiling(
        bt, h, v, int(vocab_start_index), int(vocab_end_index), in_dt.name, tgt_dt.name, bool(return_logits),
        device.block_dim, tiles.base_m, tiles.base_n, tiles.base_k, check_probe(probe), float(probe_value),
    )
    specs = output_specs(bt, v, in_dt.name, tgt_dt.name, bool(return_logits))
    with device.scope() as gm:
        x = gm.to_device("input", input, in_dt)
        w = gm.to_device("weight", weight, in_dt)
        tgt = gm.to_device("target", target, tgt_dt)
        outs = {name: gm.empty(name, shape, dtype) for name, (shape, dtype) in specs.items()}
        workspace = gm.empty("workspace", tiling.workspace_bytes, "uint8")
        launch = device.launch_with(
            LaunchOptions(drop_syncs=dropped, trace=trace),
            kernel, x, w, tgt, *(outs[name] for name in OUTPUT_NAMES), workspace, tiling,
        )
        outputs = {name: device.to_host(outs[name]) for name in OUTPUT_NAMES}
    return FlomsRun(outputs, launch, tiling)
