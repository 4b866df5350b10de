"""What explains each failing launch of an incident: a cross-core hazard in the wrong order, or a core's
own pipes running its GM accesses out of issue order (which racecheck does not report)?

Runs the operator's incident variant traced (``check_case``: racecheck on every launch) over cases
0..N-1, R times, builds each launch's timeline and counts the case-runs by verdict and by what the
timeline shows: a racecheck hazard pair whose second access started before the first had finished
("cross-core"), a pipe-order inversion inside a core (:mod:`mpnpu.harness.timeline.inversions`),
both, or neither. A failure with neither would be a failure the timeline cannot explain.

    python scripts/measure_inversions.py [--op floms] [--cases 30] [--repeat 3] [--block-dim 1]
"""

from __future__ import annotations

import argparse
from collections import Counter

from mpnpu.cli.options import DEFAULT_OPERATOR
from mpnpu.harness.timeline import build_timeline
from mpnpu.operators.registry import load_operator
from mpnpu.racecheck import check_case
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", default=DEFAULT_OPERATOR)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--block-dim", type=int, default=1)
    args = ap.parse_args()
    op = load_operator(args.op)
    dropped = set(op.variants["incident"])
    counts: Counter = Counter()
    with Device(args.block_dim, options=RuntimeOptions(gm_segment_bytes=64 << 20)) as dev:
        for _ in range(args.repeat):
            for i in range(args.cases):
                res = check_case(op, dev, op.make_case(0, i), drop_syncs=dropped)
                tl = build_timeline(res.launch.trace)
                cross = any(r.inverted for r in tl.races if r.hazard.scope == "GM")
                # inside a core: an observed inversion, or a racecheck hazard inside the core (the
                # timeline draws that one instead of the inversion) whose pair ran out of order
                inside = bool(tl.inversions) or any(r.inverted for r in tl.races if r.hazard.scope == "core")
                names = {(True, True): "both", (True, False): "cross-core hazard only",
                         (False, True): "pipe-order inversion only", (False, False): "neither"}
                shown = names[(cross, inside)]
                counts[("passed" if res.passed else "FAILED", shown)] += 1
    print(f"{op.name}, incident (drops {', '.join(sorted(dropped))}), cases 0..{args.cases - 1} x {args.repeat}, "
          f"block_dim {args.block_dim}: what the timeline shows in the wrong order")
    for verdict in ("FAILED", "passed"):
        row = {k[1]: v for k, v in counts.items() if k[0] == verdict}
        total = sum(row.values())
        parts = ", ".join(f"{name} {row.get(name, 0)}" for name in
                          ("cross-core hazard only", "pipe-order inversion only", "both", "neither"))
        print(f"  {verdict:6s} {total:4d}: {parts}")


if __name__ == "__main__":
    main()
