"""Memcheck: the words and details of an illegal access, one implementation for every front end.

An access outside the GM tensor or the local buffer it goes through is the launch's error, a
:class:`~mpnpu.errors.MemcheckError` raised in the core that made it (and so reported by the parent
as that core's :class:`~mpnpu.errors.KernelError`, exit status 3 in the commands). The C++ front end
finds such accesses in its library (:mod:`mpnpu.ascendc.native.bridge`), the Python front end when a
kernel uses a view that left its tensor (:mod:`mpnpu.api`): both describe them here, so the text
and the ``details`` are the same::

    illegal read of GM tensor x by data_copy at dir/kernel.py:33 (kernel): elements [480, 544)
    (bytes [1920, 2176)) of a tensor of 512 float32 elements (2048 bytes); x[480:544] leaves axis 0 (size 512)

``details``: kind ("illegal read" / "illegal write"), memory ("GM", "UB", ...), tensor, start / stop
(the requested bytes from the tensor's start, or from the memory's start for local memory), size
(the tensor's bytes, or the buffer's), site (the kernel's file:line), call.
"""

from __future__ import annotations

from typing import Sequence

from mpnpu.errors import MemcheckError

ILLEGAL_READ, ILLEGAL_WRITE = "illegal read", "illegal write"


def at(site: str, func: str) -> str:
    """' at dir/file.py:12 (func)', or '' when the site is unknown."""
    if not site or site == "?":
        return ""
    return f" at {site} ({func})" if func and func != "?" else f" at {site}"


def gm_fault(kind: str, call: str, site: str, func: str, tensor: str, dtype: str, itemsize: int, nbytes: int,
             start: int, stop: int, note: str = "") -> MemcheckError:
    """An access to bytes [start, stop) of GM tensor ``tensor`` (``nbytes`` long) outside it."""
    where = at(site, func)
    if itemsize == 1:  # a byte buffer (a host program's GmAlloc block): bytes only
        text = f"{kind} of GM tensor {tensor} by {call}{where}: bytes [{start}, {stop}) of its {nbytes} bytes"
    else:
        e0, e1 = start // itemsize, -(-stop // itemsize)
        text = (f"{kind} of GM tensor {tensor} by {call}{where}: elements [{e0}, {e1}) (bytes [{start}, {stop})) "
                f"of a tensor of {nbytes // itemsize} {dtype} elements ({nbytes} bytes)")
    if note:
        text += f"; {note}"
    return MemcheckError(text, kind=kind, memory="GM", tensor=tensor, start=start, stop=stop, size=nbytes,
                         site=site, call=call)


def gm_fault_unknown(kind: str, call: str, site: str, func: str, start: int, stop: int) -> MemcheckError:
    """An access to an address in none of the launch's GM tensors."""
    text = f"{kind} of GM by {call}{at(site, func)}: the address is in none of the launch's GM tensors"
    return MemcheckError(text, kind=kind, memory="GM", tensor="", start=start, stop=stop, size=0, site=site,
                         call=call)


def local_fault(kind: str, call: str, site: str, func: str, memory: str, start: int, stop: int, lo: int, hi: int,
                note: str = "") -> MemcheckError:
    """An access to bytes [start, stop) of local ``memory`` outside the buffer [lo, hi) it came from."""
    text = (f"{kind} of {memory} by {call}{at(site, func)}: bytes [{start}, {stop}) of {memory}, outside the "
            f"buffer it was taken from, bytes [{lo}, {hi})")
    if note:
        text += f"; {note}"
    return MemcheckError(text, kind=kind, memory=memory, tensor=f"{memory}[{lo}:{hi}]", start=start, stop=stop,
                         size=hi - lo, site=site, call=call)


# -- indices that leave their tensor ---------------------------------------------------------------


def index_text(name: str, index: Sequence[object]) -> str:
    """How a report shows an index as the kernel wrote it (bounds as computed): ``x[480:544, 3]``."""
    parts = []
    for idx in index:
        if isinstance(idx, slice):
            start = "" if idx.start is None else str(idx.start)
            stop = "" if idx.stop is None else str(idx.stop)
            step = "" if idx.step in (None, 1) else f":{idx.step}"
            parts.append(f"{start}:{stop}{step}")
        elif idx is Ellipsis:
            parts.append("...")
        else:
            parts.append(str(idx))
    return f"{name}[{', '.join(parts)}]"


def leaves(name: str, index: Sequence[object], axis: int, dim: int) -> str:
    """The note of an index that leaves axis ``axis`` (of ``dim`` elements) of the tensor it indexes."""
    return f"{index_text(name, index)} leaves axis {axis} (size {dim})"


def hull(offset: int, shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple[int, int]:
    """[first byte, last byte + 1) that a view of ``shape``/``strides`` at byte ``offset`` touches."""
    lo = hi = offset
    for n, st in zip(shape, strides):
        if n <= 0:
            return offset, offset
        if st >= 0:
            hi += (n - 1) * st
        else:
            lo += (n - 1) * st
    return lo, hi + itemsize
