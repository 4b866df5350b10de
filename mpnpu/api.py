"""The kernel-facing device API: Ascend C's names in snake_case, the same in every core process.

A kernel is a plain Python function run by every core of a launch (``Device.launch``). It learns
who it is from ``get_block_idx()`` / ``get_core_type()`` and moves data only through this module:

=====================================  =========================================================
Ascend C                               mpnpu.api
=====================================  =========================================================
GetBlockIdx / GetBlockNum              get_block_idx / get_block_num
GetSubBlockIdx / GetTaskRation         get_subblock_idx / get_task_ration
ASCEND_IS_AIC / ASCEND_IS_AIV          is_aic() / is_aiv()
TPipe::InitBuffer, TBuf::Get           TPipe.init_buffer, TBuf.get  (alloc_local for short)
DataCopy (GM <-> local)                data_copy
SetAtomicAdd / SetAtomicNone           set_atomic_add / set_atomic_none
SyncAll<false>() / SyncAll<true>()     sync_all() / sync_all(aiv_only=True)
PipeBarrier<PIPE_X>()                  pipe_barrier(Pipe.X)    (orders one core's pipes only)
SetFlag / WaitFlag, TQue               set_flag / wait_flag, TQue   (see mpnpu.pipe_api)
CrossCoreSetFlag<mode, pipe>(id)       cross_core_set_flag(id, mode=..., pipe=...)
CrossCoreWaitFlag(id)                  cross_core_wait_flag(id, mode=...)
Cast, LoadData, Mmad, Fixpipe          cast, load_data, mmad, fixpipe
=====================================  =========================================================

Sync calls take an optional ``name``: a launch can drop named sync points
(``Device.launch(..., drop_syncs={"S1"})``) to show what each one protects. ``stage(name)`` marks
the kernel's stages so that traces and race reports can say where an access happened.

Compute on local tensors with numpy. Inside a core, data movement runs on asynchronous pipes
(MTE2 copies in, MTE3 copies out, MTE1 loads L0, FIX drains L0C; :mod:`mpnpu.runtime.pipes`) for
kernels marked :func:`pipelined`, which order them with ``set_flag`` / ``wait_flag``, ``TQue`` or
``pipe_barrier`` as Ascend C kernels must. Unmarked kernels run their pipes in order.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .errors import GMAccessError, KernelAPIError
from .runtime import kcontext
from .runtime.dtypes import DTypeLike, bfloat16, from_float32, get_dtype, to_float32
from .runtime.gm import GlobalTensor
from .runtime.local import (
    MEMORY_CORE_TYPE,
    POSITION_MEMORY,
    LocalTensor,
    TBuf,
    TPipe,
    TPosition,
)
from .runtime.pipe_events import Pipe
from .runtime.topology import CoreType
from .runtime.trace import ATOMIC, READ, WRITE

if TYPE_CHECKING:
    from .runtime.core import CoreContext

__all__ = [
    "CoreType", "GlobalTensor", "LocalTensor", "Pipe", "TBuf", "TPipe", "TPosition",
    "alloc_local", "cast", "core_label", "cross_core_set_flag", "cross_core_wait_flag", "data_copy",
    "fixpipe", "get_block_idx", "get_block_num", "get_core_type", "get_subblock_idx",
    "get_subblock_num", "get_task_ration", "get_tpipe", "is_aic", "is_aiv", "load_data", "mmad",
    "pipe_barrier", "pipelined", "set_atomic_add", "set_atomic_none", "stage", "sync_all",
    "HardEvent", "TQue", "set_flag", "sync_pipes", "wait_flag", "duplicate", "adds", "muls", "add", "mul",
]

_ATOMIC_DTYPES = frozenset({"float16", "bfloat16", "float32", "int8", "int16", "int32"})

_ctx = kcontext.current
_site = kcontext.call_site


def pipelined(kernel):
    """Mark a kernel that orders its own pipes (set_flag / wait_flag, TQue, pipe_barrier, the
    ``pipe`` of cross-core sets), as every Ascend C kernel must: its data movement then runs on
    asynchronous pipes. A kernel without the mark runs its pipes in order (what it was written
    for); ``RuntimeOptions(pipes="async" | "sync")`` overrides the mark either way."""
    kernel.__mpnpu_pipes__ = "async"
    return kernel


# -- who am I ----------------------------------------------------------------------------------


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


# -- stages ------------------------------------------------------------------------------------


def stage(name: str) -> "contextlib.AbstractContextManager[None]":
    """Mark a kernel stage (e.g. ``with stage("TargetProcess"):``) for traces and race reports."""
    return kcontext.stage(_ctx(), name)


# -- local memory ------------------------------------------------------------------------------


def get_tpipe() -> TPipe:
    """This core's TPipe; its reservations are released at the start of every launch."""
    return _ctx().pipe


def alloc_local(position: TPosition, shape: int | Sequence[int], dtype: DTypeLike) -> LocalTensor:
    """Reserve a buffer of exactly this tensor's size at ``position`` and return it."""
    d = get_dtype(dtype)
    count = int(np.prod(shape)) if not isinstance(shape, int) else shape
    return _ctx().pipe.init_buffer(position, count * d.itemsize).get(shape, d)


def _check_local(c: "CoreContext", arr: np.ndarray, what: str) -> None:
    if not isinstance(arr, np.ndarray):
        raise KernelAPIError(f"{what}: expected a local tensor (numpy array), got {type(arr).__name__}")
    position = getattr(arr, "position", None)
    if position is not None and MEMORY_CORE_TYPE[POSITION_MEMORY[position]] is not c.info.core_type:
        raise KernelAPIError(f"{what}: {position.value} memory is not on {c.info.label}")


def _check_pair(gm: GlobalTensor, local: np.ndarray, what: str) -> None:
    if gm.size != local.size:
        raise GMAccessError(
            f"{what}: GM {gm.name}{list(gm.shape)} has {gm.size} elements, local tensor {list(local.shape)} has {local.size}"
        )
    if gm.dtype.storage != local.dtype:
        raise GMAccessError(
            f"{what}: GM {gm.name} is {gm.dtype.name} but the local tensor is {local.dtype}; cast() first"
        )


# -- data movement -----------------------------------------------------------------------------


def data_copy(dst: GlobalTensor | np.ndarray, src: GlobalTensor | np.ndarray) -> None:
    """DataCopy between GM and local memory (element counts and dtypes must match).

    GM → local reads; local → GM writes, or atomically adds after ``set_atomic_add()``.
    """
    c = _ctx()
    if isinstance(src, GlobalTensor):
        if isinstance(dst, GlobalTensor):
            raise KernelAPIError("data_copy: GM to GM is not a DataCopy; copy through local memory")
        _check_local(c, dst, "data_copy")
        _check_pair(src, dst, "data_copy")
        def copy_in() -> None:
            gm = c.segments.array(src)
            np.copyto(dst, gm if gm.shape == dst.shape else gm.reshape(dst.shape))

        site = kcontext.issue_gm_copy(c, Pipe.MTE2, READ, src, copy_in)
        if c.events is not None:
            _record_local(c, WRITE, dst, Pipe.MTE2, site)
        return
    if not isinstance(dst, GlobalTensor):
        raise KernelAPIError("data_copy: one side must be a GM tensor (GlobalTensor)")
    _check_local(c, src, "data_copy")
    _check_pair(dst, src, "data_copy")
    _write_gm(c, dst, src, Pipe.MTE3)


def fixpipe(dst: GlobalTensor, src: np.ndarray) -> None:
    """Fixpipe: move a cube result (L0C, float32) to GM, converting to GM's dtype on the way."""
    c = _ctx()
    if not isinstance(dst, GlobalTensor):
        raise KernelAPIError("fixpipe: destination must be a GM tensor")
    _check_local(c, src, "fixpipe")
    if dst.size != src.size:
        raise GMAccessError(f"fixpipe: GM {dst.name} has {dst.size} elements, source has {src.size}")
    _write_gm(c, dst, src, Pipe.FIX, convert=True)


def _fix_values(src: np.ndarray, dst: GlobalTensor) -> np.ndarray:
    if dst.dtype.is_float:
        return from_float32(np.asarray(src, dtype=np.float32), dst.dtype)
    return np.asarray(src).astype(dst.dtype.storage)


def _write_gm(c: "CoreContext", dst: GlobalTensor, src: np.ndarray, pipe: Pipe, convert: bool = False) -> None:
    """Issue the copy of local ``src`` to GM ``dst`` on ``pipe`` (atomic add as set at issue)."""
    atomic = c.atomic_add
    if atomic and dst.dtype.name not in _ATOMIC_DTYPES:
        raise KernelAPIError(f"atomic add is not supported for {dst.dtype.name} (GM {dst.name})")
    site = kcontext.issue_gm_copy(c, pipe, ATOMIC if atomic else WRITE, dst,
                       lambda: _store_gm(c, dst, _fix_values(src, dst) if convert else src, atomic))
    if c.events is not None:
        _record_local(c, READ, src, pipe, site)


def _store_gm(c: "CoreContext", dst: GlobalTensor, values: np.ndarray, atomic: bool) -> None:
    if atomic:
        c.sync.acquire_atomic(c.options.sync_timeout_s)
        try:
            gm = c.segments.array(dst)
            v = np.asarray(values).reshape(gm.shape)
            if dst.dtype is bfloat16:
                gm[...] = from_float32(to_float32(gm, bfloat16) + to_float32(v, bfloat16), bfloat16)
            else:
                np.add(gm, v, out=gm)
            del gm
        finally:
            c.sync.release_atomic()
    else:
        gm = c.segments.array(dst)
        np.copyto(gm, values if values.shape == gm.shape else np.asarray(values).reshape(gm.shape))
        del gm


def set_atomic_add() -> None:
    """From now on, copies to GM add into it atomically (until set_atomic_none)."""
    _ctx().atomic_add = True


def set_atomic_none() -> None:
    _ctx().atomic_add = False


def cast(dst: np.ndarray, src: np.ndarray) -> None:
    """Cast between local tensors (float ↔ float16/bfloat16, rounding to nearest even)."""
    src_dtype = src.device_dtype if isinstance(src, LocalTensor) else get_dtype(src.dtype)
    dst_dtype = dst.device_dtype if isinstance(dst, LocalTensor) else get_dtype(dst.dtype)
    if dst.size != src.size:
        raise KernelAPIError(f"cast: {src.size} elements into {dst.size}")
    c = kcontext.current_or_none()
    if c is not None and c.events is not None:
        site = _site()
        _record_local(c, READ, src, Pipe.V, site)
        _record_local(c, WRITE, dst, Pipe.V, site)
    values = to_float32(np.asarray(src), src_dtype) if src_dtype.is_float else np.asarray(src)
    np.copyto(dst, from_float32(values, dst_dtype).reshape(dst.shape) if dst_dtype.is_float
              else np.asarray(values).astype(dst.dtype).reshape(dst.shape))


def load_data(dst: np.ndarray, src: np.ndarray) -> None:
    """LoadData: L1 → L0A/L0B on the cube core."""
    c = _ctx()
    if c.info.core_type is not CoreType.CUBE:
        raise KernelAPIError(f"load_data is a cube instruction; {c.info.label} is a vector core")
    if dst.size != src.size or dst.dtype != src.dtype:
        raise KernelAPIError("load_data: source and destination differ in size or dtype")
    c.pipes.run(Pipe.MTE1, lambda: np.copyto(dst, np.asarray(src).reshape(dst.shape)))
    if c.events is not None:
        site = _site()
        _record_local(c, READ, src, Pipe.MTE1, site)
        _record_local(c, WRITE, dst, Pipe.MTE1, site)


def mmad(dst: np.ndarray, a: np.ndarray, b: np.ndarray, *, accumulate: bool = False,
         transpose_b: bool = False) -> None:
    """Mmad: ``dst[m, n] (+)= a[m, k] @ b[k, n]`` in float32 (a in L0A, b in L0B, dst in L0C).

    ``transpose_b``: b holds [n, k] (a weight tile as stored, rows = output columns), as when
    LoadData transposes on the way into L0B.
    """
    c = _ctx()
    if c.info.core_type is not CoreType.CUBE:
        raise KernelAPIError(f"mmad is a cube instruction; {c.info.label} is a vector core")
    for arr, pos, what in ((a, TPosition.A2, "a"), (b, TPosition.B2, "b"), (dst, TPosition.CO1, "dst")):
        p = getattr(arr, "position", None)
        if p is not None and p is not pos:
            raise KernelAPIError(f"mmad: {what} must be in {pos.value}, not {p.value}")
    a32 = to_float32(np.asarray(a), a.device_dtype if isinstance(a, LocalTensor) else get_dtype(a.dtype))
    b32 = to_float32(np.asarray(b), b.device_dtype if isinstance(b, LocalTensor) else get_dtype(b.dtype))
    if transpose_b:
        b32 = b32.T  # a view: BLAS reads it transposed, no copy
    if a32.ndim != 2 or b32.ndim != 2 or a32.shape[1] != b32.shape[0] or dst.shape != (a32.shape[0], b32.shape[1]):
        raise KernelAPIError(f"mmad: shapes {a32.shape} @ {b32.shape} -> {dst.shape} do not agree")
    if c.events is not None:
        site = _site()
        _record_local(c, READ, a, Pipe.M, site)
        _record_local(c, READ, b, Pipe.M, site)
        _record_local(c, READ if accumulate else WRITE, dst, Pipe.M, site)
        if accumulate:
            _record_local(c, WRITE, dst, Pipe.M, site)
    if accumulate:
        dst += a32 @ b32
    else:
        np.matmul(a32, b32, out=np.asarray(dst))


# -- synchronisation ---------------------------------------------------------------------------


def sync_all(aiv_only: bool = False, *, name: str = "") -> None:
    """SyncAll: block until every core (``aiv_only``: every vector core) has arrived."""
    kcontext.sync_all(_ctx(), aiv_only, name)


def cross_core_set_flag(flag_id: int, *, mode: int, pipe: Pipe = Pipe.MTE3, name: str = "") -> None:
    """CrossCoreSetFlag<mode, pipe>(flag_id): count one set at every core the mode routes to.

    The set is issued to ``pipe``: it fires once everything issued to that pipe before it (e.g.
    the MTE3 copy-out it announces) has completed, not what other pipes still have in flight.
    """
    kcontext.flag_set(_ctx(), mode, flag_id, pipe, name)


def cross_core_wait_flag(flag_id: int, *, mode: int, pipe: Pipe = Pipe.MTE3, name: str = "") -> None:
    """CrossCoreWaitFlag(flag_id): block until every sender the mode needs has set, then consume."""
    kcontext.flag_wait(_ctx(), mode, flag_id, name)


def _record_local(c: "CoreContext", kind: str, arr: np.ndarray, pipe: Pipe, site: str | None = None) -> None:
    if c.pipe_aware:
        _pipe_api.record_local(c, kind, arr, pipe, site)


# Intra-core sync and vector instructions live in their own module; kernels reach them here.
from . import pipe_api as _pipe_api  # noqa: E402  (imports this module)
from .pipe_api import (  # noqa: E402
    HardEvent,
    TQue,
    add,
    adds,
    duplicate,
    mul,
    muls,
    pipe_barrier,
    set_flag,
    sync_pipes,
    wait_flag,
)
