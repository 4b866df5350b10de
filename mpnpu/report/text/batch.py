"""Text rendering of batch results (the numbers live in :mod:`mpnpu.harness.runner`)."""

from __future__ import annotations

from typing import Mapping

from mpnpu.harness.runner import BatchResult, VariantResult
from mpnpu.report.checks import format_finding_log
from mpnpu.report.fmt import pct as _pct
from mpnpu.report.fmt import rel as _rel
from mpnpu.report.hazards import format_hazard_log


def variant_header(v: VariantResult, sync_points: Mapping[str, str]) -> str:
    if not v.variant.dropped:
        return f"variant {v.variant.name}: every sync point in place"
    dropped = "; ".join(f"{name} ({sync_points.get(name, '?')})" for name in sorted(v.variant.dropped))
    return f"variant {v.variant.name}: drops {dropped}"


def launch_error_lines(v: VariantResult, verbose: bool, indent: str = "  ") -> list[str]:
    """A variant's launch errors: how many and the first; why it stopped, if it did; with
    ``verbose`` the last frames of the first error's traceback in its core."""
    lines = []
    if v.first_launch_error:
        lines.append(f"{indent}launch errors: {v.launch_errors} (first: {v.first_launch_error})")
    details = v.first_launch_error_details
    tail = details.get("traceback", "")
    if verbose and tail:
        lines.append(f"{indent}  the last frames of {details.get('core', 'the core')}'s traceback:")
        lines.extend(f"{indent}    {line}" for line in str(tail).rstrip().splitlines())
    if v.stopped:
        lines.append(f"{indent}STOPPED after the same launch error in {v.stop_count} consecutive "
                     f"case-runs; {v.not_run} case-runs of this variant were not run")
    return lines


def format_variant(v: VariantResult, sync_points: Mapping[str, str], show_repeats: int = 20,
                   verbose: bool = False) -> list[str]:
    lines = [variant_header(v, sync_points)]
    if v.case_runs == 0:
        return lines + ["  no case-runs"]
    lo, hi = v.wilson95
    lines.append(
        f"  failing case-runs: {v.failed_case_runs} / {v.case_runs} ({_pct(v.failure_rate)}; "
        f"95% Wilson interval {_pct(lo)}..{_pct(hi)})"
    )
    if v.clean:
        lines.append(
            f"  clean: the failure rate is below {_pct(v.upper_bound95 or 1.0)} at 95% confidence "
            f"(rule of three over {v.case_runs} case-runs)"
        )
    else:
        by_output = ", ".join(f"{name} {count}" for name, count in v.failed_by_output.most_common())
        lines.append(f"  failed outputs (case-runs): {by_output}")
        if v.max_rel_error is not None:
            lines.append(
                f"  relative error on failing elements: {_rel(v.min_rel_error)} .. {_rel(v.max_rel_error)}"
            )
        lines.extend(launch_error_lines(v, verbose))
        lines.append("  failing cases by repeat:")
        # only repeats with a finished case-run (an interrupted batch never ran its later ones)
        ran = [(r, failing) for r, failing in enumerate(v.failing_cases_by_repeat)
               if r >= len(v.case_runs_by_repeat) or v.case_runs_by_repeat[r]]
        for r, failing in ran[:show_repeats]:
            shown = ", ".join(map(str, failing)) if failing else "none"
            lines.append(f"    repeat {r + 1}: {shown}")
        if len(ran) > show_repeats:
            lines.append(f"    ... {len(ran) - show_repeats} more repeats in --json")
    # Shown for clean variants too: a probe output with no golden is judged by this count alone.
    if v.repeats > 1:
        inconsistent = v.inconsistent_cases
        lines.append(f"  cases whose result changed between repeats: {len(inconsistent)}"
                     + (f" ({', '.join(map(str, inconsistent[:12]))}{', ...' if len(inconsistent) > 12 else ''})"
                        if inconsistent else ""))
    if v.first_failure_case_run is not None:
        lines.append(f"  first failure: case-run {v.first_failure_case_run}, after {v.first_failure_s:.2f} s")
    return lines


def format_batch(result: BatchResult, sync_points: Mapping[str, str] | None = None, verbose: bool = False) -> str:
    """The batch report (``sync_points``: the operator's, default those the result carries;
    ``verbose``: the last frames of the first launch error's traceback in its core)."""
    sync_points = result.sync_points if sync_points is None else sync_points
    cores = result.core_processes
    processes = f"{cores} core process{'es' if cores != 1 else ''}"
    cpus = f"{result.cpus} CPU{'s' if result.cpus != 1 else ''}"
    head = (
        f"mpnpu batch: {result.operator}, {result.cases} cases x {result.repeat} repeats, seed {result.seed}, "
        f"block_dim {result.block_dim} ({processes} on {cpus})"
    )
    lines = [head]
    if result.probe:
        lines.append(f"probe: {result.probe}")
    if result.interrupted:
        lines.append("INTERRUPTED: the counts below cover only the case-runs that finished")
    lines.extend(result.notes)
    for v in result.variants.values():
        lines.append("")
        lines.extend(format_variant(v, sync_points, verbose=verbose))
        if result.racecheck and v.hazard_log is not None:
            lines.append("  racecheck:")
            text = format_hazard_log(v.hazard_log)
            lines.extend("    " + line for line in text.splitlines())
        if result.checks and v.check_log is not None:
            lines.append(f"  {' and '.join(result.checks)}:")
            text = format_finding_log(v.check_log, result.checks)
            lines.extend("    " + line for line in text.splitlines())
    lines.append("")
    lines.append(result.verdict_line())
    lines.append(f"({result.elapsed_s:.1f} s)")
    return "\n".join(lines)
