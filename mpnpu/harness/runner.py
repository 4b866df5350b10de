"""Batch runs: the same cases through several variants of a kernel, repeated, on one device.

This is the library behind ``mpnpu batch`` (and the investigate and stress tools): no
printing, no argparse. It reproduces how the incident was seen — a batch of test cases run one
after another on one device, whose caching allocator hands each case the blocks the previous case
freed — and counts, per variant, which case-runs failed, how, and where.

Order of work: for each repeat, for each case, every variant runs back to back (A/B), so both
variants see the same machine conditions and the same kind of stale memory.
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Sequence

from mpnpu import settings
from mpnpu.errors import InvalidArgumentError, LaunchError, MpnpuError, RemoteTraceback, UsageError
from mpnpu.harness.stats import rule_of_three, wilson_interval
from mpnpu.operators.helpers import build_kernels_for
from mpnpu.operators.protocol import (
    Operator,
    Verdict,
    cpu_set_for,
    default_block_dim,
    device_for,
    make_case_for,
)
from mpnpu.runtime import cpuset
from mpnpu.runtime.checks import is_int
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.procutil import available_cpus, blas_threads

#: a variant stops after the same launch error in this many consecutive case-runs (run_batch)
DEFAULT_MAX_SAME_ERRORS = 3


@dataclass(frozen=True)
class Variant:
    """A kernel variant: which named sync points its launches drop."""

    name: str
    dropped: frozenset[str]

    @property
    def expected_clean(self) -> bool:
        """Only a variant with every sync in place is expected to pass every case."""
        return not self.dropped


@dataclass
class VariantResult:
    """What one variant did over the whole batch."""

    variant: Variant
    repeats: int
    case_runs: int = 0
    failed_case_runs: int = 0
    failed_by_output: Counter[str] = field(default_factory=Counter)
    min_rel_error: float | None = None  # over failing elements of failing case-runs
    max_rel_error: float | None = None
    failing_cases_by_repeat: list[list[int]] = field(default_factory=list)
    #: case-runs that finished, per repeat (an interrupted batch's later repeats have none)
    case_runs_by_repeat: list[int] = field(default_factory=list)
    launch_errors: int = 0
    first_launch_error: str = ""
    #: the first launch error as data: error, message, core, error_type, site, function, the last
    #: frames of the core's traceback, and what the error itself holds (a memcheck's range, ...)
    first_launch_error_details: dict[str, Any] = field(default_factory=dict)
    #: why the variant stopped before its last case-run ("" when it ran them all): the same launch
    #: error in ``max_same_errors`` consecutive case-runs
    stopped: str = ""
    not_run: int = 0  # case-runs left out because the variant stopped
    _streak: tuple[tuple[str, ...] | None, int] = field(default=(None, 0), repr=False, compare=False)
    _stop_count: int = field(default=0, repr=False, compare=False)
    first_failure_case_run: int | None = None  # 1-based index of the first failing case-run
    first_failure_s: float | None = None  # seconds from the batch start to the first failure
    elapsed_s: float = 0.0
    fingerprints: dict[int, set[bytes]] = field(default_factory=dict, repr=False)
    hazard_log: Any = field(default=None, repr=False)  # racecheck.HazardLog when racechecking
    #: racecheck.findings.FindingLog when running initcheck or synccheck
    check_log: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.failing_cases_by_repeat:
            self.failing_cases_by_repeat = [[] for _ in range(self.repeats)]
        if not self.case_runs_by_repeat:
            self.case_runs_by_repeat = [0] * len(self.failing_cases_by_repeat)

    @property
    def clean(self) -> bool:
        return self.failed_case_runs == 0

    @property
    def failure_rate(self) -> float:
        return self.failed_case_runs / self.case_runs if self.case_runs else 0.0

    @property
    def wilson95(self) -> tuple[float, float]:
        return wilson_interval(self.failed_case_runs, self.case_runs)

    @property
    def upper_bound95(self) -> float | None:
        """Rule of three: with 0 failures in n case-runs the rate is below 3/n at 95% confidence."""
        return rule_of_three(self.case_runs) if self.clean and self.case_runs else None

    @property
    def inconsistent_cases(self) -> list[int]:
        """Cases whose judged output differed between repeats (the consistency test of docs/incident.md)."""
        return sorted(i for i, prints in self.fingerprints.items() if len(prints) > 1)

    def record(self, case_index: int, repeat: int, verdict: Verdict | None, error: str, since_start: float,
               details: dict[str, Any] | None = None) -> None:
        self.case_runs += 1
        self.case_runs_by_repeat[repeat] += 1
        if verdict is None and details and not self.first_launch_error_details:
            self.first_launch_error_details = details
        if verdict is not None and verdict.fingerprint:
            self.fingerprints.setdefault(case_index, set()).add(verdict.fingerprint)
        failed = verdict is None or not verdict.passed
        if not failed:
            return
        self.failed_case_runs += 1
        self.failing_cases_by_repeat[repeat].append(case_index)
        if self.first_failure_case_run is None:
            self.first_failure_case_run, self.first_failure_s = self.case_runs, since_start
        if verdict is None:
            self.launch_errors += 1
            self.first_launch_error = self.first_launch_error or error
            self.failed_by_output["<launch error>"] += 1
            return
        self.failed_by_output.update(verdict.failed_outputs)
        lo, hi = verdict.min_rel_error, verdict.max_rel_error
        self.min_rel_error = lo if self.min_rel_error is None else min(self.min_rel_error, lo)
        self.max_rel_error = hi if self.max_rel_error is None else max(self.max_rel_error, hi)

    @property
    def stop_count(self) -> int:
        """How many consecutive case-runs ended in the same launch error when the variant stopped (0: it did not)."""
        return self._stop_count

    @property
    def stop_reason(self) -> str:
        """Why the variant stopped, in a few words ("" when it did not)."""
        return f"the same launch error in {self._stop_count} consecutive case-runs" if self.stopped else ""

    def same_error(self, key: tuple[str, ...] | None) -> int:
        """Count a case-run's launch error of ``key`` (None: the case-run had none) towards a run of
        the same error; how long that run is now."""
        last, n = self._streak
        n = n + 1 if key is not None and key == last else (1 if key is not None else 0)
        self._streak = (key, n)
        return n

    def stop(self, error: str) -> None:
        """Stop the variant: its last case-runs ended in the same launch error (``error``)."""
        self._stop_count = self._streak[1]
        self.stopped = f"stopped after the same launch error in {self._stop_count} consecutive case-runs ({error})"

    @property
    def stop_key(self) -> tuple[str, ...] | None:
        """The error the variant stopped on (None: it did not stop)."""
        return self._streak[0] if self.stopped else None

    def merge(self, other: "VariantResult") -> "VariantResult":
        """This result and ``other`` (the same variant, run after it) as one result.

        Counts add up, repeats follow one another, fingerprints of a case are pooled, the first
        failure stays the earliest (``other``'s case-run number is shifted by this result's case-runs;
        its time is kept as measured), and hazard logs are combined. Neither input is modified.
        """
        if other.variant != self.variant:
            raise InvalidArgumentError(f"cannot merge variant {other.variant.name} into {self.variant.name}")
        out = VariantResult(self.variant, self.repeats + other.repeats)
        out.failing_cases_by_repeat = [list(c) for c in self.failing_cases_by_repeat + other.failing_cases_by_repeat]
        out.case_runs_by_repeat = self.case_runs_by_repeat + other.case_runs_by_repeat
        out.case_runs = self.case_runs + other.case_runs
        out.failed_case_runs = self.failed_case_runs + other.failed_case_runs
        out.failed_by_output = self.failed_by_output + other.failed_by_output
        out.launch_errors = self.launch_errors + other.launch_errors
        out.first_launch_error = self.first_launch_error or other.first_launch_error
        out.first_launch_error_details = self.first_launch_error_details or other.first_launch_error_details
        out.stopped = self.stopped or other.stopped
        out._stop_count = self._stop_count or other._stop_count
        out.not_run = self.not_run + other.not_run
        out.elapsed_s = self.elapsed_s + other.elapsed_s
        for bound, pick in (("min_rel_error", min), ("max_rel_error", max)):
            a, b = getattr(self, bound), getattr(other, bound)
            setattr(out, bound, b if a is None else a if b is None else pick(a, b))
        if self.first_failure_case_run is not None:
            out.first_failure_case_run, out.first_failure_s = self.first_failure_case_run, self.first_failure_s
        elif other.first_failure_case_run is not None:
            out.first_failure_case_run = self.case_runs + other.first_failure_case_run
            out.first_failure_s = other.first_failure_s
        for source in (self, other):
            for case, prints in source.fingerprints.items():
                out.fingerprints.setdefault(case, set()).update(prints)
        logs = [log for log in (self.hazard_log, other.hazard_log) if log is not None]
        if logs:
            out.hazard_log = logs[0].merged(*logs[1:])
        found = [log for log in (self.check_log, other.check_log) if log is not None]
        if found:
            out.check_log = found[0].merged(*found[1:])
        return out

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.wilson95
        return {
            "dropped_syncs": sorted(self.variant.dropped),
            "expected_clean": self.variant.expected_clean,
            "case_runs": self.case_runs,
            "failed_case_runs": self.failed_case_runs,
            "failure_rate": self.failure_rate,
            "failure_rate_wilson95": [lo, hi],
            "upper_bound95_rule_of_three": self.upper_bound95,
            "failed_by_output": dict(self.failed_by_output),
            "min_rel_error": self.min_rel_error,
            "max_rel_error": self.max_rel_error,
            "failing_cases_by_repeat": self.failing_cases_by_repeat,
            "case_runs_by_repeat": self.case_runs_by_repeat,
            "inconsistent_cases": self.inconsistent_cases,
            "launch_errors": self.launch_errors,
            "first_launch_error": self.first_launch_error,
            "first_launch_error_details": self.first_launch_error_details,
            "stopped": self.stopped,
            "not_run": self.not_run,
            "first_failure_case_run": self.first_failure_case_run,
            "first_failure_s": self.first_failure_s,
            "elapsed_s": self.elapsed_s,
            "hazards": self.hazard_log.to_dicts() if self.hazard_log is not None else [],
            **({"racecheck_launches": self.hazard_log.launch_counts()} if self.hazard_log is not None else {}),
            **({"findings": self.check_log.to_dicts(), "checked_launches": self.check_log.launches_checked}
               if self.check_log is not None else {}),
        }


@dataclass
class BatchResult:
    """The outcome of a batch: one VariantResult per variant, plus what was run where."""

    operator: str
    seed: int
    cases: int
    repeat: int
    block_dim: int
    probe: str
    cpus: int
    variants: dict[str, VariantResult]
    elapsed_s: float = 0.0
    interrupted: bool = False  # stopped early (Ctrl-C, SIGTERM, a time limit); counts cover what ran
    interrupt: BaseException | None = field(default=None, repr=False)  # the KeyboardInterrupt, if any
    racecheck: bool = False
    #: the checks run besides racecheck: "initcheck", "synccheck"
    checks: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    #: the operator's sync points (name -> what it orders), for reports that describe a variant
    sync_points: dict[str, str] = field(default_factory=dict, repr=False)
    #: the device's core processes (0: not known, taken as a mix device's 3 per block)
    processes: int = 0
    #: the CPU set the whole batch ran on (run_batch's ``cpu_set``), None: wherever it was
    cpu_set: cpuset.CpuSet | None = field(default=None, repr=False)

    @property
    def core_processes(self) -> int:
        """How many core processes ran the batch: 3 per block on a mix device; a vector-only C++
        kernel's device has block_dim vector cores."""
        return self.processes or 3 * self.block_dim

    @property
    def expected_clean_are_clean(self) -> bool:
        """Every variant with all its syncs passed every case-run and, under racecheck, had no hazard
        (a race that happened not to change the output this time is still a race)."""
        return all(v.clean and not self.hazards_of(v) and not self.findings_of(v)
                   for v in self.variants.values() if v.variant.expected_clean)

    def hazards_of(self, v: VariantResult) -> int:
        """How many distinct hazards racecheck found in ``v``'s launches (0 without racecheck)."""
        return len(v.hazard_log) if self.racecheck and v.hazard_log is not None else 0

    def findings_of(self, v: VariantResult) -> int:
        """How many distinct defects initcheck and synccheck found in ``v``'s launches (redundant syncs,
        warnings, not counted; 0 without them)."""
        return v.check_log.errors() if v.check_log is not None else 0

    @property
    def stopped_expected_clean(self) -> list[str]:
        """Variants expected clean that stopped on a repeated launch error: the kernel did not run,
        a device error (exit status 3), not a judged failure."""
        return [v.variant.name for v in self.variants.values() if v.variant.expected_clean and v.stopped]

    def verdict_line(self) -> str:
        """The one-line verdict (what ``--quiet`` prints): OK when every variant expected clean is.
        An interrupted batch is never OK: its verdict speaks of the case-runs that finished alone."""
        parts = []
        for v in self.variants.values():
            if v.variant.expected_clean:
                parts.append(f"{v.variant.name} passed the {v.case_runs} case-runs that finished"
                             if v.clean and self.interrupted
                             else f"{v.variant.name} passed every case-run" if v.clean and self.hazards_of(v)
                             else f"{v.variant.name} is clean" if v.clean
                             else f"{v.variant.name} STOPPED ({v.stop_reason})" if v.stopped
                             else f"{v.variant.name} FAILED ({v.failed_case_runs} case-runs)")
                if v.inconsistent_cases:
                    parts[-1] += f", but {len(v.inconsistent_cases)} cases changed between repeats"
                if self.hazards_of(v):
                    n = self.hazards_of(v)
                    parts[-1] += f", but racecheck found {n} hazard{'s' if n != 1 else ''} in it: NOT clean"
                if self.findings_of(v):
                    n = self.findings_of(v)
                    parts[-1] += (f", but {'/'.join(self.checks)} found {n} defect{'s' if n != 1 else ''} in it: "
                                  "NOT clean")
        for v in self.variants.values():
            if v.variant.expected_clean:
                continue
            if v.clean and v.inconsistent_cases:
                parts.append(f"{v.variant.name} passed every judged case-run, but {len(v.inconsistent_cases)} cases "
                             f"changed between repeats")
            elif v.clean and self.interrupted:
                parts.append(f"{v.variant.name} passed the {v.case_runs} case-runs that finished")
            elif v.clean and self.hazards_of(v):
                parts.append(f"{v.variant.name} passed every case-run this time, but racecheck found its race "
                             f"({self.hazards_of(v)} hazard{'s' if self.hazards_of(v) != 1 else ''})")
            elif v.clean:
                parts.append(f"{v.variant.name} passed every case-run this time (its race did not show)")
            elif v.stopped and v.failed_case_runs == v.launch_errors == v.case_runs:
                parts.append(f"{v.variant.name} STOPPED ({v.stop_reason})")
            else:
                parts.append(f"{v.variant.name} {how_often_it_fails(v.failed_case_runs, v.case_runs)}")
        if self.interrupted:
            planned = self.cases * self.repeat * len(self.variants)
            ran = sum(v.case_runs for v in self.variants.values())
            verdict = f"INTERRUPTED after {ran} of {planned} case-runs" + (
                "" if self.expected_clean_are_clean else ", NOT OK")
        else:
            verdict = "OK" if self.expected_clean_are_clean else "NOT OK"
        return f"verdict: {verdict}: " + "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "seed": self.seed,
            "cases": self.cases,
            "repeat": self.repeat,
            "block_dim": self.block_dim,
            "core_processes": self.core_processes,
            "cpus": self.cpus,
            "probe": self.probe,
            "racecheck": self.racecheck,
            **({"checks": list(self.checks)} if self.checks else {}),
            "interrupted": self.interrupted,
            "elapsed_s": self.elapsed_s,
            "expected_clean_are_clean": self.expected_clean_are_clean,
            "stopped_expected_clean": self.stopped_expected_clean,
            "notes": self.notes,
            "variants": {name: v.to_dict() for name, v in self.variants.items()},
            **({"cpu_set": self.cpu_set.to_dict()} if self.cpu_set is not None else {}),
        }


def how_often_it_fails(failed: int, runs: int) -> str:
    """The verdict's words for a variant that failed ``failed`` of ``runs`` case-runs (``failed`` > 0).

    "intermittently" only for a minority: a variant failing in every or most case-runs is not
    intermittent, and the verdict line says so ("fails in every case-run (90/90)",
    "fails in most case-runs (89/90)", "fails intermittently (17/800)").
    """
    if failed >= runs:
        how = "fails in every case-run"
    elif 2 * failed > runs:
        how = "fails in most case-runs"
    else:
        how = "fails intermittently"
    return f"{how} ({failed}/{runs})"


def make_variants(op: Operator, names: Iterable[str], under_test: frozenset[str] | None = None) -> list[Variant]:
    """Variants by name ("incident", "fixed", ...). ``under_test`` overrides what "incident" drops."""
    out = []
    for name in names:
        if name not in op.variants:
            raise UsageError(f"unknown variant {name!r}; known: {', '.join(op.variants)}")
        dropped = op.variants[name]
        if name == "incident" and under_test is not None:
            dropped = under_test
            if dropped != op.variants["incident"]:
                name = "drop(" + ",".join(sorted(dropped)) + ")" if dropped else "fixed"
        out.append(Variant(name, frozenset(dropped)))
    if len({v.name for v in out}) != len(out):
        raise UsageError("the same variant was asked for twice")
    return out


class _CaseCache:
    """Cases and their prepared golden, kept while they fit, remade otherwise (long soaks)."""

    def __init__(self, op: Operator, seed: int, keep: int = 512, block_dim: int | None = None) -> None:
        self._op, self._seed, self._keep, self._block_dim = op, seed, keep, block_dim
        self._items: dict[int, tuple[Any, Any]] = {}

    def get(self, index: int) -> tuple[Any, Any]:
        item = self._items.get(index)
        if item is None:
            case = make_case_for(self._op, self._seed, index, self._block_dim)
            item = (case, self._op.prepare(case))
            if len(self._items) < self._keep:
                self._items[index] = item
        return item


def prepare_batch(op: Operator, *, block_dim: int, cpus_per_core: int | None, seed: int, cases: int,
                  probe: str = "", report: Callable[[str], None] | None = None) -> cpuset.CpuSet:
    """What comes before a batch's progress bar and its clock: the CPU set its device will run on
    (:func:`~mpnpu.operators.protocol.cpu_set_for`; hand it to :func:`run_batch`), and the
    operator's compiled kernels for its first cases, built now (each library built is a line to
    ``report``), so that no case-run waits for a compiler."""
    cpu_set = cpu_set_for(op, block_dim, cpus_per_core)
    build_kernels_for(op, seed, cases, probe, report, block_dim)
    return cpu_set


def run_batch(
    op: Operator,
    *,
    cases: int,
    repeat: int,
    variants: Sequence[Variant],
    seed: int = 0,
    block_dim: int | None = None,
    probe: str = "",
    racecheck: bool = False,
    initcheck: bool = False,
    synccheck: bool = False,
    device: Device | None = None,
    options: RuntimeOptions = DEFAULT_OPTIONS,
    progress: Callable[[int], None] | None = None,
    deadline_s: float | None = None,
    on_device: Callable[[Device], None] | None = None,
    timeline: Any = None,
    max_same_errors: int = DEFAULT_MAX_SAME_ERRORS,
    cpu_set: cpuset.CpuSet | None = None,
    notes: Sequence[str] = (),
) -> BatchResult:
    """Run ``cases`` cases x ``repeat`` repeats through every variant and judge each case-run.

    Uses ``device`` if given (its block_dim and options win), else makes one with ``options`` (GM
    poison included) and closes it. Ctrl-C (or
    ``deadline_s``, seconds from the start) stops the batch early: the result then has
    ``interrupted`` set and counts what ran. ``progress(n)`` is called after every n case-runs.
    ``on_device`` is called once with the device before the first launch (stress perturbations).
    ``timeline`` (a :class:`mpnpu.harness.timeline.TimelineSelector`) picks launches to trace and
    keeps their traces; it may ask for a few extra traced runs after the batch (never counted).
    ``max_same_errors``: a variant whose case-runs fail with the same launch error (same kind of
    error at the same kernel line) this many times in a row stops there, its result saying so
    (``stopped``, ``not_run``): each failed launch costs a rebuild of the core pool, and the next
    one would say the same (0: never stop). A variant that drops syncs stops only on an error a
    variant expected clean stopped on too (or when none runs): its own may be its race's.
    An operator whose kernels are compiled builds those of the first cases before the batch starts
    (:func:`mpnpu.operators.helpers.build_kernels_for`; silently: ``mpnpu batch`` calls it first,
    with its lines, before the progress bar, through :func:`prepare_batch`).
    ``cpu_set`` (from :func:`prepare_batch`): the whole batch runs pinned there, this process (which
    dispatches launches and computes goldens) and every core process it forks, and the result
    records it (``cpus``, ``cpu_set``, a note, and one more when CPUs are left idle, which can hide
    a race). ``notes``: lines the caller adds to the result's notes, after the CPU set's.
    ``initcheck``, ``synccheck``: every launch is traced and checked (:mod:`mpnpu.racecheck.initcheck`,
    :mod:`mpnpu.racecheck.synccheck`), each variant's findings in its ``check_log``.
    """
    for name, value, low in (("cases", cases, 1), ("repeat", repeat, 1), ("seed", seed, 0),
                             ("max_same_errors", max_same_errors, 0)):
        if not is_int(value) or value < low:
            raise UsageError(f"{name} must be an integer >= {low}, got {value!r}")
    if not variants:
        raise UsageError("no variant to run")
    if probe and probe not in op.probes:
        raise UsageError(f"unknown probe {probe!r}; known: {', '.join(op.probes)}")
    # (before the device: a compile error leaves nothing to end)
    build_kernels_for(op, seed, cases, probe, block_dim=device.block_dim if device is not None
                      else block_dim or default_block_dim(op))
    with cpuset.pinned(cpu_set):  # (None: no change)
        own_device = device is None
        if device is None:
            device = device_for(op, block_dim or default_block_dim(op), options=options)
        results = {v.name: VariantResult(v, repeat) for v in variants}
        batch = BatchResult(
            operator=op.name, seed=seed, cases=cases, repeat=repeat, block_dim=device.block_dim, probe=probe,
            cpus=len(available_cpus()), variants=results, racecheck=racecheck, sync_points=dict(op.sync_points),
            processes=device.topology.n_cores,
        )
        checks = None
        if initcheck or synccheck:
            from mpnpu.racecheck.checks import TraceChecks
            from mpnpu.racecheck.findings import FindingLog

            checks = TraceChecks(initcheck=initcheck, synccheck=synccheck)
            batch.checks = checks.checks
            for res in results.values():
                res.check_log = FindingLog()
        analyses = None
        if racecheck:
            # Imported on demand: only racecheck runs need it (and its import is not free).
            from mpnpu import racecheck as racecheck_mod
            from mpnpu.racecheck.reuse import AnalysisCache

            # One cache for every variant: its key holds the dropped syncs, and a case's launches
            # repeat in every round of the batch (docs/racecheck-speed.md)
            analyses = AnalysisCache()
            for res in results.values():
                res.hazard_log = racecheck_mod.HazardLog()
        cache = _CaseCache(op, seed, block_dim=device.block_dim)
        loop = _BatchLoop(op, device, cache, list(variants), batch, probe, None, progress,
                          deadline_s, timeline, max_same_errors, checks)
        try:
            with blas_threads(1), _analysis(analyses, checks is not None) as background:
                loop.analyses = background
                if on_device is not None:
                    on_device(device)
                loop.run()
                if background is not None:
                    background.finish()
                if timeline is not None and not batch.interrupted:
                    loop.timeline_extra_runs()
        except KeyboardInterrupt as e:
            batch.interrupted, batch.interrupt = True, e
        finally:
            batch.elapsed_s = time.perf_counter() - loop.start
            if own_device:
                device.close()
    if cpu_set is not None:
        batch.cpus, batch.cpu_set = cpu_set.n_cpus, cpu_set
        batch.notes.append(f"CPU set: {cpu_set.describe()}")
    batch.notes.extend(notes)
    if cpu_set is not None and batch.core_processes < cpu_set.n_cpus:
        batch.notes.append(f"note: {batch.core_processes} core processes on {cpu_set.n_cpus} CPUs leave CPUs idle, "
                           "which can hide the race; see mpnpu stress for placement and chaos")
    return batch


@contextmanager
def _analysis(cache: Any, checks: bool = False) -> Iterator[Any]:
    """Racecheck's analysis with ``cache`` and initcheck's / synccheck's (``checks``) on a worker
    thread while the batch goes on (:mod:`mpnpu.racecheck.background`); None without any of them."""
    if cache is None and not checks:
        yield None
        return
    from mpnpu.racecheck.background import BackgroundAnalysis

    # (racecheck's analyses in a child process at the lowest priority: on CPUs the cores leave idle)
    with BackgroundAnalysis(cache, in_process=settings.from_env(settings.RACECHECK_PROCESS)) as background:
        yield background


@dataclass
class _BatchLoop:
    """The repeat x case x variant loop of one batch, writing into ``batch``."""

    op: Operator
    device: Device
    cache: _CaseCache
    variants: list[Variant]
    batch: BatchResult
    probe: str
    #: mpnpu.racecheck.background.BackgroundAnalysis when racechecking or checking, else None
    analyses: Any
    progress: Callable[[int], None] | None
    deadline_s: float | None
    timeline: Any = None  # TimelineSelector
    max_same_errors: int = DEFAULT_MAX_SAME_ERRORS
    checks: Any = None  # mpnpu.racecheck.checks.TraceChecks when running initcheck or synccheck
    start: float = field(default_factory=time.perf_counter)

    def run(self) -> None:
        results = self.batch.variants
        try:
            for r in range(self.batch.repeat):
                for i in range(self.batch.cases):
                    running = [v for v in self.variants if not results[v.name].stopped]
                    if not running:
                        return
                    case, prepared = self.cache.get(i)
                    for v in running:
                        if self.deadline_s is not None and time.perf_counter() - self.start > self.deadline_s:
                            self.batch.interrupted = True
                            return
                        self._one(r, i, case, prepared, v)
        finally:
            for res in results.values():
                if res.stopped:
                    res.not_run = self.batch.cases * self.batch.repeat - res.case_runs

    def _one(self, repeat: int, index: int, case: Any, prepared: Any, v: Variant) -> None:
        t0 = time.perf_counter()
        traced = self.analyses is not None or self.checks is not None or (
            self.timeline is not None and self.timeline.wants(v.name, index))
        verdict, error, trace, failure = _run_one(self.op, self.device, case, prepared, v, self.probe, traced)
        res = self.batch.variants[v.name]
        res.elapsed_s += time.perf_counter() - t0
        details = launch_error_details(failure) if failure is not None else None
        res.record(index, repeat, verdict, error, time.perf_counter() - self.start, details)
        key = error_key(failure) if failure is not None else None
        if self.max_same_errors and res.same_error(key) >= self.max_same_errors and self._may_stop(v, key):
            res.stop(error)
        # (the batch opens the worker whenever it checks: checks are never skipped for want of one)
        assert self.checks is None or self.analyses is not None
        if self.analyses is not None and trace is not None:
            # (analysed while the next case-runs run; the logs are read once the worker is done)
            if self.analyses.cache is not None:
                self.analyses.submit(trace, res.hazard_log)
            if self.checks is not None:
                self.analyses.later(partial(_check, self.checks, trace, res.check_log))
        if self.timeline is not None:
            self.timeline.offer(v.name, index, repeat, res.case_runs, verdict is not None and verdict.passed,
                                verdict_summary(verdict, error), trace)
        if self.progress is not None:
            self.progress(1)

    def _may_stop(self, v: Variant, key: tuple[str, ...] | None) -> bool:
        """Whether a variant whose last case-runs ended in the same error ``key`` stops. A variant
        expected clean does; one that drops syncs may be failing because of its race (stale data
        giving an offset past a tensor's end is a memcheck error at the same line every time), so it
        stops only on the error a variant expected clean of this batch stopped on, or when the batch
        runs none."""
        if v.expected_clean:
            return True
        clean = [self.batch.variants[u.name] for u in self.variants if u.expected_clean]
        return not clean or any(c.stop_key == key for c in clean)

    def timeline_extra_runs(self, tries: int = 10) -> None:
        """Traced runs of cases the timeline still wants (not counted in the batch's results)."""
        by_name = {v.name: v for v in self.variants}
        for name, index in self.timeline.pending():
            case, prepared = self.cache.get(index)
            for _ in range(tries):
                verdict, error, trace, _ = _run_one(self.op, self.device, case, prepared, by_name[name], self.probe,
                                                    True)
                passed = verdict is not None and verdict.passed
                self.timeline.offer(name, index, -1, 0, passed, verdict_summary(verdict, error), trace, extra=True)
                if passed:
                    break


def _check(checks: Any, trace: Any, log: Any) -> None:
    """initcheck's and synccheck's findings of one launch into its variant's log (on the worker)."""
    log.add(checks.run(trace))


def verdict_summary(verdict: Verdict | None, error: str = "") -> str:
    """A case-run's verdict in a few words: "passed", "FAILED: out (...)"."""
    if verdict is None:
        return f"launch error: {error}"
    if verdict.passed:
        return "passed"
    outputs = ", ".join(verdict.failed_outputs) or "outputs"
    return f"FAILED: {outputs} (relative error up to {verdict.max_rel_error:.3g})"


def _run_one(op: Operator, device: Device, case: Any, prepared: Any, v: Variant, probe: str,
             trace: bool) -> tuple[Verdict | None, str, Any, LaunchError | None]:
    try:
        outputs, launch = op.run(device, case, drop_syncs=v.dropped, probe=probe, trace=trace)
    except LaunchError as e:
        # A variant that drops a flag wait can overflow a flag counter, as on the device: that
        # case-run failed, and the batch goes on (the device has rebuilt its pool).
        return None, f"case {getattr(case, 'index', '?')}: {e}", None, e
    return op.judge(case, prepared, outputs, probe), "", launch.trace, None


def _scalars(details: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in details.items() if isinstance(v, (str, int, float, bool)) or v is None}


def launch_error_details(e: LaunchError) -> dict[str, Any]:
    """A launch error as data for reports: its class and message, what it names (core, error_type,
    site and function of the kernel line, the last frames of the core's traceback as
    ``traceback``), and in ``error`` the details of the error the core raised (a memcheck's kind,
    tensor, range, size, site, call)."""
    d = e.details
    out: dict[str, Any] = {"class": type(e).__name__, "message": str(e)}
    for key in ("core", "error_type", "error_message", "site", "function", "exitcode", "last_words"):
        if d.get(key) not in (None, ""):
            out[key] = d[key]
    if d.get("traceback_tail"):
        out["traceback"] = d["traceback_tail"]
    cause = e.__cause__
    if isinstance(cause, MpnpuError) and not isinstance(cause, RemoteTraceback) and cause.details:
        out["error"] = _scalars(cause.details)
    return out


def error_key(e: LaunchError) -> tuple[str, ...]:
    """What makes two launch errors "the same" for stopping a variant: the error's class, the class
    of what the core raised, and the kernel line (site) it names — not the numbers in its message."""
    d = e.details
    cause = e.__cause__
    site = str(d.get("site") or (cause.details.get("site", "") if isinstance(cause, MpnpuError) else ""))
    return (type(e).__name__, str(d.get("error_type", "")), site, str(d.get("exitcode", "")))
