"""Spin-then-sleep waits (mpnpu.runtime.spin) and kernel handles in launch commands.

What must hold: the budget a core uses is the one asked for (RuntimeOptions.spin_us, then
MPNPU_SPIN_US, then the crowding rule), a bad value is one clear error before any core starts, a
look-then-sleep wait returns as soon as what it waits for is there and gives up at its budget; and a
kernel sent by handle still runs after the pool that knew the handle was replaced.
"""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from mpnpu.errors import KernelError, SyncTimeoutError, UsageError
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.core import SPIN_RECHECK_S
from mpnpu.runtime.device import Device
from mpnpu.runtime.spin import (
    DEFAULT_SPIN_US,
    MAX_PROCESSES_PER_CPU,
    SPIN_ENV,
    spin_budget_s,
    spin_until,
    with_env_spin,
)
from mpnpu.runtime.sync import SyncObjects
from mpnpu.runtime.topology import Topology
from tests.runtime_util import OPTIONS, device, filled, k
from tests.waiting import wait_until

pytestmark = pytest.mark.usefixtures("no_leaks", "time_limit")


def test_an_explicit_budget_wins_over_the_environment_and_the_crowding_rule(monkeypatch) -> None:
    monkeypatch.setenv(SPIN_ENV, "75")
    assert with_env_spin(RuntimeOptions(spin_us=30.0)).spin_us == 30.0
    assert with_env_spin(RuntimeOptions(spin_us=0)).spin_us == 0
    assert with_env_spin(RuntimeOptions()).spin_us == 75.0
    monkeypatch.delenv(SPIN_ENV)
    assert with_env_spin(RuntimeOptions()).spin_us is None
    assert spin_budget_s(30.0, 3, cpus=1) == pytest.approx(30e-6)
    assert spin_budget_s(0, 3, cpus=64) == 0.0
    assert spin_budget_s(75.0, 300, cpus=1) == pytest.approx(75e-6)  # given: however crowded


def test_the_default_looks_unless_core_processes_crowd_their_cpus(monkeypatch) -> None:
    monkeypatch.delenv(SPIN_ENV, raising=False)
    at_limit = int(MAX_PROCESSES_PER_CPU * 2)
    assert spin_budget_s(None, 3, cpus=2) == pytest.approx(DEFAULT_SPIN_US / 1e6)  # a pinned block_dim-1 device
    assert spin_budget_s(None, at_limit, cpus=2) == pytest.approx(DEFAULT_SPIN_US / 1e6)
    assert spin_budget_s(None, at_limit + 1, cpus=2) == 0.0


@pytest.mark.parametrize("value", ["abc", "-1", "2e6", "nan"])
def test_a_bad_environment_value_is_one_error_before_any_core_starts(monkeypatch, value) -> None:
    monkeypatch.setenv(SPIN_ENV, value)
    with pytest.raises(UsageError, match=SPIN_ENV):
        Device(1, options=OPTIONS)


@pytest.mark.parametrize("value", [-1, 2e6, True, "100"])
def test_a_bad_option_is_refused(value) -> None:
    with pytest.raises(UsageError, match="spin_us"):
        RuntimeOptions(spin_us=value)


def test_spin_until_returns_once_ready_and_gives_up_at_its_budget() -> None:
    looks = []

    def third_time() -> bool:
        looks.append(1)
        return len(looks) == 3

    assert spin_until(third_time, 10.0)  # (returns at the third look, long before the budget)
    assert len(looks) == 3
    assert not spin_until(lambda: False, 0.002)
    assert not spin_until(lambda: True, 0.0)  # no budget: does not look at all


@pytest.mark.parametrize("spin_us, env, expected", [(50.0, None, 50), (0.0, "120", 0), (None, "120", 120)])
def test_every_core_uses_the_budget_it_was_given(monkeypatch, spin_us, env, expected) -> None:
    if env is None:
        monkeypatch.delenv(SPIN_ENV, raising=False)
    else:
        monkeypatch.setenv(SPIN_ENV, env)
    options = RuntimeOptions(gm_segment_bytes=OPTIONS.gm_segment_bytes, launch_timeout_s=40.0, spin_us=spin_us)
    with Device(1, options=options) as dev:
        out = filled(dev, "out", (dev.topology.n_cores, 1))
        dev.launch(k("report_spin_budget"), out)
        assert dev.to_host(out).ravel().tolist() == [expected] * dev.topology.n_cores


def test_a_kernel_sent_by_handle_runs_again_after_the_pool_was_replaced() -> None:
    with device(1) as dev:
        t = filled(dev, "t", (4,))
        dev.launch(k("fill_kernel"), t, 1)
        dev.launch(k("fill_kernel"), t, 2)  # (by handle: the cores know it)
        assert dev.to_host(t).tolist() == [2] * 4
        assert [ref for _, ref in dev._state.pool.kernel_handles.values()] == [k("fill_kernel")]
        with pytest.raises(KernelError):
            dev.launch(k("raise_on"), 0, False)  # the pool is replaced: its cores know no handle
        assert dev._state.pool.kernel_handles == {}
        dev.launch(k("fill_kernel"), t, 3)
        assert dev.to_host(t).tolist() == [3] * 4
        dev.launch(k("empty_kernel"))  # another kernel, then the first again
        dev.launch(k("fill_kernel"), t, 4)
        assert dev.to_host(t).tolist() == [4] * 4


class Counter:
    """A mutable kernel object: each launch must run the state it has when launched."""

    mpnpu_kernel_name = "counter"

    def __init__(self) -> None:
        self.value = 0

    def __call__(self, t) -> None:
        from mpnpu import api
        from tests.kernels_for_tests import put

        if api.is_aiv() and api.get_block_idx() == 0:
            put(t, [self.value] * t.shape[0])


def test_a_mutable_kernel_object_travels_whole_with_every_launch() -> None:
    kernel = Counter()
    with device(1) as dev:
        t = filled(dev, "t", (4,))
        for value in (1, 2, 3):
            kernel.value = value
            dev.launch(kernel, t)
            assert dev.to_host(t).tolist() == [value] * 4
        assert dev._state.pool.kernel_handles == {}


def test_a_python_flag_wait_that_looks_longer_than_its_timeout_ends_at_the_timeout() -> None:
    ctx = multiprocessing.get_context("fork")
    topo = Topology(1)
    sync = SyncObjects(ctx, topo)
    cube = topo.cube_ids[0]
    port = sync.flag_port(cube, 2, 3, 0.2)  # nobody sets: only the timeout ends it
    start = time.monotonic()
    with pytest.raises(SyncTimeoutError):
        port.wait(spin_s=30.0)
    assert time.monotonic() - start < 10.0  # (the look alone would take 30 s)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to pin the cores onto fewer")
def test_a_core_pinned_onto_fewer_cpus_works_its_budget_out_again(monkeypatch) -> None:
    monkeypatch.delenv(SPIN_ENV, raising=False)
    options = RuntimeOptions(gm_segment_bytes=OPTIONS.gm_segment_bytes, launch_timeout_s=40.0)
    cpus = sorted(os.sched_getaffinity(0))[:2]
    with Device(1, options=options) as dev:  # 3 core processes
        for pid in dev.core_pids():
            os.sched_setaffinity(pid, cpus)
        out = filled(dev, "out", (dev.topology.n_cores, 1))
        dev.launch(k("report_spin_budget"), out)
        dev.launch(k("report_spin_budget"), out)  # (each core works it out after a launch)
        assert dev.to_host(out).ravel().tolist() == [round(DEFAULT_SPIN_US)] * 3  # 3 on 2 CPUs
        for pid in dev.core_pids():
            os.sched_setaffinity(pid, cpus[:1])  # as the stress sweep's "pack" does
        dev.launch(k("report_spin_budget"), out)
        dev.launch(k("report_spin_budget"), out)
        assert dev.to_host(out).ravel().tolist() == [0] * 3  # 3 on 1 CPU: crowded


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to pin the cores onto fewer")
def test_a_crowded_core_notices_more_cpus_once_its_recheck_interval_passed(monkeypatch) -> None:
    # A core whose budget is 0 looks at its CPUs at most every SPIN_RECHECK_S (the check would
    # delay the cores queued behind it after every launch): spread out again, it looks again.
    monkeypatch.delenv(SPIN_ENV, raising=False)
    options = RuntimeOptions(gm_segment_bytes=OPTIONS.gm_segment_bytes, launch_timeout_s=40.0)
    cpus = sorted(os.sched_getaffinity(0))[:2]
    with Device(1, options=options) as dev:  # 3 core processes
        for pid in dev.core_pids():
            os.sched_setaffinity(pid, cpus[:1])
        out = filled(dev, "out", (dev.topology.n_cores, 1))
        dev.launch(k("report_spin_budget"), out)
        dev.launch(k("report_spin_budget"), out)
        assert dev.to_host(out).ravel().tolist() == [0] * 3  # 3 on 1 CPU: crowded
        for pid in dev.core_pids():
            os.sched_setaffinity(pid, cpus)
        spread = [round(DEFAULT_SPIN_US)] * 3  # 3 on 2 CPUs

        def budgets_spread() -> bool:
            # A launch makes each core look again once SPIN_RECHECK_S has passed since its last look.
            dev.launch(k("report_spin_budget"), out)
            return dev.to_host(out).ravel().tolist() == spread

        wait_until(budgets_spread, 100 * SPIN_RECHECK_S, interval=SPIN_RECHECK_S / 5,
                   what="the cores' spin budgets back to the default")
