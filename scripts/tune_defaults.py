#!/usr/bin/env python
"""The measurement behind the batch defaults: how often the incident shows, per configuration.

For each block_dim and tile size, runs the incident variant (and, A/B, the fixed one) over the
same seeded cases and prints the incident's failure rate per case-run with a 95% Wilson interval,
the fixed variant's failures, the time per case-run, and how likely a default batch
(cases x repeats case-runs) would be to show at least one failure at that rate.

The defaults were picked from this table: the race must show in a *minority* of case-runs (as on
the device: a few cases fail, different ones each run) yet in practically every default run.

    python scripts/tune_defaults.py --block-dims 1,2 --tiles 64x256x64,32x128x64 --cases 50 --repeat 4
"""

from __future__ import annotations

import argparse
import sys
import time

from mpnpu.cli.commands.batch import DEFAULT_CASES, DEFAULT_REPEAT
from mpnpu.cli.options import DEFAULT_OPERATOR
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.harness.stats import detect_probability
from mpnpu.operators.registry import load_operator
from mpnpu.runtime.procutil import available_cpus

OPERATOR = load_operator(DEFAULT_OPERATOR)  # FLOMS, found by name as the tools find it


def parse_tiles(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(x) for x in item.lower().split("x")) for item in text.split(",")]  # type: ignore[misc]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--block-dims", default="1,2", help="comma-separated block_dim values (default 1,2)")
    p.add_argument("--tiles", default="64x256x64,32x128x64", help="comma-separated MxNxK tile sizes")
    p.add_argument("--cases", type=int, default=DEFAULT_CASES)
    p.add_argument("--repeat", type=int, default=4)
    p.add_argument("--seeds", default="0", help="comma-separated case seeds (default 0)")
    args = p.parse_args()

    default_runs = DEFAULT_CASES * DEFAULT_REPEAT
    print(f"CPUs: {len(available_cpus())}; a default batch has {default_runs} incident case-runs")
    print(f"{'block_dim':>9} {'tiles':>10} {'seed':>4} {'incident rate':>14} {'95% Wilson':>17} "
          f"{'fixed fails':>11} {'ms/case-run':>11} {'P(default run shows it)':>24}")
    for bd in (int(x) for x in args.block_dims.split(",")):
        for tiles in parse_tiles(args.tiles):
            for seed in (int(x) for x in args.seeds.split(",")):
                base_m, base_n, base_k = tiles
                op = OPERATOR.with_options(base_m=base_m, base_n=base_n, base_k=base_k)
                start = time.perf_counter()
                result = run_batch(op, cases=args.cases, repeat=args.repeat, seed=seed, block_dim=bd,
                                   variants=make_variants(op, ("incident", "fixed")))
                elapsed = time.perf_counter() - start
                inc, fixed = result.variants["incident"], result.variants["fixed"]
                lo, hi = inc.wilson95
                runs = inc.case_runs + fixed.case_runs
                print(f"{bd:>9} {base_m}x{base_n}x{base_k:<3} {seed:>4} "
                      f"{inc.failed_case_runs:>5}/{inc.case_runs:<5} {inc.failure_rate:5.1%}"
                      f"{lo:>8.1%}..{hi:<7.1%} {fixed.failed_case_runs:>11} {1000 * elapsed / runs:>11.1f} "
                      f"{detect_probability(inc.failure_rate, default_runs):>24.6f}")
                if result.interrupted:
                    return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
