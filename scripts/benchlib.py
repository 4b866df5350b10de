"""What several benchmark scripts under scripts/ share (imported by them as ``benchlib``)."""

from __future__ import annotations

import time

from mpnpu.racecheck.reuse import AnalysisCache


def time_hazard_analysis() -> list[float]:
    """Make every ``AnalysisCache.analyze`` (racecheck's analysis of one traced launch, as the batch
    runner calls it: in full, or reused from an identical launch) add the time it took to
    ``spent[0]`` of the returned list, so that a bench can separate tracing from analysis. Reset
    ``spent[0] = 0.0`` before a timed stretch. Lasts for the process (benchmarks only)."""
    spent = [0.0]
    analyze = AnalysisCache.analyze

    def timed_analyze(self, trace):
        t0 = time.perf_counter()
        try:
            return analyze(self, trace)
        finally:
            spent[0] += time.perf_counter() - t0

    AnalysisCache.analyze = timed_analyze
    return spent
