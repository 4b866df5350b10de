"""Markdown reports: an investigation's table and an audit's, for pasting into an issue or a PR.

The rows are the text reports' (:mod:`mpnpu.report.text.investigate`, :mod:`mpnpu.report.text.directed`),
laid out as Markdown tables.
"""

from __future__ import annotations

import functools
from typing import IO, Any

from mpnpu.directed.audit import AuditResult
from mpnpu.errors import InvalidTypeError
from mpnpu.harness.chain import Investigation
from mpnpu.report.hazards import format_hazard_log
from mpnpu.report.text.directed import AUDIT_HEAD, HOLD_NOTE, audit_cells, evidence_lines, format_repairs
from mpnpu.report.text.investigate import COLUMNS, header_lines, table_rows


@functools.singledispatch
def format_markdown(result: Any) -> str:
    """The Markdown report of a result (each kind of result registers its own)."""
    raise InvalidTypeError(f"no Markdown report for a {type(result).__name__}")


class MarkdownReport:
    """An investigation or an audit as Markdown."""

    binary = False

    def write(self, result: Any, out: IO[str]) -> None:
        text = format_markdown(result)
        out.write(text if text.endswith("\n") else text + "\n")


@format_markdown.register
def _investigation(inv: Investigation) -> str:
    lines = [f"# {inv.diagnosis.title}", ""]
    lines.extend(f"- {line.strip().removeprefix('-> ')}" for line in header_lines(inv))
    lines.append("")
    lines.append("| " + " | ".join(name for name, _ in COLUMNS) + " |")
    lines.append("|" + "|".join("---" for _ in COLUMNS) + "|")
    for row in table_rows(inv):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    if inv.racecheck:
        for s in inv.steps:
            if s.hazard_log is not None:
                lines += ["", f"racecheck, {s.label} [{s.spec.variant}]:", "", "```", format_hazard_log(s.hazard_log),
                          "```"]
    lines += ["", f"**{inv.verdict_line()}** ({inv.elapsed_s:.1f} s)", ""]
    return "\n".join(lines)


@format_markdown.register
def format_audit_markdown(r: AuditResult) -> str:
    lines = [f"## Sync audit: {r.operator} (block_dim {r.block_dim})", "",
             "| " + " | ".join(AUDIT_HEAD) + " |", "|" + "---|" * len(AUDIT_HEAD)]
    for row in r.rows:
        cells = audit_cells(row)[:-1] + ["<br>".join(evidence_lines(row))]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if r.repairs or r.repair_dropped:
        lines += ["", f"### Repairs for the incident variant (drops {', '.join(r.repair_dropped)})", ""]
        lines += format_repairs(r.repairs, markdown=True) or ["- no hazard to repair"]
    lines += ["", f"_{HOLD_NOTE}; {r.elapsed_s:.1f} s_"]
    return "\n".join(lines)
