"""python -m mpnpu.batch — reproduce an operator's intermittent failure, and show that its fix holds.

Runs the same seeded cases of an operator (``--op``, default FLOMS) through its kernel as written
("incident": for FLOMS the all-core barrier S1 missing) and as fixed, A/B, repeated,
on one persistent device of real core processes, and reports per variant how many case-runs failed,
which outputs, how badly, and at which case positions in each repeat (they move from repeat to
repeat: the race is decided by the OS scheduler, never by injected faults).

This module only parses arguments: :func:`mpnpu.harness.runner.run_batch` runs the batch and
:mod:`mpnpu.report.text.batch` renders its result.

Exit status: 0 when every variant expected to be clean (every sync point in place) is clean,
1 when one is not (or, with --confirm, when the fixed kernel failed under a hold plan), 2 for a usage error, 3 when the device failed, 130/143 when interrupted.
"""

from __future__ import annotations

import sys
from typing import Sequence

from mpnpu.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    ArgumentParser,
    byte_value,
    non_negative_int,
    positive_float,
    positive_int,
    progress_bar,
    run_cli,
    writable_path,
    write_json,
)
from mpnpu.cli.operators import add_operator_arguments, parse_with_operator, print_operator_list
from mpnpu.cli.timeline_output import add_junit_argument, add_timeline_arguments, timeline_selector, write_timelines
from mpnpu.errors import UsageError
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.operators.helpers import parse_sync_names
from mpnpu.operators.protocol import Operator
from mpnpu.operators.registry import DEFAULT_OPERATOR, load_operator
from mpnpu.report.text.batch import format_batch
from mpnpu.runtime import cpuset
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM, RuntimeOptions
from mpnpu.runtime.procutil import exit_code_for_interrupt

DEFAULT_CASES = 100
DEFAULT_REPEAT = 8


def sync_point_epilog(op: Operator | None) -> str:
    """The operator's sync points, for a command's --help."""
    op = op if op is not None else load_operator(DEFAULT_OPERATOR)
    points = "; ".join(f"{name} ({what})" for name, what in op.sync_points.items())
    return f"Sync points of {op.name}: {points}."


def build_parser(op: Operator | None = None) -> ArgumentParser:
    p = ArgumentParser(
        prog="python -m mpnpu.batch",
        description=(
            "Run seeded cases of an operator (default: floms) through its incident kernel (the bug as "
            "written: for floms the SyncAll S1 missing) and its fixed kernel, A/B, "
            "repeated on one persistent device, and report the failures per variant. Exit 0 when every "
            "variant expected clean is clean, 1 when not, 2 for usage errors, 3 for device errors."
        ),
        epilog=(
            sync_point_epilog(op) + " Example: python -m mpnpu.batch --cases 100 --repeat 3 --json report.json"
        ),
    )
    p.add_argument("--cases", type=positive_int, default=DEFAULT_CASES,
                   help=f"number of distinct seeded cases (default {DEFAULT_CASES})")
    p.add_argument("--repeat", type=positive_int, default=DEFAULT_REPEAT,
                   help=f"how many times the whole set of cases is run (default {DEFAULT_REPEAT})")
    p.add_argument("--variant", choices=("incident", "fixed", "both"), default="both",
                   help="which kernel variant(s) to run (default both, A/B)")
    p.add_argument("--drop-sync", metavar="S0,S1,...", default=None,
                   help="sync points the incident variant drops instead of the operator's own (for FLOMS: S1) "
                        "(comma-separated; see below); the fixed variant always keeps every one")
    p.add_argument("--probe", default="", metavar="NAME",
                   help="run a diagnosis probe on every variant (see python -m mpnpu.investigate --help)")
    p.add_argument("--block-dim", type=positive_int, default=None,
                   help=f"AI cores (each 1 cube + 2 vector core processes); default {DEFAULT_BLOCK_DIM} "
                        "on every machine")
    p.add_argument("--cpus-per-core", type=non_negative_int, default=cpuset.DEFAULT_CPUS_PER_CORE, metavar="N",
                   help=f"pin the run to N CPUs per AI core (default {cpuset.DEFAULT_CPUS_PER_CORE}: 3 core "
                        "processes on 2 CPUs, the same crowding on any machine); 0: do not pin")
    p.add_argument("--seed", type=non_negative_int, default=0, help="case stream seed (default 0)")
    p.add_argument("--poison", type=byte_value, default=None, metavar="BYTE",
                   help="fill freed GM blocks with this byte (e.g. 0xFF) instead of leaving stale data")
    p.add_argument("--racecheck", action="store_true",
                   help="trace every GM access and report unsynchronised conflicting accesses (hazards)")
    p.add_argument("--confirm", action="store_true",
                   help="with --racecheck: reproduce each hazard of a variant that drops syncs by held launches "
                        "that reverse the racing pair for real (race-directed), and say whether it is harmful")
    p.add_argument("--confirm-runs", type=positive_int, default=10, metavar="N",
                   help="directed runs per hazard with --confirm (default 10)")
    p.add_argument("--timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="give up a launch after this long (default 300)")
    p.add_argument("--pipes", choices=("kernel", "async", "sync"), default="kernel",
                   help="how each core runs its data-movement pipes: 'kernel' (default) asynchronously for "
                        "kernels marked @pipelined, in order for the rest; 'async' for every kernel; 'sync' in "
                        "order for every kernel (faster; intra-core races cannot show, racecheck still reports "
                        "them). See docs/pipes.md")
    p.add_argument("--pipe-latency-us", type=positive_float, default=None, metavar="US",
                   help="asynchronous pipes: the longest an issued copy stays queued while the core keeps "
                        "issuing (default 100); longer shows intra-core races that need a copy to be later. "
                        "Changes only when copies run")
    p.add_argument("--json", type=writable_path, default=None, metavar="PATH", help="also write the report as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar; print only the verdict line")
    add_junit_argument(p)
    add_timeline_arguments(p)
    add_operator_arguments(p, op)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args, op = parse_with_operator(build_parser, argv)
    if op is None:
        return print_operator_list()
    if args.confirm and not args.racecheck:
        raise UsageError("--confirm reproduces the hazards racecheck reports: add --racecheck")
    under_test = None if args.drop_sync is None else parse_sync_names(args.drop_sync, op.sync_points)
    names = ("incident", "fixed") if args.variant == "both" else (args.variant,)
    variants = make_variants(op, names, under_test)
    options = _runtime_options(args)
    selector = timeline_selector(args, [v.name for v in variants], args.cases)
    total = args.cases * args.repeat * len(variants)
    block_dim = args.block_dim or DEFAULT_BLOCK_DIM
    cpu_set = cpuset.plan_cpu_set(block_dim, args.cpus_per_core)
    # The whole run (this process, which dispatches launches and computes goldens, and every core
    # process it forks) stays on the device's CPU set.
    with cpuset.pinned(cpu_set), progress_bar(total, "case-runs", disable=args.quiet) as bar:
        result = run_batch(
            op, cases=args.cases, repeat=args.repeat, variants=variants, seed=args.seed,
            block_dim=block_dim, probe=args.probe, racecheck=args.racecheck, options=options,
            progress=bar.update, timeline=selector,
        )
    result.cpus = cpu_set.n_cpus
    result.notes.append(f"CPU set: {cpu_set.describe()}")
    if args.pipes != "kernel":
        result.notes.append(f"pipes: {args.pipes} (--pipes; the default runs pipelined kernels' pipes asynchronously)")
    if args.pipe_latency_us is not None:
        result.notes.append(f"pipe latency bound: {args.pipe_latency_us:g} us (--pipe-latency-us; default 100): "
                            "only when copies run changes")
    if args.poison is not None:
        result.notes.append(f"freed GM blocks were poisoned with 0x{args.poison:02X}")
    if result.block_dim * 3 < cpu_set.n_cpus:
        result.notes.append(
            f"note: {3 * result.block_dim} core processes on {cpu_set.n_cpus} CPUs leave CPUs idle, which can "
            "hide the race; see python -m mpnpu.stress for placement and chaos"
        )
    confirmed = _confirm(op, result, args) if args.confirm and result.interrupt is None else {}
    if args.json:
        data = result.to_dict()
        data["cpu_set"] = cpu_set.to_dict()
        if args.confirm:
            data["confirm"] = {name: c.to_dict() for name, c in confirmed.items()}
        write_json(args.json, data)
    if args.junit:
        from mpnpu.report.junit import batch_junit, write_junit

        write_junit(args.junit, batch_junit(result))
    written = write_timelines(args, selector) if selector is not None else []
    text = format_batch(result, op.sync_points)
    if confirmed:
        from mpnpu.report.text.directed import format_confirm

        text += "".join(f"\n\n{format_confirm(c, f'race-directed reproduction, variant {name}:')}"
                        for name, c in confirmed.items())
    print(result.verdict_line() if args.quiet else text)
    for line in written:
        print(line, file=sys.stderr)
    if result.interrupt is not None:
        return exit_code_for_interrupt(result.interrupt)
    # A hold plan that makes the fixed kernel fail would be a bug in the tool: never report OK then.
    held_clean = all(c.fixed_failures == 0 for c in confirmed.values())
    return EXIT_OK if result.expected_clean_are_clean and held_clean else EXIT_FAILED


def _confirm(op: Operator, result, args) -> dict:
    """Directed reproduction of the hazards of every variant that drops sync points."""
    from mpnpu.directed.confirm import confirm_hazards

    out = {}
    for name, v in result.variants.items():
        if not v.variant.dropped:
            continue
        out[name] = confirm_hazards(op, dropped=v.variant.dropped, runs=args.confirm_runs,
                                    scout_cases=min(args.cases, 4), case_seed=args.seed, block_dim=result.block_dim,
                                    options=_runtime_options(args))
        out[name].operator_ref = args.op
    return out


def _runtime_options(args) -> RuntimeOptions:
    extra: dict = {"launch_timeout_s": args.timeout} if args.timeout else {}
    if args.poison is not None:
        extra["gm_poison"] = args.poison
    if args.pipe_latency_us is not None:
        extra["pipe_latency_us"] = args.pipe_latency_us
    return RuntimeOptions(pipes=args.pipes, **extra)


def cli() -> None:
    """Console-script entry point (``mpnpu-batch``)."""
    sys.exit(run_cli(main, prog="mpnpu-batch"))


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="mpnpu.batch"))
