"""Where the shards of a sweep or soak ran, what was retried and what did not run, as text."""

from __future__ import annotations

from mpnpu.runtime import cpuset
from mpnpu.scale.slots import ShardRun


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
    for retry in run.retries:
        lines.append(f"  retried: shard {retry.shard} after attempt {retry.attempt} was lost ({retry.reason})")
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
