"""Findings of initcheck and synccheck as data: one kind of defect at one kernel line, merged over
the launches of a batch (as :class:`~mpnpu.racecheck.hazards.HazardLog` merges hazards).

A :class:`Finding` is what :mod:`.initcheck` (a read of bytes never written in the launch) and
:mod:`.synccheck` (a flag set and never waited, a flag or queue slot left pending at the kernel's
end, an event id set twice, a redundant sync) report: the check, the kind, the core and kernel
line, what it is about (a buffer and its byte range, or an event) and, for a sync, the other line
involved. This module only holds numbers; :mod:`mpnpu.report.checks` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from mpnpu.errors import InvalidArgumentError

INITCHECK = "initcheck"
SYNCCHECK = "synccheck"
CHECKS = (INITCHECK, SYNCCHECK)

#: the kinds of finding, per check, in the order reports list them
UNINIT_READ = "uninitialized read"
SET_NOT_WAITED = "set never waited"
PENDING_AT_END = "pending at kernel end"
DUPLICATE_ID = "duplicate event id"
REDUNDANT = "redundant sync"
KINDS = (UNINIT_READ, SET_NOT_WAITED, PENDING_AT_END, DUPLICATE_ID, REDUNDANT)


@dataclass(frozen=True)
class Finding:
    """One defect at one kernel line (``site``), of one kind, with what it is about.

    ``subject`` names the memory ("GM tensor y", "UB") or the sync ("SetFlag<MTE2_V>(0)");
    ``byte_range`` is the [start, stop) hull of the bytes involved (initcheck: in the GM segment's
    root tensor as elements when ``elements`` is set, else bytes of the local memory); ``other_site``
    the second line of a sync finding (the wait of a redundant pair, the earlier set of a duplicate).
    ``count`` is how many times the launch(es) did it, ``launches`` in how many launches it appeared,
    ``cores`` the short names of the cores that did.
    """

    check: str
    kind: str
    subject: str
    site: str
    stage: str
    core: str  # label of a representative core, e.g. "vector core 1 (block 0, sub 1)"
    message: str  # what is wrong, in a few words, without the line
    fix: str  # what to change
    other_site: str = ""
    byte_range: tuple[int, int] | None = None
    elements: bool = False  # byte_range is in elements of the GM tensor, not bytes
    pipe: str = ""
    count: int = 1
    launches: int = 1
    cores: frozenset[str] = field(default_factory=frozenset)

    @property
    def is_error(self) -> bool:
        """A defect (every kind but a redundant sync, which is a warning: it costs time, not results)."""
        return self.kind != REDUNDANT

    @property
    def key(self) -> tuple[str, ...]:
        """What makes two findings the same: check, kind, subject, both lines, stage and pipe."""
        return (self.check, self.kind, self.subject, self.site, self.other_site, self.stage, self.pipe)

    def merged(self, other: "Finding", same_launch: bool = False) -> "Finding":
        """This finding combined with ``other`` (same key): counts add, ranges and core sets unite;
        ``same_launch``: both come from one launch, so the launch count does not add up."""
        if other.key != self.key:
            raise InvalidArgumentError(f"cannot merge findings with different keys: {self.key} vs {other.key}")
        rng = self.byte_range
        if rng is not None and other.byte_range is not None:
            rng = (min(rng[0], other.byte_range[0]), max(rng[1], other.byte_range[1]))
        return replace(self, count=self.count + other.count, byte_range=rng, cores=self.cores | other.cores,
                       launches=max(self.launches, other.launches) if same_launch else self.launches + other.launches)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON-ready)."""
        out: dict[str, Any] = {"check": self.check, "kind": self.kind, "subject": self.subject, "site": self.site,
                               "stage": self.stage, "core": self.core, "message": self.message, "fix": self.fix,
                               "count": self.count, "launches": self.launches, "cores": sorted(self.cores)}
        if self.other_site:
            out["other_site"] = self.other_site
        if self.byte_range is not None:
            out["element_range" if self.elements else "byte_range"] = list(self.byte_range)
        if self.pipe:
            out["pipe"] = self.pipe
        return out


def merge_launch(findings: Iterable[Finding]) -> list[Finding]:
    """One launch's findings with those of the same key merged (counts add, one launch)."""
    out: dict[tuple[str, ...], Finding] = {}
    for f in findings:
        prev = out.get(f.key)
        out[f.key] = f if prev is None else prev.merged(f, same_launch=True)
    return sorted(out.values(), key=_sort_key)


def _sort_key(f: Finding) -> tuple[int, int, str, str, tuple[str, ...]]:
    return (CHECKS.index(f.check), KINDS.index(f.kind), f.site, f.subject, f.key)


class FindingLog:
    """Findings merged over many launches of one check (or both); :meth:`add` once per launch
    checked, with its findings (possibly none), so that ``launches_checked`` counts them all."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, ...], Finding] = {}
        self.launches_checked = 0

    def add(self, findings: Iterable[Finding]) -> None:
        """Merge the findings of one launch."""
        for key_f in merge_launch(findings):
            prev = self._by_key.get(key_f.key)
            self._by_key[key_f.key] = key_f if prev is None else prev.merged(key_f)
        self.launches_checked += 1

    def merged(self, *others: "FindingLog") -> "FindingLog":
        """A new log with this log's findings and ``others``' (different launches: counts add up)."""
        out = FindingLog()
        for log in (self, *others):
            for key, f in log._by_key.items():
                prev = out._by_key.get(key)
                out._by_key[key] = f if prev is None else prev.merged(f)
            out.launches_checked += log.launches_checked
        return out

    def findings(self, check: str | None = None) -> list[Finding]:
        """Every finding (of ``check`` only, if given), in report order."""
        return sorted((f for f in self._by_key.values() if check is None or f.check == check), key=_sort_key)

    def to_dicts(self) -> list[dict[str, Any]]:
        """:meth:`findings` as plain data."""
        return [f.to_dict() for f in self.findings()]

    def errors(self) -> int:
        """How many distinct findings are defects (:attr:`Finding.is_error`)."""
        return sum(1 for f in self._by_key.values() if f.is_error)

    def __len__(self) -> int:
        return len(self._by_key)
