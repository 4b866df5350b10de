"""Synchronisation: SyncAll and cross-core flags between cores; SetFlag / WaitFlag, PipeBarrier
and the FetchEventID pairing between the pipes of one core.

How the pipes run is described in :mod:`mpnpu.runtime.pipes`. Every sync call takes an optional
``name``; a launch that drops that name skips the call (both the set and the wait of a pair carry
the same name). What other cores see — SyncAll, flags, dropped sync points — goes through the
kernel-context seam (:mod:`mpnpu.runtime.kcontext`), shared with every other front end.
"""

from __future__ import annotations

from mpnpu.errors import KernelAPIError
from mpnpu.runtime import kcontext
from mpnpu.runtime.pipe_events import HardEvent, Pipe, check_event

from . import _trace

__all__ = [
    "HardEvent", "Pipe", "cross_core_set_flag", "cross_core_wait_flag", "pipe_barrier", "set_flag", "sync_all",
    "sync_pipes", "wait_flag",
]

_ctx = kcontext.current


# -- between cores -------------------------------------------------------------------------------


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


# -- between the pipes of one core ---------------------------------------------------------------


def set_flag(event: HardEvent, event_id: int = 0, *, name: str = "") -> None:
    """SetFlag<event>(event_id): pipe ``event.src`` raises the event when it reaches this point."""
    c = _ctx()
    ev = check_event(event, event_id)
    if name and kcontext.sync_dropped(c, name, "set_flag"):
        return
    c.pipes.set_flag(ev, event_id, kcontext.call_site)  # the line is looked up only for an error message
    _trace.record_sync(c, "set", ev.src, ev.name, event_id, name)


def wait_flag(event: HardEvent, event_id: int = 0, *, name: str = "") -> None:
    """WaitFlag<event>(event_id): pipe ``event.dst`` waits here for the event, then consumes it.

    A wait that no set can satisfy any more raises KernelAPIError (the device would hang).
    """
    c = _ctx()
    ev = check_event(event, event_id)
    if name and kcontext.sync_dropped(c, name, "wait_flag"):
        return
    c.pipes.wait_flag(ev, event_id, kcontext.call_site)
    _trace.record_sync(c, "wait", ev.dst, ev.name, event_id, name)


def sync_pipes(event: HardEvent, *, name: str = "") -> None:
    """SetFlag + WaitFlag on an id from FetchEventID: pipe ``event.dst`` waits for everything
    issued to ``event.src`` so far. The usual pairing (often a macro in Ascend C kernels) when
    nothing is issued between the set and the wait."""
    c = _ctx()
    ev = check_event(event, 0)
    event_id = c.tpipe.fetch_event_id(ev)
    if name and (kcontext.sync_dropped(c, name, "set_flag") | kcontext.sync_dropped(c, name, "wait_flag")):
        return  # both halves carry the name (and are recorded as dropped, as two calls would be)
    c.pipes.set_wait(ev, event_id, kcontext.call_site)
    if c.events is not None:  # (checked here too: this pairing runs after almost every copy)
        # (the members' own attributes: Enum.name and the src / dst properties are Python calls,
        # and this pairing is traced after almost every copy)
        _trace.record_sync_pair(c, ev._src, ev._dst, ev._name_, event_id, name)


def pipe_barrier(pipe: Pipe = Pipe.ALL, *, name: str = "") -> None:
    """PipeBarrier<pipe>: wait until every instruction issued to ``pipe`` (PIPE_ALL: to every pipe)
    of *this* core has completed. It orders nothing across cores."""
    c = _ctx()
    if not isinstance(pipe, Pipe):
        raise KernelAPIError(f"pipe_barrier: pipe must be a Pipe, got {pipe!r}")
    if name and kcontext.sync_dropped(c, name, "pipe_barrier"):
        return
    c.pipes.barrier(pipe, kcontext.call_site)
    _trace.record_sync(c, "barrier", pipe, "", 0, name)
