"""mpnpu ut CHECKOUT — an operator repository's kernel unit tests, unchanged, built and run on mpnpu.

Finds every operator unit test of a checkout laid out like the public operator repositories, keeps
those registered for this chip class, builds each with what its CMake gives it (defines, include
folders, tiling header) plus mpnpu's CPU-debug flags and mpnpu's gtest, runs it, and reports per test:
built / ran / gtest's verdict / memcheck reports / hazards (with --racecheck) / time, and what it
needed that mpnpu lacks (every missing name and header at the user's file:line), with the corpus's
missing-name histogram (:mod:`mpnpu.tools.ut`). Exit status: 0 when every test in scope built, ran
and passed with no memcheck report (and no hazard under --racecheck; with --min-score, a sync
mutation score at least that), 1 when not, 2 for a usage error, 130/143 when interrupted (what
finished is reported).
"""

from __future__ import annotations

import argparse
import dataclasses

from mpnpu.cli.command import Command, Use
from mpnpu.cli.common import LazyBar, exit_status
from mpnpu.cli.options import DEVICE
from mpnpu.cli.outputs import write_reports
from mpnpu.errors import UsageError
from mpnpu.tools.ut.results import UtRun, format_table, junit, mutation_lines, summary_line
from mpnpu.tools.ut.suite import UtOptions, run_ut


def _refuse_unsupported_device_options(args: argparse.Namespace) -> None:
    """The device options a unit test's program cannot take (it allocates and frees its GM itself)."""
    if getattr(args, "poison", None) is not None:
        raise UsageError("--poison: not supported by mpnpu ut (a unit test's program frees its GM itself)")


def run_unit_tests(args: argparse.Namespace, op: None) -> int:
    _refuse_unsupported_device_options(args)
    options = UtOptions(
        ops=tuple(args.ops or ()), jobs=args.j, run_jobs=args.run_jobs, racecheck=args.racecheck,
        opt=f"-O{args.build_opt}",
        build_dir=args.build_dir, run=not args.build_only, case_timeout_s=args.case_timeout,
        binary_timeout_s=args.test_timeout, launch_timeout_s=args.timeout or 300.0,
        opbase=args.with_opbase, ops_tensor=args.with_ops_tensor, mutate_syncs=args.mutate_syncs,
        mutate_jobs=args.mutate_jobs, mutate_run_proven=args.run_proven, pipes=args.pipes or "kernel",
        pipe_latency_us=args.pipe_latency_us, warm_python=not args.cold_python,
        no_auto_sync=bool(getattr(args, "no_auto_sync", False)), stall_grace_s=getattr(args, "stall_grace", None),
        checks=tuple(c for c in ("initcheck", "synccheck") if getattr(args, c, False)))
    if args.min_score is not None and not args.mutate_syncs:
        raise UsageError("--min-score gates the sync mutation score: give --mutate-syncs too")
    if args.resume is not None:
        if not args.mutate_syncs:
            raise UsageError("--resume takes over an earlier run's mutants: give --mutate-syncs too")
        from mpnpu.tools.ut.resume import load

        options = dataclasses.replace(options, resume=load(args.resume))
    if args.cluster is not None and not args.mutate_syncs:
        raise UsageError("--cluster runs the mutants of --mutate-syncs as Ray tasks: give --mutate-syncs too")
    from mpnpu.tools.mutate_cluster import mutant_runner

    with mutant_runner(args.cluster) as runner, LazyBar("tests", args.quiet) as bar:
        options = dataclasses.replace(options, mutate_runner=runner, mutant_progress=lambda test, done, total:
                                      bar.note(f"{test}: {done}/{total} mutants"))
        result: UtRun = run_ut(args.checkout, options, lambda r: bar.advance(f"{r.id}: {r.status}"), bar.started)
    if args.quiet:
        print(summary_line(result.counts(), result))
        if result.mutate_syncs:
            print(mutation_lines(result)[0])
    else:
        print(format_table(result, show_out_of_scope=args.verbose))
    write_reports(args, {"json": result, "junit": junit(result), "markdown": result})
    ok = result.ok
    if args.min_score is not None:
        ok = ok and result.mutation_counts()["score"] >= args.min_score
    return exit_status(result.interrupt, ok)


COMMAND = Command(
    name="ut",
    help="an operator repository's kernel unit tests, unchanged, built and run on mpnpu (what each lacks)",
    description="Find every kernel unit test of CHECKOUT (an operator repository laid out like the public ones), keep "
                "those registered for this chip class (Atlas A2: ascend910B1 / ascend910b), build each with the "
                "defines, include folders and tiling header its CMake gives, mpnpu's CPU-debug flags and mpnpu's "
                "gtest (each gtest case runs in a process of its own, so a memcheck report fails that case and the "
                "test goes on), run it where the repository's build runs it, and report per test: built, ran, "
                "gtest's verdict, memcheck reports, hazards (--racecheck), initcheck / synccheck defects "
                "(--initcheck, --synccheck), time, and what it needed that mpnpu "
                "lacks: every missing name and header at the user's file:line, and over the corpus how many tests "
                "need each. Builds are cached by command and inputs. The tests' own data scripts run as the tests "
                "call them; those that cannot (a package not installed) are listed. With --mutate-syncs, every test "
                "that passes is then run once per sync point it executes with that point dropped (a run-time "
                "switch, no rebuild; see mpnpu mutate): the report says which points its checks notice, which "
                "survive and why, and the score; --min-score makes the score a CI gate.",
    epilog="Examples: mpnpu ut ~/src/ops-nn -j 2 --json ut.json --junit ut.xml;  mpnpu ut ~/src/ops-nn --ops "
           "swi_glu,mse_loss_v2 --racecheck;  mpnpu ut ~/src/ops-nn --build-only --markdown needs.md;  mpnpu ut "
           "~/src/ops-nn --ops swi_glu --mutate-syncs --min-score 0.5",
    options=("checkout", "ops", "j", "run_jobs", "build_dir", "build_opt", "build_only", "case_timeout", "test_timeout",
             "with_opbase", "with_ops_tensor", "racecheck", "initcheck", "synccheck", "mutate_syncs", "mutate_jobs",
             "run_proven", "resume", "min_score", "cold_python",
             Use("cluster", help="with --mutate-syncs: run the mutants as Ray tasks, on the Ray cluster at ADDRESS "
                                 "(every node must see the checkout and the build folder at the same paths) or "
                                 "without ADDRESS on an embedded local one (needs pip install 'mpnpu[cluster]')"),
             *DEVICE, "json", "junit", "markdown", "quiet", "verbose"),
    run=run_unit_tests,
)
