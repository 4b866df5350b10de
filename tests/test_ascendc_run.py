"""``mpnpu run``'s library: a sample's source compiled unchanged (its <<<>>> launch replaced), inputs
from .bin files, outputs to .bin files, each repeat checked against the golden."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import UsageError
from mpnpu.tools import run as R
from tests.ascendc_util import line_of, needs_cxx, source

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]
SAMPLE = "sample/scale_add.asc"


def _data(tmp_path, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(1, 10, 8 * 2048).astype(np.float32)
    y = rng.uniform(1, 10, 8 * 2048).astype(np.float32)
    (tmp_path / "input").mkdir()
    (tmp_path / "output").mkdir()
    x.tofile(tmp_path / "input/x.bin")
    y.tofile(tmp_path / "input/y.bin")
    z = x + y
    z.tofile(tmp_path / "output/golden.bin")
    peek = np.concatenate([2 * z[((b + 1) % 8) * 2048:][:256] for b in range(8)])
    peek.tofile(tmp_path / "output/peek_golden.bin")
    return [R.parse_arg(a) for a in (f"in:{tmp_path}/input/x.bin:float32", f"in:{tmp_path}/input/y.bin:float32",
                                     f"out:{tmp_path}/output/z.bin:float32:16384",
                                     f"out:{tmp_path}/output/peek.bin:float32:2048", "u32:16384")]


def test_a_sample_runs_unchanged_and_matches_its_golden(tmp_path) -> None:
    args = _data(tmp_path)
    res = R.run(source(SAMPLE), None, args, block_dim=8,
                golden={2: f"{tmp_path}/output/golden.bin", 3: f"{tmp_path}/output/peek_golden.bin"}, repeat=3)
    assert res.kernel == "scale_add (scale_add.asc)"
    assert res.passed and res.failed_repeats == [] and all(res.same_as_first)
    written = np.fromfile(tmp_path / "output/z.bin", dtype=np.float32)
    assert np.array_equal(written, np.fromfile(tmp_path / "output/golden.bin", dtype=np.float32))


def test_dropping_the_samples_syncall_names_the_repeats_and_elements_that_differ(tmp_path) -> None:
    args = _data(tmp_path)
    line = line_of(SAMPLE, "AscendC::SyncAll();")
    res = R.run(source(SAMPLE), "scale_add", args, block_dim=8, repeat=12,
                golden={3: f"{tmp_path}/output/peek_golden.bin"}, drop_syncs=(f"scale_add.asc:{line}",),
                racecheck=True)
    # Each block reads its neighbour's first tile right after finishing its own: with 8 core
    # processes on 2 CPUs some neighbour is behind in nearly every run; the bound (1 of 12) is loose.
    assert res.failed_repeats, "no repeat read a tile before its block wrote it"
    bad = res.checks[res.failed_repeats[0] - 1][1]
    assert bad.n_differ > 0 and bad.first and bad.first[0][2] != bad.first[0][1]
    raw = [h for h in res.hazards.hazards() if h.tensor.endswith("z.bin") and h.kind == "RAW" and h.scope == "GM"]
    assert raw and raw[0].second.site == f"sample/scale_add.asc:{line_of(SAMPLE, 'zAll[((me + 1)')}"


def test_run_arguments_are_checked(tmp_path) -> None:
    with pytest.raises(UsageError, match="expected in:PATH:DTYPE"):
        R.parse_arg("input.bin")
    with pytest.raises(UsageError, match="unknown dtype"):
        R.parse_arg("in:x.bin:float13")
    args = _data(tmp_path)
    with pytest.raises(UsageError, match="launches scale_add with 5 arguments, 4 given"):
        R.run(source(SAMPLE), None, args[:4], block_dim=8, golden={})
    with pytest.raises(UsageError, match="does not exist"):
        R.run(source(SAMPLE), None, [R.parse_arg("in:/nonexistent.bin:float32"), *args[1:]], block_dim=8, golden={})


PADDED = "sample/padded_count.asc"


def test_every_launch_statement_of_a_sample_is_replaced() -> None:
    p = R.prepare_source(source(PADDED))
    assert p.launches == (("padded_count<float, 5>", 3), ("padded_count<int32_t, 5>", 3))
    assert p.arguments_of("padded_count<float, 5>") == 3 and p.arguments_of("other") is None
    with open(p.path) as f:
        prepared = f.read()
    assert "<<<4" not in prepared
    with open(source(PADDED)) as f:  # every line kept where it was (after the #line directive)
        assert len(prepared.splitlines()) == len(f.read().splitlines()) + 1


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_block_idx_set_pad_value_scalar_atomic_and_an_io_argument(tmp_path, dtype) -> None:
    """block_idx/block_num, DataCopyPad padding from SetPadValue, AtomicAdd from 4 cores, and an io:
    tensor read from a file and written back; the entry named with its template arguments."""
    x = np.arange(20).astype(dtype)
    x.tofile(tmp_path / "x.bin")
    np.array([7], dtype=np.int32).tofile(tmp_path / "count.bin")
    golden = np.concatenate([np.concatenate([x[b * 5:b * 5 + 5], np.full(3, -1, dtype)]) for b in range(4)])
    golden.tofile(tmp_path / "golden.bin")
    np.array([11], dtype=np.int32).tofile(tmp_path / "count_golden.bin")
    ctype = "float" if dtype == "float32" else "int32_t"
    args = [R.parse_arg(a) for a in (f"in:{tmp_path}/x.bin:{dtype}", f"out:{tmp_path}/y.bin:{dtype}:32",
                                     f"io:{tmp_path}/count.bin:{tmp_path}/count_out.bin:int32")]
    res = R.run(source(PADDED), f"padded_count<{ctype}, 5>", args, block_dim=4, repeat=3, racecheck=True,
                golden={1: f"{tmp_path}/golden.bin", 2: f"{tmp_path}/count_golden.bin"})
    assert res.passed, res.to_dict()
    assert np.fromfile(tmp_path / "count_out.bin", dtype=np.int32).tolist() == [11]
    assert np.fromfile(tmp_path / "count.bin", dtype=np.int32).tolist() == [7]  # the input file is left alone
    assert len(res.hazards) == 0  # atomics of several cores on one element do not race


def test_io_arguments_are_checked() -> None:
    a = R.parse_arg("io:in/y.bin:out/y.bin:float16")
    assert (a.kind, a.path, a.out_path, a.dtype) == ("io", "in/y.bin", "out/y.bin", "float16")
    with pytest.raises(UsageError, match="io:IN_PATH:OUT_PATH:DTYPE"):
        R.parse_arg("io:y.bin:float16")


# -- the command: mpnpu run --------------------------------------------------------------------------


def _words(tmp_path) -> list[str]:
    _data(tmp_path)
    return [f"in:{tmp_path}/input/x.bin:float32", f"in:{tmp_path}/input/y.bin:float32",
            f"out:{tmp_path}/output/z.bin:float32:16384", f"out:{tmp_path}/output/peek.bin:float32:2048", "u32:16384"]


def test_mpnpu_run_passes_with_the_goldens_and_writes_json(tmp_path, capsys) -> None:
    from mpnpu.cli.main import cli

    words, report = _words(tmp_path), tmp_path / "run.json"
    argv = ["run", source(SAMPLE), "--block-dim", "8", *words, "--repeat", "2",
            "--golden", f"3={tmp_path}/output/golden.bin", "--golden", f"4={tmp_path}/output/peek_golden.bin"]
    status = cli([*argv, "--json", str(report)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "every repeat matched the golden" in out and out.rstrip().endswith("verdict: PASS")
    assert cli([*argv, "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == "verdict: PASS"  # --quiet: the verdict line alone
    import json

    data = json.loads(report.read_text())
    assert data["repeats"] == 2 and data["failed_repeats"] == [] and data["kernel_type"] == "vector-only"


def test_mpnpu_run_racecheck_of_a_dropped_syncall_exits_1_naming_the_lines(tmp_path, capsys) -> None:
    from mpnpu.cli.main import cli

    line = line_of(SAMPLE, "AscendC::SyncAll();")
    status = cli(["run", source(SAMPLE), *_words(tmp_path), "--block-dim", "8", "--racecheck",
                  "--drop-sync", f"scale_add.asc:{line}"])
    out = capsys.readouterr().out
    # racecheck's verdict does not depend on the interleaving: the RAW hazard is found every run
    assert status == 1
    assert f"dropping sample/scale_add.asc:{line}" in out
    assert "READ  by vector core" in out and f"at sample/scale_add.asc:{line_of(SAMPLE, 'zAll[((me + 1)')}" in out


def test_mpnpu_run_mistakes_are_one_line_and_exit_2(tmp_path, capsys) -> None:
    from mpnpu.cli.main import cli

    words = _words(tmp_path)
    bad_line = line_of(SAMPLE, "zAll[((me + 1)")  # a DataCopy, not a sync call
    for argv, message in [
        ([*words, "--drop-sync", f"scale_add.asc:{bad_line}"],
         f"'scale_add.asc:{bad_line}' is not a sync point of the kernel (a sync call's FILE:LINE); nearest: "
         f"sample/scale_add.asc:{bad_line - 1} (AllocTensor)"),
        ([*words, "--golden", f"{tmp_path}/output/golden.bin"], "the kernel has 2 out:/io: arguments; name one"),
        ([*words[:4]], "the sample launches scale_add with 5 arguments, 4 given"),
        ([*words[:4], "u33:1"], "kernel argument 'u33:1': expected in:PATH:DTYPE"),
    ]:
        assert cli(["run", source(SAMPLE), "--block-dim", "8", "--quiet", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("mpnpu run: error: ") and message in err, err


def test_a_source_with_one_kernel_needs_no_entry_and_several_are_named(tmp_path) -> None:
    """No <<<>>> launch and no :ENTRY: the one kernel the source defines; with several, one line naming them."""
    one = tmp_path / "one.cpp"
    one.write_text('#include "kernel_operator.h"\n// extern "C" __global__ __aicore__ void commented(GM_ADDR x) {}\n'
                   'extern "C" __global__ __aicore__ void only(GM_ADDR x) {}\n')
    assert R.only_kernel(str(one)) == "only"
    two = tmp_path / "two.cpp"
    two.write_text('extern "C" __global__ __aicore__ void a(GM_ADDR x) {}\n'
                   '__aicore__ __global__ void b(GM_ADDR y) {}\n')
    with pytest.raises(UsageError, match=r"defines 2 kernels \(a, b\) and launches none with <<<>>>: name one"):
        R.only_kernel(str(two))
    with pytest.raises(UsageError, match="no kernel"):
        R.only_kernel(str(_empty(tmp_path)))


def _empty(tmp_path):
    p = tmp_path / "none.cpp"
    p.write_text("int x;\n")
    return p


def test_repeats_that_differ_within_the_tolerance_are_said_to_be_fine() -> None:
    """A PASS whose repeats differ in their bytes (float sums in another order) says why that is fine."""
    from mpnpu.ascendc.run_result import OutputCheck, RunResult
    from mpnpu.report.text.run import format_run
    from mpnpu.runtime.topology import KernelType

    checks = [[OutputCheck(2, "out.bin", 8, 0)] for _ in range(3)]
    r = RunResult("k (k.cpp)", 2, KernelType.AIV, 3, checks, [True, False, False])
    text = format_run(r)
    assert "2 of 3 repeats differ from the first, each within the golden's tolerance: the order of floating-point " \
           "sums changes from run to run" in text and text.endswith("verdict: PASS")


def test_outputs_no_golden_judges_are_not_said_to_match_one() -> None:
    """An output without --golden was reported as "every repeat matched the golden", and repeats that
    differed in it as "each within the golden's tolerance": neither was checked."""
    from mpnpu.ascendc.run_result import OutputCheck, RunResult
    from mpnpu.report.text.run import format_run
    from mpnpu.runtime.topology import KernelType

    checks = [[OutputCheck(1, "out.bin", 8, 0, golden=False)] for _ in range(3)]
    text = format_run(RunResult("k (k.cpp)", 2, KernelType.AIV, 3, checks, [True, False, False]))
    assert "argument 2 (out.bin, 8 elements): written (no --golden: compared only with the first repeat)" in text
    assert "matched the golden" not in text and "golden's tolerance" not in text
    assert "2 of 3 repeats differ from the first; no --golden judges every output" in text
    assert RunResult("k", 1, KernelType.AIV, 1, checks[:1], [True]).to_dict()["outputs"][0][0]["golden"] is False


#: a sample whose tiling struct is defined in its own source, beside its kernel and host program
_OWN_TILING = """#include "acl/acl.h"
#include "kernel_operator.h"

struct ScaleTiling {
    uint32_t total;
    float scale;
};

__global__ __vector__ void scaled(GM_ADDR x, GM_ADDR z, GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(ScaleTiling, t, tiling);
    AscendC::GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, t.total);
    zg.SetGlobalBuffer((__gm__ float*)z, t.total);
    for (uint32_t i = 0; i < t.total; ++i) {
        zg.SetValue(i, xg.GetValue(i) * t.scale);
    }
}

int32_t main(int32_t argc, char* argv[])
{
    (void)argc;
    (void)argv;
    uint8_t *x = nullptr, *z = nullptr, *tiling = nullptr;
    scaled<<<1, nullptr, nullptr>>>(x, z, tiling);
    return 0;
}
"""


@pytest.mark.slow
def test_a_tiling_struct_defined_in_the_samples_own_source_is_filled_by_name(tmp_path) -> None:
    """tiling:SOURCE:STRUCT where SOURCE is the kernel's own source, a sample with its host program and
    <<<>>> launch: the struct's layout is read from the source as the kernel is built (the launch
    replaced, its main renamed), not from the raw file (a compile error at the <<<, or main defined twice)."""
    src = tmp_path / "scaled.asc"
    src.write_text(_OWN_TILING)
    x = np.arange(16, dtype=np.float32)
    x.tofile(tmp_path / "x.bin")
    (3 * x).tofile(tmp_path / "golden.bin")
    args = [R.parse_arg(a) for a in (f"in:{tmp_path}/x.bin:float32", f"out:{tmp_path}/z.bin:float32:16",
                                     f"tiling:{src}:ScaleTiling:total=16,scale=3")]
    res = R.run(str(src), None, args, block_dim=1, golden={1: str(tmp_path / "golden.bin")})
    assert res.passed, res.checks
    assert np.array_equal(np.fromfile(tmp_path / "z.bin", dtype=np.float32), 3 * x)


@pytest.mark.slow
def test_pre_include_puts_a_prelude_before_the_unchanged_source(tmp_path, capsys) -> None:
    """A source that uses a name it does not define (as unit tests' kernels use their *_tiling_def.h): with
    --pre-include of the header that defines it, mpnpu run builds and runs it unchanged."""
    from mpnpu.cli.main import cli

    (tmp_path / "prelude.h").write_text("#pragma once\nconstexpr float kScale = 3.0f;\n")
    src = tmp_path / "k.cpp"
    src.write_text('#include "kernel_operator.h"\n'
                   'extern "C" __global__ __aicore__ void scale(GM_ADDR x, GM_ADDR y) {\n'
                   '    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);\n'
                   '    AscendC::GlobalTensor<float> xg, yg;\n'
                   '    xg.SetGlobalBuffer((__gm__ float*)x, 8);\n'
                   '    yg.SetGlobalBuffer((__gm__ float*)y, 8);\n'
                   '    if (AscendC::GetBlockIdx() == 0)\n'
                   '        for (int i = 0; i < 8; ++i) yg.SetValue(i, xg.GetValue(i) * kScale);\n'
                   '}\n')
    np.arange(8, dtype=np.float32).tofile(tmp_path / "x.bin")
    (3 * np.arange(8, dtype=np.float32)).tofile(tmp_path / "g.bin")
    words = ["run", str(src), "--block-dim", "1", f"in:{tmp_path}/x.bin:float32", f"out:{tmp_path}/y.bin:float32:8",
             "--golden", str(tmp_path / "g.bin"), "--quiet"]
    assert cli([*words, "--pre-include", str(tmp_path / "prelude.h")]) == 0
    assert capsys.readouterr().out.strip() == "verdict: PASS"
    assert cli(words) == 2  # without it: the compile error, one line at the user's file:line
    err = capsys.readouterr().err
    assert "k.cpp:8" in err and "kScale" in err and len(err.strip().splitlines()) == 1


def test_run_speaks_of_its_own_options_in_its_help(capsys) -> None:
    """mpnpu run's help is its own: --repeat repeats the kernel (not cases), --drop-sync names FILE:LINE sites
    (no incident variant, no list that run does not have), --block-dim counts the launch's blocks."""
    from mpnpu.cli.main import cli

    with pytest.raises(SystemExit):
        cli(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "how many times the kernel runs" in text and "distinct seeded cases" not in text
    assert "incident variant" not in text and "sync call sites to skip, comma-separated FILE:LINE" in text
    assert "the kernel's block count, as its <<<>>> launch gives it" in text
    assert "for kernels marked @pipelined" not in text


@pytest.mark.slow
def test_list_syncs_and_drop_sync_reach_the_headers_a_source_includes(tmp_path, capsys) -> None:
    """A kernel whose SyncAll is in a header of another folder it #includes: --list-syncs lists it, and
    --drop-sync takes its FILE:LINE (sync points used to be looked for only beside the source)."""
    from mpnpu.cli.main import cli

    (tmp_path / "inc").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "inc" / "stage.h").write_text('#include "kernel_operator.h"\n'
                                              "inline void Barrier() {\n    AscendC::SyncAll();\n}\n")
    kernel = tmp_path / "src" / "wrapped.cpp"
    kernel.write_text('#include "../inc/stage.h"\n'
                      'extern "C" __global__ __aicore__ void wrapped(GM_ADDR x) { Barrier(); }\n')
    assert cli(["run", str(kernel), "--list-syncs"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{kernel}: 1 sync point (--drop-sync FILE:LINE, the file by any path suffix)"
    assert out.splitlines()[1].split() == ["inc/stage.h:3", "SyncAll", "in", "Barrier"]
    assert cli(["run", str(kernel), "gm:float32:8", "--block-dim", "2", "--drop-sync", "stage.h:3"]) == 0
    assert "dropping inc/stage.h:3" in capsys.readouterr().out


def test_timeline_draws_a_failed_repeat_beside_a_passed_one(tmp_path, capsys) -> None:
    import json

    from mpnpu.cli.main import cli

    line = line_of(SAMPLE, "AscendC::SyncAll();")
    path = tmp_path / "t.json"
    cli(["run", source(SAMPLE), *_words(tmp_path), "--block-dim", "8", "--repeat", "12", "--golden",
         f"4={tmp_path}/output/peek_golden.bin", "--drop-sync", f"scale_add.asc:{line}", "--timeline", str(path)])
    out = capsys.readouterr().out
    note = next(x for x in out.splitlines() if "timeline of" in x)
    assert "(FAILED)" in note and note.endswith(f"written to {path}")  # (a failure in 12 repeats: see above)
    events = json.loads(path.read_text())["traceEvents"]
    lanes = [e["args"]["name"] for e in events if e.get("name") == "process_name"]
    assert any(name.endswith("(FAILED)") and "scale_add" in name for name in lanes), lanes


def test_timeline_of_a_run_where_every_repeat_passed_draws_the_first(tmp_path, capsys) -> None:
    from mpnpu.cli.main import cli

    path = tmp_path / "t.json"
    assert cli(["run", source(SAMPLE), *_words(tmp_path), "--block-dim", "8", "--repeat", "2", "--golden",
                f"3={tmp_path}/output/golden.bin", "--timeline", str(path)]) == 0
    assert f"note: timeline of repeat 1 (passed) written to {path}" in capsys.readouterr().out
    assert path.stat().st_size > 0


@pytest.mark.slow
def test_timeline_png_draws_the_same_repeats_as_a_picture(tmp_path, capsys) -> None:
    """mpnpu run had the Chrome trace but not its picture: --timeline-png draws the repeats --timeline
    would (with the dropped sync point marked), alone or beside the trace."""
    pytest.importorskip("matplotlib")
    from mpnpu.cli.main import cli

    line = line_of(SAMPLE, "AscendC::SyncAll();")
    png, trace = tmp_path / "t.png", tmp_path / "t.json"
    cli(["run", source(SAMPLE), *_words(tmp_path), "--block-dim", "8", "--repeat", "2", "--golden",
         f"3={tmp_path}/output/golden.bin", "--drop-sync", f"scale_add.asc:{line}", "--timeline", str(trace),
         "--timeline-png", str(png)])
    notes = [x for x in capsys.readouterr().out.splitlines() if x.startswith("note: timeline")]
    assert len(notes) == 2 and notes[1].startswith("note: timeline picture of repeat ")
    assert notes[1].endswith(f"written to {png}") and trace.stat().st_size > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    assert cli(["run", source(SAMPLE), "--timeline-png", str(tmp_path / "t.gif")]) == 2
    assert "a picture must end in .png or .svg" in capsys.readouterr().err


def test_confirm_forces_the_dropped_syncalls_race_and_says_it_is_harmful(tmp_path, capsys) -> None:
    from mpnpu.cli.main import cli

    line = line_of(SAMPLE, "AscendC::SyncAll();")
    words = _words(tmp_path)
    status = cli(["run", source(SAMPLE), *words, "--block-dim", "8", "--golden", f"4={tmp_path}/output/peek_golden.bin",
                  "--drop-sync", f"scale_add.asc:{line}", "--racecheck", "--confirm"])
    out = capsys.readouterr().out
    assert status == 1
    note = next(x for x in out.splitlines() if "confirm:" in x)
    # the held launch reads a neighbour's tile before the neighbour wrote it: the golden check fails
    assert "CONFIRMED harmful" in note and "output elements differ from the golden" in note, note
    # without racecheck there is nothing to confirm; with every sync in place, no hazard to force
    assert cli(["run", source(SAMPLE), *words, "--block-dim", "8", "--confirm"]) == 2
    capsys.readouterr()
    assert cli(["run", source(SAMPLE), *words, "--block-dim", "8", "--racecheck", "--confirm"]) == 0
    assert "confirm: no hazard between cores to force" in capsys.readouterr().out


@pytest.mark.parametrize("mode, check, title, mark", [
    (1, "--initcheck", "Uninitialized read (initcheck)", "CHECK: unwritten buffer"),
    (2, "--synccheck", "SetFlag never waited (synccheck)", "CHECK: never waited"),
])
def test_initcheck_and_synccheck_in_mpnpu_run_name_the_line_and_fail_the_run(tmp_path, capsys, mode, check,
                                                                              title, mark) -> None:
    """checks.cpp with one defect (MODE): the check names it at its line, the verdict fails (exit 1) and
    the JSON holds the finding; the clean build (MODE=0) under both checks passes with none."""
    import json

    from mpnpu.cli.main import cli

    np.arange(64, dtype=np.float32).tofile(tmp_path / "x.bin")
    words = [f"in:{tmp_path}/x.bin:float32", f"out:{tmp_path}/y.bin:float32:64", "u32:64"]
    status = cli(["run", source("checks.cpp"), *words, "--define", f"MODE={mode}", check, "--repeat", "2",
                  "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert status == 1, out
    assert f"====== ERROR: {title}" in out and f"checks.cpp:{line_of('checks.cpp', mark)}" in out, out
    assert "in 2 of 2 launches)" in out and out.splitlines()[-1].startswith("verdict: FAIL (1 "), out
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["checks"] == [check[2:]] and len(data["findings"]) == 1
    assert cli(["run", source("checks.cpp"), *words, "--initcheck", "--synccheck"]) == 0
    clean = capsys.readouterr().out
    assert "SUMMARY (initcheck): 0 findings" in clean and "SUMMARY (synccheck): 0 findings" in clean, clean


@pytest.mark.slow
def test_an_interrupted_run_reports_the_repeats_that_finished_and_exits_130(tmp_path) -> None:
    """Ctrl-C (to the process group) while mpnpu run repeats: exit 130, the report of the repeats
    that finished and a verdict that says INTERRUPTED, not PASS; no traceback."""
    import os
    import re
    import signal
    import subprocess
    import sys

    import psutil

    from tests.waiting import wait_for

    words = [w.text for w in _data(tmp_path)]
    p = subprocess.Popen([sys.executable, "-m", "mpnpu", "run", source(SAMPLE), *words, "--block-dim", "8",
                          "--repeat", "100000", "--golden", f"3={tmp_path}/output/golden.bin"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        def user_s(c: psutil.Process) -> float:
            try:
                return float(c.cpu_times().user)
            except psutil.NoSuchProcess:  # a child that ended since the listing (the compiler, during the build)
                return 0.0

        def repeating() -> bool:  # the 8 vector cores have run launches (or the command ended: said below)
            if p.poll() is not None:
                return True
            cores = psutil.Process(p.pid).children(recursive=True)
            return len(cores) >= 8 and sum(user_s(c) for c in cores) > 0.5

        assert wait_for(repeating, 120.0) and p.poll() is None, "the repeats never started"
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    assert p.returncode == 130, out + err
    assert "Traceback" not in err
    done = re.search(r"INTERRUPTED: (\d+) of 100000 repeats finished", out)
    assert done and int(done.group(1)) >= 1, out
    assert out.strip().splitlines()[-1] == (f"verdict: INTERRUPTED after {done.group(1)} of 100000 repeats: "
                                            "every finished repeat passed"), out


@pytest.mark.slow
def test_mpnpu_run_takes_a_launch_in_waves_and_names_a_wait_across_them(capsys) -> None:
    """--block-dim counts blocks as the <<<>>> launch does: 49 blocks of a vector-only kernel run in
    waves on the 48 vector cores. block_sync.cpp's mode 5 has every block wait for the last one's
    IBSet, which starts only once another block ends: a deadlock report at the wait's line, saying
    block 48 never started (exit 3). Past 4 waves: exit 2 before anything is built."""
    from mpnpu.cli.main import cli

    src = source("block_sync.cpp")
    args = [f"{src}:block_sync", "gm:float32:8:0", "gm:float32:400:0", "gm:int32:4096:0", "i32:5", "i32:1", "i32:1",
            "--quiet", "--stall-grace", "2"]
    assert cli(["run", *args, "--block-dim", "49"]) == 3
    err = capsys.readouterr().err
    assert f"block_sync.cpp:{line_of('block_sync.cpp', 'IBWait(wsGm_, ub, cores_ - 1, 0);')}" in err, err
    assert "block 48 not started: in a launch wider than the device's cores" in err, err
    assert cli(["run", *args, "--block-dim", "193"]) == 2
    assert "block_dim 193 exceeds 4 waves of the 48 vector cores" in capsys.readouterr().err
