"""Diagnosis chains as data: an operator's step-by-step diagnosis of its race.

An operator that has one publishes a :class:`Diagnosis` (its ``diagnosis`` attribute): steps, each a
probe on a variant with what the original diagnosis saw and an expectation function that says
whether a run saw the same (given the :class:`StepResult` of that step and of the steps before).
:func:`mpnpu.harness.chain.run_investigation` runs any such chain (``mpnpu investigate --op NAME``);
FLOMS's chain (O1–O9 of docs/incident.md) lives with FLOMS, in its package's ``diagnosis.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from mpnpu.errors import UsageError
from mpnpu.operators.protocol import Operator, diagnosis_of


@dataclass(frozen=True)
class Step:
    """One step of a diagnosis: which probe on which variant, and what the original diagnosis saw.

    ``expect(result, earlier)`` says whether this run matches what was seen originally, ``seen(result,
    earlier)`` says in one line what this run saw (``earlier``: the results of the steps before).
    A step with no ``variant`` runs nothing: it is derived from the earlier steps (e.g. "root cause").
    """

    key: str  # "calibration", "O4", "O5a", ..., "root cause", "O9"
    probe: str  # "" = the kernel as written
    variant: str  # "incident" | "fixed" | ...; "" for a derived step
    changed: str  # what the step changes
    judged: str  # how the watched output is judged: "golden" | "expected value" | "consistency" | ""
    expect_fault: bool  # the original diagnosis saw the fault at this step
    writeup: str  # what the original diagnosis saw
    conclusion: str  # what follows when the step matches ("{n}" is replaced by the case-runs)
    expect: Callable[["StepResult", Sequence["StepResult"]], bool]
    seen: Callable[["StepResult", Sequence["StepResult"]], str]
    requires: str = ""  # what else must hold for the step to match (shown in the output)
    label: str = ""  # how the step is shown (default: key)
    calibrates: bool = False  # this step's failure rate sizes every later step


@dataclass(frozen=True)
class Shapes:
    """A named restriction of the operator's cases (e.g. smaller ones, for a faster chain)."""

    description: str  # shown in the header: "small case shapes (BT 64..160, ...)"
    apply: Callable[[Operator], Operator]


@dataclass(frozen=True)
class Diagnosis:
    """An operator's diagnosis chain and the words its report uses."""

    title: str  # the Markdown report's title
    subject: str  # what runs, for the header: "incident kernel (S1 dropped)"
    steps: tuple[Step, ...]
    rule: str  # the decision rule, one sentence
    consistency_note: str  # what "cases inconsistent" compares
    reference: str = "the original diagnosis"  # what the conclusions are checked against
    shapes: Mapping[str, Shapes] = field(default_factory=dict)  # besides "default" (the operator as it is)
    default_shapes: str = "default"

    def shapes_names(self) -> tuple[str, ...]:
        return (*self.shapes, "default") if "default" not in self.shapes else tuple(self.shapes)

    def with_shapes(self, op: Operator, shapes: str) -> Operator:
        """``op`` with its cases restricted to the named shapes ("default" leaves it as it is)."""
        if shapes == "default":
            return op
        if shapes not in self.shapes:
            raise UsageError(f"unknown shapes {shapes!r}; known: {', '.join(self.shapes_names())}")
        return self.shapes[shapes].apply(op)

    def shapes_description(self, shapes: str) -> str:
        return "default case shapes" if shapes == "default" else self.shapes[shapes].description


def diagnosis_for(op: Operator) -> Diagnosis:
    """``op``'s diagnosis chain, or a UsageError saying it has none."""
    chain = diagnosis_of(op)
    if chain is None:
        raise UsageError(f"operator {op.name} has no diagnosis chain to investigate "
                         f"(python -m mpnpu.batch runs its variants)")
    return chain




@dataclass
class StepResult:
    """What one step ran, saw and concluded."""

    spec: Step
    reference: str = "the original diagnosis"
    cases: int = 0
    repeats: int = 0
    case_runs: int = 0
    failed_case_runs: int = 0
    failed_by_output: dict[str, int] = field(default_factory=dict)
    inconsistent_cases: list[int] = field(default_factory=list)
    min_rel_error: float | None = None
    max_rel_error: float | None = None
    launch_errors: int = 0
    shows_fault: bool = False
    matches: bool = False
    seen: str = ""
    elapsed_s: float = 0.0
    interrupted: bool = False
    hazard_log: Any = field(default=None, repr=False)  # mpnpu.racecheck.HazardLog (when racechecked)
    batch: dict[str, Any] = field(default_factory=dict, repr=False)  # the VariantResult as data

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def label(self) -> str:
        return self.spec.label or self.spec.key

    @property
    def conclusion(self) -> str:
        if self.interrupted:
            return "interrupted before the step finished"
        if self.matches:
            return self.spec.conclusion.format(n=self.case_runs)
        what = "shows the fault" if self.shows_fault else "does not show the fault"
        return (f"DOES NOT MATCH {self.reference} ({self.spec.writeup}): the step {what}; "
                f"needed: {self.spec.requires}")

    def to_dict(self) -> dict[str, Any]:
        s = self.spec
        return {
            "step": s.key, "probe": s.probe, "variant": s.variant, "changed": s.changed, "judged": s.judged,
            "writeup": s.writeup, "requires": s.requires, "expect_fault": s.expect_fault,
            "cases": self.cases, "repeats": self.repeats, "case_runs": self.case_runs,
            "failed_case_runs": self.failed_case_runs, "failed_by_output": self.failed_by_output,
            "inconsistent_cases": self.inconsistent_cases, "min_rel_error": self.min_rel_error,
            "max_rel_error": self.max_rel_error, "launch_errors": self.launch_errors,
            "shows_fault": self.shows_fault, "matches": self.matches, "seen": self.seen,
            "conclusion": self.conclusion, "elapsed_s": self.elapsed_s, "interrupted": self.interrupted,
            "batch": self.batch,
        }


