"""python -m mpnpu.audit — which sync points of an operator are needed, and what repairs a hazard.

For every named sync point of the operator (``--op``, default FLOMS), dropped alone (and with
``--pairs`` two at a time): the hazards racecheck reports, the race-directed verdict of each
(harmful / benign / ordered, from held launches that reverse the racing pair for real), and the
failure rate of a short batch; verdict per row: necessary, unproven, benign-only or redundant. Then, for the
operator's incident variant, the cheapest sync that orders each hazard, each verified by a rerun
with the sync inserted (racecheck, directed runs, batch).

This module only parses arguments: :func:`mpnpu.directed.audit.audit` does the work and
:mod:`mpnpu.report.text.directed` renders it.

Exit status: 0 when the audit ran, 2 for a usage error, 3 when the device failed, 130/143 when
interrupted.
"""

from __future__ import annotations

import sys
from typing import Sequence

from mpnpu.cli.common import EXIT_OK, ArgumentParser, non_negative_int, positive_int, run_cli, writable_path, write_json
from mpnpu.cli.operators import add_operator_arguments, parse_with_operator, print_operator_list
from mpnpu.directed.audit import audit
from mpnpu.operators.helpers import parse_sync_names
from mpnpu.operators.protocol import Operator
from mpnpu.report.text.directed import format_audit, format_audit_markdown

DEFAULT_BLOCK_DIM = 2  # two AI cores: core pairs across AI cores show, so flag-only repairs are not over-trusted


def build_parser(op: Operator | None = None) -> ArgumentParser:
    p = ArgumentParser(
        prog="python -m mpnpu.audit",
        description=(
            "Drop each named sync point of an operator (alone, or with --pairs also two at a time) and report "
            "the hazards racecheck finds, whether held launches that reverse each racing pair give a wrong "
            "result (harmful), a right one (benign) or cannot reverse it (ordered), and the failure rate of a "
            "short batch: verdict necessary / unproven / benign-only / redundant. Then suggest the cheapest sync for each "
            "hazard of the incident variant and verify it by a rerun with the sync inserted. Exit 0 when the "
            "audit ran, 2 for usage errors, 3 for device errors."
        ),
        epilog="Example: python -m mpnpu.audit --markdown audit.md --json audit.json",
    )
    p.add_argument("--pairs", action="store_true", help="also drop every pair of sync points")
    p.add_argument("--sync", metavar="S0,S1,...", default=None, help="audit only these sync points")
    p.add_argument("--runs", type=positive_int, default=3, help="directed runs per hazard (default 3)")
    p.add_argument("--scout-cases", type=positive_int, default=3,
                   help="cases traced to find hazards and the pairs to hold (default 3)")
    p.add_argument("--batch-cases", type=positive_int, default=20,
                   help="cases of the short batch per row and per repair (default 20)")
    p.add_argument("--block-dim", type=positive_int, default=DEFAULT_BLOCK_DIM,
                   help=f"AI cores (default {DEFAULT_BLOCK_DIM})")
    p.add_argument("--seed", type=non_negative_int, default=0, help="case stream seed (default 0)")
    p.add_argument("--directed-seed", type=non_negative_int, default=0,
                   help="seed of the directed runs' choices of case and pair (default 0)")
    p.add_argument("--no-repair", action="store_true", help="skip suggesting and verifying repairs")
    p.add_argument("--replay", type=non_negative_int, default=None, metavar="SEED",
                   help="instead of an audit, rerun the directed run with this seed (as printed by --confirm "
                        "or the audit) and print what it did; give the same --drop, --block-dim, "
                        "--scout-cases and --seed it was made with")
    p.add_argument("--drop", metavar="S0,S1,...", default=None,
                   help="with --replay: the sync points the run dropped (default: the incident variant's)")
    p.add_argument("--json", type=writable_path, default=None, metavar="PATH", help="also write the audit as JSON")
    p.add_argument("--markdown", type=writable_path, default=None, metavar="PATH",
                   help="also write the table as Markdown")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_operator_arguments(p, op)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args, op = parse_with_operator(build_parser, argv)
    if op is None:
        return print_operator_list()
    only = tuple(sorted(parse_sync_names(args.sync, op.sync_points))) if args.sync else ()
    if args.replay is not None:
        return _replay(op, args)

    def progress(what: str) -> None:
        if not args.quiet:
            print(f"audit: {what} ...", file=sys.stderr, flush=True)

    result = audit(op, pairs=args.pairs, only=only, runs=args.runs, scout_cases=args.scout_cases,
                   batch_cases=args.batch_cases, block_dim=args.block_dim, case_seed=args.seed,
                   seed=args.directed_seed, repair=not args.no_repair, progress=progress)
    if args.json:
        write_json(args.json, result.to_dict())
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(format_audit_markdown(result) + "\n")
    print(format_audit(result))
    return EXIT_OK


def _replay(op: Operator, args) -> int:
    from mpnpu.directed.confirm import replay
    from mpnpu.report.text.directed import format_run

    dropped = (parse_sync_names(args.drop, op.sync_points) if args.drop is not None
               else op.variants.get("incident", frozenset()))
    run = replay(op, args.replay, dropped=dropped, scout_cases=args.scout_cases, base_seed=args.directed_seed,
                 case_seed=args.seed, block_dim=args.block_dim)
    if args.json:
        write_json(args.json, run.to_dict())
    print(format_run(run))
    return EXIT_OK


def cli() -> None:
    """Console-script entry point (``mpnpu-audit``)."""
    sys.exit(run_cli(main, prog="mpnpu-audit"))


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="mpnpu.audit"))
