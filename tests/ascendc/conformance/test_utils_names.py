"""The small names of mpnpu/utils.h on a kernel of our own: what each computes, and an ASSERT that fails
ending the launch with one line at the kernel's line."""

from __future__ import annotations

import pytest

from mpnpu.errors import KernelError
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]


def test_utils_names_compute_what_they_are_documented_to() -> None:
    k = kernel("utils_names.cpp", "utils_names")
    with device(2, kernel_type=KernelType.AIV) as dev:
        out, ws = dev.empty("out", 8, "float32"), dev.empty("ws", 64, "float32")
        dev.launch(k, out, ws, 0)
        got = dev.to_host(out)[:7].tolist()
    # AlignUp(10, 8), DivCeil(10, 4), Std::max + Std::is_same_v, ToFloat(bf16 1.5), C0 of 2-byte type,
    # the last element InitGlobalMemory wrote, one InitOutput wrote over it
    assert got == [16.0, 3.0, 7.5, 1.5, 16.0, 2.5, 4.0]


def test_a_failed_assert_is_one_line_at_the_kernels_line() -> None:
    k = kernel("utils_names.cpp", "utils_names")
    with device(2, kernel_type=KernelType.AIV) as dev:
        out, ws = dev.empty("out", 8, "float32"), dev.empty("ws", 64, "float32")
        with pytest.raises(KernelError) as ei:
            dev.launch(k, out, ws, 1)
    line = line_of("utils_names.cpp", "ASSERT(fail_assert")
    assert f"ASSERT(fail_assert == 0) failed at ascendc_kernels/utils_names.cpp:{line}" in str(ei.value)
