#!/usr/bin/env python
"""Cost of each kind of inter-core sync a repair can suggest, measured side by side in one run.

The repair suggester (mpnpu.directed.repair.SYNC_COST_US) ranks candidate syncs by these figures:

- SyncAll<false>: every core of the launch (block_dim 2: 6 core processes) meets;
- SyncAll<true>:  the vector cores only (4);
- flag mode 1:    both vector cores of each AI core set and wait (a two-party handshake);
- flag mode 2:    each cube core sets, its vector cores wait (one direction of the hand-off).

Each is timed as a kernel doing N syncs of that kind in a loop (µs per sync, from the slowest
core's time inside the kernel), in alternating rounds so that load drifting on a shared machine
hits every kind alike; the figure is the median over rounds, and ratios are to SyncAll<false>.
Run: python scripts/bench_sync_kinds.py [--rounds 7] [--n 2000] [--block-dim 2]
"""

from __future__ import annotations

import argparse
import os
import statistics

from mpnpu import api
from mpnpu.runtime.device import Device


def sync_all_kernel(n: int) -> None:
    for _ in range(n):
        api.sync_all()


def sync_aiv_kernel(n: int) -> None:
    if api.is_aiv():
        for _ in range(n):
            api.sync_all(aiv_only=True)


def flag1_kernel(n: int) -> None:
    if api.is_aiv():
        for _ in range(n):
            api.cross_core_set_flag(3, mode=1)
            api.cross_core_wait_flag(3, mode=1)


def flag2_kernel(n: int) -> None:
    # One direction per sync, with the way back so the counter never overflows: 2 flags per round.
    if api.is_aic():
        for _ in range(n):
            api.cross_core_set_flag(3, mode=2)
            api.cross_core_wait_flag(4, mode=2)
    else:
        for _ in range(n):
            api.cross_core_wait_flag(3, mode=2)
            api.cross_core_set_flag(4, mode=2)


KINDS = {
    "sync_all": (sync_all_kernel, 1),
    "sync_aiv": (sync_aiv_kernel, 1),
    "flag1": (flag1_kernel, 1),
    "flag2": (flag2_kernel, 2),  # a round trip is two hand-offs
}


def measure(dev: Device, kind: str, n: int) -> float:
    fn, per_round = KINDS[kind]
    dev.launch(fn, 10)  # warm: first syncs absorb the dispatch skew
    r = dev.launch(fn, n)
    return max(r.core_elapsed_s) / (n * per_round) * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--n", type=int, default=2000, help="syncs per measurement")
    p.add_argument("--block-dim", type=int, default=2)
    args = p.parse_args()
    samples: dict[str, list[float]] = {k: [] for k in KINDS}
    with Device(args.block_dim) as dev:
        for _ in range(args.rounds):
            for kind in KINDS:
                samples[kind].append(measure(dev, kind, args.n))
    base = statistics.median(samples["sync_all"])
    print(f"sync costs, block_dim {args.block_dim} ({3 * args.block_dim} core processes, "
          f"{len(os.sched_getaffinity(0))} CPUs), median of {args.rounds} rounds of {args.n}:")
    for kind, xs in samples.items():
        m = statistics.median(xs)
        print(f"  {kind:9s} {m:8.1f} us per sync   ({m / base:.2f}x SyncAll<false>)")


if __name__ == "__main__":
    main()
