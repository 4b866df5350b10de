"""mpnpu soak fixed | stress | watchdog — long runs that must see zero failures.

- ``fixed``: an operator's fixed kernel (every sync point in place) for at least --case-runs
  case-runs; prints the failure count and the rule-of-three 95% upper bound on the failure rate;
- ``stress``: the fixed kernel over every stress configuration, in rounds, until --case-runs (or
  --time-limit, or Ctrl-C); --json is rewritten with the cumulative counts after every shard;
- ``watchdog``: correct flag handshakes (modes 0, 1, 2) launched many times with the deadlock
  watchdog ticking every --tick-ms; no launch may be reported.

Argument flow only: :mod:`mpnpu.harness.soak` and :mod:`mpnpu.harness.handshakes` run the soaks.
Exit status: 0 when nothing failed, 1 when anything did, 2 for a usage error, 3 when the device
failed, 130/143 when interrupted (the partial counts are still printed).
"""

from __future__ import annotations

import argparse

from mpnpu.cli.command import Command, Use
from mpnpu.cli.common import exit_status, progress_bar
from mpnpu.cli.options import DEVICE, SCALE_OUT, runtime_options, scale_backend
from mpnpu.cli.outputs import write_reports
from mpnpu.harness.handshakes import KERNELS, SOAK_OPTIONS, soak_watchdog
from mpnpu.harness.soak import CHAOS_SEED_BASE, StressSoak, fixed_soak_size, soak_fixed, soak_stress
from mpnpu.operators.protocol import Operator
from mpnpu.report.text import format_text

DEFAULT_CASE_RUNS = 10_000
DEFAULT_CASES = 200
DEFAULT_SHARD_CASES = 20
DEFAULT_STRESS_CASE_RUNS = 20_000
DEFAULT_WATCHDOG_BLOCK_DIM = 2


def run_fixed(args: argparse.Namespace, op: Operator) -> int:
    backend = scale_backend(args)
    cases, repeat = fixed_soak_size(args.case_runs, args.cases)
    with progress_bar(cases * repeat, "fixed case-runs", disable=args.quiet) as bar:
        soak = soak_fixed(op, case_runs=args.case_runs, cases=args.cases, block_dim=args.block_dim, seed=args.seed,
                          shard_cases=args.shard_cases, backend=backend, options=runtime_options(args),
                          progress=bar.update)
    print(format_text(soak))
    write_reports(args, {"json": soak, "junit": soak})
    return exit_status(soak.run.interrupt, soak.ok)


def run_stress(args: argparse.Namespace, op: Operator) -> int:
    def save(soak: StressSoak) -> None:
        write_reports(args, {"json": soak.snapshot()})

    soak = soak_stress(op, case_runs=args.case_runs, cases_per_round=args.cases_per_round,
                       include_bd24=not args.no_bd24, duration_s=args.time_limit, backend=scale_backend(args),
                       options=runtime_options(args), on_update=save)
    print(format_text(soak))
    write_reports(args, {"json": soak, "junit": soak})
    assert soak.run is not None
    return exit_status(soak.run.interrupt, soak.ok)


def run_watchdog(args: argparse.Namespace, op: None) -> int:
    with progress_bar(args.rounds * len(KERNELS), "launches", disable=args.quiet) as bar:
        soak = soak_watchdog(rounds=args.rounds, block_dim=args.block_dim, tick_ms=args.tick_ms,
                             late_ms=args.late_ms, hogs=args.hogs, options=runtime_options(args, SOAK_OPTIONS),
                             progress=bar.update)
    print(format_text(soak))
    write_reports(args, {"json": soak, "junit": soak})
    return exit_status(None, soak.ok)


FIXED = Command(
    name="fixed",
    help="an operator's fixed kernel for many case-runs; exit 0 only if none failed",
    description="Run an operator's fixed kernel (every sync point in place) for many case-runs: --cases distinct "
                "seeded cases, each repeated until --case-runs is reached (its golden computed once), cut into "
                "shards of --shard-cases cases that run here, in --jobs parallel slots or on a Ray cluster "
                "(--cluster). Prints the failure count and the rule-of-three 95% upper bound on the failure rate. "
                "Exit 0 only if no case-run failed.",
    epilog="Examples: mpnpu soak fixed; mpnpu soak fixed --op flag-reuse; "
           "mpnpu soak fixed --case-runs 100000 --cases 2000 --jobs 4 --json soak.json",
    options=("op", "list_ops", Use("case_runs", DEFAULT_CASE_RUNS), Use("cases", DEFAULT_CASES), "seed",
             "block_dim", *DEVICE, "json", "junit", "quiet", "verbose", "jobs", "cluster", "cpus_per_core",
             Use("shard_cases", DEFAULT_SHARD_CASES)),
    run=run_fixed,
    alias="python scripts/soak_fixed.py",
)

STRESS = Command(
    name="stress",
    help="the fixed kernel under every stress configuration until N case-runs, expecting 0 failures",
    description="Soak an operator's fixed kernel over every stress configuration (block_dim 1, 2, 4 and 24; "
                "placements; background load; chaos), in rounds: each round runs every configuration for "
                "--cases-per-round cases with a fresh case seed (the round number) and chaos seed "
                f"({CHAOS_SEED_BASE} + round). "
                "Prints per configuration the fixed case-runs and failures, and the rule-of-three and exact 95% "
                "upper bounds on the failure rate. Exit 0 when the fixed kernel never failed.",
    epilog="Examples: mpnpu soak stress --case-runs 40000 --json soak.json; mpnpu soak stress --time-limit 1800 "
           f"(stops at {DEFAULT_STRESS_CASE_RUNS} case-runs or after 30 minutes, whichever comes first); "
           "mpnpu soak stress --jobs 4 --cpus-per-core 1",
    options=("op", "list_ops", Use("case_runs", DEFAULT_STRESS_CASE_RUNS), "cases_per_round", "no_bd24", "time_limit",
             *DEVICE, "json", "junit", "quiet", "verbose", *(o for o in SCALE_OUT if o != "shard_cases")),
    run=run_stress,
    alias="python scripts/soak_stress.py",
)

WATCHDOG = Command(
    name="watchdog",
    help="correct flag handshakes (modes 0, 1, 2) launched many times with a fast watchdog; 0 reports expected",
    description="Launch correct flag handshakes (modes 0, 1, 2) many times with a fast watchdog tick; exit 0 only "
                f"if no launch failed. {DEFAULT_WATCHDOG_BLOCK_DIM} AI cores by default, so that mode-0 handshakes "
                "span the vector cores of more than one AI core.",
    epilog="Examples: mpnpu soak watchdog; mpnpu soak watchdog --rounds 3000 --hogs 2",
    options=("rounds", Use("block_dim", DEFAULT_WATCHDOG_BLOCK_DIM), "tick_ms", "late_ms", "hogs", *DEVICE, "json",
             "junit", "quiet", "verbose"),
    run=run_watchdog,
    alias="python scripts/soak_watchdog.py",
)

COMMAND = Command(
    name="soak",
    help="long runs that must see zero failures: fixed (one configuration), stress (every one), watchdog",
    description="Soaks: long runs that must see zero failures.",
    subcommands=(FIXED, STRESS, WATCHDOG),
)
