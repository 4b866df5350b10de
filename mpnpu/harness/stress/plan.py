"""What a stress sweep runs and what it found, as data: configurations, chaos and migration
settings, the plan, and per-configuration and whole-sweep results (with their JSON form).

The run loop is :mod:`mpnpu.harness.stress.sweep`; shards of a sweep (:mod:`mpnpu.scale.shards`)
carry these same objects to slots and cluster workers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mpnpu.errors import UsageError
from mpnpu.harness.runner import DEFAULT_MAX_SAME_ERRORS, BatchResult, Variant, VariantResult
from mpnpu.harness.stress.chaos import ChaosReport, ChaosSchedule
from mpnpu.harness.stress.contention import COUNTERS
from mpnpu.harness.stress.placement import (
    MigratorReport,
    available_cpus,
)
from mpnpu.runtime.checks import check_block_dim, is_int
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.topology import KernelType, Topology

__all__ = [
    "MAX_CHAOS_SUSPEND_S",
    "PLACEMENTS",
    "SWEEP_FORMAT",
    "ChaosSettings",
    "ConfigResult",
    "Configuration",
    "MigrateSettings",
    "SweepPlan",
    "SweepResult",
    "configurations",
    "schedules_from_json",
]

SWEEP_FORMAT = "mpnpu.stress_sweep/1"

#: Placement names, in report order.
PLACEMENTS = ("none", "spread", "pack", "migrate")

#: Chaos must stay far below the cores' sync timeout (60 s): a suspended core only delays a launch.
MAX_CHAOS_SUSPEND_S = 0.1

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

    def schedule(self, block_dim: int, processes: int = 0) -> ChaosSchedule:
        """The schedule for ``block_dim`` (replayed if given, else generated; deterministic), over
        the device's ``processes`` core processes (0: a mix device's, 3 per block)."""
        n = processes or 3 * block_dim
        if block_dim in self.replay:
            sched = self.replay[block_dim]
            if sched.n_targets != n:
                raise UsageError(f"replayed chaos schedule for block_dim {block_dim} has {sched.n_targets} "
                                 f"targets, expected {n}")
            return sched
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
    max_same_errors: int = DEFAULT_MAX_SAME_ERRORS  # run_batch's: a variant stops after that many
    #: the operator's kernel type: which core processes a configuration's device has (a vector-only
    #: C++ kernel's block_dim counts vector cores, one process each)
    kernel_type: KernelType = KernelType.MIX_1_2

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

    def core_processes(self, block_dim: int) -> int:
        """How many core processes a configuration of ``block_dim`` runs."""
        return Topology(block_dim, self.kernel_type).n_cores

    def chaos_schedules(self) -> dict[int, ChaosSchedule]:
        """The schedule of every block_dim that runs with chaos, by block_dim."""
        return {bd: self.chaos.schedule(bd, self.core_processes(bd))
                for bd in sorted({c.block_dim for c in self.configurations if c.chaos})}


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
            "core_processes": self.batch.core_processes,  # (the device's: a vector-only kernel's differ)
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


