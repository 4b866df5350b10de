"""Racecheck real launches: trace a launch on a device, analyse it, return its hazards.

The analysis (:mod:`.detect`) works on traces alone; these helpers run the launch that makes one::

    hazards = check_launch(device, "pkg.mod:kernel", *args, drop_syncs={"S1"})
    chk = check_case(op, device, case, drop_syncs={"S1"})   # an operator's case, judged too
    chk.hazards, chk.verdict.passed

Happens-before does not depend on how the OS interleaved the cores, so a launch that drops a
sync point reports the same hazards whether or not its outputs came out right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .detect import analyze
from .report import Hazard


def check_launch(device, kernel: str | Callable, *args: Any, drop_syncs: Iterable[str] = (),
                 timeout: float | None = None, **kwargs: Any) -> list[Hazard]:
    """Launch ``kernel(*args, **kwargs)`` on ``device`` traced and return its GM hazards.

    Same arguments as :meth:`mpnpu.runtime.device.Device.launch` (``trace`` is implied). A launch that
    fails raises its :class:`mpnpu.errors.LaunchError` as usual: a failed launch has no trace.
    """
    result = device.launch(kernel, *args, trace=True, drop_syncs=tuple(drop_syncs), timeout=timeout, **kwargs)
    return analyze(result.trace)


@dataclass
class CaseCheck:
    """One traced run of an operator's case: its outputs, how they were judged, its hazards."""

    outputs: dict[str, Any]
    verdict: Any  # mpnpu.harness.operator.Verdict
    hazards: list[Hazard]
    launch: Any  # mpnpu.runtime.device.LaunchResult, with .trace

    @property
    def passed(self) -> bool:
        return bool(self.verdict.passed)


def check_case(op, device, case: Any, *, drop_syncs: Iterable[str] = (), probe: str = "",
               prepared: Any = None) -> CaseCheck:
    """Run ``case`` of operator ``op`` (see :class:`mpnpu.harness.operator.Operator`) traced, judge it, analyse it.

    ``prepared`` is ``op.prepare(case)`` when the caller already has it (it holds the golden).
    """
    outputs, launch = op.run(device, case, drop_syncs=frozenset(drop_syncs), probe=probe, trace=True)
    if prepared is None:
        prepared = op.prepare(case)
    verdict = op.judge(case, prepared, outputs, probe)
    return CaseCheck(outputs, verdict, analyze(launch.trace), launch)
