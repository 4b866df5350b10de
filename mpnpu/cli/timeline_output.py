"""The command-line side of timelines and JUnit reports: options, checks before a run, writing after.

Shared by ``python -m mpnpu.batch`` (timelines, JUnit), ``python -m mpnpu.investigate`` (timelines
of every step of a diagnosis chain) and ``python -m mpnpu.stress`` (JUnit, the sweep plot). Everything that can be wrong with these options (a directory that does not exist, a
picture without matplotlib, a case the run does not have) is reported before the run starts.
"""

from __future__ import annotations

import argparse
import os
from typing import Sequence

from mpnpu.cli.common import non_negative_int, writable_path
from mpnpu.errors import UsageError
from mpnpu.harness.timeline import TimelineSelector, build_timeline


def picture_path(text: str) -> str:
    """An argparse type: a writable .png or .svg path."""
    if os.path.splitext(text)[1].lower() not in (".png", ".svg"):
        raise argparse.ArgumentTypeError(f"{text}: a picture must end in .png or .svg")
    return writable_path(text)


BATCH_LAUNCHES = "the first failing case-run of each variant and, for contrast, a passing run of the same case"


def add_timeline_arguments(p: argparse.ArgumentParser, launches: str = BATCH_LAUNCHES, per: str = "variant") -> None:
    """``--timeline``, ``--timeline-case``, ``--timeline-png``; ``launches`` says which are kept by
    default, ``per`` what they are kept for ("variant", "step")."""
    g = p.add_argument_group("timelines (one clock for every core: who was where when the race happened)")
    g.add_argument("--timeline", type=writable_path, default=None, metavar="PATH",
                   help="write launch timelines as Chrome Trace Event JSON (Perfetto UI, chrome://tracing, "
                        f"MindStudio Insight): by default {launches}")
    g.add_argument("--timeline-case", type=non_negative_int, default=None, metavar="N",
                   help=f"draw case N instead: a failing and a passing run of it per {per}, as far as the "
                        "run has them")
    g.add_argument("--timeline-png", type=picture_path, default=None, metavar="PATH",
                   help="draw the same launches as a picture, .png or .svg (needs pip install 'mpnpu[plot]')")


def add_junit_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--junit", type=writable_path, default=None, metavar="PATH",
                   help="also write the result as JUnit XML for CI (expected failures reported as xfail)")


def timeline_selector(args: argparse.Namespace, names: Sequence[str], cases: int,
                      grouped: bool = False, unit: str = "variant") -> TimelineSelector | None:
    """The selector for a run with these options, or None; raises UsageError before the run.

    ``names``: what the launches are kept under (a batch's variants, a diagnosis chain's steps);
    ``cases``: how many cases every one of them runs at least (``--timeline-case`` must be one);
    ``grouped``, ``unit``: see :class:`TimelineSelector`.
    """
    wanted = bool(args.timeline or args.timeline_png)
    if args.timeline_case is not None:
        if not wanted:
            raise UsageError("--timeline-case needs --timeline PATH or --timeline-png PATH")
        if args.timeline_case >= cases:
            raise UsageError(f"--timeline-case {args.timeline_case} is not a case of this run (cases 0..{cases - 1})")
    if args.timeline_png:
        from mpnpu.report.picture import require_matplotlib

        require_matplotlib("--timeline-png")
    if not wanted:
        return None
    return TimelineSelector(list(names), case=args.timeline_case, grouped=grouped, unit=unit)


def write_timelines(args: argparse.Namespace, selector: TimelineSelector) -> list[str]:
    """Build the kept launches' timelines, write the files asked for, and say what was written."""
    runs = selector.kept()
    if not runs:
        return ["timeline: no launch was kept (the run stopped before its first case-run finished)"]
    timelines = [build_timeline(r.trace, label=r.label, role=r.role, passed=r.passed, summary=r.summary)
                 for r in runs]
    what = "; ".join(f"{r.label} [{'passed' if r.passed else 'FAILED'}]" for r in runs)
    lines = []
    if args.timeline:
        from mpnpu.report.chrome_trace import write_chrome_trace

        size = write_chrome_trace(args.timeline, timelines)
        lines.append(f"timeline: {args.timeline} ({size / 1024:.0f} KB, Chrome trace JSON): {what}")
    if args.timeline_png:
        from mpnpu.report.picture import render_timelines

        render_timelines(args.timeline_png, timelines)
        size = os.path.getsize(args.timeline_png)
        lines.append(f"timeline picture: {args.timeline_png} ({size / 1024:.0f} KB)")
    return lines
