"""reduce-early: RMSNorm whose rows are split across vector cores, reading the other cores' partial
sums without the barrier of the two-phase reduction (see kernel.py).

``OPERATOR_CXX`` (reduce-early-cxx) is the same kernel written in Ascend C (ascendc/reduce_early.cpp),
with the same cases and golden: a vector-only kernel whose incident lacks the SyncAll after
``PartialSumSq()``."""

import os

from mpnpu import KernelOperator
from mpnpu.ascendc.operator import AscendCOperator, Tiling, first_after

from ..ascendc_common import dtype_defines, tensors_then_tiling
from . import cases, golden, syncs

OPERATOR = KernelOperator(
    name="reduce-early",
    kernel="mpnpu.kernels.reduce_early.kernel:main",
    sync_points=syncs.SYNC_POINTS,
    incident=syncs.INCIDENT,
    stages=syncs.STAGES,
    make=cases.make,
    golden=golden.golden,
    description="cross-core reduction read too early: partial sums read before every core wrote them",
)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "ascendc/reduce_early.cpp"

OPERATOR_CXX = AscendCOperator(
    name="reduce-early-cxx",
    sources=(SOURCE,),
    entry="reduce_early",
    make=cases.make,
    golden=golden.golden,
    defines=dtype_defines("DTYPE_X", "x"),
    tiling=Tiling("ascendc/reduce_early_tiling.h", "ReduceEarlyTilingData",
                  fill=lambda case: {"rows": case.inputs["x"].shape[0], "hidden": case.inputs["x"].shape[1],
                                     "eps": case.params[0]}),
    args=tensors_then_tiling,
    incident=first_after(SOURCE, r"^\s*PartialSumSq\(\);", "SyncAll"),
    stages=syncs.STAGES,
    root=HERE,
    description="cross-core reduction read too early (Ascend C): partial sums read before every core wrote them",
)
