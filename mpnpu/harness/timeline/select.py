"""Which launches of a batch get a timeline, and keeping their traces without keeping them all.

A batch of 800 case-runs per variant makes 800 traces; a timeline wants two of them: the first
case-run that failed and, for contrast, a run of the same case that passed (the same kernel on the
same data, differently scheduled). :class:`TimelineSelector` holds at most three traces per
variant (failing, passing, and the first passing run as a fallback when nothing fails) and tells
the runner which launches need tracing at all:

- a variant that has not failed yet traces every launch (the next one may be its first failure;
  this costs what racecheck's tracing costs, without racecheck's analysis);
- once it has failed at case i, only runs of case i are traced, until one of them passes;
- a variant that never fails keeps a run of the case another variant first failed at: the fixed
  kernel on the incident's failing case;
- ``case=N`` (``--timeline-case``): only case N is traced, a failing and a passing run of it kept.

Runs of a wanted case may not come again (the failure was in the last repeat): :meth:`pending`
lists those, and the runner may make a few extra runs of the case after the batch, traced and
never counted in its results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from mpnpu.runtime.trace import LaunchTrace


@dataclass
class KeptRun:
    """A kept traced case-run and why it was kept."""

    variant: str
    case: int  # case index, as the batch report prints it
    repeat: int  # 0-based
    case_run: int  # 1-based number of the case-run in its variant (0 for an extra run)
    passed: bool
    summary: str  # the verdict in a few words
    trace: LaunchTrace = field(repr=False)
    role: str = ""
    extra: bool = False  # made after the batch for the timeline only; not counted anywhere

    @property
    def label(self) -> str:
        where = "extra run after the batch" if self.extra else f"repeat {self.repeat + 1}, case-run {self.case_run}"
        return f"{self.variant}, case {self.case} ({where})"


@dataclass
class _Slots:
    failing: KeptRun | None = None
    passing: KeptRun | None = None
    passing_case: int | None = None  # the case whose passing run is wanted
    fallback: KeptRun | None = None  # first passing run, shown when no variant fails


class TimelineSelector:
    """Decides which launches to trace for timelines and keeps the chosen traces (see module doc)."""

    def __init__(self, variants: Sequence[str], case: int | None = None, grouped: bool = False,
                 unit: str = "variant") -> None:
        """``variants``: the names launches are kept under; ``grouped``: :meth:`kept` lists them name
        by name (a diagnosis chain's steps in order) instead of every failing run first; ``unit``:
        what a name is, in the roles ("variant", "step")."""
        self.case = case
        self.grouped = grouped
        self.unit = unit
        self._slots = {v: _Slots(passing_case=case) for v in variants}
        self._order = list(variants)

    def wants(self, variant: str, case: int) -> bool:
        """Whether the next launch of ``case`` in ``variant`` must be traced."""
        s = self._slots[variant]
        if self.case is not None:
            return case == self.case and (s.failing is None or s.passing is None)
        if s.failing is None:
            return True
        return s.passing is None and s.passing_case == case

    def offer(self, variant: str, case: int, repeat: int, case_run: int, passed: bool, summary: str,
              trace: LaunchTrace | None, extra: bool = False) -> None:
        """Show the selector a finished case-run; it keeps the trace if it fills a slot."""
        s = self._slots[variant]
        if trace is None or (self.case is not None and case != self.case):
            return
        run = KeptRun(variant, case, repeat, case_run, passed, summary, trace, extra=extra)
        if not passed:
            if s.failing is None:
                run.role = "first failure" if self.case is None else f"case {case}, a failing run"
                s.failing = run
                if self.case is None:
                    if s.passing is not None and s.passing.case != case:
                        s.passing = None  # kept for another variant's failing case: this one's own wins
                    s.passing_case = case
                    for other in self._slots.values():
                        if other.failing is None and other.passing_case is None:
                            other.passing_case = case
            return
        if s.passing is None and s.passing_case == case:
            if s.failing is not None:
                run.role = "passing run of the same case, for contrast"
            elif self.case is not None:
                run.role = f"case {case}, a passing run"
            else:
                run.role = f"the same case in a {self.unit} that did not fail"
            s.passing = run
        elif s.fallback is None and self.case is None:
            run.role = f"first case-run (no {self.unit} failed)"
            s.fallback = run

    def pending(self) -> list[tuple[str, int]]:
        """(variant, case) whose wanted passing run has not come; extra runs may fill them."""
        return [
            (v, s.passing_case) for v, s in self._slots.items()
            if s.passing is None and s.passing_case is not None
            and (s.failing is not None or self.case is None)
        ]

    def renamed(self, names: dict[str, str]) -> "RenamedSelector":
        """This selector as a batch sees it when the batch's variant names are not its own
        (``names``: batch variant -> selector name): each step of a diagnosis chain is a batch of
        the variant "incident", kept under the step's name."""
        return RenamedSelector(self, names)

    def kept(self) -> list[KeptRun]:
        """The runs to draw, failing runs first, then variant by variant."""
        any_failed = any(s.failing is not None for s in self._slots.values())
        runs: list[KeptRun] = []
        for v in self._order:
            s = self._slots[v]
            if any_failed or self.case is not None:
                runs += [r for r in (s.failing, s.passing) if r is not None]
            elif s.fallback is not None:
                runs.append(s.fallback)
        if not self.grouped:
            runs.sort(key=lambda r: r.passed)  # stable: failing runs first, variant order kept
        return runs


class RenamedSelector:
    """A :class:`TimelineSelector` under other variant names (see :meth:`TimelineSelector.renamed`):
    what ``run_batch`` asks it is asked of the selector under the mapped names, and only the
    mapped names' pending runs are its own."""

    def __init__(self, selector: TimelineSelector, names: dict[str, str]) -> None:
        self._selector = selector
        self._names = dict(names)
        self._back = {v: k for k, v in self._names.items()}

    def wants(self, variant: str, case: int) -> bool:
        return self._selector.wants(self._names[variant], case)

    def offer(self, variant: str, *args: Any, **kwargs: Any) -> None:
        self._selector.offer(self._names[variant], *args, **kwargs)

    def pending(self) -> list[tuple[str, int]]:
        return [(self._back[name], case) for name, case in self._selector.pending() if name in self._back]
