"""Every hang names each stuck core and its kernel line, within the watchdog's window.

One kernel of each front end (tests/kernels_for_tests.py:hangs, tests/ascendc_kernels/hangs.cpp),
four ways to hang: a wait nothing sets, a flag wait the watchdog proves hopeless, a core spinning
while the others wait in SyncAll, a core spinning while the others have finished. Each report must
name the right core at the right file:line; the launch must end within the stall window (1 s here),
far from the sync (30 s) and launch (40 s) timeouts; the core pool is rebuilt with no process left.
The command line (mpnpu run) is checked once, with the default window: a non-zero exit, no process
and no /dev/shm segment left. See docs/device-model.md ("Watchdog").
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from mpnpu.errors import DeadlockError, LaunchTimeoutError
from mpnpu.runtime.config import LaunchOptions
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import OPTIONS, device, k
from tests.test_runtime_faults import assert_recovers, faulty_launch

#: the launch ends within the stall window and some slack, never at a sync or launch timeout
BOUND_S = OPTIONS.stall_grace_s + 6.0
PY = "tests/kernels_for_tests.py"


def py_line(text: str) -> int:
    """The first line of tests/kernels_for_tests.py:hangs that contains ``text``."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels_for_tests.py")
    with open(path) as f:
        lines = f.read().splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith("def hangs("))
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


def cxx():
    return kernel("hangs.cpp", "hangs")


def _run(front: str, mode: int):
    ref = k("hangs") if front == "py" else cxx()
    kwargs = {} if front == "py" else {"kernel_type": ref.kernel_type}
    with device(1, **kwargs) as dev:
        err, took, gen, pids, keep = faulty_launch(dev, ref, mode, 1)
        assert took < BOUND_S, (took, str(err))
        assert_recovers(dev, gen, pids, keep)
    return err


def _at(front: str, py_text: str, cxx_text: str) -> str:
    if front == "py":
        return f"{PY}:{py_line(py_text)}"
    return f"ascendc_kernels/hangs.cpp:{line_of('hangs.cpp', cxx_text)}"


FRONTS = ["py", pytest.param("cxx", marks=needs_cxx)]


@pytest.mark.parametrize("front", FRONTS)
def test_a_wait_nothing_sets_names_each_core_its_line_and_whom_it_waits_for(front: str) -> None:
    err = _run(front, 1)
    msg = str(err)
    assert isinstance(err, DeadlockError) and msg.startswith("deadlock: every running core has been blocked"), msg
    at = _at(front, "nothing sets flag 5", "nothing sets flag 5")
    for core in ("aic0", "aiv0", "aiv1"):
        assert f"{core} in flag 5" in msg and f" at {at}, waiting for " in msg, msg
    waits = err.details["waits"]
    assert any(w.startswith("aiv0 in flag 5") and w.endswith("aic0") for w in waits), waits


def test_a_wait_on_cores_that_have_ended_says_they_ended() -> None:
    """The cube core waits on a flag its vector cores set; vector core 0 has returned, vector core 1
    waits on the cube core. The report says which core waited for has ended (before, only "waiting for
    aiv0, aiv1", as if aiv0 might still set it)."""
    err = _run("py", 5)
    at = _at("py", "vector core 0 has returned", "")
    assert isinstance(err, DeadlockError)
    assert f"aic0 in flag 5 (mode 2) at {at}, waiting for aiv0 (ended), aiv1" in str(err), str(err)
    assert "aiv1 (ended)" not in str(err), str(err)


@pytest.mark.parametrize("front", FRONTS)
def test_a_hopeless_flag_wait_names_its_line(front: str) -> None:
    err = _run(front, 2)
    at = _at(front, "needs this core's own set", "needs this core's own set")
    assert isinstance(err, DeadlockError)
    assert str(err).startswith("vector core 1 (block 0, sub 1) waits on flag 3 (mode 1) that it has not set itself")
    assert str(err).endswith(f"; the wait is at {at}"), str(err)


@pytest.mark.slow
@pytest.mark.parametrize("front", FRONTS)
def test_a_spin_before_sync_all_names_the_spinning_core_not_a_waiting_one(front: str) -> None:
    err = _run(front, 3)
    msg = str(err)
    assert isinstance(err, DeadlockError) and msg.startswith("hang: aiv1 spinning (no kernel API call for "), msg
    if front == "py":  # a Python kernel says the line it runs
        assert busy_at(msg), msg
    else:  # a C++ kernel, its last API call
        assert f"its last kernel API call was at {_at(front, '', 'last API call')} (hangs)" in msg, msg
    sync_at = _at(front, "the others wait here", "the others wait here")
    assert f"aic0 in SyncAll #1 at {sync_at}, waiting for aiv1" in msg, msg
    assert f"aiv0 in SyncAll #1 at {sync_at}, waiting for aiv1" in msg, msg
    assert err.details["spinning"] == ["vector core 1 (block 0, sub 1)"]


@pytest.mark.slow
@pytest.mark.parametrize("front", FRONTS)
def test_a_spin_with_no_sync_all_is_named_within_the_window(front: str) -> None:
    err = _run(front, 4)
    msg = str(err)
    assert isinstance(err, DeadlockError) and msg.startswith("hang: aiv1 spinning"), msg
    if front == "py":
        assert busy_at(msg), msg
    else:
        assert "before its first kernel API call" in msg, msg
    assert msg.endswith("every other core has finished the kernel"), msg


def busy_at(msg: str) -> bool:
    """The message names tests/kernels_for_tests.py:busy's loop (its while or its body line)."""
    return any(f"at {PY}:{n} (busy)" in msg for n in (line_of_busy() - 1, line_of_busy()))


def line_of_busy() -> int:
    """The body line of tests/kernels_for_tests.py:busy's loop."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels_for_tests.py")
    with open(path) as f:
        lines = f.read().splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith("def busy("))
    return next(i for i in range(start, len(lines)) if lines[i].strip() == "pass") + 1


@pytest.mark.parametrize("front", FRONTS)
def test_the_launch_timeout_says_who_is_stuck_where(front: str) -> None:
    """A launch timeout shorter than the window: its message names the spinning core and where it
    is, and the waiting cores with their lines, not just "still running"."""
    ref = k("hangs") if front == "py" else cxx()
    kwargs = {} if front == "py" else {"kernel_type": ref.kernel_type}
    with device(1, **kwargs) as dev:
        err, took, gen, pids, keep = faulty_launch(dev, ref, 3, 1, options=LaunchOptions(timeout_s=0.5))
        assert_recovers(dev, gen, pids, keep)
    msg = str(err)
    assert isinstance(err, LaunchTimeoutError) and took < BOUND_S, msg
    if front == "py":
        assert "aiv1 running at" in msg and busy_at(msg), msg
    else:
        assert f"aiv1 running; its last kernel API call was at {_at(front, '', 'last API call')} (hangs)" in msg, msg
    assert f"aiv0 in SyncAll #1 at {_at(front, 'the others wait here', 'the others wait here')}, waiting for aiv1" \
        in msg, msg


@pytest.mark.slow
def test_long_work_with_api_calls_is_not_a_spin() -> None:
    """A core that keeps calling the kernel API (progress) for several windows while the others
    wait in SyncAll is left alone: the launch succeeds."""
    with device(1) as dev:
        dev.launch(k("busy_with_calls"), 1, 3 * OPTIONS.stall_grace_s)


@pytest.mark.slow
@needs_cxx
def test_the_command_line_exits_non_zero_and_leaves_nothing_behind(tmp_path) -> None:
    """mpnpu run with the default window (5 s): reported long before the 60 s SyncAll timeout,
    exit status non-zero, no core process and no shared-memory segment left."""
    cxx()  # (built once, before the clock starts)
    mark = uuid.uuid4().hex
    env = dict(os.environ, MPNPU_HANG_TEST=mark)
    t0 = time.monotonic()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = os.path.join("tests", "ascendc_kernels", "hangs.cpp")
    cmd = [sys.executable, "-m", "mpnpu", "run", source, "u32:3", "u32:1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=repo)
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    took = time.monotonic() - t0
    assert proc.returncode != 0, out
    assert "aiv1 spinning" in out and f"hangs.cpp:{line_of('hangs.cpp', 'last API call')}" in out, out
    assert took < 40, (took, out)  # the default window (5 s) and a build check, not the 60 s sync timeout
    left = [p.pid for p in psutil.process_iter() if _marked(p, mark)]
    assert left == [], left
    assert [e for e in os.listdir("/dev/shm") if e.startswith(f"mpnpu_{proc.pid}_")] == []


@pytest.mark.slow
@needs_cxx
def test_mpnpu_run_takes_the_stall_window_from_the_command_line() -> None:
    """--stall-grace sets the window: a wait nothing sets is reported as blocked for that long."""
    cxx()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [sys.executable, "-m", "mpnpu", "run", os.path.join("tests", "ascendc_kernels", "hangs.cpp"), "u32:1",
           "u32:1", "--stall-grace", "1.5"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=repo, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "blocked for 1.5 s" in out, out


def _marked(p: psutil.Process, mark: str) -> bool:
    try:
        return p.environ().get("MPNPU_HANG_TEST") == mark
    except (psutil.Error, OSError):
        return False



def test_a_core_inside_one_long_api_call_answers_that_it_is_in_a_call() -> None:
    """The answer to the watchdog's signal tells a kernel line that spins from a kernel inside one
    long call of mpnpu's (busy: not reported): a frame of mpnpu's own below the kernel's."""
    import sys

    from mpnpu.runtime import kcontext
    from mpnpu.runtime.spin import spin_until

    where, line = kcontext.report_where(sys._getframe()), sys._getframe().f_lineno
    name = "test_a_core_inside_one_long_api_call_answers_that_it_is_in_a_call"
    assert where.startswith(f"tests/test_hangs.py:{line} ({name})"), where
    inside = []
    spin_until(lambda: bool(inside.append(sys._getframe(1))) or True, 1.0)  # the frame of spin_until
    where = kcontext.report_where(inside[0])
    assert where.startswith(kcontext.IN_CALL + "tests/test_hangs.py:"), where


def test_a_wide_deadlock_report_says_every_place_a_core_is_stuck() -> None:
    """Forty vector cores in one SyncAll and one elsewhere: the report names each place once, with how
    many more cores of that kind are there (before, the first six cores only, which here were all cube
    cores of one wait and hid where the vector cores were)."""
    from mpnpu.runtime.watchdog import summarize_waits

    waits = [f"aic{i} in flag 0 (mode 2) at k.cpp:43, waiting for aiv{2 * i + 1}" for i in range(20)]
    waits += ["aiv0 in flag 1 (mode 2) at k.h:588, waiting for aic0"]
    waits += [f"aiv{i} in SyncAll (vector cores only) #5 at k.h:151, waiting for aiv0" for i in range(1, 40)]
    said = summarize_waits(waits)
    assert said == ("aic0 in flag 0 (mode 2) at k.cpp:43, waiting for aiv1, and 19 more cube cores there; "
                    "aiv0 in flag 1 (mode 2) at k.h:588, waiting for aic0; "
                    "aiv1 in SyncAll (vector cores only) #5 at k.h:151, waiting for aiv0, and 38 more vector cores "
                    "there"), said
    few = waits[:3]
    assert summarize_waits(few) == "; ".join(few)  # a small launch: every core in full
    many = [f"aiv{i} in flag {i} at k.h:{i}" for i in range(8)]
    assert summarize_waits(many).endswith("aiv5 in flag 5 at k.h:5; ...")
