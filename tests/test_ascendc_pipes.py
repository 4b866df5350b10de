"""Asynchronous pipes in C++ kernels: a missing intra-core sync races for real (not only in
racecheck), and with the pipes run in order (RuntimeOptions(pipes="sync")) it cannot show."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import OPTIONS, device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]
DEQUE = f"early_read.cpp:{line_of('early_read.cpp', 'a = in.DeQue<float>();')}"


def _runs(drop=(), pipes="kernel", runs=20, trace=False):
    k = kernel("early_read.cpp", "early_read")
    wrong, last = 0, None
    with device(2, kernel_type=KernelType.AIV, options=replace(OPTIONS, pipes=pipes)) as dev:
        for i in range(runs):
            x = dev.to_device("x", np.random.default_rng(i).standard_normal(8 * 512).astype(np.float32))
            y = dev.empty("y", 8 * 512, "float32")
            last = dev.launch_with(LaunchOptions(drop_syncs=drop, trace=trace), k, x, y, 8, 512)
            wrong += not np.array_equal(dev.to_host(y), 2 * dev.to_host(x))
            dev.free(x, y)
    return wrong, last


def test_the_queue_orders_the_pipes() -> None:
    wrong, _ = _runs()
    assert wrong == 0


def test_without_the_dequeue_the_vector_read_overtakes_the_copy_for_real() -> None:
    # The copy waits on PIPE_MTE2's queue while Add (inline on PIPE_V) reads the buffer: without the
    # DeQue's wait every tile but a late one reads stale bytes. Bound: at least half the runs wrong
    # (measured here: 20 of 20).
    wrong, _ = _runs(drop=(DEQUE,))
    assert wrong >= 10


def test_with_the_pipes_in_order_the_race_cannot_show_but_racecheck_still_finds_it() -> None:
    wrong, last = _runs(drop=(DEQUE,), pipes="sync", runs=5, trace=True)
    assert wrong == 0
    local = [h for h in analyze(last.trace) if h.scope == "local"]
    assert any(h.kind == "RAW" and h.first.pipe == "PIPE_MTE2" and h.second.pipe == "PIPE_V" for h in local)


def test_a_queued_wait_no_set_satisfies_names_its_line_and_function() -> None:
    from mpnpu.errors import KernelError

    k = kernel("queued_wait.cpp", "queued_wait")
    line = line_of("queued_wait.cpp", "the wait no set satisfies")
    with device(1, kernel_type=KernelType.AIV, options=OPTIONS) as dev:
        x = dev.to_device("x", np.zeros(8, np.float32))
        with pytest.raises(KernelError) as err:
            dev.launch(k, x)
    assert "queued on its pipe waits for an event no SetFlag issued before it raises" in str(err.value)
    assert f"queued_wait.cpp:{line} (WaitNeverSet)" in str(err.value)
