"""What several benchmark scripts under scripts/ share (imported by them as ``benchlib``)."""

from __future__ import annotations

import time

from mpnpu.racecheck import HazardLog


def time_hazard_analysis() -> list[float]:
    """Make every ``HazardLog.add_trace`` (racecheck's analysis of one traced launch) add the time it
    took to ``spent[0]`` of the returned list, so that a bench can separate tracing from analysis.
    Reset ``spent[0] = 0.0`` before a timed stretch. Lasts for the process (benchmarks only)."""
    spent = [0.0]
    add_trace = HazardLog.add_trace

    def timed_add_trace(self, trace):
        t0 = time.perf_counter()
        try:
            return add_trace(self, trace)
        finally:
            spent[0] += time.perf_counter() - t0

    HazardLog.add_trace = timed_add_trace
    return spent
