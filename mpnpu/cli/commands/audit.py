"""mpnpu audit — which sync points of an operator are needed, and what repairs a hazard.

For every named sync point of the operator (``--op``, default FLOMS), dropped alone (and with
``--pairs`` two at a time): the hazards racecheck reports, the race-directed verdict of each
(harmful / benign / ordered, from held launches that reverse the racing pair for real), and the
failure rate of a short batch; verdict per row: necessary, unproven, benign-only or redundant. Then,
for the operator's incident variant, the cheapest sync that orders each hazard, each verified by a
rerun with the sync inserted (racecheck, directed runs, batch).

Argument flow only: :func:`mpnpu.directed.audit.audit` does the work and :mod:`mpnpu.report`
writes it.

Exit status: 0 when the audit ran, 1 when the operator with every sync in place fails a scouted case
(the baseline an audit needs: the case is named), 2 for a usage error, 3 when the device failed,
130/143 when interrupted.
"""

from __future__ import annotations

import argparse
import sys

from mpnpu.cli.command import Command, Use
from mpnpu.cli.options import DEVICE, runtime_options
from mpnpu.cli.outputs import write_reports
from mpnpu.directed.audit import audit
from mpnpu.directed.confirm import replay
from mpnpu.directed.repair import AUDIT_BLOCK_DIM
from mpnpu.errors import ExitCode
from mpnpu.operators.helpers import sync_names_of
from mpnpu.operators.protocol import Operator
from mpnpu.report.text import format_text


def run(args: argparse.Namespace, op: Operator) -> int:
    only = tuple(sorted(sync_names_of(op, args.sync, " in --sync"))) if args.sync else ()
    if args.replay is not None:
        return _replay(op, args)

    def progress(what: str) -> None:
        if not args.quiet:
            print(f"audit: {what} ...", file=sys.stderr, flush=True)

    result = audit(op, pairs=args.pairs, only=only, runs=args.directed_runs, scout_cases=args.scout_cases,
                   batch_cases=args.batch_cases, block_dim=args.block_dim, case_seed=args.seed,
                   seed=args.directed_seed, repair=not args.no_repair, options=runtime_options(args),
                   progress=progress)
    write_reports(args, {"json": result, "markdown": result})
    print(format_text(result))
    return ExitCode.OK


def _replay(op: Operator, args: argparse.Namespace) -> int:
    dropped = (sync_names_of(op, args.drop_sync) if args.drop_sync is not None
               else op.variants.get("incident", frozenset()))
    run = replay(op, args.replay, dropped=dropped, scout_cases=args.scout_cases, base_seed=args.directed_seed,
                 case_seed=args.seed, block_dim=args.block_dim, options=runtime_options(args))
    write_reports(args, {"json": run})
    print(format_text(run))
    return ExitCode.OK


COMMAND = Command(
    name="audit",
    help="the sync audit: each sync point dropped, its hazards, their directed verdicts and a batch; repairs",
    description=(
        "Drop each named sync point of an operator (alone, or with --pairs also two at a time) and report the "
        "hazards racecheck finds, whether held launches that reverse each racing pair give a wrong result "
        "(harmful), a right one (benign) or cannot reverse it (ordered), and the failure rate of a short batch: "
        "verdict necessary / unproven / benign-only / redundant. Then suggest the cheapest sync for each hazard of "
        "the incident variant and verify it by a rerun with the sync inserted. Exit 0 when the audit ran, 1 when "
        "the operator with every sync in place fails a scouted case (the baseline it needs), 2 for usage errors, 3 "
        "for device errors, 130/143 when interrupted."
    ),
    epilog=(f"The audit runs block_dim {AUDIT_BLOCK_DIM} unless told otherwise ({AUDIT_BLOCK_DIM} AI cores of a mix "
            "kernel; its header says how many core processes that made): a flag inside one AI core only looks "
            "sufficient when no access pair crosses AI cores. Examples: mpnpu audit --markdown audit.md --json "
            "audit.json; mpnpu audit --op flag-reuse; mpnpu audit --op path/to/my_op.py"),
    options=("op", "list_ops", "list_syncs", "pairs", "sync", Use("directed_runs", 3), "scout_cases", "batch_cases",
             Use("block_dim", AUDIT_BLOCK_DIM), "seed", "directed_seed", "no_repair", "replay", "drop_sync",
             *DEVICE, "json", "markdown", "quiet", "verbose"),
    run=run,
    alias="python -m mpnpu.audit",
)
