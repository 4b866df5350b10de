"""Traces as cores ship them (mpnpu.runtime.trace.PackedEvents): Python events in columns, a compiled
kernel's records as written (mpnpu.ascendc.native.records); decoded to the same events, compared on
everything but their times without decoding."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from mpnpu.ascendc.native import abi
from mpnpu.ascendc.native.records import RecordChunk
from mpnpu.errors import TraceError
from mpnpu.runtime.trace import (
    READ,
    WRITE,
    Access,
    DroppedSyncEvent,
    EventColumns,
    FlagSetEvent,
    FlagWaitEvent,
    LocalAccess,
    PackedEvents,
    PipeSyncEvent,
    StageEvent,
    StridedRanges,
    SyncAllEvent,
    event_times,
    time_index,
    timing_free_key,
)


def python_events(shift: int = 0) -> list:
    return [
        StageEvent("Init", "k/k.py:1", 10 + shift, 90 + shift),
        Access(WRITE, "x", "seg", ((0, 64),), 0, 4, "Init", "k/k.py:2", 11 + shift, 12 + shift, "PIPE_MTE3",
               "PIPE_MTE3"),
        LocalAccess(READ, "UB", 0, 64, "PIPE_MTE3", "Init", "k/k.py:2"),
        PipeSyncEvent("set", "PIPE_MTE3", "MTE3_MTE2", 0, "", "Init", "k/k.py:3"),
        SyncAllEvent(False, "S1", "Init", "k/k.py:4", 20 + shift, 30 + shift),
        FlagSetEvent(2, 3, "", "Init", "k/k.py:5", 31 + shift, 32 + shift),
        FlagWaitEvent(2, 3, "", "Init", "k/k.py:6", 33 + shift, 34 + shift),
        DroppedSyncEvent("S2", "sync_all", "Init", "k/k.py:7", 35 + shift, 35 + shift),
        Access(READ, "x", "seg", StridedRanges(0, 8, 32, 2), 0, 4, "Init", "k/k.py:8", 40 + shift, 41 + shift),
    ]


def shipped(events: list) -> PackedEvents:
    """As the parent receives them: packed in the core, pickled, unpickled."""
    packed = pickle.loads(pickle.dumps(PackedEvents.pack(events)))
    assert isinstance(packed, PackedEvents)
    return packed


def test_python_events_ship_in_columns_and_decode_to_themselves() -> None:
    events = python_events()
    packed = shipped(events)
    assert [type(p) for p in packed.parts] == [EventColumns]
    assert packed == tuple(events) and list(packed) == events and len(packed) == len(events)
    assert packed[1] == events[1] and packed[2:4] == tuple(events[2:4])
    assert isinstance(packed[-1].ranges, StridedRanges)
    t0, t1 = event_times(packed)
    assert t0.tolist() == [ev.t0 for ev in events] and t1.tolist() == [ev.t1 for ev in events]
    assert time_index(packed).tolist() == list(range(len(events)))
    assert pickle.loads(pickle.dumps(packed)) == packed  # (a decoded one ships its parts again)


def test_packed_events_are_compared_on_everything_but_their_times() -> None:
    key = timing_free_key(shipped(python_events()))
    assert key == timing_free_key(shipped(python_events(shift=1000)))
    other = python_events()
    other[2] = other[2]._replace(stop=65)
    assert key != timing_free_key(shipped(other))
    # the same for events that did not ship (a trace built by hand)
    assert timing_free_key(python_events()) == timing_free_key(python_events(shift=5))
    assert timing_free_key(python_events()) != timing_free_key(other)


def records(*rows: tuple) -> bytes:
    """Records of abi.EVENT_DTYPE: (type, kind, pipe, mem, site, index, aux, start, run, stride, count, t0, t1)."""
    return np.array(list(rows), dtype=abi.EVENT_DTYPE).tobytes()


PIPE = {name: i for i, name in enumerate(abi.PIPE_NAMES)}
SITES = ((0, "op/k.cpp:10", "Copy"), (1, "op/k.cpp:20", "Copy"), (2, "op/k.cpp:30", "Compute"))
REGIONS = (("x", "seg", 256), ("y", "seg", 1024))


def chunk(shift: int = 0, t_none: bool = False) -> RecordChunk:
    t = 0 if t_none else 1
    return RecordChunk(records(
        (abi.EV_GM, ord("R"), PIPE["PIPE_MTE2"], 1, 0, 0, 4, 0, 16, 64, 4, 100 + shift, 110 + shift),
        (abi.EV_FLAG_SET, 0, PIPE["PIPE_MTE3"], 2, 1, 5, 0, 0, 0, 0, 0, t * (120 + shift), t * (121 + shift)),
        (abi.EV_PIPE_SYNC, ord("w"), PIPE["PIPE_V"], 0, 1, 0, 4, 0, 0, 0, 0, 0, 0),
        (abi.EV_LOCAL, ord("W"), PIPE["PIPE_V"], 0, 2, 0, 0, 32, 64, 0, 0, 130 + shift, 140 + shift),
        (abi.EV_DROPPED, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 150 + shift, 150 + shift),
    ), SITES, REGIONS)


def test_a_compiled_kernels_records_decode_to_its_trace_events_with_a_stage_per_function() -> None:
    packed = shipped([chunk()])
    assert [type(p) for p in packed.parts] == [RecordChunk]
    assert list(packed) == [
        StageEvent("Copy", "op/k.cpp:10", 100, 121),
        Access(READ, "x", "seg", StridedRanges(256, 16, 64, 4), 256, 4, "Copy", "op/k.cpp:10", 100, 110,
               "PIPE_MTE2", "PIPE_MTE2"),
        FlagSetEvent(2, 5, "op/k.cpp:20", "Copy", "op/k.cpp:20", 120, 121),
        PipeSyncEvent("xset", "PIPE_MTE3", "", 5, "op/k.cpp:20", "Copy", "op/k.cpp:20", 120, 120),
        PipeSyncEvent("wait", "PIPE_V", abi.HARD_EVENTS[4], 0, "op/k.cpp:20", "Copy", "op/k.cpp:20"),
        StageEvent("Compute", "op/k.cpp:30", 130, 150),
        LocalAccess(WRITE, "UB", 32, 96, "PIPE_V", "Compute", "op/k.cpp:30", 130, 140),
        DroppedSyncEvent("op/k.cpp:30", abi.DROPPED_CALLS[0], "Compute", "op/k.cpp:30", 150, 150),
    ]
    # every event whose times are its record's points at it; a stage, the set's pipe and a pipe
    # sync have times of their own
    assert time_index(packed).tolist() == [-1, 0, 1, -1, -1, -1, 3, 4]
    t0, t1 = event_times(packed)
    assert t0.tolist() == [100, 120, 0, 130, 150] and t1.tolist() == [110, 121, 0, 140, 150]


def test_records_are_compared_on_everything_but_their_times_and_whether_they_were_timed() -> None:
    assert timing_free_key(shipped([chunk()])) == timing_free_key(shipped([chunk(shift=7)]))
    # an untimed record decodes differently (no stage span is made of it): another key
    assert timing_free_key(shipped([chunk()])) != timing_free_key(shipped([chunk(t_none=True)]))
    moved = RecordChunk(chunk().data, SITES, (("x", "seg", 512), REGIONS[1]))
    assert timing_free_key(shipped([chunk()])) != timing_free_key(shipped([moved]))


def test_python_events_around_records_ship_in_order() -> None:
    before, after = python_events()[:2], python_events()[4:6]
    packed = shipped([*before, chunk(), *after])
    assert [type(p) for p in packed.parts] == [EventColumns, RecordChunk, EventColumns]
    decoded = list(packed)
    assert decoded[:2] == before and decoded[-2:] == after and len(decoded) == 2 + 8 + 2
    index = time_index(packed).tolist()
    t0, _ = event_times(packed)
    assert [t0[i] for i in index[:2]] == [10, 11] and t0[index[-1]] == 31 and t0[index[3]] == 100


def test_events_taken_pickled_read_as_the_events_and_travel_without_being_unpickled() -> None:
    packed = PackedEvents.pack(python_events())
    data = pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL)
    # travelling on (the batch's parent to racecheck's analysis process): the bytes as they came
    taken = PackedEvents.pickled(data)
    sent = pickle.dumps(taken, protocol=pickle.HIGHEST_PROTOCOL)
    assert data in sent and taken._parts is None
    arrived = pickle.loads(sent)
    assert type(arrived) is PackedEvents and arrived._parts is not None
    # read where they are: the events, their key and their times, as the core packed them
    for got in (taken, arrived):
        assert got == packed and got.key() == packed.key()
        assert all((a == b).all() for a, b in zip(got.times(), packed.times()))
    # once read, they pickle as their parts
    assert pickle.loads(pickle.dumps(taken)) == packed


def test_pickled_events_that_are_not_packed_events_are_a_trace_error() -> None:
    bad = PackedEvents.pickled(pickle.dumps([1, 2]))
    with pytest.raises(TraceError, match="holds list, not PackedEvents"):
        bad.key()
    with pytest.raises(TraceError, match="holds list, not PackedEvents"):
        pickle.loads(pickle.dumps(bad))
