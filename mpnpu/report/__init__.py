"""Presentation: every result of the library, in every format the tools write. Used by the ``mpnpu``
command and by the pytest plugin alike; the library itself never prints (its results are data).

::

    library result ─────────────► Reporter.write(result, out) ─────► write_report(path, reporter, result)
    (BatchResult, Investigation,   one class per format:               the one function that owns a report
     SweepResult, ConfirmResult,   text/ (TextReport), markdown,       file: a temporary file beside it,
     AuditResult, SoakResult,      json, junit, chrome_trace,          then one rename, so a reader never
     launch timelines)             picture; hazards (msSanitizer text) sees half a report

A format is a :class:`Reporter`: whether it writes bytes, and ``write(result, out)``. A reporter that
takes several kinds of result dispatches on the result's type (``functools.singledispatch``): adding
a kind of result to a format is one registered function in that format's module. Adding a format is
one module here (a Reporter) plus its option in :data:`mpnpu.cli.options.OPTIONS`, whose ``report``
names the reporter (docs/where-things-live.md).
"""

from __future__ import annotations

import contextlib
import os
from typing import IO, Any, Protocol, runtime_checkable

__all__ = ["Reporter", "write_report"]


@runtime_checkable
class Reporter(Protocol):
    """One output format."""

    #: the file is written in binary mode (pictures), else as UTF-8 text
    binary: bool

    def write(self, result: Any, out: IO[Any]) -> None:
        """Write ``result`` to ``out`` (a text or binary file object, as :attr:`binary` says)."""


def write_report(path: str, reporter: Reporter, result: Any) -> int:
    """Write ``result`` to ``path`` in ``reporter``'s format, atomically; return the file's size.

    Written to ``PATH.tmp`` first (what :func:`mpnpu.cli.common.writable_path` checks can be
    created before a long run starts) and renamed over ``path`` once complete.
    """
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "wb") if reporter.binary else open(tmp, "w", encoding="utf-8") as out:
            reporter.write(result, out)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    return os.path.getsize(path)
