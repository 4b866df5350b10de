"""Vector instructions: PIPE_V, run inline on the kernel's thread, on local tensors.

Every instruction computes in float32 for float tensors (bfloat16 and float16 widened, the result
rounded back to the destination's dtype, to nearest even) and records, in a traced launch of a
pipelined kernel, which bytes PIPE_V read and wrote, for the race detector. A numpy expression on
local tensors computes the same but records nothing.

Adding an instruction is one line in the table below: its Ascend C name, the shape of its
operands, and a numpy function of the sources' values (and the scalar)::

    subs = _with_scalar("Subs", np.subtract)     # dst = src - scalar

``_fill``, ``_with_scalar`` and ``_binary`` make the function (``dst`` first, as in Ascend C), its
checks and its trace records, and add its name to ``__all__``: the package exports it.
"""

from __future__ import annotations

from time import monotonic_ns
from typing import Any, Callable

import numpy as np

from mpnpu.errors import KernelAPIError
from mpnpu.runtime import kcontext
from mpnpu.runtime.dtypes import from_float32, get_dtype, to_float32
from mpnpu.runtime.local import LocalTensor
from mpnpu.runtime.pipe_events import Pipe
from mpnpu.runtime.trace import READ, WRITE

from . import _trace
from ._trace import traced_since
from .memory import check_operands

#: names of the instructions made below by the factories (every one is exported)
_INSTRUCTIONS: list[str] = []



def _values(arr: np.ndarray) -> np.ndarray:
    d = arr.device_dtype if isinstance(arr, LocalTensor) else get_dtype(arr.dtype)
    return to_float32(np.asarray(arr), d) if d.is_float else np.asarray(arr)


def _store(dst: np.ndarray, values: Any) -> None:
    d = dst.device_dtype if isinstance(dst, LocalTensor) else get_dtype(dst.dtype)
    values = np.broadcast_to(np.asarray(values), dst.shape)
    np.copyto(dst, from_float32(values.astype(np.float32), d) if d.is_float else values.astype(dst.dtype))


def _run(dst: np.ndarray, srcs: tuple[np.ndarray, ...], fn: Callable[..., Any], name: str) -> None:
    c = kcontext.current()
    check_operands(dst, srcs, name)
    if c.events is not None:
        t = monotonic_ns()
        site: str | None = kcontext.call_site()
        c.pipes.observed_ns += monotonic_ns() - t  # (tracing time is not kernel time: PipeEngine.observed_ns)
    else:
        site = None
    since = traced_since(c)
    for s in srcs:
        if s.shape != dst.shape:
            raise KernelAPIError(f"vector instruction: source {s.shape} and destination {dst.shape} differ")
        _trace.record_local(c, READ, s, Pipe.V, site)
    _trace.record_local(c, WRITE, dst, Pipe.V, site)
    _store(dst, fn(*(_values(s) for s in srcs)))
    _trace.stamp_local(c, since)


def _named(fn: Callable[..., None], name: str, doc: str) -> Callable[..., None]:
    fn.__name__ = fn.__qualname__ = name.lower()
    fn.__doc__ = f"{name}: ``{doc}``."
    _INSTRUCTIONS.append(fn.__name__)
    return fn


def _fill(name: str) -> Callable[[np.ndarray, float], None]:
    """``name(dst, value)``: every element of ``dst`` set to ``value``."""
    def instruction(dst: np.ndarray, value: float) -> None:
        _run(dst, (), lambda: value, name)
    return _named(instruction, name, "dst = value")


Op = Callable[[Any, Any], Any]


def _with_scalar(name: str, op: Op, doc: str = "") -> Callable[[np.ndarray, np.ndarray, float], None]:
    """``name(dst, src, scalar)``: ``dst = op(src, scalar)`` elementwise."""
    def instruction(dst: np.ndarray, src: np.ndarray, scalar: float) -> None:
        _run(dst, (src,), lambda x: op(x, scalar), name)
    return _named(instruction, name, doc or f"dst = {op.__name__}(src, scalar)")


def _binary(name: str, op: Op, doc: str = "") -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    """``name(dst, a, b)``: ``dst = op(a, b)`` elementwise (same shapes)."""
    def instruction(dst: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        _run(dst, (a, b), op, name)
    return _named(instruction, name, doc or f"dst = {op.__name__}(a, b)")


# -- the instructions ----------------------------------------------------------------------------

duplicate = _fill("Duplicate")
adds = _with_scalar("Adds", np.add, "dst = src + scalar")
muls = _with_scalar("Muls", np.multiply, "dst = src * scalar")
add = _binary("Add", np.add, "dst = a + b")
mul = _binary("Mul", np.multiply, "dst = a * b")

__all__ = ["cast", *_INSTRUCTIONS]


def cast(dst: np.ndarray, src: np.ndarray) -> None:
    """Cast between local tensors (float ↔ float16/bfloat16, rounding to nearest even).

    Usable outside a kernel too (on host arrays), where nothing is recorded.
    """
    check_operands(dst, (src,), "cast")
    src_dtype = src.device_dtype if isinstance(src, LocalTensor) else get_dtype(src.dtype)
    dst_dtype = dst.device_dtype if isinstance(dst, LocalTensor) else get_dtype(dst.dtype)
    if dst.size != src.size:
        raise KernelAPIError(f"cast: {src.size} elements into {dst.size}")
    c = kcontext.current_or_none()
    since = traced_since(c) if c is not None else (-1, 0)
    if c is not None and c.events is not None:
        site = kcontext.call_site()
        _trace.record_local(c, READ, src, Pipe.V, site)
        _trace.record_local(c, WRITE, dst, Pipe.V, site)
    values = to_float32(np.asarray(src), src_dtype) if src_dtype.is_float else np.asarray(src)
    np.copyto(dst, from_float32(values, dst_dtype).reshape(dst.shape) if dst_dtype.is_float
              else np.asarray(values).astype(dst.dtype).reshape(dst.shape))
    if c is not None:
        _trace.stamp_local(c, since)
