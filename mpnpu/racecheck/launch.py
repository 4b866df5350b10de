"""Racecheck real launches: trace a launch on a device, analyse it, return its hazards.

The analysis (:mod:`.detect`) works on traces alone; these helpers run the launch that makes one::

    hazards = check_launch_with(device, LaunchOptions(drop_syncs={"S1"}), "pkg.mod:kernel", *args)
    chk = check_case(op, device, case, drop_syncs={"S1"})   # an operator's case, judged too
    chk.hazards, chk.verdict.passed

Happens-before does not depend on how the OS interleaved the cores, so a launch that drops a
sync point reports the same hazards whether or not its outputs came out right.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

from mpnpu.racecheck.detect import analyze
from mpnpu.racecheck.hazards import Hazard
from mpnpu.runtime.config import PLAIN_LAUNCH, LaunchOptions

if TYPE_CHECKING:
    from mpnpu.runtime.device import Device


def check_launch(device: Device, kernel: str | Callable[..., Any], /, *args: Any, **kwargs: Any) -> list[Hazard]:
    """Launch ``kernel(*args, **kwargs)`` on ``device`` traced and return its hazards.

    Same arguments as :meth:`mpnpu.runtime.device.Device.launch`. A launch that fails raises its
    :class:`mpnpu.errors.LaunchError` as usual: a failed launch has no trace.
    """
    return check_launch_with(device, PLAIN_LAUNCH, kernel, *args, **kwargs)


def check_launch_with(device: Device, options: LaunchOptions, kernel: str | Callable[..., Any], /, *args: Any,
                      **kwargs: Any) -> list[Hazard]:
    """:func:`check_launch` with :class:`~mpnpu.runtime.config.LaunchOptions` (e.g. the sync points
    to drop); the launch is traced whatever ``options.trace`` says."""
    traced = options if options.trace else dataclasses.replace(options, trace=True)
    result = device.launch_with(traced, kernel, *args, **kwargs)
    assert result.trace is not None  # a traced launch always has one
    return analyze(result.trace)


@dataclass
class CaseCheck:
    """One traced run of an operator's case: its outputs, how they were judged, its hazards."""

    outputs: dict[str, Any]
    verdict: Any  # mpnpu.operators.protocol.Verdict
    hazards: list[Hazard]
    launch: Any  # mpnpu.runtime.device.LaunchResult, with .trace

    @property
    def passed(self) -> bool:
        return bool(self.verdict.passed)


def check_case(op: Any, device: Device, case: Any, *, drop_syncs: Iterable[str] = (), probe: str = "",
               prepared: Any = None) -> CaseCheck:
    """Run ``case`` of operator ``op`` traced, judge it, analyse it (``op``: an
    :class:`mpnpu.operators.protocol.Operator`, a layer above this one, hence untyped here).

    ``prepared`` is ``op.prepare(case)`` when the caller already has it (it holds the golden).
    """
    outputs, launch = op.run(device, case, drop_syncs=frozenset(drop_syncs), probe=probe, trace=True)
    if prepared is None:
        prepared = op.prepare(case)
    verdict = op.judge(case, prepared, outputs, probe)
    return CaseCheck(outputs, verdict, analyze(launch.trace), launch)
