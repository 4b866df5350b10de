"""Choose where shards run (this process, parallel slots, a Ray cluster) and turn what came back
into the same sweep result a local sweep gives, plus per-shard provenance.

Used by ``python -m mpnpu.stress`` and the soak scripts, which share their options through
:func:`add_scaleout_arguments`::

    --jobs N             slots on this machine (default: as many as the CPUs hold at --cpus-per-core)
    --cluster [ADDRESS]  Ray tasks; without ADDRESS an embedded local cluster
    --cpus-per-core N    CPUs per AI core of each shard's device (0: do not pin)
    --shard-cases N      cases per shard
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from mpnpu.harness.stress.plan import SweepPlan, SweepResult
from mpnpu.runtime import cpuset
from mpnpu.scale.shards import Shard, ShardPlan, ShardResult, merge_shards
from mpnpu.scale.slots import ShardRun, default_jobs, run_in_process, run_in_slots

__all__ = ["Backend", "add_scaleout_arguments", "backend_from_args", "run_shards", "sweep_result", "shard_lines",
           "shards_json"]


@dataclass(frozen=True)
class Backend:
    """Where shards run: ``jobs`` slots here (None: as many as fit), or Ray when ``cluster``."""

    jobs: int | None = None
    cluster: bool = False
    address: str | None = None  # Ray cluster address; None with cluster: an embedded local one
    cpus_per_core: int | None = cpuset.DEFAULT_CPUS_PER_CORE


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_scaleout_arguments(p: argparse.ArgumentParser, *, shard_cases_default: int | None,
                           shard_cases_help: str) -> None:
    """The options shared by every command that runs shards."""
    g = p.add_argument_group("parallel runs")
    g.add_argument("--jobs", type=_positive, default=None, metavar="N",
                   help="parallel slots on this machine, each its own device pinned to its own CPUs (default: as "
                        "many as the CPUs hold at --cpus-per-core; 1 runs in this process)")
    g.add_argument("--cluster", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run the shards as Ray tasks: on the Ray cluster at ADDRESS, or without ADDRESS on an "
                        "embedded local one (needs pip install 'mpnpu[cluster]')")
    g.add_argument("--cpus-per-core", type=_non_negative, default=cpuset.DEFAULT_CPUS_PER_CORE, metavar="N",
                   help=f"CPUs per AI core of each device's CPU set (default {cpuset.DEFAULT_CPUS_PER_CORE}: "
                        "block_dim 1 runs 3 core processes on 2 CPUs on any machine); 0: do not pin")
    g.add_argument("--shard-cases", type=_positive, default=shard_cases_default, metavar="N",
                   help=shard_cases_help)


def backend_from_args(args: argparse.Namespace) -> Backend:
    """The backend the options ask for; with --cluster and no Ray installed, the one-line UsageError
    that says what to install, before anything starts."""
    if args.cluster is not None:
        from mpnpu.scale.cluster import import_ray

        import_ray()
    return Backend(jobs=args.jobs, cluster=args.cluster is not None, address=args.cluster or None,
                   cpus_per_core=args.cpus_per_core or None)


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


def shard_lines(run: ShardRun, n_shards: int, *, detail_limit: int = 40) -> list[str]:
    """The report's shard section: where shards ran, what was retried, what did not run."""
    b = run.backend
    if b.get("kind") == "ray":
        where = (f"as Ray tasks on {b.get('address')} ({b.get('nodes')} node(s), {b.get('cluster_cpus')} CPUs, "
                 f"up to {b.get('max_in_flight')} at once)")
    elif b.get("kind") == "slots":
        where = f"in {b.get('slots')} parallel slots on CPUs {cpuset.format_cpus(b.get('cpus', []))}"
    else:
        where = "in this process"
    lines = [f"shards: {len(run.results)} of {n_shards} ran {where}"]
    lines += [f"  {n}" for n in run.notes]
    for r in run.retries:
        lines.append(f"  retried: shard {r.shard} after attempt {r.attempt} was lost ({r.reason})")
    if run.not_run:
        lines.append(f"  not run: {len(run.not_run)} shard(s) ({', '.join(str(s.index) for s in run.not_run[:20])}"
                     f"{', ...' if len(run.not_run) > 20 else ''})")
    if b.get("kind") in ("slots", "ray") or len(run.results) != len({r.shard.config for r in run.results}):
        for r in sorted(run.results, key=lambda r: r.shard.index)[:detail_limit]:
            p = r.provenance
            cells = [f"#{r.shard.index}", r.shard.config.label, f"cases {r.shard.case_start}-{r.shard.case_stop - 1}",
                     f"node {p.get('node', '?')}", f"CPUs {cpuset.format_cpus(p.get('cpus', []))}",
                     f"bd {p.get('block_dim', '?')}", p.get("packing", ""), f"attempt {p.get('attempt', 1)}"]
            if r.interrupted:
                cells.append("interrupted")
            if r.result.error:
                cells.append(f"ERROR {r.result.error[:60]}")
            lines.append("  " + ", ".join(c for c in cells if c))
        if len(run.results) > detail_limit:
            more = len(run.results) - detail_limit
            lines.append(f"  ... {more} more shards: where each ran is in --json" if detail_limit
                         else "  where each shard ran (node, CPUs, block_dim, packing, attempt) is in --json")
    return lines


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
