"""Run a sweep: cut it into shards, run them where a :class:`Backend` says (this process, parallel
slots, a Ray cluster), and turn what came back into the sweep result a single process would give,
plus per-shard provenance.

:func:`run_sweep` is the one recipe, used by ``mpnpu stress`` and both soaks
(:mod:`mpnpu.harness.soak`), whose scale-out options (``--jobs``, ``--cluster``,
``--cpus-per-core``, ``--shard-cases``; :mod:`mpnpu.cli.options`) become a :class:`Backend`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from mpnpu.harness.stress.plan import SweepPlan, SweepResult
from mpnpu.operators.protocol import Operator
from mpnpu.runtime import cpuset
from mpnpu.scale.shards import Shard, ShardPlan, ShardResult, merge_shards, plan_shards
from mpnpu.scale.slots import ShardRun, default_jobs, run_in_process, run_in_slots

__all__ = ["Backend", "ShardedSweep", "run_sweep", "run_shards", "shards_json", "sweep_result"]


@dataclass(frozen=True)
class Backend:
    """Where shards run: ``jobs`` slots here (None: as many as fit), or Ray when ``cluster``."""

    jobs: int | None = None
    cluster: bool = False
    address: str | None = None  # Ray cluster address; None with cluster: an embedded local one
    cpus_per_core: int | None = cpuset.DEFAULT_CPUS_PER_CORE


@dataclass
class ShardedSweep:
    """What :func:`run_sweep` ran: the shards, what the backend did with them, and the sweep result."""

    operator: str
    plan: SweepPlan
    backend: Backend
    shards: list[Shard]
    run: ShardRun

    @functools.cached_property
    def result(self) -> SweepResult:
        """The merged rows, as a single process would report them (made when first asked for: a soak
        that keeps its own counts never merges)."""
        return sweep_result(self.run, self.plan, self.operator)

    def provenance(self) -> dict[str, Any]:
        """Where the shards ran, for the JSON report: the CPUs per AI core and :func:`shards_json`."""
        return {"cpus_per_core": self.backend.cpus_per_core, **shards_json(self.run, self.shards)}

    def to_dict(self, command: str = "") -> dict[str, Any]:
        """The sweep's JSON report: the result, the command line that asked for it, the provenance."""
        data = self.result.to_dict()
        if command:
            data["command"] = command
        data.update(self.provenance())
        return data


def run_sweep(
    op: Operator,
    plan: SweepPlan,
    backend: Backend,
    *,
    shard_cases: int | None = None,
    rounds: int = 1,
    progress: Callable[[int], None] | None = None,
    on_result: Callable[[ShardResult], None] | None = None,
) -> ShardedSweep:
    """Run sweep ``plan`` of ``op`` in shards of ``shard_cases`` cases (``rounds``: see
    :func:`~mpnpu.scale.shards.plan_shards`) where ``backend`` says, within ``plan.duration_s``.
    ``progress(n)`` after case-runs, ``on_result(shard_result)`` as each shard ends. Ctrl-C and the
    time limit end in the returned sweep (``run.interrupt``, ``run.not_run``), never raise."""
    shards = plan_shards(plan, shard_cases=shard_cases, rounds=rounds)
    run = run_shards(shards, ShardPlan.of(op, plan, backend.cpus_per_core), backend, duration_s=plan.duration_s,
                     progress=progress, on_result=on_result)
    return ShardedSweep(op.name, plan, backend, shards, run)


def run_shards(
    shards: Sequence[Shard],
    plan: ShardPlan,
    backend: Backend,
    *,
    duration_s: float | None = None,
    progress: Callable[[int], None] | None = None,
    on_result: Callable[[ShardResult], None] | None = None,
) -> ShardRun:
    """Run ``shards`` where ``backend`` says; Ctrl-C and time limits end in a ShardRun, never raise."""
    if backend.cluster:
        from mpnpu.scale.cluster import run_on_cluster

        return run_on_cluster(shards, plan, address=backend.address, jobs=backend.jobs, duration_s=duration_s,
                              progress=progress, on_result=on_result)
    cpus = cpuset.real_cpus()
    jobs = backend.jobs if backend.jobs is not None else default_jobs(plan, shards, cpus)
    if jobs == 1:
        return run_in_process(shards, plan, cpus=cpus, duration_s=duration_s, progress=progress, on_result=on_result)
    return run_in_slots(shards, plan, jobs=jobs, cpus=cpus, duration_s=duration_s, progress=progress,
                        on_result=on_result)


def sweep_result(run: ShardRun, plan: SweepPlan, operator: str) -> SweepResult:
    """The sweep result a local sweep would give: one row per (configuration, packing), in plan order."""
    merged = merge_shards(run.results)
    order = {c: i for i, c in enumerate(plan.configurations)}
    merged.sort(key=lambda r: order.get(r.config, len(order)))
    result = SweepResult(plan, operator, results=merged, elapsed_s=run.elapsed_s, interrupt=run.interrupt,
                         schedules=plan.chaos_schedules())
    ran = {r.config for r in merged}
    result.skipped = [c for c in plan.configurations if c not in ran]
    return result


def shards_json(run: ShardRun, shards: Sequence[Shard]) -> dict[str, Any]:
    """Per-shard provenance for the JSON report."""
    return {
        "backend": run.backend,
        "shards_planned": len(shards),
        "shards": [r.to_dict() for r in sorted(run.results, key=lambda r: r.shard.index)],
        "retries": [r.to_dict() for r in run.retries],
        "not_run": [s.to_dict() for s in run.not_run],
        "notes": run.notes,
    }
