"""Cube instructions: Mmad on the cube core (L0A x L0B -> L0C, float32), PIPE_M, run inline."""

from __future__ import annotations

import numpy as np

from mpnpu.errors import KernelAPIError
from mpnpu.runtime import kcontext
from mpnpu.runtime.dtypes import get_dtype, to_float32
from mpnpu.runtime.local import LocalTensor, TPosition
from mpnpu.runtime.pipe_events import Pipe
from mpnpu.runtime.topology import CoreType
from mpnpu.runtime.trace import READ, WRITE

from . import _trace
from ._trace import traced_since
from .memory import check_operands

__all__ = ["mmad"]


def mmad(dst: np.ndarray, a: np.ndarray, b: np.ndarray, *, accumulate: bool = False,
         transpose_b: bool = False) -> None:
    """Mmad: ``dst[m, n] (+)= a[m, k] @ b[k, n]`` in float32 (a in L0A, b in L0B, dst in L0C).

    ``transpose_b``: b holds [n, k] (a weight tile as stored, rows = output columns), as when
    LoadData transposes on the way into L0B.
    """
    c = kcontext.current()
    if c.info.core_type is not CoreType.CUBE:
        raise KernelAPIError(f"mmad is a cube instruction; {c.info.label} is a vector core")
    check_operands(dst, (a, b), "mmad")
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
    since = traced_since(c)
    if c.events is not None:
        site = kcontext.call_site()
        _trace.record_local(c, READ, a, Pipe.M, site)
        _trace.record_local(c, READ, b, Pipe.M, site)
        _trace.record_local(c, READ if accumulate else WRITE, dst, Pipe.M, site)
        if accumulate:
            _trace.record_local(c, WRITE, dst, Pipe.M, site)
    if accumulate:
        dst += a32 @ b32
    else:
        np.matmul(a32, b32, out=np.asarray(dst))
    _trace.stamp_local(c, since)
