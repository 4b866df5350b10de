"""The native serving loop (mpnpu/ascendc/native/serve.py, include/mpnpu/serve.h): the plain launches a
batch repeats run in the core processes without their Python, with the same results, replies,
flags and errors as the core process's own path.

Which path a launch took is seen from the parent: a plain launch of a compiled kernel the pool's
cores have run goes as a native command frame ('N'), and a launch the loop ran comes back as a
done reply ('D') from the launch's last core; a launch through the core's Python comes back as a
pickled reply."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from mpnpu.errors import CoreDiedError, KernelError, SyncAllNotReachedError
from mpnpu.runtime import pool as pool_module
from mpnpu.runtime import protocol, wire
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]


class _Wire:
    """The first byte of every frame the parent sent and every reply it read, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        self.replies: list[str] = []
        real_recv, real_broadcast = protocol.recv, pool_module.CorePool.broadcast

        def recv(fd: int):
            data = wire.recv(fd)
            self.replies.append(chr(data[0]) if data[:1] in (b"N", b"D") else "pickle")
            return protocol.decode(data)

        def broadcast(pool, framed: bytes) -> None:
            self.sent.append(chr(framed[4]) if framed[4:5] == b"N" else "pickle")
            real_broadcast(pool, framed)

        monkeypatch.setattr(protocol, "recv", recv)
        monkeypatch.setattr(pool_module.CorePool, "broadcast", broadcast)
        self._real_recv = real_recv

    def clear(self) -> None:
        self.sent.clear()
        self.replies.clear()


@pytest.fixture
def frames(monkeypatch: pytest.MonkeyPatch) -> _Wire:
    return _Wire(monkeypatch)


def test_repeated_launches_are_served_natively_with_the_same_results(frames) -> None:
    k = kernel("two_phase.cpp", "two_phase")
    with device(4, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(4 * 256, dtype=np.float32))
        parts, out = dev.empty("partials", 32, "float32"), dev.empty("out", 8, "float32")
        for n in (1024, 1024, 512, 1024, 256, 1024):
            dev.launch(k, x, parts, out, n)
            assert dev.to_host(out)[0] == np.arange(n).sum()
    # the first launch introduces the kernel (pickled, through Python); every later one is a
    # native command, run by the loop, whose last core answers with a done reply
    assert frames.sent == ["pickle"] + ["N"] * 5
    assert frames.replies == ["pickle"] + ["D"] * 5


def test_a_view_argument_points_where_the_view_starts(frames) -> None:
    k = kernel("two_phase.cpp", "two_phase")
    with device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(1024, dtype=np.float32))
        parts, out = dev.empty("partials", 32, "float32"), dev.empty("out", 8, "float32")
        for start in (0, 256, 512, 256, 128):
            dev.launch(k, x[start:], parts, out, 256)
            assert dev.to_host(out)[0] == np.arange(start, start + 256).sum()
    assert frames.replies[1:] == ["D"] * 4


def test_new_tensors_go_through_python_once_then_natively(frames) -> None:
    """A launch whose tensors the core has no window for yet is read by the core's Python (which
    maps them); the same tensors again are served natively. Each launch sees its own tensors."""
    k = kernel("pointer_args.cpp", "weighted_sum", kernel_type=KernelType.AIV)
    rng = np.random.default_rng(5)
    with device(2, kernel_type=KernelType.AIV) as dev:
        ok = dev.to_device("ctl", np.zeros(2, np.int32))
        sets = []
        for _ in range(3):
            a, b, c = (dev.to_device(name, rng.standard_normal(8).astype(np.float32)) for name in "abc")
            sets.append((a, b, c, dev.empty("out", 16, np.float32)))
        for round_ in range(2):
            for a, b, c, out in sets:
                frames.clear()
                dev.launch(k, a, b, c, out, ok)
                want = dev.to_host(a) + 2 * dev.to_host(b) + 3 * dev.to_host(c)
                np.testing.assert_allclose(dev.to_host(out), np.concatenate([want, want]), rtol=1e-6)
                if round_ == 1:  # (every tensor has a window by now)
                    assert frames.replies == ["D"]


def test_a_command_larger_than_the_loops_buffer_reaches_the_core_whole(frames) -> None:
    """A Python kernel's launch of 200 KB between native ones: the loop reads what fits, the core's
    Python the rest, and the native launches go on."""
    from tests.runtime_util import k as test_kernel

    c = kernel("two_phase.cpp", "two_phase")
    with device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(512, dtype=np.float32))
        parts, out = dev.empty("partials", 32, "float32"), dev.empty("out", 8, "float32")
        n = dev.to_device("n", np.zeros(8, np.int32))
        for payload in (b"x" * 200_000, b"y" * 70_000, b"z"):
            dev.launch(c, x, parts, out, 512)
            dev.launch(c, x, parts, out, 512)
            assert frames.replies[-1] == "D"
            dev.launch(test_kernel("payload_length"), n, payload)
            assert int(dev.to_host(n)[0]) == len(payload)
        assert dev.to_host(out)[0] == np.arange(512).sum()


def test_native_serving_can_be_turned_off(frames, monkeypatch: pytest.MonkeyPatch) -> None:
    from mpnpu.ascendc import compile_kernel
    from tests.ascendc_util import source

    monkeypatch.setenv("MPNPU_NATIVE_SERVE", "0")
    k = compile_kernel(source("two_phase.cpp"), "two_phase")  # (a fresh object: it reads the setting)
    with device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(512, dtype=np.float32))
        parts, out = dev.empty("partials", 32, "float32"), dev.empty("out", 8, "float32")
        for _ in range(4):
            dev.launch(k, x, parts, out, 512)
            assert dev.to_host(out)[0] == np.arange(512).sum()
    assert frames.sent == ["pickle"] * 4 and frames.replies == ["pickle"] * 4


def test_a_traced_launch_between_native_ones_goes_through_python(frames) -> None:
    from mpnpu.runtime.config import launch_options

    k = kernel("two_phase.cpp", "two_phase")
    with device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(512, dtype=np.float32))
        parts, out = dev.empty("partials", 32, "float32"), dev.empty("out", 8, "float32")
        dev.launch(k, x, parts, out, 512)
        dev.launch(k, x, parts, out, 512)
        traced = dev.launch_with(launch_options(trace=True), k, x, parts, out, 512)
        assert traced.trace is not None and all(traced.trace.events)  # every core's records came back
        dev.launch(k, x, parts, out, 512)
        assert dev.to_host(out)[0] == np.arange(512).sum()
    assert frames.sent == ["pickle", "N", "pickle", "N"]
    assert frames.replies[-1] == "D"


def _fault_after_native_launches(frames: _Wire, mode: int) -> BaseException:
    """faults.cpp's ``mode`` on vector core 1, after two clean launches (so this one is native)."""
    k = kernel("faults.cpp", "faults")
    with device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.zeros(64, np.float32))
        y = dev.to_device("y", np.zeros(64, np.float32))
        dev.launch(k, x, y, 64, 0, 1)
        dev.launch(k, x, y, 64, 0, 1)
        assert frames.replies[-1] == "D"  # the loop serves this kernel on these tensors
        frames.clear()
        with pytest.raises(Exception) as info:
            dev.launch(k, x, y, 64, mode, 1)
        assert frames.sent == ["N"]
        dev.launch(k, x, y, 64, 0, 1)  # a fresh pool: the same kernel runs cleanly
    return info.value


def test_a_native_launch_that_faults_is_named_at_the_kernel_line(frames) -> None:
    err = _fault_after_native_launches(frames, 1)
    assert isinstance(err, KernelError)
    line = line_of("faults.cpp", "mode == 1")
    assert str(err).startswith("vector core 1 (block 1) raised MemcheckError: illegal read of GM tensor x by "
                               f"DataCopy GM->local at ascendc_kernels/faults.cpp:{line} (faults): elements [56, 120)")
    err = _fault_after_native_launches(frames, 2)
    line = line_of("faults.cpp", "mode == 2")
    assert f"illegal write of UB by SetValue at ascendc_kernels/faults.cpp:{line} (faults)" in str(err)


def test_a_native_launch_that_crashes_or_throws_or_skips_a_syncall(frames) -> None:
    err = _fault_after_native_launches(frames, 3)
    assert isinstance(err, CoreDiedError)
    assert str(err).startswith("vector core 1 (block 1) died during faults (faults.cpp) (killed by signal SIGSEGV) "
                               "at ascendc_kernels/faults.cpp:")
    err = _fault_after_native_launches(frames, 5)
    assert isinstance(err, KernelError) and "the kernel threw kernel gave up" in str(err)
    err = _fault_after_native_launches(frames, 6)
    assert isinstance(err, SyncAllNotReachedError)
    assert "vector core 1 (block 1) finished the kernel after 0 SyncAll (vector cores only) calls" in str(err)
    err = _fault_after_native_launches(frames, 7)
    assert f"at ascendc_kernels/faults.cpp:{line_of('faults.cpp', 'mode == 7')} (faults)" in str(err)


def test_flags_a_native_launch_set_are_reported_and_cleared(frames) -> None:
    """A mode-2 handshake (flags set natively and, for waits that name no mode, through the core's
    callbacks): every round's counts start from zero, so no set leaks into the next launch."""
    k = kernel("flags_mix.cpp", "handshake")
    with device(2) as dev:
        out = dev.to_device("out", np.zeros(64, np.int32))
        for rounds in (1, 9, 3, 9, 1):
            dev.launch(k, out, rounds)
            assert list(dev.to_host(out)[:4]) == [rounds] * 4
    assert frames.replies[1:] == ["D"] * 4


@pytest.mark.parametrize("mode", [0, 2])
def test_flags_a_native_launch_left_set_are_cleared_before_the_next(frames, mode) -> None:
    """Sets nobody waited for, made by the library itself (mode 2) or through the core's callback
    (mode 0): a native launch reports them, so the parent clears them; 10 + 10 would overflow."""
    k = kernel("flag_leftovers.cpp", "flag_leftovers")
    with device(1) as dev:
        out = dev.to_device("out", np.zeros(8, np.int32))
        for _ in range(4):
            dev.launch(k, out, mode, 10)
    assert frames.replies[1:] == ["D"] * 3


# (the serve structs' layout in C++ and Python: every struct of abi.h, tests/test_ascendc_contract.py)


def test_native_frames_round_trip() -> None:
    """The parent's native command decodes to the command it carries; the loop's done reply to a
    LaunchDone; a scalar that does not fit its kind makes no native frame."""
    from mpnpu.runtime.protocol import LaunchCommand, decode, decode_done, frame_native

    cmd = LaunchCommand(7, 3, (None, 5, 2.5), {}, frozenset(), False)
    framed = frame_native(cmd, 3, cmd.args, ("p", "u4", "f"))
    assert framed is not None and framed[4:5] == b"N"
    assert decode(framed[4:]) == cmd
    assert frame_native(cmd, 3, cmd.args, ("p", "u4")) is None  # (the wrong number of kinds)
    assert frame_native(LaunchCommand(7, 3, (None, None), {}, frozenset(), False), 3, (None, None),
                        ("p", "f")) is None
    import struct

    done = struct.pack("=B3xiqdi4h", ord("D"), 2, 11, 0.5, 2, 1, 3, 2, 15)
    assert decode_done(done) == protocol.LaunchDone(11, 2, 0.5, None, ((1, 3), (2, 15)))
    assert decode(done) == decode_done(done)
    assert sys.byteorder in ("little", "big")  # (native order on both ends: one machine)


def test_a_core_repinned_between_native_launches_goes_on_serving_natively(frames) -> None:
    """A re-pin (the stress sweep's, between launches) changes the CPUs a core may use: the loop
    hands back after its reply (ServeResult.RESPIN), the core process works the wait budget out
    again (mpnpu.runtime.spin owns the rule) and the loop serves on."""
    import os

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs to re-pin a core onto fewer")
    k = kernel("two_phase.cpp", "two_phase")
    with device(2, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.arange(512, dtype=np.float32))
        parts, out = dev.empty("partials", 32, "float32"), dev.empty("out", 8, "float32")
        for _ in range(3):
            dev.launch(k, x, parts, out, 512)
        for pid in dev.core_pids():
            os.sched_setaffinity(pid, {cpus[0]})
        for _ in range(4):
            dev.launch(k, x, parts, out, 512)
            assert dev.to_host(out)[0] == np.arange(512).sum()
        for pid in dev.core_pids():
            os.sched_setaffinity(pid, set(cpus))
        dev.launch(k, x, parts, out, 512)
        assert dev.to_host(out)[0] == np.arange(512).sum()
    assert frames.replies[-5:] == ["D"] * 5
