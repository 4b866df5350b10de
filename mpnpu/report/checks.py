"""initcheck and synccheck findings in the racecheck report's style: one block per finding, then a
summary line per check. The findings come from :mod:`mpnpu.racecheck.initcheck` and
:mod:`mpnpu.racecheck.synccheck` as data (:class:`~mpnpu.racecheck.findings.Finding`).
"""

from __future__ import annotations

from typing import Iterable

from mpnpu.racecheck.findings import CHECKS, INITCHECK, KINDS, Finding, FindingLog
from mpnpu.racecheck.hazards import stage_label

#: the words each kind of finding is announced with
_TITLES = {
    "uninitialized read": "Uninitialized read",
    "set never waited": "SetFlag never waited",
    "pending at kernel end": "Flag pending at kernel end",
    "duplicate event id": "Duplicate event id",
    "redundant sync": "Redundant sync",
}


def _where(f: Finding) -> str:
    if f.byte_range is None:
        return f.subject
    lo, hi = f.byte_range
    if f.elements:
        return f"{f.subject}[{lo}:{hi}]"
    return f"{f.subject} bytes [{lo}:{hi}] of {f.core}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def format_findings(findings: Iterable[Finding], launches_checked: int | None = None,
                    checks: Iterable[str] = CHECKS) -> str:
    """Findings as racecheck prints hazards: a block each (``====== ERROR: ...``), then one summary
    line per check of ``checks``; ``launches_checked`` shows in how many launches each appeared
    out of how many were checked."""
    findings = list(findings)
    out_of = f" of {launches_checked}" if launches_checked is not None else ""
    lines: list[str] = []
    for f in findings:
        seen = f"x{f.count} in {f.launches}{out_of} {'launch' if f.launches == 1 and not out_of else 'launches'}"
        level = "ERROR" if f.is_error else "WARNING"
        lines.append(f"====== {level}: {_TITLES[f.kind]} ({f.check}) at {_where(f)} ({seen}):")
        who = f"{f.pipe} of {f.core}" if f.pipe else f.core
        lines.append(f"======    {f.subject} by {who} in {stage_label(f.stage)} at {f.site}")
        if f.other_site:
            lines.append(f"======    other line: {f.other_site}")
        if len(f.cores) > 1:
            lines.append(f"======    cores: {', '.join(sorted(f.cores)[:4])}"
                         + (f" (+{len(f.cores) - 4} more)" if len(f.cores) > 4 else ""))
        lines.append(f"======    {f.message}")
        lines.append(f"======    fix: {f.fix}")
    checked = f" in {_plural(launches_checked, 'launch')} checked" if launches_checked is not None else ""
    if launches_checked is not None and launches_checked != 1:
        checked = checked.replace("launchs", "launches")
    for check in checks:
        mine = [f for f in findings if f.check == check]
        kinds = [k for k in KINDS if any(f.kind == k for f in mine)]
        detail = ", ".join(f"{sum(1 for f in mine if f.kind == k)} {k}" for k in kinds)
        noun = "finding"
        lines.append(f"====== SUMMARY ({check}): {_plural(len(mine), noun)}"
                     f"{f' ({detail})' if detail else ''}{checked}")
    return "\n".join(lines)


def format_finding_log(log: FindingLog, checks: Iterable[str] = CHECKS) -> str:
    """A log's findings with their launch counts (:func:`format_findings`)."""
    checks = tuple(checks)
    return format_findings([f for f in log.findings() if f.check in checks], log.launches_checked, checks)


__all__ = ["INITCHECK", "format_finding_log", "format_findings"]
