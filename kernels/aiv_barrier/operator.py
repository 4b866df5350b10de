"""aiv-barrier: matmul + bias + ReLU whose vector cores order the cube core's matmul result with
SyncAll<true>, a barrier the cube core is no party to (see kernel.py)."""

from mpnpu import KernelOperator

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
