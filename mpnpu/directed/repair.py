"""Repairs: the cheapest sync that orders a hazard, suggested, then verified by rerunning the kernel.

For a hazard whose first access happens in stage A and second in a later stage B, the candidates
are (cheapest first, by the measured cost of each kind of sync, :data:`SYNC_COST_US`):

- a cross-core flag when every conflicting core pair sits in one AI core: mode 1 between its two
  vector cores, mode 2 between its cube core and its vector cores (setter leaving A, waiter
  entering B, an id the kernel does not use);
- an AIV-only SyncAll (``SyncAll<true>``) after A when every conflicting pair is vector-vector;
- a SyncAll (all cores) after A.

A suggestion is *verified* (:func:`verify`) by inserting it for the launches of a rerun
(``LaunchOptions(insert_syncs=...)``, nothing in the kernel changes) and checking three things:
racecheck no longer reports the hazard on the scouted cases; the directed runs that reversed the
pair before, same seeds and hold plans, can no longer reverse it; a short batch has 0 failures.
Pairs in the same stage cannot be separated at a stage boundary: they get no suggestion here (and
two runs of one line by different cores never get "a sync between that line and itself"). A hazard
that is a consequence of another (:attr:`Hazard.root`) gets none either: the root's repair is its.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from mpnpu.directed.confirm import confirm_hazards, directed_run, light, scout
from mpnpu.harness.runner import Variant, run_batch
from mpnpu.operators.protocol import Operator, device_for, topology_for
from mpnpu.racecheck.directed import HazardKey, PairRef, Scout, plan_for, run_seed
from mpnpu.racecheck.hazards import Hazard, key_text
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.hold import REVERSED
from mpnpu.runtime.topology import SYNC_ALL_FLAG_IDS, CoreType, Topology

#: The block_dim of the audit and of repairs: two AI cores, not DEFAULT_BLOCK_DIM's one, because
#: what they weigh is which sync each hazard needs, and a flag inside one AI core only looks
#: sufficient when no access pair crosses AI cores (with one AI core none can): its repairs would
#: be over-trusted.
AUDIT_BLOCK_DIM = 2

#: Cost of one sync of each kind, in microseconds, measured with ``python scripts/bench_sync_kinds.py``
#: (block_dim 2: 6 core processes on 2 shared CPUs, load average ~16; median of 5 alternating rounds
#: of 1000 syncs). Only the order matters for ranking; the figures are printed next to each
#: suggestion as a guide.
SYNC_COST_US: dict[str, float] = {
    "flag1": 32.0,
    "flag2": 50.0,
    "sync_aiv": 198.0,
    "sync_all": 368.0,
}
KIND_NAMES = {
    "flag1": "cross-core flag, mode 1 (the two vector cores of an AI core)",
    "flag2": "cross-core flag, mode 2 (cube core and its vector cores)",
    "sync_aiv": "SyncAll<true> (vector cores only)",
    "sync_all": "SyncAll<false> (all cores)",
}


@dataclass
class Suggestion:
    """One candidate repair of one hazard."""

    kind: str  # key of SYNC_COST_US
    insert: str  # the insert_syncs spec that applies it for a launch
    text: str  # what to write in the kernel, in words

    @property
    def cost_us(self) -> float:
        return SYNC_COST_US[self.kind]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "what": KIND_NAMES[self.kind], "insert": self.insert, "text": self.text,
                "cost_us": self.cost_us}


def suggest(hazard: Hazard, pairs: Iterable[PairRef], topology: Topology,
            flags_used: Iterable[tuple[int, int]] = ()) -> list[Suggestion]:
    """Candidate repairs of ``hazard`` (its concrete ``pairs`` at ``topology``), cheapest first."""
    a, b = hazard.first.stage, hazard.second.stage
    if a == b:
        return []
    cores = topology.cores
    pairs = list(pairs)
    pair_types = {(cores[p.first.core].core_type, cores[p.second.core].core_type) for p in pairs}
    same_ai_core = all(cores[p.first.core].ai_core == cores[p.second.core].ai_core for p in pairs)
    out: list[Suggestion] = []
    used_ids = {i for _, i in flags_used}
    free_ids = [i for i in range(16) if i not in SYNC_ALL_FLAG_IDS and i not in used_ids]
    V, C = CoreType.VECTOR, CoreType.CUBE
    if same_ai_core and pairs and free_ids:
        fid = free_ids[0]
        if pair_types == {(V, V)}:
            out.append(Suggestion("flag1", f"flag1:{fid}:{a}->{b}",
                                  f"both vector cores CrossCoreSetFlag<1>({fid}) at the end of {a}, "
                                  f"CrossCoreWaitFlag({fid}) at the start of {b}"))
        elif pair_types == {(C, V)}:
            out.append(Suggestion("flag2", f"flag2:{fid}:cube:{a}->{b}",
                                  f"cube core CrossCoreSetFlag<2>({fid}) at the end of {a}, its vector cores "
                                  f"CrossCoreWaitFlag({fid}) at the start of {b}"))
        elif pair_types == {(V, C)}:
            out.append(Suggestion("flag2", f"flag2:{fid}:vector:{a}->{b}",
                                  f"vector cores CrossCoreSetFlag<2>({fid}) at the end of {a}, their cube core "
                                  f"CrossCoreWaitFlag({fid}) at the start of {b}"))
    if pairs and pair_types == {(V, V)}:
        out.append(Suggestion("sync_aiv", f"after:{a}:aiv", f"SyncAll<true>() on the vector cores after {a}"))
    out.append(Suggestion("sync_all", f"after:{a}", f"SyncAll<false>() after {a}"))
    out.sort(key=lambda s: s.cost_us)
    return out


def no_suggestion_note(hazard: Hazard) -> str:
    """Why a hazard whose accesses are in one stage gets no suggestion, and what to look at instead."""
    a, b = hazard.first, hazard.second
    if a.site == b.site:
        # Never "a sync between a line and itself": the two accesses are one line run by two cores.
        return (f"both accesses are the same line, {a.site} in {a.stage}, run by different cores: no sync orders "
                "two runs of one line; the ranges those cores access there overlap, so look at what decides them")
    return (f"both accesses are in {a.stage}: no stage boundary separates them; a sync belongs between {a.site} "
            f"and {b.site}")


@dataclass
class Verification:
    """The evidence for one suggestion."""

    suggestion: Suggestion
    hazard_gone: bool
    hazards_left: int  # any hazard racecheck still reports with the sync inserted
    directed_runs: int
    reversed: int
    directed_failures: int
    batch_case_runs: int
    batch_failures: int
    error: str = ""

    @property
    def verified(self) -> bool:
        return (not self.error and self.hazard_gone and self.reversed == 0 and self.directed_failures == 0
                and self.batch_failures == 0)

    def to_dict(self) -> dict[str, Any]:
        return {**self.suggestion.to_dict(), "verified": self.verified, "hazard_gone": self.hazard_gone,
                "hazards_left": self.hazards_left, "directed_runs": self.directed_runs, "reversed": self.reversed,
                "directed_failures": self.directed_failures, "batch_case_runs": self.batch_case_runs,
                "batch_failures": self.batch_failures, "error": self.error}


def verify(op: Operator, key: HazardKey, suggestion: Suggestion, *, dropped: frozenset[str], scout_cases: Sequence[int],
           case_seed: int, seed: int, runs: int, block_dim: int, batch_cases: int, bound_s: float,
           quiet_s: float, before: Scout, options: RuntimeOptions = DEFAULT_OPTIONS,
           on_device: Callable[[Device], None] | None = None) -> Verification:
    """Insert ``suggestion`` and rerun: racecheck, the same directed runs, a short batch."""
    from mpnpu.errors import LaunchError

    inserted = (suggestion.insert,)
    try:
        with device_for(op, block_dim, options=light(options)) as dev:
            after = scout(op, dev, scout_cases, case_seed=case_seed, dropped=dropped, inserted=inserted)
            with dev.launch_settings(insert_syncs=inserted):
                batch = run_batch(op, cases=batch_cases, repeat=1, variants=[Variant("repaired", dropped)],
                                  seed=case_seed, device=dev)
    except LaunchError as e:
        return Verification(suggestion, False, -1, 0, 0, 0, 0, 0, error=str(e))
    res = batch.variants["repaired"]
    if after.errors or res.launch_errors:
        # With the sync inserted the kernel no longer runs (e.g. a SyncAll some core never reaches):
        # no trace, so "no hazard" would mean nothing.
        first = after.errors[0] if after.errors else res.first_launch_error
        return Verification(suggestion, False, -1, 0, 0, 0, res.case_runs, res.failed_case_runs,
                            error=f"the kernel fails with it inserted: {first}")
    reversed_ = failures = 0
    for i in range(runs):
        s = run_seed(seed, key, i)
        index, pair = plan_for(before, key, s)
        r = directed_run(op, index, pair.plan(bound_s, quiet_s), seed=s, case_seed=case_seed, dropped=dropped,
                         inserted=inserted, block_dim=block_dim, options=options, on_device=on_device)
        reversed_ += r.outcome == REVERSED
        failures += not r.passed
    return Verification(suggestion, key not in after.by_key, len(after.by_key), runs, reversed_, failures,
                        res.case_runs, res.failed_case_runs)


@dataclass
class Repair:
    """Suggestions for one hazard, each with its verification."""

    hazard: Hazard
    verifications: list[Verification] = field(default_factory=list)
    note: str = ""

    @property
    def best(self) -> Verification | None:
        """The cheapest verified suggestion."""
        return next((v for v in self.verifications if v.verified), None)

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        return {"hazard": self.hazard.to_dict(), "note": self.note,
                "best": best.suggestion.insert if best else None,
                "suggestions": [v.to_dict() for v in self.verifications]}


def repair_hazards(op: Operator, *, dropped: Iterable[str], scout_cases: Sequence[int] | int = 4, case_seed: int = 0,
                   seed: int = 0, runs: int = 3, block_dim: int = AUDIT_BLOCK_DIM, batch_cases: int = 10,
                   bound_s: float = 5.0, quiet_s: float = 0.15, harmful_only: bool = False,
                   options: RuntimeOptions = DEFAULT_OPTIONS,
                   on_device: Callable[[Device], None] | None = None) -> list[Repair]:
    """Suggest and verify repairs for the hazards of the variant that drops ``dropped``.

    ``harmful_only``: only hazards whose directed runs gave a wrong result (runs are made first).
    """
    dropped = frozenset(dropped)
    cases = tuple(range(scout_cases)) if isinstance(scout_cases, int) else tuple(scout_cases)
    with device_for(op, block_dim, options=light(options)) as dev:
        before = scout(op, dev, cases, case_seed=case_seed, dropped=dropped)
    keys = [k for k, h in before.by_key.items() if h.scope == "GM"]  # stage-boundary repairs: between cores
    if harmful_only:
        conf = confirm_hazards(op, dropped=dropped, runs=runs, scout_cases=cases, case_seed=case_seed, seed=seed,
                               block_dim=block_dim, bound_s=bound_s, quiet_s=quiet_s, fixed=False,
                               baseline=False, options=options, on_device=on_device)
        keys = [c.hazard.key for c in conf.confirmations if c.verdict == "harmful"]
    topo = topology_for(op, block_dim)
    repairs = []
    for key in keys:
        hazard = before.by_key[key]
        pairs = [p for ps in before.pairs[key].values() for p in ps]
        rep = Repair(hazard)
        if hazard.root is not None and hazard.root in keys:
            rep.note = (f"a consequence of {key_text(hazard.root)}: its accesses come after a read that saw the wrong "
                        "data through that hazard; the repair of that one removes it")
            repairs.append(rep)
            continue
        suggestions = suggest(hazard, pairs, topo, before.flags_used)
        if not suggestions:
            rep.note = no_suggestion_note(hazard)
        for sug in suggestions:
            rep.verifications.append(verify(
                op, key, sug, dropped=dropped, scout_cases=cases, case_seed=case_seed, seed=seed, runs=runs,
                block_dim=block_dim, batch_cases=batch_cases, bound_s=bound_s, quiet_s=quiet_s, before=before,
                options=options, on_device=on_device))
        repairs.append(rep)
    return repairs
