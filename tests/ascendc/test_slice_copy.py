"""DataCopy's slice forms (SliceInfo, GM <-> UB): the elements a slice description selects, in order,
against a numpy reference; racecheck sees the copies on their pipes; a count mismatch is an error at
the kernel's line."""

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


def test_slices_move_the_selected_elements_in_order() -> None:
    x = np.arange(4 * 40, dtype=np.float32).reshape(4, 40)
    with device(1, kernel_type=KernelType.AIV) as dev:
        xd = dev.to_device("x", x.ravel())
        y = dev.to_device("y", np.full(2 * 24, -1, np.float32))
        r = dev.launch_with(LaunchOptions(trace=True), kernel("slice_copy.cpp", "slice_copy"), xd, y, 0)
        got = dev.to_host(y).reshape(2, 24)
    ref = np.full((2, 24), -1, np.float32)
    picked = x[[1, 3]][:, np.r_[4:12, 16:24]]  # rows 1, 3; the pieces of 8 at columns 4 and 16
    ref[:, 4:20] = picked
    np.testing.assert_array_equal(got, ref)
    assert analyze(r.trace) == []


def test_slices_that_count_differently_are_an_error_at_the_line() -> None:
    with device(1, kernel_type=KernelType.AIV) as dev:
        xd = dev.to_device("x", np.zeros(4 * 40, np.float32))
        y = dev.empty("y", 2 * 24, "float32")
        with pytest.raises(KernelError) as ei:
            dev.launch(kernel("slice_copy.cpp", "slice_copy"), xd, y, 1)
    msg = str(ei.value)
    assert "DataCopy: the source slice has 32 elements and the destination slice 16" in msg, msg
    assert f"slice_copy.cpp:{line_of('slice_copy.cpp', 'DataCopy(t, xg, tile, src, 2)')}" in msg, msg
