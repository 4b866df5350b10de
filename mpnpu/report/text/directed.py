"""Text and Markdown rendering of directed reproduction, the sync audit and verified repairs.

The numbers live in :mod:`mpnpu.directed.confirm`, :mod:`mpnpu.directed.audit` and
:mod:`mpnpu.directed.repair`; this module only presents them.
"""

from __future__ import annotations

from collections import Counter

from mpnpu.directed.audit import AuditResult, AuditRow
from mpnpu.directed.confirm import (
    BY_DIRECTED_RUNS,
    HARMFUL,
    Confirmation,
    ConfirmedBatch,
    ConfirmResult,
    DirectedRun,
    grouped_confirmations,
)
from mpnpu.directed.mutation import KILLED
from mpnpu.directed.repair import KIND_NAMES, Repair
from mpnpu.report.text.batch import format_batch
from mpnpu.runtime.hold import ORDERED, REVERSED

HOLD_NOTE = "holds only delay core processes: no kernel code or data was changed"


def hazard_title(c: Confirmation) -> str:
    h = c.hazard
    lo, hi = h.element_range
    return (f"{h.kind} on {h.tensor}[{lo}:{hi}]: {h.first.access} in {h.first.stage} at {h.first.site} -> "
            f"{h.second.access} in {h.second.stage} at {h.second.site}")


def _outputs(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counter.most_common())


def consequence_why(c: Confirmation) -> str:
    """Why a hazard is listed as a consequence of its root, in one line."""
    if c.root_by == BY_DIRECTED_RUNS:
        return (f"harmful in {c.harmful_runs} of {len(c.runs)} directed runs, but under the same {len(c.fixed_runs)} "
                "hold plans on the fixed kernel its pair was reversed every time and every result was right: it "
                "fails only when the hazard above is reversed too")
    return ("its accesses come after a read that saw the wrong data through the hazard above (racecheck): "
            "not reproduced on its own")


def format_confirmation(c: Confirmation, indent: str = "  ") -> list[str]:
    if c.root is not None:
        return [f"{indent}consequence: {hazard_title(c)}", f"{indent}  {consequence_why(c)}"]
    n = len(c.runs)
    lines = [indent + hazard_title(c)]
    if c.verdict == HARMFUL:
        head = (f"HARMFUL: reversed in {c.reversed} of {n} directed runs; wrong result in {c.harmful_runs} "
                f"({_outputs(c.failed_outputs)})")
    elif c.reversed:
        head = f"BENIGN: reversed in {c.reversed} of {n} directed runs; every result right"
    elif c.verdict == "ordered":
        head = f"ORDERED: not reversed in any of {n} directed runs (a sync orders the pair)"
    else:
        outcomes = ", ".join(f"{k} {v}" for k, v in Counter(r.outcome for r in c.runs).most_common())
        head = f"UNCONFIRMED: not reversed in any of {n} directed runs ({outcomes})"
    lines.append(indent + "  " + head)
    seed = c.replay_seed
    example = next((r for r in c.runs if r.seed == seed), None)
    if example is not None:
        lines.append(f"{indent}  replay seed {seed}: case {example.case_index}, {example.where}"
                     + (f" -> {', '.join(example.failed_outputs)} wrong" if example.failed_outputs else ""))
    errors = [r for r in c.runs if r.error]
    if errors:
        lines.append(f"{indent}  launch failures in {len(errors)} runs (first: {errors[0].error})")
    if c.fixed_runs:
        ordered = sum(r.outcome == ORDERED for r in c.fixed_runs)
        rev = sum(r.outcome == REVERSED for r in c.fixed_runs)
        lines.append(f"{indent}  fixed kernel under the same {len(c.fixed_runs)} hold plans: {c.fixed_failures} "
                     f"failures (ordered {ordered}, reversed {rev})")
    return lines


def format_run(r: DirectedRun) -> str:
    """One directed run, as a replay prints it."""
    if r.error:
        result = f"the launch failed: {r.error}"
    elif r.passed:
        result = "every output right"
    else:
        result = "wrong: " + ", ".join(r.failed_outputs)
    how = " (released early: no other core could move)" if r.early else ""
    return "\n".join([
        f"directed run, seed {r.seed}: case {r.case_index}",
        f"  {r.where}",
        f"  outcome: {r.outcome}{how}; held {r.held_s * 1e3:.1f} ms",
        f"  result: {result}",
        f"  ({HOLD_NOTE})",
    ])


def replay_command(r: ConfirmResult, seed: int) -> str:
    """The command line that reruns one directed run of ``r``."""
    drop = ",".join(sorted(r.dropped))
    return (f"mpnpu audit --op {r.operator_ref or r.operator} --replay {seed} --drop-sync {drop} "
            f"--block-dim {r.block_dim} --scout-cases {len(r.scout_cases)} --seed {r.case_seed} "
            f"--directed-seed {r.seed}")


def format_confirm(r: ConfirmResult, heading: str = "") -> str:
    dropped = ", ".join(sorted(r.dropped)) or "nothing"
    lines = [heading or (f"race-directed reproduction: {r.operator}, drops {dropped}, block_dim {r.block_dim}, "
                         f"{len(r.scout_cases)} scouted cases")]
    inside = [h for h in r.hazard_log.hazards() if h.scope != "GM"]
    if not r.confirmations and inside:
        # Holds delay whole core processes: they cannot reorder the pipes of one core.
        lines.append(f"  {len(inside)} hazard{'s' if len(inside) != 1 else ''} inside a core "
                     f"({', '.join(sorted({f'{h.first.pipe} -> {h.second.pipe}' for h in inside}))}), none between "
                     f"cores: a directed run holds one core until another has made its access, which cannot "
                     f"reorder the pipes of one core, so it is not forced here (racecheck names it above; the "
                     f"batch's failing case-runs, if any, show what it does)")
    elif not r.confirmations:
        lines.append("  no hazard in the scouted cases: nothing to reproduce")
    for root, consequences in grouped_confirmations(r.confirmations):
        for c in (root, *consequences):
            lines += format_confirmation(c, "  " if c is root else "    ")
            if c.replay_seed is not None and r.scout_cases == tuple(range(len(r.scout_cases))):
                lines.append(f"{'    ' if c is root else '      '}replay: {replay_command(r, c.replay_seed)}")
    for e in r.scout_errors[:3]:
        lines.append(f"  scouted launch failed: {e}")
    lines.append(f"  ({HOLD_NOTE}; {r.elapsed_s:.1f} s)")
    return "\n".join(lines)


def format_confirmed_batch(r: ConfirmedBatch, verbose: bool = False) -> str:
    """The batch, then each variant's directed reproduction, then why there is none if refused."""
    text = format_batch(r.batch, verbose=verbose)
    text += "".join(f"\n\n{format_confirm(c, f'race-directed reproduction, variant {name}:')}"
                    for name, c in r.confirmed.items())
    return text + (f"\n\n{r.refused}" if r.refused else "")


# -- audit ------------------------------------------------------------------------------------------


#: evidence pieces a report shows per audit row (the JSON keeps them all)
EVIDENCE_SHOWN = 4


def audit_cells(row: AuditRow) -> list[str]:
    """The row's cells; the evidence cell is its first piece (:func:`evidence_lines` gives them all)."""
    rate = f"{row.batch_failures}/{row.batch_case_runs}"
    return ["+".join(row.dropped), str(row.hazards), row.directed, rate, row.verdict, row.why_parts[0]]


def evidence_lines(row: AuditRow) -> list[str]:
    """The evidence, a piece a line, at most :data:`EVIDENCE_SHOWN` (then how many more the JSON has)."""
    parts = row.why_parts
    shown = parts[:EVIDENCE_SHOWN]
    if len(parts) > EVIDENCE_SHOWN:
        shown.append(f"... {len(parts) - EVIDENCE_SHOWN} more in --json")
    return shown


AUDIT_HEAD = ["dropped", "hazards", "directed", "batch failures", "verdict", "evidence"]


def format_repairs(repairs: list[Repair], markdown: bool = False) -> list[str]:
    lines = []
    for rep in repairs:
        h = rep.hazard
        title = (f"{h.kind} on {h.tensor}: {h.first.stage} ({h.first.site}) -> {h.second.stage} "
                 f"({h.second.site})")
        lines.append(("- " if markdown else "  ") + title)
        if rep.note:
            lines.append(("  - " if markdown else "    ") + rep.note)
        for v in rep.verifications:
            s = v.suggestion
            status = "VERIFIED" if v.verified else "NOT VERIFIED"
            evidence = (f"hazard {'gone' if v.hazard_gone else 'still reported'} ({v.hazards_left} hazards left), "
                        f"reversed {v.reversed}/{v.directed_runs} directed runs, "
                        f"{v.directed_failures} directed failures, "
                        f"batch {v.batch_failures}/{v.batch_case_runs} failures")
            if v.error:
                evidence = f"the rerun failed: {v.error}"
            bullet = "  - " if markdown else "    "
            lines.append(f"{bullet}{status}: {s.text} [{KIND_NAMES[s.kind]}, ~{s.cost_us:.0f} us; "
                         f"insert_syncs={s.insert!r}] - {evidence}")
        best = rep.best
        if best is not None:
            aiv = [v for v in rep.verifications if v.suggestion.kind == "sync_aiv"]
            extra = ""
            if aiv:
                extra = (" An AIV-only SyncAll suffices." if aiv[0].verified
                         else " An AIV-only SyncAll does not suffice.")
            lines.append(("  - " if markdown else "    ") + f"cheapest verified: {best.suggestion.text}.{extra}")
    return lines


def format_audit(r: AuditResult) -> str:
    cores = f" ({r.core_processes} core processes)" if r.core_processes else ""
    lines = [f"mpnpu audit: {r.operator}, block_dim {r.block_dim}{cores}, each sync point dropped "
             f"{'alone and in pairs' if r.settings.get('pairs') else 'alone'}; "
             f"{r.settings['scout_cases']} scouted cases, {r.settings['runs']} directed runs per hazard, "
             f"batch of {r.settings['batch_cases']} cases", ""]
    rows = [AUDIT_HEAD] + [audit_cells(row) for row in r.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(AUDIT_HEAD) - 1)]
    lines.append("  ".join(cell.ljust(w) for cell, w in zip(AUDIT_HEAD, widths)) + "  " + AUDIT_HEAD[-1])
    indent = " " * (sum(widths) + 2 * len(widths))
    for cells, row in zip(rows[1:], r.rows):
        first, *more = evidence_lines(row)
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(cells, widths)) + "  " + first)
        lines += [indent + piece for piece in more]  # the evidence goes on below, a piece a line
    alone = [row for row in r.rows if len(row.dropped) == 1]
    if alone:
        killed = [row for row in alone if row.mutation[0] == KILLED]
        survivors = ", ".join(f"{'+'.join(row.dropped)} ({row.mutation[1]})" for row in alone if row not in killed)
        lines += ["", f"sync mutation score: {r.mutation_score:.2f} ({len(killed)} of {len(alone)} sync points dropped "
                      f"alone killed by the golden check or a failed launch"
                  + (f"; survived: {survivors})" if survivors else ")")]
    if r.repairs or r.repair_dropped:
        lines += ["", f"repairs for the incident variant (drops {', '.join(r.repair_dropped)}), cheapest first:"]
        lines += format_repairs(r.repairs) or ["  no hazard to repair"]
    lines += ["", f"({HOLD_NOTE}; {r.elapsed_s:.1f} s)"]
    return "\n".join(lines)
