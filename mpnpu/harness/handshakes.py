"""The watchdog's soak: correct flag handshakes, launched many times, zero deadlock reports expected.

The launch watchdog (:mod:`mpnpu.runtime.watchdog`, docs/device-model.md "Watchdog") reads the
status board while a launch runs and reports a flag wait that no core can satisfy any more. It must
never report a wait that *will* end. The risky moments are the short windows where the board lags a
core: a multi-sender wait that has taken some sets and blocks on the next, a waiter woken but not
yet running, a kernel thread waiting for the interpreter lock while one of its pipe threads holds
it. :func:`soak_watchdog` runs kernels whose handshakes are all correct, in every flag mode (the
kernels below: a self-test of the runtime, not an operator), over and over, with the watchdog
ticking far faster than its default (0.2 ms instead of 50 ms) so that its checks land in those
windows often, and counts the launches that failed or produced wrong values.

In every handshake one core arrives late by a short sleep, so that its partners really block in
their waits. Busy background processes (``hogs``) change only when the cores run, never what they do.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from mpnpu import api
from mpnpu.errors import LaunchError
from mpnpu.harness.stress.load import BackgroundLoad
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.gm import GlobalTensor

HANDSHAKES = 6  # per launch of each kernel (mode 2 sends 2 sets per round: stays below the 15-set counter)


# -- kernels: every handshake is correct, so a deadlock report is the watchdog's mistake ------------


def _put(dst: GlobalTensor, value: int) -> None:
    api.data_copy(dst, np.full(dst.shape, value, dtype=np.int32))


def _get(src: GlobalTensor) -> np.ndarray:
    out = np.empty(src.shape, dtype=np.int32)
    api.data_copy(out, src)
    return out


def _arrive(late: bool, late_s: float, dst: GlobalTensor, value: int, flag_id: int, mode: int) -> None:
    """(Late by ``late_s`` if ``late``) write ``value`` to the GM slot ``dst``, then set the flag."""
    if late:
        time.sleep(late_s)
    _put(dst, value)
    api.cross_core_set_flag(flag_id, mode=mode)


def mode1_pairs(data: GlobalTensor, seen: GlobalTensor, late_sub: int, late_s: float) -> None:
    """Each vector core writes its slot, sets flag 2 (mode 1), waits on it, reads its partner's
    slot. The wait takes the waiter's own set first, then blocks on the late partner's."""
    if api.is_aic():
        return
    v = api.get_block_idx()
    for j in range(HANDSHAKES):
        _arrive(api.get_subblock_idx() == late_sub, late_s, data[v, j:j + 1], 100 * v + j + 1, 2, 1)
        api.cross_core_wait_flag(2, mode=1)
        api.data_copy(seen[v, j:j + 1], _get(data[v ^ 1, j:j + 1]))


def mode2_fan_in(data: GlobalTensor, seen: GlobalTensor, late_sub: int, late_s: float) -> None:
    """Both vector cores of an AI core write their slot and set flag 6 (mode 2); the cube waits for
    both (taking one set, then blocking on the late one's), reads both slots, and releases the
    round with flag 7, which each vector core waits for (a single-sender wait)."""
    if api.is_aic():
        k = api.get_block_idx()
        for j in range(HANDSHAKES):
            api.cross_core_wait_flag(6, mode=2)
            api.data_copy(seen[k, j], _get(data[j, 2 * k:2 * k + 2]))
            api.cross_core_set_flag(7, mode=2)
        return
    v = api.get_block_idx()
    for j in range(HANDSHAKES):
        _arrive(api.get_subblock_idx() == late_sub, late_s, data[j, v:v + 1], 100 * v + j + 1, 6, 2)
        api.cross_core_wait_flag(7, mode=2)


def mode0_all(data: GlobalTensor, seen: GlobalTensor, late_sub: int, late_s: float) -> None:
    """Every vector core writes its slot, sets flag 4 (mode 0), waits on it, and reads every slot.
    The first vector core (``late_sub`` 0) or the last (1) arrives late."""
    if api.is_aic():
        return
    v = api.get_block_idx()
    late = 2 * api.get_block_num() - 1 if late_sub else 0
    for j in range(HANDSHAKES):
        _arrive(v == late, late_s, data[j, v:v + 1], 1000 * j + v + 1, 4, 0)
        api.cross_core_wait_flag(4, mode=0)
        api.data_copy(seen[v, j], _get(data[j]))


def _expected(name: str, block_dim: int) -> np.ndarray:
    n_vec = 2 * block_dim
    j = np.arange(HANDSHAKES)
    if name == "mode1_pairs":
        return np.array([100 * (v ^ 1) + j + 1 for v in range(n_vec)])
    if name == "mode2_fan_in":
        return np.array([[[100 * (2 * k + s) + jj + 1 for s in range(2)] for jj in j] for k in range(block_dim)])
    return np.array([[[1000 * jj + u + 1 for u in range(n_vec)] for jj in j] for _ in range(n_vec)])


def _shapes(name: str, block_dim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n_vec = 2 * block_dim
    if name == "mode1_pairs":
        return (n_vec, HANDSHAKES), (n_vec, HANDSHAKES)
    if name == "mode2_fan_in":
        return (HANDSHAKES, n_vec), (block_dim, HANDSHAKES, 2)
    return (HANDSHAKES, n_vec), (n_vec, HANDSHAKES, n_vec)


KERNELS = ("mode1_pairs", "mode2_fan_in", "mode0_all")


@dataclass
class WatchdogSoak:
    """What :func:`soak_watchdog` ran and found."""

    rounds: int
    block_dim: int
    tick_ms: float
    late_ms: float
    hogs: int
    launches: int = 0
    failures: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {"kernels": list(KERNELS), **dataclasses.asdict(self), "failed_launches": len(self.failures)}


#: the soak's device: a small GM segment, and waits bounded well below the defaults (a wait the
#: watchdog wrongly let run would end the launch in 30 s, not 60)
SOAK_OPTIONS = RuntimeOptions(gm_segment_bytes=1 << 20, launch_timeout_s=60.0, sync_timeout_s=30.0)


def soak_watchdog(*, rounds: int, block_dim: int = 2, tick_ms: float = 0.2, late_ms: float = 1.0, hogs: int = 0,
                  options: RuntimeOptions = SOAK_OPTIONS,
                  progress: Callable[[int], None] | None = None) -> WatchdogSoak:
    """Launch each handshake kernel ``rounds`` times with a ``tick_ms`` watchdog; count what failed.

    ``block_dim`` 2 by default: mode 0 and mode 2 handshakes then cross AI cores."""
    options = dataclasses.replace(options, watchdog_interval_s=tick_ms / 1000.0)
    soak = WatchdogSoak(rounds, block_dim, tick_ms, late_ms, hogs)
    start = time.perf_counter()
    with BackgroundLoad(hogs, duration_s=24 * 3600.0), Device(block_dim, options=options) as dev:
        tensors = {}
        for name in KERNELS:
            data_shape, seen_shape = _shapes(name, block_dim)
            tensors[name] = (dev.to_device(f"{name}.data", np.full(data_shape, -1, np.int32)),
                             dev.to_device(f"{name}.seen", np.full(seen_shape, -1, np.int32)),
                             _expected(name, block_dim), seen_shape)
        for r in range(rounds):
            for name in KERNELS:
                data, seen, expected, seen_shape = tensors[name]
                dev.gm.write(seen, np.full(seen_shape, -1, np.int32))
                soak.launches += 1
                try:
                    dev.launch(f"{__name__}:{name}", data, seen, r % 2, late_ms / 1000.0)
                except LaunchError as e:
                    soak.failures.append(f"{name} (round {r}): {e}")
                else:
                    got = dev.to_host(seen)
                    if not np.array_equal(got, expected):
                        wrong = int((got != expected).sum())
                        soak.failures.append(f"{name} (round {r}): wrong values seen ({wrong} slots)")
                if progress is not None:
                    progress(1)
    soak.wall_s = time.perf_counter() - start
    return soak
