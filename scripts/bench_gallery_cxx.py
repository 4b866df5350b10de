"""The gallery's Ascend C twins beside their Python originals, on the same cases, side by side:

- how often the incident (the sync points the bug lacks) gives a wrong output: the C++ operator's
  rate and the Python twin's, over the same seeded cases, the two run one after the other per case
  (who goes first alternates);
- how long a batch of the fixed kernel takes: every case's ``op.run`` (GM in, the launch, GM out)
  back to back on one device, as a batch runs them; the golden and the judging are the same
  Python code for both and are not timed. The twins take turns by batch, ``--rounds`` times (who
  goes first alternates), each round on a fresh pair of devices (a device's speed depends on
  where its core processes landed); the ratio is the median over the rounds of Python's batch /
  C++'s batch in the same round. Also the median case-run and the median launch alone;
- the floor under both: the median launch of an empty kernel (C++ and Python) on the same devices.

Devices: the Python twins on ``Device(block_dim)`` (1 cube + 2 vector core processes per AI core);
a C++ mix kernel on the same, a vector-only C++ kernel on ``Device(2 * block_dim,
kernel_type=AIV)`` (the same vector cores, without the idle cube). Libraries are built before
anything is timed.

Usage: python scripts/bench_gallery_cxx.py [--cases 100] [--rounds 5] [--seed 1] [--block-dim 1] [--kernels a,b]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time
from typing import Any

import numpy as np

from mpnpu.ascendc import compile_kernel
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = ("accum_init", "aiv_barrier", "flag_reuse", "reduce_early", "vecin_early_read", "double_buffer_reuse")


def _device(op: Any, block_dim: int) -> Device:
    kt = getattr(op, "device_kernel_type", None)
    if kt is None:  # a Python kernel
        return Device(block_dim)
    return Device(2 * block_dim if kt is KernelType.AIV else block_dim, kernel_type=kt)


def _wrong(op: Any, dev: Device, case: Any, prepared: Any) -> bool:
    outputs, _ = op.run(dev, case, drop_syncs=op.variants["incident"])
    return not op.judge(case, prepared, outputs).passed


def bench(folder: str, n_cases: int, seed: int, block_dim: int, rounds: int) -> dict[str, Any]:
    """One kernel's rates and times (see the module docstring)."""
    module = importlib.import_module(f"mpnpu.kernels.{folder}.operator")
    cxx, py = module.OPERATOR_CXX, module.OPERATOR
    cases = [cxx.make_case(seed, i) for i in range(n_cases)]
    prepared = [cxx.prepare(c) for c in cases]
    for c in cases:  # every library this batch needs, built before anything is timed
        cxx.kernel_for(c)
    wrong = {"cxx": 0, "py": 0}
    batch: dict[str, list[float]] = {"cxx": [], "py": []}
    launch: dict[str, list[float]] = {"cxx": [], "py": []}
    runs: dict[str, list[float]] = {"cxx": [], "py": []}
    with _device(cxx, block_dim) as dev_cxx, _device(py, block_dim) as dev_py:
        ops = {"cxx": (cxx, dev_cxx), "py": (py, dev_py)}
        for op, dev in ops.values():
            for c in cases[:3]:
                op.run(dev, c)
        for i, (case, prep) in enumerate(zip(cases, prepared)):
            for name in (("cxx", "py") if i % 2 == 0 else ("py", "cxx")):
                op, dev = ops[name]
                wrong[name] += _wrong(op, dev, case, prep)
    # The fixed kernel's batch: every case back to back on one device, as a batch runs them, the
    # twins taking turns (who goes first alternates); judged after the round. Each round on a fresh
    # pair of devices: how fast a device runs depends on where the scheduler put its core processes,
    # for the device's whole life (a twin's median case-run ranged 239-663 us over 10 fresh devices),
    # so one pair would measure that pair's luck rather than the twins.
    for r in range(rounds):
        with _device(cxx, block_dim) as dev_cxx, _device(py, block_dim) as dev_py:
            ops = {"cxx": (cxx, dev_cxx), "py": (py, dev_py)}
            for op, dev in ops.values():  # (untimed: each core process loads each library, maps GM, once)
                for c in cases:
                    op.run(dev, c)
            for name in (("cxx", "py") if r % 2 == 0 else ("py", "cxx")):
                op, dev = ops[name]
                outputs = []
                start = time.perf_counter()
                for case in cases:
                    t = time.perf_counter()
                    out, result = op.run(dev, case)
                    runs[name].append(time.perf_counter() - t)
                    launch[name].append(result.elapsed_s)
                    outputs.append(out)
                batch[name].append(time.perf_counter() - start)
                for case, prep, out in zip(cases, prepared, outputs):
                    if not op.judge(case, prep, out).passed:
                        raise AssertionError(f"{folder} ({name}) fixed kernel wrong on {case.describe()}")
    med = statistics.median
    return {"wrong": wrong, "batch": {k: med(v) for k, v in batch.items()},
            "ratios": [p / c for p, c in zip(batch["py"], batch["cxx"])],
            "run": {k: med(v) for k, v in runs.items()}, "launch": {k: med(v) for k, v in launch.items()}}


def empty_floor(block_dim: int, launches: int = 200) -> dict[str, float]:
    """Median launch of an empty kernel: C++ on a mix and on a vector-only device, Python on a mix one."""
    out = {}
    cxx = os.path.join(HERE, "ascendc", "bench_kernels.cpp")
    py = os.path.join(HERE, "ascendc", "empty.py") + ":empty"
    for label, kt, n in (("mix", KernelType.MIX_1_2, block_dim), ("aiv", KernelType.AIV, 2 * block_dim)):
        k = compile_kernel(cxx, "empty_kernel", kernel_type=kt)
        with Device(n, kernel_type=kt) as dev:
            x = dev.to_device("x", np.zeros(8, np.float32))
            for _ in range(20):
                dev.launch(k, x)
            out[f"cxx {label}"] = statistics.median(dev.launch(k, x).elapsed_s for _ in range(launches))
    with Device(block_dim) as dev:
        x = dev.to_device("x", np.zeros(8, np.float32))
        for _ in range(20):
            dev.launch(py, x)
        out["py mix"] = statistics.median(dev.launch(py, x).elapsed_s for _ in range(launches))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100, help="case-runs per kernel and variant (default 100)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--block-dim", type=int, default=1, help="AI cores (default 1)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="timed batches of the fixed kernel per twin, taking turns, each round on fresh devices "
                         "(default 5)")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated gallery folders")
    args = ap.parse_args()
    n = args.cases
    print(f"gallery C++ twins vs Python originals: {n} cases each (seed {args.seed}), block_dim {args.block_dim}")
    floor = empty_floor(args.block_dim)
    print("empty launch (the floor): " + ", ".join(f"{k} {1e3 * v:.2f} ms" for k, v in floor.items()))
    print(f"{'kernel':<20} {'incident wrong: C++':>20} {'Python':>12}   {'fixed batch: C++':>16} {'Python':>9} "
          f"{'ratio':>6}   {'median case-run: C++':>20} {'Python':>9} {'ratio':>6}   {'median launch: C++':>18} "
          f"{'Python':>9}")
    ratios = []
    for folder in args.kernels.split(","):
        r = bench(folder, n, args.seed, args.block_dim, args.rounds)
        w, b, lt, rn = r["wrong"], r["batch"], r["launch"], r["run"]
        ratio = statistics.median(r["ratios"])
        ratios.append(ratio)
        print(f"{folder:<20} {w['cxx']:>6}/{n} ({100 * w['cxx'] / n:3.0f}%)    "
              f"{w['py']:>3}/{n} ({100 * w['py'] / n:3.0f}%)"
              f"   {b['cxx']:>14.3f} s {b['py']:>7.3f} s {ratio:>5.2f}x"
              f"   {1e3 * rn['cxx']:>17.2f} ms {1e3 * rn['py']:>6.2f} ms {rn['py'] / rn['cxx']:>5.2f}x"
              f"   {1e3 * lt['cxx']:>15.2f} ms {1e3 * lt['py']:>6.2f} ms", flush=True)
    print(f"speed ratio (Python batch / C++ batch): median {statistics.median(ratios):.2f}x, "
          f"min {min(ratios):.2f}x, max {max(ratios):.2f}x")


if __name__ == "__main__":
    main()
