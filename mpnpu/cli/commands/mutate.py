"""mpnpu mutate -- PROGRAM [ARG...] — would the program's own tests notice a missing sync?

Sync mutation testing of a CPU-debug test program (:mod:`mpnpu.tools.mutate`, which does the work):
every sync call site the program executes is dropped in turn, and each is reported killed (by the
program's own check, a gtest failure, a deadlock, a device error, a directed run) or survived
(redundant for these inputs, or untested: racecheck saw a hazard no assertion caught). Exit status:
0, or 1 when the score is below --min-score; 2 for a usage error (no program, a program that fails
as it is); 130/143 when interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys

from mpnpu.cli.command import Command, Use
from mpnpu.cli.common import exit_status
from mpnpu.cli.outputs import write_reports
from mpnpu.directed.mutation import KILLED
from mpnpu.errors import UsageError
from mpnpu.tools.mutate import Mutant, mutate_program
from mpnpu.tools.mutate_report import format_mutation, mutation_junit, score_line

_SOURCE_ENDINGS = (".cpp", ".cc", ".cxx", ".h", ".hpp", ".asc")


def source_files(paths: list[str]) -> list[str]:
    """--sources words -> the source files they name (a folder: its C++ sources, recursively)."""
    files: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for folder, _, names in sorted(os.walk(path)):
                files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(_SOURCE_ENDINGS)]
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise UsageError(f"--sources {path}: no such file or folder")
    return files


def run_mutate(args: argparse.Namespace, op: None) -> int:
    program = list(args.program)
    sites: list[str] = []
    if args.sources:
        from mpnpu.ascendc.build.syncpoints import scan

        sites = sorted(scan(source_files(args.sources)))
    def said(done: int, total: int, m: Mutant) -> None:  # a line per mutant on stderr: progress on long work
        if not args.quiet:
            result = (m.how if m.status == KILLED else f"SURVIVED ({m.survivor_class})" if m.status
                      else f"not classified: {m.detail}")
            print(f"mpnpu mutate: {done}/{total} {m.site} ({m.call}): {result}", file=sys.stderr, flush=True)

    from mpnpu.tools.mutate_cluster import mutant_runner

    with mutant_runner(args.cluster) as runner:
        report = mutate_program(program, jobs=args.jobs, timeout_s=args.run_timeout, sources_sites=sites,
                                progress=said, runner=runner, run_proven=args.run_proven)
    print(score_line(report, args.min_score) if args.quiet else format_mutation(report, args.min_score))
    write_reports(args, {"json": report, "junit": mutation_junit(report)})
    ok = args.min_score is None or report.score >= args.min_score
    return exit_status(KeyboardInterrupt() if report.interrupted else None, ok)


COMMAND = Command(
    name="mutate",
    help="sync mutation testing: would a CPU-debug test program notice each of its syncs missing?",
    description="Run a CPU-debug test program (a unit test built with python -m mpnpu.ascendc --cflags --libs) "
                "once to learn the sync call sites it executes, then once per site with that site dropped (a "
                "run-time switch: nothing is rebuilt). A site is killed when the program fails without it (its "
                "own check or gtest assertion, a deadlock, a device error, or a directed run that forces the race "
                "racecheck found); it survived otherwise: redundant (racecheck finds no hazard without it) or "
                "untested (a hazard no assertion caught). The score is the share of executed sync points killed; "
                "--min-score makes it a CI gate. The program and its data are never changed.",
    epilog="Example: mpnpu mutate --min-score 0.8 --junit mutants.xml --sources op_kernel -- ./test_add_custom",
    options=("program", "min_score", "run_timeout", "sources", "run_proven",
             Use("jobs", 1, help="mutants run side by side (default {default}); with --cluster, mutants in flight"),
             Use("cluster", help="run the mutants as Ray tasks: on the Ray cluster at ADDRESS (every node must see the "
                                 "program and this folder at the same paths), or without ADDRESS on an embedded local "
                                 "one (needs pip install 'mpnpu[cluster]')"),
             "json", "junit", "quiet"),
    run=run_mutate,
)
