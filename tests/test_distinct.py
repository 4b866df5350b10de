"""distinct() gives what np.unique gives, without its hashing path."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.runtime.distinct import distinct


def test_distinct_is_np_unique_on_random_integer_arrays() -> None:
    rng = np.random.default_rng(7)
    for dtype in (np.int8, np.int32, np.int64, np.uint16, np.uint64):
        info = np.iinfo(dtype)
        for n in (0, 1, 2, 3, 17, 655, 5000):
            for lo, hi in ((0, 50), (int(info.min), int(info.max))):  # few values; the whole range, signs too
                values = rng.integers(lo, hi, n, dtype=dtype, endpoint=True)
                got = distinct(values)
                want = np.unique(values)
                assert got.dtype == want.dtype and got.tolist() == want.tolist(), (dtype, n, lo, hi)


def test_distinct_of_a_strided_column_and_not_of_a_table() -> None:
    records = np.zeros(40, dtype=[("a", np.int64), ("site", np.int32), ("pad", np.int32)])
    records["site"] = np.arange(40) % 7
    assert distinct(records["site"]).tolist() == list(range(7))
    with pytest.raises(ValueError, match="1-D"):
        distinct(np.zeros((2, 3), dtype=np.int64))  # (np.unique would flatten it)
