"""``pytest --mpnpu-mutate-syncs``: sync mutation testing of a pytest suite of our own that uses the
mpnpu device (mpnpu.testing.mutation), driven through pytest's own ``pytester``: a set whose wait is
then never satisfied is killed, a wait whose data no test checks survives untested, a SyncAll that
orders nothing survives redundant; the score and the --mpnpu-min-score gate."""

from __future__ import annotations

import os
import re

import pytest

from mpnpu.ascendc.build.compiler import cache_dir  # (here: pytester forgets modules a test imports)
from mpnpu.testing.mutation import child_args

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_leaks")]

#: vector core 0 writes a slot of GM and raises a mode-1 flag; vector core 1 raises its own (a mode-1
#: wait needs both), waits, and copies the slot to out; a SyncAll at the end orders nothing
KERNEL = '''
import numpy as np

from mpnpu import api

SLOT = 8


def handoff(buf, out):
    if api.is_aiv():
        v = api.get_block_idx()
        if v == 0:
            api.data_copy(buf[0:SLOT], np.full(SLOT, 7, np.float32))
            api.cross_core_set_flag(3, mode=1, name="set0")
        else:
            api.cross_core_set_flag(3, mode=1, name="set1")
            api.cross_core_wait_flag(3, mode=1, name="wait")
            seen = np.empty(SLOT, np.float32)
            api.data_copy(seen, buf[0:SLOT])
            api.data_copy(out[0:SLOT], seen)
    api.sync_all(name="extra")
'''

TESTS = '''
import numpy as np

import handoff_kernel as k


def _run(dev):
    buf = dev.to_device("buf", np.zeros(k.SLOT, np.float32))
    out = dev.empty("out", k.SLOT, "float32")
    dev.launch(k.handoff, buf, out)
    return dev.to_host(out)


def test_launches_only(mpnpu_device):
    _run(mpnpu_device)
'''

CHECKED = '''

def test_checks_the_copy(mpnpu_device):
    assert (_run(mpnpu_device) == 7).all()
'''


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makepyfile(handoff_kernel=KERNEL)
    monkeypatch.setenv("MPNPU_CACHE_DIR", os.path.dirname(cache_dir()))
    monkeypatch.setenv("MPNPU_TIMEOUT", "60")
    return pytester


def _table(result: pytest.RunResult) -> dict[str, str]:
    """site -> its row's verdict, from the printed table."""
    rows = {}
    for line in result.outlines:
        m = re.match(r"\s+(set0|set1|wait|extra)\s+\S+\s+(.*)$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_a_suite_that_checks_nothing_kills_only_the_sets(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_unchecked=TESTS)
    result = suite.runpytest_subprocess("--mpnpu-mutate-syncs", "--mpnpu-min-score", "0.6", "test_unchecked.py",
                                        timeout=600)
    rows = _table(result)
    assert set(rows) == {"set0", "set1", "wait", "extra"}, result.outlines
    assert rows["set0"].startswith("killed") and rows["set1"].startswith("killed")  # the wait is never satisfied
    assert rows["wait"].startswith("SURVIVED (untested)")  # racecheck's hazard, which no assertion caught
    assert rows["extra"].startswith("SURVIVED (redundant)")
    assert any("score: 0.50 (2 of 4" in line for line in result.outlines)
    assert result.ret == 1  # below --mpnpu-min-score


def test_a_suite_that_checks_the_copy_passes_the_gate(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_checked=TESTS + CHECKED)
    result = suite.runpytest_subprocess("--mpnpu-mutate-syncs", "--mpnpu-min-score", "0.5", "test_checked.py",
                                        timeout=600)
    rows = _table(result)
    assert rows["set0"].startswith("killed") and rows["set1"].startswith("killed")
    # without the wait the copy reads the slot early when core 1 gets there first: killed by the test's
    # assertion, or (core 0 first every time) a survivor that still carries racecheck's hazard
    assert rows["wait"].startswith(("killed", "SURVIVED (untested)")), rows
    assert "pytest failure" in rows["set0"] and "test_checked.py::test_checks_the_copy" in rows["set0"]
    assert result.ret == 0


def test_a_failing_suite_cannot_be_mutation_tested(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_failing="def test_fails():\n    assert False\n")
    result = suite.runpytest_subprocess("--mpnpu-mutate-syncs", "test_failing.py", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any("fails as it is" in line for line in result.errlines)


def test_the_runs_it_starts_are_plain_runs() -> None:
    assert child_args(["-q", "--mpnpu-mutate-syncs", "--mpnpu-min-score", "0.5", "t.py", "--mpnpu-min-score=1"]) == [
        "-q", "t.py"]
