#!/usr/bin/env python
"""FLOMS in Ascend C (floms-cxx) next to the CPU golden and the Python FLOMS, side by side in one run.

On the same seeded default cases, interleaved case by case (the order rotating every round, so that
the machine's load falls on all of them alike), with OpenBLAS at one thread as the batch runs it:

- golden: the CPU golden alone (``golden.golden``), the baseline;
- C++ batch: one case-run as the batch makes it, ``OPERATOR_CXX.run`` (GM allocation, copies in,
  launch, copies out) + ``judge``, on a device with asynchronous pipes (the default);
- C++ in order: the same on a device with ``RuntimeOptions(pipes="sync")``;
- C++ callbacks: the C++ batch on a device whose cores call back into Python for every SyncAll and
  flag (``MPNPU_NATIVE_SYNC=0``, as before the library drove them itself);
- C++ sleeping: the C++ batch on a device whose waiting cores sleep at once
  (``RuntimeOptions(spin_us=0)``; the default looks first: docs/device-model.md, "Waiting");
- Python: the Python FLOMS kernel's case-run (``OPERATOR.run`` + ``judge``), asynchronous pipes.

Prints ms per case for each, per round and the median, and the ratios: C++ batch / golden (target
<= 1.5), C++ async / C++ in order (target <= 1.3), C++ native syncs / C++ callbacks, C++ / C++ sleeping, Python / golden
and Python / C++. Also the CPU time of the C++ device's core processes per case-run (cube, vector),
which the shared machine's load changes less than wall times.

    python scripts/bench_floms_cxx.py [--cases 40] [--rounds 3] [--block-dim 1] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import psutil

from mpnpu.ascendc.native.bridge import NATIVE_SYNC_ENV
from mpnpu.operators.registry import load_operator
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.procutil import available_cpus, blas_threads
from mpnpu.runtime.topology import CoreType

OPERATOR = load_operator("floms")
OPERATOR_CXX = load_operator("floms-cxx")

TARGET_GOLDEN = 1.5
TARGET_PIPES = 1.3
KINDS = ("golden", "cxx", "cxx_sync", "cxx_callbacks", "cxx_sleeping", "python")
LABELS = {"golden": "golden alone", "cxx": "C++ batch (async pipes)", "cxx_sync": "C++ in order (pipes sync)",
          "cxx_callbacks": "C++ with sync callbacks", "cxx_sleeping": "C++ with waits that sleep at once",
          "python": "Python FLOMS batch"}


def _cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        t = p.cpu_times()
        total += t.user + t.system
    return total


def _callback_device(block_dim: int, case: object) -> Device:
    """A device whose core processes call back for every sync (their environment is the parent's at
    the fork, which the first launch makes sure of)."""
    previous = os.environ.get(NATIVE_SYNC_ENV)
    os.environ[NATIVE_SYNC_ENV] = "0"
    try:
        dev = Device(block_dim)
        try:
            OPERATOR_CXX.run(dev, case)
        except BaseException:
            dev.close()
            raise
    finally:
        if previous is None:
            del os.environ[NATIVE_SYNC_ENV]
        else:
            os.environ[NATIVE_SYNC_ENV] = previous
    return dev


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=40, help="seeded default cases (default 40)")
    ap.add_argument("--rounds", type=int, default=3, help="passes over the cases (default 3)")
    ap.add_argument("--block-dim", type=int, default=1, help="AI cores (default 1, as the batch)")
    ap.add_argument("--seed", type=int, default=0, help="case stream seed (default 0)")
    args = ap.parse_args(argv)
    cases = [OPERATOR.make_case(args.seed, i) for i in range(args.cases)]
    prepared = [OPERATOR.prepare(c) for c in cases]
    n = len(cases)
    print(f"bench: {n} FLOMS cases (seed {args.seed}, default shapes), block_dim {args.block_dim} "
          f"({3 * args.block_dim} core processes per device on {len(available_cpus())} CPUs), {args.rounds} rounds")

    with Device(args.block_dim) as dev, Device(args.block_dim, options=RuntimeOptions(pipes="sync")) as dev_sync, \
            _callback_device(args.block_dim, cases[0]) as dev_callbacks, \
            Device(args.block_dim, options=RuntimeOptions(spin_us=0)) as dev_sleeping, blas_threads(1):
        devices = {"cxx": dev, "cxx_sync": dev_sync, "cxx_callbacks": dev_callbacks, "cxx_sleeping": dev_sleeping}

        def one(kind: str, i: int) -> float:
            case = cases[i]
            t0 = time.perf_counter()
            if kind == "golden":
                OPERATOR.golden(case)
            elif kind == "python":
                out, _ = OPERATOR.run(dev, case)
                OPERATOR.judge(case, prepared[i], out)
            else:
                out, _ = OPERATOR_CXX.run(devices[kind], case)
                OPERATOR_CXX.judge(case, prepared[i], out)
            return time.perf_counter() - t0

        for i in range(n):  # warm-up: every library built and loaded, GM faulted in, caches filled
            for kind in KINDS:
                one(kind, i)
        cores = [psutil.Process(p) for p in dev.core_pids()]
        is_cube = [info.core_type is CoreType.CUBE for info in dev.topology.cores]
        rows: list[dict[str, float]] = []
        cpu_cxx = {"cube": 0.0, "vector": 0.0}
        for r in range(args.rounds):
            spent = dict.fromkeys(KINDS, 0.0)
            for i in range(n):
                order = KINDS[(i + r) % len(KINDS):] + KINDS[:(i + r) % len(KINDS)]
                for kind in order:
                    before = [_cpu([p]) for p in cores] if kind == "cxx" else None
                    spent[kind] += one(kind, i)
                    if before is not None:
                        for c, cube, b in zip(cores, is_cube, before):
                            cpu_cxx["cube" if cube else "vector"] += _cpu([c]) - b
            row = {k: 1000 * v / n for k, v in spent.items()}
            rows.append(row)
            print(f"  round {r + 1}: " + ", ".join(f"{k} {row[k]:6.2f}" for k in KINDS) + " ms/case; "
                  f"C++/golden {row['cxx'] / row['golden']:.2f}x, async/sync {row['cxx'] / row['cxx_sync']:.2f}x")
    med = {k: statistics.median(r[k] for r in rows) for k in KINDS}
    ratio_golden = statistics.median(r["cxx"] / r["golden"] for r in rows)
    ratio_pipes = statistics.median(r["cxx"] / r["cxx_sync"] for r in rows)
    runs = n * args.rounds
    print("median ms per case: " + ", ".join(f"{LABELS[k]} {med[k]:.2f}" for k in KINDS))
    print(f"C++ batch / golden alone: {ratio_golden:.2f}x (target <= {TARGET_GOLDEN}: "
          f"{'met' if ratio_golden <= TARGET_GOLDEN else 'NOT met'})")
    print(f"C++ async / C++ in order: {ratio_pipes:.2f}x (target <= {TARGET_PIPES}: "
          f"{'met' if ratio_pipes <= TARGET_PIPES else 'NOT met'})")
    ratio_native = statistics.median(r["cxx"] / r["cxx_callbacks"] for r in rows)
    print(f"C++ native syncs / C++ sync callbacks: {ratio_native:.2f}x")
    ratio_spin = statistics.median(r["cxx"] / r["cxx_sleeping"] for r in rows)
    print(f"C++ (waits look first) / C++ (waits sleep at once): {ratio_spin:.2f}x")
    print(f"Python FLOMS / golden alone: {statistics.median(r['python'] / r['golden'] for r in rows):.2f}x; "
          f"Python / C++: {statistics.median(r['python'] / r['cxx'] for r in rows):.2f}x")
    print(f"CPU time of the C++ device's core processes per case-run: cube {1000 * cpu_cxx['cube'] / runs:.2f} ms, "
          f"vector {1000 * cpu_cxx['vector'] / runs:.2f} ms (both vector cores); load average "
          f"{', '.join(f'{x:.1f}' for x in psutil.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
