"""The sync audit: which of an operator's sync points are needed, and what each one protects.

For every named sync point (and, with ``pairs``, every pair of them) the audit drops it and
gathers three kinds of evidence:

1. racecheck on a few scouted cases: the hazards that appear without it;
2. race-directed reproduction (:mod:`.confirm`) of each hazard: harmful, benign or ordered;
3. a short batch with the sync dropped: how many case-runs fail in ordinary scheduling.

Verdict per row:

- **necessary**: a hazard without it is harmful (a reversed pair gave a wrong result), or the
  batch failed (including launches that fail outright, e.g. a flag counter overflow);
- **unproven**: racecheck reports hazards inside a core (between its pipes: on local memory, or on
  GM), which holds cannot reverse, and the batch passed: the chip may run those pipes in the other
  order even where mpnpu did not (V and M run inline here; see docs/pipes.md). Keep the sync;
- **benign-only**: hazards between cores appear, but no reversal changed a result and the batch
  passed;
- **redundant**: no hazard appears and the batch passed (something else already orders it).

With ``repair`` the hazards of the operator's ``incident`` variant also get suggested repairs,
each verified by a rerun with the sync inserted (:mod:`.repair`).

Before any of that the audit runs the fixed variant on the scouted cases: every verdict compares a
dropped sync with it, so when it fails or errors itself the audit refuses, with the case and the
reason in one line (:class:`~mpnpu.errors.BaselineError`, exit status 1).
"""

from __future__ import annotations

import functools
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from mpnpu.directed import mutation
from mpnpu.directed.confirm import (
    HARMFUL,
    ConfirmResult,
    check_baseline,
    confirm_hazards,
    grouped_confirmations,
    light,
)
from mpnpu.directed.mutation import (
    BY_DEADLOCK,
    BY_DEVICE,
    BY_GOLDEN,
    IN_DIRECTED_RUN,
    KILLED,
    SURVIVED,
    UNTESTED,
    score,
)
from mpnpu.directed.repair import AUDIT_BLOCK_DIM, Repair, repair_hazards
from mpnpu.errors import UsageError
from mpnpu.harness.runner import Variant, run_batch
from mpnpu.operators.protocol import Operator, device_for, topology_for
from mpnpu.racecheck.hazards import Hazard
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.procutil import blas_threads

NECESSARY, UNPROVEN, BENIGN_ONLY, REDUNDANT = "necessary", "unproven", "benign-only", "redundant"


def _short(site: str) -> str:
    """'kernel.py:156' from 'op_dir/kernel.py:156'."""
    return site.rpartition("/")[2]


@dataclass
class AuditRow:
    """The evidence and verdict for one dropped sync point (or pair)."""

    dropped: tuple[str, ...]
    confirm: ConfirmResult
    batch_case_runs: int
    batch_failures: int
    batch_failed_outputs: dict[str, int] = field(default_factory=dict)
    batch_first_error: str = ""

    @functools.cached_property
    def inside_core(self) -> list[Hazard]:
        """Hazards between the pipes of one core that the scouted launches showed (holds order
        cores against each other, so these get no directed verdict)."""
        return [h for h in self.confirm.hazard_log.hazards() if h.scope != "GM"]

    @property
    def hazards(self) -> int:
        """Root causes: the hazards that are no consequence of another."""
        return len(self.confirm.confirmations) - self.consequences + len(self.inside_core)

    @property
    def consequences(self) -> int:
        """Hazards that are consequences of another (grouped under it, not counted as hazards)."""
        return sum(c.root is not None for c in self.confirm.confirmations)

    @property
    def harmful(self) -> int:
        return sum(c.verdict == HARMFUL for c in self.confirm.confirmations)

    @property
    def directed(self) -> str:
        """harmful / benign / none: the worst directed verdict over the row's hazards."""
        verdicts = {c.verdict for c in self.confirm.confirmations}
        if HARMFUL in verdicts:
            return "harmful"
        if "benign" in verdicts:
            return "benign"
        return "none"

    @property
    def verdict(self) -> str:
        if self.harmful or self.batch_failures:
            return NECESSARY
        if self.inside_core:
            return UNPROVEN
        return BENIGN_ONLY if self.confirm.confirmations else REDUNDANT

    @property
    def why(self) -> str:
        """The evidence for the verdict, one line (the JSON's; reports show :attr:`why_parts` a piece
        a line)."""
        return "; ".join(self.why_parts)

    @property
    def why_parts(self) -> list[str]:
        """The evidence for the verdict, a piece per hazard (and the batch's failures)."""
        parts = []
        for root, consequences in grouped_confirmations(self.confirm.confirmations):
            for c in (root, *consequences):
                h = c.hazard
                what = f"{h.kind} on {h.tensor} ({_short(h.first.site)} -> {_short(h.second.site)})"
                if c.root is not None:
                    parts.append(f"{what}: a consequence of the hazard before ({c.root_by})")
                elif c.verdict == HARMFUL:
                    outs = ", ".join(sorted(c.failed_outputs))
                    parts.append(f"{what}: harmful in {c.harmful_runs}/{len(c.runs)} directed runs ({outs})")
                else:
                    parts.append(f"{what}: {c.verdict}, reversed {c.reversed}/{len(c.runs)}")
        for h in self.inside_core:
            where = f"{h.first.pipe} -> {h.second.pipe} ({_short(h.first.site)} -> {_short(h.second.site)})"
            parts.append(f"{h.kind} on {h.tensor} inside a core, {where}: not reversible by holds")
        if self.batch_failures and not self.harmful:
            parts.append(f"batch failed {self.batch_failures}/{self.batch_case_runs}"
                         + (f" ({self.batch_first_error})" if self.batch_first_error else ""))
        if self.confirm.scout_errors and not parts:
            parts.append(f"scouted launches failed: {self.confirm.scout_errors[0]}")
        return parts or ["no hazard, batch clean"]

    @property
    def mutation(self) -> tuple[str, str]:
        """The row in sync mutation testing's words (:mod:`mpnpu.directed.mutation`): (KILLED, how)
        when the operator's golden check failed without the sync (in the batch, or in a directed
        run that forced the race) or a launch failed; else (SURVIVED, UNTESTED) when racecheck
        found a hazard that no failing case-run showed, or (SURVIVED, REDUNDANT) when it found none."""
        if self.batch_failures:
            if self.batch_first_error:
                how = BY_DEADLOCK if "deadlock" in self.batch_first_error else BY_DEVICE
                return KILLED, how
            return KILLED, BY_GOLDEN
        if self.harmful:
            return KILLED, f"{BY_GOLDEN} {IN_DIRECTED_RUN}"
        return (SURVIVED, UNTESTED) if self.hazards else (SURVIVED, mutation.REDUNDANT)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dropped": list(self.dropped), "verdict": self.verdict, "hazards": self.hazards,
            "consequences": self.consequences,
            "directed": self.directed, "harmful_hazards": self.harmful, "batch_case_runs": self.batch_case_runs,
            "batch_failures": self.batch_failures, "batch_failed_outputs": self.batch_failed_outputs,
            "batch_first_error": self.batch_first_error, "why": self.why, "confirm": self.confirm.to_dict(),
            "mutation": dict(zip(("status", "how" if self.mutation[0] == KILLED else "class"), self.mutation)),
        }


@dataclass
class AuditResult:
    operator: str
    block_dim: int
    settings: dict[str, Any]
    rows: list[AuditRow]
    repairs: list[Repair] = field(default_factory=list)
    repair_dropped: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    core_processes: int = 0  # how many core processes block_dim made for this operator's kernel

    @property
    def mutation_score(self) -> float:
        """Sync mutation testing's score over the sync points dropped alone: killed / dropped."""
        alone = [r for r in self.rows if len(r.dropped) == 1]
        return score(sum(r.mutation[0] == KILLED for r in alone), len(alone))

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator, "block_dim": self.block_dim, "core_processes": self.core_processes,
            "settings": self.settings,
            "mutation_score": self.mutation_score,
            "rows": [r.to_dict() for r in self.rows], "repair_variant_drops": list(self.repair_dropped),
            "repairs": [r.to_dict() for r in self.repairs], "elapsed_s": self.elapsed_s,
        }


def audit(
    op: Operator,
    *,
    pairs: bool = False,
    only: tuple[str, ...] = (),
    runs: int = 3,
    scout_cases: int = 3,
    batch_cases: int = 20,
    block_dim: int = AUDIT_BLOCK_DIM,
    case_seed: int = 0,
    seed: int = 0,
    repair: bool = True,
    options: RuntimeOptions = DEFAULT_OPTIONS,
    on_device: Callable[[Device], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> AuditResult:
    """Audit ``op``'s sync points (see the module docstring). ``only`` restricts the sync points."""
    names = list(op.sync_points)
    unknown = sorted(set(only) - set(names))
    if unknown:
        raise UsageError(f"unknown sync point {', '.join(unknown)}; known: {', '.join(names)}")
    if only:
        names = [n for n in names if n in only]
    sets: list[tuple[str, ...]] = [(n,) for n in names]
    if pairs:
        sets += list(itertools.combinations(names, 2))
    start = time.perf_counter()
    rows = []
    with blas_threads(1):
        # Every verdict below compares a dropped sync with the fixed variant: that must hold first.
        with device_for(op, block_dim, options=light(options)) as dev:
            if on_device is not None:
                on_device(dev)
            check_baseline(op, dev, range(scout_cases), case_seed=case_seed, tool="audit")
        for dropped in sets:
            if progress is not None:
                progress("drop " + "+".join(dropped))
            conf = confirm_hazards(op, dropped=dropped, runs=runs, scout_cases=scout_cases, case_seed=case_seed,
                                   seed=seed, block_dim=block_dim, fixed=False, baseline=False, options=options,
                                   on_device=on_device)
            batch = run_batch(op, cases=batch_cases, repeat=1, variants=[Variant("audit", frozenset(dropped))],
                              seed=case_seed, block_dim=block_dim, options=light(options), on_device=on_device)
            res = batch.variants["audit"]
            rows.append(AuditRow(dropped, conf, res.case_runs, res.failed_case_runs, dict(res.failed_by_output),
                                 res.first_launch_error))
        repairs: list[Repair] = []
        incident = tuple(sorted(op.variants.get("incident", frozenset())))
        if repair and incident:
            if progress is not None:
                progress("repairs for the incident variant")
            repairs = repair_hazards(op, dropped=incident, scout_cases=scout_cases, case_seed=case_seed, seed=seed,
                                     runs=runs, block_dim=block_dim, batch_cases=batch_cases, options=options,
                                     on_device=on_device)
    settings = {"runs": runs, "scout_cases": scout_cases, "batch_cases": batch_cases, "case_seed": case_seed,
                "seed": seed, "pairs": pairs}
    return AuditResult(op.name, block_dim, settings, rows, repairs, incident if repair else (),
                       time.perf_counter() - start, topology_for(op, block_dim).n_cores)
