"""A user's first kernel (issue 21, items 2-4): a golden of the wrong shape, a kernel that raises,
an audit and a --confirm whose baseline is broken. The kernel is the user's compaction kernel
(tests/compact) with one deliberate mistake each.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from mpnpu.directed.audit import audit
from mpnpu.directed.confirm import confirm_hazards
from mpnpu.errors import BaselineError, ExitCode, KernelError, UsageError
from mpnpu.harness.runner import make_variants, run_batch
from tests.compact import compact, mpnpu, ref, site
from tests.runtime_util import OPTIONS, device

# -- item 2: a golden of the wrong shape ---------------------------------------------------------------


def test_a_golden_of_the_wrong_shape_is_one_line_naming_the_output_and_both_shapes() -> None:
    """Today: ValueError: cannot reshape array of size ... (a traceback, exit 1)."""
    op = compact.BAD_GOLDEN
    case = op.make_case(0, 0)
    n, (declared,) = case.inputs["x"].size, case.outputs["y"][0]
    with pytest.raises(UsageError) as info:
        op.prepare(case)
    assert str(info.value) == (
        f"operator compact-bad-golden: the golden of output y has shape ({2 * n},) ({2 * n} elements) but "
        f"{case.describe()} declares ({declared},) ({declared} elements) (golden wrong_golden at "
        f"compact/compact.py:{compact.wrong_golden.__code__.co_firstlineno})")
    assert info.value.details == {"output": "y", "golden_shape": [2 * n], "declared_shape": [declared]}


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("command", [
    ("batch", "--cases", "3"),
    ("audit", "--scout-cases", "1", "--no-repair"),
    ("stress", "--cases", "2", "--block-dims", "1", "--placements", "none", "--chaos", "off", "--duration", "60"),
])
def test_a_golden_of_the_wrong_shape_exits_2_with_one_line(command: tuple[str, ...]) -> None:
    p = mpnpu(*command, "--op", ref("BAD_GOLDEN"), "--quiet")
    assert p.returncode == ExitCode.USAGE, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith(f"mpnpu {command[0]}: error: operator compact-bad-golden: the golden of output y "
                               "has shape (")


# -- item 3: a kernel that raises -----------------------------------------------------------------------


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_a_kernel_that_raises_names_its_line_and_carries_the_last_frames() -> None:
    """Today: 'vector core 1 (block 0, sub 1) raised ValueError: ...' and nothing about where."""
    op = compact.RAISES
    with device(1) as dev:
        with pytest.raises(KernelError) as info:
            op.run(dev, op.make_case(0, 0))
    err = info.value
    assert str(err).startswith("vector core 1 (block 0, sub 1) raised ValueError: offset ")
    assert f"is not what core 1 expected at {site('MISTAKE raise')} (compact)" in str(err)
    assert err.details["site"] == site("MISTAKE raise") and err.details["function"] == "compact"
    tail = err.details["traceback_tail"]
    assert 'compact.py", line' in tail and "raise ValueError(" in tail
    assert tail.rstrip().splitlines()[-1].startswith("ValueError: offset ")


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_an_error_inside_mpnpu_names_the_kernel_line_that_called_it() -> None:
    """A misuse the API reports (here numpy's, in a kernel's computation) is placed at the kernel's
    line, not at mpnpu's or numpy's."""
    with device(1) as dev:
        x = dev.to_device("x", np.zeros(8, np.int32))
        with pytest.raises(KernelError) as info:
            dev.launch("tests.kernels_for_tests:data_copy_misuse", x, "size")
    assert info.value.details["site"].startswith("tests/kernels_for_tests.py:")
    assert str(info.value).endswith(f"at {info.value.details['site']} (data_copy_misuse)")


def _batch(op: Any, cases: int, **kwargs: Any) -> Any:
    return run_batch(op, cases=cases, repeat=2, variants=make_variants(op, ("incident", "fixed")), block_dim=1,
                     options=OPTIONS, **kwargs)


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_the_same_error_stops_a_variant_instead_of_a_rebuild_per_case_run() -> None:
    """Today: all 2 x 10 x 2 case-runs run, each paying for a pool rebuild. Now the fixed variant
    stops after 3 (the default), and the incident variant at its next error, the same one."""
    res = _batch(compact.RAISES, 10)
    fixed, incident = res.variants["fixed"], res.variants["incident"]
    assert (fixed.case_runs, fixed.launch_errors, fixed.not_run) == (3, 3, 17)
    assert (incident.case_runs, incident.not_run) == (4, 16)  # it runs before fixed in each case
    assert fixed.stopped.startswith("stopped after the same launch error in 3 consecutive case-runs (case 2: "
                                    "vector core 1 (block 0, sub 1) raised ValueError: ")
    assert res.stopped_expected_clean == ["fixed"]
    assert "fixed STOPPED (the same launch error in 3 consecutive case-runs)" in res.verdict_line()
    d = fixed.to_dict()
    assert d["first_launch_error_details"]["site"] == site("MISTAKE raise")
    assert "raise ValueError(" in d["first_launch_error_details"]["traceback"]


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_max_same_errors_zero_never_stops() -> None:
    res = _batch(compact.RAISES, 2, max_same_errors=0)
    assert [v.case_runs for v in res.variants.values()] == [4, 4] and not res.stopped_expected_clean


class _FailsWhenDropping:
    """The compaction operator, but a launch that drops syncs fails as a racy memcheck would: the
    same error at the same line every time."""

    def __init__(self) -> None:
        self._op = compact.OPERATOR

    def __getattr__(self, name: str) -> Any:
        return getattr(self._op, name)

    def run(self, device, case, *, drop_syncs=frozenset(), probe="", trace=False):
        if drop_syncs:
            return self._op.run(device, compact.PAST_END.make_case(case.seed, case.index), drop_syncs=drop_syncs,
                                probe=probe, trace=trace)
        return self._op.run(device, case, drop_syncs=drop_syncs, probe=probe, trace=trace)


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_a_variant_that_drops_syncs_keeps_running_while_the_fixed_one_is_clean() -> None:
    """Its repeated error may be its race's (stale counts giving an offset past the end): it stops
    only on an error the fixed variant stopped on too."""
    res = _batch(_FailsWhenDropping(), 3)
    incident, fixed = res.variants["incident"], res.variants["fixed"]
    assert fixed.clean and not incident.stopped
    assert incident.case_runs == incident.launch_errors == 6


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks")
def test_the_batch_cli_says_it_stopped_shows_the_frames_with_verbose_and_exits_3(tmp_path) -> None:
    out = tmp_path / "r.json"
    p = mpnpu("batch", "--op", ref("RAISES"), "--cases", "10", "--repeat", "2", "--verbose", "--json", str(out))
    assert p.returncode == ExitCode.ERROR, p.stderr
    assert "STOPPED after the same launch error in 3 consecutive case-runs; 17 case-runs of this variant were not " \
           "run" in p.stdout
    assert "the last frames of vector core 1 (block 0, sub 1)'s traceback:" in p.stdout
    assert 'raise ValueError(f"offset {offset} is not what core 1 expected")' in p.stdout
    data = json.loads(out.read_text())
    assert data["stopped_expected_clean"] == ["fixed"]
    assert data["variants"]["fixed"]["first_launch_error_details"]["error_type"] == "ValueError"
    quiet = mpnpu("batch", "--op", ref("RAISES"), "--cases", "10", "--max-same-errors", "2", "--quiet")
    assert quiet.returncode == ExitCode.ERROR
    assert quiet.stdout.strip() == ("verdict: NOT OK: fixed STOPPED (the same launch error in 2 consecutive "
                                    "case-runs); incident STOPPED (the same launch error in 3 consecutive case-runs)")


# -- item 4: the audit and --confirm check their baseline ------------------------------------------------


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_the_audit_refuses_when_the_fixed_variant_errors() -> None:
    """Today the audit reports S1 "necessary" (its batch failed): evidence against a broken baseline."""
    with pytest.raises(BaselineError) as info:
        audit(compact.RAISES, scout_cases=2, runs=1, batch_cases=2, block_dim=1, repair=False, options=OPTIONS)
    case = compact.RAISES.make_case(0, 0)
    assert str(info.value).startswith(
        f"audit refused: the fixed variant (every sync point in place) must pass first, but {case.describe()} did "
        "not run: vector core 1 (block 0, sub 1) raised ValueError: offset ")
    assert info.value.details["reason"] == "error" and info.value.exit_code == ExitCode.FAILED


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_race_directed_reproduction_refuses_a_fixed_variant_that_fails() -> None:
    with pytest.raises(BaselineError, match=r"^race-directed reproduction refused: the fixed variant .* came out "
                                            r"wrong: y \(relative error up to "):
        confirm_hazards(_WrongWhenFixed(), dropped={"S1"}, runs=1, scout_cases=1, options=OPTIONS)


class _WrongWhenFixed(_FailsWhenDropping):
    """Outputs wrong in every case-run (the fixed kernel's too)."""

    def judge(self, case, prepared, outputs, probe=""):
        outputs = {name: value * 0 - 1 for name, value in outputs.items()}
        return self._op.judge(case, prepared, outputs, probe)

    def run(self, device, case, *, drop_syncs=frozenset(), probe="", trace=False):
        return self._op.run(device, case, drop_syncs=drop_syncs, probe=probe, trace=trace)


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks")
def test_audit_and_confirm_refuse_on_the_command_line() -> None:
    p = mpnpu("audit", "--op", ref("RAISES"), "--scout-cases", "1", "--quiet")
    assert p.returncode == ExitCode.FAILED, p.stderr
    assert p.stderr.startswith("mpnpu audit: error: audit refused: the fixed variant (every sync point in place) "
                               "must pass first, but case 0: ")
    assert len(p.stderr.strip().splitlines()) == 1
    c = mpnpu("batch", "--op", ref("RAISES"), "--variant", "incident", "--cases", "2", "--racecheck", "--confirm",
              "--quiet")
    assert c.returncode == ExitCode.FAILED
    assert c.stdout.splitlines()[-1].startswith("race-directed reproduction refused: the fixed variant (every sync "
                                                "point in place) must pass first, but case 0: ")
