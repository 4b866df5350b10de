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
        got = dev.to_host(out)[:8].tolist()
    # AlignUp(10, 8), DivCeil(10, 4), Std::max + Std::is_same_v + Conditional, ToFloat(bf16 1.5), C0 of
    # 2-byte type, the last element InitGlobalMemory wrote, one InitOutput wrote over it
    assert got == [16.0, 3.0, 7.75, 1.5, 16.0, 2.5, 4.0, 6.0]


def test_a_failed_assert_is_one_line_at_the_kernels_line() -> None:
    k = kernel("utils_names.cpp", "utils_names")
    with device(2, kernel_type=KernelType.AIV) as dev:
        out, ws = dev.empty("out", 8, "float32"), dev.empty("ws", 64, "float32")
        with pytest.raises(KernelError) as ei:
            dev.launch(k, out, ws, 1)
    line = line_of("utils_names.cpp", "ASSERT(fail_assert")
    assert f"ASSERT(fail_assert == 0) failed at ascendc_kernels/utils_names.cpp:{line}" in str(ei.value)


def test_copy_count_and_level0_forms() -> None:
    import numpy as np

    k = kernel("utils_names.cpp", "copy_forms")
    x = np.arange(256, dtype=np.float32) + 0.25
    with device(2, kernel_type=KernelType.AIV) as dev:
        xt, yt = dev.to_device("x", x), dev.empty("y", 512, "float32")
        dev.launch(k, xt, yt)
        y = dev.to_host(yt)
    want_b = np.full(256, -1.0, np.float32)
    want_b[:200] = x[:200]
    want_c = np.full(256, -1.0, np.float32)
    want_c[:64], want_c[64:128] = x[:64], x[128:192]  # the second repeat reads 16 blocks (128 floats) on
    assert np.array_equal(y[:256], want_b) and np.array_equal(y[256:], want_c)


def test_arith_progression_and_shifts() -> None:
    import numpy as np

    k = kernel("utils_names.cpp", "arith_shift")
    with device(2, kernel_type=KernelType.AIV) as dev:
        yt = dev.empty("y", 256, "int32")
        dev.launch(k, yt)
        y = dev.to_host(yt)
    a = -40 + 3 * np.arange(64, dtype=np.int32)
    assert np.array_equal(y[:64], a)
    assert np.array_equal(y[64:128], a >> 1)  # arithmetic for a signed type
    assert np.array_equal(y[128:192].view(np.uint32), a.view(np.uint32) << np.uint32(2))
    progression = np.float32(0.5) + np.float32(0.25) * np.arange(64, dtype=np.float32)
    assert np.array_equal(y[192:].view(np.float32), progression)


def test_power_forms() -> None:
    import numpy as np

    k = kernel("utils_names.cpp", "power_forms")
    x = np.linspace(0.5, 3.0, 64, dtype=np.float32)
    with device(2, kernel_type=KernelType.AIV) as dev:
        xt, yt = dev.to_device("x", x), dev.empty("y", 256, "float32")
        dev.launch(k, xt, yt)
        y = dev.to_host(yt)
    np.testing.assert_allclose(y[:64], x ** 2, rtol=1e-6)
    np.testing.assert_allclose(y[64:128], np.float32(2.0) ** x, rtol=1e-6)
    np.testing.assert_allclose(y[128:192], x ** x, rtol=1e-6)
    n = np.arange(-3, 61, dtype=np.int32)
    assert np.array_equal(y[192:].view(np.int32), n ** 3)  # integers exactly


def test_the_enhanced_copy_is_the_basic_one_here_and_refuses_a_conversion() -> None:
    import numpy as np

    k = kernel("utils_names.cpp", "enhanced_copy")
    x = np.arange(64, dtype=np.float32) + 0.5
    with device(2, kernel_type=KernelType.AIV) as dev:
        xt, yt = dev.to_device("x", x), dev.to_device("y", np.full(64, -1.0, np.float32))
        dev.launch(k, xt, yt, 0)
        y = dev.to_host(yt)
        with pytest.raises(KernelError, match=r"DataCopyEnhancedParams: operands of two types") as ei:
            dev.launch(k, xt, yt, 1)
    # two bursts of two 32-byte blocks, two blocks apart on both sides: blocks 0-1 and 4-5 copied
    copied = [i for i in range(8) if np.array_equal(y[i * 8:(i + 1) * 8], x[i * 8:(i + 1) * 8])]
    assert copied == [0, 1, 4, 5], y
    line = line_of("utils_names.cpp", "// the conversion")
    assert f"utils_names.cpp:{line}" in str(ei.value)
