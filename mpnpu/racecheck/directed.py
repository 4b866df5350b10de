"""From hazards to hold plans: the concrete access pairs behind each hazard of a traced launch.

A :class:`~mpnpu.racecheck.hazards.Hazard` merges many conflicting access pairs (one per core pair
and repetition). Race-directed reproduction needs one concrete pair at a time, named so that a
later, untraced launch of the same case can find the same two accesses again: by core, kernel
source site, and *occurrence* — how many accesses that core had made at that site before (the
device API counts them the same way when a launch carries a :class:`~mpnpu.runtime.hold.HoldPlan`).
A kernel whose sequence of GM accesses does not depend on racy data (the usual case: loops over
tiles and rows) makes the same accesses in the same order on every launch of a case, so the
names carry over.

Pure functions on traces; nothing here runs a launch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mpnpu.racecheck.hazards import Hazard
from mpnpu.racecheck.pairs import hazard_pairs
from mpnpu.runtime.hold import DEFAULT_BOUND_S, DEFAULT_QUIET_S, HoldPlan
from mpnpu.runtime.trace import Access, LaunchTrace

HazardKey = tuple[str, str, str, str, str, str]


@dataclass(frozen=True)
class AccessRef:
    """One GM access of a launch, by (core, site, occurrence of that site on that core)."""

    core: int
    site: str
    occurrence: int
    stage: str
    access: str  # "R", "W" or "A"


@dataclass(frozen=True)
class PairRef:
    """A conflicting access pair, ``first`` in the order the kernel intends (see racecheck)."""

    first: AccessRef
    second: AccessRef

    def plan(self, bound_s: float = DEFAULT_BOUND_S, quiet_s: float = DEFAULT_QUIET_S) -> HoldPlan:
        """Hold the first access's core until the second access has happened (the reversal)."""
        f, s = self.first, self.second
        return HoldPlan(f.core, f.site, f.occurrence, s.core, s.site, s.occurrence, bound_s, quiet_s)


def occurrences(events: Sequence[object]) -> list[int]:
    """For each event of one core: its occurrence number among Access events at its site (-1 for
    events that are not accesses)."""
    seen: dict[str, int] = {}
    out = []
    for ev in events:
        if isinstance(ev, Access):
            n = seen.get(ev.site, 0)
            out.append(n)
            seen[ev.site] = n + 1
        else:
            out.append(-1)
    return out


def hold_pairs(trace: LaunchTrace) -> tuple[list[Hazard], dict[HazardKey, list[PairRef]]]:
    """The hazards of a traced launch and, per hazard key, every concrete access pair behind it,
    named for holds (sorted by first core and occurrence, then second; each pair once)."""
    groups = hazard_pairs(trace)
    occ = [occurrences(evs) for evs in trace.events]

    def ref(core: int, pos: int) -> AccessRef:
        ev = trace.events[core][pos]
        return AccessRef(core, ev.site, occ[core][pos], ev.stage, ev.kind)

    out: dict[HazardKey, list[PairRef]] = {}
    for g in groups:
        pairs = {PairRef(ref(*p.first), ref(*p.second)) for p in g.pairs}
        out[g.hazard.key] = sorted(pairs, key=lambda p: (p.first.core, p.first.occurrence, p.second.core,
                                                         p.second.occurrence))
    return [g.hazard for g in groups], out


def choose_pair(pairs: Sequence[PairRef], rng: np.random.Generator) -> PairRef:
    """RaceFuzzer's random choice among a hazard's pairs."""
    return pairs[int(rng.integers(len(pairs)))]
