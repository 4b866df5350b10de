"""Hazards as msSanitizer's racecheck prints them: one block per hazard, then a summary line.

Used by every command that racechecks, by the pytest plugin's failure messages and by
``assert_no_races``; the hazards themselves come from :mod:`mpnpu.racecheck` as data.
"""

from __future__ import annotations

from typing import Iterable

from mpnpu.racecheck.hazards import HAZARD_KINDS, Hazard, HazardLog, grouped, stage_label


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('h') else 's'}"


def _location(h: Hazard) -> str:
    lo, hi = h.element_range
    if h.scope == "GM":
        return f"GM tensor {h.tensor}[{lo}:{hi}]"
    if h.scope == "core":
        return f"GM tensor {h.tensor}[{lo}:{hi}] inside {h.first.core}, between {h.first.pipe} and {h.second.pipe}"
    return f"{h.tensor} bytes [{lo}:{hi}] of {h.first.core} between {h.first.pipe} and {h.second.pipe}"


def _access_lines(h: Hazard) -> list[str]:
    width = max(5, len(h.first.access), len(h.second.access))
    lines = []
    for a in (h.first, h.second):
        who = a.pipe if h.scope != "GM" else a.core
        where = f"{a.access:<{width}} by {who} in {stage_label(a.stage)} at {a.site}"
        if a.tensor != h.tensor and h.scope == "GM":
            where += f" (tensor {a.tensor})"
        lines.append(where)
    return lines


def format_hazards(hazards: Iterable[Hazard], max_core_pairs: int = 4, launches_analyzed: int | None = None,
                   reuse_note: str = "") -> str:
    """Hazards as msSanitizer racecheck prints them: one block per hazard, then a summary.

    ``launches_analyzed`` (e.g. a batch's launch count) shows how many launches each hazard
    appeared in out of how many were checked: "in 10 of 10 launches". A hazard that is a
    consequence of another (``Hazard.root``) is listed inside its root's block, not as a bug of its
    own: its accesses came after a read that saw the wrong data through the root. ``reuse_note``
    (:meth:`HazardLog.reuse_note`) ends the summary in parentheses: how many launches were analysed.
    """
    hazards = list(hazards)
    lines: list[str] = []
    out_of = f" of {launches_analyzed}" if launches_analyzed is not None else ""

    def seen(h: Hazard) -> str:
        return f"x{h.count} in {h.launches}{out_of} {'launch' if h.launches == 1 and not out_of else 'launches'}"

    consequences = 0
    for h, after in grouped(hazards):
        lines.append(f"====== ERROR: Potential {h.kind} hazard detected at {_location(h)} ({seen(h)}):")
        lines.extend(f"======    {line}" for line in _access_lines(h))
        if len(h.core_pairs) > 1:
            pairs = sorted(h.core_pairs)
            shown = ", ".join(f"{a}->{b}" for a, b in pairs[:max_core_pairs])
            more = f" (+{len(pairs) - max_core_pairs} more)" if len(pairs) > max_core_pairs else ""
            lines.append(f"======    core pairs: {shown}{more}")
        lines.append(f"======    missing sync: {h.missing_sync}")
        for c in after:
            consequences += 1
            lines.append(f"======    consequence of this hazard (its accesses come after a read that saw the wrong "
                         f"data through it): {c.kind} at {_location(c)} ({seen(c)}):")
            lines.extend(f"======       {line}" for line in _access_lines(c))
    n = {k: sum(1 for h in hazards if h.kind == k) for k in HAZARD_KINDS}
    checked = f" in {_plural(launches_analyzed, 'launch')} checked" if launches_analyzed is not None else ""
    of_them = f", {consequences} of them {'a consequence' if consequences == 1 else 'consequences'} of another" \
        if consequences else ""
    reuse = f" ({reuse_note})" if reuse_note else ""
    lines.append(
        f"====== SUMMARY: {_plural(len(hazards), 'hazard')} "
        f"({n['RAW']} RAW, {n['WAR']} WAR, {n['WAW']} WAW){checked}{of_them}{reuse}"
    )
    return "\n".join(lines)


def format_hazard_log(log: HazardLog) -> str:
    """:func:`format_hazards` of a log's hazards, out of the launches it analysed."""
    return format_hazards(log.hazards(), launches_analyzed=log.launches_analyzed, reuse_note=log.reuse_note())
