"""What race checking costs: the same batch with and without it, side by side, in one run.

For each operator (default: FLOMS in C++ and in Python, and the gallery's reduce-early in both), on
one device per operator, pinned to the CPU set ``mpnpu batch`` would use: a warm-up, then ``--rounds``
rounds in which the plain batch and the batch with each check run one after the other, the order
rotating every round (so that none always runs first, on a warmer or quieter machine). Prints
each round's times, then per operator the median of the per-round ratios (check / plain) with
their range, how much time racecheck's analysis took (the CPU seconds of the child process that
analyses at the lowest priority, mpnpu.racecheck.worker: much of it on CPU time the cores left
idle), and how many launches the analysis had to look at (the rest reused the analysis of an
identical one). The machine is shared:
only ratios measured side by side mean anything, and the load average is printed before and
after.

Checks: ``--racecheck`` always; ``--initcheck`` and ``--synccheck`` get a column of their own once
the batch runner takes them (until then the table says they were skipped, and why).

    python scripts/bench_racecheck.py [--ops floms-cxx,floms,reduce-early,reduce-early-cxx]
        [--cases 40] [--repeat 8] [--rounds 5] [--block-dim N] [--seed 0] [--variants incident,fixed]

Targets (issue "Race checking at the kernel's own speed"): racecheck <= 1.5x on FLOMS in C++,
<= 1.3x on FLOMS in Python.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import time
from typing import Any

from benchlib import time_hazard_analysis

from mpnpu.harness.runner import make_variants, prepare_batch, run_batch
from mpnpu.operators.protocol import device_for
from mpnpu.operators.registry import load_operator
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM

DEFAULT_OPS = "floms-cxx,floms,reduce-early,reduce-early-cxx"
#: the checks a column can show, by the run_batch keyword that turns each on
CHECKS = ("racecheck", "initcheck", "synccheck")


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def bench_operator(name: str, args: argparse.Namespace, checks: list[str]) -> dict[str, Any]:
    """The rounds of one operator: per mode, the batch times; racecheck's analysis time and counts."""
    op = load_operator(name)
    variants = make_variants(op, tuple(args.variants.split(",")))
    block_dim = args.block_dim or DEFAULT_BLOCK_DIM
    cpu_set = prepare_batch(op, block_dim=block_dim, cpus_per_core=None, seed=args.seed, cases=args.cases)
    spent = time_hazard_analysis()
    modes = ["plain", *checks]
    times: dict[str, list[float]] = {m: [] for m in modes}
    analysis: list[float] = []
    counts: dict[str, int] = {}
    with device_for(op, block_dim) as dev:
        run_batch(op, cases=min(3, args.cases), repeat=1, variants=variants, device=dev, seed=args.seed,
                  cpu_set=cpu_set)  # warm-up: pool, libraries, caches
        for r in range(args.rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            for mode in order:
                spent[0] = 0.0
                on = {} if mode == "plain" else {mode: True}
                res = run_batch(op, cases=args.cases, repeat=args.repeat, variants=variants, device=dev,
                                seed=args.seed, cpu_set=cpu_set, **on)
                times[mode].append(res.elapsed_s)
                if mode == "racecheck":
                    analysis.append(spent[0])
                    logs = [v.hazard_log for v in res.variants.values() if v.hazard_log is not None]
                    counts = {"checked": sum(log.launches_analyzed for log in logs),
                              "analysed": sum(log.launches_analysed_in_full for log in logs)}
            cells = "  ".join(f"{m} {times[m][-1]:6.2f}s" for m in modes)
            ratios = "  ".join(f"{m}/plain {times[m][-1] / times['plain'][-1]:5.2f}x" for m in checks)
            print(f"  {name:<18} round {r + 1}: {cells}   {ratios}", flush=True)
    return {"times": times, "analysis": analysis, "counts": counts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default=DEFAULT_OPS, help="operators, comma-separated (default: %(default)s)")
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--block-dim", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default="incident,fixed",
                    help="the variants each batch runs, comma-separated (default: %(default)s, an A/B batch; "
                         "'incident' is what `mpnpu batch --op OP` runs)")
    args = ap.parse_args()

    known = inspect.signature(run_batch).parameters
    checks = [c for c in CHECKS if c in known]
    skipped = [c for c in CHECKS if c not in known]
    names = [n.strip() for n in args.ops.split(",") if n.strip()]
    print(f"batch: {args.cases} cases x {args.repeat} repeats x {args.variants}; {args.rounds} rounds, order "
          f"rotating; load average {loadavg()}")
    for c in skipped:
        print(f"  (--{c}: skipped, the batch runner has no such option yet)")
    started = time.perf_counter()
    results = {name: bench_operator(name, args, checks) for name in names}
    print(f"\nmedians over {args.rounds} rounds (range of the per-round ratios), load average now {loadavg()}, "
          f"{time.perf_counter() - started:.0f} s in all")
    head = f"{'operator':<18} {'plain s':>8}" + "".join(f" {c + ' s':>12} {c + '/plain':>22}" for c in checks)
    print(head + f" {'analysis s':>11}  launches analysed")
    for name, r in results.items():
        t = r["times"]
        line = f"{name:<18} {statistics.median(t['plain']):>8.2f}"
        for c in checks:
            ratios = [a / b for a, b in zip(t[c], t["plain"])]
            line += (f" {statistics.median(t[c]):>12.2f} {statistics.median(ratios):>8.2f}x "
                     f"({min(ratios):.2f}-{max(ratios):.2f}x)")
        if r["analysis"]:
            n = r["counts"]
            line += f" {statistics.median(r['analysis']):>11.2f}  {n.get('analysed', 0)} of {n.get('checked', 0)}"
        print(line)


if __name__ == "__main__":
    main()
