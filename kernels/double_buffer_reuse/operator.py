"""Double-buffer reuse without MTE3 -> MTE2: a ping-pong buffer refilled before its copy-out."""

from __future__ import annotations

import numpy as np

from mpnpu import Case, KernelOperator

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
