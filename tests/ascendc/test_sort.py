"""Sort32 and MrgSort (mpnpu/vector/sort.h) on a kernel of our own against a numpy reference: records
of (score, index), largest score first, ties in their order; merges of 4 and 2 queues and a merge that
stops at the first exhausted queue; a validBit the pages do not list is an error at the line."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]


def _scores(dt) -> np.ndarray:
    rng = np.random.default_rng(7)
    s = rng.integers(-20, 20, 128).astype(dt)  # (repeated values: ties exercised)
    return s


def _records(scores: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """(score, index) records as 8-byte rows: score in the low bytes (half: 2 bytes, then 2 zero bytes)."""
    out = np.zeros((len(scores), 8), np.uint8)
    sz = scores.dtype.itemsize
    out[:, :sz] = scores.view(np.uint8).reshape(-1, sz)
    out[:, 4:] = idx.astype(np.uint32).view(np.uint8).reshape(-1, 4)
    return out


def _sorted_desc(scores: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(-scores.astype(np.float64), kind="stable")
    return scores[order], idx[order]


def _run(dt, mode: int):
    scores = _scores(dt)
    idx = np.arange(128, dtype=np.uint32)
    with device(1, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", scores)
        i = dev.to_device("idx", idx)
        y = dev.to_device("y", np.zeros(2 * 128 * 8, np.uint8))
        r = dev.launch_with(LaunchOptions(trace=True), kernel("sort.cpp", "sort_kernel"), x, i, y,
                            int(dt == np.float16), mode)
        got = dev.to_host(y).reshape(2, 128, 8)
    return r, scores, idx, got


@pytest.mark.parametrize("dt", [np.float32, np.float16], ids=["float", "half"])
@pytest.mark.parametrize("mode", [0, 1, 2], ids=["four", "two", "suspend"])
def test_sort32_then_mrgsort(dt, mode: int) -> None:
    r, scores, idx, got = _run(dt, mode)
    groups = [_sorted_desc(scores[g * 32:(g + 1) * 32], idx[g * 32:(g + 1) * 32]) for g in range(4)]
    sort32 = np.concatenate([_records(s, i) for s, i in groups])
    np.testing.assert_array_equal(got[0], sort32)
    queues = groups[:2] if mode == 1 else groups
    # the merge: largest first, ties to the earlier queue (a stable sort of the queues one after another)
    all_s = np.concatenate([s for s, _ in queues])
    all_i = np.concatenate([i for _, i in queues])
    ms, mi = _sorted_desc(all_s, all_i)
    if mode == 2:  # stop when the first queue runs out: at the first of the queues' last records taken
        taken = [0] * 4
        n = 0
        for i_ in mi:
            q = int(i_) // 32
            taken[q] += 1
            n += 1
            if taken[q] == 32:
                break
        ms, mi = ms[:n], mi[:n]
    want = np.zeros((128, 8), np.uint8)
    want[:len(ms)] = _records(ms, mi)
    np.testing.assert_array_equal(got[1], want)
    assert analyze(r.trace) == []


def test_a_validbit_not_listed_is_an_error_at_the_line() -> None:
    with pytest.raises(KernelError) as ei:
        _run(np.float32, 3)
    msg = str(ei.value)
    assert "MrgSort: validBit 5 is not 3, 7 or 15" in msg, msg
    assert f"sort.cpp:{line_of('sort.cpp', '// the merge')}" in msg, msg
