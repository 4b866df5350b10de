"""mpnpu run SOURCE[:ENTRY] ARG... — one Ascend C kernel on .bin files, the samples' layout.

The kernel's inputs come from ``.bin`` files, its outputs go to ``.bin`` files after the last repeat,
and each repeat is compared with a golden ``.bin`` (:mod:`mpnpu.tools.run`, which does the work).
Exit status: 0 when every repeat matched its golden (and, with --racecheck, no hazard was found;
with --initcheck / --synccheck, no defect),
1 when one did not, 2 for a usage error (a bad argument word, a kernel that does not compile: its
file:line), 3 when the device failed (a core faulted, deadlocked or timed out), 130/143 when
interrupted.
"""

from __future__ import annotations

import argparse
import os

from mpnpu.cli.command import Command, Use
from mpnpu.cli.common import exit_status, progress_bar
from mpnpu.cli.options import DEVICE, launch_width, runtime_options
from mpnpu.cli.outputs import check_reports, write_reports
from mpnpu.errors import UsageError
from mpnpu.report.text import format_text
from mpnpu.report.text.run import verdict_line
from mpnpu.tools.run import RunArg, format_sync_list, parse_arg, run


def goldens(words: list[str], args: list[RunArg]) -> dict[int, str]:
    """--golden words -> {argument position (0-based): path}."""
    outs = [i for i, a in enumerate(args) if a.kind in ("out", "io")]
    found: dict[int, str] = {}
    for word in words:
        head, sep, rest = word.partition("=")
        if sep and head.isdigit():
            index, path = int(head) - 1, rest
        elif len(outs) == 1:
            index, path = outs[0], word
        else:
            raise UsageError(f"--golden {word}: the kernel has {len(outs)} out:/io: arguments; name one, "
                             f"--golden N=PATH (N counts the arguments from 1)")
        if not os.path.isfile(path):
            raise UsageError(f"--golden {word}: no file {path}")
        found[index] = path
    return found


def defines(words: list[str]) -> dict[str, str]:
    """-D words (NAME or NAME=VALUE) -> {NAME: VALUE}."""
    out = {}
    for word in words:
        name, _, value = word.partition("=")
        if not name.isidentifier():
            raise UsageError(f"--define {word}: expected NAME or NAME=VALUE")
        out[name] = value or "1"
    return out


def run_kernel(args: argparse.Namespace, op: None) -> int:
    source, entry = args.source, ""
    if not os.path.isfile(source) and ":" in source:  # SOURCE:ENTRY
        source, _, entry = source.rpartition(":")
    if not os.path.isfile(source):
        raise UsageError(f"no kernel source {source}")
    if args.list_syncs:
        print(format_sync_list(source, args.include))
        return 0
    if args.confirm and not args.racecheck:
        raise UsageError("--confirm forces a hazard racecheck found: give --racecheck too")
    check_reports(args)  # (a picture needs matplotlib: said before the kernel is built)
    words = [parse_arg(w) for w in args.kernel_args]
    drop = list(args.drop_sync or ())  # (the setting's parser split the names)
    with progress_bar(args.repeat, "repeats", disable=args.quiet) as bar:
        result = run(source, entry or None, words, block_dim=args.block_dim, golden=goldens(args.golden, words),
                     repeat=args.repeat, rtol=args.rtol, atol=args.atol, kernel_type=args.kernel_type,
                     defines=defines(args.define), include_dirs=args.include, pre_includes=args.pre_include,
                     tiling_key=args.tiling_key,
                     drop_syncs=drop, racecheck=args.racecheck, options=runtime_options(args),
                     progress=bar.update, timeline=args.timeline, confirm=args.confirm,
                     initcheck=bool(args.initcheck), synccheck=bool(args.synccheck),
                     timeline_png=args.timeline_png)
    print(verdict_line(result) if args.quiet else format_text(result))
    write_reports(args, {"json": result})  # (--timeline and --timeline-png are written by run: they need traces)
    return exit_status(result.interrupt, result.passed)


COMMAND = Command(
    name="run",
    help="one Ascend C kernel on .bin inputs, repeated, each repeat against a golden .bin",
    description="Build an Ascend C kernel (C++17, mpnpu's headers) and run it on the device: its cube and vector "
                "cores are separate processes over shared GM, as for every mpnpu kernel. The arguments are given "
                "in the order of the kernel's parameters; outputs are written after the last repeat; each repeat "
                "is compared with its --golden and with the first repeat. A sample's source may hold its host "
                "program and the kernel<<<...>>>(...) launch: only that statement is replaced (line numbers "
                "kept). --block-dim counts the kernel's blocks: vector cores of a vector-only kernel, AI cores "
                "of a mix kernel. Exit 0 when every repeat matched (and --racecheck found no hazard, --initcheck "
                "and --synccheck no defect).",
    epilog="Examples: mpnpu run add_custom.asc --block-dim 8 in:input/input_x.bin:float16 "
           "in:input/input_y.bin:float16 out:output/output_z.bin:float16:16384 --golden output/golden.bin "
           "--repeat 20;  mpnpu run add.cpp:add_custom ... --racecheck --drop-sync add.cpp:45",
    options=("source", "kernel_args",
             Use("block_dim", 1, type=launch_width,
                 help="the kernel's block count, as its <<<>>> launch gives it: vector cores of a "
                      "vector-only kernel, AI cores (1 cube + 2 vector cores each) of a mix kernel, cube cores of a "
                      "cube-only one (default {default}); a launch wider than the device's cores runs in waves, as "
                      "on the chip, up to 4 of them"),
             Use("repeat", 1, help="how many times the kernel runs, each run checked against --golden and against "
                                   "the first run (default {default})"),
             "golden", "rtol", "atol", "define", "include", "pre_include", "tiling_key", "kernel_type",
             Use("drop_sync", None, help="sync call sites to skip, comma-separated FILE:LINE (the file by any path "
                                         "suffix: add.cpp:45); a line that holds no sync call is an error naming "
                                         "the nearest ones"),
             "racecheck", "initcheck", "synccheck",
             Use("confirm", False, help="with --racecheck: after the repeats, one race-directed launch (up to a few "
                                        "tries) holds the first core of racecheck's first hazard between cores until "
                                        "the other has made its access, and the report says whether the outputs "
                                        "then differ from --golden (harmful) or not"),
             Use("list_syncs", False,
                 help="list the kernel's sync points (FILE:LINE of each sync call in its source, the headers beside "
                      "it and the files it includes, with the call and its function) as --drop-sync takes them, "
                      "and exit"),
             Use("pipes", None, help="how each core runs its data-movement pipes: 'kernel' (the default) and "
                                     "'async' asynchronously, as on the chip, for a C++ kernel that orders them "
                                     "with SetFlag/WaitFlag and queues; 'sync' in order (faster; intra-core races "
                                     "cannot show, racecheck still reports them)"),
             *(d for d in DEVICE if d != "pipes"), "json",
             Use("timeline", None, help="write a Chrome trace (Perfetto UI, chrome://tracing) of the first repeat "
                                        "that failed or differed from the first, beside one that passed, or of the "
                                        "first repeat when every one passed (the repeats are then traced)"),
             Use("timeline_png", None, help="draw the same repeats as a picture, .png or .svg: a lane per core, "
                                            "its stages, waits and GM accesses, a dropped sync point's mark and "
                                            "racecheck's first race circled (needs pip install 'mpnpu[plot]')"),
             "quiet", "verbose"),
    run=run_kernel,
)
