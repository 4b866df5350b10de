"""initcheck and synccheck over the launches of a batch: each launch's findings, with the analysis
of a launch whose trace is the same but for its times reused (findings do not depend on times).
"""

from __future__ import annotations

from typing import Hashable

from mpnpu.racecheck.findings import INITCHECK, SYNCCHECK, Finding
from mpnpu.racecheck.initcheck import initcheck
from mpnpu.racecheck.synccheck import synccheck
from mpnpu.runtime.trace import LaunchTrace, timing_free_key

#: analyses kept for reuse: a batch's launches repeat a few distinct traces, round after round
_CACHE_SIZE = 256


class TraceChecks:
    """The checks a batch runs on each traced launch (``initcheck``, ``synccheck``: which)."""

    def __init__(self, *, initcheck: bool = False, synccheck: bool = False) -> None:
        self.checks = tuple(c for c, on in ((INITCHECK, initcheck), (SYNCCHECK, synccheck)) if on)
        self._cache: dict[Hashable, list[Finding]] = {}

    def __bool__(self) -> bool:
        return bool(self.checks)

    def run(self, trace: LaunchTrace) -> list[Finding]:
        """The findings of the checks on one launch."""
        key = (tuple(timing_free_key(events) for events in trace.events), trace.unwritten_gm, trace.block_dim,
               trace.kernel_type)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        found: list[Finding] = []
        if INITCHECK in self.checks:
            found += initcheck(trace)
        if SYNCCHECK in self.checks:
            found += synccheck(trace)
        if len(self._cache) < _CACHE_SIZE:
            self._cache[key] = found
        return found
