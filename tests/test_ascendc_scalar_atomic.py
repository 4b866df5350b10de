"""Scalar atomics (AtomicAdd/Max/Min/Cas/Exch) of several vector cores on one GM element: each
read-modify-write is indivisible and returns the value before it; the race detector does not pair
two cores' atomics."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]


def test_scalar_atomics_of_every_core_on_one_element() -> None:
    k = kernel("scalar_atomics.cpp", "scalar_atomics")
    with device(4, kernel_type=KernelType.AIV) as dev:
        for _ in range(3):
            counts = dev.to_device("counts", np.array([10, 5], np.int32))
            fmax = dev.to_device("fmax", np.array([-1.0], np.float32))
            words = dev.to_device("words", np.array([0, 99], np.uint32))
            olds = dev.empty("olds", 16, "int32")
            res = dev.launch_with(LaunchOptions(trace=True), k, counts, fmax, words, olds)
            c, f, w = dev.to_host(counts), dev.to_host(fmax), dev.to_host(words)
            o = dev.to_host(olds).reshape(4, 4)
            assert c.tolist() == [14, -3] and f.tolist() == [4.5]
            assert sorted(o[:, 0].tolist()) == [10, 11, 12, 13]  # AtomicAdd: every old value once
            assert max(o[:, 1].tolist()) <= 9 and -2 in o[:, 1].tolist()  # someone saw the initial -1.0
            winners = [b for b in range(4) if o[b, 2] == 0]  # AtomicCas: exactly one claims 0
            assert len(winners) == 1 and w[0] == winners[0] + 1
            assert sorted([*o[:, 3].tolist(), int(w[1])]) == [0, 1, 2, 3, 99]  # AtomicExch: a chain
            assert [h for h in analyze(res.trace) if h.tensor in ("counts", "fmax", "words")] == []
            dev.free(counts, fmax, words, olds)
