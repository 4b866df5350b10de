"""Operators on every tool: finding them (registered name, module, file, entry point), the errors
for every way a name can be wrong, --list-ops, and the KernelOperator helpers on a real kernel.

Deterministic throughout: the kernel runs only its fixed variant (every sync in place).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpnpu.cli.commands import batch as batch_cli
from mpnpu.cli.commands import stress as stress_cli
from mpnpu.cli.common import run_cli
from mpnpu.cli.options import DEFAULT_OPERATOR
from mpnpu.errors import UsageError
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.operators import registry
from mpnpu.operators.helpers import parse_sync_names, variants_from_syncs
from mpnpu.operators.kernel import UNWRITTEN, Case, KernelOperator, default_tolerance, stored
from mpnpu.operators.protocol import check_operator, protocol_problems, with_options
from mpnpu.operators.registry import load_operator
from mpnpu.runtime.device import Device

REPO = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
FILE_REF = f"{HERE / 'operator_for_tests.py'}:OPERATOR"
MODULE_REF = "tests.operator_for_tests:OPERATOR"


# -- loading ------------------------------------------------------------------------------------


def test_registered_name_loads_floms():
    op = load_operator("floms")
    assert op.name == "fused_linear_online_max_sum"
    assert "S1" in op.sync_points and op.variants["incident"] == frozenset({"S1"})
    assert DEFAULT_OPERATOR in registry.registered()


def test_module_reference_and_default_object():
    op = load_operator(MODULE_REF)
    assert op.name == "two_phase_sum"
    assert load_operator("tests.operator_for_tests") is op  # ":OPERATOR" is the default object


def test_file_reference_loads_and_its_kernel_is_importable_by_core_processes():
    op = load_operator(FILE_REF)
    assert op.name == "two_phase_sum"
    # the kernel defined in the file is launched by path, which a core process can import
    assert isinstance(op.kernel, str) and op.kernel.endswith("operator_for_tests.py:two_phase_sum")
    assert load_operator(FILE_REF) is op  # loaded once


@pytest.fixture
def fake_distribution(tmp_path, monkeypatch):
    """A tiny installed distribution (a .dist-info on sys.path) registering one operator."""
    info = tmp_path / "mpnpu_fake_ops-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mpnpu-fake-ops\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[mpnpu.operators]\nfake_sum = {MODULE_REF}\nfake_broken = tests.operator_for_tests:NOT_AN_OPERATOR\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_entry_point_of_an_installed_distribution(fake_distribution):
    assert {"floms", "fake_sum", "fake_broken"} <= set(registry.registered())
    assert load_operator("fake_sum").name == "two_phase_sum"
    with pytest.raises(UsageError, match="fake_broken .* is not an mpnpu operator"):
        load_operator("fake_broken")


@pytest.mark.slow
def test_entry_point_from_another_process_and_list_ops(fake_distribution):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake_distribution), str(REPO)]))
    p = subprocess.run([sys.executable, "-m", "mpnpu.batch", "--list-ops"], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "fake_sum: two_phase_sum (tests.operator_for_tests:OPERATOR)" in p.stdout
    assert "    B1  SyncAll between writing the partial sums and reading them" in p.stdout
    assert "fake_broken: cannot be loaded" in p.stdout  # listed with its error, the others still shown
    assert "floms: fused_linear_online_max_sum" in p.stdout


@pytest.mark.parametrize("ref, message", [
    ("no_such_operator", "unknown operator 'no_such_operator'; known: "),
    ("no.such.module:OP", "no module named 'no.such.module'"),
    ("tests.operator_for_tests:MISSING", "tests.operator_for_tests has no 'MISSING'"),
    ("tests.operator_for_tests:NOT_AN_OPERATOR", "is not an mpnpu operator: no attribute 'name'"),
    ("tests.operator_for_tests:KernelOperator", "is the class KernelOperator, not an operator object"),
    ("/no/such/file.py:OP", "no file /no/such/file.py"),
    ("", "a registered name or 'module:OBJECT'"),
])
def test_every_bad_name_is_one_usage_error(ref, message):
    with pytest.raises(UsageError) as e:
        load_operator(ref)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(UsageError, match="known: .*floms"):
        load_operator("flom")


@pytest.mark.parametrize("main, prog", [(batch_cli.COMMAND.main, "mpnpu.batch"),
                                        (stress_cli.COMMAND.main, "mpnpu.stress")])
def test_cli_op_errors_exit_2_with_one_line(main, prog, capsys):
    for ref in ("nope", "no.such.module:OP", "tests.operator_for_tests:NOT_AN_OPERATOR"):
        rc = run_cli(main, ["--op", ref, "--quiet"], prog=prog)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith(f"{prog}: error: "), err


def test_list_ops_on_every_command(capsys):
    for main in (batch_cli.COMMAND.main, stress_cli.COMMAND.main):
        assert run_cli(main, ["--list-ops"]) == 0
        out = capsys.readouterr().out
        assert "\nfloms: fused_linear_online_max_sum (mpnpu.kernels.fused_linear_online_max_sum" in "\n" + out
        assert "  variants: incident (drops S1); fixed (every sync point in place)" in out
        assert "  options: --base-m (default 128)" in out


def test_operator_options_become_command_line_options(capsys):
    parser = batch_cli.COMMAND.parser(load_operator(MODULE_REF))
    assert parser.parse_args(["--scale", "3"]).scale == 3
    assert run_cli(batch_cli.COMMAND.main, ["--op", MODULE_REF, "--base-m", "64"], prog="mpnpu.batch") == 2
    assert "unrecognized arguments: --base-m" in capsys.readouterr().err  # FLOMS's option, not this one's
    assert run_cli(batch_cli.COMMAND.main, ["--base-m", "0"], prog="mpnpu.batch") == 2
    assert "--base-m: expected a positive integer, got 0" in capsys.readouterr().err


# -- the protocol and its helpers --------------------------------------------------------------------


def test_protocol_problems_name_what_is_missing():
    op = load_operator(MODULE_REF)
    assert protocol_problems(op) == []
    assert check_operator(op, "x") is op

    class NoFixed:
        name, sync_points, probes, stages = "n", {"A": "a"}, {}, ()
        variants = {"incident": frozenset({"B"})}
        make_case = describe_case = prepare = run = judge = staticmethod(lambda *a, **k: None)

    problems = protocol_problems(NoFixed())
    assert problems == ["no variant fixed (the tools run 'incident' and 'fixed')"]
    NoFixed.variants = {"incident": frozenset({"B"}), "fixed": frozenset()}
    assert protocol_problems(NoFixed()) == ["variant incident drops unknown sync point(s) B"]
    NoFixed.variants, NoFixed.options = {"incident": frozenset({"A"}), "fixed": frozenset()}, (object(),)
    assert protocol_problems(NoFixed()) == ["it declares options but has no method with_options()"]


def test_sync_names_and_variants():
    points = {"S0": "a", "S1": "b"}
    assert parse_sync_names(" S1, S0 ,", points) == {"S0", "S1"}
    with pytest.raises(UsageError, match="unknown sync points S7, S9; known: S0, S1"):
        parse_sync_names("S9,S7", points)
    assert variants_from_syncs({"S1"}, extra={"S0"}) == {
        "incident": frozenset({"S1"}), "fixed": frozenset(), "extra": frozenset({"S0"})}
    with pytest.raises(UsageError, match="unknown sync point B9 in incident"):
        KernelOperator("x", "m:f", {"B1": "b"}, frozenset({"B9"}), make=None, golden=None)  # type: ignore[arg-type]


def test_cases_are_seeded_and_options_reach_the_case_maker():
    op = load_operator(MODULE_REF)
    a, b = op.make_case(3, 5), op.make_case(3, 5)
    assert np.array_equal(a.inputs["x"], b.inputs["x"]) and a.params == b.params
    assert not np.array_equal(op.make_case(4, 5).inputs["x"][:1], a.inputs["x"][:1])
    scaled = with_options(op, scale=4).make_case(3, 5)
    assert np.allclose(scaled.inputs["x"], 4 * a.inputs["x"])
    assert with_options(op, scale=None) is op
    with pytest.raises(UsageError, match="has no option base_m"):
        with_options(op, base_m=3)
    with pytest.raises(UsageError, match="seed must be a non-negative integer"):
        op.make_case(-1, 0)


def test_golden_is_cached_per_case_and_judging_uses_tolerances():
    op = load_operator(MODULE_REF)
    case = op.make_case(0, 1)
    prepared = op.prepare(case)
    assert op.prepare(op.make_case(0, 1)) is prepared  # computed once per (seed, index)
    exact = prepared.golden["total"]
    assert op.judge(case, prepared, {"total": exact}).passed
    off = exact * (1 + 5e-4)  # beyond float32's rtol 1e-4
    verdict = op.judge(case, prepared, {"total": off.astype(np.float32)})
    assert not verdict.passed and verdict.failed_outputs == ["total"] and verdict.max_rel_error > 1e-4
    assert verdict.fingerprint != op.judge(case, prepared, {"total": exact}).fingerprint


def test_default_tolerances_and_storage():
    assert default_tolerance("int32").exact and default_tolerance("uint8").exact
    assert default_tolerance("float16").rtol == 1e-3 and default_tolerance("float32").rtol == 1e-4
    bf = default_tolerance("bfloat16")
    assert bf.rtol == 2.0**-7 and bf.storage_dtype == "bfloat16"
    bits = stored(np.array([1.0, 2.5], np.float32), "bfloat16")
    assert bits.dtype == np.uint16
    case = Case(0, inputs={"x": bits}, outputs={}, dtypes={"x": "bfloat16"})
    assert case.value("x").tolist() == [1.0, 2.5]


def test_fixed_variant_equals_the_golden_on_the_device(no_leaks):
    op = load_operator(FILE_REF)
    with Device(1) as device:
        result = run_batch(op, cases=6, repeat=2, variants=make_variants(op, ["fixed"]), device=device)
    fixed = result.variants["fixed"]
    assert fixed.case_runs == 12 and fixed.clean and fixed.inconsistent_cases == []
    with pytest.raises(UsageError, match="unknown probe .x."):
        run_batch(op, cases=1, repeat=1, variants=make_variants(op, ["fixed"]), probe="x", block_dim=1)


def test_batch_cli_runs_a_file_operator(tmp_path, capsys, no_leaks):
    js = tmp_path / "r.json"
    rc = run_cli(batch_cli.COMMAND.main, ["--op", FILE_REF, "--variant", "fixed", "--cases", "3", "--repeat", "1",
                                  "--block-dim", "1", "--quiet", "--json", str(js)], prog="mpnpu.batch")
    out = capsys.readouterr().out
    assert rc == 0 and out.strip() == "verdict: OK: fixed is clean"
    data = json.loads(js.read_text())
    assert data["operator"] == "two_phase_sum" and data["variants"]["fixed"]["case_runs"] == 3


def test_every_case_run_starts_with_unwritten_outputs_and_workspace() -> None:
    """Whatever a case-run (of this variant or another) wrote, the next one's outputs and workspace hold
    UNWRITTEN in every byte when it starts (the caching allocator hands the next case-run the same
    blocks, so without the fill it would see 7.0)."""
    op = KernelOperator(name="first-look", kernel="tests.kernels_for_tests:first_look", sync_points={}, incident=set(),
                        make=lambda rng, i: Case(i, inputs={}, outputs={"seen": ((8,), "float32")},
                                                 workspace={"ws": ((64,), "float32")}),
                        golden=lambda case: {"seen": np.ones(8)})
    assert UNWRITTEN == 0xFF
    with Device(block_dim=1) as dev:
        for i in range(3):
            outputs, _ = op.run(dev, op.make(np.random.default_rng(i), i))
            assert outputs["seen"].tolist() == [1.0] * 8, f"case-run {i} saw an earlier case-run's data"
