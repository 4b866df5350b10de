"""A TCubeTiling for mpnpu's matmul API, by a simple rule of mpnpu's own.

:func:`matmul_tiling` fills every field of ``TCubeTiling`` (include/kernel_tiling/kernel_tiling.h)
for C[M, N] = A[M, K] x B[K, N] on ``cores`` cores, as a dict by field name; :func:`as_fields`
prefixes the names for :meth:`mpnpu.ascendc.tiling.TilingLayout.pack` of a struct holding the
TCubeTiling as a member (``{"cube.baseM": 128, ...}``).

The rule:

- K is not split: ``singleCoreK = K``; ``Ka = Kb = K``.
- C is cut into ``mc x nc`` parts, the factor pair of ``cores`` whose parts are the most square in
  elements (ties: more parts along M); each part is rounded up to a multiple of 16 rows and
  columns (``singleCoreM = align16(ceil(M / mc))``, the same for N), and ``usedCoreNum`` counts the
  parts that hold any of C (``ceil(M / singleCoreM) * ceil(N / singleCoreN)``).
- Base blocks: ``base_m`` / ``base_n`` / ``base_k`` if given, else ``min(128, singleCoreM)``,
  ``min(256, singleCoreN)``, ``min(64, K)``, each rounded up to the fractal (16; baseK to 16 or to
  32 bytes of the input type for 8-bit inputs).
- ``depthA1 = depthB1 = 1`` and ``stepM = stepN = stepKa = stepKb = 1`` (one base block in L1);
  ``iterateOrder = 0`` (down M first); ``dbL0A`` / ``dbL0B`` / ``dbL0C`` are 2 where two base blocks
  fit L0A (64 KiB) / L0B (64 KiB) / L0C (128 KiB), else 1; ``isBias`` as asked; the reserved fields 0.

For M=128 N=256 K=64 half on one core this gives what a CPU-debug test would set by hand:
baseM=128 baseN=256 baseK=64, singleCore* = the whole matrix, usedCoreNum 1, dbL0A 2, dbL0B 2.

Host C++ code computes tilings with ``tiling/tiling_api.h`` (``matmul_tiling::MultiCoreMatmulTiling``),
whose rule gives the same cut and base blocks for such plain requests and also fits L1 (stepKa/depthA1).
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from mpnpu.errors import UsageError
from mpnpu.runtime.config import DEFAULT_SPEC

#: every TCubeTiling field, in the struct's order (all int32)
FIELDS = (
    "usedCoreNum", "M", "N", "Ka", "Kb", "singleCoreM", "singleCoreN", "singleCoreK", "baseM", "baseN", "baseK",
    "depthA1", "depthB1", "stepM", "stepN", "isBias", "transLength", "iterateOrder", "shareMode", "shareL1Size",
    "shareL0CSize", "shareUbSize", "batchM", "batchN", "singleBatchM", "singleBatchN", "stepKa", "stepKb",
    "depthAL1CacheUB", "depthBL1CacheUB", "dbL0A", "dbL0B", "dbL0C", "mxTypePara",
    "ALayoutInfoB", "ALayoutInfoS", "ALayoutInfoN", "ALayoutInfoG", "ALayoutInfoD",
    "BLayoutInfoB", "BLayoutInfoS", "BLayoutInfoN", "BLayoutInfoG", "BLayoutInfoD",
    "CLayoutInfoB", "CLayoutInfoS1", "CLayoutInfoN", "CLayoutInfoG", "CLayoutInfoS2", "BatchNum",
)

#: the chip's L0 sizes (DeviceSpec; include/mpnpu/device_model.h states the same for C++)
L0A_BYTES = DEFAULT_SPEC.l0a_bytes
L0B_BYTES = DEFAULT_SPEC.l0b_bytes
L0C_BYTES = DEFAULT_SPEC.l0c_bytes
#: GM bytes the matmul server needs per AI core for one Matmul object (include/mpnpu/cube/matmul_kfc.h)
KFC_PROTO_BYTES = 64 * 1024
KFC_STAGE_BYTES = 256 * 1024
#: the Matmul objects one REGIST_MATMUL_OBJ takes at most (MAX_OBJECTS there)
KFC_MAX_OBJECTS = 4
#: the system workspace a host asks for with GetLibApiWorkSpaceSize (mpnpu/device_model.h): in one that holds
#: all of it, the matmul server keeps its state at its end, leaving the start to the kernel
SYS_WORKSPACE_BYTES = 16 * 1024 * 1024


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def _grid(m: int, n: int, cores: int) -> tuple[int, int]:
    """The (mc, nc) with mc * nc == cores whose parts are the most square (ties: more along M)."""
    pairs = [(mc, cores // mc) for mc in range(1, cores + 1) if cores % mc == 0]

    def score(p: tuple[int, int]) -> tuple[float, int]:
        pm, pn = math.ceil(m / p[0]), math.ceil(n / p[1])
        return max(pm, pn) / max(1, min(pm, pn)), -p[0]

    return min(pairs, key=score)


def matmul_tiling(m: int, n: int, k: int, *, in_dtype: str = "float16", out_dtype: str = "float32",
                  cores: int = 1, base_m: int | None = None, base_n: int | None = None, base_k: int | None = None,
                  bias: bool = False) -> dict[str, int]:
    """Every TCubeTiling field for C[m, n] = A[m, k] x B[k, n] on ``cores`` cores (see the module)."""
    for name, v in (("m", m), ("n", n), ("k", k), ("cores", cores)):
        if not isinstance(v, (int, np.integer)) or v <= 0:
            raise UsageError(f"matmul_tiling: {name} must be a positive integer, got {v!r}")
    item = np.dtype(in_dtype).itemsize
    out_item = np.dtype(out_dtype).itemsize
    del out_item  # (the L0C accumulator is 4 bytes whatever C's type)
    mc, nc = _grid(m, n, cores)
    single_m = _align(math.ceil(m / mc), 16)
    single_n = _align(math.ceil(n / nc), 16)
    k_align = 32 if item == 1 else 16
    bm = _align(base_m if base_m else min(128, single_m), 16)
    bn = _align(base_n if base_n else min(256, single_n), 16)
    bk = _align(base_k if base_k else min(64, k), k_align)
    acc = 4
    if bm * bk * item > L0A_BYTES or bn * bk * item > L0B_BYTES or bm * bn * acc > L0C_BYTES:
        raise UsageError(f"matmul_tiling: base blocks {bm}x{bn}x{bk} do not fit L0A/L0B (64 KiB) or L0C (128 KiB)")
    used = math.ceil(m / single_m) * math.ceil(n / single_n)
    t = dict.fromkeys(FIELDS, 0)
    t.update(
        usedCoreNum=used, M=m, N=n, Ka=k, Kb=k, singleCoreM=single_m, singleCoreN=single_n, singleCoreK=k,
        baseM=bm, baseN=bn, baseK=bk, depthA1=1, depthB1=1, stepM=1, stepN=1, stepKa=1, stepKb=1,
        isBias=1 if bias else 0, iterateOrder=0,
        dbL0A=2 if 2 * bm * bk * item <= L0A_BYTES else 1,
        dbL0B=2 if 2 * bn * bk * item <= L0B_BYTES else 1,
        dbL0C=2 if 2 * bm * bn * acc <= L0C_BYTES else 1,
    )
    return t


def as_fields(tiling: Mapping[str, int], prefix: str) -> dict[str, int]:
    """``tiling``'s fields named as members of a struct member ``prefix`` ("cube" -> "cube.baseM")."""
    return {f"{prefix}.{k}": int(v) for k, v in tiling.items()}


def workspace_bytes(block_dim: int, n_objects: int = 1) -> int:
    """GM bytes of the system workspace REGIST_MATMUL_OBJ needs on ``block_dim`` AI cores."""
    return block_dim * (KFC_PROTO_BYTES + n_objects * 2 * KFC_STAGE_BYTES)
