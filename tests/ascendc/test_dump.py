"""The memory dumps of utils/debug/asc_dump.h (mpnpu/dump.h): what each prints, and a dump naming the
wrong memory is an error at the kernel's line."""

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


def test_dumps_print_each_memorys_elements_with_the_callers_number(capfd) -> None:
    k = kernel("dump.cpp", "dump_kernel")
    with device(1, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.array([1, 2.5, -3, 4, 5, 6, 7, 8], np.float32))
        r = dev.launch_with(LaunchOptions(trace=True), k, x, 0)
    out = capfd.readouterr().out
    assert "[asc_dump] aiv0 desc 1: 4 x float in GM\n1 2.5 -3 4\n" in out, out
    assert "[asc_dump] aiv0 desc 2: 4 x float in UB at byte 0\n1 2.5 -3 4\n" in out, out
    assert "[asc_dump] aiv0 desc 3: 8 x half in UB at byte 256\n1 2.5 -3 4 5 6 7 8\n" in out, out
    assert "[asc_dump] aiv0 desc 4: 8 x half in UB at byte 288\n2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5\n" in out, out
    assert analyze(r.trace) == []  # (the dumps read after the barrier: no race)


def test_a_dump_naming_the_wrong_memory_is_an_error_at_its_line() -> None:
    k = kernel("dump.cpp", "dump_kernel")
    with device(1, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.zeros(8, np.float32))
        with pytest.raises(KernelError) as ei:
            dev.launch(k, x, 1)
    msg = str(ei.value)
    assert "asc_dump_ubuf: the address is in GM, not in UB" in msg, msg
    assert f"dump.cpp:{line_of('dump.cpp', '// a GM address')}" in msg, msg
