"""Speed of the C++ front end, each ratio measured side by side in one run:

- launch of an empty C++ kernel vs an empty Python kernel on the same device (target <= 1.2x),
  and the C++ launch served by the core's native loop vs the same launch through the core's
  Python (a copy of the kernel object that never goes as a native command);
- DataCopy of 64 KiB GM -> UB vs memcpy of the same bytes, inside one kernel (target >= 50% of
  memcpy's bandwidth).

Usage: python scripts/bench_ascendc.py [--rounds 7] [--launches 300]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time

import numpy as np

from mpnpu.ascendc import compile_kernel
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ascendc")
EMPTY_PY = os.path.join(HERE, "empty.py") + ":empty"


def bench_launch(rounds: int, launches: int) -> None:
    """Empty C++ (served natively, and through the core's Python) vs empty Python kernel on one mix
    1:2 device, in many short alternating blocks (the machine's load changes over seconds; a block
    of each, back to back, sees the same load), and each core's own time inside the kernel call."""
    k = compile_kernel(os.path.join(HERE, "bench_kernels.cpp"), "empty_kernel", kernel_type=KernelType.MIX_1_2)
    # the same library as a kernel object the parent never sends as a native command (another
    # tiling key, which the empty kernel ignores: a kernel object equal to k would be taken for it)
    k_python = dataclasses.replace(k, tiling_key=1)
    k_python.__dict__["mpnpu_native"] = None
    kernels = {"cxx": k, "cxx-python": k_python, "py": EMPTY_PY}
    ratios: dict[str, list[float]] = {"py": [], "native": []}
    wall: dict[str, list[float]] = {name: [] for name in kernels}
    inside: dict[str, list[float]] = {name: [] for name in kernels}
    block = max(5, launches // 10)
    with Device(1) as dev:
        x = dev.to_device("x", np.zeros(8, np.float32))
        for f in kernels.values():
            for _ in range(20):
                dev.launch(f, x)
        names = list(kernels)
        for r in range(rounds * 10):
            order = names[r % 3:] + names[:r % 3]
            times = {}
            for name in order:
                f = kernels[name]
                t = time.perf_counter()
                for _ in range(block):
                    res = dev.launch(f, x)
                    inside[name].append(max(res.core_elapsed_s))
                times[name] = (time.perf_counter() - t) / block
            ratios["py"].append(times["cxx"] / times["py"])
            ratios["native"].append(times["cxx"] / times["cxx-python"])
            for name in times:
                wall[name].append(times[name] * 1e6)
    med = statistics.median
    q = statistics.quantiles(ratios["py"], n=4)
    print(f"empty launch (1 AI core, 3 core processes): C++ {med(wall['cxx']):.0f} us, "
          f"Python {med(wall['py']):.0f} us; "
          f"ratio median {med(ratios['py']):.2f}x (quartiles {q[0]:.2f}-{q[2]:.2f}, {len(ratios['py'])} alternating "
          f"blocks of {block}; target <= 1.2x); inside the kernel call per core: "
          f"C++ {med(inside['cxx']) * 1e6:.1f} us, Python {med(inside['py']) * 1e6:.1f} us")
    print(f"the same C++ launch through the core's Python (no native serving): {med(wall['cxx-python']):.0f} us; "
          f"native / through Python: median {med(ratios['native']):.2f}x")


def bench_datacopy(rounds: int) -> None:
    k = compile_kernel(os.path.join(HERE, "bench_kernels.cpp"), "datacopy_bandwidth")
    fractions = []
    with Device(1, kernel_type=KernelType.AIV) as dev:
        src = dev.to_device("src", np.arange(64 * 1024, dtype=np.uint8))
        times = dev.empty("times", 2, "int64")
        for _ in range(rounds):
            dev.launch(k, src, times, 64 * 1024, 2000)
            dc, mc = dev.to_host(times)
            fractions.append(mc / dc)
    print(f"DataCopy 64 KiB GM->UB: {statistics.median(fractions) * 100:.0f}% of memcpy's bandwidth (median of "
          f"{rounds}; rounds: {', '.join(f'{f * 100:.0f}%' for f in fractions)}; target >= 50%)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--launches", type=int, default=300)
    args = p.parse_args()
    bench_launch(args.rounds, args.launches)
    bench_datacopy(args.rounds)


if __name__ == "__main__":
    main()
