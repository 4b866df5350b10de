"""Small names kernels take from headers by other names (kernel_utils.h, kernel_type.h, securec.h,
impl/dav_c220/kernel_operator_reg_others_impl.h ...), on a kernel of our own: the ge::DataType values,
ONE_BLK_FLOAT_NUM, memcpy_s / memset_s, the scalar Cast between float and bfloat16_t, Trap, and
DataCopyPad's copy parameters as braced lists of four (DataCopyParams) and five (DataCopyExtParams),
DataCopyPadGm2UBImpl on raw addresses, WaitPreTaskEnd / SetNextTaskStart (once per core) and
Conditional."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]


def _launch(mode: int):
    k = kernel("small_names.cpp", "small_names")
    with device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.full(32, -7.0, np.float32))
        ws = dev.to_device("ws", np.arange(32, dtype=np.float32) + 100)
        dev.launch(k, out, ws, mode)
        return dev.to_host(out)


def test_small_names_compute_what_they_are_documented_to() -> None:
    out = _launch(0)
    assert out[:8].tolist() == [29.0, 36.0, 8.0, 15.0, 1.0, 11.0, 2.5, -1.25]
    # four values: 6 floats; five values: 5; a named DataCopyExtParams of four: 3. The rest untouched.
    assert out[8:14].tolist() == list(np.arange(100, 106, dtype=np.float32))
    assert out[14:16].tolist() == [-7.0, -7.0]
    assert out[16:21].tolist() == list(np.arange(116, 121, dtype=np.float32))
    assert out[21:24].tolist() == [-7.0] * 3
    assert out[24:27].tolist() == list(np.arange(124, 127, dtype=np.float32))
    # DataCopyPadGm2UBImpl: ws[28..31]'s bytes as words, then out at out[27]; out[31] untouched
    assert out[27:31].tolist() == list(np.arange(128, 132, dtype=np.float32))
    assert out[31] == -7.0


def test_trap_ends_the_launch_at_the_kernels_line() -> None:
    with pytest.raises(KernelError) as ei:
        _launch(1)
    line = line_of("small_names.cpp", "if (mode == 1) Trap();")
    assert f"Trap() called: the kernel stopped the core at ascendc_kernels/small_names.cpp:{line}" in str(ei.value)


def test_wait_pre_task_end_twice_on_a_core_is_an_error_at_the_line() -> None:
    with pytest.raises(KernelError, match="WaitPreTaskEnd: called a second time on this core") as ei:
        _launch(2)
    line = line_of("small_names.cpp", "if (mode == 2) WaitPreTaskEnd<true>();")
    assert f"ascendc_kernels/small_names.cpp:{line}" in str(ei.value)
