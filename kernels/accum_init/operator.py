"""accum-init: split-K matmul whose output is zeroed by the vector cores and accumulated atomically
by the cube cores, without the SyncAll between the two (see kernel.py).

``OPERATOR_CXX`` (accum-init-cxx) is the same kernel written in Ascend C (ascendc/accum_init.cpp: the
vector cores' ``InitOutput()``, ``SyncAll<false>()``, the cube cores' ``SplitKMatmul()``: ND2NZ copies,
LoadData, Mmad and an atomic Fixpipe per K-chunk), with the same cases, golden and tolerance; its
incident lacks the SyncAll after ``InitOutput()``."""

import os

from mpnpu import Case, KernelOperator
from mpnpu.ascendc.operator import AscendCOperator, Tiling, first_after

from ..ascendc_common import dtype_defines, tensors_then_tiling
from . import cases, golden, syncs

OPERATOR = KernelOperator(
    name="accum-init",
    kernel="mpnpu.kernels.accum_init.kernel:main",
    sync_points=syncs.SYNC_POINTS,
    incident=syncs.INCIDENT,
    stages=syncs.STAGES,
    make=cases.make,
    golden=golden.golden,
    tolerance=golden.tolerance,
    description="accumulator not yet initialised: split-K matmul, atomic adds race the vector cores' zeroing",
)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "ascendc/accum_init.cpp"


def tiling_of(case: Case) -> dict[str, int]:
    """The tiling struct's values for a case: the shapes and the K-chunk."""
    (m, k), n = case.inputs["a"].shape, case.inputs["b"].shape[1]
    return {"m": m, "n": n, "k": k, "baseK": case.params[0]}


OPERATOR_CXX = AscendCOperator(
    name="accum-init-cxx",
    sources=(SOURCE,),
    entry="accum_init",
    make=cases.make,
    golden=golden.golden,
    tolerance=golden.tolerance,
    defines=dtype_defines("DTYPE_A", "a"),
    tiling=Tiling("ascendc/accum_init_tiling.h", "AccumInitTilingData", fill=tiling_of),
    args=tensors_then_tiling,
    incident=first_after(SOURCE, r"^\s*InitOutput\(\);", "SyncAll"),
    stages=syncs.STAGES,
    root=HERE,
    description="accumulator not yet initialised (Ascend C): split-K matmul, atomic adds race the vector "
                "cores' zeroing",
)
