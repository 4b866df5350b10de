"""C++ kernels drive SyncAll and cross-core flags themselves (include/mpnpu/native/native_sync.h) on the core
processes' own sync objects: the same barrier protocol as Python parties, the same flag counters,
the same errors, and what they set is cleared between launches as the runtime's own sets are."""

from __future__ import annotations

import ctypes
import multiprocessing
import random
import subprocess
import threading
import time

import numpy as np
import pytest

from mpnpu.ascendc.build.compiler import INCLUDE_DIR, find_compiler
from mpnpu.ascendc.native import abi
from mpnpu.errors import KernelError
from mpnpu.runtime.sync import SyncObjects, barrier_handles
from mpnpu.runtime.topology import Topology
from tests.ascendc_util import kernel, needs_cxx, source
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks", "serve_modes")]  # (serving on and off)

INCLUDE = INCLUDE_DIR
ROUNDS = 300
TIMEOUT_NS = 10 * 10**9


# (the board's columns and states native syncs write are generated from the runtime's:
# tests/test_ascendc_contract.py)


@pytest.fixture(scope="module")
def barrier_shim(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("shim") / "barrier_shim.so")
    cmd = [*find_compiler(), "-std=c++17", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-I", INCLUDE,
           source("native/barrier_shim.cpp"), "-o", out]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return out


def _native_barrier(barrier) -> abi.NativeBarrier:
    (lock, sleeping, woken, wait_sem, words, parties), view = barrier_handles(barrier)
    b = abi.NativeBarrier(lock, sleeping, woken, wait_sem, words, parties, 0)
    b._keep = view  # type: ignore[attr-defined]
    return b


def _party(barrier, arrived, native_lib: str | None, seed: int, results, spin_ns: int = 0) -> None:
    """ROUNDS barrier waits; before each, count this party in; after each, every party must be in."""
    rng = random.Random(seed)
    wait = None
    if native_lib is not None:
        lib = ctypes.CDLL(native_lib)
        lib.mpnpu_test_barrier_wait.argtypes = [ctypes.POINTER(abi.NativeBarrier), ctypes.c_uint64, ctypes.c_uint64]
        nb = _native_barrier(barrier)
        wait = lambda: lib.mpnpu_test_barrier_wait(ctypes.byref(nb), TIMEOUT_NS, spin_ns)  # noqa: E731
    bad = 0
    for r in range(ROUNDS):
        for _ in range(rng.randrange(2000)):  # a little work of random length: who arrives last varies
            pass
        with arrived.get_lock():
            arrived[r] += 1
        if wait is None:
            barrier.wait(TIMEOUT_NS / 1e9)
        elif wait() != 0:
            results.put(("failed", r))
            return
        if arrived[r] != barrier.parties:
            bad += 1
    results.put(("done", bad))


@pytest.mark.parametrize("spin_ns", [0, 200_000], ids=["sleep", "spin"])
@pytest.mark.parametrize("natives", [1, 2, 3])
def test_native_parties_and_python_parties_share_one_barrier(barrier_shim, natives, spin_ns) -> None:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(3)
    arrived = ctx.Array(ctypes.c_int32, ROUNDS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_party,
                         args=(barrier, arrived, barrier_shim if i < natives else None, i, results, spin_ns))
             for i in range(3)]
    for p in procs:
        p.start()
    try:
        got = [results.get(timeout=60) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    assert got == [("done", 0)] * 3
    assert list(arrived) == [3] * ROUNDS
    words = (ctypes.c_int32 * 2).from_buffer(barrier._array)
    assert list(words) == [0, 0]  # filling, nobody inside


# (a spin longer than the timeout must end at the timeout too)
@pytest.mark.parametrize("spin_ns", [0, 10**10], ids=["sleep", "spin-past-timeout"])
def test_a_native_wait_that_times_out_breaks_the_barrier_for_python_parties(barrier_shim, spin_ns) -> None:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(3)  # the third party never comes
    lib = ctypes.CDLL(barrier_shim)
    lib.mpnpu_test_barrier_wait.argtypes = [ctypes.POINTER(abi.NativeBarrier), ctypes.c_uint64, ctypes.c_uint64]
    nb = _native_barrier(barrier)
    outcome: list[str] = []

    def python_party() -> None:
        try:
            barrier.wait(30)
            outcome.append("passed")
        except threading.BrokenBarrierError:
            outcome.append("broken")

    t = threading.Thread(target=python_party)
    t.start()
    start = time.monotonic()
    assert lib.mpnpu_test_barrier_wait(ctypes.byref(nb), 200_000_000, spin_ns) == 1  # Wait::timeout
    assert time.monotonic() - start < 5.0  # (a spin past the 0.2 s timeout would take 10 s)
    t.join(timeout=30)
    assert outcome == ["broken"]
    assert barrier.broken


@pytest.mark.parametrize("spin_ns", [0, 10**10], ids=["sleep", "spin-past-timeout"])
def test_a_native_wait_on_a_barrier_that_never_drains_times_out(barrier_shim, spin_ns) -> None:
    barrier = multiprocessing.get_context("fork").Barrier(3)
    words = (ctypes.c_int32 * 2).from_buffer(barrier._array)
    words[0], words[1] = 1, 1  # draining, one party still inside that never leaves
    lib = ctypes.CDLL(barrier_shim)
    lib.mpnpu_test_barrier_wait.argtypes = [ctypes.POINTER(abi.NativeBarrier), ctypes.c_uint64, ctypes.c_uint64]
    nb = _native_barrier(barrier)
    got: list[int] = []
    t = threading.Thread(target=lambda: got.append(lib.mpnpu_test_barrier_wait(ctypes.byref(nb), 200_000_000, spin_ns)),
                         daemon=True)
    start = time.monotonic()
    t.start()
    t.join(timeout=30)
    assert not t.is_alive(), "the wait did not return after its timeout"
    assert time.monotonic() - start < 5.0  # (a spin past the 0.2 s timeout would take 10 s)
    assert got == [1]  # Wait::timeout
    assert list(words) == [1, 1]  # it never joined


def test_native_flag_sets_are_cleared_between_launches_and_overflow_as_the_runtime_says() -> None:
    k = kernel("flag_counts.cpp", "flag_counts")
    with device(1) as dev:
        out = dev.to_device("out", np.zeros(8, np.int32))
        for _ in range(3):  # 10 + 10 would overflow if the first launch's sets were left
            dev.launch(k, out, 10)
        with pytest.raises(KernelError) as info:
            dev.launch(k, out, 16)
        assert ("cube core 0 (block 0) raised FlagOverflowError: flag 7 (mode 2) overflows at vector core 0 "
                "(block 0, sub 0): 15 sets not yet waited for") in str(info.value)
        dev.launch(k, out, 15)  # the device is usable again


def test_native_routes_cover_every_usable_flag_of_a_mixed_core() -> None:
    sync = SyncObjects(multiprocessing.get_context("fork"), Topology(1))
    cube, vector = sync.native_routes(0), sync.native_routes(1)
    assert cube is not None and vector is not None
    assert {m for m, _ in cube.flags} == {2}  # a cube core has no mode 1
    assert {m for m, _ in vector.flags} == {1, 2}
    outgoing, incoming = cube.flags[(2, 5)]
    assert [r for r, _, _ in outgoing] == [1, 2] and len(incoming) == 2  # to both vector cores, from both
    assert cube.barrier_all[5] == 3 and cube.barrier_aiv[5] == 2


def test_a_cxx_kernel_may_use_syncalls_flag_ids_but_not_with_a_syncall() -> None:
    """Flag id 12 in a cube -> vector handshake works (the dev kit's own flag sample uses 11-13); the same
    kernel with a SyncAll in the launch is one error naming the flag's line and the SyncAll's."""
    from mpnpu.errors import KernelError
    from tests.ascendc_util import line_of

    k = kernel("flag_ids.cpp", "flag_ids")
    with device(1) as dev:
        out = dev.empty("out", 8, "float32")
        dev.launch(k, out, 0)
        with pytest.raises(KernelError) as ei:
            dev.launch(k, out, 1)
    msg = str(ei.value)
    assert "uses an id the device's SyncAll is built on (11-14), and this launch also calls SyncAll (at " in msg
    assert f"flag_ids.cpp:{line_of('flag_ids.cpp', 'SyncAll<false>')}" in msg
    flag_lines = [line_of("flag_ids.cpp", call) for call in ("CrossCoreSetFlag<", "CrossCoreWaitFlag(")]
    assert any(f"flag_ids.cpp:{line}" in msg for line in flag_lines)
