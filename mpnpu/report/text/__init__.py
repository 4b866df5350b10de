"""Plain-text reports, as the commands print them: one module per subject, one dispatcher.

- :mod:`.batch` — a batch (variants, failing case-runs, Wilson intervals, verdict);
- :mod:`.investigate` — a diagnosis chain's table, plan and verdict;
- :mod:`.stress` — a stress sweep's table and details;
- :mod:`.directed` — race-directed reproduction, the sync audit and its repairs;
- :mod:`.operators` — the registered operators (``--list-ops``);
- :mod:`.scale` — where shards ran;
- :mod:`.soak` — soaks of the fixed kernel and of the watchdog.

:func:`format_text` dispatches on the result's type; a subject module registers its result types
here, below. :class:`TextReport` is the :class:`~mpnpu.report.Reporter` of the format.
"""

from __future__ import annotations

import functools
from typing import IO, Any

from mpnpu.directed.audit import AuditResult
from mpnpu.directed.confirm import ConfirmResult, DirectedRun
from mpnpu.errors import InvalidTypeError
from mpnpu.harness.chain import Investigation
from mpnpu.harness.handshakes import WatchdogSoak
from mpnpu.harness.runner import BatchResult
from mpnpu.harness.soak import FixedSoak, StressSoak
from mpnpu.harness.stress.plan import SweepResult
from mpnpu.report.text import batch, directed, investigate, soak, stress

__all__ = ["TextReport", "format_text"]


@functools.singledispatch
def format_text(result: Any, **context: Any) -> str:
    """The text report of ``result``; ``context``: what a subject's report shows besides the result
    (a sweep: ``command``, ``shards`` lines; a confirmation: ``heading``)."""
    raise InvalidTypeError(f"no text report for a {type(result).__name__}")


@format_text.register
def _batch(result: BatchResult, **context: Any) -> str:
    return batch.format_batch(result)


@format_text.register
def _investigation(result: Investigation, **context: Any) -> str:
    return investigate.format_investigation(result)


@format_text.register
def _sweep(result: SweepResult, **context: Any) -> str:
    return stress.format_sweep(result, context.get("command", ""), context.get("shards", ()))


@format_text.register
def _confirm(result: ConfirmResult, **context: Any) -> str:
    return directed.format_confirm(result, context.get("heading", ""))


@format_text.register
def _audit(result: AuditResult, **context: Any) -> str:
    return directed.format_audit(result)


@format_text.register
def _run(result: DirectedRun, **context: Any) -> str:
    return directed.format_run(result)


@format_text.register
def _fixed_soak(result: FixedSoak, **context: Any) -> str:
    return soak.format_fixed_soak(result)


@format_text.register
def _stress_soak(result: StressSoak, **context: Any) -> str:
    return soak.format_stress_soak(result)


@format_text.register
def _watchdog_soak(result: WatchdogSoak, **context: Any) -> str:
    return soak.format_watchdog_soak(result)


class TextReport:
    """The text of a result, as the command prints it (``context`` as for :func:`format_text`)."""

    binary = False

    def __init__(self, **context: Any) -> None:
        self.context = context

    def write(self, result: Any, out: IO[str]) -> None:
        out.write(format_text(result, **self.context) + "\n")
