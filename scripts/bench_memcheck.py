#!/usr/bin/env python
"""What memcheck costs on the default batch: the same batch with ``RuntimeOptions(memcheck=True)``
(the default) and ``memcheck=False``, side by side in one run.

The default batch is ``mpnpu batch``'s: the default operator, 100 cases x 8 repeats, both
variants, block_dim DEFAULT_BLOCK_DIM. Its repeats are run one at a time, alternating which
setting goes first, each on its own persistent device (so both see the same machine load and the
same kind of stale GM), and the wall time of each setting is summed. Prints the seconds of each,
per repeat and in total, and the ratio on / off (1.00 = no cost) with the median and range of the
repeats' ratios (on a shared machine one repeat can be 20% off either way).

    python scripts/bench_memcheck.py [--cases 100] [--repeat 8] [--op NAME]
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Sequence

from mpnpu import DEFAULT_BLOCK_DIM, RuntimeOptions, load_operator
from mpnpu.cli.commands.batch import DEFAULT_CASES, DEFAULT_REPEAT
from mpnpu.cli.common import ArgumentParser, run_cli
from mpnpu.cli.options import DEFAULT_OPERATOR, positive_int
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.operators.protocol import device_for
from mpnpu.runtime.procutil import available_cpus


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--op", default=DEFAULT_OPERATOR, help="operator (default: the default batch's)")
    parser.add_argument("--cases", type=positive_int, default=DEFAULT_CASES)
    parser.add_argument("--repeat", type=positive_int, default=DEFAULT_REPEAT)
    args = parser.parse_args(argv)
    op = load_operator(args.op)
    variants = make_variants(op, ("incident", "fixed"))
    settings = {"on": RuntimeOptions(memcheck=True), "off": RuntimeOptions(memcheck=False)}
    spent = {name: 0.0 for name in settings}
    ratios = []
    failed = {name: 0 for name in settings}
    print(f"memcheck on vs off: {op.name}, {args.cases} cases x {args.repeat} repeats x {len(variants)} variants, "
          f"block_dim {DEFAULT_BLOCK_DIM}, {len(available_cpus())} CPUs")
    devices = {name: device_for(op, DEFAULT_BLOCK_DIM, options=o) for name, o in settings.items()}
    try:
        for r in range(args.repeat):
            order = ("on", "off") if r % 2 == 0 else ("off", "on")
            took = {}
            for name in order:
                t0 = time.perf_counter()
                res = run_batch(op, cases=args.cases, repeat=1, variants=variants, device=devices[name])
                if res.interrupted:  # Ctrl-C / SIGTERM: run_batch stopped in order; so does the bench
                    raise res.interrupt if res.interrupt is not None else KeyboardInterrupt
                took[name] = time.perf_counter() - t0
                spent[name] += took[name]
                failed[name] += sum(v.failed_case_runs for v in res.variants.values())
            ratios.append(took["on"] / took["off"])
            print(f"  repeat {r + 1}: on {took['on']:.2f} s, off {took['off']:.2f} s (ratio {ratios[-1]:.3f})",
                  flush=True)
    finally:
        for dev in devices.values():
            dev.close()
    print(f"total: on {spent['on']:.2f} s, off {spent['off']:.2f} s; failing case-runs on {failed['on']}, "
          f"off {failed['off']}")
    print(f"ratio on / off: {spent['on'] / spent['off']:.3f} (median of the repeats' ratios "
          f"{statistics.median(ratios):.3f}, range {min(ratios):.3f}..{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="bench_memcheck"))
