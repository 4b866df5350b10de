"""Text rendering of stress sweeps (the numbers live in :mod:`mpnpu.harness.stress.sweep`)."""

from __future__ import annotations

from typing import Sequence

from mpnpu.harness.runner import VariantResult
from mpnpu.harness.stress.plan import ConfigResult, SweepResult
from mpnpu.report.fmt import pct_compact as _pct


def _variant_cells(v: VariantResult | None) -> list[str]:
    if v is None or v.case_runs == 0:
        return ["0/0", "-", "-"]
    lo, hi = v.wilson95
    rate = f"{_pct(v.failure_rate)} [{_pct(lo)}-{_pct(hi)}]"
    if v.clean:
        last = f"clean, <{_pct(v.upper_bound95 or 1.0)}"
    else:
        last = f"#{v.first_failure_case_run}, {v.first_failure_s:.1f}s"
    return [f"{v.failed_case_runs}/{v.case_runs}", rate, last]


def _table(rows: list[list[str]], header: list[str], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for r in [header, *rows]:
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(r)]
        out.append("  ".join(cells).rstrip())
    out.insert(1, "  ".join("-" * w for w in widths))
    return out


def format_table(result: SweepResult) -> list[str]:
    """One row per configuration; per variant: failed/case-runs, rate [95% Wilson], first failure
    (case-run #, seconds) or, when clean, the rule-of-three bound; contention totals last."""
    names = [v.name for v in result.plan.variants]
    header = ["#", "bd", "procs", "placement", "load", "chaos"]
    for n in names:
        header += [n, "rate [95% Wilson]", "1st failure|bound"]
    header += ["invol.cs", "cpu s"]
    rows = []
    for i, r in enumerate(result.results, 1):
        c = r.config
        procs = result.plan.core_processes(c.block_dim)
        row = [str(i), str(c.block_dim), str(procs), c.placement, str(c.load), "on" if c.chaos else "off"]
        if r.error:
            rows.append(row + ["ERROR: " + r.error[:80]] + [""] * (len(header) - 7))
            continue
        for n in names:
            row += _variant_cells(r.variants.get(n))
        tot = r.contention_total()
        row += [str(int(tot["ctx_switches_involuntary"])), f"{tot['cpu_user_s'] + tot['cpu_system_s']:.1f}"]
        rows.append(row)
    right = {0, 1, 2, 4} | {6 + 3 * k for k in range(len(names))} | {len(header) - 2, len(header) - 1}
    return _table(rows, header, right)


def _status(r: ConfigResult) -> str:
    status = f"{r.elapsed_s:.1f} s"
    if r.budget_s is not None:
        status += f" of a {r.budget_s:.1f} s budget"
    if r.interrupted and r.batch.interrupt is not None:
        status += ", INTERRUPTED"
    return status


def format_summary(result: SweepResult) -> list[str]:
    """One line per configuration: its time, what its perturbations did in numbers, anything that
    went wrong, and its busiest core (every core's counts: :func:`format_details`, or the JSON)."""
    lines = ["per configuration (each core's contention and the perturbations in words: --verbose, or --json):"]
    for i, r in enumerate(result.results, 1):
        c = r.config
        parts = [_status(r)]
        if c.chaos and r.chaos_runs:
            s = r.chaos_summary()
            parts.append(f"chaos {s['entries_executed']} suspensions, {s['suspended_s_total']:.2f} s")
        if c.placement == "migrate" and r.migrator_runs:
            parts.append(f"{sum(m.moves for m in r.migrator_runs)} re-pins")
        if r.load:
            parts.append(f"load {r.load.get('processes')} processes")
        if r.pool_rebuilds:
            parts.append(f"pool rebuilt {r.pool_rebuilds} time(s)")
        parts += list(r.notes)
        if r.contention:
            busiest = max(r.contention, key=lambda row: row["ctx_switches_involuntary"])
            parts.append(f"most involuntary switches: {busiest['core']} {busiest['ctx_switches_involuntary']}")
        lines.append(f"  {i}. {c.label}: " + "; ".join(parts))
    return lines


def format_details(result: SweepResult) -> list[str]:
    lines = ["perturbations and contention per configuration (core: involuntary context switches / CPU s):"]
    for i, r in enumerate(result.results, 1):
        c = r.config
        lines.append(f"  {i}. {c.label} ({_status(r)})")
        for a in r.active:
            lines.append(f"     {a}")
        if c.chaos and r.chaos_runs:
            s = r.chaos_summary()
            lines.append(f"     chaos did: {s['entries_executed']} suspensions (entries {s['first_entry']}.."
                         f"{s['next_entry']} of the looped stream), {s['suspended_s_total']:.2f} s suspended in "
                         f"total, {s['entries_vanished']} skipped (process gone)")
        if c.placement == "migrate" and r.migrator_runs:
            lines.append(f"     migrator did: {sum(m.moves for m in r.migrator_runs)} re-pins in "
                         f"{sum(m.ticks for m in r.migrator_runs)} ticks")
        if c.placement in ("spread", "pack") and "read_back" in r.affinity:
            pins = sorted({tuple(v) for v in r.affinity["read_back"].values()})
            lines.append(f"     affinity read back: {', '.join('CPU ' + ','.join(map(str, p)) for p in pins)}")
        if r.load:
            lines.append(f"     load: {r.load.get('processes')} processes, {r.load.get('alive_at_end', '?')} still "
                         "running at the end")
        if r.pool_rebuilds:
            lines.append(f"     pool rebuilt {r.pool_rebuilds} time(s); perturbations followed the new pids")
        for note in r.notes:
            lines.append(f"     {note}")
        if r.contention:
            cells = [f"{row['core']} {row['ctx_switches_involuntary']}/{row['cpu_user_s'] + row['cpu_system_s']:.2f}"
                     for row in r.contention]
            line = "     "
            for cell in cells:
                if len(line) + len(cell) > 110:
                    lines.append(line.rstrip())
                    line = "     "
                line += cell + "  "
            lines.append(line.rstrip())
    return lines


def format_sweep(result: SweepResult, command: str = "", shards: Sequence[str] = (), verbose: bool = False) -> str:
    """The whole text report; ``shards``: the lines saying where the shards ran (if sharded);
    ``verbose``: every configuration's perturbations and every core's contention, not one line
    per configuration (at block_dim 24 that is 72 cores a configuration)."""
    plan = result.plan
    chaos = plan.chaos
    lines = [
        f"mpnpu stress: {result.operator} on {len(plan.cpus or [])} CPUs {list(plan.cpus or [])}; per configuration "
        f"{plan.cases} cases x {plan.repeat} repeat(s) per variant, case seed {plan.seed}",
    ]
    if any(c.chaos for c in plan.configurations):
        how = "replayed from a report" if chaos.replay else (
            f"~{chaos.rate_hz:g}/s per core process, {chaos.min_suspend_s * 1000:g}-{chaos.max_suspend_s * 1000:g} ms")
        lines.append(f"chaos seed {chaos.seed} ({how}); migration seed {plan.migrate.seed}")
    if plan.duration_s is not None:
        lines.append(f"time limit {plan.duration_s:g} s (a cap, --time-limit), split across {len(plan.configurations)} "
                     "configurations")
    if command:
        lines.append(f"command: {command}")
    if result.interrupted:
        lines.append("INTERRUPTED: the counts below cover only the case-runs that finished"
                     + (f"; {len(result.skipped)} configuration(s) not run" if result.skipped else ""))
    lines.append("")
    lines += format_table(result)
    lines.append("")
    lines += format_details(result) if verbose else format_summary(result)
    lines.append("")
    if shards:
        lines += list(shards)
        lines.append("")
    lines.append("1st failure: case-run number (A/B order) and seconds from the batch start; bound: rule of three "
                 "(3/n), the 95% upper bound on the rate of a variant that never failed")
    lines.append(result.verdict_line())
    lines.append(f"({result.elapsed_s:.1f} s)")
    return "\n".join(lines)
