"""Stress sweeps: run kernel variants under configurations of OS-level perturbations, count failures.

The library behind ``python -m mpnpu.stress`` (no printing, no argparse). A *configuration* is a
block_dim plus the perturbations active while its batch runs:

- placement (:mod:`~mpnpu.harness.stress.placement`): ``none`` (the OS decides), ``spread`` (core process
  ``i`` pinned to CPU ``i mod n``), ``pack`` (every core process on one CPU), ``migrate`` (re-pinned
  to random CPUs at random intervals, like ``stress-ng --affinity-rand``);
- background load (:mod:`~mpnpu.harness.stress.load`): N busy processes, bounded in time (pinned to the
  packed CPU under ``pack``, so they compete with the cores rather than idle next to them);
- chaos (:mod:`~mpnpu.harness.stress.chaos`): a seeded, looped schedule of SIGSTOP/SIGCONT of random core
  processes for short random spans, from a helper process.

None of them touches the kernel's code path or its data: they act on the core processes' pids
through the OS only. Per configuration the result holds, per variant, the batch counts of
:func:`mpnpu.harness.runner.run_batch` (failure rate with its 95% Wilson interval, time to first failure,
rule-of-three bound when clean), what each perturbation actually did, and per core process the
involuntary context switches and CPU time it accumulated (:mod:`~mpnpu.harness.stress.contention`).

Data flow of one configuration::

    run_config ── BackgroundLoad.start ──▶ run_batch(device, on_device=attach, progress=hook)
                                              attach: read affinity, pin / Migrator / ChaosRunner,
                                                      contention sample
                                              device rebuild listener (a failed launch forked
                                                      new core processes): release the old pids,
                                                      attach to the new ones
               ◀── release: stop chaos (resumes all), stop migrator, restore affinity, sample ──
               ── BackgroundLoad.stop

Why the chaos and pack settings reproduce the race without relying on a crowded machine: a core
process stopped by chaos while it waits in SyncAll S0 (or before it writes its masked targets)
leaves the other AI cores' vector cores free to read stale masked targets, whatever the number of
idle CPUs; ``pack`` puts every core process on one CPU, so the time-slicing that reorders the
stages is created by the configuration itself, not borrowed from the machine.

A sweep reuses one device for consecutive configurations with the same block_dim (a 24-AI-core
pool takes seconds to start) and splits an optional time budget across configurations: each gets
``remaining / configurations left``, enforced through ``run_batch(deadline_s=...)``, so time left
over by a quick configuration goes to the later ones.
"""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mpnpu.errors import MpnpuError, UsageError
from mpnpu.runtime.checks import check_block_dim, is_int
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.procutil import signals_blocked
from mpnpu.runtime.topology import Topology

from ..operator import Operator
from ..runner import BatchResult, Variant, VariantResult, run_batch
from .chaos import ChaosReport, ChaosRunner, ChaosSchedule
from .contention import COUNTERS, delta, sample
from .load import BackgroundLoad
from .placement import (
    Migrator,
    MigratorReport,
    ProcessGoneError,
    available_cpus,
    pack,
    read_affinity,
    restore,
    spread,
)

__all__ = [
    "PLACEMENTS",
    "Configuration",
    "configurations",
    "ChaosSettings",
    "MigrateSettings",
    "SweepPlan",
    "ConfigResult",
    "SweepResult",
    "run_config",
    "run_sweep",
]

SWEEP_FORMAT = "mpnpu.stress_sweep/1"

#: Placement names, in report order.
PLACEMENTS = ("none", "spread", "pack", "migrate")

#: Chaos must stay far below the cores' sync timeout (60 s): a suspended core only delays a launch.
MAX_CHAOS_SUSPEND_S = 0.1

#: Seconds reserved at the end of a configuration's budget for stopping perturbers and load.
_TEARDOWN_RESERVE_S = 0.3

#: Load processes outlive a configuration by at most this much if it has no time budget
#: (they are stopped when the configuration ends; the bound covers a parent that vanished).
_LOAD_BOUND_NO_BUDGET_S = 3600.0

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


# -- what to run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Configuration:
    """One point of a sweep: a block_dim and the perturbations active while its batch runs."""

    block_dim: int
    placement: str = "none"
    load: int = 0
    chaos: bool = False

    def __post_init__(self) -> None:
        check_block_dim(self.block_dim)
        if self.placement not in PLACEMENTS:
            raise UsageError(f"unknown placement {self.placement!r}; known: {', '.join(PLACEMENTS)}")
        if not is_int(self.load) or self.load < 0:
            raise UsageError(f"load must be an integer >= 0, got {self.load!r}")

    @property
    def core_processes(self) -> int:
        return 3 * self.block_dim

    @property
    def label(self) -> str:
        """e.g. ``bd4 pack load2 chaos`` (``bd1 none`` when nothing is perturbed)."""
        parts = [f"bd{self.block_dim}", self.placement]
        if self.load:
            parts.append(f"load{self.load}")
        if self.chaos:
            parts.append("chaos")
        return " ".join(parts)

    @property
    def perturbed(self) -> bool:
        return self.placement != "none" or self.load > 0 or self.chaos

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "block_dim": self.block_dim, "core_processes": self.core_processes,
                "placement": self.placement, "load": self.load, "chaos": self.chaos}


def configurations(block_dims: Iterable[int], placements: Iterable[str] = ("none",), loads: Iterable[int] = (0,),
                   chaos: Iterable[bool] = (False,)) -> list[Configuration]:
    """The cross product, block_dim outermost (so one device serves consecutive configurations)
    and chaos innermost (so each configuration sits next to its chaos twin in the report)."""
    out = [Configuration(bd, p, n, c) for bd in block_dims for p in placements for n in loads for c in chaos]
    if not out:
        raise UsageError("no configuration to run")
    if len(set(out)) != len(out):
        raise UsageError("the same configuration was asked for twice")
    return out


@dataclass(frozen=True)
class ChaosSettings:
    """How chaos schedules are made: one per block_dim, all from ``seed`` (so every placement of a
    block_dim sees the same sequence of suspensions: a controlled comparison).

    ``rate_hz`` is per core process: the schedule for ``n`` core processes has mean gap
    ``1 / (rate_hz · n)``, so each core is held about ``rate_hz · mean suspension`` of the time
    whatever the block_dim (20/s × ~7.8 ms ≈ 16% with the defaults). Suspensions are log-uniform on
    ``[min_suspend_s, max_suspend_s]``. The schedule covers ``period_s`` and loops.
    ``replay``: schedules to use instead of generating (by block_dim), e.g. from a sweep's JSON.
    """

    seed: int = 0
    rate_hz: float = 20.0
    max_suspend_s: float = 0.020
    min_suspend_s: float = 0.002
    period_s: float = 10.0
    replay: Mapping[int, ChaosSchedule] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not is_int(self.seed) or self.seed < 0:
            raise UsageError(f"chaos seed must be an integer >= 0, got {self.seed!r}")
        if not self.rate_hz > 0 or not self.period_s > 0:
            raise UsageError("chaos rate and period must be > 0")
        if not 0 < self.min_suspend_s <= self.max_suspend_s <= MAX_CHAOS_SUSPEND_S:
            raise UsageError(
                f"chaos suspensions need 0 < min <= max <= {MAX_CHAOS_SUSPEND_S * 1000:g} ms (far below the "
                f"{DEFAULT_OPTIONS.sync_timeout_s:g} s sync timeout), got {self.min_suspend_s * 1000:g}.."
                f"{self.max_suspend_s * 1000:g} ms"
            )

    def schedule(self, block_dim: int) -> ChaosSchedule:
        """The schedule for ``block_dim`` (replayed if given, else generated; deterministic)."""
        if block_dim in self.replay:
            sched = self.replay[block_dim]
            if sched.n_targets != 3 * block_dim:
                raise UsageError(f"replayed chaos schedule for block_dim {block_dim} has {sched.n_targets} "
                                 f"targets, expected {3 * block_dim}")
            return sched
        n = 3 * block_dim
        return ChaosSchedule.generate(self.seed, n, self.period_s, 1.0 / (self.rate_hz * n), self.max_suspend_s,
                                      min_suspend_s=self.min_suspend_s)

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "rate_per_core_hz": self.rate_hz, "min_suspend_s": self.min_suspend_s,
                "max_suspend_s": self.max_suspend_s, "period_s": self.period_s, "replayed": sorted(self.replay)}


@dataclass(frozen=True)
class MigrateSettings:
    """``migrate`` placement: every tick, each core process is pinned to a CPU drawn from
    ``random.Random(seed)``; ticks come every ``uniform(min_interval_s, max_interval_s)``."""

    seed: int = 0
    min_interval_s: float = 0.005
    max_interval_s: float = 0.05

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "min_interval_s": self.min_interval_s, "max_interval_s": self.max_interval_s}


@dataclass
class SweepPlan:
    """Everything a sweep needs, validated up front (a usage error before any process starts)."""

    configurations: Sequence[Configuration]
    variants: Sequence[Variant]
    cases: int = 20
    repeat: int = 1
    seed: int = 0  # case stream seed
    duration_s: float | None = None  # whole-sweep budget, split across configurations
    chaos: ChaosSettings = field(default_factory=ChaosSettings)
    migrate: MigrateSettings = field(default_factory=MigrateSettings)
    cpus: Sequence[int] | None = None  # CPUs to place on (default: all this process may use)
    options: RuntimeOptions = DEFAULT_OPTIONS

    def __post_init__(self) -> None:
        if not self.configurations:
            raise UsageError("no configuration to run")
        if not self.variants:
            raise UsageError("no variant to run")
        for name, value in (("cases", self.cases), ("repeat", self.repeat)):
            if not is_int(value) or value < 1:
                raise UsageError(f"{name} must be an integer >= 1, got {value!r}")
        if self.duration_s is not None and not self.duration_s > 0:
            raise UsageError(f"duration must be > 0 seconds, got {self.duration_s!r}")
        allowed = available_cpus()
        cpus = list(self.cpus) if self.cpus is not None else allowed
        bad = sorted(set(cpus) - set(allowed))
        if not cpus or bad:
            raise UsageError(f"CPUs {bad or '[]'} are not available (available: {allowed})")
        self.cpus = sorted(cpus)

    @property
    def case_runs_per_configuration(self) -> int:
        return self.cases * self.repeat * len(self.variants)

    def chaos_schedules(self) -> dict[int, ChaosSchedule]:
        """The schedule of every block_dim that runs with chaos, by block_dim."""
        return {bd: self.chaos.schedule(bd) for bd in sorted({c.block_dim for c in self.configurations if c.chaos})}


# -- results ----------------------------------------------------------------------------------------


@dataclass
class ConfigResult:
    """What one configuration did: the batch counts and what the perturbations actually did."""

    config: Configuration
    batch: BatchResult
    budget_s: float | None = None
    elapsed_s: float = 0.0
    active: list[str] = field(default_factory=list)  # one line per perturbation, "none" if nothing
    affinity: dict[str, Any] = field(default_factory=dict)
    chaos_runs: list[ChaosReport] = field(default_factory=list)  # one per pool generation
    migrator_runs: list[MigratorReport] = field(default_factory=list)
    load: dict[str, Any] = field(default_factory=dict)
    pool_rebuilds: int = 0
    contention: list[dict[str, Any]] = field(default_factory=list)  # per core process
    notes: list[str] = field(default_factory=list)
    error: str = ""  # set when the configuration could not run (device failure)

    @property
    def variants(self) -> dict[str, VariantResult]:
        return self.batch.variants

    @property
    def interrupted(self) -> bool:
        return self.batch.interrupted

    @property
    def expected_clean_are_clean(self) -> bool:
        return self.batch.expected_clean_are_clean and not self.error

    def contention_total(self) -> dict[str, float]:
        return {k: sum(row[k] for row in self.contention) for k in COUNTERS}

    def chaos_summary(self) -> dict[str, Any]:
        runs = self.chaos_runs
        return {
            "entries_executed": sum(r.entries_executed for r in runs),
            "entries_vanished": sum(r.entries_vanished for r in runs),
            "suspended_s_total": sum(r.suspended_s_total for r in runs),
            "max_lateness_s": max((r.max_lateness_s for r in runs), default=0.0),
            "first_entry": runs[0].start_entry if runs else 0,
            "next_entry": runs[-1].next_entry if runs else 0,
        }

    def to_dict(self) -> dict[str, Any]:
        variants = {}
        for name, v in self.batch.variants.items():
            d = v.to_dict()
            d.pop("hazards", None)  # stress runs never racecheck
            variants[name] = d
        return {
            **self.config.to_dict(),
            "active": self.active,
            "budget_s": self.budget_s,
            "elapsed_s": self.elapsed_s,
            "interrupted": self.interrupted,
            "error": self.error,
            "expected_clean_are_clean": self.expected_clean_are_clean,
            "pool_rebuilds": self.pool_rebuilds,
            "variants": variants,
            "perturbations": {
                "affinity": self.affinity,
                "chaos": {**self.chaos_summary(), "runs": [r.to_dict() for r in self.chaos_runs]}
                if self.config.chaos else None,
                "migrator": [r.to_dict() for r in self.migrator_runs] if self.config.placement == "migrate" else None,
                "load": self.load or None,
            },
            "contention": self.contention,
            "contention_total": self.contention_total(),
            "notes": self.notes,
        }


@dataclass
class SweepResult:
    """A sweep's configurations, in the order run; ``interrupted`` if it stopped early."""

    plan: SweepPlan
    operator: str
    results: list[ConfigResult] = field(default_factory=list)
    elapsed_s: float = 0.0
    interrupt: BaseException | None = field(default=None, repr=False)  # the KeyboardInterrupt, if any
    schedules: dict[int, ChaosSchedule] = field(default_factory=dict)
    skipped: list[Configuration] = field(default_factory=list)  # not started (interrupted, or no time left)

    @property
    def interrupted(self) -> bool:
        return self.interrupt is not None

    @property
    def expected_clean_are_clean(self) -> bool:
        return all(r.expected_clean_are_clean for r in self.results)

    def merged(self) -> dict[str, VariantResult]:
        """Per variant, its results in every configuration as one (:meth:`VariantResult.merge`)."""
        out: dict[str, VariantResult] = {}
        for r in self.results:
            for name, v in r.variants.items():
                out[name] = v if name not in out else out[name].merge(v)
        return out

    def verdict_line(self) -> str:
        """The one-line verdict (what ``--quiet`` prints): OK when every variant expected clean stayed clean."""
        parts = []
        totals = self.totals()
        for v in self.plan.variants:
            t = totals.get(v.name, {"case_runs": 0, "failed_case_runs": 0})
            k, n = t["failed_case_runs"], t["case_runs"]
            if v.expected_clean:
                parts.append(f"{v.name} clean in {n} case-runs" if k == 0 else f"{v.name} FAILED {k}/{n} case-runs")
            else:
                parts.append(f"{v.name} failed {k}/{n} case-runs")
        errors = sum(1 for r in self.results if r.error)
        if errors:
            parts.append(f"{errors} configuration(s) could not run")
        verdict = "OK" if self.expected_clean_are_clean else "NOT OK"
        return f"verdict: {verdict}: " + "; ".join(parts) + f" over {len(self.results)} configuration(s)"

    def totals(self) -> dict[str, dict[str, int]]:
        """Case-runs and failures per variant over every configuration."""
        return {name: {"case_runs": v.case_runs, "failed_case_runs": v.failed_case_runs}
                for name, v in self.merged().items()}

    def to_dict(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "format": SWEEP_FORMAT,
            "operator": self.operator,
            "cpus": len(plan.cpus or []),
            "cpu_list": list(plan.cpus or []),
            "cases": plan.cases,
            "repeat": plan.repeat,
            "case_seed": plan.seed,
            "variants": [v.name for v in plan.variants],
            "duration_s": plan.duration_s,
            "elapsed_s": self.elapsed_s,
            "interrupted": self.interrupted,
            "expected_clean_are_clean": self.expected_clean_are_clean,
            "totals": self.totals(),
            "chaos": {**plan.chaos.to_dict(),
                      "schedules": {str(bd): s.to_dict() for bd, s in sorted(self.schedules.items())}},
            "migrate": plan.migrate.to_dict(),
            "configurations": [r.to_dict() for r in self.results],
            "skipped": [c.to_dict() for c in self.skipped],
        }


def schedules_from_json(data: Mapping[str, Any]) -> dict[int, ChaosSchedule]:
    """Chaos schedules by block_dim from a sweep's JSON (``--chaos-replay``)."""
    if data.get("format") != SWEEP_FORMAT:
        raise UsageError(f"not a stress sweep report (format {data.get('format')!r}, expected {SWEEP_FORMAT!r})")
    try:
        raw = data["chaos"]["schedules"]
        return {int(bd): ChaosSchedule.from_dict(s) for bd, s in raw.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise UsageError(f"malformed chaos schedules in the sweep report: {e}") from None


# -- one configuration ---------------------------------------------------------------------------


class _Perturbations:
    """Applies a configuration's per-pid perturbations to a device's core processes, follows pool
    rebuilds (new pids), and undoes everything on :meth:`release`. Every public method runs with
    SIGINT/SIGTERM blocked, so a Ctrl-C lands before or after it, never half-way (and the helpers
    it starts are always owned by this object)."""

    def __init__(self, result: ConfigResult, plan: SweepPlan, schedule: ChaosSchedule | None) -> None:
        self.r = result
        self.config = result.config
        self.plan = plan
        self.cpus = list(plan.cpus or available_cpus())
        self.schedule = schedule
        self.next_entry = 0
        self.device: Device | None = None
        self.generation = -1
        self.pids: list[int] = []
        self.saved: dict[int, list[int]] = {}
        self.before: dict[int, Any] = {}
        self.chaos: ChaosRunner | None = None
        self.migrator: Migrator | None = None
        self.on_case_run: Callable[[Device], None] | None = None

    # called by run_batch ------------------------------------------------------------------------

    def attach(self, device: Device) -> None:
        with signals_blocked(*_SIGNALS):
            self.device = device
            self._apply()
            device.add_rebuild_listener(self._follow_rebuild)

    def after_case_run(self) -> None:
        if self.device is not None and self.on_case_run is not None:
            self.on_case_run(self.device)

    def release(self) -> None:
        with signals_blocked(*_SIGNALS):
            if self.device is not None:
                self.device.remove_rebuild_listener(self._follow_rebuild)
            self._undo(final=True)

    def _follow_rebuild(self, device: Device) -> None:
        """The device forked new core processes (a launch failed): move the perturbations to them."""
        with signals_blocked(*_SIGNALS):
            self._undo(final=False)
            self.r.pool_rebuilds += 1
            self._apply()

    # internals ------------------------------------------------------------------------------------

    def _apply(self) -> None:
        device = self.device
        assert device is not None
        self.generation = device.pool_generation
        topo = Topology(device.block_dim)
        names = [c.short for c in topo.cores]
        try:
            pids = device.core_pids()
            self.saved = read_affinity(pids)
            self.pids = pids
            placement = self.config.placement
            if placement == "spread":
                spread(pids, self.cpus)
            elif placement == "pack":
                pack(pids, self.cpus)
            if "read_back" not in self.r.affinity:
                # Read from the OS after applying, not echoed from what was asked.
                back = read_affinity(pids)
                self.r.affinity["read_back"] = {names[i]: back[pid] for i, pid in enumerate(pids)}
            if placement == "migrate":
                m = self.plan.migrate
                self.migrator = Migrator(pids, self.cpus, seed=m.seed, min_interval_s=m.min_interval_s,
                                         max_interval_s=m.max_interval_s).start()
            if self.config.chaos and self.schedule is not None:
                self.chaos = ChaosRunner(self.schedule, pids, loop=True, start_entry=self.next_entry).start()
            self.before = sample(pids)
        except ProcessGoneError as e:
            # A core died between launches: the next launch fails and rebuilds the pool, and the
            # new generation is perturbed again. Until then this generation runs unperturbed.
            self._undo(final=False)
            self.r.notes.append(f"pool generation {self.generation}: perturbations not applied ({e})")

    def _undo(self, final: bool) -> None:
        pids = self.pids
        if not pids:
            return
        names = [c.short for c in Topology(len(pids) // 3).cores]
        if final and pids:
            try:
                at_end = read_affinity(pids)
                self.r.affinity["at_end"] = {names[i]: at_end[pid] for i, pid in enumerate(pids)}
            except ProcessGoneError:
                pass
        try:
            if self.chaos is not None:
                report = self.chaos.stop()  # resumes every target, from the helper and again from here
                self.r.chaos_runs.append(report)
                self.next_entry = report.next_entry
        finally:
            self.chaos = None
            try:
                if self.migrator is not None:
                    self.r.migrator_runs.append(self.migrator.stop())  # restores the pre-migration affinity
            finally:
                self.migrator = None
                restore(self.saved)
                after = sample(pids)
                d = delta(self.before, after)
                for i, pid in enumerate(pids):
                    if pid in d:
                        self.r.contention.append({"core": names[i], "pid": pid, "pool_generation": self.generation,
                                                  **d[pid]})
                self.pids, self.saved, self.before = [], {}, {}


def _describe(config: Configuration, plan: SweepPlan, schedule: ChaosSchedule | None) -> list[str]:
    cpus = list(plan.cpus or [])
    out = []
    if config.placement == "spread":
        out.append(f"placement spread: core process i pinned to CPU i mod {len(cpus)} of {cpus} (round-robin)")
    elif config.placement == "pack":
        out.append(f"placement pack: all {config.core_processes} core processes on CPU {cpus[0]}")
    elif config.placement == "migrate":
        m = plan.migrate
        out.append(f"placement migrate: each core process re-pinned to a random CPU of {cpus} every "
                   f"{m.min_interval_s * 1000:g}-{m.max_interval_s * 1000:g} ms (seed {m.seed})")
    if config.load:
        where = f"pinned to CPU {cpus[0]}" if config.placement == "pack" else "placed by the OS"
        out.append(f"load: {config.load} busy process{'es' if config.load > 1 else ''} ({where})")
    if config.chaos and schedule is not None:
        c = plan.chaos
        out.append(
            f"chaos: seed {schedule.seed}, ~{c.rate_hz:g} suspensions/s per core process of "
            f"{schedule.min_suspend_s * 1000:g}-{schedule.max_suspend_s * 1000:g} ms "
            f"({len(schedule)} entries looped every {schedule.duration_s:g} s)"
        )
    return out or ["none: the OS schedules the core processes freely"]


def _empty_batch(op: Operator, plan: SweepPlan, block_dim: int) -> BatchResult:
    return BatchResult(
        operator=op.name, seed=plan.seed, cases=plan.cases, repeat=plan.repeat, block_dim=block_dim, probe="",
        cpus=len(plan.cpus or []), variants={v.name: VariantResult(v, plan.repeat) for v in plan.variants},
    )


def run_config(
    op: Operator,
    config: Configuration,
    plan: SweepPlan,
    *,
    device: Device | None = None,
    budget_s: float | None = None,
    schedule: ChaosSchedule | None = None,
    progress: Callable[[int], None] | None = None,
    on_case_run: Callable[[Device], None] | None = None,
) -> ConfigResult:
    """Run ``plan``'s variants over ``plan.cases`` × ``plan.repeat`` under ``config``.

    Uses ``device`` if given (its block_dim must match), else makes one and closes it.
    ``budget_s`` bounds the configuration (from this call); ``progress(n)`` is called after every
    case-run, as is ``on_case_run(device)`` (tests read the placement back through it). Ctrl-C:
    the returned result's ``batch.interrupt`` is set; every perturbation is undone before returning.
    """
    start = time.perf_counter()
    if config.chaos and schedule is None:
        schedule = plan.chaos.schedule(config.block_dim)
    result = ConfigResult(config, _empty_batch(op, plan, config.block_dim), budget_s=budget_s,
                          active=_describe(config, plan, schedule))
    perturb = _Perturbations(result, plan, schedule)
    perturb.on_case_run = on_case_run
    load: BackgroundLoad | None = None
    own_device = device is None
    if device is not None and device.block_dim != config.block_dim:
        raise UsageError(f"device has block_dim {device.block_dim}, configuration wants {config.block_dim}")

    def hook(n: int) -> None:
        perturb.after_case_run()
        if progress is not None:
            progress(n)

    try:
        if config.load:
            cpus = list(plan.cpus or [])
            bound = (budget_s + 10.0) if budget_s is not None else _LOAD_BOUND_NO_BUDGET_S
            with signals_blocked(*_SIGNALS):
                load = BackgroundLoad(config.load, bound, cpus=cpus[:1] if config.placement == "pack" else None)
                load.start()
            result.load = {"processes": config.load, "pids": load.pids, "bound_s": bound,
                           "cpus": cpus[:1] if config.placement == "pack" else None}
        if device is None:
            device = Device(config.block_dim, options=plan.options)
        deadline = None
        if budget_s is not None:
            deadline = max(0.0, budget_s - (time.perf_counter() - start) - _TEARDOWN_RESERVE_S)
        result.batch = run_batch(
            op, cases=plan.cases, repeat=plan.repeat, variants=plan.variants, seed=plan.seed, device=device,
            options=plan.options, progress=hook, deadline_s=deadline, on_device=perturb.attach,
        )
        if budget_s is not None and result.batch.interrupted and result.batch.interrupt is None:
            result.notes.append(f"stopped at its time budget ({budget_s:.1f} s)")
    except KeyboardInterrupt as e:  # outside run_batch (load start, device start): nothing measured
        result.batch.interrupted, result.batch.interrupt = True, e
    except MpnpuError as e:
        if isinstance(e, UsageError):
            raise
        result.error = str(e)
    finally:
        with signals_blocked(*_SIGNALS):
            try:
                perturb.release()
            finally:
                if load is not None:
                    result.load["alive_at_end"] = load.alive()
                    load.stop()
                if own_device and device is not None:
                    device.close()
        result.elapsed_s = time.perf_counter() - start
    return result


# -- a sweep --------------------------------------------------------------------------------------


def run_sweep(
    op: Operator,
    plan: SweepPlan,
    *,
    progress: Callable[[int], None] | None = None,
    on_config: Callable[[int, Configuration], None] | None = None,
    on_result: Callable[[ConfigResult], None] | None = None,
) -> SweepResult:
    """Run every configuration of ``plan`` in order; stop early on Ctrl-C (``result.interrupt``).

    ``on_config(i, config)`` is called as configuration ``i`` starts, ``on_result(result)`` as it
    ends (e.g. to save partial results of a long soak).
    """
    result = SweepResult(plan, op.name, schedules=plan.chaos_schedules())
    configs = list(plan.configurations)
    start = time.perf_counter()
    device: Device | None = None
    try:
        for i, config in enumerate(configs):
            if on_config is not None:
                on_config(i, config)
            if device is None or device.block_dim != config.block_dim:
                if device is not None:
                    with signals_blocked(*_SIGNALS):
                        device.close()
                    device = None
                try:
                    device = Device(config.block_dim, options=plan.options)
                except MpnpuError as e:
                    if isinstance(e, UsageError):
                        raise
                    result.results.append(ConfigResult(config, _empty_batch(op, plan, config.block_dim), error=str(e)))
                    continue
            budget = None
            if plan.duration_s is not None:
                # Computed after the device started: a 72-process pool's start is the sweep's cost,
                # not one configuration's.
                budget = max(0.0, (plan.duration_s - (time.perf_counter() - start)) / (len(configs) - i))
            r = run_config(op, config, plan, device=device, budget_s=budget,
                           schedule=result.schedules.get(config.block_dim), progress=progress)
            result.results.append(r)
            if on_result is not None:
                on_result(r)
            if r.batch.interrupt is not None:
                result.interrupt = r.batch.interrupt
                break
    except KeyboardInterrupt as e:  # between configurations, or while a device started
        result.interrupt = e
    finally:
        if device is not None:
            with signals_blocked(*_SIGNALS):
                device.close()
        if result.interrupt is not None:
            result.skipped = configs[len(result.results):]
        result.elapsed_s = time.perf_counter() - start
    return result


def suggest_cases(total_case_runs: int, n_configs: int, n_variants: int, repeat: int = 1) -> int:
    """Cases per configuration so a sweep makes at least ``total_case_runs`` case-runs."""
    return max(1, math.ceil(total_case_runs / (n_configs * n_variants * repeat)))
