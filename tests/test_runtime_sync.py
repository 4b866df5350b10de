"""Semantics of the device's sync primitives, observed through what cores write to GM.

Cross-core flags per mode (counting, pairing of the j-th wait with the j-th set, per-sender
counters in mode 2, isolation between modes and core types), overflow, the ids SyncAll is built on, invalid ids,
SyncAll and SyncAll<true>, atomic add. Every test also checks that it leaves no process and no
shared-memory segment behind (``no_leaks``) and is bounded (``time_limit``).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from mpnpu import LaunchOptions
from mpnpu.errors import DeadlockError, FlagOverflowError, KernelAPIError, KernelError
from mpnpu.runtime.topology import FLAG_COUNTER_MAX
from tests.runtime_util import OPTIONS, device, filled, k

pytestmark = pytest.mark.usefixtures("no_leaks", "time_limit")

BLOCK_DIM = 2
N_VEC = 2 * BLOCK_DIM
N_CORES = 3 * BLOCK_DIM


# -- mode 2: a cube core and its two vector cores -------------------------------------------------


def test_mode2_jth_wait_pairs_with_jth_set() -> None:
    rounds = 12  # < 16: every set is outstanding at once when the cube runs ahead
    with device(BLOCK_DIM) as dev:
        data = filled(dev, "data", (BLOCK_DIM, rounds))
        seen = filled(dev, "seen", (N_VEC, rounds))
        for _ in range(3):
            dev.launch(k("mode2_cube_to_vectors"), data, seen, rounds)
            expected = np.array([[1000 * (v // 2) + j + 1 for j in range(rounds)] for v in range(N_VEC)])
            np.testing.assert_array_equal(dev.to_host(seen), expected)
            dev.gm.write(seen, np.full((N_VEC, rounds), -1, np.int32))
            dev.gm.write(data, np.full((BLOCK_DIM, rounds), -1, np.int32))


def test_mode2_cube_wait_needs_both_vectors_even_if_one_sets_twice() -> None:
    with device(BLOCK_DIM) as dev:
        data = filled(dev, "data", (2 * N_VEC,))
        seen = filled(dev, "seen", (BLOCK_DIM, 2, 2))
        dev.launch(k("mode2_cube_waits_both"), data, seen, 0.05)
        got = dev.to_host(seen)
        for kk in range(BLOCK_DIM):
            for r in range(2):
                assert list(got[kk, r]) == [100 * r + 2 * kk + 1, 100 * r + 2 * kk + 2], (kk, r, got)


def test_mode2_ping_pong_rounds() -> None:
    rounds = 40
    with device(BLOCK_DIM) as dev:
        data = filled(dev, "data", (BLOCK_DIM, 2 * rounds))
        seen = filled(dev, "seen", (N_VEC, rounds))
        dev.launch(k("mode2_ping_pong"), data, seen, rounds)
        d, s = dev.to_host(data), dev.to_host(seen)
        for v in range(N_VEC):
            assert list(s[v]) == [1000 * (v // 2) + j + 1 + v % 2 for j in range(rounds)]
        for kk in range(BLOCK_DIM):
            # the cube read both vectors' round-j values after its j-th wait
            assert list(d[kk, rounds:]) == [2 * (1000 * kk + j + 1) + 1 for j in range(rounds)]


@pytest.mark.slow
def test_sets_left_by_a_launch_do_not_leak_into_the_next() -> None:
    with device(BLOCK_DIM) as dev:
        dev.launch(k("set_flag_times"), "cube", 0, 5, 2, 3)  # 3 sets nobody waits for
        t0 = time.monotonic()
        with pytest.raises(DeadlockError):  # without clearing, the stale sets would satisfy this
            dev.launch(k("wait_flag_once"), "vector", 0, 5, 2)
        assert time.monotonic() - t0 < 3.0


def test_a_flag_mode_learnt_in_a_launch_is_forgotten_by_the_next() -> None:
    # Known modes are cleared only after a launch that set a flag (Device.launch_with tells
    # reset_for_launch): a launch that set none in between must not bring back the mode of an
    # earlier set to a wait that names no mode.
    with device(1) as dev:
        out = filled(dev, "out", (1,))
        dev.launch(k("set_many_flags"), 0, [5])  # mode 0 and mode 2 sets of flag 5 reach the cube
        dev.launch(k("empty_kernel"))
        t0 = time.monotonic()
        with pytest.raises(DeadlockError):  # a stale mode would end this wait at once
            dev.launch(k("learn_flag_mode"), "cube", 0, 5, out)
        assert time.monotonic() - t0 < 3.0


@pytest.mark.slow
def test_watchdog_never_reports_a_wait_that_is_being_satisfied() -> None:
    # Vectors set and finish at once while the cube may still be waking up: the status board then
    # shows "cube waits, senders done, count 0" for a moment. With a watchdog ticking every 0.5 ms
    # a runtime that trusted that snapshot failed here about once a second (the deterministic
    # check of the rule is in test_runtime_faults.test_watchdog_flag_check_needs_the_waiter_asleep).
    options = dataclasses.replace(OPTIONS, watchdog_interval_s=0.0005)
    with device(BLOCK_DIM, options=options) as dev:
        deadline = time.monotonic() + 1.5
        n = 0
        while time.monotonic() < deadline:
            dev.launch(k("vectors_set_cube_waits"))
            n += 1
        assert dev.pool_generation == 1 and n > 10


# -- mode 1: the two vector cores of one AI core ------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("late_sub", [0, 1])
def test_mode1_pairs_exchange(late_sub: int) -> None:
    rounds = 8
    with device(BLOCK_DIM) as dev:
        data = filled(dev, "data", (N_VEC, rounds))
        seen = filled(dev, "seen", (N_VEC, rounds))
        dev.launch(k("mode1_pairs"), data, seen, rounds, late_sub, 0.01)
        got = dev.to_host(seen)
        for v in range(N_VEC):
            assert list(got[v]) == [100 * (v ^ 1) + j + 1 for j in range(rounds)], (v, got)


def test_mode1_on_cube_core_is_an_error() -> None:
    with device(1) as dev:
        with pytest.raises(KernelError) as ei:
            dev.launch(k("set_flag_times"), "cube", 0, 2, 1, 1)
        err = ei.value
        assert err.details["core"] == "cube core 0 (block 0)"
        assert err.details["error_type"] == "KernelAPIError"
        assert "mode 1" in str(err) and "cube" in str(err)


# -- mode 0: all cores of one type -------------------------------------------------------------


def test_mode0_all_vectors_and_all_cubes_independently() -> None:
    rounds = 6
    with device(BLOCK_DIM) as dev:
        vec_data = filled(dev, "vec_data", (rounds, N_VEC))
        vec_seen = filled(dev, "vec_seen", (N_VEC, rounds, N_VEC))
        cube_data = filled(dev, "cube_data", (rounds, BLOCK_DIM))
        cube_seen = filled(dev, "cube_seen", (BLOCK_DIM, rounds, BLOCK_DIM))
        dev.launch(k("mode0_all"), vec_data, vec_seen, cube_data, cube_seen, rounds, 0.01)
        vs, cs = dev.to_host(vec_seen), dev.to_host(cube_seen)
        for j in range(rounds):
            want_v = [1000 * j + i + 1 for i in range(N_VEC)]
            want_c = [1000 * j + i + 1 for i in range(BLOCK_DIM)]
            for v in range(N_VEC):
                assert list(vs[v, j]) == want_v, (v, j, vs[v, j])
            for c in range(BLOCK_DIM):
                assert list(cs[c, j]) == want_c, (c, j, cs[c, j])


# -- overflow, SyncAll's ids and invalid ids --------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("who,mode", [("cube", 2), ("vector", 2), ("vector", 1), ("vector", 0), ("cube", 0)])
def test_flag_overflow_at_16_outstanding_sets(who: str, mode: int) -> None:
    with device(BLOCK_DIM) as dev:
        # 15 outstanding sets are fine ...
        dev.launch(k("set_flag_times"), who, 1, 3, mode, FLAG_COUNTER_MAX)
        # ... the 16th is an overflow, reported as the setting core's error
        with pytest.raises(KernelError) as ei:
            dev.launch(k("set_flag_times"), who, 1, 3, mode, FLAG_COUNTER_MAX + 1)
        err = ei.value
        label = "cube core 1 (block 1)" if who == "cube" else "vector core 1 (block 0, sub 1)"
        assert err.details["core"] == label
        assert err.details["error_type"] == "FlagOverflowError"
        assert isinstance(err.__cause__, FlagOverflowError)
        assert "overflow" in str(err) and "flag 3" in str(err)


@pytest.mark.parametrize("flag_id", [11, 12, 13, 14])
def test_the_ids_syncall_is_built_on_work_alone_and_collide_with_a_syncall(flag_id: int) -> None:
    """Flag ids 11-14 are what the device's SyncAll is built on: a kernel may use them (the dev kit's own flag
    sample uses 11-13), but a launch that also calls SyncAll gets one error naming both lines."""
    with device(1) as dev:
        dev.launch(k("handshake_on"), flag_id, False)  # alone: a handshake like any other
        with pytest.raises(KernelError) as ei:
            dev.launch(k("handshake_on"), flag_id, True)
        assert ei.value.details["error_type"] == "KernelAPIError"
        msg = str(ei.value)
        assert "uses an id the device's SyncAll is built on (11-14), and this launch also calls SyncAll (at " in msg
        assert "kernels_for_tests.py:" in msg and "use a flag id in 0-10" in msg
        dev.launch(k("handshake_on"), 10, True)  # 0-10 with a SyncAll: fine


@pytest.mark.slow
@pytest.mark.parametrize("flag_id,mode,message", [
    (16, 2, "flag id must be an integer in 0..15"),
    (-1, 0, "flag id must be an integer in 0..15"),
    (3, 3, "flag mode must be 0, 1 or 2"),
    (3, -1, "flag mode must be 0, 1 or 2"),
    (3, True, "flag mode must be 0, 1 or 2"),
    (3.0, 2, "flag id must be an integer"),
])
def test_invalid_flag_ids_and_modes(flag_id, mode, message: str) -> None:
    with device(1) as dev:
        with pytest.raises(KernelError) as ei:
            dev.launch(k("set_flag_times"), "vector", 1, flag_id, mode, 1)
        assert ei.value.details["core"] == "vector core 1 (block 0, sub 1)"
        assert isinstance(ei.value.__cause__, KernelAPIError)
        assert message in str(ei.value)


# -- SyncAll -------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("late_core", [0, N_CORES - 1])
def test_sync_all_orders_every_core(late_core: int) -> None:
    rounds = 5
    with device(BLOCK_DIM) as dev:
        data = filled(dev, "data", (rounds, N_CORES))
        seen = filled(dev, "seen", (N_CORES, rounds, N_CORES))
        dev.launch(k("sync_all_rounds"), data, seen, rounds, late_core, 0.01)
        got = dev.to_host(seen)
        for j in range(rounds):
            want = [1000 * j + c + 1 for c in range(N_CORES)]
            for c in range(N_CORES):
                assert list(got[c, j]) == want, (c, j, got[c, j])


def test_sync_all_aiv_only_orders_vector_cores() -> None:
    rounds = 5
    with device(BLOCK_DIM) as dev:
        data = filled(dev, "data", (rounds, N_VEC))
        seen = filled(dev, "seen", (N_VEC, rounds, N_VEC))
        dev.launch(k("sync_aiv_rounds"), data, seen, rounds, 0.01)
        got = dev.to_host(seen)
        for j in range(rounds):
            want = [1000 * j + v + 1 for v in range(N_VEC)]
            for v in range(N_VEC):
                assert list(got[v, j]) == want


def test_sync_all_aiv_only_on_cube_core_is_an_error() -> None:
    with device(1) as dev:
        with pytest.raises(KernelError) as ei:
            dev.launch(k("sync_aiv_on_cube"))
        assert ei.value.details["core"] == "cube core 0 (block 0)"
        assert "aiv_only" in str(ei.value)


def test_dropped_sync_point_is_skipped_by_every_core() -> None:
    with device(BLOCK_DIM) as dev:
        out = filled(dev, "out", (N_CORES,))
        dev.launch_with(LaunchOptions(drop_syncs={"S"}), k("named_sync"), out)
        assert list(dev.to_host(out)) == [1] * N_CORES


# -- atomic add ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_atomic_add_from_every_vector_core_is_exact(dtype: str) -> None:
    reps, n = 300, 256
    with device(BLOCK_DIM) as dev:
        acc = filled(dev, "acc", (n,), value=0, dtype=dtype)
        dev.launch(k("atomic_add_vectors"), acc, reps, dtype)
        per_rep = sum(range(1, N_VEC + 1)) * (1 if dtype == "int32" else 0.5)
        got = dev.to_host(acc)
        np.testing.assert_array_equal(got, np.full(n, reps * per_rep, dtype=dtype))


def test_a_syncall_that_times_out_names_the_core_that_never_arrived() -> None:
    """Vector core 1 runs on (no sync) past the sync timeout while the others wait in SyncAll: the launch
    error names vector core 1, still running, and where it is, before the waiting cores' timeouts; every
    waiting core's error names vector core 1 as the one that never arrived, not itself."""
    import dataclasses

    from mpnpu.errors import DeadlockError
    from tests.runtime_util import OPTIONS

    quick = dataclasses.replace(OPTIONS, sync_timeout_s=0.5)
    with device(1, options=quick) as dev:
        with pytest.raises(DeadlockError) as ei:
            dev.launch(k("late_to_sync_all"), 1, 3.0)
    msg = str(ei.value)
    assert msg.startswith("hang: aiv1 running at tests/kernels_for_tests.py:"), msg
    assert isinstance(ei.value.__cause__, KernelError)
    assert "SyncAll #1 did not complete within 0.5 s: vector core 1 (block 0, sub 1) (running, not at a sync) " \
           "never arrived" in msg, msg
