#!/usr/bin/env python
"""Soak the launch watchdog: correct flag handshakes, many launches, zero deadlock reports expected.

The watchdog (mpnpu/runtime/watchdog.py, docs/device-model.md "Watchdog") reads the status board
while a launch runs and reports a flag wait that no core can satisfy any more. It must never
report a wait that *will* end. The risky moments are the short windows where the board lags a
core: a multi-sender wait that has taken some sets and blocks on the next, a waiter woken but not
yet running, a kernel thread waiting for the interpreter lock while one of its pipe threads holds
it. This script runs kernels whose handshakes are all correct, in every flag mode, over and over,
with the watchdog ticking far faster than its default (``--tick-ms``, default 0.2 ms instead of
50 ms) so that its checks land in those windows often, and counts the launches that failed or
produced wrong values.

In every handshake one core arrives late by a short sleep (``--late-ms``), so that its partners
really block in their waits. ``--hogs N`` adds N busy-looping processes for the soak: that changes
only when the cores run, never what they do.

Exit status: 0 when every launch ended cleanly with the right values, 1 when any did not, 2 for a
usage error, 130/143 when interrupted.

    python scripts/soak_watchdog.py                      # 1,000 rounds of the three kernels
    python scripts/soak_watchdog.py --rounds 3000 --hogs 2
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from mpnpu import api  # noqa: E402
from mpnpu.cli.common import (  # noqa: E402
    EXIT_FAILED,
    EXIT_OK,
    ArgumentParser,
    float_in,
    int_at_least,
    non_negative_int,
    positive_int,
    progress_bar,
    run_cli,
)
from mpnpu.errors import LaunchError  # noqa: E402
from mpnpu.harness.stress.load import BackgroundLoad  # noqa: E402
from mpnpu.runtime.config import RuntimeOptions  # noqa: E402
from mpnpu.runtime.device import Device  # noqa: E402

HANDSHAKES = 6  # per launch of each kernel (mode 2 sends 2 sets per round: stays below the 15-set counter)


# -- kernels: every handshake is correct, so a deadlock report is the watchdog's mistake ------------


def _put(dst, value: int) -> None:
    api.data_copy(dst, np.full(dst.shape, value, dtype=np.int32))


def _get(src) -> np.ndarray:
    out = np.empty(src.shape, dtype=np.int32)
    api.data_copy(out, src)
    return out


def _arrive(late: bool, late_s: float, dst, value: int, flag_id: int, mode: int) -> None:
    """(Late by ``late_s`` if ``late``) write ``value`` to the GM slot ``dst``, then set the flag."""
    if late:
        time.sleep(late_s)
    _put(dst, value)
    api.cross_core_set_flag(flag_id, mode=mode)


def mode1_pairs(data, seen, late_sub: int, late_s: float) -> None:
    """Each vector core writes its slot, sets flag 2 (mode 1), waits on it, reads its partner's
    slot. The wait takes the waiter's own set first, then blocks on the late partner's."""
    if api.is_aic():
        return
    v = api.get_block_idx()
    for j in range(HANDSHAKES):
        _arrive(api.get_subblock_idx() == late_sub, late_s, data[v, j:j + 1], 100 * v + j + 1, 2, 1)
        api.cross_core_wait_flag(2, mode=1)
        api.data_copy(seen[v, j:j + 1], _get(data[v ^ 1, j:j + 1]))


def mode2_fan_in(data, seen, late_sub: int, late_s: float) -> None:
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


def mode0_all(data, seen, late_sub: int, late_s: float) -> None:
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


# -- the soak ----------------------------------------------------------------------------------------


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="python scripts/soak_watchdog.py",
                       description="Launch correct flag handshakes (modes 0, 1, 2) many times with a fast "
                                   "watchdog tick; exit 0 only if no launch failed.")
    p.add_argument("--rounds", type=positive_int, default=1000,
                   help="launches of each of the three kernels (default 1000)")
    p.add_argument("--block-dim", type=int_at_least(1, "--block-dim"), default=2,
                   help="AI cores, 3 core processes each (default 2)")
    p.add_argument("--tick-ms", type=float_in(0.0, low_open=True, what="--tick-ms"), default=0.2,
                   help="watchdog interval in ms (default 0.2; the runtime's default is 50)")
    p.add_argument("--late-ms", type=float_in(0.0, what="--late-ms"), default=1.0,
                   help="how late the late core of each handshake arrives, in ms (default 1)")
    p.add_argument("--hogs", type=non_negative_int, default=0,
                   help="busy-looping processes run beside the soak (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    options = dataclasses.replace(RuntimeOptions(), watchdog_interval_s=args.tick_ms / 1000.0,
                                  gm_segment_bytes=1 << 20, launch_timeout_s=60.0, sync_timeout_s=30.0)
    failures: list[str] = []
    launches = 0
    start = time.perf_counter()
    with BackgroundLoad(args.hogs, duration_s=24 * 3600.0), Device(args.block_dim, options=options) as dev:
        tensors = {}
        for name in KERNELS:
            data_shape, seen_shape = _shapes(name, args.block_dim)
            tensors[name] = (dev.to_device(f"{name}.data", np.full(data_shape, -1, np.int32)),
                             dev.to_device(f"{name}.seen", np.full(seen_shape, -1, np.int32)),
                             _expected(name, args.block_dim), seen_shape)
        with progress_bar(args.rounds * len(KERNELS), "launches", disable=args.quiet) as bar:
            for r in range(args.rounds):
                for name in KERNELS:
                    data, seen, expected, seen_shape = tensors[name]
                    dev.gm.write(seen, np.full(seen_shape, -1, np.int32))
                    launches += 1
                    try:
                        dev.launch(f"{__file__}:{name}", data, seen, r % 2, args.late_ms / 1000.0)
                    except LaunchError as e:
                        failures.append(f"{name} (round {r}): {e}")
                    else:
                        got = dev.to_host(seen)
                        if not np.array_equal(got, expected):
                            failures.append(f"{name} (round {r}): wrong values seen ({int((got != expected).sum())} slots)")
                    bar.update(1)
    wall = time.perf_counter() - start
    print(f"soak_watchdog: {launches} launches ({args.rounds} x {', '.join(KERNELS)}), block_dim {args.block_dim}, "
          f"watchdog tick {args.tick_ms:g} ms, late core {args.late_ms:g} ms, {args.hogs} hog(s); {wall:.1f} s")
    print(f"failed launches: {len(failures)}")
    for line in failures[:10]:
        print(f"  {line}")
    if len(failures) > 10:
        print(f"  ... and {len(failures) - 10} more")
    return EXIT_OK if not failures else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="soak_watchdog"))
