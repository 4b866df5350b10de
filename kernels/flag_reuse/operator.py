"""flag-reuse: a cube -> vector tile pipeline through one GM slot, without the vector -> cube
"slot free" handshake (see kernel.py). Variant ``lost-set`` drops only the release: a deadlock.

``OPERATOR_CXX`` (flag-reuse-cxx) is the same kernel written in Ascend C (ascendc/flag_reuse.cpp: a
``TileProducer`` on the cube core and a ``TileConsumer`` on each vector core, both in ``Pipeline()``,
with the same flag ids), with the same cases, golden and tolerance; its incident drops the vector
cores' release (FS) and the cube core's two waits for it (FW, in the loop and after it), its
variant lost-set the release only."""

import os

from mpnpu import Case, KernelOperator
from mpnpu.ascendc.operator import AscendCOperator, Tiling, first_after

from ..ascendc_common import dtype_defines, tensors_then_tiling
from . import cases, golden, syncs

OPERATOR = KernelOperator(
    name="flag-reuse",
    kernel="mpnpu.kernels.flag_reuse.kernel:main",
    sync_points=syncs.SYNC_POINTS,
    incident=syncs.INCIDENT,
    more_variants={"lost-set": syncs.LOST_SET},
    stages=syncs.STAGES,
    make=cases.make,
    golden=golden.golden,
    tolerance=golden.tolerance,
    description="flag reused before it was consumed: the cube overwrites a tile slot the vector cores still read",
)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "ascendc/flag_reuse.cpp"

#: the C++ kernel's sync points of the Python names, located in its source
CXX_FS = first_after(SOURCE, r"^class TileConsumer", "CrossCoreSetFlag")
CXX_FW = (first_after(SOURCE, r"^class TileProducer", "CrossCoreWaitFlag"),
          first_after(SOURCE, r"CrossCoreSetFlag<2, PIPE_FIX>\(FLAG_TILE_READY\)", "CrossCoreWaitFlag"))


def tiling_of(case: Case) -> dict[str, int]:
    """The tiling struct's values for a case: the shapes, the tile width and the K-chunk."""
    (m, k), n = case.inputs["x"].shape, case.inputs["w"].shape[1]
    base_n, base_k = case.params
    return {"m": m, "n": n, "k": k, "baseN": base_n, "baseK": base_k}


OPERATOR_CXX = AscendCOperator(
    name="flag-reuse-cxx",
    sources=(SOURCE,),
    entry="flag_reuse",
    make=cases.make,
    golden=golden.golden,
    tolerance=golden.tolerance,
    defines=dtype_defines("DTYPE_X", "x"),
    tiling=Tiling("ascendc/flag_reuse_tiling.h", "FlagReuseTilingData", fill=tiling_of),
    args=tensors_then_tiling,
    incident=(CXX_FS, *CXX_FW),
    more_variants={"lost-set": CXX_FS},
    stages=syncs.STAGES,
    root=HERE,
    description="flag reused before it was consumed (Ascend C): the cube overwrites a tile slot the vector "
                "cores still read",
)
