"""mpnpu investigate — run an operator's diagnosis chain, step by step.

For FLOMS (the default) that is the incident's diagnosis, O1–O9 of docs/incident.md: a calibration
of the unprobed failure rate, then each step as a probe on the incident kernel, sized so that a
fault at the calibrated rate would show with >= 99% probability, each conclusion checked against
what the original diagnosis saw. The chain is the operator's data
(:class:`mpnpu.operators.diagnosis.Diagnosis`), run by :func:`mpnpu.harness.chain.run_investigation`
and written by :mod:`mpnpu.report`; this module is argument flow only. An operator without a chain
gets one line saying so (exit 2).

``--timeline``/``--timeline-png``/``--timeline-case`` keep launches of every step that runs the
kernel, as the batch keeps them per variant (:func:`mpnpu.harness.chain.timeline_names`).

Exit status: 0 when every conclusion matches, 1 when one does not, 2 for a usage error, 3 when the
device failed, 130/143 when interrupted (the steps done so far are printed).
"""

from __future__ import annotations

import argparse
import sys

from mpnpu.cli.command import Command, Use
from mpnpu.cli.common import exit_status, progress_bar
from mpnpu.cli.options import DEFAULT_OPERATOR, DEVICE, OPTIONS, runtime_options
from mpnpu.cli.outputs import timeline_selector, write_reports, write_timelines
from mpnpu.errors import UsageError
from mpnpu.harness.chain import run_investigation, timeline_names
from mpnpu.operators.diagnosis import StepResult, diagnosis_for
from mpnpu.operators.protocol import Operator, diagnosis_of
from mpnpu.report.text import format_text


def _epilog(op: Operator) -> str:
    chain = diagnosis_of(op)
    shapes = "; ".join(f"{name}: {chain.shapes[name].description}" for name in chain.shapes) if chain else ""
    default = chain.default_shapes if chain is not None else "default"
    return (f"--shapes of {op.name}: {shapes + '; ' if shapes else ''}default: the operator's own cases, as mpnpu "
            f"batch uses (the chain's choice: {default}). Each step also runs alone: mpnpu batch --probe NAME "
            "--variant incident. Example: mpnpu investigate --op floms --max-cases 60 --json chain.json")


def run(args: argparse.Namespace, op: Operator) -> int:
    chain = diagnosis_for(op)  # an operator without a chain: one line, exit 2
    if args.repeat < 2:
        raise UsageError("--repeat: expected at least 2 (consistency compares repeats of a case)")
    if args.min_cases > args.max_cases:
        raise UsageError(f"--min-cases {args.min_cases} exceeds --max-cases {args.max_cases}")
    if args.shapes is not None and args.shapes not in chain.shapes_names():
        raise UsageError(f"--shapes: unknown shapes {args.shapes!r}; choose from {', '.join(chain.shapes_names())}")
    # Every step runs at least this many cases (the calibration its own number, the others >= --min-cases).
    selector = timeline_selector(args, timeline_names(chain), min(args.calibration_cases, args.min_cases),
                                 grouped=True, unit="step")
    with progress_bar(args.calibration_cases * args.repeat, "case-runs", disable=args.quiet) as bar:
        def set_total(total: int) -> None:
            bar.total = total
            bar.refresh()

        def step_done(step: StepResult) -> None:
            bar.set_postfix_str(f"{step.label}: {'ok' if step.matches else 'NO'}", refresh=True)

        inv = run_investigation(
            op, seed=args.seed, block_dim=args.block_dim, repeats=args.repeat,
            calibration_cases=args.calibration_cases, min_cases=args.min_cases, max_cases=args.max_cases,
            confidence=args.confidence, safety=args.safety, racecheck=args.racecheck, shapes=args.shapes,
            options=runtime_options(args), progress=bar.update, on_total=set_total, on_step=step_done,
            timeline=selector, cpus_per_core=args.cpus_per_core,
        )
    write_reports(args, {"json": inv, "markdown": inv, "junit": inv})
    written = write_timelines(args, selector) if selector is not None else []
    print(format_text(inv), flush=True)
    for line in written:
        print(line, file=sys.stderr)
    return exit_status(inv.interrupt, inv.all_match)


COMMAND = Command(
    name="investigate",
    help="replays the write-up's diagnosis (O4-O9) as probes on the kernel and checks every conclusion",
    description=(
        f"Run an operator's diagnosis chain (default: {DEFAULT_OPERATOR}, the incident's diagnosis O1-O9): calibrate "
        "the failure rate of its incident kernel, then run each step (a probe on a variant), each sized so that a "
        f"fault at the calibrated rate would show with >= {OPTIONS['confidence'].kwargs['default']:.0%} probability "
        "(--confidence), and check every conclusion against what the original "
        "diagnosis saw. Exit 0 when all match, 1 when one does not, 2 for usage errors (and for an operator "
        "without a chain), 3 for device errors, 130 when interrupted."
    ),
    options=("op", "list_ops", "list_syncs", "seed", Use("repeat", 4), "calibration_cases", "min_cases", "max_cases",
             "confidence", "safety", "shapes", "block_dim", *DEVICE, "racecheck", "json", "markdown", "junit",
             "timeline", "timeline_case", "timeline_png", "quiet", "verbose", "cpus_per_core"),
    run=run,
    epilog=_epilog,
    alias="python -m mpnpu.investigate",
)
