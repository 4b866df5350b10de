"""MPNPU_KERNEL_UBSAN=1: C++ kernels are built with the undefined-behaviour sanitizer, so undefined
behaviour in a kernel (or in mpnpu's headers under it) ends its core with the sanitizer's report at the
line; such builds are cached apart from the plain ones."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.ascendc.build.compiler import UBSAN_FLAGS, base_flags
from mpnpu.errors import CoreDiedError
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import line_of, needs_cxx, source
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]


def _run(amount: int) -> np.ndarray:
    from mpnpu.ascendc import compile_kernel

    k = compile_kernel(source("ub_shift.cpp"), "ub_shift", kernel_type=KernelType.AIV)
    with device(1, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.full(8, 3, np.int32))
        by = dev.to_device("by", np.array([amount], np.int32))
        dev.launch(k, x, by)
        return dev.to_host(x)


def test_the_sanitizer_flags_join_every_build_only_when_asked(monkeypatch) -> None:
    monkeypatch.delenv("MPNPU_KERNEL_UBSAN", raising=False)
    assert not set(UBSAN_FLAGS) & set(base_flags())
    monkeypatch.setenv("MPNPU_KERNEL_UBSAN", "1")
    assert set(UBSAN_FLAGS) <= set(base_flags())


def test_undefined_behaviour_ends_the_core_with_the_report_at_its_line(monkeypatch, capfd) -> None:
    monkeypatch.setenv("MPNPU_KERNEL_UBSAN", "1")
    assert _run(2)[1] == 12  # a defined shift runs as it would
    with pytest.raises(CoreDiedError, match=r"vector core 0 .*died during ub_shift"):
        _run(40)
    line = line_of("ub_shift.cpp", "// the shift")
    assert f"ub_shift.cpp:{line}:" in capfd.readouterr().err


def test_a_plain_build_runs_the_same_kernel_without_a_report(monkeypatch, capfd) -> None:
    monkeypatch.delenv("MPNPU_KERNEL_UBSAN", raising=False)
    _run(40)  # undefined, so no value is asserted: only that nothing stops it
    assert "runtime error" not in capfd.readouterr().err
