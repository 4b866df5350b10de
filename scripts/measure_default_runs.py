#!/usr/bin/env python
"""Run the default `python -m mpnpu.batch` many times and check what must hold on every run.

Each run is the real command line, as a user runs it (a subprocess with the default options and
--json). Across the runs it reports, for the incident variant: in how many runs at least one
case-run failed (must be >= 99%), the failing share per run (must be a minority), which outputs
failed (only predicted_logits), whether the failing positions differ between repeats, and the max
relative error on failing elements (>= 10); for the fixed variant: failures (must be 0); and the
wall time per run (must be under a minute).

    python scripts/measure_default_runs.py --runs 30
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_run(extra: list[str], timeout_s: float) -> tuple[dict, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "mpnpu.batch", "--quiet", "--json", report, *extra],
                              cwd=REPO, capture_output=True, text=True, timeout=timeout_s)
        wall = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            raise SystemExit(f"batch exited {proc.returncode}: {proc.stderr.strip()}")
        with open(report) as f:
            return json.load(f), wall, proc.returncode


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=30, help="default batch runs (default 30)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per run")
    p.add_argument("extra", nargs="*", help="extra batch options after --, e.g. -- --seed 3")
    args = p.parse_args()

    shown, rates, walls, max_rel, moved, outputs = 0, [], [], [], 0, set()
    fixed_failures, exit_codes = 0, []
    for i in range(args.runs):
        report, wall, code = one_run(args.extra, args.timeout)
        inc, fixed = report["variants"]["incident"], report["variants"]["fixed"]
        shown += inc["failed_case_runs"] > 0
        rates.append(inc["failed_case_runs"] / inc["case_runs"])
        walls.append(wall)
        exit_codes.append(code)
        outputs.update(inc["failed_by_output"])
        if inc["max_rel_error"] is not None:
            max_rel.append(inc["max_rel_error"])
        positions = [tuple(r) for r in inc["failing_cases_by_repeat"] if r]
        moved += len(set(positions)) > 1
        fixed_failures += fixed["failed_case_runs"]
        print(f"run {i + 1:>3}: incident {inc['failed_case_runs']:>3}/{inc['case_runs']} "
              f"per repeat {[len(r) for r in inc['failing_cases_by_repeat']]}  max rel "
              f"{inc['max_rel_error'] if inc['max_rel_error'] is None else format(inc['max_rel_error'], '.3g')}"
              f"  fixed {fixed['failed_case_runs']}/{fixed['case_runs']}  {wall:.1f} s  exit {code}", flush=True)

    n = args.runs
    print()
    print(f"runs with >= 1 failing incident case-run: {shown}/{n} ({shown / n:.1%})  [must be >= 99%]")
    print(f"incident failing share per run: median {statistics.median(rates):.2%}, min {min(rates):.2%}, "
          f"max {max(rates):.2%}  [must be a minority]")
    print(f"outputs that failed: {sorted(outputs)}  [only predicted_logits]")
    print(f"runs whose failing positions differ between repeats: {moved}/{n}")
    print(f"max relative error on failing elements: min over runs {min(max_rel):.3g}, median "
          f"{statistics.median(max_rel):.3g}  [>= 10]" if max_rel else "no failures: no relative error")
    print(f"fixed: {fixed_failures} failing case-runs in {n} runs  [must be 0]")
    print(f"wall time per run: median {statistics.median(walls):.1f} s, max {max(walls):.1f} s  [< 60 s]")
    print(f"exit codes: {sorted(set(exit_codes))}")
    ok = (shown / n >= 0.99 and max(rates) < 0.5 and outputs <= {"predicted_logits"} and fixed_failures == 0
          and max(walls) < 60 and (not max_rel or min(max_rel) >= 10))
    print("ALL HOLD" if ok else "SOMETHING DOES NOT HOLD")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
