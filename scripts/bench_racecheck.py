"""What --racecheck costs: the same batch with and without it, side by side, in one run.

Runs the batch (``python -m mpnpu.batch``'s library, :func:`mpnpu.harness.runner.run_batch`) on one
persistent device, alternating plain / racecheck (and swapping which goes first every round, so
that neither always runs on a warmer or quieter machine), for several rounds, and prints each
round's times and ratio, then the median ratio. The machine is shared, so only ratios measured
side by side mean anything.

Racecheck time splits into the cores' tracing (recording events, byte ranges and sites, and
shipping them back: inside the launches) and the parent's happens-before analysis (between
launches); the analysis share is measured separately and printed too.

    /work/venv/bin/python scripts/bench_racecheck.py [--cases 20] [--repeat 1] [--rounds 5]
        [--variant both|incident|fixed] [--block-dim N]

For reference: compute-sanitizer's racecheck has been measured near 18x, research detectors ~3x;
the target here is <= 2x.
"""

from __future__ import annotations

import argparse
import statistics

from benchlib import time_hazard_analysis

from mpnpu.cli.options import DEFAULT_OPERATOR
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.operators.registry import load_operator
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM
from mpnpu.runtime.device import Device


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variant", choices=("both", "incident", "fixed"), default="both")
    ap.add_argument("--block-dim", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    op = load_operator(DEFAULT_OPERATOR)
    names = ("incident", "fixed") if args.variant == "both" else (args.variant,)
    variants = make_variants(op, names)
    block_dim = args.block_dim or DEFAULT_BLOCK_DIM

    analysis = time_hazard_analysis()
    launches = args.cases * args.repeat * len(variants)
    print(f"batch: {args.cases} cases x {args.repeat} repeats x {', '.join(names)} = {launches} launches, "
          f"block_dim {block_dim}; {args.rounds} rounds, alternating")
    print(f"{'round':>5} {'plain s':>9} {'racecheck s':>12} {'analysis s':>11} {'ratio':>7} {'ratio w/o analysis':>19}")
    ratios, ratios_tracing, plain_t, rc_t = [], [], [], []
    hazards: dict[str, int] = {}
    with Device(block_dim) as dev:
        run_batch(op, cases=min(3, args.cases), repeat=1, variants=variants, device=dev, seed=args.seed)  # warm-up
        for r in range(args.rounds):
            t: dict[bool, float] = {}
            order = (False, True) if r % 2 == 0 else (True, False)
            for rc in order:
                analysis[0] = 0.0
                res = run_batch(op, cases=args.cases, repeat=args.repeat, variants=variants, device=dev,
                                seed=args.seed, racecheck=rc)
                t[rc] = res.elapsed_s
                if rc:
                    spent = analysis[0]
                    hazards = {name: len(v.hazard_log) for name, v in res.variants.items()}
            ratio = t[True] / t[False]
            ratio_tracing = (t[True] - spent) / t[False]
            ratios.append(ratio)
            ratios_tracing.append(ratio_tracing)
            plain_t.append(t[False])
            rc_t.append(t[True])
            print(f"{r + 1:>5} {t[False]:>9.2f} {t[True]:>12.2f} {spent:>11.2f} {ratio:>6.2f}x {ratio_tracing:>18.2f}x")
    print(f"median: plain {statistics.median(plain_t):.2f} s, racecheck {statistics.median(rc_t):.2f} s, "
          f"ratio {statistics.median(ratios):.2f}x (tracing alone {statistics.median(ratios_tracing):.2f}x); "
          f"per launch +{(statistics.median(rc_t) - statistics.median(plain_t)) / launches * 1e3:.1f} ms")
    print(f"total over all rounds: ratio {sum(rc_t) / sum(plain_t):.2f}x")
    print("hazards found (distinct, last racecheck round): " + ", ".join(f"{k} {v}" for k, v in hazards.items()))


if __name__ == "__main__":
    main()
