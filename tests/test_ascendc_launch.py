"""C++ kernels on the multi-process device: identities per kernel type, arguments, faults named at
the kernel's line, cross-core flags and SyncAll, all through the same runtime as Python kernels."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

from mpnpu.errors import CoreDiedError, KernelError, SyncAllNotReachedError, UsageError
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks", "serve_modes")]  # (serving on and off)

# (kernel type, block_dim) -> expected rows (type, block idx) : (idx, num, sub idx, sub num, ration)
CASES = {
    (KernelType.AIV, 3): {("aiv", v): (v, 3, 0, 1, 1) for v in range(3)},
    (KernelType.AIC, 2): {("aic", k): (k, 2, 0, 1, 1) for k in range(2)},
    (KernelType.MIX_1_1, 2): {**{("aiv", v): (v, 2, 0, 1, 1) for v in range(2)},
                              **{("aic", k): (k, 2, 0, 1, 1) for k in range(2)}},
    (KernelType.MIX_1_2, 2): {**{("aiv", v): (v, 2, v % 2, 2, 2) for v in range(4)},
                              **{("aic", k): (k, 2, 0, 1, 1) for k in range(2)}},
}


@pytest.mark.parametrize("kt,block_dim", list(CASES))
def test_identities_follow_the_kernel_type(kt, block_dim) -> None:
    k = kernel("identity.cpp", "identity", kernel_type=kt)
    with device(block_dim, kernel_type=kt) as dev:
        out = dev.to_device("out", np.full(128 * 8, -1, np.int32))
        dev.launch(k, out)
        rows = dev.to_host(out).reshape(128, 8)
    seen = {}
    for r in range(128):
        if rows[r, 5] != -1:
            seen[("aiv" if rows[r, 5] == 1 else "aic", int(rows[r, 0]))] = tuple(int(v) for v in rows[r, :5])
    assert seen == CASES[(kt, block_dim)]


def test_another_chip_familys_kernel_type_beside_this_ones_has_no_effect() -> None:
    """A kernel for two families declares KERNEL_TYPE_AIV_ONLY and KERNEL_TYPE_MIX_VECTOR_CORE: the
    type is read as vector-only and the second declaration does not fail the launch."""
    k = kernel("two_families.cpp", "two_families")
    assert k.kernel_type is KernelType.AIV
    with device(3, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.zeros(64, np.int32))
        dev.launch(k, out)
        assert dev.to_host(out)[:4].tolist() == [1, 2, 3, 0]


def test_a_two_phase_sum_is_right_with_its_syncall() -> None:
    k = kernel("two_phase.cpp", "two_phase")
    with device(4, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(4 * 256, dtype=np.float32))
        parts, out = dev.empty("partials", 32, "float32"), dev.empty("out", 8, "float32")
        for _ in range(5):
            dev.launch(k, x, parts, out, 4 * 256)
            assert dev.to_host(out)[0] == np.arange(1024).sum()


@pytest.mark.slow
def test_a_launch_wider_than_the_vector_cores_runs_every_block_with_its_own_index() -> None:
    """On the chip 49 blocks on 48 vector cores run in waves; without SyncAll the blocks are
    independent, and each sees its own GetBlockIdx and the launch's GetBlockNum."""
    k = kernel("identity.cpp", "identity", kernel_type=KernelType.AIV)
    with device(49, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.full(128 * 8, -1, np.int32))
        dev.launch(k, out)
        rows = dev.to_host(out).reshape(128, 8)
    assert rows[:49, :6].tolist() == [[v, 49, 0, 1, 1, 1] for v in range(49)]
    assert (rows[49:] == -1).all()


@pytest.mark.slow
def test_a_syncall_in_a_launch_wider_than_the_cores_is_refused_at_its_line() -> None:
    """The SyncAll would wait for blocks that start only after earlier blocks end: a hang on the chip."""
    k = kernel("two_phase.cpp", "two_phase")
    with device(49, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.ones(49 * 8, dtype=np.float32))
        parts, out = dev.empty("partials", 49 * 8, "float32"), dev.empty("out", 8, "float32")
        with pytest.raises(KernelError) as info:
            dev.launch(k, x, parts, out, 49 * 8)
    line = line_of("two_phase.cpp", "SyncAll();")
    assert f"SyncAll at ascendc_kernels/two_phase.cpp:{line} in a launch of 49 blocks, wider than the " \
           "device's 48 vector cores: on the chip blocks 48..48 start only as earlier blocks end" in str(info.value)


def test_wrong_arguments_are_one_usage_error_before_any_core_runs() -> None:
    k = kernel("two_phase.cpp", "two_phase")
    with device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.zeros(8, np.float32))
        with pytest.raises(UsageError, match=r"takes 4 arguments .*passes 3"):
            dev.launch(k, x, x, x)
        with pytest.raises(UsageError, match=r"argument 4 of kernel two_phase is a uint32_t, got GlobalTensor"):
            dev.launch(k, x, x, x, x)
        with pytest.raises(UsageError, match=r"argument 4 .*-1 does not fit"):
            dev.launch(k, x, x, x, -1)
        with pytest.raises(UsageError, match=r"kernel two_phase is vector-only .*the device is mix 1:2"):
            with device(1) as mixed:
                y = mixed.to_device("y", np.zeros(8, np.float32))
                mixed.launch(k, y, y, y, 8)


def _fault(mode: int, who: int = 1, n: int = 64):
    k = kernel("faults.cpp", "faults")
    with device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.zeros(n, np.float32))
        y = dev.to_device("y", np.zeros(n, np.float32))
        with pytest.raises(Exception) as info:
            dev.launch(k, x, y, n, mode, who)
        # the device is usable again: the same kernel runs cleanly
        dev.launch(k, x, y, n, 0, who)
    return info.value


def test_memcheck_names_the_gm_tensor_the_range_and_the_kernel_line() -> None:
    err = _fault(1)
    assert isinstance(err, KernelError)
    line = line_of("faults.cpp", "mode == 1")
    assert str(err).startswith("vector core 1 (block 1) raised MemcheckError: illegal read of GM tensor x by "
                               f"DataCopy GM->local at ascendc_kernels/faults.cpp:{line} (faults): elements [56, 120)")
    assert "of a tensor of 64 float32 elements" in str(err)


def test_memcheck_names_a_local_buffer_overrun() -> None:
    err = _fault(2)
    line = line_of("faults.cpp", "mode == 2")
    assert f"illegal write of UB by SetValue at ascendc_kernels/faults.cpp:{line} (faults)" in str(err)
    assert "bytes [1024, 1028) of UB, outside the buffer it was taken from, bytes [0, 1024)" in str(err)


@pytest.mark.parametrize("mode,signal", [(3, "SIGSEGV"), (4, "SIGABRT")])
def test_a_crashing_kernel_is_a_device_error_naming_the_core_and_its_last_line(mode, signal) -> None:
    err = _fault(mode)
    assert isinstance(err, CoreDiedError)
    assert str(err).startswith(f"vector core 1 (block 1) died during faults (faults.cpp) (killed by signal {signal}) "
                               "at ascendc_kernels/faults.cpp:")
    assert "(faults), the last kernel API call before the fault" in str(err)
    if signal == "SIGSEGV":  # (where the faulting access is: mpnpu's builds have no line table, so its function)
        assert "; fault address 0x0; the faulting access is in faults (libfaults.so was built without -g" in str(err)


def test_a_cxx_exception_is_a_kernel_error() -> None:
    err = _fault(5)
    assert isinstance(err, KernelError) and "the kernel threw kernel gave up" in str(err)


def test_a_skipped_syncall_is_reported_not_hung() -> None:
    err = _fault(6)
    assert isinstance(err, SyncAllNotReachedError)
    assert "vector core 1 (block 1) finished the kernel after 0 SyncAll (vector cores only) calls" in str(err)


def test_a_wait_nothing_raised_is_named_at_its_line() -> None:
    err = _fault(7)
    line = line_of("faults.cpp", "mode == 7")
    assert ("WaitFlag<HardEvent::MTE2_V>(3) waits for an event no SetFlag issued before it raises: "
            "the device would hang") in str(err)
    assert f"at ascendc_kernels/faults.cpp:{line} (faults)" in str(err)


def test_dequeue_of_an_empty_queue_is_named() -> None:
    err = _fault(8)
    assert "TQue::DeQue: nothing is enqueued (the device would hang)" in str(err)


def test_mode2_handshake_with_waits_that_name_no_mode() -> None:
    k = kernel("flags_mix.cpp", "handshake")
    assert k.kernel_type is KernelType.MIX_1_2
    with device(2) as dev:
        out = dev.to_device("out", np.zeros(64, np.int32))
        for rounds in (1, 9):
            dev.launch(k, out, rounds)
            assert list(dev.to_host(out)[:4]) == [rounds] * 4



def _maps() -> int:
    with open(f"/proc/{os.getpid()}/maps") as f:
        return sum(1 for _ in f)


def test_gm_windows_stay_bounded_over_many_allocations() -> None:
    """Every GM allocation a compiled kernel sees gets its own window (two mappings, 4 GiB of
    addresses): a long run with ever new case sizes must not run out of mappings (about 65,000
    per process) or addresses. The windows past the cap are unmapped before the next launch."""
    from mpnpu.ascendc.native.windows import GmWindows

    windows = GmWindows(max_windows=64)
    with device(1, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(4096, dtype=np.float32))
        before = _maps()
        try:
            addresses = set()
            for n in range(1, 400):
                windows.trim()
                addresses.add(windows.address(x.segment, x.root_offset, 4 * n))
                assert len(windows) <= 65
            assert len(addresses) > 64  # every allocation size had a window of its own
            assert _maps() - before <= 2 * 65 + 8  # (a few for whatever else the process mapped)
            # a window in the table shows the segment's bytes
            addr = windows.address(x.segment, x.root_offset, 16)
            assert list((ctypes.c_float * 4).from_address(addr)) == [0.0, 1.0, 2.0, 3.0]
        finally:
            windows.close()
        assert _maps() <= before + 8


def test_pointer_only_launches_follow_their_arguments_and_name_the_tensor_they_fault_on() -> None:
    """The short path of a kernel whose arguments are all GM tensors (what a batch repeats): each
    launch sees its own tensors, whatever order they sit in GM, and a fault still names the tensor
    it reached past, after launches that reused the previous launch's settings."""
    k = kernel("pointer_args.cpp", "weighted_sum", kernel_type=KernelType.AIV)
    rng = np.random.default_rng(3)
    with device(2, kernel_type=KernelType.AIV) as dev:
        ok = dev.to_device("ctl", np.zeros(2, np.int32))
        sets = []
        for _ in range(3):  # allocated c, b, a: addresses run against the argument order
            c, b, a = (dev.to_device(name, rng.standard_normal(8).astype(np.float32)) for name in "cba")
            sets.append((a, b, c, dev.empty("out", 16, np.float32)))
        for _ in range(3):
            for a, b, c, out in sets:
                dev.launch(k, a, b, c, out, ok)
                want = dev.to_host(a) + 2 * dev.to_host(b) + 3 * dev.to_host(c)
                np.testing.assert_allclose(dev.to_host(out), np.concatenate([want, want]), rtol=1e-6)
        # the same tensors again after another kernel's launch used the same core state, and after
        # this process's GM windows were trimmed: each launch still reaches its own tensors
        other = k.with_launch(tiling_key=1)
        for step in range(4):
            a, b, c, out = sets[0]
            dev.gm.write(out, np.zeros(16, np.float32))
            dev.launch(k, a, b, c, out, ok)
            want = dev.to_host(a) + 2 * dev.to_host(b) + 3 * dev.to_host(c)
            np.testing.assert_allclose(dev.to_host(out), np.concatenate([want, want]), rtol=1e-6)
            if step == 1:
                dev.launch(other, *sets[1], ok)
            if step == 2:
                dev.launch(_trim_windows, a)
        bad = dev.to_device("ctl", np.array([1, 1], np.int32))
        # tensors first seen in different launches: their GM windows are not in argument order
        a, b, c, out = sets[0][0], sets[0][1], sets[2][2], sets[1][3]
        with pytest.raises(KernelError) as info:
            dev.launch(k, a, b, c, out, bad)
        line = line_of("pointer_args.cpp", "DataCopy(t, cg[4], 8)")
        assert str(info.value).startswith("vector core 1 (block 1) raised MemcheckError: illegal read of GM tensor "
                                          f"c by DataCopy GM->local at ascendc_kernels/pointer_args.cpp:{line} "
                                          "(weighted_sum): elements [4, 12)")
        dev.launch(k, a, b, c, out, ok)  # the device is usable again


def _trim_windows(x) -> None:
    """(a Python kernel on a C++ kernel's device: unmaps every GM window this core process holds)"""
    from mpnpu.ascendc.native.windows import WINDOWS

    WINDOWS.close()


def _second_call_with_an_array(x) -> None:
    """(a Python kernel) The C++ kernel called twice in this core: with GM tensors, then with a numpy
    array where a pointer goes, which must be the launch's own error."""
    from mpnpu.errors import KernelAPIError

    k = kernel("pointer_args.cpp", "weighted_sum", kernel_type=KernelType.AIV)
    k(x, x, x, x, x)
    k(x, x, x, x, x)  # (the second takes the short path, which records its arguments)
    try:
        k(x, x, x, np.zeros(4, object), x)  # (compares element-wise with what a GM tensor is recorded as)
    except KernelAPIError as e:
        assert "a pointer parameter needs a GM tensor, got ndarray" in str(e), e
    else:
        raise AssertionError("an ndarray argument was accepted")


def test_an_argument_that_is_no_gm_tensor_after_a_good_launch_is_the_launchs_error() -> None:
    with device(2, kernel_type=KernelType.AIV) as dev:
        dev.launch(_second_call_with_an_array, dev.to_device("x", np.zeros(16, np.float32)))


def test_a_kernel_with_numpy_launch_settings_reaches_the_cores() -> None:
    import pickle

    k = kernel("pointer_args.cpp", "weighted_sum", kernel_type=KernelType.AIV)
    again = pickle.loads(pickle.dumps(k.with_launch(tiling_key=np.int64(3), sys_workspace_bytes=np.uint32(64))))
    assert (again.tiling_key, again.sys_workspace_bytes, again.path) == (3, 64, k.path)


@pytest.mark.parametrize("defines,error", [
    ({}, None),
    ({"ADDR": "100"}, "LocalTensor(pos, addr, tileSize): addr 100 is not 32-byte aligned at "
                      f"ascendc_kernels/local_at.cpp:{line_of('local_at.cpp', '// placed here')}"),
    ({"ADDR": "196352", "TILE": "128"}, "bytes [196352, 196864) are past the end of UB (196608 bytes)"),
    # a copy past the placed tile but inside UB does what it says (nothing allocated the tile)
    ({"TILE": "32", "COPY_ONLY": "1"}, None),
    # ... and past the end of UB it is an illegal write
    ({"ADDR": "196480", "TILE": "32", "COPY_ONLY": "1"},
     "illegal write of UB by DataCopy GM->local at ascendc_kernels/local_at.cpp:"
     f"{line_of('local_at.cpp', 'DataCopy(t')} (local_at): bytes [196480, 196736) of UB"),
])
def test_a_local_tensor_placed_by_the_kernel(defines, error) -> None:
    """LocalTensor<T>(TPosition, addr, tileSize): the tensor is at that byte of the position's memory and
    works as any other; a misaligned address or a tile past the memory's end is an error at its line. Its
    accesses are bounded by the memory's end, not by tileSize (nothing allocates a placed tensor)."""
    k = kernel("local_at.cpp", "local_at", kernel_type=KernelType.AIV, **defines)
    with device(1, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(64, dtype=np.float32))
        y = dev.to_device("y", np.zeros(64, np.float32))
        if error is None:
            dev.launch(k, x, y)
            scale = 1 if "COPY_ONLY" in defines else 2
            np.testing.assert_array_equal(dev.to_host(y), scale * np.arange(64, dtype=np.float32))
            return
        with pytest.raises(KernelError) as e:
            dev.launch(k, x, y)
        assert error in str(e.value)


def test_ascendc_assert_ends_the_launch_with_its_message_at_its_line() -> None:
    k = kernel("assert_msg.cpp", "assert_msg", kernel_type=KernelType.AIV)
    with device(1, kernel_type=KernelType.AIV) as dev:
        y = dev.to_device("y", np.zeros(8, np.int32))
        dev.launch(k, y, 64)
        assert dev.to_host(y)[0] == 64
        with pytest.raises(KernelError) as e:
            dev.launch(k, y, 40)
    text = str(e.value)
    assert "ascendc_assert failed: n 40 must be a multiple of 32" in text
    assert f"assert_msg.cpp:{line_of('assert_msg.cpp', '// the check')}" in text
    with device(1, kernel_type=KernelType.AIV) as dev:  # ASCENDC_ASSERT runs its KERNEL_LOG, then ends the launch
        y = dev.to_device("y", np.zeros(8, np.int32))
        with pytest.raises(KernelError) as e:
            dev.launch(k, y, 96)
    assert "ASSERT(n != 96) failed" in str(e.value)
    assert f"assert_msg.cpp:{line_of('assert_msg.cpp', '// the refusal')}" in str(e.value)


def test_scalar_gm_accesses_that_bypass_the_data_cache_and_a_data_sync_barrier() -> None:
    k = kernel("gm_bypass.cpp", "gm_bypass", kernel_type=KernelType.AIV)
    with device(3, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.array([10, 20, 30, 0, 0, 0, 0, 0], np.int32))
        y = dev.to_device("y", np.zeros(8, np.int32))
        dev.launch(k, x, y)
        assert dev.to_host(y)[:4].tolist() == [11, 21, 31, 0]


@pytest.mark.parametrize("defines,unset", [((), 0), (("MPNPU_FRAMEWORK_WORKSPACE",), 1),
                                            (("HAVE_WORKSPACE", "HAVE_TILING"), 1), (("HAVE_WORKSPACE",), 4)])
def test_the_system_workspace_is_the_kernels_own_each_launch_or_the_frameworks(defines, unset) -> None:
    """SetSysWorkspace's pointer holds for its launch only; an operator project's framework (the build
    `mpnpu ut` makes: MPNPU_FRAMEWORK_WORKSPACE) has set it to the workspace argument before the kernel
    runs, as a direct launch's does with HAVE_WORKSPACE: the second-to-last argument with HAVE_TILING,
    else the last. ``unset``: what the kernel sees when it sets none (1 workspace, 4 tiling, 0 null)."""
    k = kernel("sys_workspace.cpp", "sys_workspace", kernel_type=KernelType.AIV, **{d: "1" for d in defines})
    seen = []
    with device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.full(8, -1, np.int32))
        ws = dev.to_device("workspace", np.zeros(1024, np.uint8))
        tiling = dev.to_device("tiling", np.zeros(8, np.uint8))
        for set_it in (1, 0):
            dev.launch(k, out, np.int32(set_it), ws, tiling)
            seen.append(int(dev.to_host(out)[0]))
    assert seen == [2, unset]
