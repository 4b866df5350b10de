"""Soak: the fixed FLOMS kernel under every stress configuration until >= N case-runs, expecting 0 failures.

The soak is cut into rounds; each round runs every configuration for --cases-per-round cases with a
fresh case seed (the round number) and a fresh chaos seed (1000 + round). Every (round,
configuration) is one shard, so coverage stays even across configurations whenever the soak stops
(target reached, --duration over, or Ctrl-C), and the same command covers the same cases in this
process, in --jobs parallel slots or on a Ray cluster (--cluster). The cumulative counts are written
to --json after every shard. Prints per configuration the fixed case-runs and failures, and overall
the rule-of-three and exact 95% upper bounds on the failure rate.

    python scripts/soak_stress.py --case-runs 20000 --json soak.json
    python scripts/soak_stress.py --duration 1800        # as much as 30 minutes allow
    python scripts/soak_stress.py --jobs 4 --cpus-per-core 1

Exit 0 when the fixed kernel never failed, 1 when it did, 2 for a usage error, 130 when interrupted
(counts printed).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from mpnpu.cli.common import ArgumentParser, run_cli, write_json
from mpnpu.harness.runner import make_variants
from mpnpu.harness.stats import rule_of_three, zero_failure_upper_bound
from mpnpu.harness.stress.plan import configurations
from mpnpu.kernels.fused_linear_online_max_sum.operator import OPERATOR
from mpnpu.operators.registry import DEFAULT_OPERATOR
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.scale.backend import add_scaleout_arguments, backend_from_args, run_shards, shard_lines, shards_json
from mpnpu.scale.shards import ShardPlan, ShardResult, make_shards


def soak_configurations(include_bd24: bool = True):
    configs = configurations([1, 2, 4], ["none", "spread", "pack", "migrate"], [0, 2], [False, True])
    if include_bd24:
        configs += configurations([24], ["none", "pack"], [0], [False, True])
    return configs


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="python scripts/soak_stress.py", description=__doc__.splitlines()[0])
    p.add_argument("--case-runs", type=int, default=20_000, help="stop after this many fixed case-runs (default 20000)")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds (default: no limit)")
    p.add_argument("--cases-per-round", type=int, default=20, help="cases per configuration per round (default 20)")
    p.add_argument("--no-bd24", action="store_true", help="leave out the 72-process configurations")
    p.add_argument("--json", default=None, help="write cumulative counts here after every shard")
    add_scaleout_arguments(p, shard_cases_default=None, shard_cases_help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    backend = backend_from_args(args)

    configs = soak_configurations(not args.no_bd24)
    variants = make_variants(OPERATOR, ["fixed"])
    per_round = len(configs) * args.cases_per_round
    rounds = max(1, -(-args.case_runs // per_round))
    shards = []
    for r in range(1, rounds + 1):
        shards += make_shards(configs, args.cases_per_round, seed=r, chaos_seed=1000 + r, first_index=len(shards))
    plan = ShardPlan(DEFAULT_OPERATOR, tuple(variants), cpus_per_core=backend.cpus_per_core, options=RuntimeOptions())
    counts: dict[str, dict[str, Any]] = {c.label: {"case_runs": 0, "failed_case_runs": 0, "failures": []}
                                         for c in configs}
    start = time.monotonic()
    totals = {"case_runs": 0, "failed_case_runs": 0}
    state: dict[str, Any] = {"interrupted": False}

    def snapshot() -> dict[str, Any]:
        total, failed = totals["case_runs"], totals["failed_case_runs"]
        return {
            "format": "mpnpu.stress_soak/1", "variant": "fixed", "rounds_planned": rounds,
            "case_runs": total, "failed_case_runs": failed, "elapsed_s": time.monotonic() - start,
            "rule_of_three_upper95": rule_of_three(total) if failed == 0 else None,
            "exact_upper95": zero_failure_upper_bound(total) if failed == 0 and total else None,
            "interrupted": state["interrupted"], "cases_per_round": args.cases_per_round, "configurations": counts,
            "chaos_seeds": [1000 + r for r in range(1, rounds + 1)],
        }

    def on_result(r: ShardResult) -> None:
        v = r.result.variants["fixed"]
        c = counts[r.shard.config.label]
        c["case_runs"] += v.case_runs
        c["failed_case_runs"] += v.failed_case_runs
        if v.failed_case_runs or r.result.error:
            c["failures"].append({"round": r.shard.seed, "shard": r.shard.index, "error": r.result.error,
                                  "variant": v.to_dict()})
        totals["case_runs"] += v.case_runs
        totals["failed_case_runs"] += v.failed_case_runs
        if args.json:
            write_json(args.json, snapshot())

    run = run_shards(shards, plan, backend, duration_s=args.duration, on_result=on_result)
    state["interrupted"] = run.interrupted
    total, failed = totals["case_runs"], totals["failed_case_runs"]
    elapsed = time.monotonic() - start
    print(f"soak of the fixed kernel: {len(configs)} configurations, {rounds} round(s), {elapsed:.0f} s"
          + (" (INTERRUPTED)" if run.interrupted else ""))
    width = max(len(label) for label in counts)
    for label, c in counts.items():
        print(f"  {label:<{width}}  {c['failed_case_runs']}/{c['case_runs']}")
    for line in shard_lines(run, len(shards), detail_limit=0):
        print(line)
    errors = sum(1 for r in run.results if r.result.error)
    if failed == 0 and total and not errors:
        print(f"fixed: 0 failures in {total} case-runs; 95% upper bound on the rate: {rule_of_three(total):.2e} "
              f"(rule of three), {zero_failure_upper_bound(total):.2e} (exact)")
    else:
        print(f"fixed: {failed} FAILURES in {total} case-runs" + (f"; {errors} shard(s) with errors" if errors else ""))
    if args.json:
        write_json(args.json, {**snapshot(), **shards_json(run, shards)})
    if run.interrupted:
        return 130
    return 0 if failed == 0 and not errors else 1


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="soak_stress"))
