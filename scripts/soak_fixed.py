#!/usr/bin/env python
"""Soak an operator's fixed kernel (every sync point in place): many case-runs, zero failures expected.

Runs the "fixed" variant of ``--op`` (default FLOMS; any registered name or reference) alone for at
least --case-runs case-runs: --cases distinct seeded cases, each repeated until --case-runs is
reached (its golden computed once), cut into shards of --shard-cases cases. Prints the failure
count and the rule-of-three 95% upper bound on the failure rate (3/n when no case-run failed; the
exact 1 - 0.05^(1/n) beside it). The shards depend on the command alone, so the same command
covers the same cases in this process, in --jobs parallel slots, or on a Ray cluster (--cluster);
each shard's device runs block_dim 1 on 2 CPUs by default (--cpus-per-core).

Exit status: 0 when no case-run failed, 1 when any did, 2 for a usage error, 3 when the device
failed, 130/143 when interrupted (the partial counts are still printed).

    python scripts/soak_fixed.py                          # 10,000 case-runs of FLOMS
    python scripts/soak_fixed.py --op flag-reuse          # 10,000 case-runs of a gallery operator
    python scripts/soak_fixed.py --case-runs 100000 --cases 2000 --jobs 4 --json soak.json
    python scripts/soak_fixed.py --case-runs 100000 --cluster          # embedded local Ray cluster
"""

from __future__ import annotations

import os
import sys
import time

from mpnpu.runtime.config import DEFAULT_BLOCK_DIM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from mpnpu.cli.common import (  # noqa: E402
    EXIT_FAILED,
    EXIT_OK,
    ArgumentParser,
    non_negative_int,
    positive_int,
    progress_bar,
    run_cli,
    writable_path,
    write_json,
)
from mpnpu.cli.operators import add_operator_arguments, parse_with_operator, print_operator_list  # noqa: E402
from mpnpu.harness.runner import make_variants  # noqa: E402
from mpnpu.harness.stats import rule_of_three, zero_failure_upper_bound  # noqa: E402
from mpnpu.harness.stress.plan import Configuration, SweepPlan  # noqa: E402
from mpnpu.operators.protocol import Operator  # noqa: E402
from mpnpu.runtime.procutil import exit_code_for_interrupt  # noqa: E402
from mpnpu.scale.backend import (  # noqa: E402
    add_scaleout_arguments,
    backend_from_args,
    run_shards,
    shard_lines,
    shards_json,
    sweep_result,
)
from mpnpu.scale.shards import ShardPlan, make_shards  # noqa: E402

DEFAULT_CASE_RUNS = 10_000
DEFAULT_CASES = 200
DEFAULT_SHARD_CASES = 20


def build_parser(op: Operator | None = None) -> ArgumentParser:
    p = ArgumentParser(prog="python scripts/soak_fixed.py",
                       description="Run an operator's fixed kernel for many case-runs; exit 0 only if none failed.")
    p.add_argument("--case-runs", type=positive_int, default=DEFAULT_CASE_RUNS,
                   help=f"at least this many case-runs (default {DEFAULT_CASE_RUNS})")
    p.add_argument("--cases", type=positive_int, default=DEFAULT_CASES,
                   help=f"distinct seeded cases, repeated until --case-runs is reached (default {DEFAULT_CASES})")
    p.add_argument("--block-dim", type=positive_int, default=None,
                   help=f"AI cores, 3 core processes each (default {DEFAULT_BLOCK_DIM})")
    p.add_argument("--seed", type=non_negative_int, default=0, help="case stream seed (default 0)")
    p.add_argument("--json", type=writable_path, default=None, metavar="PATH", help="also write the result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_scaleout_arguments(p, shard_cases_default=DEFAULT_SHARD_CASES,
                           shard_cases_help=f"cases per shard, each with all its repeats (default {DEFAULT_SHARD_CASES})")
    add_operator_arguments(p, op)
    return p


def main(argv=None) -> int:
    args, op = parse_with_operator(build_parser, argv)
    if op is None:
        return print_operator_list()
    backend = backend_from_args(args)
    block_dim = args.block_dim or DEFAULT_BLOCK_DIM
    config = Configuration(block_dim)
    variants = make_variants(op, ["fixed"])
    cases = min(args.cases, args.case_runs)
    repeat = -(-args.case_runs // cases)
    shards = make_shards([config], cases, shard_cases=args.shard_cases, seed=args.seed, repeat=repeat)
    plan = ShardPlan(op, tuple(variants), cpus_per_core=backend.cpus_per_core)
    start = time.perf_counter()
    with progress_bar(cases * repeat, "fixed case-runs", disable=args.quiet) as bar:
        run = run_shards(shards, plan, backend, progress=bar.update)
    wall = time.perf_counter() - start
    sweep_plan = SweepPlan(configurations=[config], variants=variants, cases=cases, repeat=repeat, seed=args.seed)
    result = sweep_result(run, sweep_plan, op.name)
    rows = [r for r in result.results if "fixed" in r.variants]
    n = sum(r.variants["fixed"].case_runs for r in rows)
    k = sum(r.variants["fixed"].failed_case_runs for r in rows)
    errors = [r.error for r in rows if r.error]
    per_run_ms = 1000 * wall / n if n else float("nan")
    packings = sorted({r.packing for r in run.results if r.packing})
    print(f"soak: fixed {op.name} kernel, {cases} cases x {repeat} repeats, seed {args.seed}, block_dim {block_dim} "
          f"(core processes per shard: {', '.join(packings) or '-'}); {len(shards)} shard(s) of up to "
          f"{min(cases, args.shard_cases)} cases")
    if run.interrupted:
        print("INTERRUPTED: the counts cover only the case-runs that finished")
    print(f"case-runs: {n}; failures: {k}")
    if k == 0 and n:
        print(f"95% upper bound on the failure rate: {rule_of_three(n):.3g} (rule of three, 3/n); "
              f"exact {zero_failure_upper_bound(n):.3g}")
    for r in rows:
        v = r.variants["fixed"]
        if v.failed_case_runs:
            print(f"failed outputs (case-runs): {dict(v.failed_by_output)}; launch errors: {v.launch_errors}"
                  + (f" (first: {v.first_launch_error})" if v.first_launch_error else ""))
            print(f"failing cases by repeat: {[c for c in v.failing_cases_by_repeat if c][:5]} ...")
    for e in errors:
        print(f"error: {e}")
    for line in shard_lines(run, len(shards), detail_limit=0 if len(shards) > 40 else 40):
        print(line)
    print(f"wall time: {wall:.1f} s ({per_run_ms:.1f} ms per case-run, golden included; "
          f"{n / wall if wall else 0:.1f} case-runs/s)")
    if args.json:
        data = rows[0].batch.to_dict() if rows else {}
        data.update(wall_s=wall, ms_per_case_run=per_run_ms, case_runs=n, failed_case_runs=k,
                    rule_of_three_upper95=rule_of_three(n) if k == 0 and n else None,
                    exact_upper95=zero_failure_upper_bound(n) if k == 0 and n else None,
                    cpus_per_core=backend.cpus_per_core, **shards_json(run, shards))
        write_json(args.json, data)
    if run.interrupt is not None:
        return exit_code_for_interrupt(run.interrupt)  # type: ignore[arg-type]
    return EXIT_OK if k == 0 and n >= args.case_runs and not errors else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="soak_fixed"))
