"""A queue bound from VECIN to VECOUT (``TQueBind<VECIN, VECOUT>``, include/mpnpu/tpipe.h): its plain
EnQue / DeQue order the copy in before the copy out (MTE2 -> MTE3), its trips named by position the
pipes of that trip (``EnQue<GM, VECIN>``: MTE2 -> V; ``EnQue<VECOUT, GM>``: V -> MTE3), and its
FreeTensor the copy out before the next copy in (MTE3 -> MTE2). So a kernel that uses it as
documented (ops-nn's fused_linear_cross_entropy_loss_grad) is right and racecheck finds nothing."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

TILE, TILES = 256, 6


@pytest.mark.parametrize("mode,added", [(0, 0.0), (1, 1.0)])
def test_a_bound_queue_orders_each_trip_and_racecheck_finds_nothing(mode: int, added: float) -> None:
    k = kernel("queue_bind.cpp", "queue_bind")
    x = np.arange(TILES * TILE, dtype=np.float32)
    with device(1, kernel_type=KernelType.AIV) as dev:
        xd, out = dev.to_device("x", x), dev.to_device("out", np.full(TILES * TILE, -1, np.float32))
        r = dev.launch_with(LaunchOptions(trace=True), k, xd, out, TILES, mode)
        np.testing.assert_array_equal(dev.to_host(out), x + added)
    assert analyze(r.trace) == []
