"""The emulated device's fixed facts, the runtime's defaults and a launch's options, in one place."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from mpnpu import settings
from mpnpu.errors import UsageError

if TYPE_CHECKING:
    from .hold import HoldPlan

#: block_dim of a Device, and of every tool, on every machine, unless told otherwise (why 1:
#: :data:`mpnpu.settings.BLOCK_DIM`, where every default a user can change is kept)
DEFAULT_BLOCK_DIM = settings.BLOCK_DIM.default


@dataclass(frozen=True)
class DeviceSpec:
    """What the emulated chip has: AI core count and local buffer capacities (bytes).

    The defaults are those of an Atlas A2 class chip (24 AI cores, each 1 cube + 2 vector cores).
    On the device a launch wider than the cores runs in waves (the extra blocks start only as earlier
    ones finish), so a SyncAll in it would hang; mpnpu runs such a launch and refuses that SyncAll
    (mpnpu.runtime.checks.check_launch_width).
    """

    name: str = "Atlas A2 (24 AI cores)"
    ai_cores: int = 24
    ub_bytes: int = 192 * 1024  # Unified Buffer, per vector core
    l1_bytes: int = 512 * 1024  # per cube core
    l0a_bytes: int = 64 * 1024
    l0b_bytes: int = 64 * 1024
    l0c_bytes: int = 128 * 1024

    def capacity(self, memory: str) -> int:
        return {
            "UB": self.ub_bytes,
            "L1": self.l1_bytes,
            "L0A": self.l0a_bytes,
            "L0B": self.l0b_bytes,
            "L0C": self.l0c_bytes,
        }[memory]


DEFAULT_SPEC = DeviceSpec()


@dataclass(frozen=True)
class RuntimeOptions:
    """Timeouts and knobs of the core pool. Every wait in mpnpu is bounded by one of these."""

    #: a SyncAll or flag wait inside a core gives up after this long (the device would hang)
    sync_timeout_s: float = 60.0
    #: a whole launch is abandoned (cores killed, pool rebuilt) after this long
    launch_timeout_s: float = settings.TIMEOUT.default
    #: how often the parent looks at core status while a launch runs (deadlock checks)
    watchdog_interval_s: float = 0.05
    #: every unfinished core blocked and nothing changing for this long is reported as a deadlock
    stall_grace_s: float = settings.STALL_GRACE.default
    #: how long close() waits for cores to exit by themselves before killing them
    shutdown_grace_s: float = 2.0
    #: how long the parent waits for the other cores to report once one has failed
    failure_grace_s: float = 0.2
    #: GM is allocated in shared-memory segments of at least this size
    gm_segment_bytes: int = 64 * 1024 * 1024
    #: fill freed GM blocks with this byte (None: leave stale contents, as the device does)
    gm_poison: int | None = None
    #: how a core runs its data-movement pipes (mpnpu.runtime.pipes): "kernel" = asynchronously for
    #: kernels marked api.pipelined, in order for the others; "async" / "sync" = for every kernel
    #: ("sync" runs every instruction at issue: faster, blind to intra-core races)
    pipes: str = settings.PIPES.default
    #: asynchronous pipes: the longest an issued instruction stays queued while the kernel thread
    #: keeps issuing (docs/pipes.md). Longer shows intra-core races that need a copy to be late for
    #: longer; it changes only *when* copies run.
    pipe_latency_us: float = settings.PIPE_LATENCY_US.default
    #: check every access of a Python kernel against its GM tensor or local buffer (mpnpu.runtime.memcheck);
    #: False: local tensors index as numpy arrays do (clipped, counted from the end) and a GM view
    #: outside its tensor fails without the report (scripts/bench_memcheck.py measures the cost)
    memcheck: bool = True
    #: racecheck's assumption about how the kernel was built: with the compiler's automatic
    #: synchronisation between MTE2/MTE3/V and the scalar unit (True, the compiler's default in kernel
    #: projects), or without it (mpnpu.racecheck.intracore); it changes no run, only the analysis
    auto_sync: bool = True
    #: how long a waiting core looks again and again before it sleeps, in microseconds: for the next
    #: launch command, and in the C++ library's SyncAll and cross-core flag waits (mpnpu.runtime.spin).
    #: None: MPNPU_SPIN_US if set, else 200 unless there are more than 2 core processes per CPU, then 0;
    #: 0: sleep at once
    spin_us: float | None = None

    def __post_init__(self) -> None:
        if self.spin_us is not None and (isinstance(self.spin_us, bool) or not isinstance(self.spin_us, (int, float))
                                         or not 0 <= self.spin_us <= 1e6):
            raise UsageError(f"RuntimeOptions.spin_us must be None or a number in [0, 1e6], not {self.spin_us!r}")
        if not isinstance(self.memcheck, bool):
            raise UsageError(f"RuntimeOptions.memcheck must be True or False, not {self.memcheck!r}")
        if self.pipes not in settings.PIPES.choices:
            raise UsageError(f"RuntimeOptions.pipes must be 'kernel', 'async' or 'sync', not {self.pipes!r}")
        if isinstance(self.pipe_latency_us, bool) or not isinstance(self.pipe_latency_us, (int, float)) \
                or not 0 < self.pipe_latency_us <= 1e7:
            raise UsageError(
                f"RuntimeOptions.pipe_latency_us must be a number in (0, 1e7], not {self.pipe_latency_us!r}")


DEFAULT_OPTIONS = RuntimeOptions()


@dataclass(frozen=True, init=False)
class LaunchOptions:
    """How one launch runs, apart from the kernel's own arguments: ``Device.launch_with(options,
    kernel, *args, **kwargs)``. Keyword-only and frozen; every field is checked when it is made.

    Kept apart from the kernel's arguments so that no option name can collide with a kernel's own
    parameter (a kernel may take ``trace`` or ``timeout``): ``Device.launch`` passes every
    argument to the kernel.
    """

    #: record every GM access, sync and stage of every core (LaunchResult.trace), for racecheck
    trace: bool = False
    #: named sync points (the ``name=`` of sync calls) this launch skips
    drop_syncs: frozenset[str] = field(default_factory=frozenset)
    #: abandon the launch after this long (None: RuntimeOptions.launch_timeout_s)
    timeout_s: float | None = None
    #: race-directed reproduction: hold one core before one GM access (mpnpu.runtime.hold)
    hold: HoldPlan | None = None
    #: syncs inserted at stage boundaries for this launch, e.g. ("after:TargetProcess",)
    insert_syncs: tuple[str, ...] = ()

    def __init__(self, *, trace: bool = False, drop_syncs: Iterable[str] = (), timeout_s: float | None = None,
                 hold: HoldPlan | None = None, insert_syncs: Iterable[str] = ()) -> None:
        if not isinstance(trace, bool):
            raise UsageError(f"LaunchOptions.trace must be True or False, not {trace!r}")
        for name, value in (("drop_syncs", drop_syncs), ("insert_syncs", insert_syncs)):
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise UsageError(f"LaunchOptions.{name} must be a collection of names, e.g. ('S1',), not {value!r}")
        if timeout_s is not None and (isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float))
                                      or not timeout_s > 0):
            raise UsageError(f"LaunchOptions.timeout_s must be a positive number of seconds, not {timeout_s!r}")
        object.__setattr__(self, "trace", trace)
        object.__setattr__(self, "drop_syncs", frozenset(drop_syncs))
        object.__setattr__(self, "timeout_s", timeout_s)
        object.__setattr__(self, "hold", hold)
        object.__setattr__(self, "insert_syncs", tuple(insert_syncs))


#: a launch with every option at its default (what ``Device.launch`` uses)
PLAIN_LAUNCH = LaunchOptions()


def launch_options(*, trace: bool = False, drop_syncs: Iterable[str] = ()) -> LaunchOptions:
    """``LaunchOptions(trace=..., drop_syncs=...)``, or PLAIN_LAUNCH itself when both are at their
    defaults (an operator's every plain case-run would otherwise build and check one)."""
    if trace is False and isinstance(drop_syncs, (frozenset, tuple)) and not drop_syncs:
        return PLAIN_LAUNCH
    return LaunchOptions(trace=trace, drop_syncs=drop_syncs)

#: prefix of every shared-memory segment mpnpu creates: "mpnpu_<pid>_<start time>_<n>"
SEGMENT_PREFIX = "mpnpu_"
