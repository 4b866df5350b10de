"""Data movement: DataCopy between GM and local memory, Fixpipe, LoadData, atomic adds into GM.

Each copy is issued to its pipe (MTE2 copies in, MTE3 copies out, FIX drains L0C, MTE1 loads
L0A/L0B; :mod:`mpnpu.runtime.pipes`), through the kernel-context seam for GM
(:func:`mpnpu.runtime.kcontext.issue_gm_copy`: traced, held, or — the batch's path — issued
directly). These functions are the hot path of every launch: they check their arguments and issue,
nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mpnpu.errors import GMAccessError, KernelAPIError
from mpnpu.runtime import kcontext
from mpnpu.runtime.dtypes import bfloat16, from_float32, to_float32
from mpnpu.runtime.gm import GlobalTensor
from mpnpu.runtime.memcheck import ILLEGAL_READ, ILLEGAL_WRITE
from mpnpu.runtime.pipe_events import Pipe
from mpnpu.runtime.topology import CoreType
from mpnpu.runtime.trace import ATOMIC, READ, WRITE

from . import _trace
from .memory import check_inside, check_local, check_operands, check_pair

if TYPE_CHECKING:
    from mpnpu.runtime.core import CoreContext

__all__ = ["data_copy", "fixpipe", "load_data", "set_atomic_add", "set_atomic_none"]

_ATOMIC_DTYPES = frozenset({"float16", "bfloat16", "float32", "int8", "int16", "int32"})

_ctx = kcontext.current


def data_copy(dst: GlobalTensor | np.ndarray, src: GlobalTensor | np.ndarray) -> None:
    """DataCopy between GM and local memory (element counts and dtypes must match).

    GM → local reads; local → GM writes, or atomically adds after ``set_atomic_add()``.
    """
    c = _ctx()
    if isinstance(src, GlobalTensor):
        if isinstance(dst, GlobalTensor):
            raise KernelAPIError("data_copy: GM to GM is not a DataCopy; copy through local memory")
        if src.outside:
            check_inside(src, ILLEGAL_READ, "data_copy")
        check_local(c, dst, "data_copy", ILLEGAL_WRITE)
        check_pair(src, dst, "data_copy")
        local = dst

        def copy_in() -> None:
            gm = c.segments.array(src)
            np.copyto(local, gm if gm.shape == local.shape else gm.reshape(local.shape))

        site = kcontext.issue_gm_copy(c, Pipe.MTE2, READ, src, copy_in)
        if c.events is not None:
            _trace.record_local(c, WRITE, local, Pipe.MTE2, site)
        return
    if not isinstance(dst, GlobalTensor):
        raise KernelAPIError("data_copy: one side must be a GM tensor (GlobalTensor)")
    if dst.outside:
        check_inside(dst, ILLEGAL_WRITE, "data_copy")
    check_local(c, src, "data_copy")
    check_pair(dst, src, "data_copy")
    _write_gm(c, dst, src, Pipe.MTE3)


def fixpipe(dst: GlobalTensor, src: np.ndarray) -> None:
    """Fixpipe: move a cube result (L0C, float32) to GM, converting to GM's dtype on the way."""
    c = _ctx()
    if not isinstance(dst, GlobalTensor):
        raise KernelAPIError("fixpipe: destination must be a GM tensor")
    if dst.outside:
        check_inside(dst, ILLEGAL_WRITE, "fixpipe")
    check_local(c, src, "fixpipe")
    if dst.size != src.size:
        raise GMAccessError(f"fixpipe: GM {dst.name} has {dst.size} elements, source has {src.size}")
    _write_gm(c, dst, src, Pipe.FIX, convert=True)


def load_data(dst: np.ndarray, src: np.ndarray) -> None:
    """LoadData: L1 → L0A/L0B on the cube core."""
    c = _ctx()
    if c.info.core_type is not CoreType.CUBE:
        raise KernelAPIError(f"load_data is a cube instruction; {c.info.label} is a vector core")
    check_operands(dst, (src,), "load_data")
    if dst.size != src.size or dst.dtype != src.dtype:
        raise KernelAPIError("load_data: source and destination differ in size or dtype")
    c.pipes.run(Pipe.MTE1, lambda: np.copyto(dst, np.asarray(src).reshape(dst.shape)))
    if c.events is not None:
        site = kcontext.call_site()
        _trace.record_local(c, READ, src, Pipe.MTE1, site)
        _trace.record_local(c, WRITE, dst, Pipe.MTE1, site)


def set_atomic_add() -> None:
    """From now on, copies to GM add into it atomically (until set_atomic_none)."""
    _ctx().atomic_add = True


def set_atomic_none() -> None:
    _ctx().atomic_add = False


def _fix_values(src: np.ndarray, dst: GlobalTensor) -> np.ndarray:
    if dst.dtype.is_float:
        return from_float32(np.asarray(src, dtype=np.float32), dst.dtype)
    return np.asarray(src).astype(dst.dtype.storage)


def _write_gm(c: CoreContext, dst: GlobalTensor, src: np.ndarray, pipe: Pipe, convert: bool = False) -> None:
    """Issue the copy of local ``src`` to GM ``dst`` on ``pipe`` (atomic add as set at issue)."""
    atomic = c.atomic_add
    if atomic and dst.dtype.name not in _ATOMIC_DTYPES:
        raise KernelAPIError(f"atomic add is not supported for {dst.dtype.name} (GM {dst.name})")
    site = kcontext.issue_gm_copy(c, pipe, ATOMIC if atomic else WRITE, dst,
                                  lambda: _store_gm(c, dst, _fix_values(src, dst) if convert else src, atomic))
    if c.events is not None:
        _trace.record_local(c, READ, src, pipe, site)


def _store_gm(c: CoreContext, dst: GlobalTensor, values: np.ndarray, atomic: bool) -> None:
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
