"""The launch seam, declared: what a kernel object may offer the runtime, what a native serving loop
is, and the view of its core that a front end's native runtime gets.

::

    parent (Device.launch_with)              core process (mpnpu.runtime.core)
    ─────────────────────────────            ──────────────────────────────────────────────
    KernelObject            name, callable   resolve, call, report by name
      + ChecksLaunch        refuse early     (parent only)
      + TakesInserts        rebuild for inserted syncs (parent only)
      + Immutable           sent once, then by handle
      + ServesNatively      parameter kinds  ──► after a plain launch ran: register(core, handle, loop)
                                                  -> NativeServing: serve(fd, replied) -> ServeOutcome
                                                     reaching its core only through NativeCore

A kernel given as a function or a "module:function" string is none of these: the runtime launches
it and knows nothing more. A kernel *object* (mpnpu.ascendc's CompiledKernel, the CPU-debug
runner's) satisfies :class:`KernelObject` and any of the optional protocols; :func:`hooks_of`
finds which, once per kernel, so that a launch reads plain attributes. The runtime imports no
front end: the protocols are all it knows of one.

A *plain launch* (:func:`plain_launch`) traces nothing, drops no sync point, holds no core and
inserts no sync: the launches a batch repeats, which a kernel object's short path and a native
serving loop may run without the runtime's per-launch machinery. The parent decides it from the
launch's options, the core from its command, a front end from its core's :attr:`NativeCore.plain`:
all three ask this one function.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping, NamedTuple, Protocol, Sequence, runtime_checkable

from . import kcontext
from .checks import cores_at_once
from .sync import ST_CALLS, ST_COLUMNS

if TYPE_CHECKING:
    from mpnpu.errors import SyncTimeoutError

    from .core import CoreContext
    from .hold import HoldRunner
    from .insert import InsertedSync, StageHooks
    from .pipe_events import Pipe
    from .sync import NativeRoutes
    from .topology import CoreType, KernelType, Topology


def plain_launch(trace: bool, dropped_syncs: Collection[str], hold: object | None, inserts: object) -> bool:
    """A launch with no trace, no dropped sync point, no hold and no inserted sync (``inserts``: the
    inserted syncs, or whether there are any)."""
    return not trace and not dropped_syncs and hold is None and not inserts


# -- kernel objects -------------------------------------------------------------------------------


@runtime_checkable
class KernelObject(Protocol):
    """A kernel given as an object rather than a function: picklable, callable in every core process
    as ``kernel(*args, **kwargs)``, named in reports by ``mpnpu_kernel_name``."""

    @property
    def mpnpu_kernel_name(self) -> str: ...

    def __call__(self, *args: Any) -> None: ...


@runtime_checkable
class ChecksLaunch(Protocol):
    """A kernel object that can tell a bad launch in the parent, before any core runs."""

    def mpnpu_check_launch(self, topology: Topology, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None: ...


@runtime_checkable
class TakesInserts(Protocol):
    """A kernel object that must be built differently for a launch that inserts syncs at stage
    boundaries: the kernel object to launch instead."""

    def mpnpu_with_inserts(self, inserts: Sequence[InsertedSync]) -> KernelObject: ...


@runtime_checkable
class ServesNatively(Protocol):
    """A kernel object whose plain launches a core may serve without its Python (a compiled
    kernel's library loop): ``mpnpu_native`` in the parent (its parameter kinds, for the launch to
    go as a native command; None: not now), ``mpnpu_native_register`` in a core after a plain
    launch of it ran there (the core's serving loop from then on)."""

    @property
    def mpnpu_native(self) -> tuple[str, ...] | None: ...

    def mpnpu_native_register(self, core: NativeCore, handle: int,
                              loop: NativeServing | None) -> NativeServing | None: ...


@dataclass(frozen=True)
class KernelHooks:
    """What a kernel reference offers the runtime, found once (:func:`hooks_of`)."""

    check: Callable[[Topology, Sequence[Any], Mapping[str, Any]], None] | None = None
    with_inserts: Callable[[Sequence[InsertedSync]], KernelObject] | None = None
    #: the object never changes once launched: a device sends it to a pool's cores once, then by handle
    immutable: bool = False
    #: it may be served natively (ServesNatively)
    native: ServesNatively | None = None


_NO_HOOKS = KernelHooks()


def hooks_of(ref: object) -> KernelHooks:
    """The optional protocols a kernel reference satisfies (a string or a function: none).
    ``mpnpu_immutable = True`` marks an immutable kernel object."""
    if isinstance(ref, str) or not isinstance(ref, KernelObject):
        return _NO_HOOKS
    return KernelHooks(ref.mpnpu_check_launch if isinstance(ref, ChecksLaunch) else None,
                       ref.mpnpu_with_inserts if isinstance(ref, TakesInserts) else None,
                       getattr(ref, "mpnpu_immutable", False) is True,
                       ref if isinstance(ref, ServesNatively) else None)


def pipes_mark(kernel: object) -> str:
    """How a kernel orders its pipes: "async" (a Python kernel marked ``api.pipelined``), "own" (a
    compiled kernel: it runs them itself) or "" (written without intra-core syncs). The mark is the
    attribute ``__mpnpu_pipes__``, set on a function by the decorator (a function satisfies no
    Protocol a type checker could see, so it is read here, in one place)."""
    mark = getattr(kernel, "__mpnpu_pipes__", "")
    return mark if isinstance(mark, str) else ""


# -- native serving -------------------------------------------------------------------------------


class Served(enum.Enum):
    """Why a native serving loop handed control back to its core process."""

    MESSAGE = "message"  # a frame for the core process's Python: the payload (bytes)
    FAILED = "failed"  # a native launch's kernel failed: (launch id, the exception)
    REPLY = "reply"  # a native launch ran; the core process posts its reply: the LaunchDone
    IDLE = "idle"  # no command for a second: the core process looks at its parent
    CLOSED = "closed"  # the pipe closed


class ServeOutcome(NamedTuple):
    """What :meth:`NativeServing.serve` returns: why it stopped and what comes with it."""

    kind: Served
    value: Any = None


class NativeServing(Protocol):
    """A core's native serving loop: reads the core's pipe and runs the launches it can."""

    def serve(self, fd: int, replied: bool) -> ServeOutcome:
        """Serve until the core process must act; ``replied``: it has just replied (the next
        command is likely close)."""
        ...


# -- the core as a front end's native runtime sees it ----------------------------------------------


class NativeCore:
    """The facet of one core's context that a front end's native runtime reaches (a compiled
    kernel's bridge and serving loop): who the core is, the launch's settings, the addresses of
    the shared objects it may drive itself, and the core's sync services. Made once per core
    (:attr:`CoreContext.native <mpnpu.runtime.core.CoreContext.native>`); nothing else of the
    context is a front end's to touch."""

    __slots__ = ("_ctx", "core_id", "core_type", "block_idx", "block_num", "sub_block_idx", "sub_block_num",
                 "kernel_type", "n_cores", "sync_timeout_s", "pipes_mode", "pipe_latency_us", "spin_us",
                 "auto_sync")

    def __init__(self, ctx: CoreContext) -> None:
        self._ctx = ctx
        info, topo, options = ctx.info, ctx.topology, ctx.options
        self.core_id: int = info.core_id
        self.core_type: CoreType = info.core_type
        self.block_idx: int = info.block_idx
        self.block_num: int = topo.block_dim
        self.sub_block_idx: int = info.sub_block_idx
        self.sub_block_num: int = info.sub_block_num
        self.kernel_type: KernelType = topo.kernel_type
        self.n_cores: int = topo.n_cores
        self.sync_timeout_s: float = options.sync_timeout_s
        self.pipes_mode: str = options.pipes  # RuntimeOptions.pipes
        self.pipe_latency_us: float = options.pipe_latency_us
        self.spin_us: float | None = options.spin_us  # None: the budget follows the CPUs
        self.auto_sync: bool = options.auto_sync  # the compiler's automatic synchronisation is modelled

    # -- the launch running now
    @property
    def plain(self) -> bool:
        """The launch is plain (:func:`plain_launch`)."""
        return self._ctx.plain

    @property
    def traced(self) -> bool:
        return self._ctx.events is not None

    @property
    def dropped_syncs(self) -> frozenset[str]:
        """The sync points this launch skips."""
        return self._ctx.dropped_syncs

    @property
    def hold(self) -> HoldRunner | None:
        """The race-directed hold of this launch, if any."""
        return self._ctx.hold

    @property
    def stage_hooks(self) -> StageHooks | None:
        """The syncs this launch inserts at stage boundaries, if any."""
        return self._ctx.stage_hooks

    def set_events_aside(self) -> list[Any] | None:
        """Take the core's trace event list away while native code records the trace itself;
        give it back with :meth:`restore_events`."""
        events, self._ctx.events = self._ctx.events, None
        return events

    def restore_events(self, events: list[Any] | None) -> None:
        self._ctx.events = events

    def make_plain(self) -> None:
        """Leave the context as a plain launch leaves it (a native loop's launches read it through
        the callbacks): pipes in order, and no trace, dropped sync, hold or inserted sync left over
        from the last launch through Python."""
        ctx = self._ctx
        if ctx.pipes.asynchronous:
            ctx.pipes.reset(False)
        if not ctx.plain:
            ctx.begin_launch(frozenset(), False)

    # -- the wait budget (mpnpu.runtime.spin)
    @property
    def spin_s(self) -> float:
        return self._ctx.spin_s

    @property
    def spin_cpus(self) -> int:
        """The CPUs the budget was worked out for (-1: the options fix it)."""
        return self._ctx.spin_cpus

    def refresh_spin(self) -> None:
        """Work the budget out again now (the core's CPUs changed)."""
        self._ctx.refresh_spin(force=True)

    def on_spin_change(self, listener: Callable[[float], None]) -> None:
        """Call ``listener(new budget)`` whenever the budget changes."""
        self._ctx.spin_listeners.append(listener)

    # -- the shared objects, for native code that drives them itself
    def last_words_address(self) -> int:
        return self._ctx.sync.last_words_address(self.core_id)

    def where_address(self) -> int:
        """Where native code writes this core's "where" line (SyncObjects.where_address)."""
        return self._ctx.sync.where_address(self.core_id)

    def calls_address(self) -> int:
        """This core's ST_CALLS cell of the status board: native code stores its API call count there."""
        return self._ctx.sync.status_address() + (self.core_id * ST_COLUMNS + ST_CALLS) * 8

    def native_routes(self) -> NativeRoutes | None:
        """The sync objects native code may drive itself, or None: every sync calls back. In a launch
        wider than the device's cores (whose SyncAll the core process refuses, and whose flags it
        routes) only the status board: SyncAll and flags call back, but a wait on a GM flag word
        still shows there, so that the watchdog sees a wait across waves that can never end."""
        routes = self._ctx.sync.native_routes(self.core_id)
        if routes is not None and self.block_num > cores_at_once(self._ctx.spec, self.kernel_type):
            return routes.status_only()
        return routes

    def status_address(self) -> int:
        return self._ctx.sync.status_address()

    def reply_board(self) -> dict[str, int]:
        """The reply board's addresses and layout (ReplyBoard.native_view)."""
        return self._ctx.sync.replies.native_view()

    # -- the core's sync services (mpnpu.runtime.kcontext: one implementation for every front end)
    def sync_all(self, aiv_only: bool, site: str) -> None:
        kcontext.sync_all(self._ctx, aiv_only, "", site)

    def flag_set(self, mode: int, flag_id: int, pipe: Pipe, site: str) -> None:
        kcontext.flag_set(self._ctx, mode, flag_id, pipe, "", site)

    def flag_wait_mode(self, flag_id: int, site: str = "") -> int:
        return kcontext.flag_wait_mode(self._ctx, flag_id, site or None)

    def flag_wait(self, mode: int, flag_id: int, site: str) -> None:
        kcontext.flag_wait(self._ctx, mode, flag_id, "", site)

    def mark_flag_set(self, mode: int, flag_id: int) -> None:
        """Native code set flag (mode, id): mark it as the core's own sets are marked (the parent
        clears the counters of every flag set)."""
        kcontext.flag_port(self._ctx, mode, flag_id).used = True

    # -- the errors of a sync native code made itself, as the core's own path raises them
    def sync_all_timeout(self, aiv_only: bool, count: int) -> SyncTimeoutError:
        return self._ctx.sync.sync_all_timeout(aiv_only, count, self.sync_timeout_s)

    def raise_flag_timeout(self, mode: int, flag_id: int) -> None:
        self._ctx.sync.raise_flag_timeout(mode, flag_id, self.sync_timeout_s)

    def raise_overflow(self, mode: int, flag_id: int, receiver: int) -> None:
        self._ctx.sync.raise_overflow(mode, flag_id, receiver)


def current_native_core() -> NativeCore | None:
    """The native facet of the core this process is, or None outside a core (the parent, a test)."""
    ctx = kcontext.current_or_none()
    return None if ctx is None else ctx.native
