"""Turning what the cores of a failed launch reported into one :class:`~mpnpu.errors.LaunchError`.

The root cause goes first: a core that died, else a core that raised for its own reasons; cores
whose waits timed out because of it (``ErrorReport.secondary``) are only counted after it.
"""

from __future__ import annotations

import pickle
from multiprocessing.process import BaseProcess
from typing import Callable, NamedTuple, Sequence

from mpnpu.errors import CoreDiedError, KernelError, LaunchError, RemoteTraceback

from . import code_lines, memcheck
from .procutil import describe_exit
from .protocol import ErrorReport
from .topology import Topology


class CoreFailure(NamedTuple):
    """One core's part in a failed launch, in the order the parent learnt of it."""

    core_id: int
    error: ErrorReport | None  # None: the core process died without reporting


def describe_failure(topology: Topology, procs: Sequence[BaseProcess], ref: str,
                     failures: Sequence[CoreFailure], last_words: Callable[[int], str] | None = None) -> LaunchError:
    """The error to raise for a launch of kernel ``ref`` in which ``failures`` happened."""
    primary = next((f for f in failures if f.error is None), None) or next(
        (f for f in failures if f.error is not None and not f.error.secondary), failures[0])
    core_id = primary.core_id
    label = topology.core(core_id).label
    others = [topology.core(f.core_id).label for f in failures if f.core_id != core_id]
    also = f" (and {len(others)} other core{'s' if len(others) > 1 else ''} failed after it)" if others else ""
    report = primary.error
    if report is None:
        proc = procs[core_id]
        proc.join(0.5)
        said = code_lines.explain(last_words(core_id)) if last_words is not None else ""
        at = f" {said}" if said else ""
        return CoreDiedError(
            f"{label} died during {ref} ({describe_exit(proc.exitcode)}){at}{also}; the core pool was rebuilt",
            core=label, core_id=core_id, exitcode=proc.exitcode, others=others, last_words=said,
        )
    # The kernel's line, unless the message names it already (a memcheck report, a C++ fault).
    at = memcheck.at(report.site, report.function) if report.site and report.site not in report.message else ""
    err = KernelError(
        f"{label} raised {report.type}: {report.message}{at}{also}",
        core=label, core_id=core_id, error_type=report.type, error_message=report.message,
        remote_traceback=report.traceback, others=others, site=report.site, function=report.function,
        traceback_tail=report.tail,
    )
    cause: BaseException = RemoteTraceback.of(report.traceback)
    if report.pickled is not None:
        try:
            original = pickle.loads(report.pickled)
            original.__cause__ = cause
            cause = original
        except Exception:
            pass
    err.__cause__ = cause
    return err
