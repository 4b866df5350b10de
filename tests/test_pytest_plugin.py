"""The pytest plugin (mpnpu.testing), driven through pytest's own ``pytester``.

Every run that makes a device goes through ``runpytest_subprocess`` (or a Popen of pytest), so
its core processes and GM segments belong to a process that ends: what it leaves behind can be
checked from outside. Inner test files record their pids in files the outer test reads.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mpnpu.operators.protocol import unavailable_reason
from mpnpu.operators.registry import load_operator, registered
from mpnpu.runtime.config import SEGMENT_PREFIX
from tests.runtime_util import still_alive
from tests.waiting import wait_for

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "pytest-plugin.md"
SHM_DIR = "/dev/shm"
HAZARD_S1 = "missing sync: no SyncAll between TargetProcess and CVProcess (sync point S1 was dropped)"

#: Kernels for the inner test runs (a module next to the inner test files; the core processes,
#: forked from the inner pytest, import it from the same directory).
KERNELS = '''
import time

import numpy as np

from mpnpu import api

SLOT = 8  # float32 elements per vector core: one 32-byte GM block


def exchange(buf, out, shift):
    """Vector core v writes slot v of buf; after SyncAll "S" it copies slot (v + shift) % n to out.

    shift 0: every core reads its own slot, no other core is involved. shift 1: each core reads a
    slot another core wrote, so dropping "S" leaves a RAW race.
    """
    n = 2 * api.get_block_num()
    v = api.get_block_idx()
    if api.is_aiv():
        api.data_copy(buf[v * SLOT:(v + 1) * SLOT], np.full(SLOT, v + 1, np.float32))
    api.sync_all(name="S")
    if api.is_aiv():
        src = (v + shift) % n
        seen = np.empty(SLOT, np.float32)
        api.data_copy(seen, buf[src * SLOT:(src + 1) * SLOT])
        api.data_copy(out[v * SLOT:(v + 1) * SLOT], seen)


def hold(started):
    """Cube core 0 creates the file ``started``; every core then sleeps (at most 30 s)."""
    if api.is_aic() and api.get_block_idx() == 0:
        open(started, "w").close()
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        time.sleep(0.01)
'''

#: What inner tests use to allocate the exchange kernel's tensors and record the device's pids.
INNER_UTIL = '''
import json
import os

import numpy as np

import plugin_kernels as k


def tensors(dev):
    n = 2 * dev.block_dim
    return dev.to_device("buf", np.zeros(n * k.SLOT, np.float32)), dev.empty("out", n * k.SLOT, "float32")


def record(dev, path="pids.jsonl"):
    with open(path, "a") as f:
        f.write(json.dumps({"pytest": os.getpid(), "cores": dev.core_pids(), "block_dim": dev.block_dim}) + "\\n")
'''


def guide_examples() -> dict[str, str]:
    """The test files shown in docs/pytest-plugin.md (the FLOMS file, the all-operators file) and
    the README's short one."""
    blocks = {}
    for path, section, name in ((GUIDE, "## A complete test file", "floms"),
                                (GUIDE, "## Every registered operator", "every_op"),
                                (GUIDE, "### `assert_race_is_real`", "race_is_real"),
                                (ROOT / "README.md", "### In your own test suite (pytest)", "readme")):
        match = re.search(r"```python\n(.*?)```", path.read_text().split(section, 1)[1], re.S)
        assert match, f"{path.name} lost its example under {section!r}"
        blocks[name] = match.group(1)
    return blocks


def run(pytester: pytest.Pytester, *args: str, timeout: float = 120) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=timeout)


def records(pytester: pytest.Pytester, name: str = "pids.jsonl") -> list[dict]:
    path = pytester.path / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def segments_of(pid: int) -> list[str]:
    try:
        return sorted(e for e in os.listdir(SHM_DIR) if e.startswith(f"{SEGMENT_PREFIX}{pid}_"))
    except OSError:
        return []


def assert_gone(recs: list[dict], timeout: float = 5.0) -> None:
    """No core process of the recorded devices is alive and no GM segment of their run is left."""
    assert recs, "the inner tests recorded no device"
    alive = still_alive(sorted({pid for r in recs for pid in r["cores"]}), timeout)
    assert not alive, f"core processes left behind: {alive}"
    for pid in {r["pytest"] for r in recs}:
        assert not segments_of(pid), f"GM segments left behind: {segments_of(pid)}"


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makepyfile(plugin_kernels=KERNELS, inner_util=INNER_UTIL)
    # The inner runs get their own HOME from pytester: without this they would build every C++
    # operator again into an empty cache under it (a dozen builds of ~15 s each on two CPUs).
    from mpnpu.ascendc.build.compiler import cache_dir

    monkeypatch.setenv("MPNPU_CACHE_DIR", os.path.dirname(cache_dir()))  # (cache_dir() adds "ascendc")
    return pytester


# -- the guide's example file, on the fixed and the incident kernel ---------------------------


@pytest.mark.slow
def test_guide_examples_pass_on_fixed_kernels_and_fail_with_hazard_on_incident(inner: pytest.Pytester) -> None:
    examples = guide_examples()
    example = examples["floms"]
    assert 'VARIANT = "fixed"' in example
    inner.makepyfile(test_floms=example, test_every_op=examples["every_op"], test_readme=examples["readme"])
    # (a fresh C++ build cache makes the first inner run build each C++ operator: ~15 s each)
    fixed = run(inner, "-q", timeout=600)
    ops = registered()
    assert len(ops) >= 2
    # an operator that cannot run here (floms-public without a checkout) is skipped, with its reason
    absent = [name for name in ops if unavailable_reason(load_operator(name))]
    fixed.assert_outcomes(passed=3 + 2 * (len(ops) - len(absent)) + 2, skipped=2 * len(absent))

    for done in ("test_every_op.py", "test_readme.py"):
        (inner.path / done).unlink()
    inner.makepyfile(test_floms=example.replace('VARIANT = "fixed"', 'VARIANT = "incident"'))
    incident = run(inner, "-q")
    out = incident.stdout.str()
    assert incident.ret == pytest.ExitCode.TESTS_FAILED
    # Racecheck finds the missing SyncAll on every run, whether or not an output went wrong.
    assert "FAILED test_floms.py::test_no_races" in out
    assert "Potential RAW hazard detected at GM tensor workspace.masked_target" in out
    assert HAZARD_S1 in out
    # The golden tests fail only when the race corrupted an output; when they do, they say how often.
    if "FAILED test_floms.py::test_matches_golden" in out:
        assert "95% Wilson interval" in out
    if "FAILED test_floms.py::test_seeded_case_streams" in out:
        assert re.search(r"mpnpu: failed on repeat \d+ of 10, mpnpu_seed=\d+; replay: pytest", out)


# -- the repeat marker: the failing seed is reported and replays ---------------------------------

SEEDED = '''
import pytest

from mpnpu.testing import assert_no_races

import plugin_kernels as k
from inner_util import tensors


@pytest.mark.mpnpu(repeat=12, seed=100)
def test_seeded(mpnpu_device, mpnpu_seed):
    with open("seeds.log", "a") as f:
        f.write(f"{mpnpu_seed}\\n")
    shift = 1 if mpnpu_seed % 5 == 3 else 0  # some seeds' data make cores read each other's slots
    buf, out = tensors(mpnpu_device)
    assert_no_races(k.exchange, buf, out, shift, drop_syncs=("S",), device=mpnpu_device)
    mpnpu_device.free(buf, out)
'''


def _seeds_run(pytester: pytest.Pytester) -> list[int]:
    log = pytester.path / "seeds.log"
    seeds = [int(s) for s in log.read_text().split()] if log.exists() else []
    if log.exists():
        log.unlink()
    return seeds


@pytest.mark.slow
def test_repeat_marker_reports_failing_seed_and_the_seed_replays(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_seeded=SEEDED)
    first = 103  # the first seed from 100 with seed % 5 == 3, the seeds whose data race

    result = run(inner, "-q")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert _seeds_run(inner) == list(range(100, first + 1))  # stops at the first failure
    assert f"mpnpu: failed on repeat {first - 100 + 1} of 12, mpnpu_seed={first}" in out
    assert f"replay: pytest 'test_seeded.py::test_seeded' --mpnpu-seed {first}" in out
    assert "Potential RAW hazard detected at GM tensor buf" in out
    assert "(sync point S was dropped)" in out

    replay = run(inner, "-q", "test_seeded.py::test_seeded", "--mpnpu-seed", str(first))
    replay.assert_outcomes(failed=1)
    assert _seeds_run(inner) == [first]
    assert "Potential RAW hazard detected at GM tensor buf" in replay.stdout.str()

    # --mpnpu-repeat overrides the marker's count: two seeds, both without a race.
    short = run(inner, "-q", "--mpnpu-repeat", "2")
    short.assert_outcomes(passed=1)
    assert _seeds_run(inner) == [100, 101]


# -- --mpnpu-racecheck -----------------------------------------------------------------------

RACECHECKED = '''
import pytest

from mpnpu import LaunchOptions

from mpnpu.kernels.fused_linear_online_max_sum.operator import OPERATOR

import plugin_kernels as k
from inner_util import record, tensors


def test_racy_launch(mpnpu_device):
    record(mpnpu_device)
    buf, out = tensors(mpnpu_device)
    result = mpnpu_device.launch_with(LaunchOptions(drop_syncs=("S",)), k.exchange, buf, out, 1)
    assert result.trace is None  # traced for the plugin, but the caller did not ask for a trace


def test_synced_launch(mpnpu_device):
    buf, out = tensors(mpnpu_device)
    mpnpu_device.launch(k.exchange, buf, out, 1)


@pytest.mark.mpnpu(racecheck=False)
def test_racy_launch_opted_out(mpnpu_device):
    buf, out = tensors(mpnpu_device)
    mpnpu_device.launch_with(LaunchOptions(drop_syncs=("S",)), k.exchange, buf, out, 1)


def test_operator_incident(mpnpu_device):
    # An operator's own launches go through the same device: FLOMS without S1, one case.
    OPERATOR.run(mpnpu_device, OPERATOR.make_case(0, 0), drop_syncs=frozenset({"S1"}))


def test_no_device():
    assert True
'''


@pytest.mark.slow
def test_racecheck_option_fails_tests_whose_launches_have_hazards(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_rc=RACECHECKED)
    # test_racy_launch_opted_out runs the same launch as test_racy_launch: the option fails the one
    # it applies to.
    checked = run(inner, "-q", "--mpnpu-racecheck")
    checked.assert_outcomes(passed=3, failed=2)
    out = checked.stdout.str()
    assert "FAILED test_rc.py::test_racy_launch " in out
    assert "FAILED test_rc.py::test_operator_incident" in out
    assert "mpnpu --mpnpu-racecheck: 1 GM hazard in launches made on the mpnpu device during this test" in out
    assert "(sync point S was dropped)" in out
    assert HAZARD_S1 in out
    assert_gone(records(inner))


# -- nothing leaks after a failing or an interrupted test ------------------------------------

INTERRUPTED = '''
import plugin_kernels as k
from inner_util import record, tensors


def test_fails(mpnpu_device):
    record(mpnpu_device)
    buf, out = tensors(mpnpu_device)
    mpnpu_device.launch(k.exchange, buf, out, 0)
    assert False, "deliberate failure"


def test_interrupted(mpnpu_device):
    record(mpnpu_device)
    mpnpu_device.launch(k.hold, "started")
'''


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_nothing_leaks_after_failing_and_interrupted_tests(inner: pytest.Pytester, signum: int) -> None:
    inner.makepyfile(test_leak=INTERRUPTED)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_leak.py"],
        cwd=inner.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        started = inner.path / "started"
        wait_for(lambda: started.exists() or proc.poll() is not None, 60, interval=0.02)
        assert started.exists(), "the second test's launch never started"
        proc.send_signal(signum)  # to pytest alone, in the middle of a launch
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "1 failed" in out and "deliberate failure" in out
    assert_gone(records(inner))


# -- inert for unrelated test suites ---------------------------------------------------------

UNRELATED = '''
import pytest


def test_pass():
    assert 1 + 1 == 2


def test_fail():
    assert [1, 2] == [1, 3]


@pytest.mark.skip(reason="not today")
def test_skip():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    print("value", x)
    assert x
'''

UNRELATED_CONFTEST = '''
import json
import os
import sys

import psutil


def pytest_sessionfinish(session):
    with open("inert.json", "w") as f:
        json.dump({
            "plugin": session.config.pluginmanager.has_plugin("mpnpu"),
            "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "mpnpu")),
            "children": [p.pid for p in psutil.Process().children(recursive=True)],
            "segments": sorted(e for e in os.listdir("/dev/shm") if e.startswith("mpnpu_%d_" % os.getpid())),
        }, f)
'''

#: Lines that differ between any two runs, or name the loaded plugins.
_VOLATILE = re.compile(r"^(platform |rootdir|configfile|cachedir|plugins: )")


def _normalised(result: pytest.RunResult) -> list[str]:
    lines = [line for line in result.stdout.lines if not _VOLATILE.match(line)]
    return [re.sub(r" in \d+\.\d+s", " in Xs", line) for line in lines]


def test_plugin_is_inert_for_an_unrelated_suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unrelated=UNRELATED)
    pytester.makeconftest(UNRELATED_CONFTEST)
    runs = {}
    for name, args in (("with", ()), ("without", ("-p", "no:mpnpu"))):
        result = run(pytester, "-rA", "-v", *args)
        facts = json.loads((pytester.path / "inert.json").read_text())
        runs[name] = (result, facts)
    (with_, w), (without, wo) = runs["with"], runs["without"]
    assert w["plugin"] and not wo["plugin"]  # it was loaded, and then did nothing:
    assert with_.ret == without.ret == pytest.ExitCode.TESTS_FAILED
    assert with_.parseoutcomes() == without.parseoutcomes()
    assert _normalised(with_) == _normalised(without)
    # No numpy, no runtime: only the package and the plugin module were imported.
    # (the settings table its options come from, and the errors it raises, are standard library only)
    assert set(w["modules"]) == {"mpnpu", "mpnpu._lazy", "mpnpu.errors", "mpnpu.settings", "mpnpu.testing",
                                 "mpnpu.testing.plugin"}
    assert w["children"] == [] and w["segments"] == []


# -- pytest-xdist: one device per worker ------------------------------------------------------

XDIST = '''
import pytest

from inner_util import record


@pytest.mark.parametrize("i", range(3))
def test_uses_device(mpnpu_device, i):
    record(mpnpu_device)
'''


def test_xdist_workers_each_get_their_own_reused_device(inner: pytest.Pytester) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (optional)")
    inner.makepyfile(test_x=XDIST)
    result = run(inner, "-q", "-p", "xdist", "-n", "2", "--dist", "each")
    result.assert_outcomes(passed=6)
    recs = records(inner)
    by_worker: dict[int, set[tuple[int, ...]]] = {}
    for r in recs:
        by_worker.setdefault(r["pytest"], set()).add(tuple(r["cores"]))
    assert len(by_worker) == 2  # two workers, each made a device
    assert all(len(devices) == 1 for devices in by_worker.values())  # reused by all its tests
    a, b = (set(next(iter(d))) for d in by_worker.values())
    assert not a & b
    assert {r["block_dim"] for r in recs} == {1}  # the tools' default, whatever the worker count
    assert_gone(recs)


# -- mistakes get one line each ---------------------------------------------------------------

MISTAKES = '''
import pytest

from mpnpu.testing import assert_no_races


@pytest.mark.mpnpu(repaet=3)
def test_misspelt_marker_argument():
    pass


@pytest.mark.mpnpu(block_dim=0)
def test_bad_block_dim(mpnpu_device):
    pass


def test_unknown_operator():
    assert_no_races("no-such-operator")


def test_unknown_variant():
    assert_no_races("floms", variant="incidnet")
'''


@pytest.mark.slow
def test_mistakes_are_one_line_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mistakes=MISTAKES)
    result = run(pytester, "-q")
    result.assert_outcomes(failed=3, errors=1)  # the bad block_dim fails the fixture's setup
    out = result.stdout.str()
    assert "@pytest.mark.mpnpu on test_mistakes.py::test_misspelt_marker_argument: unknown argument repaet" in out
    assert "block_dim must be an integer >= 1, got 0" in out
    assert "unknown operator 'no-such-operator'; known: " in out
    assert "unknown variant 'incidnet' of fused_linear_online_max_sum; known: incident, fixed" in out

    bad_option = run(pytester, "-q", "--mpnpu-block-dim", "0")
    assert bad_option.ret == pytest.ExitCode.USAGE_ERROR
    # (the parser of the setting, mpnpu.settings.BLOCK_DIM: the same words as mpnpu batch --block-dim 0)
    assert "argument --mpnpu-block-dim: expected a positive integer, got 0" in bad_option.stderr.str()


# -- assert_race_is_real: directed reproduction ------------------------------------------------

NO_RACE_TO_CONFIRM = '''
import pytest

from mpnpu.testing import RaceNotShown, assert_race_is_real


def test_fixed_kernel_has_no_race_to_confirm():
    with pytest.raises(RaceNotShown, match="racecheck found no hazard to confirm"):
        assert_race_is_real("reduce-early", variant="fixed", runs=1)
'''


@pytest.mark.slow
def test_race_is_real_passes_on_an_incident_and_fails_without_a_hazard(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_real=guide_examples()["race_is_real"], test_none=NO_RACE_TO_CONFIRM)
    result = run(pytester, "-q")
    result.assert_outcomes(passed=2)
