"""The kernel-context seam: the one way a kernel front end reaches the core it runs on.

::

    core process (mpnpu.runtime.core) ── install(ctx) ──►  kcontext  ◄── current() ── kernel front ends
                                                           services      mpnpu.api      Python kernels
                                                                         mpnpu.ascendc  C++ kernels (ctypes
                                                                                        callbacks into here)

A core process builds its :class:`~mpnpu.runtime.core.CoreContext` and installs it here before it
runs any kernel; in the parent nothing is installed and :func:`current` raises. The runtime never
imports a front end. Everything a front end does to its core that other cores can see, or that a
tool must know about, goes through the services below: SyncAll, cross-core flags, dropped sync
points, race-directed holds around GM accesses, stages and inserted syncs, and trace records. So a
Python kernel and a C++ kernel share one implementation of each, and every tool (racecheck, holds,
the audit, timelines, the watchdog) works on both.

Sites. Every service takes the kernel line that made the call (``"dir/file.py:12"`` or
``"kernel.cpp:40"``); a Python front end finds it with :func:`call_site`, a C++ front end passes
the ``__FILE__``/``__LINE__`` its header captured. A service looks a site up only when the launch
is traced, held, or drops sync points, and accepts a function returning it where the lookup costs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from time import monotonic_ns
from types import CodeType, FrameType, TracebackType
from typing import TYPE_CHECKING, Callable, Iterator, Union

import numpy as np

from mpnpu.errors import KernelAPIError

from .checks import cores_at_once
from .pipe_events import ASYNC_PIPES, Pipe
from .topology import SYNC_ALL_FLAG_IDS, CoreType, check_flag
from .trace import (
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    PipeSyncEvent,
    StageEvent,
    SyncAllEvent,
    TraceEvent,
    byte_ranges,
    clock_ns,
)

if TYPE_CHECKING:
    from .core import CoreContext
    from .gm import GlobalTensor
    from .insert import InsertedSync
    from .sync import AnyFlagPort

#: a kernel line, or a function that finds it (called only when the line is needed)
Site = Union[str, Callable[[], str]]

_current: CoreContext | None = None
# This core's ST_CALLS cell of the status board (a one-item int64 view; a scratch cell outside a
# core): every kernel API call of a Python kernel counts itself there (see current()).
_calls: memoryview = memoryview(bytearray(8)).cast("q")
_next_call: Callable[[], int] = itertools.count(1).__next__  # (a store of the next count costs less than += 1)


def install(ctx: CoreContext | None) -> None:
    """Make ``ctx`` the context of the core this process is (None: no core, as in the parent)."""
    global _current, _calls
    _current = ctx
    if ctx is None:
        _calls = memoryview(bytearray(8)).cast("q")
        return
    _calls = ctx.sync.calls_cell(ctx.info.core_id)


def current() -> CoreContext:
    """The context of the core running the calling kernel; KernelAPIError outside a kernel.

    Every call of the Python kernel API starts here, so it counts the call on the status board
    (one store into the core's own row): the progress the watchdog tells a busy core
    from a spinning one by (docs/device-model.md, "Watchdog")."""
    c = _current
    if c is None:
        raise KernelAPIError("the kernel API is only usable inside a kernel run by Device.launch")
    _calls[0] = _next_call()
    return c


#: how report_where starts when the kernel is inside a call of mpnpu's (a long API call: busy, not stuck)
IN_CALL = "in call: "
#: what a core answers the watchdog when no frame of its stack is kernel code
OUTSIDE_KERNEL = "outside the kernel"


def report_where(frame: FrameType | None) -> str:
    """The kernel line ``frame`` (or its innermost caller that is kernel code) is at, as
    "dir/file.py:12 (kernel)", after IN_CALL when ``frame`` is inside a call of mpnpu's own; ""
    when no frame on that stack is kernel code."""
    inner = frame
    f, prefix = _kernel_frame(frame)
    if f is None:
        return ""
    in_call = inner is not f and (_SITE_PREFIX.get(inner.f_code) == "" if inner is not None else False)
    text = f"{IN_CALL if in_call else ''}{prefix}{f.f_lineno} ({f.f_code.co_name})"
    caller, caller_prefix = _kernel_frame(f.f_back)
    if caller is not None and is_kernel_code(caller.f_code):  # (a helper: the kernel line that called it)
        text += f", called from {caller_prefix}{caller.f_lineno} ({caller.f_code.co_name})"
    return text


def current_or_none() -> CoreContext | None:
    """The core's context, or None in a process that is not a core (the parent, a test)."""
    return _current


# -- call sites of Python kernels ------------------------------------------------------------------

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# The shipped kernels are installed inside the package (mpnpu.kernels) but are kernel code: their
# frames are the call sites a report names, not mpnpu's own frames to skip.
_KERNELS_DIR = _PKG_DIR + "kernels" + os.sep
_CONTEXTLIB = contextlib.__file__

# Traced launches look sites up for every event: per code object, "" for mpnpu's own frames (skip)
# or the "dir/file.py:" prefix; per (code, line), the one site string (so pickle memoises it).
_SITE_PREFIX: dict[CodeType, str] = {}
_SITES: dict[tuple[CodeType, int], str] = {}


def _site_prefix(code: CodeType) -> str:
    path = code.co_filename
    if (path.startswith(_PKG_DIR) and not path.startswith(_KERNELS_DIR)) or path == _CONTEXTLIB:
        prefix = ""
    else:
        prefix = f"{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)}:"
    _SITE_PREFIX[code] = prefix
    return prefix


def _kernel_frame(f: FrameType | None) -> tuple[FrameType | None, str]:
    """The innermost frame from ``f`` outwards that is kernel code (not mpnpu's), and its prefix."""
    while f is not None:
        code = f.f_code
        prefix = _SITE_PREFIX.get(code)
        if prefix is None:
            prefix = _site_prefix(code)
        if prefix:
            return f, prefix
        f = f.f_back
    return None, ""


def call_site() -> str:
    """'dir/file.py:line' of the innermost caller outside mpnpu: the kernel line that made the call."""
    f, prefix = _kernel_frame(sys._getframe(1))
    if f is None:
        return "?"
    key = (f.f_code, f.f_lineno)
    site = _SITES.get(key)
    if site is None:
        site = _SITES[key] = prefix + str(key[1])
    return site


#: the Python :func:`call_site`, whichever is in place (a traced core process of a Python kernel puts
#: the C recorder's in its place: mpnpu.runtime.native_trace)
call_site_py = call_site


def call_site_and_function() -> tuple[str, str]:
    """(site, function) of the kernel line that made the call, as an error names it:
    ('dir/file.py:12', 'kernel'); ('?', '?') when no kernel frame is on the stack."""
    f, prefix = _kernel_frame(sys._getframe(1))
    if f is None:
        return "?", "?"
    return f"{prefix}{f.f_lineno}", f.f_code.co_name


#: code that is neither mpnpu's nor a kernel's: numpy's and the standard library's
_LIBRARY_DIRS = tuple(os.path.dirname(os.path.abspath(p)) + os.sep for p in (np.__file__, os.__file__))


def is_kernel_code(code: CodeType) -> bool:
    """Whether ``code`` is a kernel's: neither mpnpu's own (its shipped kernels excepted) nor a
    library's (numpy, the standard library)."""
    return not code.co_filename.startswith(_LIBRARY_DIRS) and bool(_SITE_PREFIX.get(code) or _site_prefix(code))


def traceback_site(tb: TracebackType | None) -> tuple[str, str]:
    """(site, function) of the innermost kernel frame of a traceback: where a kernel raised, or
    the kernel line whose call into mpnpu (or numpy) raised; ('', '') when no frame is kernel code."""
    found = ("", "")
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_kernel_code(code):
            found = (f"{_SITE_PREFIX[code]}{tb.tb_lineno}", code.co_name)
        tb = tb.tb_next
    return found


def _resolve(site: Site | None) -> str:
    if site is None:
        return call_site()
    return site() if callable(site) else site


# -- sync points -----------------------------------------------------------------------------------


def sync_dropped(c: CoreContext, name: str, call: str, site: Site | None = None) -> bool:
    """Whether the launch drops the sync point ``name`` (then the call is skipped, and a traced
    launch records that it was). ``call``: which call was skipped, e.g. "sync_all"."""
    if name and name in c.dropped_syncs:
        if c.events is not None:
            t = clock_ns()
            c.events.append(DroppedSyncEvent(name, call, c.stage, _resolve(site), t, t))
        return True
    return False


def sync_all(c: CoreContext, aiv_only: bool = False, name: str = "", site: Site | None = None) -> None:
    """SyncAll: block until every core (``aiv_only``: every vector core) has arrived."""
    if name and sync_dropped(c, name, "sync_all", site):
        return
    if aiv_only and c.info.core_type is CoreType.CUBE:
        raise KernelAPIError(
            f"SyncAll<true> (aiv_only) is a vector-core barrier; {c.info.label} must not call it "
            "(guard it with ASCEND_IS_AIV / is_aiv())"
        )
    c.sync_all_site = _resolve(site)
    _fits_the_cores(c, "SyncAll", c.sync_all_site)
    if c.sync_all_ids_site:
        _sync_all_collision(c, c.sync_all_ids_site, c.sync_all_site)
    # Like the device's SyncAll, it first waits for this core's pipes: what a core wrote before the
    # barrier has landed in GM when any core leaves it.
    c.pipes.barrier(Pipe.ALL, "sync_all")
    t0 = clock_ns() if c.events is not None else 0
    c.sync.sync_all(c.info.core_id, aiv_only, c.options.sync_timeout_s, c.sync_all_site)
    if c.events is not None:
        c.events.append(SyncAllEvent(aiv_only, name, c.stage, _resolve(site), t0, clock_ns()))


def _fits_the_cores(c: CoreContext, call: str, site: str) -> None:
    """Refuse a call that waits for every core of the launch in a launch wider than the device's cores:
    on the chip the blocks past its cores start only as earlier blocks end (mpnpu.runtime.checks)."""
    width, limit = c.topology.block_dim, cores_at_once(c.spec, c.topology.kernel_type)
    if width > limit:
        raise KernelAPIError(
            f"{c.info.label}: {call} at {site or '?'} in a launch of {width} blocks, wider than the device's "
            f"{limit} {'vector' if limit != c.spec.ai_cores else 'AI'} cores: on the chip blocks {limit}.."
            f"{width - 1} start only as earlier blocks end, so it would wait for blocks that cannot start "
            f"and hang; launch at most {limit} blocks")


def _sync_all_collision(c: CoreContext, flag_site: str, sync_site: str) -> None:
    raise KernelAPIError(
        f"{c.info.label}: the cross-core flag at {flag_site} uses an id the device's SyncAll is built on (11-14), "
        f"and this launch also calls SyncAll (at {sync_site}): on the chip their sets and waits would be mixed up; "
        "use a flag id in 0-10")


def _uses_sync_all_id(c: CoreContext, flag_id: int, site: Site | None) -> None:
    """A flag id SyncAll is built on, used in this launch: fine alone, an error with a SyncAll."""
    c.sync_all_ids_site = _resolve(site)
    if c.sync_all_site:
        _sync_all_collision(c, c.sync_all_ids_site, c.sync_all_site)


def flag_port(c: CoreContext, mode: int, flag_id: int) -> AnyFlagPort:
    """This core's end of flag (mode, id): validated once, then cached on the context."""
    port = c.flag_ports.get((mode, flag_id))
    if port is not None:
        return port
    try:
        check_flag(mode, flag_id)
        # The routing refuses what the mode does not allow (mode 1 on a cube core).
        port = c.sync.flag_port(c.info.core_id, mode, flag_id, c.options.sync_timeout_s)
    except ValueError as e:
        raise KernelAPIError(f"{c.info.label}: {e}") from None
    c.flag_ports[(mode, flag_id)] = port
    return port


def flag_set(c: CoreContext, mode: int, flag_id: int, pipe: Pipe = Pipe.MTE3, name: str = "",
             site: Site | None = None) -> None:
    """CrossCoreSetFlag<mode, pipe>(flag_id): count one set at every core the mode routes to.

    The set is issued to ``pipe``: it fires once everything issued to that pipe before it (e.g.
    the MTE3 copy-out it announces) has completed, not what other pipes still have in flight.
    """
    # The hot path of a flag is a dict lookup and the semaphore operations: a round trip must
    # cost about what bare semaphores cost (scripts/bench_runtime.py).
    port = c.flag_ports.get((mode, flag_id)) or flag_port(c, mode, flag_id)
    if name and sync_dropped(c, name, "cross_core_set_flag", site):
        return
    if flag_id in SYNC_ALL_FLAG_IDS:
        _uses_sync_all_id(c, flag_id, site)
    events = c.events
    t0 = clock_ns() if events is not None else 0
    if c.pipes.asynchronous:
        if not isinstance(pipe, Pipe) or pipe is Pipe.ALL:
            raise KernelAPIError(f"cross_core_set_flag: pipe must be one Pipe other than ALL, got {pipe!r}")
        c.pipes.signal(pipe, port.set)
    else:
        port.set()
    if events is None:  # untraced: nothing but the semaphore operations (and the pipe, if async)
        return
    where = _resolve(site)
    events.append(FlagSetEvent(mode, flag_id, name, c.stage, where, t0, clock_ns()))
    if c.pipe_aware:
        events.append(PipeSyncEvent("xset", pipe._value_, "", flag_id, name, c.stage, where, t0, t0))


def flag_wait(c: CoreContext, mode: int, flag_id: int, name: str = "", site: Site | None = None) -> None:
    """CrossCoreWaitFlag(flag_id): block until every sender the mode needs has set, then consume."""
    port = c.flag_ports.get((mode, flag_id)) or flag_port(c, mode, flag_id)
    if name and sync_dropped(c, name, "cross_core_wait_flag", site):
        return
    if flag_id in SYNC_ALL_FLAG_IDS:
        _uses_sync_all_id(c, flag_id, site)
    if mode == 0:  # (a wait for a set from every core of the type)
        _fits_the_cores(c, f"a mode-0 CrossCoreWaitFlag({flag_id})", _resolve(site))
    if c.pipes.asynchronous:
        c.pipes.flush_signals("cross_core_wait_flag")
        c.pipes.wake_pipes()  # the rest of this core's queued work runs while it waits
    events = c.events
    if events is None:
        port.wait(c.spin_s, site)
        return
    t0 = clock_ns()
    port.wait(c.spin_s, site)
    events.append(FlagWaitEvent(mode, flag_id, name, c.stage, _resolve(site), t0, clock_ns()))


def flag_wait_mode(c: CoreContext, flag_id: int, site: Site | None = None) -> int:
    """The mode of a wait that names none (a C++ kernel's CrossCoreWaitFlag on this chip): that of
    the sets its setters make, learnt from the first one routed to this core in the launch."""
    check_flag(0, flag_id)
    return c.sync.wait_mode(c.info.core_id, flag_id, c.options.sync_timeout_s, site)


# -- stages and the syncs a launch inserts at their boundaries ---------------------------------------


@contextlib.contextmanager
def stage(c: CoreContext, name: str, site: Site | None = None) -> Iterator[None]:
    """Mark a kernel stage for traces and race reports, and run the syncs a launch inserted at its
    boundaries (:mod:`mpnpu.runtime.insert`)."""
    previous = c.stage
    c.stage = name
    events = c.events
    if events is not None:
        index = len(events)
        events.append(StageEvent(name, _resolve(site), clock_ns()))
    hooks = c.stage_hooks
    try:
        if hooks is not None and name in hooks.on_entry:
            run_inserted(c, hooks.on_entry[name], entering=True)
        yield
        # Reached only when the block ended normally: a core that raised must not wait in a
        # barrier the others may never reach.
        if hooks is not None and name in hooks.on_exit:
            run_inserted(c, hooks.on_exit[name], entering=False)
    finally:
        c.stage = previous
        if events is not None and c.events is events:
            # The stage's end is known only now: timelines draw the stage as a span.
            events[index] = events[index]._replace(t1=clock_ns())


def run_inserted(c: CoreContext, inserts: list[InsertedSync], entering: bool) -> None:
    """Syncs a launch inserted at a stage boundary (``LaunchOptions(insert_syncs=...)``)."""
    for ins in inserts:
        if ins.kind == "flag":
            if entering:
                flag_wait(c, ins.mode, ins.flag_id, name=ins.name)
            else:
                flag_set(c, ins.mode, ins.flag_id, name=ins.name)
        else:
            sync_all(c, aiv_only=ins.kind == "sync_aiv", name=ins.name)


# -- GM accesses: trace records and race-directed holds ---------------------------------------------

# byte_ranges of the views accessed by traced launches, by (offset, shape, strides, itemsize), which
# decide them: kernels re-read the same tiles, launch after launch, and a shared tuple is computed
# once and pickled once per launch. Strided views stay four numbers here (deferred) and become
# their tuple of intervals when the parent unpickles the trace. Emptied once it holds RANGES_KEPT.
_new = tuple.__new__  # a trace record from its fields (a NamedTuple without its Python-level __new__)
_ranges: dict[tuple[int, tuple[int, ...], tuple[int, ...], int], tuple[tuple[int, int], ...]] = {}
RANGES_KEPT = 4096


def gm_access(c: CoreContext, kind: str, t: GlobalTensor, t0: int, site: str, pipe: str = "",
              ran_on: str = "") -> Access:
    """The trace record of an access of ``kind`` to the GM view ``t`` (t1 is now)."""
    t1 = clock_ns()
    itemsize = t.dtype.storage.itemsize  # (the DType property is a Python call: read once)
    key = (t.offset, t.shape, t.strides, itemsize)
    ranges = _ranges.get(key)
    if ranges is None:
        if len(_ranges) >= RANGES_KEPT:
            _ranges.clear()
        ranges = _ranges[key] = byte_ranges(t, deferred=True)
    # (tuple.__new__: without the NamedTuple's Python-level __new__, on every traced copy)
    return _new(Access, (kind, t.name, t.segment, ranges, t.root_offset, itemsize, c.stage, site, t0, t1,
                         pipe, ran_on))


def retime_access(events: list[TraceEvent], index: int, t0: int) -> None:
    """Give the GM access record at ``events[index]`` the times of its copy: ``t0``, and now (the
    pipe that ran the copy calls this once it has)."""
    ev = events[index]
    events[index] = _new(Access, ev[:8] + (t0, clock_ns()) + ev[10:])  # (its t0 and t1, fields 8 and 9)


#: the Python :func:`retime_access`, whichever is in place (the C recorder's, in a traced core process)
retime_access_py = retime_access
#: the Python :func:`gm_access`, whichever is in place (a traced core process of a Python kernel puts
#: the C recorder's in its place: mpnpu.runtime.native_trace)
gm_access_py = gm_access


def issue_gm_copy(c: CoreContext, pipe: Pipe, kind: str, gm: GlobalTensor, copy: Callable[[], None],
                  site: Site | None = None) -> str | None:
    """Issue ``copy`` (of GM view ``gm``) to ``pipe`` and trace the access; return the kernel line
    when it was looked up (a traced or held launch), for the caller's local-memory record.

    The access is recorded in issue order. Its t0/t1 span the copy itself: on an asynchronous
    pipe the copy fills them in when it runs (the events list is only read once the pipes drained).
    """
    hold = c.hold
    if hold is None:
        if c.events is None:  # the batch's path, on every copy: nothing to trace or hold
            if gm.size:
                c.pipes.run(pipe, copy)
            return None
        t = monotonic_ns()
        where = _resolve(site)  # found once, for every record of this copy
        c.pipes.observed_ns += monotonic_ns() - t  # (tracing time is not kernel time: PipeEngine.observed_ns)
        _issue_traced(c, pipe, kind, gm, copy, where)
        return where
    where = _resolve(site)  # a race-directed launch (mpnpu.runtime.hold): maybe wait here
    hold.before(where)
    _issue_traced(c, pipe, kind, gm, copy, where)
    if where == hold.site:
        # The plan's access has "happened" once it landed, not when it was issued: on an
        # asynchronous pipe the copy may still be queued, and the held core must not go on first.
        c.pipes.barrier(pipe, where)
    hold.after(where)
    return where


def _issue_traced(c: CoreContext, pipe: Pipe, kind: str, gm: GlobalTensor, copy: Callable[[], None],
                  site: str) -> None:
    events = c.events
    if events is None:
        if gm.size:
            c.pipes.run(pipe, copy)
        return
    if not (gm.size and c.pipes.asynchronous and pipe in ASYNC_PIPES):
        t0 = clock_ns()
        if gm.size:
            c.pipes.run(pipe, copy)
        t = monotonic_ns()
        events.append(gm_access(c, kind, gm, t0, site, pipe._value_ if c.pipe_aware else ""))
        c.pipes.observed_ns += monotonic_ns() - t  # (tracing time is not kernel time: PipeEngine.observed_ns)
        return
    c.pipes.run(pipe, traced_copy(c, kind, gm, site, pipe, copy))


def traced_copy(c: CoreContext, kind: str, gm: GlobalTensor, site: str, pipe: Pipe,
                copy: Callable[[], None]) -> Callable[[], None]:
    """Record a GM copy issued to an asynchronous pipe (its times still 0) and return what the pipe
    is to run: ``copy``, then the record given its times (:func:`retime_access`). A traced core
    process of a Python kernel puts the C recorder's in its place (mpnpu.runtime.native_trace)."""
    events = c.events
    assert events is not None
    index = len(events)
    t = monotonic_ns()
    events.append(gm_access(c, kind, gm, 0, site, pipe._value_ if c.pipe_aware else "", pipe._value_))
    c.pipes.observed_ns += monotonic_ns() - t  # (tracing time is not kernel time: PipeEngine.observed_ns)

    def timed_copy() -> None:
        t0 = clock_ns()
        copy()
        retime_access(events, index, t0)

    return timed_copy


#: the Python :func:`traced_copy`, whichever is in place
traced_copy_py = traced_copy
