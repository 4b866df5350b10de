"""python -m mpnpu.stress — sweep block_dim, placement, background load and chaos; report failure rates.

For every configuration (the cross product of --block-dims, --placements, --load and --chaos) the
kernel variants run A/B over the same seeded cases on a persistent device while the perturbations
act on the core processes through the OS only (CPU affinity, busy competitors, SIGSTOP/SIGCONT);
the kernel's code and data are never touched. Reported per configuration and variant: failing
case-runs with the 95% Wilson interval of the rate, the first failure (case-run number and seconds
from the configuration's start), and for a clean variant the rule-of-three 95% upper bound; per
configuration, the perturbations that were active and per core process the involuntary context
switches and CPU time.

Exit status: 0 when every variant expected clean (every sync point in place) stayed clean in every
configuration, 1 when one did not, 2 for a usage error, 3 when the device failed, 130/143 when
interrupted (what was measured so far is printed, and written with --json).
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
import sys
from typing import Callable, Sequence, TypeVar

from mpnpu.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    ArgumentParser,
    non_negative_int,
    positive_float,
    positive_int,
    progress_bar,
    run_cli,
    writable_path,
    write_json,
)
from mpnpu.cli.operators import add_operator_arguments, parse_with_operator, print_operator_list
from mpnpu.cli.timeline_output import add_junit_argument, picture_path
from mpnpu.errors import UsageError
from mpnpu.harness.runner import make_variants
from mpnpu.harness.stress.plan import (
    MAX_CHAOS_SUSPEND_S,
    PLACEMENTS,
    ChaosSettings,
    MigrateSettings,
    SweepPlan,
    configurations,
    schedules_from_json,
)
from mpnpu.operators.protocol import Operator
from mpnpu.operators.registry import load_operator
from mpnpu.report.text.stress import format_sweep
from mpnpu.runtime.checks import check_block_dim
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.procutil import exit_code_for_interrupt
from mpnpu.scale.backend import (
    add_scaleout_arguments,
    backend_from_args,
    run_shards,
    shard_lines,
    shards_json,
    sweep_result,
)
from mpnpu.scale.shards import ShardPlan, make_shards

DEFAULT_BLOCK_DIMS = "1,2,4,24"
DEFAULT_PLACEMENTS = ",".join(PLACEMENTS)
DEFAULT_CASES = 20
DEFAULT_DURATION_S = 180.0

T = TypeVar("T")


def _list_of(item: Callable[[str], T], what: str) -> Callable[[str], list[T]]:
    def parse(text: str) -> list[T]:
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or any(not p for p in parts):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}, got {text!r}")
        values = [item(p) for p in parts]
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"repeated value in {text!r}")
        return values
    return parse


def _block_dim(text: str) -> int:
    value = positive_int(text)
    try:
        return check_block_dim(value)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _placement(text: str) -> str:
    if text not in PLACEMENTS:
        raise argparse.ArgumentTypeError(f"unknown placement {text!r}; choose from {', '.join(PLACEMENTS)}")
    return text


def _on_off(text: str) -> bool:
    if text in ("on", "off"):
        return text == "on"
    raise argparse.ArgumentTypeError(f"expected on/off, got {text!r}")


def _duration(text: str) -> float | None:
    if text.strip().lower() in ("inf", "none", "unlimited"):
        return None
    return positive_float(text)


def build_parser(op: Operator | None = None) -> ArgumentParser:
    p = ArgumentParser(
        prog="python -m mpnpu.stress",
        description=(
            "Run an operator's incident kernel (default FLOMS: no SyncAll S1) and its fixed kernel under a sweep of "
            "configurations — block_dim, CPU placement, background load, seeded chaos (SIGSTOP/SIGCONT "
            "of random core processes) — and report per configuration and variant the failure rate "
            "with its 95% Wilson interval, the first failure, and for a clean variant the "
            "rule-of-three bound. Exit 0 when the fixed kernel stayed clean everywhere, 1 when not, "
            "2 for usage errors, 3 for device errors, 130 when interrupted."
        ),
        epilog=(
            "Configurations are the cross product of --block-dims, --placements, --load and --chaos. "
            "Replay a run's chaos exactly with --chaos-seed N (same --chaos-* settings) or with "
            "--chaos-replay REPORT.json. Example: python -m mpnpu.stress --block-dims 2,4 "
            "--placements none,pack --chaos off,on --duration 60 --json sweep.json"
        ),
    )
    g = p.add_argument_group("configurations")
    g.add_argument("--block-dims", type=_list_of(_block_dim, "block_dims 1..24"), default=DEFAULT_BLOCK_DIMS,
                   metavar="LIST", help=f"AI cores, each 3 core processes (default {DEFAULT_BLOCK_DIMS})")
    g.add_argument("--placements", type=_list_of(_placement, "placements"), default=DEFAULT_PLACEMENTS,
                   metavar="LIST",
                   help="none (OS decides), spread (one core process per CPU, round-robin), pack (all on "
                        "one CPU), migrate (re-pinned to random CPUs at random 5-50 ms intervals) "
                        f"(default {DEFAULT_PLACEMENTS})")
    g.add_argument("--load", type=_list_of(non_negative_int, "integers >= 0"), default="0", metavar="LIST",
                   help="busy background processes per configuration, each ending by itself shortly after the "
                        "configuration's time budget (default 0)")
    g.add_argument("--chaos", type=_list_of(_on_off, "on/off"), default="off,on", metavar="LIST",
                   help="chaos off and/or on (default off,on)")
    c = p.add_argument_group("chaos")
    c.add_argument("--chaos-seed", type=non_negative_int, default=None, metavar="N",
                   help="seed of the chaos schedules and of migration (default: random, printed and recorded)")
    c.add_argument("--chaos-rate", type=positive_float, default=20.0, metavar="HZ",
                   help="suspensions per second per core process (default 20)")
    c.add_argument("--chaos-max-ms", type=positive_float, default=20.0, metavar="MS",
                   help=f"longest suspension (default 20, at most {MAX_CHAOS_SUSPEND_S * 1000:g})")
    c.add_argument("--chaos-min-ms", type=positive_float, default=None, metavar="MS",
                   help="shortest suspension (default a tenth of the longest)")
    c.add_argument("--chaos-replay", type=str, default=None, metavar="REPORT.json",
                   help="use the chaos schedules recorded in a previous sweep's --json report")
    r = p.add_argument_group("runs")
    r.add_argument("--variant", choices=("incident", "fixed", "both"), default="both",
                   help="kernel variant(s) to run, A/B (default both)")
    r.add_argument("--cases", type=positive_int, default=DEFAULT_CASES,
                   help=f"seeded cases per configuration (default {DEFAULT_CASES})")
    r.add_argument("--repeat", type=positive_int, default=1, help="repeats of the cases per configuration (default 1)")
    r.add_argument("--seed", type=non_negative_int, default=0, help="case stream seed (default 0)")
    r.add_argument("--duration", type=_duration, default=DEFAULT_DURATION_S, metavar="SECONDS",
                   help=f"time budget of the whole sweep, split across configurations; each stops at its "
                        f"share (default {DEFAULT_DURATION_S:g}; 'inf' for no limit)")
    r.add_argument("--timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="give up a launch after this long (default 300)")
    o = p.add_argument_group("output")
    add_scaleout_arguments(p, shard_cases_default=None,
                           shard_cases_help="cut each configuration's cases into shards of N cases, which run "
                                            "side by side (default: one shard per configuration)")
    o.add_argument("--json", type=writable_path, default=None, metavar="PATH",
                   help="also write the full report (with seeds and chaos schedules) as JSON")
    o.add_argument("--quiet", action="store_true", help="no progress bar; print only the verdict line")
    add_junit_argument(o)
    o.add_argument("--plot", type=picture_path, default=None, metavar="PATH",
                   help="draw the failure rate per configuration with its 95%% Wilson interval, .png or .svg "
                        "(needs pip install 'mpnpu[plot]')")
    add_operator_arguments(p, op)
    return p


# -- main -------------------------------------------------------------------------------------------


def make_plan(args: argparse.Namespace, op: Operator | None = None) -> tuple[SweepPlan, Operator]:
    """The sweep the parsed arguments ask for, and the operator it runs (``args.op`` unless given)."""
    op = op if op is not None else load_operator(args.op)
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
    options = RuntimeOptions(launch_timeout_s=args.timeout) if args.timeout else RuntimeOptions()
    plan = SweepPlan(
        configurations=configurations(args.block_dims, args.placements, args.load, args.chaos),
        variants=variants, cases=args.cases, repeat=args.repeat, seed=args.seed, duration_s=args.duration,
        chaos=chaos, migrate=MigrateSettings(seed=seed), options=options,
    )
    return plan, op


def main(argv: Sequence[str] | None = None) -> int:
    args, op = parse_with_operator(build_parser, argv)
    if op is None:
        return print_operator_list()
    plan, op = make_plan(args, op)
    if args.plot:
        from mpnpu.report.picture import require_matplotlib

        require_matplotlib("--plot")
    command = "python -m mpnpu.stress " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    backend = backend_from_args(args)
    shard_plan = ShardPlan(op, tuple(plan.variants), cpus_per_core=backend.cpus_per_core, chaos=plan.chaos,
                           migrate=plan.migrate, options=plan.options)
    shards = make_shards(plan.configurations, plan.cases, shard_cases=args.shard_cases, seed=plan.seed,
                         repeat=plan.repeat, chaos_seed=plan.chaos.seed)
    total = plan.case_runs_per_configuration * len(plan.configurations)
    with progress_bar(total, "sweep", disable=args.quiet) as bar:
        run = run_shards(shards, shard_plan, backend, duration_s=plan.duration_s, progress=bar.update)
    result = sweep_result(run, plan, op.name)
    if args.json:
        data = result.to_dict()
        data["command"] = command
        data["cpus_per_core"] = backend.cpus_per_core
        data.update(shards_json(run, shards))
        write_json(args.json, data)
    if args.junit:
        from mpnpu.report.junit import sweep_junit, write_junit

        write_junit(args.junit, sweep_junit(result))
    if args.plot and result.results:
        from mpnpu.report.picture import render_sweep, sweep_rows

        render_sweep(args.plot, sweep_rows(result), title=f"{result.operator}: failing case-runs per configuration")
    text = format_sweep(result, command, shard_lines(run, len(shards)))
    print(result.verdict_line() if args.quiet else text, flush=True)
    if result.interrupt is not None:
        return exit_code_for_interrupt(result.interrupt)  # type: ignore[arg-type]
    return EXIT_OK if result.expected_clean_are_clean else EXIT_FAILED


def cli() -> None:
    """Console-script entry point (``mpnpu-stress``)."""
    sys.exit(run_cli(main, prog="mpnpu-stress"))


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="mpnpu.stress"))
