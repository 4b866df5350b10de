"""One C++ kernel's runs (``mpnpu run``) as text: per output, the repeats that differ from the
golden with the first elements that do, whether repeats agree with the first, racecheck's hazards and
initcheck's and synccheck's findings."""

from __future__ import annotations

from mpnpu.ascendc.run_result import RunResult
from mpnpu.report.checks import format_finding_log
from mpnpu.report.hazards import format_hazard_log


def format_run(r: RunResult) -> str:
    lines = [f"run: {r.kernel}, {r.kernel_type.value}, block_dim {r.block_dim}, {r.repeats} repeat(s)"
             + (f", dropping {', '.join(r.dropped_syncs)}" if r.dropped_syncs else "")]
    if r.interrupted:
        lines.append(f"INTERRUPTED: {r.repeats_done} of {r.repeats} repeats finished; what follows covers those "
                     "(the outputs were not written)")
    outputs = r.checks[0] if r.checks else []
    for pos, first in enumerate(outputs):
        bad = [(k + 1, row[pos]) for k, row in enumerate(r.checks) if not row[pos].passed]
        head = f"  argument {first.index + 1} ({first.path}, {first.n_elements} elements): "
        if not bad:
            lines.append(head + ("every repeat matched the golden" if first.golden
                                 else "written (no --golden: compared only with the first repeat)"))
            continue
        lines.append(head + f"{len(bad)} of {r.repeats_done} repeats differ from the golden "
                     f"(repeats {', '.join(str(k) for k, _ in bad[:10])}{' ...' if len(bad) > 10 else ''})")
        k, c = bad[0]
        shown = ", ".join(f"[{i}] {g:g} (golden {w:g})" for i, g, w in c.first[:4])
        lines.append(f"    repeat {k}: {c.n_differ} elements differ; first: {shown}")
    if r.repeats_done > 1:
        differ = r.differ_from_first
        line = (f"  {len(differ)} of {r.repeats_done} repeats differ from the first" if differ
                else f"  all {r.repeats_done} repeats gave the first repeat's bytes")
        if differ and outputs and all(c.golden for c in outputs) and not r.failed_repeats:
            # Not a failure: the golden judges each repeat. Bytes that move within the tolerance are what
            # a kernel summing floats in a different order each run gives (atomic adds from several
            # cores land in the order the cores get there).
            line += (", each within the golden's tolerance: the order of floating-point sums changes from run "
                     "to run (atomic adds from several cores, say), not the result")
        elif differ and not r.failed_repeats:
            # No golden judges an output that moved: float sums in another order and a race look alike.
            line += ("; no --golden judges every output, so this may be floating-point sums in another order or "
                     "a race: give --golden (and --racecheck)")
        lines.append(line)
    if r.racecheck:
        lines.append("racecheck:")
        lines.append(format_hazard_log(r.hazards))
    if r.checks_run:
        lines.append(" and ".join(r.checks_run) + ":")
        lines.append(format_finding_log(r.findings, r.checks_run))
    lines += [f"note: {n}" for n in r.notes]
    lines.append(verdict_line(r))
    return "\n".join(lines)


def verdict_line(r: RunResult) -> str:
    """'verdict: PASS' or 'verdict: FAIL (why)': the last line of the report, alone under --quiet."""
    why = []
    if r.failed_repeats:
        why.append(f"{len(r.failed_repeats)} repeat(s) differ from the golden")
    if r.racecheck and len(r.hazards):
        why.append(f"{len(r.hazards)} hazard(s)")
    if r.findings.errors():
        why.append(f"{r.findings.errors()} {' / '.join(r.checks_run)} finding(s)")
    if r.interrupted:
        return (f"verdict: INTERRUPTED after {r.repeats_done} of {r.repeats} repeats"
                + (f" ({'; '.join(why)})" if why else ": every finished repeat passed"))
    return f"verdict: {'PASS' if r.passed else 'FAIL'}" + (f" ({'; '.join(why)})" if why else "")
