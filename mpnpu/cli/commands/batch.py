"""mpnpu batch — reproduce an operator's intermittent failure, and show that its fix holds.

Runs the same seeded cases of an operator (``--op``, default FLOMS) through its kernel as written
("incident": for FLOMS the all-core barrier S1 missing) and as fixed, A/B, repeated, on one
persistent device of real core processes, and reports per variant how many case-runs failed, which
outputs, how badly, and at which case positions in each repeat (they move from repeat to repeat:
the race is decided by the OS scheduler, never by injected faults).

Argument flow only: :func:`mpnpu.harness.runner.run_batch` runs the batch, :mod:`mpnpu.report`
writes what it found.

Exit status: 0 when every variant expected to be clean (every sync point in place) is clean, 1 when
one is not (or, with --confirm, when the fixed kernel failed under a hold plan), 2 for a usage
error, 3 when the device failed (also when a variant expected clean stopped on the same launch error
in --max-same-errors consecutive case-runs), 130/143 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mpnpu.cli.command import Command, Use
from mpnpu.cli.common import exit_status, progress_bar
from mpnpu.cli.options import DEVICE, device_notes, runtime_options
from mpnpu.cli.outputs import timeline_selector, write_reports, write_timelines
from mpnpu.errors import BaselineError, ExitCode, UsageError
from mpnpu.harness.runner import BatchResult, make_variants, run_batch
from mpnpu.operators.helpers import build_kernels_for, sync_names_of
from mpnpu.operators.protocol import Operator, topology_for
from mpnpu.report.text import format_text
from mpnpu.runtime import cpuset

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
    cpu_set = cpuset.plan_cpu_set(args.block_dim, args.cpus_per_core,
                                  processes=topology_for(op, args.block_dim).n_cores)
    # A C++ operator's libraries, built before the progress bar (which its lines would break up)
    # and before the batch's clock starts
    build_kernels_for(op, args.seed, args.cases, args.probe, None if args.quiet else _stderr_line)
    # The whole run (this process, which dispatches launches and computes goldens, and every core
    # process it forks) stays on the device's CPU set.
    with cpuset.pinned(cpu_set), progress_bar(total, "case-runs", disable=args.quiet) as bar:
        result = run_batch(
            op, cases=args.cases, repeat=args.repeat, variants=variants, seed=args.seed,
            block_dim=args.block_dim, probe=args.probe, racecheck=args.racecheck, options=options,
            progress=bar.update, timeline=selector, max_same_errors=args.max_same_errors,
        )
    result.cpus = cpu_set.n_cpus
    result.notes.append(f"CPU set: {cpu_set.describe()}")
    result.notes.extend(device_notes(args))
    if result.core_processes < cpu_set.n_cpus:
        result.notes.append(
            f"note: {result.core_processes} core processes on {cpu_set.n_cpus} CPUs leave CPUs idle, which can "
            "hide the race; see mpnpu stress for placement and chaos"
        )
    confirmed, refused = _confirm(op, result, args) if args.confirm and result.interrupt is None else ({}, "")
    data = result.to_dict()
    data["cpu_set"] = cpu_set.to_dict()
    if args.confirm:
        data["confirm"] = {name: c.to_dict() for name, c in confirmed.items()}
        if refused:
            data["confirm_refused"] = refused
    write_reports(args, {"json": data, "junit": result})
    written = write_timelines(args, selector) if selector is not None else []
    text = format_text(result, verbose=args.verbose)
    text += "".join(f"\n\n{format_text(c, heading=f'race-directed reproduction, variant {name}:')}"
                    for name, c in confirmed.items())
    if refused:
        text += f"\n\n{refused}"
    print(result.verdict_line() + (f"\n{refused}" if refused else "") if args.quiet else text)
    for line in written:
        print(line, file=sys.stderr)
    # A hold plan that makes the fixed kernel fail would be a bug in the tool: never report OK then.
    held_clean = all(c.fixed_failures == 0 for c in confirmed.values()) and not refused
    if result.stopped_expected_clean and result.interrupt is None:
        return ExitCode.ERROR  # the kernel did not run: a device error, as from one launch
    return exit_status(result.interrupt, result.expected_clean_are_clean and held_clean)


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _confirm(op: Operator, result: BatchResult, args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """Directed reproduction of the hazards of every variant that drops sync points, and the line
    that says why there is none when the fixed variant, the directed runs' baseline, fails."""
    from mpnpu.directed.confirm import confirm_hazards

    fixed = next((v for v in result.variants.values() if not v.variant.dropped), None)
    if fixed is not None and not fixed.clean:
        first = f": {fixed.first_launch_error}" if fixed.first_launch_error else ""
        return {}, (f"race-directed reproduction refused: the fixed variant (every sync point in place) must pass "
                    f"first, but it failed {fixed.failed_case_runs} of {fixed.case_runs} case-runs{first}")
    out = {}
    try:
        for name, v in result.variants.items():
            if not v.variant.dropped:
                continue
            out[name] = confirm_hazards(op, dropped=v.variant.dropped, runs=args.directed_runs,
                                        scout_cases=min(args.cases, 4), case_seed=args.seed,
                                        block_dim=result.block_dim, options=runtime_options(args),
                                        baseline=fixed is None)  # (the batch ran the fixed variant: clean)
            out[name].operator_ref = args.op
    except BaselineError as e:
        return out, str(e)
    return out, ""


COMMAND = Command(
    name="batch",
    help="the main job: seeded cases through the kernel as shipped (incident) and fixed, A/B, repeated",
    description=(
        "Run seeded cases of an operator (default: floms) through its incident kernel (the bug as written: for "
        "floms the SyncAll S1 missing) and its fixed kernel, A/B, repeated on one persistent device, and report "
        "the failures per variant. Exit 0 when every variant expected clean is clean, 1 when not, 2 for usage "
        "errors, 3 for device errors."
    ),
    options=("op", "list_ops", "list_syncs", "variant", "drop_sync", "probe", Use("cases", DEFAULT_CASES),
             Use("repeat", DEFAULT_REPEAT), "seed", "block_dim", *DEVICE, "racecheck", "confirm", "directed_runs",
             "max_same_errors", "json", "junit", "timeline", "timeline_case", "timeline_png", "quiet", "verbose",
             "cpus_per_core"),
    run=run,
    epilog=sync_point_epilog,
    alias="python -m mpnpu.batch",
)
