"""The reply board (mpnpu.runtime.replies): finished cores leave their replies in shared memory and
only the launch's last core sends a message, so a launch wakes the parent once.

What must hold: every core's reply reaches the parent exactly once (from a row or from a message,
never both, or a message would be left in a pipe for the next launch); what a row cannot hold (a
traced launch's events, many flags) still arrives whole; a failure is still reported at once.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import time

import numpy as np
import pytest

from mpnpu import LaunchOptions
from mpnpu.errors import DeadlockError, KernelError
from mpnpu.runtime.protocol import ErrorReport, LaunchDone, LaunchFailed
from mpnpu.runtime.replies import ROW_FLAGS, ReplyBoard
from mpnpu.runtime.sync import USABLE_FLAG_IDS
from tests.runtime_util import OPTIONS, device, k

pytestmark = pytest.mark.usefixtures("no_leaks", "time_limit")


def _board(n: int) -> ReplyBoard:
    return ReplyBoard(multiprocessing.get_context("fork"), n)


def test_every_core_but_the_last_leaves_its_reply_on_the_board() -> None:
    board = _board(3)
    board.reset()
    done = [LaunchDone(7, c, 0.001 * (c + 1), None, ((2, c),)) for c in range(3)]
    assert [board.post(c, done[c], 1.0) for c in (2, 0, 1)] == [True, True, False]  # core 1 finished last
    assert board.all_done()
    assert board.read(2, 7) == done[2] and board.read(0, 7) == done[0]
    assert board.read(1, 7) is None  # the last core's reply is its message only
    assert board.read(0, 8) is None  # a row answers only the launch it was written for


def test_a_reply_a_row_cannot_hold_counts_but_is_sent() -> None:
    board = _board(2)
    board.reset()
    many = tuple((2, i) for i in range(ROW_FLAGS + 1))
    assert board.post(0, LaunchDone(1, 0, 0.0, None, many), 1.0) is False
    assert board.post(1, LaunchDone(1, 1, 0.0, ("event",), ()), 1.0) is False  # a traced reply
    assert board.all_done() and board.read(0, 1) is None and board.read(1, 1) is None


def test_a_failure_is_sent_and_counts() -> None:
    board = _board(2)
    board.reset()
    report = ErrorReport("ValueError", "boom", "", None, False)
    assert board.post(0, LaunchFailed(1, 0, report), 1.0) is False
    done = LaunchDone(1, 1, 0.0, None, ())
    assert board.post(1, done, 1.0) is False  # the failed core counted: this one is the last, and sends
    assert board.all_done() and board.read(1, 1) is None


def test_reset_starts_the_count_again() -> None:
    board = _board(2)
    for launch_id in (1, 2):
        board.reset()
        assert board.post(0, LaunchDone(launch_id, 0, 0.0, None, ()), 1.0) is True
        assert board.post(1, LaunchDone(launch_id, 1, 0.0, None, ()), 1.0) is False


def test_a_launch_takes_every_reply_once_and_leaves_no_message_behind() -> None:
    with device(2) as dev:
        x = dev.to_device("x", np.zeros(8, np.float32))
        for _ in range(20):
            result = dev.launch(k("fill_kernel"), dev.empty("t", 8, "int32"), 3)
            assert len(result.core_elapsed_s) == dev.topology.n_cores
        pool = dev._state.pool
        assert pool is not None
        # all but one core answered through the board, and no pipe holds an unread reply
        rows = [pool.sync.replies.read(c, result.launch_id) for c in range(dev.topology.n_cores)]
        assert sum(r is not None for r in rows) == dev.topology.n_cores - 1
        assert not any(conn.poll(0) for conn in pool.conns)
        dev.free(x)


def test_flags_of_a_reply_too_long_for_a_row_are_still_cleared() -> None:
    ids = list(USABLE_FLAG_IDS)
    assert 2 * len(ids) > ROW_FLAGS  # (this core's reply must go through its pipe)
    with device(1) as dev:
        dev.launch(k("set_many_flags"), 0, ids)
        with pytest.raises(DeadlockError):  # a stale mode-2 set would satisfy this wait
            dev.launch(k("wait_flag_once"), "cube", 0, ids[0], 2)


def test_a_traced_launch_brings_every_cores_events() -> None:
    with device(1) as dev:
        t = dev.empty("t", 8, "int32")
        result = dev.launch_with(LaunchOptions(trace=True), k("fill_kernel"), t, 5)
        assert result.trace is not None and len(result.trace.events) == dev.topology.n_cores


def test_one_core_failing_is_reported_without_waiting_for_a_tick() -> None:
    # A failed core counts itself done, so the last of the others still wakes the parent: with a
    # 5 s watchdog tick and grace, an error that waited for either would take 5 s.
    slow = dataclasses.replace(OPTIONS, watchdog_interval_s=5.0, failure_grace_s=5.0)
    with device(2, options=slow) as dev:
        t0 = time.monotonic()
        with pytest.raises(KernelError, match="boom from vector block 1"):
            dev.launch(k("raise_on"), 1, False)
        assert time.monotonic() - t0 < 3.0
        dev.launch(k("empty_kernel"))  # the device works on


@pytest.mark.slow
def test_replies_are_found_when_the_count_could_not_be_taken() -> None:
    # The other cores' counts time out while one core holds the board's lock: they send, nobody is
    # last, and the holder's row is found on the parent's tick.
    quick = dataclasses.replace(OPTIONS, sync_timeout_s=0.3)
    with device(1, options=quick) as dev:
        result = dev.launch(k("hold_reply_lock"), 0, 0.8)
        assert len(result.core_elapsed_s) == dev.topology.n_cores
        dev.launch(k("empty_kernel"))
