"""Soak: the fixed FLOMS kernel under every stress configuration until >= N case-runs, expecting 0 failures.

Runs rounds; each round runs every configuration for --cases-per-round cases with a fresh case seed
(the round number) and a fresh chaos seed, so coverage stays even across configurations whenever
the soak stops (target reached, --duration over, or Ctrl-C). The cumulative counts are written to
--json after every configuration. Prints per configuration the fixed case-runs and failures, and
overall the rule-of-three and exact 95% upper bounds on the failure rate.

    python scripts/soak_stress.py --case-runs 20000 --json soak.json
    python scripts/soak_stress.py --duration 1800        # as much as 30 minutes allow

Exit 0 when the fixed kernel never failed, 1 when it did, 130 when interrupted (counts printed).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from mpnpu.cli.common import write_json
from mpnpu.harness.runner import make_variants
from mpnpu.harness.stats import rule_of_three, zero_failure_upper_bound
from mpnpu.harness.stress.sweep import (
    ChaosSettings,
    MigrateSettings,
    SweepPlan,
    configurations,
    run_sweep,
)
from mpnpu.kernels.fused_linear_online_max_sum.operator import OPERATOR
from mpnpu.runtime.config import RuntimeOptions


def soak_configurations(include_bd24: bool = True):
    configs = configurations([1, 2, 4], ["none", "spread", "pack", "migrate"], [0, 2], [False, True])
    if include_bd24:
        configs += configurations([24], ["none", "pack"], [0], [False, True])
    return configs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case-runs", type=int, default=20_000, help="stop after this many fixed case-runs (default 20000)")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds (default: no limit)")
    p.add_argument("--cases-per-round", type=int, default=20, help="cases per configuration per round (default 20)")
    p.add_argument("--no-bd24", action="store_true", help="leave out the 72-process configurations")
    p.add_argument("--json", default=None, help="write cumulative counts here after every configuration")
    args = p.parse_args(argv)

    configs = soak_configurations(not args.no_bd24)
    variants = make_variants(OPERATOR, ["fixed"])
    counts: dict[str, dict[str, Any]] = {c.label: {"case_runs": 0, "failed_case_runs": 0, "failures": []}
                                         for c in configs}
    start = time.monotonic()
    total = failed = rounds = 0
    interrupted = False
    state: dict[str, Any] = {}

    def snapshot() -> dict[str, Any]:
        return {
            "format": "mpnpu.stress_soak/1", "variant": "fixed", "rounds_started": rounds,
            "case_runs": total, "failed_case_runs": failed, "elapsed_s": time.monotonic() - start,
            "rule_of_three_upper95": rule_of_three(total) if failed == 0 else None,
            "exact_upper95": zero_failure_upper_bound(total) if failed == 0 and total else None,
            "interrupted": interrupted, "cases_per_round": args.cases_per_round, "configurations": counts,
            "chaos_seeds": state.get("seeds", []),
        }

    def on_result(r) -> None:
        nonlocal total, failed
        v = r.variants["fixed"]
        c = counts[r.config.label]
        c["case_runs"] += v.case_runs
        c["failed_case_runs"] += v.failed_case_runs
        if v.failed_case_runs or r.error:
            c["failures"].append({"round": rounds, "error": r.error, "variant": v.to_dict()})
        total += v.case_runs
        failed += v.failed_case_runs
        if args.json:
            write_json(args.json, snapshot())

    try:
        while total < args.case_runs:
            left = None if args.duration is None else args.duration - (time.monotonic() - start)
            if left is not None and left <= 1.0:
                break
            rounds += 1
            seed = 1000 + rounds
            state.setdefault("seeds", []).append(seed)
            # A round never runs past --duration: the sweep splits what is left across configurations.
            plan = SweepPlan(configurations=configs, variants=variants, cases=args.cases_per_round, seed=rounds,
                             duration_s=left, chaos=ChaosSettings(seed=seed), migrate=MigrateSettings(seed=seed),
                             options=RuntimeOptions())
            result = run_sweep(OPERATOR, plan, on_result=on_result)
            print(f"round {rounds}: {total} fixed case-runs, {failed} failed, {time.monotonic() - start:.0f} s",
                  flush=True)
            if result.interrupted:
                interrupted = True
                break
    except KeyboardInterrupt:  # between rounds; run_sweep handles it within one
        interrupted = True

    elapsed = time.monotonic() - start
    print(f"\nsoak of the fixed kernel: {len(configs)} configurations, {rounds} round(s), {elapsed:.0f} s"
          + (" (INTERRUPTED)" if interrupted else ""))
    width = max(len(label) for label in counts)
    for label, c in counts.items():
        print(f"  {label:<{width}}  {c['failed_case_runs']}/{c['case_runs']}")
    if failed == 0 and total:
        print(f"fixed: 0 failures in {total} case-runs; 95% upper bound on the rate: {rule_of_three(total):.2e} "
              f"(rule of three), {zero_failure_upper_bound(total):.2e} (exact)")
    else:
        print(f"fixed: {failed} FAILURES in {total} case-runs")
    if args.json:
        write_json(args.json, snapshot())
    if interrupted:
        return 130
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
