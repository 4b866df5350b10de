"""aiv-barrier: matmul + bias + ReLU whose vector cores order the cube core's matmul result with
SyncAll<true>, a barrier the cube core is no party to (see kernel.py).

``OPERATOR_CXX`` (aiv-barrier-cxx) is the same kernel written in Ascend C (ascendc/aiv_barrier.cpp:
``Prepare()`` with the cube core's matmul over K-chunks (ND2NZ, LoadData, Mmad, one Fixpipe) and the
vector cores' bias widening,
``SyncAll<true>()``, ``SyncAll<false>()``, the vector cores' ``Epilogue()``), with the same cases,
golden and tolerance; its incident lacks the ``SyncAll<false>()``."""

import os

from mpnpu import Case, KernelOperator
from mpnpu.ascendc.operator import AscendCOperator, Tiling, first_after

from ..ascendc_common import dtype_defines, tensors_then_tiling
from . import cases, golden, syncs

OPERATOR = KernelOperator(
    name="aiv-barrier",
    kernel="mpnpu.kernels.aiv_barrier.kernel:main",
    sync_points=syncs.SYNC_POINTS,
    incident=syncs.INCIDENT,
    stages=syncs.STAGES,
    make=cases.make,
    golden=golden.golden,
    tolerance=golden.tolerance,
    description="AIV-only barrier where the cube is a party: vector cores read the cube's result after SyncAll<true>",
)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "ascendc/aiv_barrier.cpp"


def tiling_of(case: Case) -> dict[str, int]:
    """The tiling struct's values for a case: the shapes and the K-chunk."""
    (m, k), n = case.inputs["x"].shape, case.inputs["w"].shape[1]
    return {"m": m, "n": n, "k": k, "baseK": case.params[0]}


OPERATOR_CXX = AscendCOperator(
    name="aiv-barrier-cxx",
    sources=(SOURCE,),
    entry="aiv_barrier",
    make=cases.make,
    golden=golden.golden,
    tolerance=golden.tolerance,
    defines=dtype_defines("DTYPE_X", "x"),
    tiling=Tiling("ascendc/aiv_barrier_tiling.h", "AivBarrierTilingData", fill=tiling_of),
    args=tensors_then_tiling,
    incident=first_after(SOURCE, r"^\s*SyncAll<true>\(\);", "SyncAll"),
    stages=syncs.STAGES,
    root=HERE,
    description="AIV-only barrier where the cube is a party (Ascend C): vector cores read the cube's result "
                "after SyncAll<true>",
)
