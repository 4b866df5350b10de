#!/usr/bin/env python
"""What asynchronous pipes cost: FLOMS (fixed) per case with pipes asynchronous and in order,
side by side in one run, next to the CPU golden.

Two devices live at once: one with ``RuntimeOptions(pipes="kernel")`` (the default: FLOMS is
``pipelined``, so its MTE1/MTE2/MTE3/FIX run on their own threads) and one with ``pipes="sync"``
(every instruction at issue). Each case runs on both, then through the golden, the order rotating
per case, so machine load hits all three alike. Prints ms per case of each, and the ratios
async/sync and async/golden (the batch's target is <= 3x golden).

    python scripts/bench_pipes.py [--cases 30] [--rounds 2] [--block-dim N]
"""

from __future__ import annotations

import os
import statistics
import time

from mpnpu.cli.common import ArgumentParser, run_cli
from mpnpu.cli.options import DEFAULT_OPERATOR, positive_int
from mpnpu.operators.registry import load_operator
from mpnpu.runtime.config import (
    DEFAULT_BLOCK_DIM,
    RuntimeOptions,
)
from mpnpu.runtime.device import Device
from mpnpu.runtime.procutil import limit_blas_threads

OPERATOR = load_operator(DEFAULT_OPERATOR)  # FLOMS, found by name as the tools find it


def main(argv=None) -> int:
    p = ArgumentParser(prog="bench_pipes", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=positive_int, default=30)
    p.add_argument("--rounds", type=positive_int, default=2)
    p.add_argument("--block-dim", type=positive_int, default=None)
    args = p.parse_args(argv)
    limit_blas_threads(1)
    block_dim = args.block_dim or DEFAULT_BLOCK_DIM
    cases = [OPERATOR.make_case(0, i) for i in range(args.cases)]
    times = {"async": [], "sync": [], "golden": []}
    with Device(block_dim, options=RuntimeOptions(pipes="kernel")) as dev_async, \
            Device(block_dim, options=RuntimeOptions(pipes="sync")) as dev_sync:
        devices = {"async": dev_async, "sync": dev_sync}
        for case in cases[:3]:  # warm-up
            for dev in devices.values():
                OPERATOR.run(dev, case)
        order = ("async", "sync", "golden")
        for r in range(args.rounds):
            for i, case in enumerate(cases):
                for what in order[(i + r) % 3:] + order[:(i + r) % 3]:
                    t0 = time.perf_counter()
                    if what == "golden":
                        OPERATOR.golden(case)
                    else:
                        OPERATOR.run(devices[what], case)
                    times[what].append(time.perf_counter() - t0)
    ms = {k: 1000 * statistics.mean(v) for k, v in times.items()}
    print(f"bench_pipes: {args.cases} FLOMS cases x {args.rounds} rounds, block_dim {block_dim}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  pipes async (default): {ms['async']:7.2f} ms/case")
    print(f"  pipes sync           : {ms['sync']:7.2f} ms/case")
    print(f"  golden               : {ms['golden']:7.2f} ms/case")
    print(f"  async / sync {ms['async'] / ms['sync']:.2f}x; async / golden {ms['async'] / ms['golden']:.2f}x; "
          f"sync / golden {ms['sync'] / ms['golden']:.2f}x")
    return 0


if __name__ == "__main__":
    run_cli(main)
