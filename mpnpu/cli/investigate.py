"""python -m mpnpu.investigate — run an operator's diagnosis chain, step by step.

For FLOMS (the default) that is the incident's diagnosis, O1–O9 of docs/incident.md: a calibration
of the unprobed failure rate, then each step as a probe on the incident kernel, sized so that a
fault at the calibrated rate would show with >= 99% probability, each conclusion checked against
what the original diagnosis saw. The chain is the operator's data
(:class:`mpnpu.harness.chain.Diagnosis`), run by :func:`mpnpu.harness.chain.run_investigation` and
rendered by :mod:`mpnpu.report.text.investigate`; this module only parses arguments. An operator
without a chain gets one line saying so (exit 2).

``--timeline``/``--timeline-png``/``--timeline-case`` keep launches of every step that runs the
kernel, as the batch keeps them per variant (:func:`mpnpu.harness.chain.timeline_names`).

Exit status: 0 when every conclusion matches, 1 when one does not, 2 for a usage error, 3 when the
device failed, 130/143 when interrupted (the steps done so far are printed).
"""

from __future__ import annotations

import sys
from typing import Sequence

from mpnpu.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    ArgumentParser,
    float_in,
    non_negative_int,
    positive_int,
    progress_bar,
    run_cli,
    writable_path,
    write_json,
)
from mpnpu.cli.operators import add_operator_arguments, parse_with_operator, print_operator_list
from mpnpu.cli.timeline_output import add_timeline_arguments, timeline_selector, write_timelines
from mpnpu.errors import UsageError
from mpnpu.harness.chain import run_investigation, timeline_names
from mpnpu.operators.diagnosis import StepResult, diagnosis_for
from mpnpu.operators.protocol import Operator, diagnosis_of
from mpnpu.operators.registry import DEFAULT_OPERATOR, load_operator
from mpnpu.report.text.investigate import format_markdown, format_text
from mpnpu.runtime import cpuset
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM
from mpnpu.runtime.procutil import exit_code_for_interrupt


def build_parser(op: Operator | None = None) -> ArgumentParser:
    op = op if op is not None else load_operator(DEFAULT_OPERATOR)
    chain = diagnosis_of(op)
    shapes = chain.shapes_names() if chain is not None else ("default",)
    default_shapes = chain.default_shapes if chain is not None else "default"
    described = "; ".join(f"{name}: {chain.shapes[name].description}" for name in chain.shapes) if chain else ""
    p = ArgumentParser(
        prog="python -m mpnpu.investigate",
        description=(
            "Run an operator's diagnosis chain (default: floms, the incident's diagnosis O1-O9): calibrate "
            "the failure rate of its incident kernel, then run each step (a probe on a variant), each sized "
            "so that a fault at the calibrated rate would show with >= 99% probability, and check every "
            "conclusion against what the original diagnosis saw. Exit 0 when all match, 1 when one does "
            "not, 2 for usage errors (and for an operator without a chain), 3 for device errors, 130 when "
            "interrupted."
        ),
        epilog="Each step is also runnable alone: python -m mpnpu.batch --probe NAME --variant incident",
    )
    p.add_argument("--seed", type=non_negative_int, default=0, help="case stream seed (default 0)")
    p.add_argument("--block-dim", type=positive_int, default=None,
                   help=f"AI cores (default {DEFAULT_BLOCK_DIM}, pinned with this process to 2 CPUs per AI core)")
    p.add_argument("--repeats", type=_repeats, default=4,
                   help="repeats of every case in a step (>= 2; consistency needs them; default 4)")
    p.add_argument("--calibration-cases", type=positive_int, default=50,
                   help="cases in the calibration step (x repeats case-runs; default 50)")
    p.add_argument("--min-cases", type=positive_int, default=75, help="floor on cases per step (default 75)")
    p.add_argument("--max-cases", type=positive_int, default=120,
                   help="cap on cases per step, which bounds the run time when the race is rare (default 120)")
    p.add_argument("--confidence", type=float_in(0.0, 1.0, low_open=True, what="a probability"), default=0.99,
                   help="probability with which each step must show a fault at the guarded rate (default 0.99)")
    p.add_argument("--safety", type=float_in(1.0), default=4.0,
                   help="steps are sized for the calibrated rate's 95%% lower bound divided by this (default 4)")
    p.add_argument("--shapes", choices=shapes, default=default_shapes,
                   help=f"case shapes (default {default_shapes}): {described + '; ' if described else ''}"
                        "default: the operator's own cases, as python -m mpnpu.batch uses")
    p.add_argument("--racecheck", action="store_true",
                   help="trace every GM access and print the hazards found in each step")
    p.add_argument("--json", type=writable_path, default=None, metavar="PATH", help="also write the results as JSON")
    p.add_argument("--markdown", type=writable_path, default=None, metavar="PATH",
                   help="also write the table as Markdown")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_timeline_arguments(p, "every step that runs the kernel: its first failing case-run and, for contrast, a "
                              "passing run of the same case (a step that never fails: its run of the case the "
                              "calibration first failed at)", per="step")
    add_operator_arguments(p, op)
    return p


def _repeats(text: str) -> int:
    import argparse

    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError("expected at least 2 (consistency compares repeats of a case)")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args, op = parse_with_operator(build_parser, argv)
    if op is None:
        return print_operator_list()
    diagnosis_for(op)  # an operator without a chain: one line, exit 2
    if args.min_cases > args.max_cases:
        raise UsageError(f"--min-cases {args.min_cases} exceeds --max-cases {args.max_cases}")
    # Every step runs at least this many cases (the calibration its own number, the others >= --min-cases).
    selector = timeline_selector(args, timeline_names(diagnosis_for(op)),
                                 min(args.calibration_cases, args.min_cases), grouped=True,
                                 unit="step")
    # As the batch does: the run and its core processes on 2 CPUs per AI core, whatever the machine,
    # so the calibrated rate (and with it the number of repeats) means the same everywhere.
    cpu_set = cpuset.plan_cpu_set(args.block_dim or DEFAULT_BLOCK_DIM)
    with cpuset.pinned(cpu_set), progress_bar(args.calibration_cases * args.repeats, "case-runs",
                                               disable=args.quiet) as bar:
        def set_total(total: int) -> None:
            bar.total = total
            bar.refresh()

        def step_done(step: StepResult) -> None:
            bar.set_postfix_str(f"{step.label}: {'ok' if step.matches else 'NO'}", refresh=True)

        inv = run_investigation(
            op, seed=args.seed, block_dim=args.block_dim, repeats=args.repeats,
            calibration_cases=args.calibration_cases, min_cases=args.min_cases, max_cases=args.max_cases,
            confidence=args.confidence, safety=args.safety, racecheck=args.racecheck, shapes=args.shapes,
            progress=bar.update, on_total=set_total, on_step=step_done, timeline=selector,
        )
    if args.json:
        write_json(args.json, inv.to_dict())
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(format_markdown(inv))
    written = write_timelines(args, selector) if selector is not None else []
    print(format_text(inv), flush=True)
    for line in written:
        print(line, file=sys.stderr)
    if inv.interrupt is not None:
        return exit_code_for_interrupt(inv.interrupt)
    return EXIT_OK if inv.all_match else EXIT_FAILED


def cli() -> None:
    """Console-script entry point (``mpnpu-investigate``)."""
    sys.exit(run_cli(main, prog="mpnpu-investigate"))


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="mpnpu.investigate"))
