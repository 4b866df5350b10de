"""Choose where shards run (this process, parallel slots, a Ray cluster) and turn what came back
into the same sweep result a local sweep gives, plus per-shard provenance.

Used by ``mpnpu stress`` and ``mpnpu soak``, whose scale-out options (``--jobs``, ``--cluster``,
``--cpus-per-core``, ``--shard-cases``; :mod:`mpnpu.cli.options`) become a :class:`Backend`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from mpnpu.harness.stress.plan import SweepPlan, SweepResult
from mpnpu.runtime import cpuset
from mpnpu.scale.shards import Shard, ShardPlan, ShardResult, merge_shards
from mpnpu.scale.slots import ShardRun, default_jobs, run_in_process, run_in_slots

__all__ = ["Backend", "run_shards", "shards_json", "sweep_result"]


@dataclass(frozen=True)
class Backend:
    """Where shards run: ``jobs`` slots here (None: as many as fit), or Ray when ``cluster``."""

    jobs: int | None = None
    cluster: bool = False
    address: str | None = None  # Ray cluster address; None with cluster: an embedded local one
    cpus_per_core: int | None = cpuset.DEFAULT_CPUS_PER_CORE


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
