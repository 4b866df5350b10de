"""Soaks: an operator's fixed kernel (every sync point in place) run for a long time, zero failures
expected; the result bounds the failure rate (rule of three: 3/n when no case-run failed).

- :func:`soak_fixed` — many case-runs of the fixed variant on one configuration: ``cases`` distinct
  seeded cases, each repeated until ``case_runs`` is reached (its golden computed once);
- :func:`soak_stress` — the fixed variant over every stress configuration, in rounds: each round
  runs every configuration for ``cases_per_round`` cases with a fresh case seed (the round) and
  chaos seed (1000 + round), so coverage stays even whenever the soak stops.

Both are sweeps run by :func:`mpnpu.scale.backend.run_sweep`, cut into shards that depend on the
arguments alone, so the same soak covers the same cases in this process, in parallel slots or on a
Ray cluster (:mod:`mpnpu.scale`). The watchdog's soak is
:mod:`mpnpu.harness.handshakes`. Library code: no printing, no argparse (``mpnpu soak`` is the
command, :mod:`mpnpu.report.text.soak` the text).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from mpnpu.harness.runner import make_variants
from mpnpu.harness.stats import rule_of_three, zero_failure_upper_bound
from mpnpu.harness.stress.plan import ChaosSettings, ConfigResult, Configuration, SweepPlan, SweepResult, configurations
from mpnpu.operators.protocol import Operator, kernel_type_of
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM, DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.scale.backend import Backend, ShardedSweep, run_sweep, shards_json
from mpnpu.scale.shards import Shard, ShardResult
from mpnpu.scale.slots import ShardRun

SOAK_STRESS_FORMAT = "mpnpu.stress_soak/1"
#: the stress soak's round r runs case seed r and chaos seed CHAOS_SEED_BASE + r
CHAOS_SEED_BASE = 1000


def _bounds(n: int, failed: int) -> dict[str, float | None]:
    ok = failed == 0 and n > 0
    return {"rule_of_three_upper95": rule_of_three(n) if ok else None,
            "exact_upper95": zero_failure_upper_bound(n) if ok else None}


@dataclass
class FixedSoak:
    """What :func:`soak_fixed` ran and found."""

    operator: str
    case_runs_wanted: int
    cases: int
    repeat: int
    seed: int
    block_dim: int
    shard_cases: int
    sweep: ShardedSweep
    wall_s: float

    @property
    def backend(self) -> Backend:
        return self.sweep.backend

    @property
    def shards(self) -> list[Shard]:
        return self.sweep.shards

    @property
    def run(self) -> ShardRun:
        return self.sweep.run

    @property
    def result(self) -> SweepResult:
        return self.sweep.result

    @property
    def rows(self) -> list[ConfigResult]:
        return [r for r in self.result.results if "fixed" in r.variants]

    @property
    def case_runs(self) -> int:
        return sum(r.variants["fixed"].case_runs for r in self.rows)

    @property
    def failed_case_runs(self) -> int:
        return sum(r.variants["fixed"].failed_case_runs for r in self.rows)

    @property
    def errors(self) -> list[str]:
        return [r.error for r in self.rows if r.error]

    @property
    def ms_per_case_run(self) -> float:
        return 1000 * self.wall_s / self.case_runs if self.case_runs else float("nan")

    @property
    def ok(self) -> bool:
        """No case-run failed, every one wanted ran, no shard had an error."""
        return self.failed_case_runs == 0 and self.case_runs >= self.case_runs_wanted and not self.errors

    def to_dict(self) -> dict[str, Any]:
        data = self.rows[0].batch.to_dict() if self.rows else {}
        data.update(wall_s=self.wall_s, ms_per_case_run=self.ms_per_case_run, case_runs=self.case_runs,
                    failed_case_runs=self.failed_case_runs, **_bounds(self.case_runs, self.failed_case_runs),
                    **self.sweep.provenance())
        return data


def fixed_soak_size(case_runs: int, cases: int) -> tuple[int, int]:
    """(cases, repeats) of a fixed soak of at least ``case_runs`` case-runs over ``cases`` cases
    (at most ``case_runs`` of them, each repeated as often as it takes)."""
    cases = min(cases, case_runs)
    return cases, -(-case_runs // cases)


def soak_fixed(op: Operator, *, case_runs: int, cases: int, block_dim: int = DEFAULT_BLOCK_DIM, seed: int = 0,
               shard_cases: int = 20, backend: Backend | None = None, options: RuntimeOptions = DEFAULT_OPTIONS,
               progress: Callable[[int], None] | None = None) -> FixedSoak:
    """At least ``case_runs`` case-runs of ``op``'s fixed variant: ``cases`` seeded cases (at most
    ``case_runs``) repeated as often as it takes (:func:`fixed_soak_size`), cut into shards of
    ``shard_cases`` cases."""
    cases, repeat = fixed_soak_size(case_runs, cases)
    plan = SweepPlan(configurations=[Configuration(block_dim)], variants=make_variants(op, ["fixed"]), cases=cases,
                     repeat=repeat, seed=seed, options=options, kernel_type=kernel_type_of(op))
    start = time.perf_counter()
    sweep = run_sweep(op, plan, backend or Backend(), shard_cases=shard_cases, progress=progress)
    wall = time.perf_counter() - start
    return FixedSoak(op.name, case_runs, cases, repeat, seed, block_dim, shard_cases, sweep, wall)


def soak_configurations(include_bd24: bool = True) -> list[Configuration]:
    """Every stress configuration the stress soak covers (block_dim 24 only with ``include_bd24``)."""
    configs = configurations([1, 2, 4], ["none", "spread", "pack", "migrate"], [0, 2], [False, True])
    if include_bd24:
        configs += configurations([24], ["none", "pack"], [0], [False, True])
    return configs


@dataclass
class StressSoak:
    """What :func:`soak_stress` ran and found: fixed case-runs and failures per configuration."""

    operator: str
    configurations: list[Configuration]
    rounds: int
    cases_per_round: int
    counts: dict[str, dict[str, Any]]  # configuration label -> case_runs, failed_case_runs, failures
    started: float = field(default_factory=time.monotonic)
    interrupted: bool = False
    run: ShardRun | None = None
    shards: list[Shard] = field(default_factory=list)

    @property
    def case_runs(self) -> int:
        return sum(c["case_runs"] for c in self.counts.values())

    @property
    def failed_case_runs(self) -> int:
        return sum(c["failed_case_runs"] for c in self.counts.values())

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    @property
    def shard_errors(self) -> int:
        return sum(1 for r in self.run.results if r.result.error) if self.run is not None else 0

    @property
    def ok(self) -> bool:
        return self.failed_case_runs == 0 and not self.shard_errors

    def add(self, r: ShardResult) -> None:
        """Count one finished shard."""
        v = r.result.variants["fixed"]
        c = self.counts[r.shard.config.label]
        c["case_runs"] += v.case_runs
        c["failed_case_runs"] += v.failed_case_runs
        if v.failed_case_runs or r.result.error:
            c["failures"].append({"round": r.shard.seed, "shard": r.shard.index, "error": r.result.error,
                                  "variant": v.to_dict()})

    def snapshot(self) -> dict[str, Any]:
        """The cumulative counts, as the JSON report holds them (written after every shard)."""
        total, failed = self.case_runs, self.failed_case_runs
        return {
            "format": SOAK_STRESS_FORMAT, "variant": "fixed", "rounds_planned": self.rounds,
            "case_runs": total, "failed_case_runs": failed, "elapsed_s": self.elapsed_s,
            **_bounds(total, failed), "interrupted": self.interrupted, "cases_per_round": self.cases_per_round,
            "configurations": self.counts, "chaos_seeds": [CHAOS_SEED_BASE + r for r in range(1, self.rounds + 1)],
        }

    def to_dict(self) -> dict[str, Any]:
        data = self.snapshot()
        if self.run is not None:
            data.update(shards_json(self.run, self.shards))
        return data


def soak_stress(op: Operator, *, case_runs: int, cases_per_round: int = 20, include_bd24: bool = True,
                duration_s: float | None = None, backend: Backend | None = None,
                options: RuntimeOptions = DEFAULT_OPTIONS,
                on_update: Callable[[StressSoak], None] | None = None) -> StressSoak:
    """Rounds of every stress configuration until ``case_runs`` fixed case-runs (or ``duration_s``, or
    Ctrl-C); ``on_update(soak)`` after every shard (e.g. to save the cumulative counts). Round ``r``
    (from 1) runs case seed ``r`` and chaos seed ``CHAOS_SEED_BASE + r``."""
    configs = soak_configurations(include_bd24)
    rounds = max(1, -(-case_runs // (len(configs) * cases_per_round)))
    plan = SweepPlan(configurations=configs, variants=make_variants(op, ["fixed"]), cases=cases_per_round, seed=1,
                     duration_s=duration_s, chaos=ChaosSettings(seed=CHAOS_SEED_BASE + 1), options=options,
                     kernel_type=kernel_type_of(op))
    soak = StressSoak(op.name, configs, rounds, cases_per_round,
                      {c.label: {"case_runs": 0, "failed_case_runs": 0, "failures": []} for c in configs})

    def on_result(r: ShardResult) -> None:
        soak.add(r)
        if on_update is not None:
            on_update(soak)

    sweep = run_sweep(op, plan, backend or Backend(), rounds=rounds, on_result=on_result)
    soak.run, soak.shards, soak.interrupted = sweep.run, sweep.shards, sweep.run.interrupted
    return soak
