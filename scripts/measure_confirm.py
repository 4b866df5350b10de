#!/usr/bin/env python
"""How often race-directed reproduction confirms a hazard, under each CPU placement, side by side.

For the chosen variant (default: FLOMS incident, S1 dropped) every placement gets the same N
directed runs (same seeds, so the same cases and hold plans) and the same plans on the fixed
kernel, plus a plain batch with no hold for contrast:

- ``none``:   the OS places the core processes;
- ``spread``: one core process per CPU, round robin (the stand-in for an idle many-core machine,
              where the plain race hardly ever shows).

Prints per placement: harmful runs k/N with a 95% Wilson interval, reversed runs, fixed-kernel
failures under the same plans, and the plain batch's failure rate. The issue's target: harmful
in >= 95% of directed runs under every placement, fixed 0.
Run: python scripts/measure_confirm.py [--runs 40] [--batch-cases 100] [--placements none,spread]
"""

from __future__ import annotations

import argparse
import os
import time

from mpnpu.directed.confirm import confirm_hazards
from mpnpu.harness.runner import Variant, run_batch
from mpnpu.harness.stats import wilson_interval
from mpnpu.harness.stress.placement import available_cpus, spread
from mpnpu.operators.registry import load_operator


def pinner(placement: str):
    if placement == "none":
        return None
    if placement == "spread":
        return lambda dev: spread(dev.core_pids(), available_cpus())
    raise SystemExit(f"unknown placement {placement!r} (none, spread)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--op", default="floms")
    p.add_argument("--drop", default="", help="sync points to drop (default: the operator's incident variant)")
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--scout-cases", type=int, default=8)
    p.add_argument("--batch-cases", type=int, default=100)
    p.add_argument("--block-dim", type=int, default=1)
    p.add_argument("--placements", default="none,spread")
    args = p.parse_args()
    op = load_operator(args.op)
    dropped = frozenset(s for s in args.drop.split(",") if s) or op.variants["incident"]
    print(f"{op.name}, drops {', '.join(sorted(dropped))}, block_dim {args.block_dim} "
          f"({3 * args.block_dim} core processes on {len(available_cpus())} CPUs), load average "
          f"{os.getloadavg()[0]:.1f}")
    for placement in args.placements.split(","):
        on_device = pinner(placement)
        t0 = time.perf_counter()
        r = confirm_hazards(op, dropped=dropped, runs=args.runs, scout_cases=args.scout_cases,
                            block_dim=args.block_dim, on_device=on_device, placement=placement)
        t1 = time.perf_counter()
        batch = run_batch(op, cases=args.batch_cases, repeat=1, variants=[Variant("plain", dropped)],
                          block_dim=args.block_dim, on_device=on_device)
        b = batch.variants["plain"]
        print(f"placement {placement}: directed runs {t1 - t0:.1f} s")
        for c in r.confirmations:
            lo, hi = wilson_interval(c.harmful_runs, len(c.runs))
            h = c.hazard
            print(f"  {h.kind} {h.tensor} ({h.first.stage} -> {h.second.stage}): "
                  f"harmful {c.harmful_runs}/{len(c.runs)} "
                  f"({100 * c.harmful_runs / len(c.runs):.1f}%, 95% CI {100 * lo:.1f}..{100 * hi:.1f}%), "
                  f"reversed {c.reversed}/{len(c.runs)}, fixed under the same plans: "
                  f"{c.fixed_failures}/{len(c.fixed_runs)} failures")
        print(f"  plain batch, no hold: {b.failed_case_runs}/{b.case_runs} case-runs failed")


if __name__ == "__main__":
    main()
