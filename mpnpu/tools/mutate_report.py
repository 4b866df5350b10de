"""``mpnpu mutate``'s reports: the table of sync points and the score, and the JUnit document (one
test case per executed sync point: a survivor is a failure, so CI shows which syncs no test
guards; an uncovered one is skipped)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from mpnpu.directed.mutation import KILLED
from mpnpu.report.junit import junit_suite
from mpnpu.tools.mutate import MutationReport


def format_mutation(report: MutationReport, min_score: float | None = None) -> str:
    """The table (one row per executed sync point), the uncovered ones, and the score line."""
    rows = [("sync point", "call", "result", "how / why")]
    for m in report.mutants:
        if not m.status:
            rows.append((m.site, m.call, "not run", "interrupted before this mutant ran"))
        elif m.status == KILLED:
            rows.append((m.site, m.call, "killed", m.how + (f" ({', '.join(m.tests)})" if m.tests else "")))
        else:
            rows.append((m.site, m.call, f"SURVIVED ({m.survivor_class})", m.detail))
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"mpnpu mutate: {' '.join(report.command)}",
             f"{len(report.mutants)} sync points executed; baseline run {report.baseline_s:.2f} s", ""]
    lines += [f"  {r[0]:<{width[0]}}  {r[1]:<{width[1]}}  {r[2]:<{width[2]}}  {r[3]}" for r in rows]
    if report.uncovered:
        lines += ["", f"uncovered (in the sources, never executed by the program): {len(report.uncovered)}"]
        lines += [f"  {site}" for site in report.uncovered]
    lines += ["", score_line(report, min_score), f"({report.elapsed_s:.1f} s)"]
    return "\n".join(lines)


def score_line(report: MutationReport, min_score: float | None = None) -> str:
    """'score: 0.67 (2 of 3 executed sync points killed by the program's own checks); ...'."""
    killed, done = len(report.killed), len([m for m in report.mutants if m.status])
    head = (f"score: {report.score:.2f} ({killed} of {done} executed sync points killed by the program's own "
            f"checks)")
    if report.interrupted:
        head += f"; INTERRUPTED: {len(report.mutants) - done} mutants did not run"
    if min_score is not None:
        head += f"; {'below' if report.score < min_score else 'meets'} --min-score {min_score:g}"
    return head


def mutation_junit(report: MutationReport) -> ET.Element:
    """One test case per sync point: killed passes, a survivor fails (its reason class and detail),
    an uncovered one is skipped."""
    cases: list[tuple[ET.Element, str]] = []
    for m in report.mutants:
        case = ET.Element("testcase", classname="mpnpu.mutate", name=m.site, time=f"{m.seconds:.3f}")
        if m.status == KILLED:
            outcome = "passed"
            ET.SubElement(case, "system-out").text = f"killed: {m.how}: {m.detail}"
        elif m.status:
            outcome = "failure"
            ET.SubElement(case, "failure", message=f"{m.call} survived ({m.survivor_class})").text = m.detail
        else:
            outcome = "skipped"
            ET.SubElement(case, "skipped", message="interrupted before this mutant ran")
        cases.append((case, outcome))
    for site in report.uncovered:
        case = ET.Element("testcase", classname="mpnpu.mutate", name=site, time="0.000")
        ET.SubElement(case, "skipped", message="uncovered: the program never executed this sync point")
        cases.append((case, "skipped"))
    root = ET.Element("testsuites", name="mpnpu")
    root.append(junit_suite("mpnpu.mutate", cases, report.elapsed_s,
                      {"score": f"{report.score:.4f}", "command": " ".join(report.command)}))
    return root
