"""The vector API inside a real launch: a kernel built by mpnpu.ascendc runs on two vector cores
of a Device, computes what the reference says, plain launches after launches (with the native
serving loop on and off), and its trace records feed the race checker (a missing V -> MTE3 sync is
reported at the kernel's own lines)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import find_compiler

from mpnpu.runtime.config import LaunchOptions

KERNEL = Path(__file__).parent / "kernels" / "vector_chain.cpp"
N = 2048


def expected(x: np.ndarray) -> np.ndarray:
    t = x.astype(np.float32) * np.float32(2)
    t = t.reshape(-1, 64)
    t[:, :32] += np.float32(1)  # the bit mask: the low 32 lanes of each 64-lane repeat
    return np.exp(t.reshape(-1))


@pytest.mark.parametrize("drop", [False, True], ids=["queues", "no-out-queue"])
def test_vector_kernel_launch(no_leaks, serve_modes, drop):
    if find_compiler() is None:
        pytest.skip("no C++ compiler (g++, clang++ or c++ on PATH, or $CXX)")
    from mpnpu.ascendc import compile_kernel
    from mpnpu.racecheck import analyze
    from mpnpu.runtime.device import Device
    from mpnpu.runtime.topology import KernelType

    k = compile_kernel(str(KERNEL), "vector_chain", defines={"DROP_OUT_QUEUE": 1} if drop else None)
    with Device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.gm.alloc("x", (2 * N,), np.float16)
        z = dev.gm.alloc("z", (2 * N,), np.float32)
        xv = np.random.default_rng(0).uniform(-1, 1, 2 * N).astype(np.float16)
        dev.gm.write(x, xv)
        for _ in range(3):  # plain launches: after the first, served natively unless serving is off
            dev.gm.write(z, np.zeros(2 * N, np.float32))
            dev.launch(k, x, z)
            np.testing.assert_allclose(dev.gm.read(z), expected(xv), rtol=2e-6)
        r = dev.launch_with(LaunchOptions(trace=True), k, x, z)
        np.testing.assert_allclose(dev.gm.read(z), expected(xv), rtol=2e-6)
        hazards = analyze(r.trace)
    if not drop:
        assert hazards == []
        return
    (h,) = hazards
    assert (h.kind, h.scope, h.first.pipe, h.second.pipe) == ("RAW", "local", "PIPE_V", "PIPE_MTE3")
    assert h.first.site.endswith("vector_chain.cpp:29") and h.second.site.endswith("vector_chain.cpp:39")
