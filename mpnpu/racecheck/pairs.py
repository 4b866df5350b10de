"""Which access events make up each hazard of a launch: for drawing races on a timeline.

A :class:`~mpnpu.racecheck.hazards.Hazard` merges every conflicting access pair with the same kind,
tensor and sites. A timeline needs the pairs themselves — which event of which core raced with
which — to draw an arrow from one access to the other; :func:`hazard_pairs` returns them, grouped
under their hazard, with the bytes each pair shares.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpnpu.racecheck.detect import find_conflicts, hazards_from
from mpnpu.racecheck.hazards import Hazard
from mpnpu.racecheck.intracore import local_pairs
from mpnpu.racecheck.polls import poll_view
from mpnpu.runtime.trace import READ, LaunchTrace


@dataclass(frozen=True)
class AccessPair:
    """Two racing accesses, as (core id, index in that core's event list), in intended order."""

    first: tuple[int, int]
    second: tuple[int, int]
    byte_lo: int  # hull of the bytes both touched, offsets in their segment (or local memory)
    byte_hi: int


@dataclass(frozen=True)
class HazardPairs:
    """A hazard of one launch and every access pair it merges."""

    hazard: Hazard
    pairs: tuple[AccessPair, ...]


def _kind(first_kind: str, second_kind: str) -> str:
    if second_kind == READ:
        return "RAW"
    return "WAR" if first_kind == READ else "WAW"


def hazard_pairs(trace: LaunchTrace) -> list[HazardPairs]:
    """Every hazard of ``trace`` (as :func:`mpnpu.racecheck.analyze` reports them) with its pairs.

    Raises ValueError for an inconsistent trace, like :func:`mpnpu.racecheck.analyze`.
    """
    view, origin = poll_view(trace)  # (positions below are the recorded trace's: origin maps them back)
    conf = find_conflicts(view, polls=False)
    hazards = hazards_from(conf)
    if not hazards:
        return []
    w = conf._walk
    pos = w.pos if origin is None else np.array([origin[c][p] for c, p in zip(w.core.tolist(), w.pos.tolist())],
                                                dtype=np.int64)
    grouped: dict[tuple[str, ...], list[AccessPair]] = {h.key: [] for h in hazards}
    for a, b, lo, hi in zip(conf.first.tolist(), conf.second.tolist(), conf.byte_lo.tolist(), conf.byte_hi.tolist()):
        ea, eb = w.events[a], w.events[b]
        key = (_kind(ea.kind, eb.kind), ea.tensor, ea.stage, ea.site, eb.stage, eb.site)
        grouped[key].append(
            AccessPair((int(w.core[a]), int(pos[a])), (int(w.core[b]), int(pos[b])), int(lo), int(hi))
        )
    return [HazardPairs(h, tuple(grouped[h.key])) for h in hazards]


def core_hazard_pairs(trace: LaunchTrace) -> list[HazardPairs]:
    """The hazards inside cores (between the pipes of one core: on its local memory, and on GM)
    with their pairs, as :func:`mpnpu.racecheck.intracore.analyze_local` reports them; both
    accesses of a pair are on one core, the first the one issued first."""
    return [HazardPairs(h, tuple(AccessPair(a, b, lo, hi) for a, b, lo, hi in pairs))
            for h, pairs in local_pairs(trace)]
