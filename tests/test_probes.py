"""The incident diagnosis's probes (docs/incident.md, O4–O8): what each one changes, and how it is judged.

Deterministic only. Each probe's outcome that does not depend on the scheduler is checked on the
incident kernel (S1 dropped) and on the fixed one wherever the race cannot touch it:

- O5a/O5b: every case reads exactly 0 / exactly its own constant 1000 + index, on both kernels;
- O4: with only-predicted no other output is written at all (their GM blocks keep the poison the
  allocator put in them), on both kernels;
- O8: copy-dep=vocab_parallel_logits equals the cube result on both kernels; copy-dep=masked_target
  equals n_tiles_n x masked_target exactly on the fixed kernel, and the masked_target output itself
  is right on both;
- O6: no-allreduce-copyout holds CVProcess's raw gathered logit on the fixed kernel;
- O7: pipe-barrier-all passes the golden on the fixed kernel;
- FlomsOperator.judge judges each probe as the original diagnosis did (unit tests on synthetic outputs);
- python -m mpnpu.batch --probe NAME with each --variant.

That the race shows through O4/O6/O7/O8 on the incident kernel is rate-based: see
tests/test_investigate.py, which runs the whole chain with its own sizing rule.

One module-scoped Device, with freed GM blocks poisoned (0xAB), serves the module; small cases
(BT 64..160, H 32..64, V 256..768, the investigation's "small" shapes) keep it quick.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpnpu.cli.commands import batch as batch_cli
from mpnpu.cli.common import run_cli
from mpnpu.kernels.fused_linear_online_max_sum.cases import CaseSpace
from mpnpu.kernels.fused_linear_online_max_sum.golden import logits
from mpnpu.kernels.fused_linear_online_max_sum.operator import OPERATOR, sentinel_value
from mpnpu.kernels.fused_linear_online_max_sum.probes import PROBES
from mpnpu.kernels.fused_linear_online_max_sum.spec import OUTPUT_NAMES
from mpnpu.operators.compare import compare_output
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.dtypes import round_to

pytestmark = [pytest.mark.usefixtures("no_leaks", "time_limit")]

REPO = Path(__file__).resolve().parents[1]
OPTIONS = RuntimeOptions(gm_segment_bytes=8 << 20, launch_timeout_s=60.0)
POISON = 0xAB
SPACE = CaseSpace(bt=(64, 160), h=(32, 64), v=(256, 768), return_logits=(False, True))
OP = dataclasses.replace(OPERATOR, space=SPACE)
SEED = 3
N_CASES = 8
VARIANTS = {"incident": frozenset({"S1"}), "fixed": frozenset()}
BOTH = pytest.mark.parametrize("variant", ["incident", "fixed"])


@pytest.fixture(scope="module")
def dev():
    with Device(1, options=dataclasses.replace(OPTIONS, gm_poison=POISON)) as d:
        _run(d, OP.make_case(SEED, 0), "fixed")  # warm up: the GM segment and the cores' imports
        yield d


@pytest.fixture(scope="module")
def cases():
    out = [OP.make_case(SEED, i) for i in range(N_CASES)]
    assert {c.return_logits for c in out} == {False, True}  # both modes are covered
    assert {c.input_dtype for c in out} == {"float16", "bfloat16"}
    return [(c, OP.prepare(c)) for c in out]


def _run(dev, case, variant, probe=""):
    outputs, _ = OP.run(dev, case, drop_syncs=VARIANTS[variant], probe=probe)
    return outputs


def _n_tiles_n(case) -> int:
    return -(-case.v // OP.tiles.base_n)


# -- O5: initialisation ---------------------------------------------------------------------------


@pytest.mark.slow
@BOTH
def test_init_zero_only_every_case_reads_exactly_zeros(dev, cases, variant):
    for _ in range(2):
        for case, prepared in cases:
            out = _run(dev, case, variant, "init-zero-only")
            pred = out["predicted_logits"]
            assert pred.dtype == np.float32
            assert np.array_equal(pred.view(np.uint32), np.zeros(case.bt, np.uint32)), case.describe()
            assert OP.judge(case, prepared, out, "init-zero-only").passed


@BOTH
def test_init_sentinel_every_case_reads_its_own_constant(dev, cases, variant):
    seen = set()
    for _ in range(2):
        for case, prepared in cases:
            out = _run(dev, case, variant, "init-sentinel")
            want = np.full(case.bt, 1000.0 + case.index, np.float32)
            assert np.array_equal(out["predicted_logits"], want), case.describe()
            assert OP.judge(case, prepared, out, "init-sentinel").passed
            seen.add(float(out["predicted_logits"][0]))
    assert len(seen) == len(cases)  # a different constant per case: none reads another's


# -- O4: only predicted_logits is written -------------------------------------------------------------


@BOTH
def test_only_predicted_leaves_every_other_output_unwritten(dev, cases, variant):
    case, prepared = next((c, p) for c, p in cases if c.return_logits)  # vocab_parallel_logits non-empty
    # The same case as shipped first: its blocks, freed with the poison in them, are what the
    # probed call is handed next. The unprobed outputs are no poison (so the check below can fail).
    shipped = _run(dev, case, "fixed")
    for name in OUTPUT_NAMES:
        assert shipped[name].size and np.any(shipped[name].view(np.uint8) != POISON), name
    out = _run(dev, case, variant, "only-predicted")
    for name in OUTPUT_NAMES:
        if name != "predicted_logits":
            assert np.all(out[name].view(np.uint8) == POISON), f"{name} was written"
    assert np.any(out["predicted_logits"].view(np.uint8) != POISON)
    if variant == "fixed":
        verdict = OP.judge(case, prepared, out, "only-predicted")
        assert verdict.passed, verdict.details


# -- O8: dependencies copied into predicted_logits ---------------------------------------------------------


@BOTH
def test_copy_dep_vocab_parallel_logits_equals_the_cube_result(dev, cases, variant):
    probe = "copy-dep=vocab_parallel_logits"
    for case, prepared in cases:
        runs = [_run(dev, case, variant, probe) for _ in range(2)]
        expected, tol = OP.probe_expectation(case, prepared, probe)
        for out in runs:
            assert compare_output("predicted_logits", out["predicted_logits"], expected, tol).passed
            assert OP.judge(case, prepared, out, probe).passed
        assert np.array_equal(runs[0]["predicted_logits"], runs[1]["predicted_logits"])  # consistent


def test_copy_dep_masked_target_is_exact_on_the_fixed_kernel(dev, cases):
    probe = "copy-dep=masked_target"
    for case, prepared in cases:
        out = _run(dev, case, "fixed", probe)
        masked = prepared.golden["masked_target"]
        want = masked.astype(np.float32) * _n_tiles_n(case)
        assert np.array_equal(out["predicted_logits"], want), case.describe()
        assert np.array_equal(out["masked_target"], masked)
        assert OP.judge(case, prepared, out, probe).passed


def test_copy_dep_masked_target_output_itself_is_right_on_the_incident_kernel(dev, cases):
    for _ in range(2):
        for case, prepared in cases:
            out = _run(dev, case, "incident", "copy-dep=masked_target")
            assert np.array_equal(out["masked_target"], prepared.golden["masked_target"])
            verdict = OP.judge(case, prepared, out, "copy-dep=masked_target")
            assert set(verdict.failed_outputs) <= {"predicted_logits"}


# -- O6 / O7 -----------------------------------------------------------------------------------------


def test_no_allreduce_copyout_holds_cvprocess_raw_gathered_logit(dev, cases):
    for case, prepared in cases:
        out = _run(dev, case, "fixed", "no-allreduce-copyout")
        masked = prepared.golden["masked_target"].astype(np.int64)  # 0 for out-of-shard rows
        lg = logits(case.input, case.weight, case.input_dtype)
        raw = round_to(lg[np.arange(case.bt), masked].astype(np.float32),
                       "float32" if case.return_logits else case.input_dtype)
        tol = dataclasses.replace(prepared.tolerances["vocab_parallel_logits"], storage_dtype=None)
        assert compare_output("predicted_logits", out["predicted_logits"], raw, tol).passed, case.describe()
        assert OP.judge(case, prepared, out, "no-allreduce-copyout").passed


def test_pipe_barrier_all_passes_the_golden_on_the_fixed_kernel(dev, cases):
    for case, prepared in cases:
        verdict = OP.judge(case, prepared, _run(dev, case, "fixed", "pipe-barrier-all"), "pipe-barrier-all")
        assert verdict.passed, verdict.details


# -- judging (no device) ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_case():
    case = OP.make_case(SEED, 1)
    return case, OP.prepare(case)


def _outputs(prepared, predicted=None):
    out = {k: v.copy() for k, v in prepared.golden.items()}
    if predicted is not None:
        out["predicted_logits"] = np.asarray(predicted, np.float32)
    return out


def test_every_probe_is_judged(one_case):
    case, prepared = one_case
    judged_by = {}
    for probe in PROBES:
        expectation = OP.probe_expectation(case, prepared, probe)
        judged_by[probe] = "expected" if expectation is not None else "golden"
    judged_by["no-allreduce-copyout"] = "consistency"
    assert judged_by == {
        "only-predicted": "golden", "init-zero-only": "expected", "init-sentinel": "expected",
        "no-allreduce-copyout": "consistency", "pipe-barrier-all": "golden",
        "copy-dep=vocab_parallel_logits": "expected", "copy-dep=masked_target": "expected",
    }
    assert OP.probe_expectation(case, prepared, "no-allreduce-copyout") is None


def test_expected_values_are_exact_where_the_write_up_had_constants(one_case):
    case, prepared = one_case
    zeros, tol = OP.probe_expectation(case, prepared, "init-zero-only")
    assert tol.exact and np.array_equal(zeros, np.zeros(case.bt, np.float32))
    const, tol = OP.probe_expectation(case, prepared, "init-sentinel")
    assert tol.exact and np.all(const == sentinel_value(case)) and sentinel_value(case) == 1000.0 + case.index
    mt, tol = OP.probe_expectation(case, prepared, "copy-dep=masked_target")
    assert tol.exact and np.array_equal(mt, prepared.golden["masked_target"].astype(np.float32) * _n_tiles_n(case))


def test_judge_no_allreduce_copyout_by_consistency_only(one_case):
    case, prepared = one_case
    a = OP.judge(case, prepared, _outputs(prepared, np.full(case.bt, 123.0)), "no-allreduce-copyout")
    b = OP.judge(case, prepared, _outputs(prepared, np.full(case.bt, 124.0)), "no-allreduce-copyout")
    assert a.passed and b.passed  # whatever the intermediate holds, it is not compared with a value
    assert a.fingerprint != b.fingerprint  # but two different results are told apart across repeats
    bad = _outputs(prepared)
    bad["logits_max"] = bad["logits_max"] + 1.0
    assert OP.judge(case, prepared, bad, "no-allreduce-copyout").failed_outputs == ["logits_max"]


def test_judge_only_predicted_ignores_the_unwritten_outputs(one_case):
    case, prepared = one_case
    out = _outputs(prepared)
    for name in OUTPUT_NAMES:
        if name != "predicted_logits":
            out[name] = np.full_like(out[name], 0xAB) if out[name].size else out[name]
    assert OP.judge(case, prepared, out, "only-predicted").passed
    out["predicted_logits"] = out["predicted_logits"] + 1.0
    assert OP.judge(case, prepared, out, "only-predicted").failed_outputs == ["predicted_logits"]


@pytest.mark.parametrize("probe", ["init-zero-only", "init-sentinel", "copy-dep=masked_target"])
def test_judge_exact_expectations_catch_a_single_ulp(one_case, probe):
    case, prepared = one_case
    expected, _ = OP.probe_expectation(case, prepared, probe)
    assert OP.judge(case, prepared, _outputs(prepared, expected), probe).passed
    off = expected.copy()
    off[case.bt // 2] = np.nextafter(off[case.bt // 2], np.float32(np.inf))
    assert OP.judge(case, prepared, _outputs(prepared, off), probe).failed_outputs == ["predicted_logits"]


def test_judge_copy_dep_vocab_compares_float32_values(one_case):
    # The cube result's tolerance is one storage ulp of the input dtype, applied to float32 values
    # (not to bfloat16 bit patterns, which would compare only integer parts).
    for index in range(12):
        case = OP.make_case(SEED, index)
        prepared = OP.prepare(case)
        expected, tol = OP.probe_expectation(case, prepared, "copy-dep=vocab_parallel_logits")
        assert tol.storage_dtype is None
        assert OP.judge(case, prepared, _outputs(prepared, expected), "copy-dep=vocab_parallel_logits").passed
        off = (expected + 0.05).astype(np.float32)  # well inside every integer part, far beyond an ulp
        assert not OP.judge(case, prepared, _outputs(prepared, off), "copy-dep=vocab_parallel_logits").passed


# -- the batch CLI -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.time_limit(120)
@pytest.mark.parametrize("probe, variant", [
    ("no-allreduce-copyout", "incident"), ("no-allreduce-copyout", "fixed"), ("no-allreduce-copyout", "both"),
    ("init-sentinel", "both"),
])
def test_batch_cli_runs_a_probe_with_each_variant(probe, variant):
    # A subprocess: the module's Device is live in this one (two Devices in one process would
    # collide on GM segment names).
    p = subprocess.run([sys.executable, "-m", "mpnpu.batch", "--probe", probe, "--variant", variant,
                        "--cases", "4", "--repeat", "2"], capture_output=True, text=True, timeout=110, cwd=REPO)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert f"probe: {probe}" in out
    names = ["incident", "fixed"] if variant == "both" else [variant]
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("variant ")] == \
        [f"variant {n}" for n in names]
    # The consistency result is shown for every variant, clean or not: for no-allreduce-copyout
    # (no golden) it is the whole judgement.
    assert out.count("cases whose result changed between repeats: ") == len(names)
    if "fixed" in names:
        assert re.search(r"variant fixed: .*\n(  .*\n)*  cases whose result changed between repeats: 0\n", out)
    assert out.splitlines()[-2].startswith("verdict: OK: ")


def test_batch_cli_rejects_an_unknown_probe(capsys):
    rc = run_cli(batch_cli.COMMAND.main, ["--probe", "bogus", "--cases", "1", "--repeat", "1", "--quiet"],
                 prog="mpnpu.batch")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[-1].startswith("mpnpu.batch: error: unknown probe 'bogus'; known: only-predicted")
