"""From hazards to hold plans: the concrete access pairs behind each hazard of a traced launch.

A :class:`~mpnpu.racecheck.hazards.Hazard` merges many conflicting access pairs (one per core pair
and repetition). Race-directed reproduction needs one concrete pair at a time, named so that a
later, untraced launch of the same case can find the same two accesses again: by core, kernel
source site, and *occurrence* — how many accesses that core had made at that site before (the
device API counts them the same way when a launch carries a :class:`~mpnpu.runtime.hold.HoldPlan`).
A kernel whose sequence of GM accesses does not depend on racy data (the usual case: loops over
tiles and rows) makes the same accesses in the same order on every launch of a case, so the
names carry over.

Pure functions on traces; nothing here runs a launch (:mod:`mpnpu.directed.confirm` does).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from mpnpu.errors import UsageError
from mpnpu.racecheck.hazards import Hazard, HazardLog
from mpnpu.racecheck.intracore import analyze_local
from mpnpu.racecheck.pairs import hazard_pairs
from mpnpu.runtime.hold import DEFAULT_BOUND_S, DEFAULT_QUIET_S, HoldPlan
from mpnpu.runtime.trace import Access, FlagSetEvent, FlagWaitEvent, LaunchTrace

#: Hazard.key: (kind, tensor, stage and site of each access), plus the two pipes inside a core
HazardKey = tuple[str, ...]


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
        assert isinstance(ev, Access)  # a pair is made of accesses
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


@dataclass
class Scout:
    """Hazards and their concrete pairs, per scouted case, for one set of dropped/inserted syncs:
    what race-directed runs choose their case and pair from (:func:`plan_for`). Built case by case
    from traced launches with :meth:`add`."""

    log: HazardLog = field(default_factory=HazardLog)
    pairs: dict[HazardKey, dict[int, list[PairRef]]] = field(default_factory=dict)  # key -> case -> pairs
    flags_used: set[tuple[int, int]] = field(default_factory=set)  # (mode, id) the kernel sets or waits on
    errors: list[str] = field(default_factory=list)  # scouted launches that failed (no trace)

    def add(self, index: int, trace: LaunchTrace) -> None:
        """Fold in the traced launch of case ``index``: its hazards between cores (with the pairs to
        hold) and inside cores (reported, never held), and the flags it used."""
        hazards, by_pair = hold_pairs(trace)
        self.log.add(hazards)
        self.log.add(analyze_local(trace))
        self.flags_used |= {(ev.mode, ev.flag_id) for evs in trace.events for ev in evs
                            if isinstance(ev, (FlagSetEvent, FlagWaitEvent))}
        for key, ps in by_pair.items():
            self.pairs.setdefault(key, {})[index] = ps

    @property
    def by_key(self) -> dict[HazardKey, Hazard]:
        return {h.key: h for h in self.log.hazards()}

    def candidates(self, key: HazardKey) -> list[int]:
        return sorted(self.pairs.get(key, {}))


# -- choosing directed runs: seeds, cases, pairs ---------------------------------------------------


def run_seed(seed: int, key: HazardKey, i: int) -> int:
    """The seed of directed run ``i`` of hazard ``key`` (stable across processes and machines)."""
    h = hashlib.blake2b(repr((seed, key, i)).encode(), digest_size=6).digest()
    return int.from_bytes(h, "big")


def plan_for(sc: Scout, key: HazardKey, seed: int) -> tuple[int, PairRef]:
    """RaceFuzzer's choice for one directed run: a case showing the hazard, then one of its pairs."""
    rng = np.random.default_rng(seed)
    cands = sc.candidates(key)
    if not cands:
        raise UsageError("no scouted case shows this hazard")
    index = cands[int(rng.integers(len(cands)))]
    return index, choose_pair(sc.pairs[key][index], rng)


def find_hazard(sc: Scout, seed: int, base_seed: int = 0, max_runs: int = 10_000) -> HazardKey:
    """The hazard whose directed run ``i`` (for some ``i`` < ``max_runs``) has this seed."""
    for key in sc.by_key:
        for i in range(max_runs):
            if run_seed(base_seed, key, i) == seed:
                return key
    raise UsageError(f"seed {seed} is not the seed of a directed run of any hazard the scouted cases show")
