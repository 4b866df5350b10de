"""The generic pieces behind every tool: one aggregation (VariantResult.merge) and diagnosis chains
as data, run for an operator that is not FLOMS.

Deterministic: racecheck finds the test operator's missing barrier whatever the timing, and the
chain below only runs the fixed variant (every sync in place).
"""

from __future__ import annotations

import dataclasses

import pytest

from mpnpu import Diagnosis, Shapes, Step
from mpnpu.cli.commands import investigate as inv_cli
from mpnpu.cli.common import run_cli
from mpnpu.errors import UsageError
from mpnpu.harness.chain import run_investigation
from mpnpu.harness.runner import Variant, VariantResult, make_variants, run_batch
from mpnpu.operators.protocol import Verdict
from mpnpu.operators.registry import load_operator
from mpnpu.report.hazards import format_hazard_log
from mpnpu.report.markdown import format_markdown
from mpnpu.report.text.investigate import format_investigation
from mpnpu.runtime.device import Device

OP = load_operator("tests.operator_for_tests:OPERATOR")


def _result(failures: list[tuple[int, int]], repeats: int, name: str = "incident") -> VariantResult:
    """A VariantResult with 4 cases per repeat; ``failures`` = (repeat, case) that failed."""
    v = VariantResult(Variant(name, frozenset({"B1"})), repeats)
    for r in range(repeats):
        for i in range(4):
            failed = (r, i) in failures
            verdict = Verdict(passed=not failed, failed_outputs=["total"] if failed else [],
                              min_rel_error=0.5 if failed else 0.0, max_rel_error=2.0 * (i + 1) if failed else 0.0,
                              fingerprint=bytes([r + 1 if failed else 0]))
            v.record(i, r, verdict, "", since_start=0.1 * (4 * r + i))
    return v


def test_merge_adds_counts_and_keeps_the_first_failure():
    a = _result([], 2)
    b = _result([(0, 3), (1, 1)], 2)
    m = a.merge(b)
    assert (m.repeats, m.case_runs, m.failed_case_runs) == (4, 16, 2)
    assert m.failing_cases_by_repeat == [[], [], [3], [1]]
    assert m.failed_by_output == {"total": 2}
    assert (m.min_rel_error, m.max_rel_error) == (0.5, 8.0)
    # b's first failure was its case-run 4; after a's 8 case-runs it is case-run 12 of the merge
    assert m.first_failure_case_run == 8 + b.first_failure_case_run == 12
    assert m.first_failure_s == b.first_failure_s
    assert m.inconsistent_cases == [1, 3]  # fingerprints pooled across the rounds
    assert a.case_runs == 8 and a.first_failure_case_run is None  # inputs untouched
    earlier = _result([(1, 0)], 2).merge(b)
    assert earlier.first_failure_case_run == 5  # the earliest failure wins
    with pytest.raises(ValueError, match="cannot merge"):
        a.merge(_result([], 1, name="fixed"))


def test_merge_combines_hazard_logs(no_leaks):
    with Device(1) as device:
        rounds = [run_batch(OP, cases=2, repeat=1, variants=make_variants(OP, ["incident"]), racecheck=True,
                            device=device, seed=s).variants["incident"] for s in (0, 1)]
    a, b = rounds
    assert len(a.hazard_log) >= 1 and a.hazard_log.launches_analyzed == 2  # B1 missing: found every time
    m = a.merge(b)
    assert m.hazard_log.launches_analyzed == 4
    (hazard,) = [h for h in m.hazard_log.hazards() if "partials" in h.tensor]
    assert hazard.launches == sum(h.launches for log in (a.hazard_log, b.hazard_log)
                                  for h in log.hazards() if h.key == hazard.key)
    assert "B1" in format_hazard_log(m.hazard_log)
    assert a.hazard_log.launches_analyzed == 2  # not modified


def _fixed_is_clean(r, earlier):
    return not r.shows_fault


CHAIN = Diagnosis(
    title="two-phase sum: a chain of two steps",
    subject="fixed kernel",
    steps=(
        Step("fixed", "", "fixed", "nothing", "golden", False, "all pass", "clean in {n} case-runs",
             _fixed_is_clean, lambda r, e: f"failing {r.failed_case_runs}/{r.case_runs}", "failing = 0"),
        Step("derived", "", "", "(from fixed)", "", False, "-", "the fix holds",
             lambda r, e: e[0].matches, lambda r, e: "from the step before", label="so"),
    ),
    rule="a step matches when its expectation holds",
    consistency_note="cases compared by their total",
    reference="the plan",
    shapes={"tiny": Shapes("tiny cases", lambda op: op)},
    default_shapes="tiny",
)


def test_a_chain_as_data_runs_for_any_operator(no_leaks):
    op = dataclasses.replace(OP, diagnosis=CHAIN)
    inv = run_investigation(op, calibration_cases=3, repeats=2, block_dim=1, min_cases=3, max_cases=3)
    assert inv.all_match and [s.label for s in inv.steps] == ["fixed", "so"]
    assert inv.steps[0].case_runs == 6 and inv.plan is None  # no step calibrates
    assert inv.steps[0].conclusion == "clean in 6 case-runs"
    assert inv.verdict_line() == "verdict: OK: every conclusion matches the plan (2/2 steps)"
    text = format_investigation(inv)
    assert "mpnpu investigate: two_phase_sum, fixed kernel, seed 0" in text and "tiny cases" in text
    assert text.splitlines()[-2] == inv.verdict_line()
    assert format_markdown(inv).startswith("# two-phase sum: a chain of two steps")
    assert inv.to_dict()["rule"] == CHAIN.rule
    with pytest.raises(UsageError, match="unknown shapes 'huge'; known: tiny, default"):
        run_investigation(op, shapes="huge")


def test_an_operator_without_a_chain_is_one_line_exit_2(capsys):
    with pytest.raises(UsageError, match="operator two_phase_sum has no diagnosis chain"):
        run_investigation(OP)
    rc = run_cli(inv_cli.COMMAND.main, ["--op", "tests.operator_for_tests:OPERATOR"], prog="mpnpu.investigate")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == ["mpnpu.investigate: error: operator two_phase_sum has no diagnosis chain to "
                               "investigate (python -m mpnpu.batch runs its variants)"]


# -- timelines of a chain's steps -----------------------------------------------------------------------


def _any(r, earlier):
    return True


TIMELINE_CHAIN = dataclasses.replace(CHAIN, steps=(
    Step("broken", "", "incident", "B1 dropped", "golden", True, "-", "ran", _any, lambda r, e: "ran"),
    CHAIN.steps[0],
    CHAIN.steps[1],
))
#: The test operator with a chain whose two batch steps run the incident and the fixed kernel
#: (``--op tests.test_chain:TIMELINE_OP``).
TIMELINE_OP = dataclasses.replace(OP, diagnosis=TIMELINE_CHAIN)


def test_investigate_timeline_keeps_launches_per_step(tmp_path, capsys, no_leaks):
    """--timeline on investigate: the launches are kept per step that runs a batch (named after it,
    in step order), traced with their GM accesses, and written as a valid Chrome trace."""
    import json

    from tests.test_timeline import assert_trace_rules

    out = tmp_path / "t.json"
    argv = ["--op", "tests.test_chain:TIMELINE_OP", "--calibration-cases", "3", "--min-cases", "3", "--max-cases",
            "3", "--repeats", "2", "--block-dim", "1", "--quiet", "--timeline", str(out)]
    rc = run_cli(inv_cli.COMMAND.main, argv, prog="mpnpu.investigate")
    assert rc == 0
    err = capsys.readouterr().err
    assert f"timeline: {out} (" in err
    doc = json.loads(out.read_text())
    assert_trace_rules(doc)
    labels = [entry["label"] for entry in doc["otherData"]["launches"]]
    assert labels and labels[0].startswith("broken (incident), case ") and labels[-1].startswith("fixed (fixed), case ")
    assert {label.split(", case")[0] for label in labels} == {"broken (incident)", "fixed (fixed)"}
    assert any(ev.get("cat", "").startswith("gm.") for ev in doc["traceEvents"])


@pytest.mark.parametrize("argv, message", [
    (["--timeline-case", "1"], "--timeline-case needs --timeline PATH"),
    (["--timeline", "t.json", "--timeline-case", "3", "--calibration-cases", "3"], "not a case of this run"),
])
def test_investigate_timeline_usage_errors(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = run_cli(inv_cli.COMMAND.main, ["--op", "tests.test_chain:TIMELINE_OP", *argv], prog="mpnpu.investigate")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message in err[0], err
    assert not list(tmp_path.iterdir())
