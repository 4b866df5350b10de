"""Tracing internals of the Python kernel API: the records a traced launch keeps of what a kernel
did inside its core (which pipe touched which bytes of which local buffer, which pipe syncs ran).

GM accesses, SyncAll, cross-core flags and dropped sync points are recorded by the kernel-context
seam (:mod:`mpnpu.runtime.kcontext`), which every front end shares; what is here exists only for
local tensors that are numpy arrays, the Python front end's own representation. Nothing here runs
unless the launch is traced and its kernel orders its own pipes (``pipelined``): the batch's
untraced path never reaches these functions.
"""

from __future__ import annotations

from time import monotonic_ns
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from mpnpu.runtime import kcontext, native_trace
from mpnpu.runtime.pipe_events import Pipe
from mpnpu.runtime.trace import LocalAccess, PipeSyncEvent, clock_ns

if TYPE_CHECKING:
    from mpnpu.runtime.core import CoreContext


#: a trace record from its fields: tuple.__new__ skips the NamedTuple's Python-level __new__, which
#: costs as much again as the tuple (these run for every operand of every instruction of a traced launch)
_new = tuple.__new__


def record_local_py(c: CoreContext, kind: str, arr: object, pipe: Pipe, site: str | None = None) -> None:
    """Trace an access of ``pipe`` to the local tensor ``arr`` (when the launch traces local memory);
    ``site``: the kernel line, if the caller has already looked it up."""
    events = c.events
    if events is None or not c.pipe_aware or not isinstance(arr, np.ndarray):
        return
    t = monotonic_ns()
    where = c.tpipe.locate(arr)
    if where is not None:
        events.append(_new(LocalAccess, (kind, where[0], where[1], where[2], pipe._value_, c.stage,
                                         site if site is not None else kcontext.call_site(), 0, 0)))
    # tracing time is not kernel time (PipeEngine.observed_ns, once per operand)
    c.pipes.observed_ns += monotonic_ns() - t


def traced_since(c: CoreContext) -> tuple[int, int]:
    """(number of trace events, now) before an inline instruction (PIPE_V, PIPE_M) runs, for
    :func:`stamp_local` after it; (-1, 0) when the launch is not traced."""
    return (len(c.events), clock_ns()) if c.events is not None else (-1, 0)


def stamp_local_py(c: CoreContext, since: tuple[int, int]) -> None:
    """Give the local-access records traced since ``since`` (:func:`traced_since`) the time their
    instruction ran: an inline pipe executes at issue, on the kernel thread, so a timeline can
    draw it (and a race between it and an asynchronous pipe's copy) where it happened. Copies on
    the asynchronous pipes are timed by their GM record instead."""
    first, t0 = since
    events = c.events
    if events is None or first < 0:
        return
    t1 = clock_ns()
    for i in range(first, len(events)):
        ev = events[i]
        if type(ev) is LocalAccess:
            events[i] = _new(LocalAccess, ev[:7] + (t0, t1))  # (t0 and t1 are its last fields)
    c.pipes.observed_ns += monotonic_ns() - t1  # (tracing time is not kernel time: PipeEngine.observed_ns)


def record_sync_py(c: CoreContext, op: str, pipe: Pipe, event: str, event_id: int, name: str,
                   site: str | None = None) -> None:
    """Trace a pipe-level sync (``op``: "set", "wait" or "barrier") of a pipelined kernel."""
    events = c.events
    if events is not None and c.pipe_aware:
        t = monotonic_ns()
        events.append(_new(PipeSyncEvent, (op, pipe._value_, event, event_id, name, c.stage,
                                           site if site is not None else kcontext.call_site(), 0, 0)))
        c.pipes.observed_ns += monotonic_ns() - t  # (PipeEngine.observed_ns)


def record_sync_pair_py(c: CoreContext, src: Pipe, dst: Pipe, event: str, event_id: int, name: str) -> None:
    """Trace the set on ``src`` and the wait on ``dst`` of a SetFlag + WaitFlag pairing
    (:func:`mpnpu.api.sync.sync_pipes`), both at the kernel line looked up once."""
    events = c.events
    if events is not None and c.pipe_aware:
        t = monotonic_ns()
        site = kcontext.call_site()
        c.pipes.observed_ns += monotonic_ns() - t  # (tracing time is not kernel time: PipeEngine.observed_ns)
        record_sync(c, "set", src, event, event_id, name, site)
        record_sync(c, "wait", dst, event, event_id, name, site)


#: what the API modules call (as ``_trace.record_local``): the Python functions above, or the C
#: recorder's once it is in place in this process (:func:`_use_native`)
record_local = record_local_py
record_sync = record_sync_py
record_sync_pair = record_sync_pair_py
stamp_local = stamp_local_py


def _use_native(module: ModuleType) -> None:
    """Put the C recorder's record_local, record_sync, record_sync_pair and stamp_local
    (:mod:`mpnpu.runtime.native_trace`: the same records, without a Python frame each) in place of the
    ones above; the API modules call them through this module, so they find whichever is in place."""
    global record_local, record_sync, record_sync_pair, stamp_local
    record_local = module.record_local
    record_sync = module.record_sync
    record_sync_pair = module.record_sync_pair
    stamp_local = module.stamp_local


native_trace.use(_use_native)
