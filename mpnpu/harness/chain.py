"""Running diagnosis chains: an operator's step-by-step diagnosis of its race, run as batches.

An operator that has one publishes a :class:`~mpnpu.operators.diagnosis.Diagnosis` (its ``diagnosis``
attribute; the types are in :mod:`mpnpu.operators.diagnosis`): steps, each a probe on a variant with
what the original diagnosis saw and an expectation function that says whether this run saw the
same. :func:`run_investigation` runs any such chain (this is what ``mpnpu investigate --op NAME``
does); FLOMS's chain (O1–O9 of docs/incident.md) lives with FLOMS, in its package's ``diagnosis.py``.

The rule. A step *shows the fault* when at least one of its case-runs fails its judgement or at
least one case's result differs between its repeats; it *does not* when neither happens in any of
its N = cases x repeats case-runs. N comes from a calibration measured in the same run (the first
step, marked ``calibrates``; rounds of ``calibration_cases`` cases x ``repeats`` repeats, until
``calibration_min_failures`` failures or ``calibration_max_rounds`` rounds): with k failures in n
unprobed case-runs, p_low is the lower end of the 95% Wilson interval of k/n and the guarded rate is
p_guard = p_low / safety (default 4: a step may fail a quarter as often as the calibration and still
be caught; one FLOMS run under heavy load from other jobs saw O4 fail at 2.5% after a 14.5%
calibration). Each step gets enough cases C, at a fixed number R of repeats (4), that a fault at
p_guard shows with probability >= confidence (default 0.99) both

- as a failing case-run (judged against a golden or an expected value): 1 − (1 − p)^(C·R), and
- as a case whose R runs disagree (judged by consistency): 1 − ((1 − p)^R + p^R)^C
  (a case is missed only if all R runs are right, or all R are wrong the same way),

then at least ``min_cases`` (75) cases (a floor: 0 of 300 bounds a rate below 1% at 95% for the
"does not" steps, and a 2.5% fault still shows with 99.95%) and at most ``max_cases`` (120; a cap
that bounds the run time when the race is rare; the output says when it binds).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from mpnpu.errors import NotFoundError, UsageError
from mpnpu.harness.runner import BatchResult, VariantResult, make_variants, run_batch
from mpnpu.harness.stats import (
    cases_for_consistency,
    consistency_detect_probability,
    detect_probability,
    trials_to_detect,
    wilson_interval,
)
from mpnpu.operators.diagnosis import Diagnosis, Step, StepResult, diagnosis_for
from mpnpu.operators.protocol import Operator, cpu_set_for, default_block_dim, device_for
from mpnpu.runtime import cpuset
from mpnpu.runtime.checks import is_int
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.procutil import available_cpus

# -- how many case-runs a step needs ------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How each step after the calibration is sized (see the module docstring)."""

    calibration_failed: int
    calibration_runs: int
    rate: float  # k/n of the calibration
    rate_low: float  # lower end of its 95% Wilson interval
    rate_high: float
    guard_rate: float  # rate_low / safety: the rate every step is sized to detect
    confidence: float
    safety: float
    repeats: int
    needed_runs: int | None  # trials_to_detect(guard_rate, confidence); None when nothing was seen
    needed_cases_consistency: int | None  # cases for the consistency rule at the same confidence
    cases: int  # after the floor and the cap
    floor_cases: int
    cap_cases: int

    @property
    def case_runs(self) -> int:
        """N: case-runs per step."""
        return self.cases * self.repeats

    @property
    def capped(self) -> bool:
        needed = max(math.ceil((self.needed_runs or 0) / self.repeats), self.needed_cases_consistency or 0)
        return self.needed_runs is None or needed > self.cap_cases

    def detect_golden(self, rate: float | None = None) -> float:
        """P(at least one failing case-run in N) at ``rate`` (default: the guarded rate)."""
        p = self.guard_rate if rate is None else rate
        return detect_probability(p, self.case_runs) if p > 0 else 0.0

    def detect_consistency(self, rate: float | None = None) -> float:
        """P(at least one case whose R runs disagree, in C cases) at ``rate`` (default: guarded)."""
        p = self.guard_rate if rate is None else rate
        return consistency_detect_probability(p, self.repeats, self.cases) if p > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.update(case_runs=self.case_runs, capped=self.capped,
                 detect_at_guard={"failing_case_run": self.detect_golden(),
                                  "inconsistent_case": self.detect_consistency()},
                 detect_at_rate={"failing_case_run": self.detect_golden(self.rate),
                                 "inconsistent_case": self.detect_consistency(self.rate)})
        return d


def plan_trials(failed: int, runs: int, *, repeats: int = 4, confidence: float = 0.99, safety: float = 4.0,
                min_cases: int = 75, max_cases: int = 120) -> Plan:
    """Size the steps from a calibration of ``failed`` failures in ``runs`` unprobed case-runs."""
    if repeats < 2:
        raise UsageError(f"repeats must be >= 2 (consistency needs at least two runs of a case), got {repeats}")
    if not 0.0 < confidence < 1.0:
        raise UsageError(f"confidence must be in (0, 1), got {confidence}")
    if not safety >= 1.0:
        raise UsageError(f"safety must be >= 1, got {safety}")
    if not 1 <= min_cases <= max_cases:
        raise UsageError(f"need 1 <= min_cases <= max_cases, got {min_cases}, {max_cases}")
    lo, hi = wilson_interval(failed, runs) if runs else (0.0, 1.0)
    rate = failed / runs if runs else 0.0
    guard = lo / safety
    if failed == 0 or guard <= 0.0:
        needed = needed_cons = None
        cases = min_cases
    else:
        guard = min(guard, 0.5)
        needed = trials_to_detect(guard, confidence)
        needed_cons = cases_for_consistency(guard, repeats, confidence)
        cases = min(max_cases, max(min_cases, math.ceil(needed / repeats), needed_cons))
    return Plan(failed, runs, rate, lo, hi, guard, confidence, safety, repeats, needed, needed_cons, cases,
                min_cases, max_cases)


@dataclass
class Investigation:
    """The whole chain: the plan from the calibration and one StepResult per step run."""

    operator: str
    seed: int
    block_dim: int
    cpus: int
    shapes: str
    racecheck: bool
    diagnosis: Diagnosis = field(repr=False)
    steps: list[StepResult] = field(default_factory=list)
    plan: Plan | None = None
    elapsed_s: float = 0.0
    interrupted: bool = False
    interrupt: BaseException | None = field(default=None, repr=False)
    processes: int = 0  # the device's core processes (0: 3 per block, a mix device's)

    @property
    def core_processes(self) -> int:
        return self.processes or 3 * self.block_dim

    @property
    def complete(self) -> bool:
        return not self.interrupted and len(self.steps) == len(self.diagnosis.steps)

    @property
    def all_match(self) -> bool:
        return self.complete and all(s.matches for s in self.steps)

    def step(self, key: str, probe: str | None = None) -> StepResult:
        for s in self.steps:
            if s.spec.key == key and (probe is None or s.spec.probe == probe):
                return s
        raise NotFoundError(f"no step {key if probe is None else f'{key} {probe}'} in this investigation")

    def verdict_line(self) -> str:
        """The one-line verdict: every conclusion matches, which do not, or how far it got."""
        total = len(self.diagnosis.steps)
        if self.interrupted:
            done = sum(1 for s in self.steps if not s.interrupted)
            return f"INTERRUPTED after {done} of {total} steps (the steps above are the ones done)"
        bad = [s.label for s in self.steps if not s.matches]
        ref = self.diagnosis.reference
        if not bad:
            return f"verdict: OK: every conclusion matches {ref} ({len(self.steps)}/{total} steps)"
        return f"verdict: NOT OK: {len(bad)} step(s) do not match {ref}: {', '.join(bad)}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator, "seed": self.seed, "block_dim": self.block_dim,
            "core_processes": self.core_processes, "cpus": self.cpus, "shapes": self.shapes,
            "racecheck": self.racecheck, "rule": self.diagnosis.rule,
            "plan": self.plan.to_dict() if self.plan else None,
            "steps": [s.to_dict() for s in self.steps], "all_match": self.all_match,
            "interrupted": self.interrupted, "elapsed_s": self.elapsed_s,
        }


def step_name(spec: Step) -> str:
    """A step that runs a batch, named for its timelines: ``O4 (incident, probe only-predicted)``."""
    what = spec.variant + (f", probe {spec.probe}" if spec.probe else "")
    return f"{spec.label or spec.key} ({what})"


def timeline_names(chain: Diagnosis) -> list[str]:
    """The names timelines keep a chain's launches under: one per step that runs a batch."""
    return [step_name(s) for s in chain.steps if s.variant]


def evaluate(spec: Step, v: VariantResult, cases: int, earlier: Sequence[StepResult],
             reference: str = "the original diagnosis") -> StepResult:
    """Judge one step's merged batch result by the step's expectation."""
    res = StepResult(
        spec, reference, cases=cases, repeats=v.repeats, case_runs=v.case_runs,
        failed_case_runs=v.failed_case_runs, failed_by_output=dict(v.failed_by_output),
        inconsistent_cases=list(v.inconsistent_cases), min_rel_error=v.min_rel_error,
        max_rel_error=v.max_rel_error, launch_errors=v.launch_errors, elapsed_s=v.elapsed_s, batch=v.to_dict(),
    )
    res.hazard_log = v.hazard_log
    res.shows_fault = v.failed_case_runs > 0 or len(v.inconsistent_cases) > 0
    res.matches = bool(spec.expect(res, earlier))
    res.seen = spec.seen(res, earlier)
    return res


def derive(spec: Step, earlier: Sequence[StepResult], reference: str = "the original diagnosis") -> StepResult:
    """A step that runs nothing: its verdict comes from the steps before it."""
    res = StepResult(spec, reference)
    res.matches = res.shows_fault = bool(spec.expect(res, earlier))
    res.seen = spec.seen(res, earlier)
    return res


# -- the run --------------------------------------------------------------------------------------------


def run_investigation(
    op: Operator,
    *,
    seed: int = 0,
    block_dim: int | None = None,
    repeats: int = 4,
    calibration_cases: int = 50,
    calibration_min_failures: int = 5,
    calibration_max_rounds: int = 3,
    min_cases: int = 75,
    max_cases: int = 120,
    confidence: float = 0.99,
    safety: float = 4.0,
    racecheck: bool = False,
    shapes: str | None = None,
    device: Device | None = None,
    options: RuntimeOptions = DEFAULT_OPTIONS,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    on_step: Callable[[StepResult], None] | None = None,
    timeline: Any = None,
    cpus_per_core: int | None = None,
) -> Investigation:
    """Run the calibration and every step of ``op``'s diagnosis chain on one device.

    The calibration runs rounds of ``calibration_cases`` x
    ``repeats`` case-runs until it has seen ``calibration_min_failures`` failures or run
    ``calibration_max_rounds`` rounds (a rate measured from a handful of failures is too rough to
    size the steps by); the rounds are merged with :meth:`VariantResult.merge`. ``shapes`` names one
    of the chain's case restrictions (default: the chain's own choice). ``progress(n)`` after every n
    case-runs; ``on_total(total)`` whenever the planned number of case-runs changes; ``on_step``
    after each step. Ctrl-C stops the chain: the result has ``interrupted`` set and holds the steps
    done so far. ``timeline`` (a :class:`mpnpu.harness.timeline.TimelineSelector` made with
    :func:`timeline_names` of the chain) picks launches of every step to trace and keeps them under
    the step's name, as ``run_batch`` does for variants. ``cpus_per_core``: the whole chain runs
    pinned to that many CPUs per AI core (:func:`~mpnpu.operators.protocol.cpu_set_for`; 0: every
    CPU, unpinned), as ``mpnpu investigate`` runs it; None: wherever this process runs.
    """
    for name, value, low in (("calibration_cases", calibration_cases, 1), ("seed", seed, 0),
                             ("calibration_min_failures", calibration_min_failures, 1),
                             ("calibration_max_rounds", calibration_max_rounds, 1),
                             ("repeats", repeats, 2), ("min_cases", min_cases, 1), ("max_cases", max_cases, 1)):
        if not is_int(value) or value < low:
            raise UsageError(f"{name} must be an integer >= {low}, got {value!r}")
    plan_trials(1, 2, repeats=repeats, confidence=confidence, safety=safety, min_cases=min_cases,
                max_cases=max_cases)  # validates the sizing arguments before any launch
    chain = diagnosis_for(op)
    shapes = shapes if shapes is not None else chain.default_shapes
    op = chain.with_shapes(op, shapes)
    # As a batch: the run and its core processes on cpus_per_core CPUs per AI core, whatever the
    # machine, so that the calibrated rate (and the repeats sized from it) means the same everywhere.
    cpu_set = None if cpus_per_core is None else cpu_set_for(op, block_dim or default_block_dim(op), cpus_per_core)
    with cpuset.pinned(cpu_set):  # (None: no change)
        runner = _ChainRun(op, chain, seed, repeats, racecheck, progress, on_total, timeline=timeline)
        inv = Investigation(op.name, seed, 0, len(available_cpus()), shapes, racecheck, chain)
        own = device is None
        start = time.perf_counter()
        if on_total is not None:
            on_total(calibration_cases * repeats + runner.later * min_cases * repeats)
        try:
            if device is None:
                device = device_for(op, block_dim or default_block_dim(op), options=options)
            runner.device = device
            inv.block_dim, inv.processes = device.block_dim, device.topology.n_cores
            for spec in chain.steps:
                if not spec.variant:
                    res = derive(spec, inv.steps, chain.reference)
                else:
                    cases = calibration_cases if inv.plan is None else inv.plan.cases
                    rounds = calibration_max_rounds if spec.calibrates else 1
                    merged, last = runner.rounds(spec, cases, rounds, calibration_min_failures, min_cases)
                    res = evaluate(spec, merged, last.cases, inv.steps, chain.reference)
                    if last.interrupted:
                        res.interrupted, res.matches = True, False
                        inv.steps.append(res)
                        inv.interrupted, inv.interrupt = True, last.interrupt or KeyboardInterrupt()
                        break
                    if spec.calibrates:
                        inv.plan = plan_trials(res.failed_case_runs, res.case_runs, repeats=repeats,
                                               confidence=confidence, safety=safety, min_cases=min_cases,
                                               max_cases=max_cases)
                        runner.planned(inv.plan.case_runs)
                inv.steps.append(res)
                if on_step is not None:
                    on_step(res)
        except KeyboardInterrupt as e:
            inv.interrupted, inv.interrupt = True, e
        finally:
            inv.elapsed_s = time.perf_counter() - start
            if own and device is not None:
                device.close()
        return inv


@dataclass
class _ChainRun:
    """Runs a chain's steps as batches on one device and keeps the progress total up to date."""

    op: Operator
    chain: Diagnosis
    seed: int
    repeats: int
    racecheck: bool
    progress: Callable[[int], None] | None
    on_total: Callable[[int], None] | None
    device: Device | None = None
    done_runs: int = 0
    timeline: Any = None  # TimelineSelector over timeline_names(chain)

    @property
    def later(self) -> int:
        """Batch steps after the calibration."""
        return sum(1 for s in self.chain.steps if s.variant and not s.calibrates)

    def planned(self, per_step: int) -> None:
        if self.on_total is not None:
            self.on_total(self.done_runs + self.later * per_step)

    def rounds(self, spec: Step, cases: int, max_rounds: int, min_failures: int,
               min_cases: int) -> tuple[VariantResult, BatchResult]:
        """Run ``spec`` for up to ``max_rounds`` rounds (stopping at ``min_failures``); merge them."""
        merged: VariantResult | None = None
        while True:
            timeline = None if self.timeline is None else self.timeline.renamed({spec.variant: step_name(spec)})
            variants = make_variants(self.op, [spec.variant])
            batch = run_batch(self.op, cases=cases, repeat=self.repeats, variants=variants, seed=self.seed,
                              probe=spec.probe, racecheck=self.racecheck, device=self.device, progress=self.progress,
                              timeline=timeline)
            result = batch.variants[spec.variant]
            self.done_runs += result.case_runs
            merged = result if merged is None else merged.merge(result)
            if batch.interrupted or merged.failed_case_runs >= min_failures or max_rounds <= 1:
                return merged, batch
            max_rounds -= 1
            self.planned(min_cases * self.repeats)
