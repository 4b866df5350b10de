"""Hazards as data: what a race is, merged over the launches of a batch, and its plain-data form.

A :class:`Hazard` is one *kind of* race: all conflicting access pairs with the same
(kind, tensor, stage and site of the first access, stage and site of the second) — typically one
line of kernel code racing with another — merged into one record with a count of access pairs
and the set of core pairs involved. :class:`HazardLog` merges hazards across many launches (a
batch run), counting in how many launches each one appeared.

This module only holds numbers: :mod:`mpnpu.racecheck.detect` finds them and
:mod:`mpnpu.report.hazards` prints them (msSanitizer style).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, TypeVar

from mpnpu.errors import InvalidArgumentError
from mpnpu.runtime.trace import ATOMIC, READ, WRITE

#: Access kinds as printed (the trace stores one-letter codes).
ACCESS_NAMES = {READ: "READ", WRITE: "WRITE", ATOMIC: "ATOMIC"}
HAZARD_KINDS = ("RAW", "WAR", "WAW")


def stage_label(stage: str) -> str:
    """A stage name for reports (events recorded before any ``api.stage`` have stage "")."""
    return stage if stage else "(no stage)"


@dataclass(frozen=True)
class AccessSite:
    """One side of a hazard: which core made which access, where in the kernel."""

    core: str  # label, e.g. "vector core 3 (block 1, sub 1)"
    core_id: int
    short: str  # e.g. "aiv3"
    stage: str
    site: str  # "kernel.py:120"
    access: str  # "READ", "WRITE" or "ATOMIC"
    tensor: str
    pipe: str = ""  # for a hazard inside a core: the pipe that made the access, e.g. "PIPE_MTE2"

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON-ready)."""
        extra = {"pipe": self.pipe} if self.pipe else {}
        return {**extra,
            "core": self.core,
            "core_id": self.core_id,
            "short": self.short,
            "stage": self.stage,
            "site": self.site,
            "access": self.access,
            "tensor": self.tensor,
        }


@dataclass(frozen=True)
class Hazard:
    """A GM race: accesses at two kernel sites that conflict and that no sync orders.

    ``first`` is the access the kernel means to come first (earlier stage, else earlier in the
    trace) and names the kind: RAW = write then read, WAR = read then write, WAW = two writes (an
    atomic add counts as a write). ``first``/``second`` show one representative core pair;
    ``core_pairs`` holds every (first core, second core) pair seen, as short names.

    ``count`` is the number of conflicting access pairs, ``launches`` the number of launches in
    which the hazard appeared, ``element_range`` the [start, stop) hull, in elements of the root
    tensor, of the bytes both accesses of a pair touched.
    """

    kind: str
    tensor: str
    first: AccessSite
    second: AccessSite
    count: int
    element_range: tuple[int, int]
    gap: str  # "no SyncAll between TargetProcess and CVProcess"
    dropped_syncs: tuple[str, ...] = ()
    core_pairs: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    launches: int = 1
    #: "GM": a race between cores on global memory; "local": a race between the pipes of one core
    #: on its local memory (``tensor`` is then the memory, "UB", "L1", ..., and the element range
    #: is in bytes of that memory); "core": a race between the pipes of one core on GM (e.g. a
    #: read-back through MTE2 of what MTE3 wrote)
    scope: str = "GM"
    #: the key of the hazard this one is a consequence of (its accesses come after a read that saw
    #: the wrong data through that one: mpnpu.racecheck.detect._roots), None for a root cause. Over
    #: several launches it stays only if it was the same in every launch the hazard appeared in.
    root: tuple[str, ...] | None = None

    @property
    def is_consequence(self) -> bool:
        return self.root is not None

    @property
    def key(self) -> tuple[str, ...]:
        """What makes two hazards the same: (kind, tensor, stage A, site A, stage B, site B), and
        for a hazard inside a core, its two pipes."""
        key = (self.kind, self.tensor, self.first.stage, self.first.site, self.second.stage, self.second.site)
        return key if self.scope == "GM" else key + (self.first.pipe, self.second.pipe)

    @property
    def missing_sync(self) -> str:
        """Where a sync is missing, naming any sync point the launch dropped there."""
        if not self.dropped_syncs:
            return self.gap
        names = ", ".join(self.dropped_syncs)
        if len(self.dropped_syncs) == 1:
            return f"{self.gap} (sync point {names} was dropped)"
        return f"{self.gap} (sync points {names} were dropped)"

    def merged(self, other: "Hazard", same_launch: bool = False) -> "Hazard":
        """This hazard combined with ``other`` (same key): counts add, ranges and sets unite.

        ``same_launch``: both come from one launch, so the launch count does not add up.
        """
        if other.key != self.key:
            raise InvalidArgumentError(f"cannot merge hazards with different keys: {self.key} vs {other.key}")
        lo = min(self.element_range[0], other.element_range[0])
        hi = max(self.element_range[1], other.element_range[1])
        return replace(
            self,
            count=self.count + other.count,
            launches=max(self.launches, other.launches) if same_launch else self.launches + other.launches,
            element_range=(lo, hi),
            dropped_syncs=tuple(sorted(set(self.dropped_syncs) | set(other.dropped_syncs))),
            core_pairs=self.core_pairs | other.core_pairs,
            root=self.root if self.root == other.root else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON-ready); ``root`` (the hazard this one is a consequence of) only
        when it is one."""
        extra: dict[str, Any] = {} if self.scope == "GM" else {"scope": self.scope}
        if self.root is not None:
            extra["root"] = key_dict(self.root)
        return {
            **extra,
            "kind": self.kind,
            "tensor": self.tensor,
            "count": self.count,
            "launches": self.launches,
            "element_range": list(self.element_range),
            "missing_sync": self.missing_sync,
            "dropped_syncs": list(self.dropped_syncs),
            "core_pairs": [list(p) for p in sorted(self.core_pairs)],
            "first": self.first.to_dict(),
            "second": self.second.to_dict(),
        }


def key_dict(key: tuple[str, ...]) -> dict[str, str]:
    """A hazard key as plain data: kind, tensor, and the stage and site of each access."""
    names = ("kind", "tensor", "first_stage", "first_site", "second_stage", "second_site", "first_pipe",
             "second_pipe")
    return dict(zip(names, key))


def key_text(key: tuple[str, ...]) -> str:
    """A hazard key in a few words: "RAW on counts (Count at compact.py:44 -> Scatter at compact.py:48)"."""
    kind, tensor, st_a, site_a, st_b, site_b = key[:6]
    return f"{kind} on {tensor} ({stage_label(st_a)} at {site_a} -> {stage_label(st_b)} at {site_b})"


T = TypeVar("T")


def group_by_root(items: Iterable[T], key_of: Callable[[T], tuple[str, ...]],
                  root_of: Callable[[T], tuple[str, ...] | None]) -> list[tuple[T, list[T]]]:
    """Items (hazards, or what is said about each) under their root causes, in the given order of
    the roots: (root, its consequences). One whose root is not among ``items`` stands alone."""
    items = list(items)
    keys = {key_of(it) for it in items}
    out: dict[tuple[str, ...], tuple[T, list[T]]] = {
        key_of(it): (it, []) for it in items if root_of(it) is None or root_of(it) not in keys}
    for it in items:
        root = root_of(it)
        if root is None or root not in keys:
            continue
        if root in out:
            out[root][1].append(it)
        else:  # its root is a consequence itself here: it stands alone
            out[key_of(it)] = (it, [])
    return list(out.values())


def grouped(hazards: Iterable[Hazard]) -> list[tuple[Hazard, list[Hazard]]]:
    """Hazards under their root causes (:func:`group_by_root`)."""
    return group_by_root(hazards, lambda h: h.key, lambda h: h.root)


def _sort_key(h: Hazard) -> tuple[int, int, int, tuple[str, ...]]:
    return (-h.count, -h.launches, HAZARD_KINDS.index(h.kind), h.key)


class HazardLog:
    """Hazards merged over many launches (e.g. one batch run).

    Call :meth:`add` once per analysed launch, with that launch's hazards (possibly none), so
    that ``launches_analyzed`` counts them all. ``launches_reused`` counts those of them whose
    hazards came from the analysis of an identical launch (the same accesses and sync order, other
    times: :mod:`mpnpu.racecheck.reuse`); :attr:`launches_analysed_in_full` is the rest.
    """

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, ...], Hazard] = {}
        self.launches_analyzed = 0
        self.launches_reused = 0

    @property
    def launches_analysed_in_full(self) -> int:
        """Launches whose trace was analysed, not matched to one analysed before."""
        return self.launches_analyzed - self.launches_reused

    def add(self, hazards: Iterable[Hazard], *, reused: bool = False) -> None:
        """Merge the hazards of one launch; ``reused``: they are the reused analysis of an identical
        launch (:class:`mpnpu.racecheck.reuse.AnalysisCache`)."""
        this_launch: dict[tuple[str, ...], Hazard] = {}
        for h in hazards:
            prev = this_launch.get(h.key)
            this_launch[h.key] = h if prev is None else prev.merged(h, same_launch=True)
        for key, h in this_launch.items():
            prev = self._by_key.get(key)
            self._by_key[key] = h if prev is None else prev.merged(h)
        self.launches_analyzed += 1
        self.launches_reused += reused

    def reuse_note(self) -> str:
        """"N of M launches analysed; the rest had the same accesses and sync order as one analysed"
        ("" when every launch was analysed)."""
        if not self.launches_reused:
            return ""
        return (f"{self.launches_analysed_in_full} of {self.launches_analyzed} launches analysed; the rest had the "
                "same accesses and sync order as one analysed")

    def launch_counts(self) -> dict[str, int]:
        """The launches checked, analysed in full and given a reused analysis, as plain data."""
        return {"checked": self.launches_analyzed, "analysed": self.launches_analysed_in_full,
                "reused": self.launches_reused}

    def merged(self, *others: "HazardLog") -> "HazardLog":
        """A new log with this log's hazards and ``others``' (different launches: counts add up)."""
        out = HazardLog()
        for log in (self, *others):
            for key, h in log._by_key.items():
                prev = out._by_key.get(key)
                out._by_key[key] = h if prev is None else prev.merged(h)
            out.launches_analyzed += log.launches_analyzed
            out.launches_reused += log.launches_reused
        return out

    def hazards(self) -> list[Hazard]:
        """Every hazard, most frequent (access pairs) first."""
        return sorted(self._by_key.values(), key=_sort_key)

    def to_dicts(self) -> list[dict[str, Any]]:
        """:meth:`hazards` as plain data."""
        return [h.to_dict() for h in self.hazards()]

    def __len__(self) -> int:
        return len(self._by_key)
