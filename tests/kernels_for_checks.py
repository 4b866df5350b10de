"""Kernels for initcheck and synccheck (tests/test_checks.py): each ``mode`` has one defect, "clean"
none. Vector core 0 of block 0 does the work; the other cores return."""

from __future__ import annotations

from mpnpu import api
from mpnpu.api import HardEvent, Pipe, TPosition


@api.pipelined
def copy_through(x, y, ws, mode: str) -> None:
    """y = x through a UB buffer (MTE2 in, MTE3 out), with the defect ``mode`` names."""
    if not (api.is_aiv() and api.get_block_idx() == 0):
        return
    n = x.shape[0]
    ub = api.alloc_local(TPosition.VECIN, n, "float32")
    src = ws if mode == "uninit" else x
    api.data_copy(ub, src)  # CHECK: copy-in
    if mode == "duplicate":
        api.set_flag(HardEvent.MTE2_MTE3, 0)  # CHECK: first set
    if mode == "redundant":
        api.set_flag(HardEvent.MTE2_MTE3, 0)  # CHECK: redundant set
        api.pipe_barrier(Pipe.ALL)
        api.wait_flag(HardEvent.MTE2_MTE3, 0)  # CHECK: redundant wait
    else:
        api.set_flag(HardEvent.MTE2_MTE3, 0)  # CHECK: set
        api.wait_flag(HardEvent.MTE2_MTE3, 0)
    if mode == "unwaited":
        api.set_flag(HardEvent.MTE2_MTE3, 1)  # CHECK: unwaited set
    api.data_copy(y, ub)


def pending_flag(y, mode: str) -> None:
    """The cube core raises a cross-core flag for the vector cores of its AI core; vector core 0
    waits for it, vector core 1 only in "clean"."""
    if api.is_aic():
        api.cross_core_set_flag(3, mode=2, pipe=Pipe.S)  # CHECK: cross-core set
    elif api.get_block_idx() == 0 or mode == "clean":
        api.cross_core_wait_flag(3, mode=2)
