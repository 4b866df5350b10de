"""mpnpu samples TREE — a dev kit's kernel samples, unchanged, built and run on mpnpu with their own data
and verify scripts.

Finds every sample under TREE (a CMakeLists.txt whose add_executable builds a .asc, a README whose shell
block is the recipe), keeps those for this chip class (dav-2201) outside 04_advanced_api (the others are
listed with the reason), builds each host program unchanged against mpnpu (its <<<>>> launches run on the
multi-process device, its device memory is shared GM), runs in a folder of its own the README's data
step, the program and the verify step, and reports per sample: built, ran, verified, what it lacks
(:mod:`mpnpu.tools.samples`). Exit status: 0 when every sample in scope passed its own verify script, 1
when not, 2 for a usage error.
"""

from __future__ import annotations

import argparse

from mpnpu.cli.command import Command
from mpnpu.cli.common import LazyBar, exit_status
from mpnpu.cli.options import DEVICE
from mpnpu.cli.outputs import write_reports
from mpnpu.errors import UsageError
from mpnpu.tools.samples.suite import SamplesOptions, SamplesRun, format_table, run_samples


def run_sample_tree(args: argparse.Namespace, op: None) -> int:
    if getattr(args, "poison", None) is not None:
        raise UsageError("--poison: not supported by mpnpu samples (a sample's program allocates its GM itself)")
    options = SamplesOptions(only=tuple(args.samples or ()), jobs=args.j, build_dir=args.build_dir,
                             racecheck=args.racecheck, step_timeout_s=args.step_timeout,
                             launch_timeout_s=args.timeout or 300.0, pipes=args.pipes or "kernel",
                             pipe_latency_us=args.pipe_latency_us,
                             no_auto_sync=bool(getattr(args, "no_auto_sync", False)),
                             stall_grace_s=getattr(args, "stall_grace", None))
    with LazyBar("samples", args.quiet) as bar:
        result: SamplesRun = run_samples(args.tree, options, lambda r: bar.advance(f"{r.sample.name}: {r.status}"),
                                         bar.started)
    text = format_table(result)
    print(next(line for line in text.splitlines() if " samples found, " in line) if args.quiet else text)
    write_reports(args, {"json": result})
    return exit_status(None, result.ok)


COMMAND = Command(
    name="samples",
    help="a dev kit's kernel samples, unchanged, built and run on mpnpu with their own data and verify scripts",
    description="Find every sample under TREE (a folder with a CMakeLists.txt whose add_executable builds a .asc "
                "holding kernel and host main, a scripts/ folder and a README whose shell block is the recipe), "
                "keep those for this chip class (CMAKE_ASC_ARCHITECTURES dav-2201) outside 04_advanced_api, build "
                "each host program unchanged against mpnpu (each kernel<<<blocks, ...>>>(args) launch runs on the "
                "multi-process device, aclrtMalloc gives GM the cores share, reports name the sample's own lines), "
                "then run in a folder of its own the README's data step, the program and the verify step, and "
                "report per sample: built, ran, passed its own verify script, and what it lacks (missing names "
                "and headers at the sample's file:line). A launch without SetKernelMode runs as the kernel type "
                "the chip would launch it as.",
    epilog="Examples: mpnpu samples ~/src/asc-devkit/examples/01_simd_cpp_api -j 2 --json samples.json;  "
           "mpnpu samples ~/src/asc-devkit/examples --samples brcb,cast --racecheck",
    options=("tree", "samples", "j", "build_dir", "step_timeout", "racecheck", *DEVICE, "json", "quiet"),
    run=run_sample_tree,
)
