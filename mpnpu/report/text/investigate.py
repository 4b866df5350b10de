"""Text and Markdown rendering of a diagnosis chain's run (the numbers live in :mod:`mpnpu.harness.chain`)."""

from __future__ import annotations

import textwrap
from typing import Sequence

from mpnpu.harness.chain import Investigation, Plan
from mpnpu.report.fmt import pct as _pct
from mpnpu.report.hazards import format_hazard_log

COLUMNS = (("step", 12), ("what was changed", 34), ("what was seen", 40), ("conclusion", 44))


def _prob(x: float) -> str:
    """A detection probability: never rounded up to a certainty it is not."""
    return ">99.99%" if x >= 0.9999 else f"{100 * x:.4g}%"


def plan_lines(plan: Plan) -> list[str]:
    """How the steps were sized, with the numbers behind it."""
    k, n, r = plan.calibration_failed, plan.calibration_runs, plan.repeats
    lines = [
        f"calibration: {k}/{n} unprobed incident case-runs failed: p = {_pct(plan.rate)} "
        f"(95% Wilson {_pct(plan.rate_low)}..{_pct(plan.rate_high)})",
    ]
    if plan.needed_runs is None:
        lines.append(f"N: the race did not show in calibration, so no rate to size the steps by; "
                     f"using the floor, {plan.cases} cases x {r} repeats = {plan.case_runs} case-runs")
        return lines
    lines.append(
        f"N: sized for p_guard = p_low / {plan.safety:g} = {_pct(plan.guard_rate)} at {_pct(plan.confidence)}: "
        f"trials_to_detect = {plan.needed_runs} case-runs (failing case-run rule), "
        f"{plan.needed_cases_consistency} cases x {r} repeats (inconsistent case rule); "
        f"floor {plan.floor_cases} cases, cap {plan.cap_cases}"
    )
    lines.append(
        f"   -> N = {plan.cases} cases x {r} repeats = {plan.case_runs} case-runs per step; "
        f"P(fault shows) at p_guard: {_prob(plan.detect_golden())} as a failing case-run, "
        f"{_prob(plan.detect_consistency())} as an inconsistent case; at p: "
        f"{_prob(plan.detect_golden(plan.rate))} / {_prob(plan.detect_consistency(plan.rate))}"
    )
    lines.append("   (P(shows) = 1 - (1-p)^N for a step judged per case-run; 1 - ((1-p)^R + p^R)^C for one "
                 "judged by consistency, a case showing it when its R runs disagree)")
    if plan.capped:
        lines.append(f"   note: the cap of {plan.cap_cases} cases bound N; a step that should show the "
                     f"fault may miss it (raise --max-cases)")
    return lines


def table_rows(inv: Investigation) -> list[tuple[str, str, str, str]]:
    rows = []
    for s in inv.steps:
        variant = "" if not s.spec.variant else f" [{s.spec.variant}]"
        changed = (f"--probe {s.spec.probe}: " if s.spec.probe else "") + s.spec.changed
        mark = "ok: " if s.matches else ("" if s.interrupted else "NO: ")
        rows.append((s.label + variant, changed, s.seen, mark + s.conclusion))
    return rows


def header_lines(inv: Investigation) -> list[str]:
    chain = inv.diagnosis
    lines = [
        f"mpnpu investigate: {inv.operator}, {chain.subject}, seed {inv.seed}, block_dim "
        f"{inv.block_dim} ({inv.core_processes} core processes on {inv.cpus} CPUs), "
        f"{chain.shapes_description(inv.shapes)}",
        f"rule: {chain.rule}.",
    ]
    if inv.plan is not None:
        lines.extend(plan_lines(inv.plan))
        lines.append(f"   each step runs the same seeded cases, {inv.plan.repeats} repeats each, back to back on one "
                     f"device; {chain.consistency_note}")
    return lines


def format_investigation(inv: Investigation) -> str:
    lines = header_lines(inv)
    lines.append("")
    widths = [w for _, w in COLUMNS]
    sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines.append(sep)
    lines.extend(_table_row([name for name, _ in COLUMNS], widths))
    lines.append(sep.replace("-", "="))
    for row in table_rows(inv):
        lines.extend(_table_row(row, widths))
        lines.append(sep)
    if inv.racecheck:
        for s in inv.steps:
            if s.hazard_log is not None:
                lines.append(f"racecheck, {s.label} [{s.spec.variant}]:")
                lines.extend("  " + line for line in format_hazard_log(s.hazard_log).splitlines())
    lines.append("")
    lines.append(inv.verdict_line())
    lines.append(f"({inv.elapsed_s:.1f} s)")
    return "\n".join(lines)


def _table_row(cells: Sequence[str], widths: Sequence[int]) -> list[str]:
    wrapped = [textwrap.wrap(c, w, break_long_words=True, break_on_hyphens=False) or [""]
               for c, w in zip(cells, widths)]
    height = max(len(w) for w in wrapped)
    out = []
    for i in range(height):
        parts = [f" {(w[i] if i < len(w) else ''):<{width}} " for w, width in zip(wrapped, widths)]
        out.append("|" + "|".join(parts) + "|")
    return out
