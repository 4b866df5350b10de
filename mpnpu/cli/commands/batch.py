"""mpnpu batch — reproduce an operator's intermittent failure, and show that its fix holds.

Runs the same seeded cases of an operator (``--op``, default FLOMS) through its kernel as written
("incident": for FLOMS the all-core barrier S1 missing) and as fixed, A/B, repeated, on one
persistent device of real core processes, and reports per variant how many case-runs failed, which
outputs, how badly, and at which case positions in each repeat (they move from repeat to repeat:
the race is decided by the OS scheduler, never by injected faults).

Argument flow only: :func:`mpnpu.harness.runner.prepare_batch` plans the CPU set and builds the
kernels, :func:`mpnpu.harness.runner.run_batch` runs the batch there,
:func:`mpnpu.directed.confirm.confirm_batch` reproduces its hazards (``--confirm``), and
:mod:`mpnpu.report` writes what they found.

Exit status: 0 when every variant expected to be clean (every sync point in place) is clean, 1 when
one is not (or, with --confirm, when the fixed kernel failed under a hold plan), 2 for a usage
error, 3 when the device failed (also when a variant expected clean stopped on the same launch error
in --max-same-errors consecutive case-runs), 130/143 when interrupted.
"""

from __future__ import annotations

import argparse
import sys

from mpnpu.cli.command import Command, Use
from mpnpu.cli.common import exit_status, progress_bar
from mpnpu.cli.options import DEFAULT_OPERATOR, DEVICE, device_notes, runtime_options
from mpnpu.cli.outputs import timeline_selector, write_reports, write_timelines
from mpnpu.directed.confirm import ConfirmedBatch, confirm_batch
from mpnpu.errors import ExitCode, UsageError
from mpnpu.harness.runner import BatchResult, make_variants, prepare_batch, run_batch
from mpnpu.operators.helpers import sync_names_of
from mpnpu.operators.protocol import Operator
from mpnpu.report.text import format_text

DEFAULT_CASES = 100
DEFAULT_REPEAT = 8


def sync_point_epilog(op: Operator) -> str:
    """The operator's sync points, for a command's --help."""
    points = "; ".join(f"{name} ({what})" for name, what in op.sync_points.items())
    return (f"Sync points of {op.name}: {points}. Examples: mpnpu batch --cases 100 --repeat 3 --json report.json; "
            "mpnpu batch --op vecin-early-read --racecheck --timeline t.json; mpnpu batch --op path/to/my_op.py "
            "(the file's OPERATOR).")


def run(args: argparse.Namespace, op: Operator) -> int:
    if args.confirm and not args.racecheck:
        raise UsageError("--confirm reproduces the hazards racecheck reports: add --racecheck")
    under_test = None if args.drop_sync is None else sync_names_of(op, args.drop_sync)
    names = ("incident", "fixed") if args.variant == "both" else (args.variant,)
    variants = make_variants(op, names, under_test)
    options = runtime_options(args)
    selector = timeline_selector(args, [v.name for v in variants], args.cases)
    total = args.cases * args.repeat * len(variants)
    # The CPU set, and a C++ operator's libraries built before the progress bar (which their lines
    # would break up) and before the batch's clock starts
    cpu_set = prepare_batch(op, block_dim=args.block_dim, cpus_per_core=args.cpus_per_core, seed=args.seed,
                            cases=args.cases, probe=args.probe, report=None if args.quiet else _stderr_line)
    with progress_bar(total, "case-runs", disable=args.quiet) as bar:
        result = run_batch(
            op, cases=args.cases, repeat=args.repeat, variants=variants, seed=args.seed,
            block_dim=args.block_dim, probe=args.probe, racecheck=args.racecheck, initcheck=bool(args.initcheck),
            synccheck=bool(args.synccheck), options=options,
            progress=bar.update, timeline=selector, max_same_errors=args.max_same_errors, cpu_set=cpu_set,
            notes=device_notes(args),
        )
    outcome: BatchResult | ConfirmedBatch = result
    if args.confirm:
        outcome = confirm_batch(op, result, runs=args.directed_runs, options=options, operator_ref=args.op)
    write_reports(args, {"json": outcome, "junit": result})
    written = write_timelines(args, selector) if selector is not None else []
    print(outcome.verdict_line() if args.quiet else format_text(outcome, verbose=args.verbose))
    for line in written:
        print(line, file=sys.stderr)
    if result.stopped_expected_clean and result.interrupt is None:
        return ExitCode.ERROR  # the kernel did not run: a device error, as from one launch
    return exit_status(result.interrupt, outcome.expected_clean_are_clean)


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


COMMAND = Command(
    name="batch",
    help="the main job: seeded cases through the kernel as shipped (incident) and fixed, A/B, repeated",
    description=(
        f"Run seeded cases of an operator (default: {DEFAULT_OPERATOR}) through its incident kernel (the bug as "
        "written: for "
        "floms the SyncAll S1 missing) and its fixed kernel, A/B, repeated on one persistent device, and report "
        "the failures per variant. Exit 0 when every variant expected clean is clean, 1 when not, 2 for usage "
        "errors, 3 for device errors."
    ),
    options=("op", "list_ops", "list_syncs", "variant", "drop_sync", "probe", Use("cases", DEFAULT_CASES),
             Use("repeat", DEFAULT_REPEAT), "seed", "block_dim", *DEVICE, "racecheck", "initcheck", "synccheck",
             "confirm", "directed_runs", "max_same_errors", "json", "junit", "timeline", "timeline_case",
             "timeline_png", "quiet", "verbose",
             "cpus_per_core"),
    run=run,
    epilog=sync_point_epilog,
    alias="python -m mpnpu.batch",
)
