"""What several benchmark scripts under scripts/ share (imported by them as ``benchlib``)."""

from __future__ import annotations

import time

import psutil

from mpnpu.racecheck.reuse import AnalysisCache
from mpnpu.racecheck.worker import AnalysisProcess


def time_hazard_analysis() -> list[float]:
    """Make every ``AnalysisCache.analyze`` (racecheck's analysis of one traced launch, as the batch
    runner calls it: in full, or reused from an identical launch) add the time it took to
    ``spent[0]`` of the returned list, so that a bench can separate tracing from analysis; where a
    batch analyses in a child process (mpnpu.racecheck.worker), the child's CPU time is added when
    it is ended. Reset ``spent[0] = 0.0`` before a timed stretch. Lasts for the process (benchmarks
    only)."""
    spent = [0.0]
    analyze = AnalysisCache.analyze
    close = AnalysisProcess.close

    def timed_close(self: AnalysisProcess) -> None:
        try:
            times = psutil.Process(self._proc.pid).cpu_times()
            spent[0] += times.user + times.system
        except (psutil.Error, TypeError):
            pass  # (a child already gone: its time is not known)
        close(self)

    AnalysisProcess.close = timed_close  # type: ignore[method-assign]

    def timed_analyze(self, trace):
        t0 = time.perf_counter()
        try:
            return analyze(self, trace)
        finally:
            spent[0] += time.perf_counter() - t0

    AnalysisCache.analyze = timed_analyze
    return spent
