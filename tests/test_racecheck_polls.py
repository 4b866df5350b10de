"""Racecheck's rule of polled GM (mpnpu/racecheck/polls.py) on hand-built traces: a poll orders the
writes it observed before what its core does after it; a single read, a fixed number of re-reads
that saw no change, a read that ended before the write began, or a write the poll's bytes do not
cover order nothing. Vector cores 1 and 2 of block_dim 1 (program order: no pipes)."""

from __future__ import annotations

from mpnpu.racecheck import analyze
from mpnpu.racecheck.pairs import hazard_pairs
from mpnpu.racecheck.polls import poll_reads, with_polls
from mpnpu.racecheck.reuse import AnalysisCache
from mpnpu.runtime.trace import READ, WRITE, Access, GmFlagEvent, LaunchTrace, PackedEvents

FLAG = ((0, 4),)
DATA = ((0, 32),)


def acc(kind: str, tensor: str, ranges, site: str, t0: int, t1: int, pipe: str = "") -> Access:
    return Access(kind, tensor, tensor, ranges, 0, 4, "S", site, t0, t1, pipe)


def writer(t_data: int, t_flag: int) -> list:
    """Core 1: writes the data, then the flag."""
    return [acc(WRITE, "data", DATA, "k.py:10", t_data, t_data + 1),
            acc(WRITE, "flags", FLAG, "k.py:11", t_flag, t_flag + 1)]


def reader(poll_times: list[int], t_read: int, site: str = "k.py:20") -> list:
    """Core 2: reads the flag at each of ``poll_times`` (one line), then the data."""
    return [acc(READ, "flags", FLAG, site, t, t + 1) for t in poll_times] + [
        acc(READ, "data", DATA, "k.py:21", t_read, t_read + 1)]


def trace(c1: list, c2: list) -> LaunchTrace:
    return LaunchTrace(1, "k", ((), tuple(c1), tuple(c2)), frozenset())


def data_races(tr: LaunchTrace) -> list:
    return [h for h in analyze(tr) if h.tensor == "data"]


def test_a_poll_that_ends_after_the_flag_lands_orders_the_data() -> None:
    tr = trace(writer(100, 200), reader([50, 150, 250], 300))
    assert analyze(tr) == []  # neither the data nor the flag word itself
    assert poll_reads(tr) == 3
    new = with_polls(tr)
    ops = [(ev.op, ev.target) for evs in new.events for ev in evs if type(ev) is GmFlagEvent]
    assert sorted(ops) == [("observed", 0), ("wait", 1)]


def test_without_the_poll_the_data_races() -> None:
    tr = trace(writer(100, 200), [acc(READ, "data", DATA, "k.py:21", 300, 301)])
    assert [h.kind for h in data_races(tr)] == ["RAW"]


def test_a_single_read_that_sees_the_flag_is_no_poll() -> None:
    tr = trace(writer(100, 200), reader([250], 300))
    assert poll_reads(tr) == 0
    assert [h.kind for h in data_races(tr)] == ["RAW"]


def test_re_reads_that_saw_no_change_are_no_poll() -> None:
    # both reads began after the flag landed: the loop did not stop because of it
    tr = trace(writer(100, 200), reader([250, 260], 300))
    assert poll_reads(tr) == 0
    assert [h.kind for h in data_races(tr)] == ["RAW"]


def test_a_write_that_began_as_the_last_read_ended_is_not_observed() -> None:
    tr = trace(writer(100, 200), reader([50, 150, 199], 300))
    assert [h.kind for h in data_races(tr)] == ["RAW"]


def test_a_write_whose_record_ends_late_is_observed_when_it_began_before_the_last_read_ended() -> None:
    """A core can be descheduled between its store and its record's end: the flag's record [195, 260)
    ends after the last read began, but the loop stopped at that read, and this write is the only one
    that can have landed between the last two reads: the poll observed it (it used to be missed, so a
    two-core scalar flag barrier reported its data as racing now and then)."""
    c1 = [acc(WRITE, "data", DATA, "k.py:10", 100, 101), acc(WRITE, "flags", FLAG, "k.py:11", 195, 260)]
    tr = trace(c1, reader([50, 150, 199], 300))
    assert data_races(tr) == [] and poll_reads(tr) == 3


def test_a_poll_orders_only_what_came_before_the_observed_write() -> None:
    # core 1 writes the data again after its flag: that write is not ordered before core 2's read
    c1 = writer(100, 200) + [acc(WRITE, "data", DATA, "k.py:12", 210, 211)]
    tr = trace(c1, reader([50, 150, 250], 300))
    assert [{h.first.site, h.second.site} for h in data_races(tr)] == [{"k.py:12", "k.py:21"}]


def test_a_write_of_other_bytes_is_not_observed() -> None:
    other = ((4, 8),)
    c1 = [acc(WRITE, "data", DATA, "k.py:10", 100, 101), acc(WRITE, "flags", other, "k.py:11", 200, 201)]
    tr = trace(c1, reader([50, 150, 250], 300))
    assert [h.kind for h in data_races(tr)] == ["RAW"]


def test_one_look_at_a_line_another_core_polled_at_is_a_poll() -> None:
    # cores 1 and 2 both write a flag, then poll both flags at one line; core 2 came last and
    # looked once. Each then reads the other's data.
    flags = ((0, 8),)
    c1 = [acc(WRITE, "data", ((0, 16),), "k.py:10", 100, 101), acc(WRITE, "flags", ((0, 4),), "k.py:11", 110, 111)]
    c1 += [acc(READ, "flags", flags, "k.py:20", t, t + 1) for t in (120, 180, 260)]
    c1 += [acc(READ, "data", ((16, 32),), "k.py:21", 300, 301)]
    c2 = [acc(WRITE, "data", ((16, 32),), "k.py:10", 200, 201), acc(WRITE, "flags", ((4, 8),), "k.py:11", 210, 211)]
    c2 += [acc(READ, "flags", flags, "k.py:20", 220, 221), acc(READ, "data", ((0, 16),), "k.py:21", 300, 301)]
    tr = trace(c1, c2)
    assert analyze(tr) == []
    assert poll_reads(tr) == 4


def test_reuse_tells_launches_with_other_poll_edges_apart() -> None:
    cache = AnalysisCache()
    assert cache.analyze(trace(writer(100, 200), reader([50, 150, 250], 300))) == []
    # the same events, but the last read began before the flag landed: no edge, a race
    raced = cache.analyze(trace(writer(100, 200), reader([50, 150, 180], 300)))
    assert [h.kind for h in raced if h.tensor == "data"] == ["RAW"]
    assert cache.analysed == 2


def test_hazard_pairs_name_the_recorded_positions() -> None:
    # (the rule drops the poll reads and adds sync events: pairs still point into the trace as recorded)
    c1 = writer(100, 200) + [acc(WRITE, "data", DATA, "k.py:12", 210, 211)]
    tr = trace(c1, reader([50, 150, 250], 300))
    [hp] = hazard_pairs(tr)
    assert {p for pair in hp.pairs for p in (pair.first, pair.second)} == {(1, 2), (2, 3)}


def test_a_poll_in_packed_events_is_found_without_decoding_them() -> None:
    c1 = PackedEvents.pack(writer(100, 200))
    c2 = PackedEvents.pack(reader([50, 150, 250], 300))
    tr = LaunchTrace(1, "k", ((), c1, c2), frozenset())
    assert poll_reads(tr) == 3
    assert analyze(tr) == []
    single = PackedEvents.pack(reader([250], 300))
    assert with_polls(LaunchTrace(1, "k", ((), c1, single), frozenset())).events[2] is single
    assert single._events is None  # (not decoded to tell)
