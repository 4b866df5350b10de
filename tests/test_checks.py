"""initcheck and synccheck: each defect in a small kernel (Python, and C++), its clean twin with
none, and no finding on the gallery's kernels as shipped (fixed)."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.racecheck.findings import (
    DUPLICATE_ID,
    PENDING_AT_END,
    REDUNDANT,
    SET_NOT_WAITED,
    UNINIT_READ,
    FindingLog,
)
from mpnpu.racecheck.initcheck import Intervals, _minus, _within, initcheck
from mpnpu.racecheck.synccheck import synccheck
from mpnpu.report.checks import format_finding_log
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import have_compiler, kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = pytest.mark.usefixtures("no_leaks")
KERNELS = "tests/kernels_for_checks.py"


def _line(text: str, path: str = KERNELS) -> str:
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if f"CHECK: {text}" in line:
                return f"tests/kernels_for_checks.py:{i}"
    raise AssertionError(text)


@pytest.fixture(scope="module")
def traces() -> dict[str, object]:
    """One traced launch of copy_through per mode, and of pending_flag clean and not."""
    out: dict[str, object] = {}
    with device(1) as dev:
        for mode in ("clean", "uninit", "unwaited", "duplicate", "redundant"):
            x = dev.to_device("x", np.arange(64, dtype=np.float32))
            y, ws = dev.empty("y", 64, "float32"), dev.empty("ws", 64, "float32")
            r = dev.launch_with(LaunchOptions(trace=True), f"{KERNELS}:copy_through", x, y, ws, mode)
            out[mode] = r.trace
            dev.free(x, y, ws)
        for mode in ("clean", "pending"):
            y = dev.empty("y", 4, "float32")
            out[f"flag-{mode}"] = dev.launch_with(LaunchOptions(trace=True), f"{KERNELS}:pending_flag", y, mode).trace
            dev.free(y)
    return out


def test_intervals() -> None:
    iv = Intervals()
    iv.add(0, 4)
    iv.add(8, 12)
    iv.add(4, 6)
    assert (iv.starts, iv.stops) == ([0, 8], [6, 12])
    assert _within(iv, 0, 6) == [(0, 6)]
    assert _within(iv, 2, 10) == [(2, 6), (8, 10)]
    assert _within(iv, 6, 8) == []
    assert _minus([(0, 16)], iv) == [(6, 8), (12, 16)]


def test_the_clean_twins_have_no_finding(traces) -> None:
    for name in ("clean", "flag-clean"):
        assert initcheck(traces[name]) == [], name
        assert synccheck(traces[name]) == [], name


def test_initcheck_reports_the_read_of_a_gm_buffer_nothing_wrote(traces) -> None:
    found = initcheck(traces["uninit"])
    assert [(f.kind, f.subject, f.site, f.byte_range, f.count) for f in found] == [
        (UNINIT_READ, "GM tensor ws", _line("copy-in"), (0, 64), 1)]
    assert synccheck(traces["uninit"]) == []
    assert "ws[0:64], which no core wrote in this launch" in found[0].message


def test_a_gm_buffer_the_host_filled_or_wrote_counts_as_written() -> None:
    with device(1) as dev:
        x = dev.to_device("x", np.arange(64, dtype=np.float32))
        y, ws = dev.empty("y", 64, "float32"), dev.empty("ws", 64, "float32", fill=0)
        r = dev.launch_with(LaunchOptions(trace=True), f"{KERNELS}:copy_through", x, y, ws, "uninit")
        assert initcheck(r.trace) == []
        # a poison fill is not data; a buffer from before the previous launch may hold what it wrote
        ws2 = dev.empty("ws2", 64, "float32", fill=0xFF, poison=True)
        r = dev.launch_with(LaunchOptions(trace=True), f"{KERNELS}:copy_through", x, y, ws2, "uninit")
        assert [f.subject for f in initcheck(r.trace)] == ["GM tensor ws2"]
        r = dev.launch_with(LaunchOptions(trace=True), f"{KERNELS}:copy_through", x, y, ws2, "uninit")
        assert initcheck(r.trace) == []
        dev.free(x, y, ws, ws2)


def test_synccheck_reports_a_set_never_waited(traces) -> None:
    found = synccheck(traces["unwaited"])
    assert [(f.kind, f.subject, f.site, f.count) for f in found] == [
        (SET_NOT_WAITED, "SetFlag<MTE2_MTE3>(1)", _line("unwaited set"), 1)]


def test_synccheck_reports_a_duplicate_event_id(traces) -> None:
    found = synccheck(traces["duplicate"])
    # the first wait consumed the first set: the second is left set, and it collapsed into the first
    assert [(f.kind, f.site, f.other_site) for f in found] == [
        (SET_NOT_WAITED, _line("set"), ""), (DUPLICATE_ID, _line("set"), _line("first set"))]


def test_synccheck_reports_a_wait_a_barrier_already_ordered_as_redundant(traces) -> None:
    found = synccheck(traces["redundant"])
    assert [(f.kind, f.site, f.other_site, f.is_error) for f in found] == [
        (REDUNDANT, _line("redundant wait"), _line("redundant set"), False)]


def test_synccheck_reports_a_cross_core_flag_left_pending(traces) -> None:
    found = synccheck(traces["flag-pending"])
    assert [(f.kind, f.subject, f.site, f.count) for f in found] == [
        (PENDING_AT_END, "CrossCoreSetFlag<2>(3)", _line("cross-core set"), 1)]


def test_the_report_reads_like_racechecks(traces) -> None:
    log = FindingLog()
    log.add(initcheck(traces["uninit"]) + synccheck(traces["unwaited"]))
    text = format_finding_log(log)
    assert "====== ERROR: Uninitialized read (initcheck) at GM tensor ws[0:64] (x1 in 1 of 1 launches):" in text
    assert ("SetFlag<MTE2_MTE3>(1) by PIPE_MTE2 of vector core 0 (block 0, sub 0) in kernel at "
            f"{_line('unwaited set')}") in text
    assert "====== SUMMARY (synccheck): 1 finding (1 set never waited) in 1 launch checked" in text
    assert log.errors() == 2 and log.to_dicts()[0]["element_range"] == [0, 64]


# -- C++ -----------------------------------------------------------------------------------------


def checks_cpp_trace(mode: int):
    """One traced launch of tests/ascendc_kernels/checks.cpp built with MODE (0: clean; 1: an unwritten
    buffer copied out; 2: a set never waited)."""
    k = kernel("checks.cpp", "checks", MODE=str(mode))
    with device(1, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(64, dtype=np.float32))
        y = dev.empty("y", 64, "float32")
        trace = dev.launch_with(LaunchOptions(trace=True), k, x, y, 64).trace
        dev.free(x, y)
    return trace


@needs_cxx
@pytest.mark.slow
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_cxx_kernel_findings_at_its_lines(mode: int) -> None:
    trace = checks_cpp_trace(mode)
    init, sync = initcheck(trace), synccheck(trace)
    if mode == 0:
        assert init == [] and sync == []
    elif mode == 1:  # the copy-out of the half of the buffer nothing wrote
        site = f"ascendc_kernels/checks.cpp:{line_of('checks.cpp', 'CHECK: unwritten buffer')}"
        assert [(f.kind, f.subject, f.site, f.byte_range, f.pipe) for f in init] == [
            (UNINIT_READ, "UB", site, (256, 512), "PIPE_MTE3")]
        assert sync == []
    else:
        site = f"ascendc_kernels/checks.cpp:{line_of('checks.cpp', 'CHECK: never waited')}"
        assert init == []
        assert [(f.kind, f.subject, f.site, f.count) for f in sync] == [
            (SET_NOT_WAITED, "SetFlag<MTE2_MTE3>(1)", site, 1)]


# -- no false alarm on the gallery ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["accum-init", "aiv-barrier", "double-buffer-reuse", "flag-reuse", "floms",
                                  "reduce-early", "vecin-early-read"])
@pytest.mark.parametrize("cxx", [False, True])
def test_the_gallery_as_fixed_has_no_finding(name: str, cxx: bool) -> None:
    from mpnpu.harness.runner import make_variants, run_batch
    from mpnpu.operators.registry import load_operator

    if cxx and not have_compiler():
        pytest.skip("no C++ compiler")
    op = load_operator(f"{name}-cxx" if cxx else name)
    result = run_batch(op, cases=2, repeat=1, variants=make_variants(op, ("fixed",)), initcheck=True,
                       synccheck=True)
    log = result.variants["fixed"].check_log
    assert log.launches_checked == 2
    assert log.findings() == [], format_finding_log(log)
    assert result.expected_clean_are_clean


# -- the command line ----------------------------------------------------------------------------


@pytest.mark.slow
def test_batch_initcheck_synccheck_in_text_json_and_junit(tmp_path) -> None:
    """The incident of vecin-early-read-cxx drops Compute's DeQue: EnQue's sets are left pending and
    set again; the fixed variant is clean, the verdict OK; the findings are in the JSON and JUnit."""
    import json
    import subprocess
    import sys
    import xml.etree.ElementTree as ET

    out, junit = tmp_path / "r.json", tmp_path / "r.xml"
    if not have_compiler():
        pytest.skip("no C++ compiler")
    p = subprocess.run([sys.executable, "-m", "mpnpu", "batch", "--op", "vecin-early-read-cxx", "--cases", "2",
                        "--repeat", "1", "--initcheck", "--synccheck", "--json", str(out), "--junit", str(junit)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "====== SUMMARY (synccheck): 0 findings in 2 launches checked" in p.stdout
    assert "ERROR: SetFlag never waited (synccheck) at SetFlag<MTE2_V>" in p.stdout
    data = json.loads(out.read_text())
    assert data["checks"] == ["initcheck", "synccheck"]
    kinds = {f["kind"] for f in data["variants"]["incident"]["findings"]}
    assert kinds == {SET_NOT_WAITED, DUPLICATE_ID}
    assert data["variants"]["fixed"]["findings"] == []
    assert "SetFlag never waited (synccheck)" in ET.parse(junit).getroot().find(".//system-out").text
    bad = subprocess.run([sys.executable, "-m", "mpnpu", "batch", "--initcheck=2"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) <= 3
