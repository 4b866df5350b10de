#!/usr/bin/env python
"""Case-runs per second with 1 slot vs N slots (parallel devices pinned to disjoint CPUs), side by side.

Both sides run the same shards (the fixed FLOMS kernel; block_dim 1; --cpus-per-core CPUs per AI
core, so every shard's device has the same crowding on either side) through the same slot
machinery: side A has 1 slot on the first CPUs, side B has N slots on N times as many CPUs. Rounds
alternate A, B, so load drifting on a shared machine hits both alike. Prints per round the
throughputs, and the median scaling efficiency = throughput(N) / (N x throughput(1)), beside the
machine's own ceiling: how much more N pure-Python busy loops on N CPUs get done than one (below N
when CPUs are SMT siblings, shared with other load, or capped by a VM).

    python scripts/bench_slots.py                 # 1 vs 2 slots at 1 CPU per AI core (fits 2 CPUs)
    python scripts/bench_slots.py --slots 8 --cpus-per-core 2 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from mpnpu.cli.options import DEFAULT_OPERATOR
from mpnpu.harness.runner import make_variants
from mpnpu.harness.stress.plan import Configuration
from mpnpu.operators.registry import load_operator
from mpnpu.runtime import cpuset
from mpnpu.scale.shards import ShardPlan, make_shards
from mpnpu.scale.slots import run_in_slots


def one(shards, plan, jobs: int, cpus: list[int]) -> tuple[float, int]:
    start = time.perf_counter()
    run = run_in_slots(shards, plan, jobs=jobs, cpus=cpus)
    wall = time.perf_counter() - start
    if run.interrupted or run.retries or run.not_run:
        raise SystemExit(f"run with {jobs} slot(s) did not complete: {run.retries} {run.not_run}")
    n = sum(r.case_runs() for r in run.results)
    return n / wall, n


def _spin(cpu: int, seconds: float, out) -> None:
    os.sched_setaffinity(0, [cpu])
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    out.put(n)


def cpu_ceiling(cpus: list[int], seconds: float = 1.0) -> float:
    """How much more pure-Python work N processes pinned to N CPUs get done than one: the most
    N slots could gain on this machine right now (SMT siblings, other load, VM CPU shares)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")

    def run(on: list[int]) -> int:
        q = ctx.Queue()
        procs = [ctx.Process(target=_spin, args=(c, seconds, q)) for c in on]
        for p in procs:
            p.start()
        total = sum(q.get(timeout=seconds + 30) for _ in procs)
        for p in procs:
            p.join(5)
        return total

    return run(cpus) / run(cpus[:1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--slots", type=int, default=2, help="slots of side B (default 2)")
    p.add_argument("--cpus-per-core", type=int, default=1, help="CPUs per AI core of every device (default 1)")
    p.add_argument("--shards", type=int, default=8, help="shards per run (default 8)")
    p.add_argument("--shard-cases", type=int, default=25, help="cases per shard (default 25)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = p.parse_args()

    cpus = cpuset.real_cpus()
    per_slot = args.cpus_per_core
    if args.slots * per_slot > len(cpus):
        raise SystemExit(f"{args.slots} slots x {per_slot} CPUs do not fit on {len(cpus)} CPUs")
    op = load_operator(DEFAULT_OPERATOR)
    plan = ShardPlan(op, tuple(make_variants(op, ["fixed"])), cpus_per_core=per_slot)
    shards = make_shards([Configuration(1)], args.shards * args.shard_cases, shard_cases=args.shard_cases)
    print(f"{len(shards)} shards x {args.shard_cases} cases of the fixed kernel, block_dim 1, {per_slot} CPU(s) per "
          f"AI core; A: 1 slot on CPUs {cpuset.format_cpus(cpus[:per_slot])}, B: {args.slots} slots on CPUs "
          f"{cpuset.format_cpus(cpus[:args.slots * per_slot])}; machine CPUs: {len(cpus)}, load average "
          f"{os.getloadavg()[0]:.1f}")
    one(shards[:1], plan, 1, cpus[:per_slot])  # warm-up: imports, caches
    effs, ceilings = [], []
    for r in range(args.rounds):
        ceilings.append(cpu_ceiling([cpus[i * per_slot] for i in range(args.slots)]))
        a, n = one(shards, plan, 1, cpus[:per_slot])
        b, _ = one(shards, plan, args.slots, cpus[:args.slots * per_slot])
        eff = b / (args.slots * a)
        effs.append(eff)
        print(f"round {r + 1}: {n} case-runs; 1 slot {a:.1f} case-runs/s, {args.slots} slots {b:.1f} case-runs/s "
              f"(x{b / a:.2f}); efficiency {eff:.0%}; CPU ceiling x{ceilings[-1]:.2f} (busy loops, 1 vs "
              f"{args.slots} CPUs)", flush=True)
    ceiling = statistics.median(ceilings)
    print(f"median scaling efficiency, {args.slots} slots vs 1: {statistics.median(effs):.0%}; the machine itself "
          f"gave x{ceiling:.2f} for {args.slots} busy loops on {args.slots} CPUs, so relative to what it can give: "
          f"{statistics.median(effs) * args.slots / ceiling:.0%} (load average now {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
