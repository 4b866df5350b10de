"""FLOMS's diagnosis chain (docs/incident.md, O1–O9) as data for ``python -m mpnpu.investigate``.

Every step of the original diagnosis is a probe on the kernel (see probes.py) run as a batch on the
incident kernel (S1 dropped), judged as the original diagnosis judged it, and compared with what it
saw. The chain::

    calibration  no probe              the unprobed incident rate p (O1/O2), which sizes every later step
    O4   only-predicted                stomping ruled out: it still fails
    O5a  init-zero-only                every case reads exactly 0
    O5b  init-sentinel                 every case reads exactly its own constant: init ruled out
    O6   no-allreduce-copyout          CVProcess's intermediate is inconsistent: the fault enters there
    O7   pipe-barrier-all              the intra-core barrier (it really drains the core's pipes) does not
                                       help: it still fails
    O8   copy-dep=vocab_parallel_logits   the cube result is read consistently
    O8   copy-dep=masked_target        masked_target is read inconsistently (its own output is right)
    root cause (derived)               missing SyncAll between TargetProcess and CVProcess
    O9   the fixed variant, no probe   0 failures in N

How many case-runs each step gets, and the rule that decides "shows the fault", are the generic
chain's (:mod:`mpnpu.harness.chain`). On a 2-CPU machine at block_dim 1 the unprobed rate is
typically 10..30% per case-run and the floor decides: N = 75 x 4 = 300 (at 5%, 10 of 200 in
calibration, the cap would: 120 x 4).

Case shapes. By default the chain runs smaller cases than the batch (BT 64..160, H 32..64,
V 256..768, through the operator's CaseSpace): the same kernel, syncs and race (unprobed rate
~20-30% vs ~10-20%), 3-5x less time per case-run. Measured on the shared 2-CPU machine: small
shapes 15-20 s idle, 50 s at load average 15; ``--shapes default`` ~55 s idle, 140 s at that load.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from mpnpu import Diagnosis, Shapes, Step, StepResult
from mpnpu.harness.stats import pct as _pct

PREDICTED = "predicted_logits"
SMALL_SHAPES = dict(bt=(64, 160), h=(32, 64), v=(256, 768))


def _others(r: StepResult) -> dict[str, int]:
    """Failing outputs other than predicted_logits (the incident touches predicted_logits only)."""
    return {k: n for k, n in r.failed_by_output.items() if k != PREDICTED}


# -- expectations: does this run see what the original diagnosis saw? -----------------------------------


def fails_in_predicted_only(r: StepResult, earlier: Sequence[StepResult]) -> bool:
    return r.failed_case_runs > 0 and not _others(r)


def shows_no_fault(r: StepResult, earlier: Sequence[StepResult]) -> bool:
    return not r.shows_fault


def inconsistent_in_predicted_only(r: StepResult, earlier: Sequence[StepResult]) -> bool:
    return len(r.inconsistent_cases) > 0 and not _others(r)


def o6_and_o8_match(r: StepResult, earlier: Sequence[StepResult]) -> bool:
    needed = [s for s in earlier if s.key in ("O6", "O8")]
    return len(needed) == 3 and all(s.matches for s in needed)


# -- what was seen, in one line --------------------------------------------------------------------------


def _incons(r: StepResult) -> str:
    return f"cases inconsistent {len(r.inconsistent_cases)}/{r.cases}"


def _other_outputs(r: StepResult) -> str:
    others = _others(r)
    return "other outputs failing: " + ", ".join(f"{k} {n}" for k, n in sorted(others.items())) if others \
        else "other outputs right"


def seen_golden(r: StepResult, earlier: Sequence[StepResult]) -> str:
    n = r.case_runs
    failing = f"failing {r.failed_case_runs}/{n} ({_pct(r.failed_case_runs / n if n else 0.0)})"
    if r.failed_case_runs:
        outs = ", ".join(f"{k} {n_}" for k, n_ in sorted(r.failed_by_output.items()))
        failing += f" [{outs}]"
        if r.max_rel_error is not None:
            failing += f", rel err {r.min_rel_error:.3g}..{r.max_rel_error:.3g}"
    return f"{failing}; {_incons(r)}"


def _seen_expected(what: str):
    def seen(r: StepResult, earlier: Sequence[StepResult]) -> str:
        exact = r.case_runs - r.failed_by_output.get(PREDICTED, 0)
        return f"{exact}/{r.case_runs} case-runs {what}; {_incons(r)}; {_other_outputs(r)}"
    return seen


def seen_consistency(r: StepResult, earlier: Sequence[StepResult]) -> str:
    return f"{_incons(r)}; {_other_outputs(r)}"


def seen_masked_target(r: StepResult, earlier: Sequence[StepResult]) -> str:
    wrong = f"wrong vs n_tiles_n*masked_target {r.failed_by_output.get(PREDICTED, 0)}/{r.case_runs}"
    right = "masked_target output right" if "masked_target" not in _others(r) else _other_outputs(r)
    return f"{_incons(r)}; {wrong}; {right}"


def seen_root_cause(r: StepResult, earlier: Sequence[StepResult]) -> str:
    if not r.matches:
        return "O6/O8 did not match: cannot name the cause"
    mt = next(s for s in earlier if s.spec.probe == "copy-dep=masked_target")
    return (f"O6 + O8: only CVProcess's read of masked_target varies "
            f"({len(mt.inconsistent_cases)} cases), its inputs from the cube do not")


# -- the chain ---------------------------------------------------------------------------------------------


STEPS: tuple[Step, ...] = (
    Step("calibration", "", "incident",
         "nothing: the kernel as shipped (no SyncAll S1 between TargetProcess and CVProcess)",
         "golden", True,
         "O1/O2: a few cases fail intermittently; only predicted_logits, with large relative errors",
         "reproduced: intermittent failures of predicted_logits only; its rate sizes every later step",
         fails_in_predicted_only, seen_golden,
         "failing case-runs >= 1, every failure in predicted_logits", calibrates=True),
    Step("O4", "only-predicted", "incident",
         "copy-out of every output except predicted_logits disabled", "golden", True,
         "still fails",
         "memory stomping ruled out: with only predicted_logits written it still fails",
         fails_in_predicted_only, seen_golden, "failing case-runs >= 1"),
    Step("O5a", "init-zero-only", "incident",
         "predicted_logits only zero-initialised; every later write to it disabled", "expected value", False,
         "every case reads all zeros",
         "init to 0 is right: every case read exactly zeros",
         shows_no_fault, _seen_expected("read exactly 0"), "every case-run reads exactly 0, consistently"),
    Step("O5b", "init-sentinel", "incident",
         "predicted_logits initialised to the case's constant 1000+index; every later write disabled",
         "expected value", False,
         "every case reads its own constant",
         "initialisation ruled out: every case read exactly its own constant, nothing else writes over it",
         shows_no_fault, _seen_expected("read exactly their constant"),
         "every case-run reads exactly its constant, consistently"),
    Step("O6", "no-allreduce-copyout", "incident",
         "AllReduceProcess's copy-out of predicted_logits disabled: it holds CVProcess's intermediate",
         "consistency", True,
         "still inconsistent across batch runs",
         "the fault enters in CVProcess: its intermediate result changes between repeats",
         inconsistent_in_predicted_only, seen_consistency, "cases inconsistent >= 1; other outputs right"),
    Step("O7", "pipe-barrier-all", "incident",
         "PipeBarrier<PIPE_ALL> between every step of CVProcess's predicted_logits computation "
         "(each drains the core's asynchronous pipes)",
         "golden", True,
         "does not fix it",
         "intra-core sync ruled out: the barriers order each core's pipes, and it still fails",
         fails_in_predicted_only, seen_golden, "failing case-runs >= 1"),
    Step("O8", "copy-dep=vocab_parallel_logits", "incident",
         "predicted_logits receives the cube result (row's first logit) instead of the gathered logit",
         "expected value", False,
         "copying the cube result is stable",
         "the cube result (vocab_parallel_logits) is read correctly and consistently",
         shows_no_fault, _seen_expected("equal the cube result"),
         "every case-run equals the cube result, consistently", label="O8 vocab"),
    Step("O8", "copy-dep=masked_target", "incident",
         "predicted_logits receives masked_target as CVProcess read it (summed over the row's tiles)",
         "consistency", True,
         "copying masked_target is inconsistent; the masked_target output itself is right",
         "masked_target is read stale in CVProcess, although its output is always right",
         inconsistent_in_predicted_only, seen_masked_target,
         "cases inconsistent >= 1; masked_target output never wrong", label="O8 masked"),
    Step("root cause", "", "",
         "(derived from O6 and O8)", "", True,
         "CVProcess reads masked_target before TargetProcess has finished writing it",
         "root cause: TargetProcess (vector cores) writes masked_target, CVProcess (fed by the cube) "
         "reads it on other cores, and no SyncAll orders them: S1 is missing",
         o6_and_o8_match, seen_root_cause, "O6 and both O8 steps match"),
    Step("O9", "", "fixed",
         "the fix: SyncAll<false>() (S1) restored between TargetProcess and CVProcess; no probe",
         "golden", False,
         "all cases pass",
         "fix verified: 0 failures and 0 inconsistent cases in {n} case-runs",
         shows_no_fault, seen_golden, "failing case-runs = 0, cases inconsistent = 0"),
)


def _small(op: Any) -> Any:
    return dataclasses.replace(op, space=dataclasses.replace(op.space, **SMALL_SHAPES))


DIAGNOSIS = Diagnosis(
    title="FLOMS incident: the write-up's diagnosis, replayed",
    subject="incident kernel (S1 dropped)",
    steps=STEPS,
    rule=("a step shows the fault when >= 1 of its N case-runs fails its judgement (golden or expected "
          "value) or >= 1 of its cases gives different predicted_logits across its repeats; it does not "
          "when that happens in 0 of N"),
    consistency_note="'cases inconsistent' counts cases whose predicted_logits bytes differ between repeats",
    reference="the write-up",
    shapes={"small": Shapes("small case shapes ("
                            + ", ".join(f"{k.upper()} {a}..{b}" for k, (a, b) in SMALL_SHAPES.items()) + ")",
                            _small)},
    default_shapes="small",
)
