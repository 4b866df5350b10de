"""A barrier a kernel builds out of GM flag words and a polling loop (tests/ascendc_kernels/poll_barrier.cpp):
racecheck's rule of polled GM (mpnpu/racecheck/polls.py) orders what the barrier orders (no hazard),
a kernel without the loop, with a single look at the flags, or polling the wrong flags still races,
and the trace keeps a spin's identical rounds only once (the library folds them)."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.racecheck import analyze
from mpnpu.racecheck.polls import poll_reads
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from mpnpu.runtime.trace import Access
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

ROW = 8
SRC = "poll_barrier.cpp"
READ_NEXT = "DataCopy(row, dataGm_[next * ROW], ROW);"
WRITE_ROW = "DataCopy(dataGm_[me_ * ROW], row, ROW);"
POLL = "DataCopyPad(poll, flagGm_, all, pad);"


def _launch(cores: int, mode: int, work: int):
    with device(cores, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(cores * ROW, dtype=np.float32))
        data = dev.to_device("data", np.zeros(cores * ROW, np.float32))
        out = dev.to_device("out", np.zeros(cores * ROW, np.float32))
        flags = dev.to_device("flags", np.zeros(64, np.int32))
        spins = dev.to_device("spins", np.zeros(64, np.int32))
        r = dev.launch_with(LaunchOptions(trace=True), kernel(SRC, "poll_barrier"), x, data, out, flags, spins,
                            mode, work)
        return r, dev.to_host(out).reshape(cores, ROW), dev.to_host(spins)[:cores]


def _site(text: str) -> str:
    return f"ascendc_kernels/{SRC}:{line_of(SRC, text)}"


def _polled_reads(trace, core: int) -> int:
    return sum(1 for ev in trace.events[core] if type(ev) is Access and ev.site == _site(POLL))


@pytest.mark.parametrize("cores", [2, 3])
def test_a_polled_flag_barrier_orders_the_cores(cores: int) -> None:
    # The last core works longer first, so the others spin on its flag; a launch where none spun
    # (the scheduler can delay a core that long) shows nothing about polls and is launched again.
    for _ in range(5):
        r, out, spins = _launch(cores, 0, 200)
        if spins.max() > 3:
            break
    assert spins.max() > 3, spins
    x = np.arange(cores * ROW, dtype=np.float32).reshape(cores, ROW) * 2 + 1
    np.testing.assert_array_equal(out, np.roll(x, -1, axis=0))
    assert analyze(r.trace) == []
    assert poll_reads(r.trace) > 0
    # a spin's identical rounds are recorded once: the first, the last complete one and the last
    for c in range(cores):
        assert _polled_reads(r.trace, c) <= 3 < spins[c] or _polled_reads(r.trace, c) == spins[c] <= 3


def _raw_on_data(hazards) -> bool:
    return any(h.tensor == "data" and h.kind in ("RAW", "WAR")
               and {h.first.site, h.second.site} == {_site(WRITE_ROW), _site(READ_NEXT)} for h in hazards)


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_without_a_real_poll_of_the_right_flags_the_read_races(mode: int) -> None:
    """1: no barrier; 2: one look at the flags (no loop); 3: polling only the flags before one's own."""
    r, _, _ = _launch(3, mode, 20)
    assert _raw_on_data(analyze(r.trace)), analyze(r.trace)


def test_a_scalar_poll_of_a_flag_word_orders_the_cores() -> None:
    """ReadGmByPassDCache in a loop until the next core's WriteGmByPassDCache shows; the last core
    works longer (long enough to cover the core processes' start-up skew), so the core before it spins."""
    for _ in range(5):
        r, out, spins = _launch(2, 4, 3000)
        if spins[0] > 3:
            break
    assert spins[0] > 3, spins
    x = np.arange(2 * ROW, dtype=np.float32).reshape(2, ROW) * 2 + 1
    np.testing.assert_array_equal(out, np.roll(x, -1, axis=0))
    assert analyze(r.trace) == []


def test_a_single_scalar_look_at_the_flag_word_still_races() -> None:
    r, _, _ = _launch(2, 5, 200)
    assert _raw_on_data(analyze(r.trace)), analyze(r.trace)


def _probed(mode: int, work: int):
    """Mode ``mode`` on 2 cores, traced, then its first looks probed (mpnpu.racecheck.poll_probe), each
    probe a launch from the same GM with the writer held: (trace, trace with what the probes showed,
    probes, spins of the launch)."""
    from mpnpu.racecheck.poll_probe import probe_first_looks

    cores = 2
    x0 = np.arange(cores * ROW, dtype=np.float32)
    with device(cores, kernel_type=KernelType.AIV) as dev:
        k = kernel(SRC, "poll_barrier")
        args = [dev.to_device("x", x0), dev.to_device("data", np.zeros(cores * ROW, np.float32)),
                dev.to_device("out", np.zeros(cores * ROW, np.float32)), dev.to_device("flags", np.zeros(64, np.int32)),
                dev.to_device("spins", np.zeros(64, np.int32))]

        def fresh() -> None:
            for a, v in zip(args[1:], (np.zeros(cores * ROW, np.float32), np.zeros(cores * ROW, np.float32),
                                       np.zeros(64, np.int32), np.zeros(64, np.int32))):
                dev.gm.write(a, v)

        r = dev.launch_with(LaunchOptions(trace=True), k, *args, mode, work)
        spins = dev.to_host(args[4])[:cores].copy()

        def relaunch(plan):
            fresh()
            return dev.launch_with(LaunchOptions(trace=True, hold=plan), k, *args, mode, work).trace

        probed, probes = probe_first_looks(r.trace, relaunch)
    return r.trace, probed, probes, spins


def test_a_loop_that_found_its_flag_at_its_first_look_is_shown_a_poll_by_a_probe() -> None:
    """Mode 6: the last core works longer, then polls its neighbour's flag at a line of its own and finds
    it set at once. The launch alone cannot tell that read from a racy one, so the RAW on data is reported;
    a probe holds the neighbour before its flag until that read is made, the core spins, and the launch's
    analysis with that line as a poll site has no hazard."""
    for _ in range(5):
        trace, probed, probes, spins = _probed(6, 3000)
        if spins[1] == 1:  # (the first look found the flag set: the case the probe is for)
            break
    assert spins[1] == 1, spins
    assert _raw_on_data(analyze(trace)), analyze(trace)
    (probe,) = probes
    assert probe.spun and probe.look.reader == 1 and probe.look.writer == 0, probe
    assert probe.look.key in probed.poll_sites
    assert analyze(probed) == []
    # A probe that fails (no trace) shows nothing; a verdict known from an earlier launch of the kernel
    # is used without a probe, and one a probe gives is remembered.
    from mpnpu.racecheck.poll_probe import probe_first_looks

    same, failed = probe_first_looks(trace, lambda plan: None)
    assert same is trace and [p.spun for p in failed] == [False]

    def never(plan):
        raise AssertionError("probed again")

    known = {probe.look.key: True}
    again, none = probe_first_looks(trace, never, known=known)
    assert none == [] and again.poll_sites == probed.poll_sites
    remembered: dict = {}
    probe_first_looks(trace, lambda plan: None, known=remembered)
    assert remembered == {}  # (a failed probe is no verdict)


def test_a_single_look_stays_a_race_after_its_probe() -> None:
    """Mode 5: one look, no loop. The probe's held writer makes the reader read the old flag and move on:
    no spin, no poll site, and the race on data stays."""
    trace, probed, probes, _ = _probed(5, 200)
    assert probes and not any(p.spun for p in probes), probes
    assert probed.poll_sites == frozenset()
    assert _raw_on_data(analyze(probed)), analyze(probed)
