"""TBufPool (TPipe::InitBufPool, TBufPool::InitBuffer / InitBufPool / Reset) through a compiled kernel
of our own: two pools over the same bytes used one after the other give the right results with no
hazard; without the first pool's Reset the second pool's writes race with the first pool's last
accesses to those bytes, and racecheck says so at the lines; a pool asked for too much is an error at
the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import hazard_lines, kernel, line_of, needs_cxx

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]
SRC = "tbufpool.cpp"
N = 1024


def _run(drop: tuple[str, ...] = ()):
    k = kernel(SRC, "pools", kernel_type=KernelType.AIV)
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=N).astype(np.float32), rng.normal(size=N).astype(np.float32)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.empty("out", 2 * N, "float32")
        r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), k, dev.to_device("x", x),
                            dev.to_device("y", y), out)
        return x, y, dev.to_host(out), r.trace


def test_two_pools_over_the_same_bytes_one_after_the_other() -> None:
    x, y, out, trace = _run()
    assert np.array_equal(out[:N], x * 2) and np.array_equal(out[N:], y + 1)
    assert analyze(trace) == []


def test_without_the_reset_the_second_pool_races_with_the_first() -> None:
    reset = line_of(SRC, "first.Reset();")
    _, _, _, trace = _run(drop=(f"{SRC}:{reset}",))
    hazards = analyze(trace)
    lines = hazard_lines(hazards)
    # the first pool's last reads of its bytes, then the second pool's first writes to the same bytes
    assert ("WAR", str(line_of(SRC, "Muls(b, a")), str(line_of(SRC, "DataCopy(c, yg"))) in lines, lines
    assert ("WAR", str(line_of(SRC, "DataCopy(og, b")), str(line_of(SRC, "Adds(d, c"))) in lines, lines


@pytest.mark.parametrize("asked, message", [("1024", "1024 bytes asked with 512 of the pool's 1024 already given out"),
                                            ("512", "gives out at most 2 buffers")])
def test_a_pool_asked_for_too_much_is_an_error_at_the_line(asked: str, message: str) -> None:
    k = kernel(SRC, "overflow", kernel_type=KernelType.AIV, MPNPU_TEST_OVERFLOW=asked)
    line = line_of(SRC, "pool.InitBuffer(two" if asked == "1024" else "pool.InitBuffer(three")
    with Device(1, kernel_type=KernelType.AIV) as dev:
        with pytest.raises(KernelError, match=message) as e:
            dev.launch(k, dev.empty("x", 8, "float32"))
    assert f"{SRC}:{line}" in str(e.value)
