"""Core processes run numpy's BLAS on one thread and start no BLAS thread of their own (a new
OpenBLAS pool's worker busy-waits for ~0.1 s of CPU before it sleeps: every core paid that at its
start, against the launches of a device that had just opened)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from mpnpu.runtime.procutil import _blas_function, _openblas_libs
from tests.runtime_util import device

pytestmark = pytest.mark.usefixtures("no_leaks")


def _blas_on_one_thread(x) -> None:
    """(a kernel) A matrix product big enough for OpenBLAS to split it, then: this core process
    has one thread, and OpenBLAS reports one."""
    a = np.ones((256, 256))
    assert float((a @ a)[0, 0]) == 256.0
    threads = len(os.listdir("/proc/self/task"))
    counts = [int(get()) for get in (_blas_function(lib, "get") for lib in _openblas_libs()) if get is not None]
    if threads != 1 or not counts or any(c != 1 for c in counts):
        raise AssertionError(f"core process: {threads} threads, OpenBLAS thread counts {counts}")


def test_core_processes_use_one_blas_thread_and_start_none() -> None:
    if not _openblas_libs():
        pytest.skip("numpy here does not use OpenBLAS")
    with device(1) as dev:
        x = dev.to_device("x", np.zeros(8, np.float32))
        dev.launch(_blas_on_one_thread, x)
