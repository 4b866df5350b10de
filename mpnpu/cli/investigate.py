"""python -m mpnpu.investigate — walk the incident write-up's diagnosis (SPEC §1, O1–O9), step by step.

Every step of the write-up is a probe on the kernel (see kernels/<op>/probes.py) run as a batch on
the incident kernel (S1 dropped), judged as the write-up judged it, and compared with what the
write-up saw. The chain::

    calibration  no probe              the unprobed incident rate p (O1/O2), which sizes every later step
    O4   only-predicted                stomping ruled out: it still fails
    O5a  init-zero-only                every case reads exactly 0
    O5b  init-sentinel                 every case reads exactly its own constant: init ruled out
    O6   no-allreduce-copyout          CVProcess's intermediate is inconsistent: the fault enters there
    O7   pipe-barrier-all              the intra-core barrier does not help: it still fails
    O8   copy-dep=vocab_parallel_logits   the cube result is read consistently
    O8   copy-dep=masked_target        masked_target is read inconsistently (its own output is right)
    root cause (derived)               missing SyncAll between TargetProcess and CVProcess
    O9   the fixed variant, no probe   0 failures in N

The rule. A step *shows the fault* when at least one of its case-runs fails its judgement or at
least one case's result differs between its repeats; it *does not* when neither happens in any of
its N = cases x repeats case-runs. N comes from the calibration measured in the same run (rounds
of 50 cases x 4 repeats, until 5 failures or 3 rounds): with k failures in n unprobed case-runs,
p_low is the lower end of the 95% Wilson interval of k/n and the guarded rate is
p_guard = p_low / safety (default 4: a step may fail a quarter as often as the calibration and
still be caught; one run under heavy load from other jobs saw O4 fail at 2.5% after a 14.5%
calibration). Each step gets enough cases C, at a fixed number R of repeats (4), that a fault at
p_guard shows with probability >= confidence (default 0.99) both

- as a failing case-run (judged against a golden or an expected value): 1 − (1 − p)^(C·R), and
- as a case whose R runs disagree (judged by consistency): 1 − ((1 − p)^R + p^R)^C
  (a case is missed only if all R runs are right, or all R are wrong the same way),

then at least ``min_cases`` (75) cases (a floor: 0 of 300 bounds a rate below 1% at 95% for the
"does not" steps, and a 2.5% fault still shows with 99.95%) and at most ``max_cases`` (120; a cap that bounds the run time
when the race is rare; the output says when it binds). On a 2-CPU machine at block_dim 1 the
unprobed rate is typically 10..30% per case-run and the floor decides: N = 75 x 4 = 300 (at 5%,
10 of 200 in calibration, the cap would: 120 x 4).

Case shapes. By default the chain runs smaller cases than the batch (BT 64..160, H 32..64,
V 256..768, through the operator's CaseSpace): the same kernel, syncs and race (unprobed rate
~20-30% vs ~10-20%), 3-5x less time per case-run. Measured on the shared 2-CPU machine: small
shapes 15-20 s idle, 50 s at load average 15; ``--shapes default`` ~55 s idle, 140 s at that load.

This module is the library (:func:`run_investigation`, :func:`plan_trials`) and the command line.
Exit status: 0 when every conclusion matches the write-up, 1 when one does not, 2 for a usage error,
3 when the device failed, 130/143 when interrupted (the steps done so far are printed).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from mpnpu.errors import UsageError
from mpnpu.harness.operator import Operator
from mpnpu.harness.registry import DEFAULT_OPERATOR, load_operator
from mpnpu.harness.runner import (
    VariantResult,
    available_cpus,
    default_block_dim,
    make_variants,
    run_batch,
)
from mpnpu.harness.stats import detect_probability, trials_to_detect, wilson_interval
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.procutil import exit_code_for_interrupt

from .common import (
    EXIT_FAILED,
    EXIT_OK,
    ArgumentParser,
    float_in,
    non_negative_int,
    positive_int,
    progress_bar,
    run_cli,
    writable_path,
    write_json,
)

PREDICTED = "predicted_logits"

# -- the chain ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepSpec:
    """One step of the write-up as a batch: which probe on which variant, and what the write-up saw."""

    key: str  # "calibration", "O4", "O5a", ..., "root cause", "O9"
    probe: str  # "" = the kernel as shipped
    variant: str  # "incident" | "fixed"; "" for the derived root-cause row
    changed: str  # what the step changes
    judged: str  # how predicted_logits is judged: "golden" | "expected value" | "consistency"
    expect_fault: bool  # the write-up saw the fault at this step
    writeup: str  # what the write-up saw
    conclusion: str  # what follows when the step matches the write-up
    requires: str = ""  # what else must hold for the step to match (shown in the output)


STEPS: tuple[StepSpec, ...] = (
    StepSpec("calibration", "", "incident",
             "nothing: the kernel as shipped (no SyncAll S1 between TargetProcess and CVProcess)",
             "golden", True,
             "O1/O2: a few cases fail intermittently; only predicted_logits, with large relative errors",
             "reproduced: intermittent failures of predicted_logits only; its rate sizes every later step",
             "failing case-runs >= 1, every failure in predicted_logits"),
    StepSpec("O4", "only-predicted", "incident",
             "copy-out of every output except predicted_logits disabled", "golden", True,
             "still fails",
             "memory stomping ruled out: with only predicted_logits written it still fails",
             "failing case-runs >= 1"),
    StepSpec("O5a", "init-zero-only", "incident",
             "predicted_logits only zero-initialised; every later write to it disabled", "expected value", False,
             "every case reads all zeros",
             "init to 0 is right: every case read exactly zeros",
             "every case-run reads exactly 0, consistently"),
    StepSpec("O5b", "init-sentinel", "incident",
             "predicted_logits initialised to the case's constant 1000+index; every later write disabled",
             "expected value", False,
             "every case reads its own constant",
             "initialisation ruled out: every case read exactly its own constant, nothing else writes over it",
             "every case-run reads exactly its constant, consistently"),
    StepSpec("O6", "no-allreduce-copyout", "incident",
             "AllReduceProcess's copy-out of predicted_logits disabled: it holds CVProcess's intermediate",
             "consistency", True,
             "still inconsistent across batch runs",
             "the fault enters in CVProcess: its intermediate result changes between repeats",
             "cases inconsistent >= 1; other outputs right"),
    StepSpec("O7", "pipe-barrier-all", "incident",
             "PipeBarrier<PIPE_ALL> between every step of CVProcess's predicted_logits computation",
             "golden", True,
             "does not fix it",
             "intra-core sync ruled out: with the barriers it still fails",
             "failing case-runs >= 1"),
    StepSpec("O8", "copy-dep=vocab_parallel_logits", "incident",
             "predicted_logits receives the cube result (row's first logit) instead of the gathered logit",
             "expected value", False,
             "copying the cube result is stable",
             "the cube result (vocab_parallel_logits) is read correctly and consistently",
             "every case-run equals the cube result, consistently"),
    StepSpec("O8", "copy-dep=masked_target", "incident",
             "predicted_logits receives masked_target as CVProcess read it (summed over the row's tiles)",
             "consistency", True,
             "copying masked_target is inconsistent; the masked_target output itself is right",
             "masked_target is read stale in CVProcess, although its output is always right",
             "cases inconsistent >= 1; masked_target output never wrong"),
    StepSpec("root cause", "", "",
             "(derived from O6 and O8)", "", True,
             "CVProcess reads masked_target before TargetProcess has finished writing it",
             "root cause: TargetProcess (vector cores) writes masked_target, CVProcess (fed by the cube) "
             "reads it on other cores, and no SyncAll orders them: S1 is missing",
             "O6 and both O8 steps match"),
    StepSpec("O9", "", "fixed",
             "the fix: SyncAll<false>() (S1) restored between TargetProcess and CVProcess; no probe",
             "golden", False,
             "all cases pass",
             "fix verified: 0 failures and 0 inconsistent cases in {n} case-runs",
             "failing case-runs = 0, cases inconsistent = 0"),
)


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

    def describe(self) -> list[str]:
        k, n, r = self.calibration_failed, self.calibration_runs, self.repeats
        lines = [
            f"calibration: {k}/{n} unprobed incident case-runs failed: p = {_pct(self.rate)} "
            f"(95% Wilson {_pct(self.rate_low)}..{_pct(self.rate_high)})",
        ]
        if self.needed_runs is None:
            lines.append(f"N: the race did not show in calibration, so no rate to size the steps by; "
                         f"using the floor, {self.cases} cases x {r} repeats = {self.case_runs} case-runs")
            return lines
        lines.append(
            f"N: sized for p_guard = p_low / {self.safety:g} = {_pct(self.guard_rate)} at {_pct(self.confidence)}: "
            f"trials_to_detect = {self.needed_runs} case-runs (failing case-run rule), "
            f"{self.needed_cases_consistency} cases x {r} repeats (inconsistent case rule); "
            f"floor {self.floor_cases} cases, cap {self.cap_cases}"
        )
        lines.append(
            f"   -> N = {self.cases} cases x {r} repeats = {self.case_runs} case-runs per step; "
            f"P(fault shows) at p_guard: {_prob(self.detect_golden())} as a failing case-run, "
            f"{_prob(self.detect_consistency())} as an inconsistent case; at p: "
            f"{_prob(self.detect_golden(self.rate))} / {_prob(self.detect_consistency(self.rate))}"
        )
        lines.append("   (P(shows) = 1 - (1-p)^N for a step judged per case-run; 1 - ((1-p)^R + p^R)^C for one "
                     "judged by consistency, a case showing it when its R runs disagree)")
        if self.capped:
            lines.append(f"   note: the cap of {self.cap_cases} cases bound N; a step that should show the "
                         f"fault may miss it (raise --max-cases)")
        return lines

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.update(case_runs=self.case_runs, capped=self.capped,
                 detect_at_guard={"failing_case_run": self.detect_golden(),
                                  "inconsistent_case": self.detect_consistency()},
                 detect_at_rate={"failing_case_run": self.detect_golden(self.rate),
                                 "inconsistent_case": self.detect_consistency(self.rate)})
        return d


def consistency_detect_probability(p: float, repeats: int, cases: int) -> float:
    """P(some case's ``repeats`` runs disagree) when each run is wrong with probability ``p``.

    A case is missed only if all its runs are right, or all are wrong in the same way; bounding the
    latter by "all wrong" gives P(miss per case) <= (1 − p)^R + p^R, so this is a lower bound.
    """
    if repeats < 2 or p <= 0.0 or p >= 1.0:
        return 0.0
    miss_case = (1.0 - p) ** repeats + p ** repeats
    return -math.expm1(cases * math.log(miss_case))


def cases_for_consistency(p: float, repeats: int, confidence: float) -> int:
    """Fewest cases of ``repeats`` runs each for :func:`consistency_detect_probability` >= confidence."""
    if not 0.0 < p < 1.0 or repeats < 2:
        raise ValueError(f"need 0 < p < 1 and repeats >= 2, got p={p!r}, repeats={repeats!r}")
    miss_case = (1.0 - p) ** repeats + p ** repeats
    c = max(1, math.ceil(math.log1p(-confidence) / math.log(miss_case)))
    while c > 1 and consistency_detect_probability(p, repeats, c - 1) >= confidence:
        c -= 1
    while consistency_detect_probability(p, repeats, c) < confidence:
        c += 1
    return c


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


# -- results --------------------------------------------------------------------------------------------


@dataclass
class StepResult:
    """What one step ran, saw and concluded."""

    spec: StepSpec
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
    hazards_text: str = ""  # racecheck report (when asked for)
    batch: dict[str, Any] = field(default_factory=dict, repr=False)  # the VariantResult as data

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def label(self) -> str:
        if self.spec.key == "O8":
            return "O8 vocab" if self.spec.probe.endswith("vocab_parallel_logits") else "O8 masked"
        return self.spec.key

    @property
    def conclusion(self) -> str:
        if self.interrupted:
            return "interrupted before the step finished"
        if self.matches:
            return self.spec.conclusion.format(n=self.case_runs)
        what = "shows the fault" if self.shows_fault else "does not show the fault"
        return (f"DOES NOT MATCH the write-up ({self.spec.writeup}): the step {what}; "
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


@dataclass
class Investigation:
    """The whole chain: the plan from the calibration and one StepResult per step run."""

    operator: str
    seed: int
    block_dim: int
    cpus: int
    shapes: str
    racecheck: bool
    steps: list[StepResult] = field(default_factory=list)
    plan: Plan | None = None
    elapsed_s: float = 0.0
    interrupted: bool = False
    interrupt: BaseException | None = field(default=None, repr=False)

    @property
    def complete(self) -> bool:
        return not self.interrupted and len(self.steps) == len(STEPS)

    @property
    def all_match(self) -> bool:
        return self.complete and all(s.matches for s in self.steps)

    def step(self, key: str, probe: str | None = None) -> StepResult:
        for s in self.steps:
            if s.spec.key == key and (probe is None or s.spec.probe == probe):
                return s
        raise KeyError(key if probe is None else f"{key} {probe}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator, "seed": self.seed, "block_dim": self.block_dim,
            "core_processes": 3 * self.block_dim, "cpus": self.cpus, "shapes": self.shapes,
            "racecheck": self.racecheck, "rule": RULE, "plan": self.plan.to_dict() if self.plan else None,
            "steps": [s.to_dict() for s in self.steps], "all_match": self.all_match,
            "interrupted": self.interrupted, "elapsed_s": self.elapsed_s,
        }


RULE = ("a step shows the fault when >= 1 of its N case-runs fails its judgement (golden or expected "
        "value) or >= 1 of its cases gives different predicted_logits across its repeats; it does not "
        "when that happens in 0 of N")


def _evaluate(spec: StepSpec, v: VariantResult, cases: int) -> StepResult:
    res = StepResult(
        spec, cases=cases, repeats=v.repeats, case_runs=v.case_runs, failed_case_runs=v.failed_case_runs,
        failed_by_output=dict(v.failed_by_output), inconsistent_cases=list(v.inconsistent_cases),
        min_rel_error=v.min_rel_error, max_rel_error=v.max_rel_error, launch_errors=v.launch_errors,
        elapsed_s=v.elapsed_s, batch=v.to_dict(),
    )
    if v.hazard_log is not None:
        res.hazards_text = v.hazard_log.format_text()
    failed, incons = v.failed_case_runs, len(v.inconsistent_cases)
    others = {k: n for k, n in v.failed_by_output.items() if k != PREDICTED}
    res.shows_fault = failed > 0 or incons > 0
    key, probe = spec.key, spec.probe
    if key in ("calibration", "O4", "O7"):
        res.matches = failed > 0 and not others
    elif key in ("O5a", "O5b", "O9") or probe == "copy-dep=vocab_parallel_logits":
        res.matches = not res.shows_fault
    elif key == "O6" or probe == "copy-dep=masked_target":
        res.matches = incons > 0 and not others
    res.seen = _seen(spec, res, others)
    return res


def _seen(spec: StepSpec, r: StepResult, others: dict[str, int]) -> str:
    n, c = r.case_runs, r.cases
    incons = f"cases inconsistent {len(r.inconsistent_cases)}/{c}"
    other = ", ".join(f"{k} {n_}" for k, n_ in sorted(others.items()))
    other_txt = f"other outputs failing: {other}" if others else "other outputs right"
    if spec.judged == "consistency":
        extra = ""
        if spec.probe == "copy-dep=masked_target":
            extra = f"; wrong vs n_tiles_n*masked_target {r.failed_by_output.get(PREDICTED, 0)}/{n}"
            other_txt = "masked_target output right" if "masked_target" not in others else other_txt
        return f"{incons}{extra}; {other_txt}"
    if spec.judged == "expected value":
        exact = n - r.failed_by_output.get(PREDICTED, 0)
        what = {"O5a": "read exactly 0", "O5b": "read exactly their constant"}.get(spec.key, "equal the cube result")
        return f"{exact}/{n} case-runs {what}; {incons}; {other_txt}"
    failing = f"failing {r.failed_case_runs}/{n} ({_pct(r.failed_case_runs / n if n else 0.0)})"
    if r.failed_case_runs:
        outs = ", ".join(f"{k} {n_}" for k, n_ in sorted(r.failed_by_output.items()))
        failing += f" [{outs}]"
        if r.max_rel_error is not None:
            failing += f", rel err {r.min_rel_error:.3g}..{r.max_rel_error:.3g}"
    return f"{failing}; {incons}"


def _root_cause(spec: StepSpec, steps: list[StepResult]) -> StepResult:
    needed = [s for s in steps if s.spec.key in ("O6", "O8")]
    ok = len(needed) == 3 and all(s.matches for s in needed)
    res = StepResult(spec, shows_fault=ok, matches=ok)
    if ok:
        mt = next(s for s in needed if s.spec.probe == "copy-dep=masked_target")
        res.seen = (f"O6 + O8: only CVProcess's read of masked_target varies "
                    f"({len(mt.inconsistent_cases)} cases), its inputs from the cube do not")
    else:
        res.seen = "O6/O8 did not match: cannot name the cause"
    return res


# -- the run --------------------------------------------------------------------------------------------


def run_investigation(
    op: Operator | None = None,
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
    shapes: str = "small",
    device: Device | None = None,
    options: RuntimeOptions = DEFAULT_OPTIONS,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    on_step: Callable[[StepResult], None] | None = None,
) -> Investigation:
    """Run the calibration and every step of :data:`STEPS` on one device; return what was seen.

    The calibration runs rounds of ``calibration_cases`` x ``repeats`` unprobed incident case-runs
    until it has seen ``calibration_min_failures`` failures or run ``calibration_max_rounds`` rounds
    (a rate measured from a handful of failures is too rough to size the steps by).
    ``shapes`` "small" restricts the operator's CaseSpace to smaller cases (faster; the race stays
    real). ``progress(n)`` after every n case-runs; ``on_total(total)`` whenever the planned number
    of case-runs changes; ``on_step`` after each step. Ctrl-C stops the chain: the result has
    ``interrupted`` set and holds the steps done so far.
    """
    for name, value, low in (("calibration_cases", calibration_cases, 1), ("seed", seed, 0),
                             ("calibration_min_failures", calibration_min_failures, 1),
                             ("calibration_max_rounds", calibration_max_rounds, 1),
                             ("repeats", repeats, 2), ("min_cases", min_cases, 1), ("max_cases", max_cases, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise UsageError(f"{name} must be an integer >= {low}, got {value!r}")
    plan_trials(1, 2, repeats=repeats, confidence=confidence, safety=safety, min_cases=min_cases,
                max_cases=max_cases)  # validates the sizing arguments before any launch
    op = op if op is not None else load_operator(DEFAULT_OPERATOR)
    op = with_shapes(op, shapes)
    own = device is None
    start = time.perf_counter()
    inv = Investigation(op.name, seed, 0, available_cpus(), shapes, racecheck)
    round_runs = calibration_cases * repeats
    later = sum(1 for s in STEPS if s.variant) - 1  # batch steps after the calibration
    done_runs = 0

    def total(planned_per_step: int) -> None:
        if on_total is not None:
            on_total(done_runs + later * planned_per_step)

    def run(spec: StepSpec, cases: int):
        nonlocal done_runs
        batch = run_batch(op, cases=cases, repeat=repeats, variants=make_variants(op, [spec.variant]),
                          seed=seed, probe=spec.probe, racecheck=racecheck, device=device, progress=progress)
        done_runs += batch.variants[spec.variant].case_runs
        return batch

    if on_total is not None:
        on_total(round_runs + later * min_cases * repeats)
    try:
        if device is None:
            device = Device(block_dim or default_block_dim(), options=options)
        inv.block_dim = device.block_dim
        for spec in STEPS:
            if spec.key == "root cause":
                res = _root_cause(spec, inv.steps)
            else:
                rounds = []
                while True:
                    batch = run(spec, calibration_cases if inv.plan is None else inv.plan.cases)
                    rounds.append(batch.variants[spec.variant])
                    if spec.key != "calibration" or batch.interrupted:
                        break
                    failed = sum(v.failed_case_runs for v in rounds)
                    if failed >= calibration_min_failures or len(rounds) >= calibration_max_rounds:
                        break
                    total(min_cases * repeats)
                merged = _merge(rounds)
                res = _evaluate(spec, merged, batch.cases)
                if batch.interrupted:
                    res.interrupted, res.matches = True, False
                    inv.steps.append(res)
                    inv.interrupted, inv.interrupt = True, batch.interrupt or KeyboardInterrupt()
                    break
                if spec.key == "calibration":
                    inv.plan = plan_trials(res.failed_case_runs, res.case_runs, repeats=repeats,
                                           confidence=confidence, safety=safety, min_cases=min_cases,
                                           max_cases=max_cases)
                    total(inv.plan.case_runs)
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


def _merge(rounds: list[VariantResult]) -> VariantResult:
    """Rounds of the same cases as one result (their repeats one after another)."""
    if len(rounds) == 1:
        return rounds[0]
    first = rounds[0]
    out = VariantResult(first.variant, sum(v.repeats for v in rounds))
    out.failing_cases_by_repeat = [cases for v in rounds for cases in v.failing_cases_by_repeat]
    out.hazard_log = first.hazard_log
    for v in rounds:
        out.case_runs += v.case_runs
        out.failed_case_runs += v.failed_case_runs
        out.failed_by_output.update(v.failed_by_output)
        out.launch_errors += v.launch_errors
        out.first_launch_error = out.first_launch_error or v.first_launch_error
        out.elapsed_s += v.elapsed_s
        for bound, pick in (("min_rel_error", min), ("max_rel_error", max)):
            a, b = getattr(out, bound), getattr(v, bound)
            setattr(out, bound, b if a is None else a if b is None else pick(a, b))
        for case, prints in v.fingerprints.items():
            out.fingerprints.setdefault(case, set()).update(prints)
    return out


SMALL_SHAPES = dict(bt=(64, 160), h=(32, 64), v=(256, 768))


def with_shapes(op: Operator, shapes: str) -> Operator:
    """``op`` with its case space restricted to the named shapes ("default" leaves it as it is)."""
    if shapes == "default":
        return op
    if shapes != "small":
        raise UsageError(f"unknown shapes {shapes!r}; known: default, small")
    space = getattr(op, "space", None)
    if space is None:
        raise UsageError(f"operator {op.name} has no case space to restrict")
    return dataclasses.replace(op, space=dataclasses.replace(space, **SMALL_SHAPES))


# -- rendering --------------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def _prob(x: float) -> str:
    """A detection probability: never rounded up to a certainty it is not."""
    return ">99.99%" if x >= 0.9999 else f"{100 * x:.4g}%"


COLUMNS = (("step", 12), ("what was changed", 34), ("what was seen", 40), ("conclusion", 44))


def _rows(inv: Investigation) -> list[tuple[str, str, str, str]]:
    rows = []
    for s in inv.steps:
        variant = "" if not s.spec.variant else f" [{s.spec.variant}]"
        changed = (f"--probe {s.spec.probe}: " if s.spec.probe else "") + s.spec.changed
        mark = "ok: " if s.matches else ("" if s.interrupted else "NO: ")
        rows.append((s.label + variant, changed, s.seen, mark + s.conclusion))
    return rows


def header_lines(inv: Investigation) -> list[str]:
    shapes = "default case shapes" if inv.shapes == "default" else \
        f"small case shapes ({', '.join(f'{k.upper()} {a}..{b}' for k, (a, b) in SMALL_SHAPES.items())})"
    lines = [
        f"mpnpu investigate: {inv.operator}, incident kernel (S1 dropped), seed {inv.seed}, block_dim "
        f"{inv.block_dim} ({3 * inv.block_dim} core processes on {inv.cpus} CPUs), {shapes}",
        f"rule: {RULE}.",
    ]
    if inv.plan is not None:
        lines.extend(inv.plan.describe())
        lines.append(f"   each step runs the same seeded cases, {inv.plan.repeats} repeats each, back to back on one "
                     f"device; 'cases inconsistent' counts cases whose predicted_logits bytes differ between repeats")
    return lines


def format_text(inv: Investigation) -> str:
    lines = header_lines(inv)
    lines.append("")
    widths = [w for _, w in COLUMNS]
    sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines.append(sep)
    lines.extend(_table_row([name for name, _ in COLUMNS], widths))
    lines.append(sep.replace("-", "="))
    for row in _rows(inv):
        lines.extend(_table_row(row, widths))
        lines.append(sep)
    if inv.racecheck:
        for s in inv.steps:
            if s.hazards_text:
                lines.append(f"racecheck, {s.label} [{s.spec.variant}]:")
                lines.extend("  " + line for line in s.hazards_text.splitlines())
    lines.append("")
    lines.append(verdict_line(inv))
    lines.append(f"({inv.elapsed_s:.1f} s)")
    return "\n".join(lines)


def _table_row(cells: Sequence[str], widths: Sequence[int]) -> list[str]:
    wrapped = [textwrap.wrap(c, w, break_long_words=True, break_on_hyphens=False) or [""]
               for c, w in zip(cells, widths)]
    height = max(len(w) for w in wrapped)
    out = []
    for i in range(height):
        parts = [f" {(w[i] if i < len(w) else ''):<{width}} " for w, width in zip(wrapped, widths)]
        out.append("|" + "|".join(parts) + "|")
    return out


def verdict_line(inv: Investigation) -> str:
    if inv.interrupted:
        done = sum(1 for s in inv.steps if not s.interrupted)
        return f"INTERRUPTED after {done} of {len(STEPS)} steps (the steps above are the ones done)"
    bad = [s.label for s in inv.steps if not s.matches]
    if not bad:
        return f"verdict: OK: every conclusion matches the write-up ({len(inv.steps)}/{len(STEPS)} steps)"
    return f"verdict: NOT OK: {len(bad)} step(s) do not match the write-up: {', '.join(bad)}"


def format_markdown(inv: Investigation) -> str:
    lines = ["# FLOMS incident: the write-up's diagnosis, replayed", ""]
    lines.extend(f"- {line.strip().removeprefix('-> ')}" for line in header_lines(inv))
    lines.append("")
    lines.append("| " + " | ".join(name for name, _ in COLUMNS) + " |")
    lines.append("|" + "|".join("---" for _ in COLUMNS) + "|")
    for row in _rows(inv):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    if inv.racecheck:
        for s in inv.steps:
            if s.hazards_text:
                lines += ["", f"racecheck, {s.label} [{s.spec.variant}]:", "", "```", s.hazards_text, "```"]
    lines += ["", f"**{verdict_line(inv)}** ({inv.elapsed_s:.1f} s)", ""]
    return "\n".join(lines)


# -- command line ---------------------------------------------------------------------------------------


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="python -m mpnpu.investigate",
        description=(
            "Replay the incident write-up's diagnosis on the incident kernel: calibrate the failure "
            "rate, then run each step as a probe (O4 only-predicted, O5a init-zero-only, O5b init-sentinel, "
            "O6 no-allreduce-copyout, O7 pipe-barrier-all, O8 copy-dep=vocab_parallel_logits and "
            "copy-dep=masked_target) and the fix (O9: the fixed kernel), each sized so that a fault at the "
            "calibrated rate would show with >= 99% probability, and check every conclusion against the "
            "write-up. Exit 0 when all match, 1 when one does not, 2 for usage errors, 3 for device errors, "
            "130 when interrupted."
        ),
        epilog="Each step is also runnable alone: python -m mpnpu.batch --probe NAME --variant incident",
    )
    p.add_argument("--seed", type=non_negative_int, default=0, help="case stream seed (default 0)")
    p.add_argument("--block-dim", type=positive_int, default=None,
                   help=f"AI cores (default: one per two CPUs, here {default_block_dim()})")
    p.add_argument("--repeats", type=_repeats, default=4,
                   help="repeats of every case in a step (>= 2; consistency needs them; default 4)")
    p.add_argument("--calibration-cases", type=positive_int, default=50,
                   help="cases in the calibration step (x repeats case-runs; default 50)")
    p.add_argument("--min-cases", type=positive_int, default=75, help="floor on cases per step (default 75)")
    p.add_argument("--max-cases", type=positive_int, default=120,
                   help="cap on cases per step, which bounds the run time when the race is rare (default 120)")
    p.add_argument("--confidence", type=float_in(0.0, 1.0, low_open=True, what="a probability"), default=0.99,
                   help="probability with which each step must show a fault at the guarded rate (default 0.99)")
    p.add_argument("--safety", type=float_in(1.0), default=4.0,
                   help="steps are sized for the calibrated rate's 95%% lower bound divided by this (default 4)")
    p.add_argument("--shapes", choices=("small", "default"), default="small",
                   help="case shapes: small (BT 64..160, H 32..64, V 256..768; the default: 3-5x faster "
                        "than the batch's, the same kernel and the same race) or default (the operator's "
                        "CaseSpace, as python -m mpnpu.batch uses)")
    p.add_argument("--racecheck", action="store_true",
                   help="trace every GM access and print the hazards found in each step")
    p.add_argument("--json", type=writable_path, default=None, metavar="PATH", help="also write the results as JSON")
    p.add_argument("--markdown", type=writable_path, default=None, metavar="PATH",
                   help="also write the table as Markdown")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--op", default=DEFAULT_OPERATOR, help=_suppress())
    return p


def _suppress() -> str:
    import argparse

    return argparse.SUPPRESS


def _repeats(text: str) -> int:
    import argparse

    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError("expected at least 2 (consistency compares repeats of a case)")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.min_cases > args.max_cases:
        raise UsageError(f"--min-cases {args.min_cases} exceeds --max-cases {args.max_cases}")
    op = load_operator(args.op)
    with progress_bar(args.calibration_cases * args.repeats, "case-runs", disable=args.quiet) as bar:
        def set_total(total: int) -> None:
            bar.total = total
            bar.refresh()

        def step_done(step: StepResult) -> None:
            bar.set_postfix_str(f"{step.label}: {'ok' if step.matches else 'NO'}", refresh=True)

        inv = run_investigation(
            op, seed=args.seed, block_dim=args.block_dim, repeats=args.repeats,
            calibration_cases=args.calibration_cases, min_cases=args.min_cases, max_cases=args.max_cases,
            confidence=args.confidence, safety=args.safety, racecheck=args.racecheck, shapes=args.shapes,
            progress=bar.update, on_total=set_total, on_step=step_done,
        )
    if args.json:
        write_json(args.json, inv.to_dict())
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(format_markdown(inv))
    print(format_text(inv), flush=True)
    if inv.interrupt is not None:
        return exit_code_for_interrupt(inv.interrupt)
    return EXIT_OK if inv.all_match else EXIT_FAILED


def cli() -> None:
    """Console-script entry point (``mpnpu-investigate``)."""
    sys.exit(run_cli(main, prog="mpnpu-investigate"))


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="mpnpu.investigate"))
