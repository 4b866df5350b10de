"""What ``mpnpu ut`` found, per test and over the corpus, and its forms: a text table, JSON (``to_dict``),
JUnit XML and Markdown.

Per test: built / ran / gtest's verdict / memcheck reports / hazards (with ``--racecheck``) / time,
what its build needed that mpnpu lacks (names and headers at the user's file:line), the data steps
that could not run and why, and whether it is basic-API-only. Over the corpus: the counts, and the
missing-name histogram (name -> number of tests that need it) that says which Ascend C names to
implement first.
"""

from __future__ import annotations

import datetime
import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from mpnpu.directed.mutation import KILLED, REDUNDANT, UNTESTED, score
from mpnpu.report.markdown import format_markdown
from mpnpu.tools.ut import missing as missing_mod
from mpnpu.tools.ut.execute import BinaryRun, CaseRun, DataStep

#: a test's outcome, from worst to best; the table's "status" column
STATUSES = ("out-of-scope", "no-sources", "build-failed", "link-failed", "not-run", "no-result", "timeout",
            "failed", "passed")


@dataclass
class TestResult:
    """One operator's unit test."""

    __test__ = False  # (not a pytest test class, whatever its name)

    id: str  # the operator folder: activation/swi_glu
    op: str
    socs: tuple[str, ...]
    in_scope: bool
    built: bool = False
    linked: bool = False
    build_cached: bool = False
    build_s: float = 0.0
    units: list[dict[str, Any]] = field(default_factory=list)  # {source, ok, cached, seconds}
    missing: list[missing_mod.Missing] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    notes: list[str] = field(default_factory=list)
    compiles_with_stand_ins: bool = False  # compiles once its missing headers are empty stand-ins
    high_level_headers: list[str] = field(default_factory=list)
    high_level_names: list[str] = field(default_factory=list)
    run: BinaryRun | None = None
    data: list[DataStep] = field(default_factory=list)
    mutation: Any = None  # mpnpu.tools.mutate.MutationReport, with --mutate-syncs on a test that passed
    mutation_error: str = ""  # why a test that passed could not be mutation-tested
    #: what must be the same for a later --resume to take its mutants over (mpnpu.tools.ut.resume.identity)
    resume_key: dict[str, Any] | None = None

    @property
    def basic_only(self) -> bool:
        """Uses only the basic API (no high-level API header or name reached from its sources)."""
        return not self.high_level_headers and not self.high_level_names

    @property
    def ran(self) -> bool:
        return self.run is not None

    @property
    def cases(self) -> list[CaseRun]:
        return self.run.cases if self.run else []

    @property
    def gtest(self) -> str:
        return self.run.gtest if self.run else "none"

    @property
    def memcheck(self) -> int:
        """Cases with a memcheck report."""
        return sum(1 for c in self.cases if c.memcheck)

    @property
    def hazards(self) -> int:
        return sum(c.hazards for c in self.cases)

    @property
    def defects(self) -> int:
        """initcheck / synccheck defects over its cases (with --initcheck / --synccheck)."""
        return sum(c.defects for c in self.cases)

    @property
    def status(self) -> str:
        if not self.in_scope:
            return "out-of-scope"
        if not self.units:
            return "no-sources"
        if not self.built:
            return "build-failed"
        if not self.linked:
            return "link-failed"
        if self.run is None:
            return "not-run"
        if self.run.timed_out:
            return "timeout"
        if not self.run.cases:
            return "no-result"
        return "passed" if self.gtest == "passed" else "failed"

    @property
    def faults(self) -> list[str]:
        """What stopped its launches (each once): mpnpu's refusals and the kernels' faults."""
        return sorted({c.fault for c in self.cases if c.fault})

    @property
    def missing_headers(self) -> list[str]:
        return sorted({m.name for m in self.missing if m.kind == "header"})

    @property
    def data_skipped(self) -> list[str]:
        """The data steps it calls that cannot run here, with why."""
        out = [f"{d.script} (needs {', '.join(d.missing)}: not installed)" for d in self.data if d.called and d.missing]
        if self.run:
            out += [f"a data step failed: no Python package {p}" for p in self.run.missing_packages
                    if not any(p in d.missing for d in self.data)]
            out += [f"a data step found no script {f}" for f in self.run.missing_files]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "op": self.op, "socs": list(self.socs), "in_scope": self.in_scope, "status": self.status,
            "built": self.built, "linked": self.linked, "ran": self.ran, "gtest": self.gtest,
            "cases": len(self.cases), "cases_passed": sum(1 for c in self.cases if c.status == "passed"),
            "memcheck": self.memcheck, "hazards": self.hazards, "defects": self.defects,
            "build_s": round(self.build_s, 2),
            "build_cached": self.build_cached, "run_s": round(self.run.seconds, 2) if self.run else None,
            "exit_code": self.run.exit_code if self.run else None, "basic_only": self.basic_only,
            "high_level_headers": self.high_level_headers, "high_level_names": self.high_level_names,
            "missing": [m.to_dict() for m in self.missing], "missing_headers": self.missing_headers,
            "errors": self.errors, "error_count": self.error_count, "notes": self.notes, "units": self.units,
            "compiles_with_stand_ins": self.compiles_with_stand_ins,
            "data": [d.to_dict() for d in self.data], "data_skipped": self.data_skipped, "faults": self.faults,
            "case_results": [c.to_dict() for c in self.cases],
            "output_tail": self.run.output_tail if self.run and not self.run.cases else "",
            "mutation": self.mutation.to_dict() if self.mutation is not None else None,
            "mutation_error": self.mutation_error,
            **({"resume_key": self.resume_key} if self.resume_key is not None else {}),
        }


@dataclass
class UtRun:
    """``mpnpu ut`` over one checkout."""

    repo: str
    chip: str
    tests: list[TestResult] = field(default_factory=list)
    wall_s: float = 0.0
    racecheck: bool = False
    jobs: int = 1
    run_jobs: int = 1  # built tests run at a time
    opt: str = "-O1"
    filtered: bool = False  # --ops chose some tests
    interrupted: bool = False
    unreadable: list[str] = field(default_factory=list)
    interrupt: BaseException | None = field(default=None, repr=False)  # the Ctrl-C / SIGTERM that ended it
    mutate_syncs: bool = False  # --mutate-syncs: every test that passed was mutation-tested
    checks: tuple[str, ...] = ()  # --initcheck / --synccheck: those that ran

    @property
    def in_scope(self) -> list[TestResult]:
        return [t for t in self.tests if t.in_scope]

    def counts(self, tests: list[TestResult] | None = None) -> dict[str, int]:
        """found / out of scope / in scope / built / linked / ran / passed / failed / memcheck / hazards."""
        every = self.tests if tests is None else tests
        mine = [t for t in every if t.in_scope]
        return {
            "found": len(every), "out_of_scope": len(every) - len(mine), "in_scope": len(mine),
            "no_sources": sum(1 for t in mine if not t.units),
            "built": sum(1 for t in mine if t.built), "linked": sum(1 for t in mine if t.linked),
            "ran": sum(1 for t in mine if t.ran), "gtest_passed": sum(1 for t in mine if t.gtest == "passed"),
            "gtest_failed": sum(1 for t in mine if t.ran and t.gtest != "passed"),
            "cases": sum(len(t.cases) for t in mine),
            "cases_passed": sum(1 for t in mine for c in t.cases if c.status == "passed"),
            "compile_with_stand_ins": sum(1 for t in mine if t.compiles_with_stand_ins),
            "passed_with_data_skipped": sum(1 for t in mine if t.gtest == "passed" and t.data_skipped),
            "with_memcheck": sum(1 for t in mine if t.memcheck), "with_hazards": sum(1 for t in mine if t.hazards),
            "with_defects": sum(1 for t in mine if t.defects),
            "timeouts": sum(1 for t in mine if t.run is not None and t.run.timed_out),
        }

    @property
    def ok(self) -> bool:
        """Every test in scope built, ran and passed with no memcheck report, no hazard and no
        initcheck / synccheck defect."""
        return all(t.status == "passed" and not t.memcheck and not t.hazards and not t.defects
                   for t in self.in_scope)

    def histogram(self, kinds: tuple[str, ...] = ("name", "member", "overload", "refused", "macro", "link")
                  ) -> list[missing_mod.Row]:
        """The missing-name histogram over the tests in scope (headers apart: :meth:`header_histogram`)."""
        return missing_mod.histogram((t.missing for t in self.in_scope), kinds)

    def header_histogram(self) -> list[missing_mod.Row]:
        return missing_mod.histogram((t.missing for t in self.in_scope), ("header",))

    def fault_histogram(self) -> list[tuple[str, int, str]]:
        """(what stopped launches, tests it stopped, an example kernel line), most frequent first."""
        counts: dict[str, int] = {}
        example: dict[str, str] = {}
        for t in self.in_scope:
            for c in t.cases:
                if c.fault:
                    example.setdefault(c.fault, c.fault_where or t.id)
            for f in t.faults:
                counts[f] = counts.get(f, 0) + 1
        return sorted(((f, n, example[f]) for f, n in counts.items()), key=lambda x: (-x[1], x[0]))

    def to_dict(self) -> dict[str, Any]:
        basic = [t for t in self.in_scope if t.basic_only]
        return {
            "repo": self.repo, "chip": self.chip, "wall_s": round(self.wall_s, 1), "racecheck": self.racecheck,
            "checks": list(self.checks),
            "jobs": self.jobs, "run_jobs": self.run_jobs, "opt": self.opt, "filtered": self.filtered,
            "interrupted": self.interrupted,
            "counts": self.counts(), "counts_basic_api_only": self.counts(basic),
            "counts_high_level": self.counts([t for t in self.in_scope if not t.basic_only]),
            "missing_names": [r.to_dict() for r in self.histogram()],
            "missing_headers": [r.to_dict() for r in self.header_histogram()],
            "run_faults": [{"fault": n, "tests": c, "example": e} for n, c, e in self.fault_histogram()],
            "unreadable": self.unreadable, "tests": [t.to_dict() for t in self.tests],
            **({"mutation": self.mutation_counts()} if self.mutate_syncs else {}),
        }

    def mutation_counts(self) -> dict[str, Any]:
        """Over the tests mutation-tested: executed sync points, killed (by the tests' own checks),
        survived (untested / redundant), uncovered, and the score killed / executed."""
        reports = [t.mutation for t in self.in_scope if t.mutation is not None]
        mutants = [m for r in reports for m in r.mutants if m.status]
        killed = sum(1 for m in mutants if m.status == KILLED)
        return {"tests": len(reports), "not_tested": sum(1 for t in self.in_scope if t.mutation_error),
                "executed": len(mutants), "killed": killed,
                "untested": sum(1 for m in mutants if m.survivor_class == UNTESTED),
                "redundant": sum(1 for m in mutants if m.survivor_class == REDUNDANT),
                "uncovered": sum(len(r.uncovered) for r in reports),
                "score": round(score(killed, len(mutants)), 4),
                "seconds": round(sum(r.elapsed_s for r in reports), 1),
                # mutants taken over from an earlier run (--resume), not run in this one
                "resumed": sum(r.resumed for r in reports)}


# -- the text table ------------------------------------------------------------------------------------------------


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "~"


def needs(t: TestResult, limit: int = 3) -> str:
    """What the test needed that mpnpu lacks, shortest form: headers first, then names."""
    heads = t.missing_headers
    names = sorted({m.key for m in t.missing if m.kind != "header" and not m.corpus})
    parts = [f"<{h}>" for h in heads] + names
    more = f" +{len(parts) - limit}" if len(parts) > limit else ""
    return ", ".join(parts[:limit]) + more


def collapsed(hist: list[missing_mod.Row], at_least: int = 3) -> list[missing_mod.Row]:
    """The histogram with the members of one class that the same tests need on one line
    (``TCubeTiling::{ALayoutInfoB, ALayoutInfoD, ...}``) when there are ``at_least`` of them."""

    def owner(row: missing_mod.Row) -> str | None:
        if "::" in row.name and not row.name.startswith("std::") and " " not in row.name:
            return row.name.rsplit("::", 1)[0]
        return None

    groups: dict[tuple[str, int, int, int], list[str]] = {}
    for r in hist:
        o = owner(r)
        if o is not None:
            groups.setdefault((o, r.tests, r.direct, r.sole), []).append(r.name.rsplit("::", 1)[1])
    out, done = [], set()
    for r in hist:
        o = owner(r)
        key = (o or "", r.tests, r.direct, r.sole)
        members = groups.get(key, []) if o is not None else []
        if len(members) < at_least:
            out.append(r)
        elif key not in done:
            done.add(key)
            out.append(missing_mod.Row(f"{o}::{{{', '.join(members)}}}", r.tests, r.direct, r.sole, r.example))
    return out


def histogram_lines(rows: list[missing_mod.Row], top: int) -> list[str]:
    """The head of a histogram as text: tests needing it, of them directly, of them as their only need."""
    out = [f"  {'':<44} {'tests':>5} {'direct':>6} {'only':>4}"]
    out += [f"  {_short(r.name, 60):<44} {r.tests:>5} {r.direct:>6} {r.sole:>4}   e.g. {r.example}" for r in rows[:top]]
    return out


def format_table(run: UtRun, top: int = 30, show_out_of_scope: bool = False) -> str:
    """The per-test table, the corpus's counts and the head of the missing-name histogram."""
    rows = [t for t in run.tests if t.in_scope or show_out_of_scope]
    width = max([len("test")] + [len(t.id) for t in rows])
    width = min(width, 48)
    head = (f"{'test':<{width}}  {'built':<5}  {'ran':<3}  {'gtest':<7}  {'cases':>7}  {'mem':>3}  {'haz':>3}  "
            f"{'time':>6}  needs")
    lines = [head, "-" * len(head)]
    for t in rows:
        cases = f"{sum(1 for c in t.cases if c.status == 'passed')}/{len(t.cases)}" if t.ran else ""
        time_s = (t.run.seconds if t.run else 0.0) + t.build_s
        built = "yes" if t.built and t.linked else ("n/a" if not t.in_scope or not t.units else "no")
        gtest = t.gtest if t.ran else ("skip" if not t.in_scope else "-")
        mem = t.memcheck if t.ran else ""
        haz = t.hazards if t.ran and run.racecheck else ""
        what = needs(t) if t.missing else ("; ".join(t.notes[:1]) if not t.built else "")
        lines.append(f"{_short(t.id, width):<{width}}  {built:<5}  {'yes' if t.ran else 'no':<3}  {gtest:<7}  "
                     f"{cases:>7}  {mem:>3}  {haz:>3}  {time_s:>5.0f}s  {what}")
    c = run.counts()
    basic = run.counts([t for t in run.in_scope if t.basic_only])
    lines += ["", summary_line(c, run), _basic_line(basic, c)]
    if c["passed_with_data_skipped"]:
        lines.append(f"{c['passed_with_data_skipped']} of the tests that passed call a data script that could not run "
                     f"here (below): what it would generate or compare was not")
    if c["compile_with_stand_ins"]:
        lines.append(f"{c['compile_with_stand_ins']} tests that do not compile would with empty stand-ins for the "
                     f"headers they miss")
    if run.interrupted:
        lines.append("interrupted: the counts are of the tests that finished")
    hist = collapsed(run.histogram())
    if hist:
        lines += ["", f"missing names (top {min(top, len(hist))} of {len(hist)}; tests: needing it, directly (not "
                      f"only behind a missing header), as their only need):"]
        lines += histogram_lines(hist, top)
    heads = run.header_histogram()
    if heads:
        lines += ["", f"missing headers (top {min(top, len(heads))} of {len(heads)}):"]
        lines += histogram_lines(heads, top)
    if run.mutate_syncs:
        lines += ["", *mutation_lines(run, top)]
    faults = run.fault_histogram()
    if faults:
        lines += ["", f"what stopped launches (tests; top {min(top, len(faults))} of {len(faults)}):"]
        lines += [f"  {k:>4}  {_short(n, 110)}   e.g. {e}" for n, k, e in faults[:top]]
    skipped = [(t.id, s) for t in run.in_scope for s in t.data_skipped]
    if skipped:
        lines += ["", f"data steps that could not run ({len(skipped)}):"]
        lines += [f"  {i}: {s}" for i, s in skipped[:top]]
        if len(skipped) > top:
            lines.append(f"  ... {len(skipped) - top} more (--json has them all)")
    return "\n".join(lines)


def mutation_lines(run: UtRun, top: int = 30) -> list[str]:
    """--mutate-syncs: the corpus's score, then each mutation-tested test's score and its survivors
    at their lines with their class."""
    m = run.mutation_counts()
    lines = [f"sync mutation testing: {m['tests']} tests that passed, {m['executed']} executed sync points: "
             f"{m['killed']} killed by the tests' own checks, {m['untested']} survived untested (a hazard no "
             f"assertion caught), {m['redundant']} survived redundant (no hazard without it); score "
             f"{m['score']:.2f}; {m['uncovered']} sync points in the kernels' sources never executed; "
             f"{m['seconds']:.0f} s"]
    if m["resumed"]:
        lines.append(f"  {m['resumed']} of those sync points were classified by the earlier run --resume named "
                     f"(taken over, not run again)")
    if m["not_tested"]:
        lines.append(f"  {m['not_tested']} tests that passed could not be mutation-tested (--json says why)")
    survivors = [(t.id, s) for t in run.in_scope if t.mutation is not None for s in t.mutation.survivors]
    for t in run.in_scope:
        if t.mutation is not None and t.mutation.mutants:
            r = t.mutation
            executed = len([x for x in r.mutants if x.status])
            lines.append(f"  {_short(t.id, 48):<48} score {r.score:.2f} ({len(r.killed)} of {executed} killed)")
    if survivors:
        lines.append(f"  survivors ({len(survivors)}):")
        lines += [f"    {i}: {s.site} ({s.call}): {s.survivor_class}: {s.detail}" for i, s in survivors[:top]]
        if len(survivors) > top:
            lines.append(f"    ... {len(survivors) - top} more (--json has them all)")
    return lines


def summary_line(c: dict[str, int], run: UtRun) -> str:
    """The one-line verdict: found / skipped / built / ran / passed, and the time."""
    extra = f", {c['with_hazards']} with hazards" if run.racecheck else ""
    if run.checks:
        extra += f", {c['with_defects']} with {' or '.join(run.checks)} defects"
    return (f"{c['found']} tests found, {c['out_of_scope']} skipped (not registered for {run.chip}), "
            f"{c['in_scope']} in scope: {c['linked']} built, {c['ran']} ran, {c['gtest_passed']} passed "
            f"({c['cases_passed']}/{c['cases']} cases), {c['with_memcheck']} with memcheck reports{extra}; "
            f"{run.wall_s:.0f} s")


def _basic_line(basic: dict[str, int], every: dict[str, int]) -> str:
    return (f"basic-API-only tests: {basic['in_scope']} of {every['in_scope']}: {basic['linked']} built, "
            f"{basic['ran']} ran, {basic['gtest_passed']} passed")


# -- JUnit and Markdown ----------------------------------------------------------------------------------------------


def junit(run: UtRun) -> ET.Element:
    """One JUnit test case per gtest case; a test that did not build or run is one errored case, a
    test out of scope one skipped case."""
    root = ET.Element("testsuites", name="mpnpu")
    cases: list[ET.Element] = []
    outcome = {"failure": 0, "error": 0, "skipped": 0}
    for t in run.tests:
        classname = f"mpnpu.ut.{t.id.replace('/', '.')}"
        if not t.in_scope or not t.units or not t.ran:
            case = ET.Element("testcase", classname=classname, name="build", time=f"{t.build_s:.3f}")
            if not t.in_scope:
                ET.SubElement(case, "skipped", message=f"not registered for {run.chip} ({';'.join(t.socs)})")
                outcome["skipped"] += 1
            else:
                message = f"{t.status}: {needs(t, 8) if t.missing else '; '.join(t.notes) or 'no result'}"
                err = ET.SubElement(case, "error", message=message)
                err.text = "\n".join([*t.errors, *t.notes, *([t.run.output_tail] if t.run else [])])
                outcome["error"] += 1
            cases.append(case)
            continue
        assert t.run is not None
        if not t.cases:
            case = ET.Element("testcase", classname=classname, name="run", time=f"{t.run.seconds:.3f}")
            err = ET.SubElement(case, "error", message=f"{t.status}: exit status {t.run.exit_code}")
            err.text = t.run.output_tail
            outcome["error"] += 1
            cases.append(case)
        for c in t.cases:
            case = ET.Element("testcase", classname=classname, name=c.name, time=f"{c.seconds:.3f}")
            if c.status in ("failed", "unfinished") or c.memcheck or (run.racecheck and c.hazards):
                why = ("memcheck report" if c.memcheck else f"{c.hazards} hazards" if c.hazards and c.status == "passed"
                       else c.status)
                ET.SubElement(case, "failure", message=why).text = c.log
                outcome["failure"] += 1
            elif c.status == "skipped":
                ET.SubElement(case, "skipped", message="GTEST_SKIP")
                outcome["skipped"] += 1
            elif c.log:
                ET.SubElement(case, "system-out").text = c.log
            cases.append(case)
    suite = ET.SubElement(root, "testsuite", name="mpnpu.ut", tests=str(len(cases)),
                          failures=str(outcome["failure"]), errors=str(outcome["error"]),
                          skipped=str(outcome["skipped"]), time=f"{run.wall_s:.3f}",
                          timestamp=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                          hostname=socket.gethostname())
    props = ET.SubElement(suite, "properties")
    for k, v in {"repo": run.repo, "chip": run.chip, "racecheck": run.racecheck, "jobs": run.jobs,
                 "run_jobs": run.run_jobs}.items():
        ET.SubElement(props, "property", name=k, value=str(v))
    suite.extend(cases)
    return root


@format_markdown.register
def _markdown(run: UtRun) -> str:
    c = run.counts()
    lines = [f"# mpnpu ut: {run.repo}", "", summary_line(c, run), "",
             _basic_line(run.counts([t for t in run.in_scope if t.basic_only]), c), "",
             "| test | built | ran | gtest | cases | memcheck | hazards | time (s) | needs |",
             "|---|---|---|---|---|---|---|---|---|"]
    for t in run.in_scope:
        cases = f"{sum(1 for x in t.cases if x.status == 'passed')}/{len(t.cases)}" if t.ran else ""
        time_s = (t.run.seconds if t.run else 0.0) + t.build_s
        lines.append(f"| {t.id} | {'yes' if t.linked else 'no'} | {'yes' if t.ran else 'no'} | {t.gtest} | {cases} | "
                     f"{t.memcheck} | {t.hazards if run.racecheck else ''} | {time_s:.0f} | "
                     f"{needs(t, 6).replace('|', '/')} |")
    if run.mutate_syncs:
        lines += ["", "## Sync mutation testing", "", "```", *mutation_lines(run, top=1000), "```"]
    for title, rows in (("Missing names", collapsed(run.histogram())), ("Missing headers", run.header_histogram())):
        if rows:
            lines += ["", f"## {title}", "", "| name | tests | directly | as their only need | e.g. |",
                      "|---|---|---|---|---|"]
            lines += [f"| `{r.name}` | {r.tests} | {r.direct} | {r.sole} | {r.example} |" for r in rows]
    return "\n".join(lines) + "\n"
