"""Batch, stress, investigation and soak results as JUnit XML, in the dialect pytest's ``--junitxml``
writes.

CI test reporters (Jenkins, GitLab, GitHub actions that read JUnit) understand that dialect::

    <testsuites name="mpnpu">
      <testsuite name="mpnpu.batch" tests= failures= errors= skipped= time= timestamp= hostname=>
        <testcase classname="mpnpu.batch.<operator>" name="<variant>" time=>
          <failure message="3/800 case-runs failed ...">details</failure>          a CI failure
          <skipped type="pytest.xfail" message="expected failure: ..."/>          an expected one
          <error message="...">...</error>                                       could not run
          <system-out>details</system-out>
        </testcase>

One test case per variant (stress: per configuration and variant, named ``variant[configuration]``
like a parametrized test). A variant with every sync point in place is expected clean: any failing
case-run is a ``failure`` carrying the failing case-runs, the rate with its 95% Wilson interval
and the racecheck hazards. A variant that drops a sync point (the incident) is *expected* to fail:
its failures are reported as pytest reports an xfail (``skipped``, type ``pytest.xfail``), and
when it does not fail it passes, as a non-strict xfail that passes does. So the file has failures
exactly when the command exits 1.
"""

from __future__ import annotations

import datetime
import functools
import socket
import xml.etree.ElementTree as ET
from typing import IO, Any, Iterable

from mpnpu.errors import InvalidTypeError
from mpnpu.harness.chain import Investigation
from mpnpu.harness.handshakes import KERNELS, WatchdogSoak
from mpnpu.harness.runner import BatchResult, VariantResult
from mpnpu.harness.soak import FixedSoak, StressSoak
from mpnpu.harness.stress.plan import SweepResult
from mpnpu.report import write_report
from mpnpu.report.checks import format_finding_log
from mpnpu.report.hazards import format_hazard_log


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def _rate_line(v: VariantResult) -> str:
    lo, hi = v.wilson95
    return (f"{v.failed_case_runs}/{v.case_runs} case-runs failed ({_pct(v.failure_rate)}; "
            f"95% Wilson interval {_pct(lo)}..{_pct(hi)})")


def _details(v: VariantResult) -> str:
    lines = [_rate_line(v)]
    if v.failed_by_output:
        by_output = ", ".join(f"{k} {n}" for k, n in v.failed_by_output.most_common())
        lines.append(f"failed outputs (case-runs): {by_output}")
    if v.max_rel_error is not None:
        lines.append(f"relative error on failing elements: {v.min_rel_error:.3g} .. {v.max_rel_error:.3g}")
    for r, cases in enumerate(v.failing_cases_by_repeat, 1):
        if cases:
            lines.append(f"repeat {r}: failing cases {', '.join(map(str, cases))}")
    if v.first_failure_case_run is not None:
        lines.append(f"first failure: case-run {v.first_failure_case_run}, after {v.first_failure_s:.2f} s")
    if v.first_launch_error:
        lines.append(f"first launch error: {v.first_launch_error}")
    if v.hazard_log is not None:
        lines.append("racecheck:")
        lines.append(format_hazard_log(v.hazard_log))
    if v.check_log is not None:
        lines.append("initcheck/synccheck:")
        lines.append(format_finding_log(v.check_log))
    return "\n".join(lines)


def _testcase(classname: str, name: str, v: VariantResult, error: str = "") -> tuple[ET.Element, str]:
    """One test case and its outcome: "passed", "failure", "xfail" or "error"."""
    case = ET.Element("testcase", classname=classname, name=name, time=f"{v.elapsed_s:.3f}")
    if error:
        ET.SubElement(case, "error", message=error).text = error
        return case, "error"
    expected_clean = v.variant.expected_clean
    dropped = ", ".join(sorted(v.variant.dropped))
    defects = v.check_log.errors() if v.check_log is not None else 0
    if v.clean and expected_clean and defects:
        message = f"passed every case-run, but initcheck/synccheck found {defects} defect{'s' if defects != 1 else ''}"
        ET.SubElement(case, "failure", message=message).text = _details(v)
        return case, "failure"
    if v.clean:
        if not expected_clean and v.case_runs:
            ET.SubElement(case, "system-out").text = (
                f"expected to fail (drops {dropped}) but every case-run passed: {_rate_line(v)}")
        return case, "passed"
    if expected_clean:
        ET.SubElement(case, "failure", message=_rate_line(v)).text = _details(v)
        return case, "failure"
    ET.SubElement(case, "skipped", type="pytest.xfail",
                  message=f"expected failure (drops {dropped}): {_rate_line(v)}")
    ET.SubElement(case, "system-out").text = _details(v)
    return case, "xfail"


def junit_suite(name: str, cases: Iterable[tuple[ET.Element, str]], elapsed_s: float,
                properties: dict[str, Any]) -> ET.Element:
    """A ``testsuite`` of ``cases`` ((testcase, outcome): "passed", "failure", "error", "xfail",
    "skipped"), counted as pytest counts them."""
    cases = list(cases)
    outcomes = [o for _, o in cases]
    suite = ET.Element(
        "testsuite", name=name, errors=str(outcomes.count("error")), failures=str(outcomes.count("failure")),
        skipped=str(outcomes.count("xfail") + outcomes.count("skipped")), tests=str(len(cases)),
        time=f"{elapsed_s:.3f}",
        timestamp=datetime.datetime.now(datetime.timezone.utc).isoformat(), hostname=socket.gethostname(),
    )
    props = ET.SubElement(suite, "properties")
    for k, value in properties.items():
        ET.SubElement(props, "property", name=k, value=str(value))
    for case, _ in cases:
        suite.append(case)
    return suite


def batch_junit(result: BatchResult) -> ET.Element:
    """A batch as a JUnit document: one test case per variant."""
    classname = f"mpnpu.batch.{result.operator}"
    cases = [_testcase(classname, name, v) for name, v in result.variants.items()]
    props = {"seed": result.seed, "cases": result.cases, "repeat": result.repeat, "block_dim": result.block_dim,
             "probe": result.probe, "racecheck": result.racecheck, "interrupted": result.interrupted}
    root = ET.Element("testsuites", name="mpnpu")
    root.append(junit_suite("mpnpu.batch", cases, result.elapsed_s, props))
    return root


def sweep_junit(result: SweepResult) -> ET.Element:
    """A stress sweep (:class:`mpnpu.harness.stress.plan.SweepResult`) as a JUnit document."""
    classname = f"mpnpu.stress.{result.operator}"
    cases = []
    for r in result.results:
        for v in result.plan.variants:
            vr = r.variants.get(v.name) or VariantResult(v, max(1, result.plan.repeat))
            cases.append(_testcase(classname, f"{v.name}[{r.config.label}]", vr, error=r.error))
    props = {"case_seed": result.plan.seed, "cases": result.plan.cases, "repeat": result.plan.repeat,
             "chaos_seed": result.plan.chaos.seed, "interrupted": result.interrupted,
             "configurations_skipped": len(result.skipped)}
    root = ET.Element("testsuites", name="mpnpu")
    root.append(junit_suite("mpnpu.stress", cases, result.elapsed_s, props))
    return root


def investigation_junit(inv: Investigation, suite: str = "mpnpu.investigate") -> ET.Element:
    """A diagnosis chain as a JUnit document: one test case per step; a step whose conclusion does
    not match the original diagnosis is a failure, one cut short by Ctrl-C is skipped."""
    classname = f"{suite}.{inv.operator}"
    cases = []
    for s in inv.steps:
        case = ET.Element("testcase", classname=classname, name=s.label, time=f"{s.elapsed_s:.3f}")
        out = f"{s.spec.changed}: {s.seen}" if s.seen else s.spec.changed
        if s.interrupted:
            ET.SubElement(case, "skipped", message=s.conclusion)
            outcome = "skipped"
        elif s.matches:
            outcome = "passed"
        else:
            ET.SubElement(case, "failure", message=s.conclusion).text = out
            outcome = "failure"
        ET.SubElement(case, "system-out").text = out
        cases.append((case, outcome))
    props = {"seed": inv.seed, "block_dim": inv.block_dim, "shapes": inv.shapes, "racecheck": inv.racecheck,
             "interrupted": inv.interrupted}
    root = ET.Element("testsuites", name="mpnpu")
    root.append(junit_suite(suite, cases, inv.elapsed_s, props))
    return root


def soak_junit(soak: FixedSoak | StressSoak) -> ET.Element:
    """A soak as a JUnit document: one test case per configuration soaked (the fixed kernel is
    expected clean, so any failing case-run is a failure)."""
    classname = f"mpnpu.soak.{soak.operator}"
    cases = []
    if isinstance(soak, FixedSoak):
        rows = [(r.config.label, r.variants["fixed"].case_runs, r.variants["fixed"].failed_case_runs, r.error)
                for r in soak.rows]
        elapsed = soak.wall_s
    else:
        rows = [(label, c["case_runs"], c["failed_case_runs"], "; ".join(f["error"] for f in c["failures"]
                                                                        if f["error"]))
                for label, c in soak.counts.items()]
        elapsed = soak.elapsed_s
    for label, n, k, error in rows:
        case = ET.Element("testcase", classname=classname, name=f"fixed[{label}]", time="0")
        if error:
            ET.SubElement(case, "error", message=error).text = error
            cases.append((case, "error"))
        elif k:
            ET.SubElement(case, "failure", message=f"{k}/{n} case-runs failed").text = f"{k}/{n} case-runs failed"
            cases.append((case, "failure"))
        else:
            ET.SubElement(case, "system-out").text = f"0/{n} case-runs failed"
            cases.append((case, "passed"))
    root = ET.Element("testsuites", name="mpnpu")
    root.append(junit_suite("mpnpu.soak", cases, elapsed, {"case_runs": soak.case_runs,
                                                      "failed_case_runs": soak.failed_case_runs}))
    return root


def watchdog_soak_junit(soak: WatchdogSoak) -> ET.Element:
    """The watchdog's soak as a JUnit document: one test case per handshake kernel."""
    cases = []
    for name in KERNELS:
        failed = [f for f in soak.failures if f.startswith(f"{name} ")]
        case = ET.Element("testcase", classname="mpnpu.soak.watchdog", name=name, time="0")
        if failed:
            ET.SubElement(case, "failure", message=f"{len(failed)} of {soak.rounds} launches failed").text = \
                "\n".join(failed[:20])
            cases.append((case, "failure"))
        else:
            cases.append((case, "passed"))
    root = ET.Element("testsuites", name="mpnpu")
    root.append(junit_suite("mpnpu.soak.watchdog", cases, soak.wall_s, {"launches": soak.launches}))
    return root


@functools.singledispatch
def junit_document(result: Any) -> ET.Element:
    """The JUnit document of a result (each kind of result registers its own)."""
    raise InvalidTypeError(f"no JUnit report for a {type(result).__name__}")


junit_document.register(BatchResult, batch_junit)
junit_document.register(SweepResult, sweep_junit)
junit_document.register(Investigation, investigation_junit)
junit_document.register(FixedSoak, soak_junit)
junit_document.register(StressSoak, soak_junit)
junit_document.register(WatchdogSoak, watchdog_soak_junit)


class JUnitReport:
    """A result as JUnit XML, as pytest writes it (expected failures as xfail)."""

    binary = True

    def write(self, result: Any, out: IO[bytes]) -> None:
        root = result if isinstance(result, ET.Element) else junit_document(result)
        ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)


def write_junit(path: str, root: ET.Element) -> None:
    """Write a JUnit document atomically."""
    write_report(path, JUnitReport(), root)
