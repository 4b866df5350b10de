"""Memory and tensors: GM tensors (views of global memory) and local tensors (UB, L1, L0A/B/C).

A kernel receives :class:`GlobalTensor` arguments and slices them; it reserves local buffers from
its core's :class:`TPipe` (``alloc_local`` for one tensor, ``get_tpipe().init_buffer`` and
``TBuf.get`` as in Ascend C) and computes on them with numpy. Reservations are released at the
start of every launch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from mpnpu.errors import GMAccessError, KernelAPIError
from mpnpu.runtime import kcontext
from mpnpu.runtime.dtypes import DTypeLike, get_dtype
from mpnpu.runtime.gm import GlobalTensor
from mpnpu.runtime.local import MEMORY_CORE_TYPE, POSITION_MEMORY, LocalTensor, OutsideLocal, TBuf, TPipe, TPosition
from mpnpu.runtime.memcheck import ILLEGAL_READ, ILLEGAL_WRITE

if TYPE_CHECKING:
    from mpnpu.runtime.core import CoreContext

__all__ = ["GlobalTensor", "LocalTensor", "TBuf", "TPipe", "TPosition", "alloc_local", "get_tpipe"]

_ctx = kcontext.current


def get_tpipe() -> TPipe:
    """This core's TPipe; its reservations are released at the start of every launch."""
    return _ctx().tpipe


def alloc_local(position: TPosition, shape: int | Sequence[int], dtype: DTypeLike) -> LocalTensor:
    """Reserve a buffer of exactly this tensor's size at ``position`` and return it."""
    d = get_dtype(dtype)
    count = int(np.prod(shape)) if not isinstance(shape, int) else shape
    return _ctx().tpipe.init_buffer(position, count * d.itemsize).get(shape, d)


def check_local(c: CoreContext, arr: object, what: str, kind: str = ILLEGAL_READ) -> None:
    """``arr`` must be a local tensor in memory of the calling core's type, and not a view outside
    the tensor it was taken from (then the ``kind`` of access ``what`` makes is illegal)."""
    if not isinstance(arr, np.ndarray):
        if type(arr) is OutsideLocal:
            raise arr.fault(kind, what)
        raise KernelAPIError(f"{what}: expected a local tensor (numpy array), got {type(arr).__name__}")
    position = getattr(arr, "position", None)
    if position is not None and MEMORY_CORE_TYPE[POSITION_MEMORY[position]] is not c.info.core_type:
        raise KernelAPIError(f"{what}: {position.value} memory is not on {c.info.label}")


def check_inside(t: GlobalTensor, kind: str, what: str) -> None:
    """Memcheck of a GM view a kernel reads (``kind`` ILLEGAL_READ) or writes through: a view with
    elements outside its tensor is the launch's error, at the kernel's line."""
    if t.outside and t.size and _ctx().options.memcheck:
        site, func = kcontext.call_site_and_function()
        raise t.illegal(kind, what, site, func)


def check_operands(dst: object, srcs: Sequence[object], what: str) -> None:
    """Memcheck of an instruction's local operands: none may be a view outside its tensor."""
    if type(dst) is OutsideLocal:
        raise dst.fault(ILLEGAL_WRITE, what)
    for s in srcs:
        if type(s) is OutsideLocal:
            raise s.fault(ILLEGAL_READ, what)


def check_pair(gm: GlobalTensor, local: np.ndarray, what: str) -> None:
    """A GM view and a local tensor a copy moves between: same element count and storage dtype."""
    if gm.size != local.size:
        raise GMAccessError(
            f"{what}: GM {gm.name}{list(gm.shape)} has {gm.size} elements, "
            f"local tensor {list(local.shape)} has {local.size}"
        )
    if gm.dtype.storage != local.dtype:
        raise GMAccessError(
            f"{what}: GM {gm.name} is {gm.dtype.name} but the local tensor is {local.dtype}; cast() first"
        )
