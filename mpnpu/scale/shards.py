"""Shards: a sweep cut into independent pieces that run anywhere and merge back into one report.

A shard is (configuration, case range, seed): one configuration of a stress sweep (block_dim,
placement, load, chaos) run over cases ``[case_start, case_stop)`` of case stream ``seed``, each
case ``repeat`` times, through the plan's variants. The list of shards is a function of the
command alone (:func:`make_shards`), never of how many slots or machines run it, so the same
command covers the same cases on 1 slot, 8 slots or a cluster.

Where a shard runs it gets a CPU set (:mod:`mpnpu.runtime.cpuset`) sized to its block_dim out
of the CPUs its slot or task was given; the thread running it is pinned there, so its device's
core processes and the process dispatching them compete for those CPUs alone. A shard's result
carries where and how it ran (node, pid, CPUs, block_dim, placement, packing, attempt).

Merging (:func:`merge_shards`): only shards of the same configuration that ran under the same
packing (core processes per CPU set size) are pooled into one row: their counts add, failing
cases are listed by global case index, Wilson intervals are recomputed on the pooled counts. A
shard whose worker was lost is rerun whole and only a result that came back whole (or cut short
by Ctrl-C, marked interrupted) is ever counted, so nothing is counted twice.

Data flow::

    make_shards(configs, cases, shard_cases) ─► [Shard] ─► executor (in-process | slots | Ray)
         each: run_shard(shard, plan, cpus) ─► ShardResult (ConfigResult + provenance)
    merge_shards([ShardResult]) ─► [ConfigResult] per (configuration, packing) ─► SweepResult
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from mpnpu.errors import InvalidArgumentError, UsageError
from mpnpu.harness.runner import DEFAULT_MAX_SAME_ERRORS, BatchResult, Variant, VariantResult
from mpnpu.harness.stress.plan import ChaosSettings, ConfigResult, Configuration, MigrateSettings, SweepPlan
from mpnpu.harness.stress.sweep import run_config
from mpnpu.operators.protocol import (
    Operator,
    cpu_set_for,
    device_for,
    kernel_type_of,
    make_case_for,
    topology_for,
)
from mpnpu.runtime import cpuset
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.device import Device

__all__ = [
    "Shard",
    "ShardPlan",
    "ShardResult",
    "Retry",
    "make_shards",
    "plan_shards",
    "run_shard",
    "merge_shards",
    "merge_variant_results",
]


@dataclass(frozen=True)
class Shard:
    """One piece of a sweep: a configuration over cases [case_start, case_stop) of stream ``seed``."""

    index: int
    config: Configuration
    case_start: int
    case_stop: int
    seed: int = 0  # case stream seed
    repeat: int = 1
    chaos_seed: int = 0  # seed of this shard's chaos schedule and migration

    @property
    def cases(self) -> int:
        return self.case_stop - self.case_start

    def case_runs(self, n_variants: int) -> int:
        return self.cases * self.repeat * n_variants

    @property
    def label(self) -> str:
        return f"#{self.index} {self.config.label} cases {self.case_start}-{self.case_stop - 1} seed {self.seed}"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "configuration": self.config.label, "case_start": self.case_start,
                "case_stop": self.case_stop, "seed": self.seed, "repeat": self.repeat, "chaos_seed": self.chaos_seed}


def make_shards(configs: Sequence[Configuration], cases: int, *, shard_cases: int | None = None, seed: int = 0,
                repeat: int = 1, chaos_seed: int = 0, first_index: int = 0) -> list[Shard]:
    """Every configuration's cases ``0..cases-1`` cut into ranges of ``shard_cases`` (default: one
    shard per configuration), configuration by configuration. Depends on its arguments alone."""
    if shard_cases is not None and shard_cases < 1:
        raise UsageError(f"cases per shard must be >= 1, got {shard_cases}")
    size = shard_cases or cases
    out: list[Shard] = []
    for config in configs:
        for start in range(0, cases, size):
            out.append(Shard(first_index + len(out), config, start, min(cases, start + size), seed, repeat, chaos_seed))
    return out


def plan_shards(plan: SweepPlan, *, shard_cases: int | None = None, rounds: int = 1) -> list[Shard]:
    """The shards of a sweep: ``plan``'s configurations over its cases, repeats and seeds, cut into
    ranges of ``shard_cases`` (:func:`make_shards`, chaos seed ``plan.chaos.seed``). With ``rounds``
    > 1 the same again, round after round, each with the case seed and the chaos seed one higher
    (fresh cases and schedules in every round, so coverage stays even whenever the run stops)."""
    if rounds < 1:
        raise UsageError(f"rounds must be >= 1, got {rounds}")
    out: list[Shard] = []
    for r in range(rounds):
        out += make_shards(plan.configurations, plan.cases, shard_cases=shard_cases, seed=plan.seed + r,
                           repeat=plan.repeat, chaos_seed=plan.chaos.seed + r, first_index=len(out))
    return out


@dataclass(frozen=True)
class ShardPlan:
    """What every shard of a run shares (picklable: it travels to slot processes and Ray tasks)."""

    #: the operator (pickled to slots and Ray tasks: an operator object of an importable module, as
    #: every registered one is, travels by reference)
    operator: Operator
    variants: tuple[Variant, ...]
    cpus_per_core: int | None = cpuset.DEFAULT_CPUS_PER_CORE  # None: do not pin
    chaos: ChaosSettings = field(default_factory=ChaosSettings)
    migrate: MigrateSettings = field(default_factory=MigrateSettings)
    options: RuntimeOptions = DEFAULT_OPTIONS
    max_same_errors: int = DEFAULT_MAX_SAME_ERRORS  # run_batch's, per shard

    @classmethod
    def of(cls, op: Operator, plan: SweepPlan, cpus_per_core: int | None) -> ShardPlan:
        """What the shards of sweep ``plan`` on ``op`` share (each shard's seeds are its own)."""
        return cls(op, tuple(plan.variants), cpus_per_core=cpus_per_core, chaos=plan.chaos, migrate=plan.migrate,
                   options=plan.options, max_same_errors=plan.max_same_errors)

    def cpus_wanted(self, shard: Shard) -> int:
        """CPUs a shard's device asks for (1 when pinning is off: it then takes whatever it is given)."""
        if not self.cpus_per_core:
            return 1
        bd = shard.config.block_dim
        return cpuset.cpus_wanted(bd, self.cpus_per_core, topology_for(self.operator, bd).n_cores)


@dataclass
class ShardResult:
    """What one shard did, and where: ``result`` holds the counts by global case index."""

    shard: Shard
    result: ConfigResult
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def interrupted(self) -> bool:
        return self.result.interrupted

    @property
    def packing(self) -> str:
        return str(self.provenance.get("packing", ""))

    def case_runs(self) -> int:
        return sum(v.case_runs for v in self.result.variants.values())

    def to_dict(self) -> dict[str, Any]:
        totals = {name: {"case_runs": v.case_runs, "failed_case_runs": v.failed_case_runs}
                  for name, v in self.result.variants.items()}
        return {**self.shard.to_dict(), **self.provenance, "interrupted": self.interrupted,
                "error": self.result.error, "variants": totals}


@dataclass(frozen=True)
class Retry:
    """A shard that was started again because the slot or task running it was lost."""

    shard: int
    attempt: int  # the attempt that was lost (1 = first)
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"shard": self.shard, "attempt": self.attempt, "reason": self.reason}


class _CaseRange:
    """``op`` seen through a window of its case stream: case ``i`` is the operator's case
    ``offset + i``. Everything else is the operator itself."""

    def __init__(self, op: Operator, offset: int) -> None:
        self._op = op
        self._offset = offset

    def make_case(self, seed: int, index: int, block_dim: int | None = None) -> Any:
        return make_case_for(self._op, seed, self._offset + index, block_dim)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._op, name)


def _globalize(v: VariantResult, offset: int) -> None:
    """Case indices of a shard's result from shard-relative to the operator's own."""
    v.failing_cases_by_repeat = [[offset + i for i in r] for r in v.failing_cases_by_repeat]
    v.fingerprints = {offset + i: prints for i, prints in v.fingerprints.items()}


class DeviceCache:
    """Keeps the last shard's device for the next shard with the same block_dim and CPUs (a
    24-AI-core pool takes seconds to start). Owned by one slot; :meth:`close` ends it."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._device: Device | None = None

    def get(self, op: Operator, block_dim: int, cpus: tuple[int, ...], options: RuntimeOptions) -> Device:
        key = (block_dim, kernel_type_of(op), cpus, options)
        if self._device is not None and (self._key != key or self._device.closed):
            self.close()
        if self._device is None:
            # The calling thread is pinned to ``cpus`` already: the core processes inherit them.
            self._device = device_for(op, block_dim, options=options)
            self._key = key
        return self._device

    def close(self) -> None:
        if self._device is not None:
            self._device.close()
        self._device, self._key = None, None


def run_shard(
    shard: Shard,
    plan: ShardPlan,
    cpus: Sequence[int] | None = None,
    *,
    attempt: int = 1,
    budget_s: float | None = None,
    devices: DeviceCache | None = None,
    progress: Callable[[int], None] | None = None,
    where: dict[str, Any] | None = None,
) -> ShardResult:
    """Run one shard here, on ``cpus`` (default: every CPU this thread may use).

    The device gets :func:`~mpnpu.runtime.cpuset.plan_cpu_set`'s share of ``cpus`` for the
    shard's block_dim, and the calling thread is pinned there while the shard runs (the previous
    affinity comes back afterwards). Ctrl-C / SIGTERM end the shard early with its partial counts
    (``result.interrupted``, with the KeyboardInterrupt in ``result.batch.interrupt``, which a
    caller that sends the result to another process must clear: exceptions of that kind do not
    travel).
    """
    op = plan.operator
    given = sorted(cpus) if cpus is not None else cpuset.real_cpus()
    cpu_set = cpu_set_for(op, shard.config.block_dim, plan.cpus_per_core, given, sample_load=False)
    run_cpus = cpu_set.real() or given
    start = time.perf_counter()
    with cpuset.pinned(run_cpus):
        sweep_plan = SweepPlan(
            configurations=[shard.config], variants=list(plan.variants), cases=shard.cases, repeat=shard.repeat,
            seed=shard.seed, chaos=dataclasses.replace(plan.chaos, seed=shard.chaos_seed),
            migrate=dataclasses.replace(plan.migrate, seed=shard.chaos_seed), cpus=run_cpus, options=plan.options,
            max_same_errors=plan.max_same_errors, kernel_type=kernel_type_of(op),
        )
        device = devices.get(op, shard.config.block_dim, tuple(run_cpus), plan.options) if devices is not None else None
        result = run_config(_CaseRange(op, shard.case_start), shard.config, sweep_plan, device=device,
                            budget_s=budget_s, progress=progress)
    interrupt = result.batch.interrupt
    if interrupt is not None and interrupt.__traceback__ is not None:
        # The traceback's frames hold the interrupted case's GM tensors (numpy views of the
        # shared memory): the device (kept by the caller for the next shard, or closed by it)
        # could not release its segments while they live.
        traceback.clear_frames(interrupt.__traceback__)
        interrupt.__traceback__ = None
    result.batch.cases = shard.cases
    result.batch.cpus = cpu_set.n_cpus
    for v in result.variants.values():
        _globalize(v, shard.case_start)
    provenance = {
        "node": socket.gethostname(), "pid": os.getpid(), "cpus": list(run_cpus), "n_cpus": len(run_cpus),
        "block_dim": shard.config.block_dim, "placement": shard.config.placement,
        "packing": f"{sweep_plan.core_processes(shard.config.block_dim)} on {len(run_cpus)} "
                   f"CPU{'s' if len(run_cpus) != 1 else ''}",
        "pinned": cpu_set.pinned, "attempt": attempt, "elapsed_s": time.perf_counter() - start,
    }
    if where:
        provenance.update(where)
    return ShardResult(shard, result, provenance)


# -- merging ----------------------------------------------------------------------------------------


def merge_variant_results(parts: Sequence[VariantResult], same_seed: bool = True) -> VariantResult:
    """Pool results of one variant over disjoint case ranges run with the same repeats.

    :meth:`VariantResult.merge` pools counts, outputs, errors, fingerprints and the first failure
    (its case-run number counted as if the parts had run one after another in the order given);
    it lays repeats end to end, whereas shards run the same repeats over other cases, so repeat
    ``r`` here is the union of every part's repeat ``r`` (global case indices). With
    ``same_seed`` False (parts from different case streams) the per-case consistency data is
    dropped: equal indices would be different cases.
    """
    if not parts:
        raise InvalidArgumentError("nothing to merge")
    out = functools.reduce(VariantResult.merge, parts, VariantResult(parts[0].variant, 0))
    out.repeats = max(p.repeats for p in parts)
    out.failing_cases_by_repeat = [sorted(i for p in parts for i in (p.failing_cases_by_repeat[r]
                                                                        if r < len(p.failing_cases_by_repeat) else []))
                                   for r in range(out.repeats)]
    if not same_seed:
        out.fingerprints = {}
    return out


def _merge_group(parts: list[ShardResult], multiple_packings: bool) -> ConfigResult:
    parts = sorted(parts, key=lambda p: p.shard.index)
    first = parts[0].result
    config = parts[0].shard.config
    same_seed = len({p.shard.seed for p in parts}) == 1
    names = list(first.variants)
    variants = {n: merge_variant_results([p.result.variants[n] for p in parts if n in p.result.variants], same_seed)
                for n in names}
    b0 = first.batch
    batch = BatchResult(
        operator=b0.operator, seed=b0.seed, cases=sum(p.result.batch.cases for p in parts), repeat=b0.repeat,
        block_dim=b0.block_dim, probe=b0.probe, cpus=b0.cpus, variants=variants, processes=b0.processes,
        elapsed_s=sum(p.result.batch.elapsed_s for p in parts),
        interrupted=any(p.result.interrupted for p in parts),
    )
    out = ConfigResult(config, batch, active=list(first.active), affinity=dict(first.affinity))
    budgets = [p.result.budget_s for p in parts if p.result.budget_s is not None]
    out.budget_s = sum(budgets) if budgets else None
    out.elapsed_s = sum(p.result.elapsed_s for p in parts)
    for p in parts:
        r = p.result
        out.chaos_runs += r.chaos_runs
        out.migrator_runs += r.migrator_runs
        out.pool_rebuilds += r.pool_rebuilds
        out.contention += [{**row, "shard": p.shard.index} for row in r.contention]
        if r.load and not out.load:
            out.load = dict(r.load)
        out.notes += [f"shard {p.shard.index}: {n}" for n in r.notes]
        if r.error and not out.error:
            out.error = f"shard {p.shard.index}: {r.error}"
    if len(parts) > 1:
        out.notes.append(f"pooled from {len(parts)} shards ({', '.join(str(p.shard.index) for p in parts)}), "
                         f"core processes {parts[0].packing}")
    if multiple_packings:
        out.notes.append(f"packing {parts[0].packing}: shards of this configuration that ran on CPU sets of another "
                         "size are reported in their own row")
    return out


def merge_shards(results: Iterable[ShardResult]) -> list[ConfigResult]:
    """One ConfigResult per (configuration, packing), in the order the configurations first appear
    in the shard list; shards that ran under a different packing get their own row."""
    groups: dict[tuple[Configuration, str], list[ShardResult]] = {}
    for r in sorted(results, key=lambda r: r.shard.index):
        groups.setdefault((r.shard.config, r.packing), []).append(r)
    packings: Counter[Configuration] = Counter(config for config, _ in groups)
    return [_merge_group(parts, packings[config] > 1) for (config, _), parts in groups.items()]


def failed_shard_result(shard: Shard, plan: ShardPlan, error: str, provenance: dict[str, Any]) -> ShardResult:
    """A shard that could not be run (every attempt lost): no counts, the reason as its error."""
    batch = BatchResult(operator=plan.operator.name, seed=shard.seed, cases=0, repeat=shard.repeat,
                        block_dim=shard.config.block_dim, probe="", cpus=0,
                        variants={v.name: VariantResult(v, shard.repeat) for v in plan.variants},
                        processes=topology_for(plan.operator, shard.config.block_dim).n_cores)
    return ShardResult(shard, ConfigResult(shard.config, batch, error=error), provenance)
