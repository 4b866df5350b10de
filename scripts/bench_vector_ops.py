"""Speed of the C++ vector engine's calls on float (and half) data, inside one kernel on one core:
each call in its count form, which the engine runs as whole vectorised rows, beside the same call
under a mask that leaves out lane 0 of every repeat, which it runs lane by lane (the path every
call took before it had a row). Nanoseconds per element, the best of ``--runs`` launches; the two
forms of a call run one after the other in each launch.

Usage: python scripts/bench_vector_ops.py [--n 8192] [--reps 200] [--runs 7]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from mpnpu.ascendc import compile_kernel
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ascendc")
#: the calls vector_ops times, in its order (scripts/ascendc/bench_kernels.cpp)
CALLS = ("Add", "Max", "Muls", "Maxs", "Rsqrt", "Cast half->float", "Cast float->half", "Duplicate",
         "ReduceSum")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=8192, help="floats per call, a multiple of 64 (default 8192)")
    ap.add_argument("--reps", type=int, default=200, help="calls of each form per launch (default 200)")
    ap.add_argument("--runs", type=int, default=7, help="launches; each figure is the best (default 7)")
    a = ap.parse_args()
    if a.n <= 0 or a.n % 64 or a.n * 18 > 192 * 1024 or a.reps <= 0 or a.runs <= 0:
        ap.error("--n must be a positive multiple of 64 of at most 10880 (four float buffers and a half "
                 "one of n elements fit in the 192 KiB UB); --reps and --runs positive")
    k = compile_kernel(os.path.join(HERE, "bench_kernels.cpp"), "vector_ops", kernel_type=KernelType.AIV)
    best = np.full(2 * len(CALLS), np.iinfo(np.int64).max)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        times = dev.to_device("times", np.zeros(2 * len(CALLS), np.int64))
        for _ in range(a.runs):
            dev.launch(k, times, np.uint32(a.n), np.uint32(a.reps))
            best = np.minimum(best, dev.to_host(times))
    print(f"vector calls on {a.n} elements, one core, best of {a.runs} launches x {a.reps} calls")
    print(f"{'call':18s} {'rows ns/el':>11s} {'lane loop ns/el':>16s} {'speed-up':>9s}")
    for i, name in enumerate(CALLS):
        row, lane = best[2 * i] / a.n, best[2 * i + 1] / a.n
        print(f"{name:18s} {row:11.3f} {lane:16.3f} {lane / row:8.1f}x")


if __name__ == "__main__":
    main()
