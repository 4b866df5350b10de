"""Kernels for the intra-core pipe tests (tests/test_pipes.py). All are marked ``api.pipelined``:
their data movement runs on the asynchronous pipes."""

from __future__ import annotations

from mpnpu import api
from mpnpu.api import HardEvent, Pipe, TPosition


@api.pipelined
def last_copy_wins(x, out, rounds: int) -> None:
    """Vector core 0: ``rounds`` MTE2 copies of different rows into one buffer, then copy it out.

    MTE2 executes in issue order, so the buffer holds the last row when MTE3 copies it out."""
    if not (api.is_aiv() and api.get_block_idx() == 0):
        return
    n = x.shape[1]
    ub = api.alloc_local(TPosition.VECIN, n, "int32")
    for j in range(rounds):
        api.data_copy(ub, x[j])
    api.set_flag(HardEvent.MTE2_MTE3, 0)
    api.wait_flag(HardEvent.MTE2_MTE3, 0)
    for j in range(rounds):  # MTE3 in order too: out ends with the last copy
        api.data_copy(out[j % 2], ub)
    api.data_copy(out[rounds % 2], ub)


@api.pipelined
def barrier_then_read(x, out) -> None:
    """Vector core 0: copy in, pipe_barrier(MTE2), read the buffer with numpy, copy the sum out."""
    if not (api.is_aiv() and api.get_block_idx() == 0):
        return
    ub = api.alloc_local(TPosition.VECIN, x.shape[0], "int32")
    api.data_copy(ub, x)
    api.pipe_barrier(Pipe.MTE2)
    total = api.alloc_local(TPosition.VECOUT, 1, "int32")
    total[0] = int(ub.sum())
    api.data_copy(out, total)


@api.pipelined
def wait_without_set(on_kernel_thread: bool) -> None:
    """wait_flag with no set_flag anywhere: PIPE_V (kernel thread) or MTE2 (a pipe thread) waits."""
    if not (api.is_aiv() and api.get_block_idx() == 0):
        return
    if on_kernel_thread:
        api.wait_flag(HardEvent.MTE2_V, 3)
    else:
        api.wait_flag(HardEvent.V_MTE2, 3)


@api.pipelined
def bad_event_id() -> None:
    if api.is_aiv():
        api.set_flag(HardEvent.MTE2_V, 8)


@api.pipelined
def publish_then_flag(data, seen, value: int, n: int, pipe: Pipe = Pipe.MTE3) -> None:
    """Vector cores copy ``value`` rows to GM on MTE3 and raise flag 4 on PIPE_MTE3 (mode 2);
    the cube core waits for it and copies what GM holds into ``seen``."""
    if api.is_aiv():
        v = api.get_subblock_idx()
        ub = api.alloc_local(TPosition.VECOUT, n, "int32")
        ub[...] = value + v
        api.data_copy(data[v], ub)
        api.cross_core_set_flag(4, mode=2, pipe=pipe)
    else:
        api.cross_core_wait_flag(4, mode=2)
        l1 = api.alloc_local(TPosition.A1, (2, n), "int32")
        api.data_copy(l1, data)
        api.pipe_barrier(Pipe.MTE2)
        api.data_copy(seen, l1)


@api.pipelined
def set_on_mte3_times(times: int) -> None:
    """Vector core 0 sets cross-core flag 3 (mode 2) ``times`` times on PIPE_MTE3; nobody waits."""
    if not api.is_aiv() or api.get_block_idx() != 0:
        return
    for _ in range(times):
        api.cross_core_set_flag(3, mode=2, pipe=Pipe.MTE3)  # the line an overflow must name
