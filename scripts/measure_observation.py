#!/usr/bin/env python
"""Does observing a race mask it? The incident variant's failure rate with and without racecheck's
tracing, side by side, for every gallery operator (Python and C++) and FLOMS.

For each operator, one device runs, alternating, a plain batch of the incident variant and the same
batch with racecheck (the same cases and seeds), ``--rounds`` times; the failure rates are printed
side by side with 95% Wilson intervals. A race that shows untraced must show traced too: tracing
time is left out of the pipes' clock (mpnpu.runtime.pipes.PipeEngine.observed), so copies run when
an untraced launch's would.
Run: python scripts/measure_observation.py [--cases 40] [--repeat 4] [--rounds 1] [--ops a,b,...]
"""

from __future__ import annotations

import argparse
import time

from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.harness.stats import wilson_interval
from mpnpu.operators.protocol import default_block_dim, device_for
from mpnpu.operators.registry import load_operator

GALLERY = ("accum-init", "aiv-barrier", "flag-reuse", "reduce-early", "vecin-early-read", "double-buffer-reuse")
DEFAULT_OPS = (*GALLERY, *(f"{name}-cxx" for name in GALLERY), "floms", "floms-cxx")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=40)
    p.add_argument("--repeat", type=int, default=4)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--ops", default=",".join(DEFAULT_OPS))
    args = p.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}")
    print(f"{'operator':<26} {'plain':>24} {'racecheck':>24}")
    for name in args.ops.split(","):
        op = load_operator(name)
        incident = make_variants(op, ["incident"])
        counts = {False: [0, 0], True: [0, 0]}
        t0 = time.perf_counter()
        with device_for(op, default_block_dim(op)) as dev:
            for r in range(args.rounds):
                for traced in (False, True):
                    res = run_batch(op, cases=args.cases, repeat=args.repeat, seed=r, variants=incident,
                                    racecheck=traced, device=dev)
                    v = next(iter(res.variants.values()))
                    counts[traced][0] += v.failed_case_runs
                    counts[traced][1] += v.case_runs

        def cell(k: int, n: int) -> str:
            lo, hi = wilson_interval(k, n)
            return f"{k}/{n} ({100 * lo:.0f}..{100 * hi:.0f}%)"

        print(f"{name:<26} {cell(*counts[False]):>24} {cell(*counts[True]):>24}   ({time.perf_counter() - t0:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main()
