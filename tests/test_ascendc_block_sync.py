"""Inter-block syncs through a GM workspace (include/mpnpu/block_sync.h): IBSet / IBWait and
InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock really block across the core
processes and order what they should (our kernel's output is right with them), racecheck's
happens-before learns their ordering (no hazard with them, a RAW without them), a wait nothing can
satisfy ends as a deadlock report naming its line, and misuse is an error at the kernel's line."""

from __future__ import annotations

import time

import numpy as np
import pytest

from mpnpu.errors import DeadlockError, KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import DeviceSpec, LaunchOptions
from mpnpu.runtime.topology import KernelType
from mpnpu.runtime.trace import GmFlagEvent
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import OPTIONS, device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

ROW = 8
SRC = "block_sync.cpp"


def _k():
    return kernel(SRC, "block_sync")


def _launch(cores: int, mode: int, sync: int, rounds: int = 1, trace: bool = True):
    with device(cores, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(ROW, dtype=np.float32))
        out = dev.to_device("out", np.zeros((cores + 1) * ROW, np.float32))
        ws = dev.to_device("ws", np.zeros(64 * 8, np.int32))  # (IBSet's workspace starts zeroed)
        r = dev.launch_with(LaunchOptions(trace=trace), _k(), x, out, ws, mode, sync, rounds)
        return r, dev.to_host(out).reshape(cores + 1, ROW)


def _chain_reference(cores: int) -> np.ndarray:
    x = np.arange(ROW, dtype=np.float32)
    ref = np.zeros((cores + 1, ROW), np.float32)
    for b in range(cores):
        ref[b] = x + b
    return ref


def _ordered_reference(cores: int, rounds: int) -> np.ndarray:
    acc = np.zeros(ROW, np.float64)
    for _ in range(rounds):
        for b in range(cores):
            acc = acc * 3 + b + 1
    return acc.astype(np.float32)


@pytest.mark.parametrize("cores", [2, 4])
def test_ibset_ibwait_order_a_chain_of_cores_and_racecheck_sees_it(cores: int) -> None:
    r, out = _launch(cores, 0, 1)
    np.testing.assert_array_equal(out, _chain_reference(cores))
    events = [ev for evs in r.trace.events for ev in evs if isinstance(ev, GmFlagEvent)]
    assert sum(ev.op == "release" for ev in events) == cores
    assert sum(ev.op == "wait" for ev in events) == cores - 1 and all(ev.target == 1 for ev in events
                                                                      if ev.op == "wait")
    assert analyze(r.trace) == []


def test_without_ibset_ibwait_the_chain_races() -> None:
    r, _ = _launch(2, 0, 0)
    gm = [h for h in analyze(r.trace) if h.tensor == "out" and h.scope == "GM"]
    assert gm and {h.kind for h in gm} <= {"RAW", "WAR"}  # (which, the order the cores happened to run in says)
    sites = {h.first.site for h in gm} | {h.second.site for h in gm}
    assert f"ascendc_kernels/{SRC}:{line_of(SRC, 'DataCopy(outGm_[me_ * ROW], row, ROW);')}" in sites


@pytest.mark.parametrize("cores,rounds", [(2, 1), (3, 3), (4, 2)])
def test_wait_pre_block_and_notify_next_block_run_the_cores_in_block_order(cores: int, rounds: int) -> None:
    r, out = _launch(cores, 1, 1, rounds)
    np.testing.assert_array_equal(out[0], _ordered_reference(cores, rounds))
    assert analyze(r.trace) == []


def test_without_the_block_order_the_shared_row_races() -> None:
    r, _ = _launch(3, 1, 0, 2)
    gm = [h for h in analyze(r.trace) if h.tensor == "out" and h.scope == "GM"]
    assert gm


@pytest.mark.slow
def test_an_ibwait_nothing_sets_ends_as_a_deadlock_report_naming_its_line() -> None:
    t0 = time.monotonic()
    with pytest.raises(DeadlockError) as ei:
        _launch(2, 2, 1, trace=False)
    took = time.monotonic() - t0
    msg = str(ei.value)
    assert took < OPTIONS.stall_grace_s + 20, took
    assert msg.startswith("deadlock: every running core has been blocked"), msg
    assert "a wait on the GM flag word at byte 64 of its workspace" in msg, msg  # ((event 1 * 2 cores + block 0) * 32)
    assert f"block_sync.cpp:{line_of(SRC, 'nothing sets (block 0, event 1)')}" in msg, msg


@pytest.mark.slow
def test_a_wait_across_the_waves_of_a_wide_launch_ends_as_a_deadlock_report_naming_its_line() -> None:
    """Two vector cores, three blocks: blocks 0 and 1 wait for block 2's IBSet, and block 2 starts
    only when one of them ends, as on the chip. The report comes within the stall window (not at
    the launch timeout), names the wait's line and says block 2 never started; with three
    vector cores the same kernel runs."""
    two_cores = DeviceSpec(name="2 vector cores", ai_cores=1)
    t0 = time.monotonic()
    with device(3, kernel_type=KernelType.AIV, spec=two_cores) as dev:
        ws = dev.to_device("ws", np.zeros(64 * 8, np.int32))
        x, out = dev.to_device("x", np.zeros(ROW, np.float32)), dev.empty("out", 4 * ROW, "float32")
        with pytest.raises(DeadlockError) as ei:
            dev.launch(_k(), x, out, ws, 5, 1, 1)
    took, msg = time.monotonic() - t0, str(ei.value)
    assert took < OPTIONS.stall_grace_s + 20, took
    assert msg.startswith("deadlock: every running core has been blocked"), msg
    wait_line = line_of(SRC, "IBWait(wsGm_, ub, cores_ - 1, 0);")
    assert f"block_sync.cpp:{wait_line}" in msg, msg
    assert "block 2 not started: in a launch wider than the device's cores" in msg, msg
    _launch(3, 5, 1, trace=False)  # every block has a core: block 2's set frees the others


@pytest.mark.parametrize("mode,text,needle", [
    (3, "IBSet: blockIdx 2 is not a core of this launch (0 .. 1)", "one past the last block"),
    (4, "IBSet: the UB workspace holds 16 bytes; it needs at least 32", "16 bytes of UB workspace"),
])
def test_misuse_is_an_error_at_the_kernels_line(mode: int, text: str, needle: str) -> None:
    with pytest.raises(KernelError) as ei:
        _launch(2, mode, 1, trace=False)
    msg = str(ei.value)
    assert "KernelAPIError" in msg and text in msg, msg
    assert f"block_sync.cpp:{line_of(SRC, needle)}" in msg, msg


def test_task_sync_calls_order_nothing_on_one_launch_and_are_called_once_per_core() -> None:
    """WaitPreTaskEnd / SetNextTaskStart take no effect on this chip class (documented): the launch's
    own syncs order its work (the add is right, racecheck finds nothing, and they add no cross-core
    edge); a second WaitPreTaskEnd on a core is an error at its line."""
    k = kernel(SRC, "task_sync")
    with device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(128, dtype=np.float32))
        out = dev.empty("out", 128, "float32")
        r = dev.launch_with(LaunchOptions(trace=True), k, x, out, 0)
        np.testing.assert_array_equal(dev.to_host(out), np.arange(128, dtype=np.float32) + 1)
        assert analyze(r.trace) == []
        assert not [ev for evs in r.trace.events for ev in evs if isinstance(ev, GmFlagEvent)]
        with pytest.raises(KernelError) as ei:
            dev.launch(k, x, out, 1)
    msg = str(ei.value)
    assert "WaitPreTaskEnd: called a second time on this core (the first at " in msg, msg
    assert f"block_sync.cpp:{line_of(SRC, 'a second time on this core')}" in msg, msg


def _group(cores: int, arrive: int, sync: int, rounds: int, bad: int = 0):
    k = kernel(SRC, "group_barrier")
    with device(cores, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.zeros(8 * (cores + 1), np.int32))
        ws = dev.to_device("ws", np.zeros(128 * cores, np.int32))  # (512 bytes a waiter, zeroed)
        r = dev.launch_with(LaunchOptions(trace=True), k, out, ws, arrive, sync, rounds, bad)
        return r, dev.to_host(out).reshape(cores + 1, 8)


@pytest.mark.parametrize("cores,arrive,rounds", [(3, 1, 1), (4, 2, 1), (4, 2, 3)])
def test_group_barrier_waiters_see_every_arrivers_work(cores: int, arrive: int, rounds: int) -> None:
    """Each round the arrivers add b + 1 into out[0]; a waiter copies out[0] after each Wait, so its last
    copy (after the last round's Wait) holds every add of every round. (Over several rounds an arriver's
    next adds are not ordered against a waiter's read of the round before: racecheck rightly says so, and
    only the one-round launches are checked for no hazard.)"""
    r, out = _group(cores, arrive, 1, rounds)
    total = sum(b + 1 for b in range(arrive)) * rounds
    assert out[0, 0] == total
    for w in range(arrive, cores):
        assert out[w + 1, 0] == total
    if rounds == 1:
        assert [h for h in analyze(r.trace) if h.scope == "GM"] == []


def test_without_the_group_barrier_the_waiters_reads_race_the_adds() -> None:
    r, _ = _group(3, 1, 0, 1)
    assert [h for h in analyze(r.trace) if h.tensor == "out" and h.scope == "GM"]


def test_group_barrier_misuse_is_an_error_at_the_line() -> None:
    with pytest.raises(KernelError) as ei:
        _group(3, 1, 1, 1, bad=1)
    msg = str(ei.value)
    assert "GroupBarrier::Wait: index 3 is outside the Wait group [0, 2)" in msg, msg
    assert f"block_sync.cpp:{line_of(SRC, '// the Wait')}" in msg, msg
