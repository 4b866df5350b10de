"""Who am I: the core a kernel runs on, its launch's shape, the kernel's stages and its pipe mark."""

from __future__ import annotations

import contextlib
from typing import Callable, TypeVar

from mpnpu.runtime import kcontext
from mpnpu.runtime.topology import CoreType

__all__ = [
    "CoreType", "core_label", "get_block_idx", "get_block_num", "get_core_type", "get_subblock_idx",
    "get_subblock_num", "get_task_ration", "is_aic", "is_aiv", "pipelined", "stage",
]

_ctx = kcontext.current

K = TypeVar("K", bound=Callable[..., object])


def pipelined(kernel: K) -> K:
    """Mark a kernel that orders its own pipes (set_flag / wait_flag, TQue, pipe_barrier, the
    ``pipe`` of cross-core sets), as every Ascend C kernel must: its data movement then runs on
    asynchronous pipes. A kernel without the mark runs its pipes in order (what it was written
    for); ``RuntimeOptions(pipes="async" | "sync")`` overrides the mark either way."""
    kernel.__mpnpu_pipes__ = "async"  # type: ignore[attr-defined]  # read by mpnpu.runtime.core
    return kernel


def get_block_idx() -> int:
    """Cube core k: k. Vector core v: v, in [0, 2 * block_dim)."""
    return _ctx().info.block_idx


def get_block_num() -> int:
    """Number of AI cores of the launch (block_dim)."""
    return _ctx().topology.block_dim


def get_subblock_idx() -> int:
    """0 or 1: which of its AI core's two vector cores this is (0 on cube cores)."""
    return _ctx().info.sub_block_idx


def get_subblock_num() -> int:
    """Vector cores per AI core seen from this core: 2 on vector cores, 1 on cube cores."""
    return 2 if _ctx().info.core_type is CoreType.VECTOR else 1


get_task_ration = get_subblock_num


def get_core_type() -> CoreType:
    return _ctx().info.core_type


def is_aic() -> bool:
    """ASCEND_IS_AIC: this is a cube core."""
    return _ctx().info.core_type is CoreType.CUBE


def is_aiv() -> bool:
    """ASCEND_IS_AIV: this is a vector core."""
    return _ctx().info.core_type is CoreType.VECTOR


def core_label() -> str:
    return _ctx().info.label


def stage(name: str) -> contextlib.AbstractContextManager[None]:
    """Mark a kernel stage (e.g. ``with stage("TargetProcess"):``) for traces and race reports."""
    return kcontext.stage(_ctx(), name)
