"""What several benchmark scripts under scripts/ share (imported by them as ``benchlib``)."""

from __future__ import annotations

import time

from mpnpu import racecheck


def time_hazard_analysis() -> list[float]:
    """Make every ``mpnpu.racecheck.analyze`` (racecheck's analysis of one traced launch, as the
    batch runner calls it) add the time it took to ``spent[0]`` of the returned list, so that a
    bench can separate tracing from analysis. Reset ``spent[0] = 0.0`` before a timed stretch.
    Lasts for the process (benchmarks only); the runner looks the function up per batch."""
    spent = [0.0]
    analyze = racecheck.analyze

    def timed_analyze(trace):
        t0 = time.perf_counter()
        try:
            return analyze(trace)
        finally:
            spent[0] += time.perf_counter() - t0

    racecheck.analyze = timed_analyze
    return spent
