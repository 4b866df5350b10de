"""mpnpu stress — sweep block_dim, placement, background load and chaos; report failure rates.

For every configuration (the cross product of --block-dims, --placements, --load and --chaos) the
kernel variants run A/B over the same seeded cases on a persistent device while the perturbations
act on the core processes through the OS only (CPU affinity, busy competitors, SIGSTOP/SIGCONT);
the kernel's code and data are never touched. Reported per configuration and variant: failing
case-runs with the 95% Wilson interval of the rate, the first failure (case-run number and seconds
from the configuration's start), and for a clean variant the rule-of-three 95% upper bound; per
configuration, the perturbations that were active and per core process the involuntary context
switches and CPU time. The work is cut into shards that run here, in parallel slots or on a Ray
cluster (:func:`mpnpu.scale.backend.run_sweep`); this module turns the arguments into the sweep's
plan and its result into reports.

Exit status: 0 when every variant expected clean (every sync point in place) stayed clean in every
configuration, 1 when one did not, 2 for a usage error, 3 when the device failed, 130/143 when
interrupted (what was measured so far is printed, and written with --json).
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex

from mpnpu.cli.command import Command, Use
from mpnpu.cli.common import exit_status, progress_bar
from mpnpu.cli.options import DEFAULT_OPERATOR, DEVICE, SCALE_OUT, runtime_options, scale_backend
from mpnpu.cli.outputs import check_reports, write_reports
from mpnpu.errors import UsageError
from mpnpu.harness.runner import make_variants
from mpnpu.harness.stress.plan import (
    ChaosSettings,
    MigrateSettings,
    SweepPlan,
    configurations,
    schedules_from_json,
)
from mpnpu.operators.protocol import Operator, kernel_type_of
from mpnpu.report.text import format_text
from mpnpu.report.text.scale import shard_lines
from mpnpu.scale.backend import run_sweep

DEFAULT_CASES = 20
DEFAULT_DURATION_S = 180.0


def make_plan(args: argparse.Namespace, op: Operator) -> SweepPlan:
    """The sweep the parsed arguments ask for."""
    names = ("incident", "fixed") if args.variant == "both" else (args.variant,)
    variants = make_variants(op, names)
    seed = args.chaos_seed if args.chaos_seed is not None else secrets.randbelow(2**31)
    max_s = args.chaos_max_ms / 1000.0
    min_s = (args.chaos_min_ms / 1000.0) if args.chaos_min_ms is not None else max_s / 10.0
    replay = {}
    if args.chaos_replay:
        try:
            with open(args.chaos_replay) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise UsageError(f"cannot read {args.chaos_replay}: {e}") from None
        replay = schedules_from_json(data)
        missing = sorted({bd for bd in args.block_dims if True in args.chaos} - set(replay))
        if missing:
            raise UsageError(f"{args.chaos_replay} has no chaos schedule for block_dim {', '.join(map(str, missing))}")
        seed = int(data["chaos"].get("seed", seed))
    chaos = ChaosSettings(seed=seed, rate_hz=args.chaos_rate, max_suspend_s=max_s, min_suspend_s=min_s, replay=replay)
    return SweepPlan(
        configurations=configurations(args.block_dims, args.placements, args.load, args.chaos),
        variants=variants, cases=args.cases, repeat=args.repeat, seed=args.seed, duration_s=args.time_limit,
        chaos=chaos, migrate=MigrateSettings(seed=seed), options=runtime_options(args),
        max_same_errors=args.max_same_errors, kernel_type=kernel_type_of(op),
    )


def run(args: argparse.Namespace, op: Operator) -> int:
    plan = make_plan(args, op)
    check_reports(args)
    command = " ".join([args.prog, *(shlex.quote(a) for a in args.argv)])
    backend = scale_backend(args)
    total = plan.case_runs_per_configuration * len(plan.configurations)
    with progress_bar(total, "sweep", disable=args.quiet) as bar:
        sweep = run_sweep(op, plan, backend, shard_cases=args.shard_cases, progress=bar.update)
    result = sweep.result
    write_reports(args, {"json": sweep.to_dict(command), "junit": result, "plot": result if result.results else None})
    text = format_text(result, command=command, shards=shard_lines(sweep.run, len(sweep.shards)),
                       verbose=args.verbose)
    print(result.verdict_line() if args.quiet else text, flush=True)
    return exit_status(result.interrupt, result.expected_clean_are_clean)


COMMAND = Command(
    name="stress",
    help="sweeps block_dim, CPU placement, background load and seeded chaos; failure rates with Wilson intervals",
    description=(
        f"Run an operator's incident kernel (default {DEFAULT_OPERATOR}: no SyncAll S1) and its fixed kernel under a "
        "sweep of "
        "configurations — block_dim, CPU placement, background load, seeded chaos (SIGSTOP/SIGCONT of random core "
        "processes) — and report per configuration and variant the failure rate with its 95% Wilson interval, the "
        "first failure, and for a clean variant the rule-of-three bound. Exit 0 when the fixed kernel stayed clean "
        "everywhere, 1 when not, 2 for usage errors, 3 for device errors, 130 when interrupted."
    ),
    epilog=(
        "Configurations are the cross product of --block-dims, --placements, --load and --chaos. Replay a run's "
        "chaos exactly with --chaos-seed N (same --chaos-* settings) or with --chaos-replay REPORT.json. Examples: "
        "mpnpu stress --block-dims 2,4 --placements none,pack --chaos off,on --time-limit 60 --json sweep.json; "
        "mpnpu stress --op vecin-early-read --block-dims 1,2 --chaos on; "
        "mpnpu stress --op path/to/my_operator.py --block-dims 1 (a file's OPERATOR)"
    ),
    options=("op", "list_ops", "list_syncs", "variant", Use("cases", DEFAULT_CASES), "repeat", "seed",
             Use("time_limit", DEFAULT_DURATION_S), "block_dims", "placements", "load", "chaos", "chaos_seed",
             "chaos_rate", "chaos_max_ms", "chaos_min_ms", "chaos_replay", "max_same_errors", *DEVICE, "json", "junit",
             "plot", "quiet", "verbose", *SCALE_OUT),
    run=run,
    alias="python -m mpnpu.stress",
)
