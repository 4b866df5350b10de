"""flag-reuse: a cube -> vector tile pipeline through one GM slot, without the vector -> cube
"slot free" handshake (see kernel.py). Variant ``lost-set`` drops only the release: a deadlock."""

from mpnpu import KernelOperator

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
