"""accum-init: split-K matmul whose output is zeroed by the vector cores and accumulated atomically
by the cube cores, without the SyncAll between the two (see kernel.py)."""

from mpnpu import KernelOperator

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
