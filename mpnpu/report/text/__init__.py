"""Plain-text reports, as the commands print them: one module per subject, one dispatcher.

- :mod:`.batch` — a batch (variants, failing case-runs, Wilson intervals, verdict);
- :mod:`.investigate` — a diagnosis chain's table, plan and verdict;
- :mod:`.stress` — a stress sweep's table and details;
- :mod:`.directed` — race-directed reproduction, the sync audit and its repairs;
- :mod:`.operators` — the registered operators (``--list-ops``);
- :mod:`.scale` — where shards ran;
- :mod:`.soak` — soaks of the fixed kernel and of the watchdog;
- :mod:`.run` — one C++ kernel's runs (``mpnpu run``).

:func:`format_text` dispatches on the result's type; each kind of result has one row in
``_RENDERERS`` below. :class:`TextReport` is the :class:`~mpnpu.report.Reporter` of the format.
"""

from __future__ import annotations

import functools
from typing import IO, Any, Callable

from mpnpu.ascendc.run_result import RunResult
from mpnpu.directed.audit import AuditResult
from mpnpu.directed.confirm import ConfirmedBatch, ConfirmResult, DirectedRun
from mpnpu.errors import InvalidTypeError
from mpnpu.harness.chain import Investigation
from mpnpu.harness.handshakes import WatchdogSoak
from mpnpu.harness.runner import BatchResult
from mpnpu.harness.soak import FixedSoak, StressSoak
from mpnpu.harness.stress.plan import SweepResult
from mpnpu.report.text import batch, directed, investigate, run, soak, stress

__all__ = ["TextReport", "format_text"]


@functools.singledispatch
def format_text(result: Any, **context: Any) -> str:
    """The text report of ``result``; ``context``: what a subject's report shows besides the result
    (a sweep: ``command``, ``shards`` lines; a confirmation: ``heading``; a batch, confirmed or not:
    ``verbose``, the last frames of a core's traceback for the first launch error of each variant)."""
    raise InvalidTypeError(f"no text report for a {type(result).__name__}")


# Each kind of result and how its text is made (``context`` as for format_text).
_RENDERERS: tuple[tuple[type, Callable[..., str]], ...] = (
    (BatchResult, lambda r, **c: batch.format_batch(r, verbose=c.get("verbose", False))),
    (Investigation, lambda r, **c: investigate.format_investigation(r)),
    (SweepResult, lambda r, **c: stress.format_sweep(r, c.get("command", ""), c.get("shards", ()),
                                                     verbose=c.get("verbose", False))),
    (ConfirmResult, lambda r, **c: directed.format_confirm(r, c.get("heading", ""))),
    (ConfirmedBatch, lambda r, **c: directed.format_confirmed_batch(r, verbose=c.get("verbose", False))),
    (AuditResult, lambda r, **c: directed.format_audit(r)),
    (DirectedRun, lambda r, **c: directed.format_run(r)),
    (FixedSoak, lambda r, **c: soak.format_fixed_soak(r)),
    (StressSoak, lambda r, **c: soak.format_stress_soak(r)),
    (WatchdogSoak, lambda r, **c: soak.format_watchdog_soak(r)),
    (RunResult, lambda r, **c: run.format_run(r)),
)
for _kind, _render in _RENDERERS:
    format_text.register(_kind, _render)


class TextReport:
    """The text of a result, as the command prints it (``context`` as for :func:`format_text`)."""

    binary = False

    def __init__(self, **context: Any) -> None:
        self.context = context

    def write(self, result: Any, out: IO[str]) -> None:
        out.write(format_text(result, **self.context) + "\n")
