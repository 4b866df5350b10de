"""The trace board (mpnpu.runtime.trace_board): a traced launch's events reach the parent through
shared memory, and through the pipe when they do not fit (or the board is off), with the same trace."""

from __future__ import annotations

import pickle

import pytest

from mpnpu.operators.protocol import device_for
from mpnpu.operators.registry import load_operator
from mpnpu.runtime import trace_board
from mpnpu.runtime.trace_board import TraceBoard
from tests import compact

pytestmark = [pytest.mark.usefixtures("no_leaks", "time_limit"), pytest.mark.time_limit(120)]


def test_what_a_core_puts_the_parent_takes_once() -> None:
    board = TraceBoard(3, area_bytes=4096)
    events = [("R", 1, 2.5), b"x" * 100]
    assert board.put(1, events)
    assert board.take(0) is None and board.take(2) is None  # other cores put nothing
    assert pickle.loads(board.take(1)) == events
    assert board.take(1) is None  # taken: the area is free for the next launch
    board.close()


def test_events_that_do_not_fit_go_on_the_pipe() -> None:
    board = TraceBoard(1, area_bytes=64)
    assert not board.put(0, b"x" * 64)  # (with its pickle header and the length word: too big)
    assert board.take(0) is None
    board.close()


def test_a_board_sent_to_a_process_that_was_not_forked_is_off() -> None:
    board = TraceBoard(2)
    copy = pickle.loads(pickle.dumps(board))
    assert board.enabled and not copy.enabled
    assert not copy.put(0, [1]) and copy.take(0) is None
    board.close()


def _traces(op, n: int) -> list:
    """The events of ``n`` traced launches on a new device, less what differs between devices and
    launches (GM segment names, times)."""
    out = []
    with device_for(op, 1) as dev:
        for index in range(n):
            _, launch = op.run(dev, op.make_case(0, index), drop_syncs=frozenset(), trace=True)
            out.append([[_comparable(e) for e in evs] for evs in launch.trace.events])
    return out


def _comparable(ev: object) -> object:
    fields = {f: None for f in ("segment", "t0", "t1") if f in getattr(ev, "_fields", ())}
    return ev._replace(**fields) if fields else ev  # type: ignore[attr-defined]


def test_the_trace_is_the_same_through_the_board_and_through_the_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    op = load_operator(compact.ref())
    taken: list[bool] = []
    real_take = TraceBoard.take

    def take(self: TraceBoard, core_id: int) -> bytes | None:
        got = real_take(self, core_id)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(TraceBoard, "take", take)
    on_board = _traces(op, 2)
    assert taken and all(taken)  # every core's events came through the board
    taken.clear()
    monkeypatch.setattr(trace_board, "DEFAULT_AREA_BYTES", 16)  # nothing fits: every trace on the pipe
    on_pipe = _traces(op, 2)
    assert not taken
    assert on_board == on_pipe
    assert all(any(evs for evs in t) for t in on_board)
