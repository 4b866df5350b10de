"""The files a command writes: each report option of the table (``--json``, ``--junit``,
``--markdown``, ``--timeline``, ``--timeline-png``, ``--plot``) names its reporter, and
:func:`write_reports` writes every one the command line asked for, through the one atomic writer
(:func:`mpnpu.report.write_report`).

Everything that can be wrong with these options (a directory that does not exist, a picture without
matplotlib, a timeline case the run does not have) is reported before the run starts
(:func:`check_reports`, :func:`timeline_selector`).
"""

from __future__ import annotations

import argparse
import importlib
import os
from typing import Any, Mapping, Sequence

from mpnpu.cli.options import OPTIONS
from mpnpu.errors import UsageError
from mpnpu.harness.timeline import TimelineSelector, build_timeline
from mpnpu.report import Reporter, write_report

#: report options whose reporter needs matplotlib
_PICTURES = ("timeline_png", "plot")


def reporter_for(dest: str, path: str) -> Reporter:
    """The reporter of report option ``dest`` for ``path`` (pictures take their format from it)."""
    module, _, name = OPTIONS[dest].report.partition(":")
    cls = getattr(importlib.import_module(module), name)
    if dest in _PICTURES:
        from mpnpu.report.picture import picture_format

        return cls(picture_format(path))  # type: ignore[no-any-return]
    return cls()  # type: ignore[no-any-return]


def check_reports(args: argparse.Namespace) -> None:
    """Before the run: pictures need matplotlib (one line saying what to install)."""
    for dest in _PICTURES:
        if getattr(args, dest, None):
            from mpnpu.report.picture import require_matplotlib

            require_matplotlib(OPTIONS[dest].flag)


def write_reports(args: argparse.Namespace, subjects: Mapping[str, Any]) -> dict[str, int]:
    """Write the file of every report option set on the command line whose subject is given
    (``subjects``: option dest -> what to write, e.g. ``{"json": data, "junit": result}``; None:
    nothing to write, as a sweep stopped before its first configuration has nothing to plot).
    Return the bytes written per option."""
    written = {}
    for dest, subject in subjects.items():
        path = getattr(args, dest, None)
        if path and subject is not None:
            written[dest] = write_report(path, reporter_for(dest, path), subject)
    return written


# -- timelines ---------------------------------------------------------------------------------------


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
    check_reports(args)
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
    written = write_reports(args, {"timeline": timelines, "timeline_png": timelines})
    lines = []
    if "timeline" in written:
        lines.append(f"timeline: {args.timeline} ({written['timeline'] / 1024:.0f} KB, Chrome trace JSON): {what}")
    if "timeline_png" in written:
        size = os.path.getsize(args.timeline_png)
        lines.append(f"timeline picture: {args.timeline_png} ({size / 1024:.0f} KB)")
    return lines
