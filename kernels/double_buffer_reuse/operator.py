"""Double-buffer reuse without MTE3 -> MTE2: a ping-pong buffer refilled before its copy-out.

``OPERATOR_CXX`` (double-buffer-reuse-cxx) is the same kernel written in Ascend C
(ascendc/double_buffer_reuse.cpp, stage ``AddOne()``), with the same cases and golden; its incident
drops the loop's WaitFlag<MTE3_MTE2>."""

from __future__ import annotations

import os

import numpy as np

from mpnpu import Case, KernelOperator
from mpnpu.ascendc.operator import AscendCOperator, Tiling, first_after

from ..ascendc_common import tensors_then_tiling

KERNEL = "mpnpu.kernels.double_buffer_reuse.kernel:main"  # main(x, y, n_tiles, tile)


def make(rng: np.random.Generator, index: int) -> Case:
    tile = int(rng.choice([256, 512, 1024, 2048]))
    n_tiles = int(rng.integers(4, 25))
    x = rng.standard_normal(n_tiles * tile).astype(np.float32)
    return Case(index, inputs={"x": x}, outputs={"y": ((n_tiles * tile,), "float32")},
                params=(n_tiles, tile), label=f"{n_tiles} tiles x {tile}")


def golden(case: Case) -> dict[str, np.ndarray]:
    return {"y": case.value("x") + 1.0}


OPERATOR = KernelOperator(
    name="double-buffer-reuse",
    kernel=KERNEL,
    sync_points={
        "R": "MTE2 waits for the buffer's copy-out (MTE3 -> MTE2) before refilling it - missing in the incident",
        "F": "PIPE_V waits for the copy-in (MTE2 -> V)",
        "C": "MTE3 waits for PIPE_V (V -> MTE3)",
    },
    incident=frozenset({"R"}),
    make=make,
    golden=golden,
    stages=("AddOne",),
    description="y = x + 1 in place in two ping-pong UB buffers, ordered by explicit flags",
)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "ascendc/double_buffer_reuse.cpp"

OPERATOR_CXX = AscendCOperator(
    name="double-buffer-reuse-cxx",
    sources=(SOURCE,),
    entry="double_buffer_reuse",
    make=make,
    golden=golden,
    tiling=Tiling("ascendc/double_buffer_reuse_tiling.h", "DoubleBufferReuseTilingData",
                  fill=lambda case: {"tileNum": case.params[0], "tileLength": case.params[1]}),
    args=tensors_then_tiling,
    incident=first_after(SOURCE, r"LocalTensor<float> buf = pingPongBuf_", "WaitFlag"),
    stages=("AddOne",),
    root=HERE,
    description="y = x + 1 in place in two ping-pong UB buffers (Ascend C), the refill's MTE3 -> MTE2 wait dropped",
)
