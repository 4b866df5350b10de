"""VECIN read before MTE2 filled it: the queue's EnQue/DeQue (MTE2 -> V) dropped.

``OPERATOR_CXX`` (vecin-early-read-cxx) is the same kernel written in Ascend C
(ascendc/vecin_early_read.cpp: CopyIn / Compute / CopyOut), with the same cases and golden; its
incident drops Compute's DeQue of the input queue, its variant vecout-reuse Compute's AllocTensor
of the output queue."""

from __future__ import annotations

import os

import numpy as np

from mpnpu import Case, KernelOperator
from mpnpu.ascendc.operator import AscendCOperator, Tiling, first_after

from ..ascendc_common import tensors_then_tiling

KERNEL = "mpnpu.kernels.vecin_early_read.kernel:main"  # main(x, y, n_tiles, tile)


def make(rng: np.random.Generator, index: int) -> Case:
    tile = int(rng.choice([256, 512, 1024, 2048]))
    n_tiles = int(rng.integers(2, 17))
    x = rng.standard_normal(n_tiles * tile).astype(np.float32)
    return Case(index, inputs={"x": x}, outputs={"y": ((n_tiles * tile,), "float32")},
                params=(n_tiles, tile), label=f"{n_tiles} tiles x {tile}")


def golden(case: Case) -> dict[str, np.ndarray]:
    return {"y": 2.0 * case.value("x")}


OPERATOR = KernelOperator(
    name="vecin-early-read",
    kernel=KERNEL,
    sync_points={
        "QIN:MTE2_V": "DeQue waits for MTE2 to fill the VECIN buffer (EnQue -> DeQue) - missing in the incident",
        "QIN:V_MTE2": "AllocTensor waits for FreeTensor before MTE2 refills a VECIN buffer",
        "QOUT:V_MTE3": "DeQue: MTE3 waits for PIPE_V to finish the VECOUT buffer",
        "QOUT:MTE3_V": "AllocTensor waits for MTE3 to copy a VECOUT buffer out before PIPE_V rewrites it",
    },
    incident=frozenset({"QIN:MTE2_V"}),
    more_variants={"vecout-reuse": frozenset({"QOUT:MTE3_V"})},
    make=make,
    golden=golden,
    stages=("Scale",),
    description="y = 2x through double-buffered VECIN/VECOUT queues on the vector cores",
)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "ascendc/vecin_early_read.cpp"

OPERATOR_CXX = AscendCOperator(
    name="vecin-early-read-cxx",
    sources=(SOURCE,),
    entry="vecin_early_read",
    make=make,
    golden=golden,
    tiling=Tiling("ascendc/vecin_early_read_tiling.h", "VecinEarlyReadTilingData",
                  fill=lambda case: {"tileNum": case.params[0], "tileLength": case.params[1]}),
    args=tensors_then_tiling,
    incident=first_after(SOURCE, r"void Compute\(", "DeQue"),
    more_variants={"vecout-reuse": first_after(SOURCE, r"void Compute\(", "AllocTensor")},
    stages=("CopyIn", "Compute", "CopyOut"),
    root=HERE,
    description="y = 2x through double-buffered VECIN/VECOUT queues (Ascend C), Compute's DeQue dropped",
)
