"""Race-directed reproduction: turn each hazard racecheck reports into a demonstrated outcome.

Modelled on race-directed random testing (RaceFuzzer): for every hazard of a variant, a few
*directed runs* each take one concrete access pair behind the hazard and rerun the case with a
:class:`~mpnpu.runtime.hold.HoldPlan` that holds the core of the first access just before it until
the second access has happened. The pair really happens in the reversed order, in the core
processes, whatever the machine's load; or the hold ends by itself because a sync orders the pair
(reported *ordered*: never a hang, never a false report). Each run is judged against the golden:

- **harmful**: reversed in some run, and an output differed from the golden (named);
- **benign**: reversed, outputs right every time;
- **ordered**: never reversed (the pair cannot happen the other way round).

::

    scout: traced launches of a few cases ─► hazards + concrete pairs per case (racecheck.directed)
        │
        ▼  for run i of hazard h: seed s_i ─► (case, pair) ─► HoldPlan
    fresh device ─► predecessor case (every sync) ─► the case, variant's syncs dropped, held ─► judge
                                                    └► the same plan on the fixed variant ─► judge (must pass)

Every directed run uses a fresh device whose GM has held only the predecessor case, so the stale
data a reversed read sees — and so the run's result — depends on its seed alone: :func:`replay`
reruns it. Holds change only *when* a core runs; the kernel's code and data are untouched.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from mpnpu.errors import BaselineError, LaunchError, UsageError
from mpnpu.harness.runner import BatchResult
from mpnpu.operators.protocol import Operator, device_for, make_case_for, topology_for
from mpnpu.racecheck.directed import HazardKey, Scout, find_hazard, plan_for, run_seed
from mpnpu.racecheck.hazards import Hazard, HazardLog, group_by_root, key_dict
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.hold import DEFAULT_BOUND_S, DEFAULT_QUIET_S, NOT_REACHED, ORDERED, REVERSED, HoldPlan
from mpnpu.runtime.procutil import blas_threads

HARMFUL, BENIGN, NONE, UNCONFIRMED = "harmful", "benign", "ordered", "unconfirmed"
CONSEQUENCE = "consequence"  # of another hazard: not a bug of its own (Confirmation.root)
#: why a hazard is a consequence: racecheck's rule on the scouted traces, or its directed runs
BY_RACECHECK, BY_DIRECTED_RUNS = "racecheck", "directed runs"
LAUNCH_FAILED = "launch-failed"  # outcome of a directed run whose launch raised
DEFAULT_RUNS = 10
DEFAULT_SCOUT_CASES = 4
DIRECTED_SEGMENT_BYTES = 8 << 20


@dataclass
class DirectedRun:
    """One held launch of one case, and how it was judged."""

    seed: int
    case_index: int
    plan: HoldPlan
    held: str  # label of the held core
    partner: str
    outcome: str  # REVERSED, ORDERED, NOT_REACHED or LAUNCH_FAILED
    passed: bool
    failed_outputs: list[str] = field(default_factory=list)
    error: str = ""  # the launch failed (e.g. a dropped flag wait overflowed a counter)
    held_s: float = 0.0
    early: bool = False  # ordered: released because no other core could move
    fingerprint: bytes = b""

    @property
    def where(self) -> str:
        p = self.plan
        return (f"held {self.held} before {p.held_site} (access #{p.held_occurrence + 1} there) until "
                f"{self.partner} passed {p.partner_site} (access #{p.partner_occurrence + 1})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed, "case": self.case_index, "plan": self.plan.to_dict(), "held": self.held,
            "partner": self.partner, "where": self.where, "outcome": self.outcome, "passed": self.passed,
            "failed_outputs": self.failed_outputs, "error": self.error, "held_s": self.held_s,
            "early": self.early, "fingerprint": self.fingerprint.hex(),
        }


@dataclass
class Confirmation:
    """The directed runs of one hazard, on the variant and (same plans) on the fixed kernel."""

    hazard: Hazard
    runs: list[DirectedRun]
    fixed_runs: list[DirectedRun] = field(default_factory=list)
    #: the key of the hazard this one is a consequence of (None: a root cause), and why
    root: HazardKey | None = None
    root_by: str = ""

    @property
    def reversed(self) -> int:
        return sum(r.outcome == REVERSED for r in self.runs)

    @property
    def harmful_runs(self) -> int:
        """Runs in which the pair was reversed and the result was wrong."""
        return sum(r.outcome == REVERSED and not r.passed for r in self.runs)

    @property
    def failed_outputs(self) -> Counter[str]:
        c: Counter[str] = Counter()
        for r in self.runs:
            if r.outcome == REVERSED and not r.passed:
                c.update(r.failed_outputs or ["<launch error>"])
        return c

    @property
    def verdict(self) -> str:
        if self.root is not None:
            return CONSEQUENCE
        if self.harmful_runs:
            return HARMFUL
        if self.reversed:
            return BENIGN
        # "ordered" only when every hold ended because the pair could not be reversed; a hold
        # whose core never reached its access (or a launch that failed) proves nothing.
        return NONE if all(r.outcome == ORDERED for r in self.runs) else UNCONFIRMED

    @property
    def replay_seed(self) -> int | None:
        """A seed that shows the verdict: the first harmful run's, else the first reversed run's."""
        wants: tuple[Callable[[DirectedRun], bool], ...] = (lambda r: r.outcome == REVERSED and not r.passed,
                                                           lambda r: r.outcome == REVERSED)
        for want in wants:
            for r in self.runs:
                if want(r):
                    return r.seed
        return self.runs[0].seed if self.runs else None

    @property
    def fixed_failures(self) -> int:
        return sum(not r.passed for r in self.fixed_runs)

    @property
    def fails_only_with_the_drops(self) -> bool:
        """Harmful here, while the same hold plans on the fixed kernel reversed the pair every time
        (nothing orders it there either) and every result was right: the harm needs what the dropped
        syncs let happen elsewhere, another hazard reversed too."""
        return (self.harmful_runs > 0 and bool(self.fixed_runs)
                and all(r.outcome == REVERSED and r.passed for r in self.fixed_runs))

    def to_dict(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"root": key_dict(self.root), "root_by": self.root_by} if self.root else {}
        return {
            **extra,
            "hazard": self.hazard.to_dict(),
            "verdict": self.verdict,
            "runs": len(self.runs),
            "reversed": self.reversed,
            "harmful_runs": self.harmful_runs,
            "failed_outputs": dict(self.failed_outputs),
            "replay_seed": self.replay_seed,
            "fixed_runs": len(self.fixed_runs),
            "fixed_failures": self.fixed_failures,
            "directed_runs": [r.to_dict() for r in self.runs],
            "fixed_directed_runs": [r.to_dict() for r in self.fixed_runs],
        }


@dataclass
class ConfirmResult:
    """Directed reproduction of every hazard one variant showed in the scouted cases."""

    operator: str
    dropped: frozenset[str]
    inserted: tuple[str, ...]
    block_dim: int
    case_seed: int
    scout_cases: tuple[int, ...]
    confirmations: list[Confirmation]
    hazard_log: HazardLog
    elapsed_s: float = 0.0
    placement: str = ""
    scout_errors: list[str] = field(default_factory=list)
    seed: int = 0  # base seed of the directed runs' choices
    operator_ref: str = ""  # how to name the operator on a command line (--op), when known

    @property
    def fixed_failures(self) -> int:
        return sum(c.fixed_failures for c in self.confirmations)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator, "dropped_syncs": sorted(self.dropped), "inserted_syncs": list(self.inserted),
            "block_dim": self.block_dim, "case_seed": self.case_seed, "scout_cases": list(self.scout_cases),
            "placement": self.placement, "elapsed_s": self.elapsed_s, "fixed_failures": self.fixed_failures,
            "scout_errors": self.scout_errors,
            "hazards": [c.to_dict() for c in self.confirmations],
        }


@dataclass
class ConfirmedBatch:
    """A batch and the directed reproduction of the hazards of each of its variants that drop sync
    points (``mpnpu batch --racecheck --confirm``), or the line that says why there is none."""

    batch: BatchResult
    confirmed: dict[str, ConfirmResult] = field(default_factory=dict)  # variant name -> its reproduction
    refused: str = ""  # why the directed runs were refused (their baseline, the fixed variant, failed)

    @property
    def expected_clean_are_clean(self) -> bool:
        """The batch's verdict, and no hold plan made the fixed kernel fail (that would be a bug in
        the tool: never OK then), and the directed runs were not refused."""
        held_clean = all(c.fixed_failures == 0 for c in self.confirmed.values()) and not self.refused
        return self.batch.expected_clean_are_clean and held_clean

    def verdict_line(self) -> str:
        return self.batch.verdict_line() + (f"\n{self.refused}" if self.refused else "")

    def to_dict(self) -> dict[str, Any]:
        data = self.batch.to_dict()
        data["confirm"] = {name: c.to_dict() for name, c in self.confirmed.items()}
        if self.refused:
            data["confirm_refused"] = self.refused
        return data


def confirm_batch(op: Operator, batch: BatchResult, *, runs: int = DEFAULT_RUNS,
                  options: RuntimeOptions = DEFAULT_OPTIONS, operator_ref: str = "") -> ConfirmedBatch:
    """Directed reproduction (:func:`confirm_hazards`) of the hazards of every variant of ``batch``
    that drops sync points, scouted on the batch's first cases (at most DEFAULT_SCOUT_CASES, its case
    seed) at its block_dim, ``runs`` directed runs per hazard. Nothing is run when
    the batch was interrupted, and it is refused when the fixed variant, the directed runs'
    baseline, failed in the batch (the refusal says how). ``operator_ref``: how a command line names
    ``op`` (--op), for the replay commands the report prints."""
    out = ConfirmedBatch(batch)
    if batch.interrupt is not None:
        return out
    fixed = next((v for v in batch.variants.values() if not v.variant.dropped), None)
    if fixed is not None and not fixed.clean:
        first = f": {fixed.first_launch_error}" if fixed.first_launch_error else ""
        out.refused = (f"race-directed reproduction refused: the fixed variant (every sync point in place) must "
                       f"pass first, but it failed {fixed.failed_case_runs} of {fixed.case_runs} case-runs{first}")
        return out
    try:
        for name, v in batch.variants.items():
            if not v.variant.dropped:
                continue
            out.confirmed[name] = confirm_hazards(op, dropped=v.variant.dropped, runs=runs,
                                                  scout_cases=min(batch.cases, DEFAULT_SCOUT_CASES),
                                                  case_seed=batch.seed, block_dim=batch.block_dim, options=options,
                                                  baseline=fixed is None)  # (the batch ran the fixed variant: clean)
            out.confirmed[name].operator_ref = operator_ref
    except BaselineError as e:
        out.refused = str(e)
    return out


def light(options: RuntimeOptions) -> RuntimeOptions:
    """``options`` with a small first GM segment, for the many short-lived devices of directed runs:
    a new segment is zero-filled, and 64 MiB of that would dominate a short run."""
    return dataclasses.replace(options, gm_segment_bytes=min(options.gm_segment_bytes, DIRECTED_SEGMENT_BYTES))


def predecessor(index: int) -> int:
    """The case whose leftovers a directed run of case ``index`` finds in GM (the batch's order)."""
    return index - 1 if index > 0 else index + 1


# -- the parts --------------------------------------------------------------------------------------


def check_baseline(op: Operator, device: Device, cases: Iterable[int], *, case_seed: int, tool: str) -> None:
    """Run the fixed variant (every sync point in place) on ``cases`` and raise a one-line
    :class:`~mpnpu.errors.BaselineError` when a case fails or its launch errors: ``tool`` (the
    audit, race-directed reproduction) judges dropped syncs against that variant, and says nothing
    trustworthy when it is broken itself."""
    head = f"{tool} refused: the fixed variant (every sync point in place) must pass first, but"
    for index in cases:
        case = make_case_for(op, case_seed, index, device.block_dim)
        prepared = op.prepare(case)
        try:
            outputs, _ = op.run(device, case, drop_syncs=frozenset(), probe="", trace=False)
        except LaunchError as e:
            raise BaselineError(f"{head} {op.describe_case(case)} did not run: {e}", case=index, reason="error",
                                error=str(e)) from None
        verdict = op.judge(case, prepared, outputs, "")
        if not verdict.passed:
            outs = ", ".join(verdict.failed_outputs) or "its outputs"
            raise BaselineError(f"{head} {op.describe_case(case)} came out wrong: {outs} (relative error up to "
                                f"{verdict.max_rel_error:.3g})", case=index, reason="failed", error="")


def scout(op: Operator, device: Device, cases: Iterable[int], *, case_seed: int, dropped: frozenset[str],
          inserted: Sequence[str] = ()) -> Scout:
    """Trace each case once with ``dropped`` syncs (and ``inserted`` ones) and collect hazards and pairs."""
    sc = Scout()
    for index in cases:
        case = make_case_for(op, case_seed, index, device.block_dim)
        try:
            with device.launch_settings(insert_syncs=tuple(inserted)):
                _, launch = op.run(device, case, drop_syncs=dropped, probe="", trace=True)
        except LaunchError as e:  # e.g. a dropped flag wait overflows a counter: no trace to analyse
            sc.errors.append(f"case {index}: {e}")
            continue
        assert launch.trace is not None  # a traced launch has its trace
        sc.add(index, launch.trace)
    return sc


def directed_run(op: Operator, case_index: int, plan: HoldPlan, *, seed: int, case_seed: int,
                 dropped: frozenset[str], inserted: Sequence[str] = (), block_dim: int,
                 options: RuntimeOptions = DEFAULT_OPTIONS,
                 on_device: Callable[[Device], None] | None = None) -> DirectedRun:
    """One held launch of ``case_index`` on a fresh device that first ran the predecessor case."""
    labels = [c.label for c in topology_for(op, block_dim).cores]
    case = make_case_for(op, case_seed, case_index, block_dim)
    prepared = op.prepare(case)
    # A fresh device per run: its GM holds only what the predecessor case left.
    with device_for(op, block_dim, options=light(options)) as device:
        if on_device is not None:
            on_device(device)
        try:
            op.run(device, make_case_for(op, case_seed, predecessor(case_index), block_dim),
                   drop_syncs=frozenset(), probe="", trace=False)
        except LaunchError as e:  # the fixed kernel failing here is the operator's bug, not the hold's
            raise UsageError(f"the predecessor case of a directed run failed: {e}") from None
        try:
            with device.launch_settings(hold=plan, insert_syncs=tuple(inserted)):
                outputs, launch = op.run(device, case, drop_syncs=dropped, probe="", trace=False)
        except LaunchError as e:
            # The failed launch took its pool, and the hold's record, with it.
            return DirectedRun(seed, case_index, plan, labels[plan.held_core], labels[plan.partner_core],
                               LAUNCH_FAILED, False, error=str(e))
    verdict = op.judge(case, prepared, outputs, "")
    h = launch.hold
    return DirectedRun(seed, case_index, plan, labels[plan.held_core], labels[plan.partner_core],
                       h.outcome if h is not None else NOT_REACHED, bool(verdict.passed),
                       list(verdict.failed_outputs), "", h.held_s if h else 0.0, bool(h and h.early),
                       verdict.fingerprint)


def confirm_hazards(
    op: Operator,
    *,
    dropped: Iterable[str],
    inserted: Sequence[str] = (),
    runs: int = DEFAULT_RUNS,
    scout_cases: Sequence[int] | int = DEFAULT_SCOUT_CASES,
    case_seed: int = 0,
    seed: int = 0,
    block_dim: int = 1,
    bound_s: float = DEFAULT_BOUND_S,
    quiet_s: float = DEFAULT_QUIET_S,
    fixed: bool = True,
    baseline: bool = True,
    only: Iterable[HazardKey] | None = None,
    options: RuntimeOptions = DEFAULT_OPTIONS,
    on_device: Callable[[Device], None] | None = None,
    progress: Callable[[int], None] | None = None,
    placement: str = "",
) -> ConfirmResult:
    """Directed reproduction of every hazard of the variant that drops ``dropped``.

    ``scout_cases``: case indices (or a count from 0) traced to find hazards and pairs; ``runs``
    directed runs per hazard, each repeated on the fixed kernel (every sync in place) with the
    same plan when ``fixed``. ``on_device`` is called on every fresh device before it runs anything
    (e.g. to pin its core processes). ``only``: confirm just these hazard keys. ``baseline``:
    first run the fixed variant on the scouted cases and refuse (:class:`~mpnpu.errors.BaselineError`)
    when it fails.
    """
    import time

    if not isinstance(runs, int) or runs < 1:
        raise UsageError(f"runs must be a positive integer, got {runs!r}")
    dropped = frozenset(dropped)
    cases = tuple(range(scout_cases)) if isinstance(scout_cases, int) else tuple(scout_cases)
    start = time.perf_counter()
    with blas_threads(1):
        with device_for(op, block_dim, options=light(options)) as dev:
            if baseline:
                check_baseline(op, dev, cases, case_seed=case_seed, tool="race-directed reproduction")
            sc = scout(op, dev, cases, case_seed=case_seed, dropped=dropped, inserted=inserted)
        keys = [h.key for h in sc.log.hazards() if h.scope == "GM"]  # holds order cores, not pipes
        if only is not None:
            wanted = set(only)
            keys = [k for k in keys if k in wanted]
        confirmations = []
        for key in keys:
            root = sc.by_key[key].root
            if root is not None and root in keys:  # a consequence: the root's runs speak for it
                confirmations.append(Confirmation(sc.by_key[key], [], [], root, BY_RACECHECK))
                continue
            done, fixed_done = [], []
            for i in range(runs):
                s = run_seed(seed, key, i)
                index, pair = plan_for(sc, key, s)
                plan = pair.plan(bound_s, quiet_s)
                done.append(directed_run(op, index, plan, dropped=dropped, inserted=inserted, seed=s,
                                         case_seed=case_seed, block_dim=block_dim, options=options,
                                         on_device=on_device))
                if fixed:
                    fixed_done.append(directed_run(op, index, plan, dropped=frozenset(), seed=s, case_seed=case_seed,
                                                   block_dim=block_dim, options=options, on_device=on_device))
                if progress is not None:
                    progress(1)
            confirmations.append(Confirmation(sc.by_key[key], done, fixed_done))
        directed_consequences(confirmations)
    return ConfirmResult(op.name, dropped, tuple(inserted), block_dim, case_seed, cases, confirmations, sc.log,
                         time.perf_counter() - start, placement, sc.errors, seed)


def directed_consequences(confirmations: Sequence[Confirmation]) -> None:
    """Mark the hazards whose directed runs fail only when another hazard is reversed too: harmful
    on the variant, yet reversed and right every time under the same plans on the fixed kernel
    (:attr:`Confirmation.fails_only_with_the_drops`). Their root is the first harmful root-cause
    hazard whose dropped syncs cover theirs; without one they stay as they are."""
    for c in confirmations:
        if c.root is not None or not c.fails_only_with_the_drops:
            continue
        mine = set(c.hazard.dropped_syncs)
        root = next((r for r in confirmations if r is not c and r.root is None and r.verdict == HARMFUL
                     and not r.fails_only_with_the_drops and r.hazard.dropped_syncs
                     and mine <= set(r.hazard.dropped_syncs)), None)
        if root is not None:
            c.root, c.root_by = root.hazard.key, BY_DIRECTED_RUNS


def grouped_confirmations(confirmations: Sequence[Confirmation]) -> list[tuple[Confirmation, list[Confirmation]]]:
    """Confirmations under their root causes: (root, its consequences), roots in the given order."""
    return group_by_root(confirmations, lambda c: c.hazard.key, lambda c: c.root)


def replay(op: Operator, seed: int, *, dropped: Iterable[str], scout_cases: Sequence[int] | int,
           key: HazardKey | None = None, base_seed: int = 0, case_seed: int = 0, block_dim: int = 1,
           inserted: Sequence[str] = (), bound_s: float = DEFAULT_BOUND_S, quiet_s: float = DEFAULT_QUIET_S,
           options: RuntimeOptions = DEFAULT_OPTIONS, on_device: Callable[[Device], None] | None = None) -> DirectedRun:
    """Rerun the directed run with this seed: same case, same pair, same hold, same predecessor.

    The seed alone names the hazard too (found among the scouted hazards, given the ``base_seed``
    the runs were made with); pass ``key`` to skip the search.
    """
    dropped = frozenset(dropped)
    cases = tuple(range(scout_cases)) if isinstance(scout_cases, int) else tuple(scout_cases)
    with blas_threads(1):
        with device_for(op, block_dim, options=light(options)) as dev:
            sc = scout(op, dev, cases, case_seed=case_seed, dropped=dropped, inserted=inserted)
        if key is None:
            key = find_hazard(sc, seed, base_seed)
        elif key not in sc.by_key:
            raise UsageError("the scouted cases do not show this hazard")
        index, pair = plan_for(sc, key, seed)
        return directed_run(op, index, pair.plan(bound_s, quiet_s), seed=seed, case_seed=case_seed,
                            dropped=dropped, inserted=inserted, block_dim=block_dim, options=options,
                            on_device=on_device)
