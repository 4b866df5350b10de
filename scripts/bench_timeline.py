"""What a timeline costs: the same batch plain, with --racecheck, and with timeline selection, side by side.

Runs the batch library (:func:`mpnpu.harness.runner.run_batch`) on one persistent device, rotating
the order of the three modes every round so that none always runs on a warmer or quieter machine:

- plain: no tracing;
- racecheck: every launch traced and analysed (the analysis time is measured separately, so the
  cost of racecheck's *tracing alone* can be shown);
- timeline: what ``--timeline`` does during the batch (:class:`mpnpu.harness.timeline.TimelineSelector`:
  a variant that has not failed traces every launch, then only runs of its failing case), plus,
  measured separately, building the kept launches' timelines and writing the JSON file.

Target: the timeline run costs no more than racecheck's tracing (ratio timeline / racecheck-tracing
<= 1). The machine is shared, so only ratios measured side by side mean anything.

    python scripts/bench_timeline.py [--cases 20] [--repeat 2] [--rounds 5] [--block-dim N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from benchlib import time_hazard_analysis

from mpnpu.cli.options import DEFAULT_OPERATOR
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.harness.timeline import TimelineSelector, build_timeline
from mpnpu.operators.registry import load_operator
from mpnpu.report.chrome_trace import write_chrome_trace
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM
from mpnpu.runtime.device import Device


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--block-dim", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    op = load_operator(DEFAULT_OPERATOR)
    variants = make_variants(op, ("incident", "fixed"))
    block_dim = args.block_dim or DEFAULT_BLOCK_DIM
    analysis = time_hazard_analysis()
    launches = args.cases * args.repeat * len(variants)
    print(f"batch: {args.cases} cases x {args.repeat} repeats x incident, fixed = {launches} launches, "
          f"block_dim {block_dim}; {args.rounds} rounds, order rotated")
    print(f"{'round':>5} {'plain s':>8} {'racecheck s':>12} {'(tracing)':>10} {'timeline s':>11} {'traced':>7} "
          f"{'write s':>8} {'tl/plain':>9} {'rc/plain':>9} {'tl/rc-tracing':>14}")
    rows = []
    with Device(block_dim) as dev, tempfile.TemporaryDirectory() as tmp:
        run_batch(op, cases=min(3, args.cases), repeat=1, variants=variants, device=dev, seed=args.seed)  # warm-up
        modes = ["plain", "racecheck", "timeline"]
        for r in range(args.rounds):
            t: dict[str, float] = {}
            order = modes[r % 3:] + modes[:r % 3]
            for mode in order:
                analysis[0] = 0.0
                selector = TimelineSelector([v.name for v in variants]) if mode == "timeline" else None
                traced = [0]
                if selector is not None:
                    wants = selector.wants

                    def counting_wants(variant, case, _wants=wants, _traced=traced):
                        w = _wants(variant, case)
                        _traced[0] += w
                        return w

                    selector.wants = counting_wants  # type: ignore[method-assign]
                res = run_batch(op, cases=args.cases, repeat=args.repeat, variants=variants, device=dev,
                                seed=args.seed, racecheck=mode == "racecheck", timeline=selector)
                t[mode] = res.elapsed_s
                if mode == "racecheck":
                    t["tracing"] = res.elapsed_s - analysis[0]
                if selector is not None:
                    t0 = time.perf_counter()
                    runs = selector.kept()
                    tls = [build_timeline(k.trace, label=k.label, role=k.role, passed=k.passed, summary=k.summary)
                           for k in runs]
                    size = write_chrome_trace(os.path.join(tmp, "t.json"), tls)
                    t["write"] = time.perf_counter() - t0
                    t["traced"] = traced[0]
                    t["kb"] = size / 1024
            rows.append(t)
            print(f"{r + 1:>5} {t['plain']:>8.2f} {t['racecheck']:>12.2f} {t['tracing']:>10.2f} {t['timeline']:>11.2f} "
                  f"{int(t['traced']):>7} {t['write']:>8.2f} {t['timeline'] / t['plain']:>8.2f}x "
                  f"{t['racecheck'] / t['plain']:>8.2f}x {t['timeline'] / t['tracing']:>13.2f}x")

    def med(key: str) -> float:
        return statistics.median(row[key] for row in rows)

    def med_ratio(a: str, b: str) -> float:
        return statistics.median(row[a] / row[b] for row in rows)

    print(f"median: plain {med('plain'):.2f} s, racecheck {med('racecheck'):.2f} s (tracing alone "
          f"{med('tracing'):.2f} s), timeline {med('timeline'):.2f} s + {med('write'):.2f} s to build and write "
          f"{med('kb'):.0f} KB; launches traced for the timeline: {med('traced'):.0f} of {launches}")
    print(f"median ratios: timeline / plain {med_ratio('timeline', 'plain'):.2f}x, racecheck / plain "
          f"{med_ratio('racecheck', 'plain'):.2f}x, timeline / racecheck's tracing "
          f"{med_ratio('timeline', 'tracing'):.2f}x (target <= 1)")


if __name__ == "__main__":
    main()
