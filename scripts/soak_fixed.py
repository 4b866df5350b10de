#!/usr/bin/env python
"""Soak an operator's fixed kernel (every sync point in place): many case-runs, zero failures expected.

Runs the "fixed" variant of ``--op`` (default FLOMS; any registered name or reference) alone through mpnpu's batch library (one persistent device, seeded cases,
each case's golden computed once) for at least --case-runs case-runs (rounded up to whole repeats
of --cases distinct cases), then prints the failure count and the rule-of-three 95% upper bound on
the failure rate (3/n when no case-run failed; the exact 1 - 0.05^(1/n) is printed beside it).

Exit status: 0 when no case-run failed, 1 when any did, 2 for a usage error, 3 when the device
failed, 130/143 when interrupted (the partial counts are still printed).

    python scripts/soak_fixed.py                      # 10,000 case-runs of FLOMS
    python scripts/soak_fixed.py --op flag-reuse      # 10,000 case-runs of a gallery operator
    python scripts/soak_fixed.py --case-runs 50000 --block-dim 2 --seed 3 --json soak.json
"""

from __future__ import annotations

import os
import sys
import time

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
from mpnpu.harness.operator import Operator  # noqa: E402
from mpnpu.harness.runner import default_block_dim, make_variants, run_batch  # noqa: E402
from mpnpu.harness.stats import rule_of_three, zero_failure_upper_bound  # noqa: E402
from mpnpu.runtime.procutil import exit_code_for_interrupt  # noqa: E402

DEFAULT_CASE_RUNS = 10_000
DEFAULT_CASES = 200


def build_parser(op: Operator | None = None) -> ArgumentParser:
    p = ArgumentParser(prog="python scripts/soak_fixed.py",
                       description="Run an operator's fixed kernel for many case-runs; exit 0 only if none failed.")
    p.add_argument("--case-runs", type=positive_int, default=DEFAULT_CASE_RUNS,
                   help=f"at least this many case-runs (default {DEFAULT_CASE_RUNS})")
    p.add_argument("--cases", type=positive_int, default=DEFAULT_CASES,
                   help=f"distinct seeded cases, repeated until --case-runs is reached (default {DEFAULT_CASES})")
    p.add_argument("--block-dim", type=positive_int, default=None,
                   help=f"AI cores, 3 core processes each (default: one per two CPUs, here {default_block_dim()})")
    p.add_argument("--seed", type=non_negative_int, default=0, help="case stream seed (default 0)")
    p.add_argument("--json", type=writable_path, default=None, metavar="PATH", help="also write the result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_operator_arguments(p, op)
    return p


def main(argv=None) -> int:
    args, op = parse_with_operator(build_parser, argv)
    if op is None:
        return print_operator_list()
    cases = min(args.cases, args.case_runs)
    repeat = -(-args.case_runs // cases)
    variants = make_variants(op, ["fixed"])
    start = time.perf_counter()
    with progress_bar(cases * repeat, "fixed case-runs", disable=args.quiet) as bar:
        result = run_batch(op, cases=cases, repeat=repeat, variants=variants, seed=args.seed,
                           block_dim=args.block_dim, progress=bar.update)
    wall = time.perf_counter() - start
    v = result.variants["fixed"]
    n, k = v.case_runs, v.failed_case_runs
    per_run_ms = 1000 * wall / n if n else float("nan")
    print(f"soak: fixed {op.name} kernel, {cases} cases x {repeat} repeats, seed {args.seed}, block_dim "
          f"{result.block_dim} ({3 * result.block_dim} core processes on {result.cpus} CPUs)")
    if result.interrupted:
        print("INTERRUPTED: the counts cover only the case-runs that finished")
    print(f"case-runs: {n}; failures: {k}")
    if k == 0 and n:
        print(f"95% upper bound on the failure rate: {rule_of_three(n):.3g} (rule of three, 3/n); "
              f"exact {zero_failure_upper_bound(n):.3g}")
    elif k:
        print(f"failed outputs (case-runs): {dict(v.failed_by_output)}; launch errors: {v.launch_errors}"
              + (f" (first: {v.first_launch_error})" if v.first_launch_error else ""))
        print(f"failing cases by repeat: {[r for r in v.failing_cases_by_repeat if r][:5]} ...")
    print(f"wall time: {wall:.1f} s ({per_run_ms:.1f} ms per case-run, golden included)")
    if args.json:
        data = result.to_dict()
        data["wall_s"], data["ms_per_case_run"] = wall, per_run_ms
        write_json(args.json, data)
    if result.interrupt is not None:
        return exit_code_for_interrupt(result.interrupt)
    return EXIT_OK if k == 0 and n >= args.case_runs else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="soak_fixed"))
