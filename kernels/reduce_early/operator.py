"""reduce-early: RMSNorm whose rows are split across vector cores, reading the other cores' partial
sums without the barrier of the two-phase reduction (see kernel.py)."""

from mpnpu import KernelOperator

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
