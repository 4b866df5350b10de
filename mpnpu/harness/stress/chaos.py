"""Seeded chaos: suspend core processes (SIGSTOP) for random short spans at random moments.

In the spirit of rr's chaos mode: a race that needs one core to fall behind at one particular point
shows up when some core is, now and then, held back for a while. Here the OS does the holding: a
helper process sends SIGSTOP to a target core process, waits, and sends SIGCONT. The kernel's code
and data are never touched.

Two parts, so a run can be replayed:

- :class:`ChaosSchedule` — *what* to do: entries ``(t_offset_s, target_index, suspend_s)``, fully
  determined by the arguments of :meth:`ChaosSchedule.generate`, and saved/loaded as JSON
  (:meth:`~ChaosSchedule.to_dict` / :meth:`~ChaosSchedule.from_dict`; the entries themselves are
  stored, so a replay does not depend on the random generator of a Python version).
- :class:`ChaosRunner` — *doing* it to a list of pids, from a background helper process (fork
  context, see :mod:`mpnpu.harness.stress.load` for why a process), returning a :class:`ChaosReport` of what
  actually happened.

Design decisions:

- **Overlapping suspensions are allowed.** Entries fire at their scheduled times whatever is already
  suspended, so two cores can be held at once (that is how "cores 1 and 3 both late" happens). An
  entry that targets a core already suspended extends that suspension to the later end (counted in
  ``ChaosReport.merged``); a core is never stopped twice and resumed once too early.
- **Looping.** With ``loop=True`` the schedule repeats: entry ``m`` of the endless stream is
  ``entries[m % len]`` at time ``(m // len) · duration_s + t_offset_s``. A sweep longer than the
  schedule keeps getting chaos without generating a huge schedule.
- **Pid swapping.** A runner's pids are fixed. When the device rebuilds its pool (new pids), stop the
  runner and start a new one on the new pids at ``start_entry=report.next_entry``: the stream
  continues where it stopped (the first new entry fires one scheduled gap after the start), so the
  whole sweep still sees one reproducible sequence of entries. Wall time spent rebuilding is skipped,
  not compressed.
- **Nothing is left stopped.** The helper resumes every target it holds in ``finally`` (on stop, on
  SIGTERM, when its parent dies: it polls ``getppid()``), ignoring SIGTERM during that cleanup; and
  :meth:`ChaosRunner.stop` sends SIGCONT to every target again from the parent, which covers a helper
  killed with SIGKILL.
- **Vanished pids** are skipped without error and counted (``entries_vanished``).
"""

from __future__ import annotations

import bisect
import math
import os
import random
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import psutil

from mpnpu.errors import UsageError
from mpnpu.harness.stress.load import HelperOwner, HelperProcess, shield_cleanup, should_stop
from mpnpu.harness.stress.placement import process_handles
from mpnpu.runtime.checks import is_int

__all__ = ["ChaosEntry", "ChaosSchedule", "ChaosReport", "ChaosRunner", "resume_all"]

_FORMAT = "mpnpu.chaos_schedule/1"


class ChaosEntry(NamedTuple):
    """At ``t_offset_s`` into the schedule, suspend target ``target_index`` for ``suspend_s``."""

    t_offset_s: float
    target_index: int
    suspend_s: float


@dataclass(frozen=True)
class ChaosSchedule:
    """A reproducible list of suspensions over ``duration_s`` for ``n_targets`` targets.

    Build one with :meth:`generate`; iterate it (or use ``.entries``) for the entries, sorted by time.
    """

    seed: int
    n_targets: int
    duration_s: float
    mean_interval_s: float
    max_suspend_s: float
    min_suspend_s: float
    entries: tuple[ChaosEntry, ...]

    @classmethod
    def generate(
        cls,
        seed: int,
        n_targets: int,
        duration_s: float,
        mean_interval_s: float,
        max_suspend_s: float,
        *,
        min_suspend_s: float | None = None,
    ) -> "ChaosSchedule":
        """Draw a schedule from ``random.Random(seed)``; the same arguments give the same schedule.

        - start times: a Poisson process, gaps ``~ Exponential(mean = mean_interval_s)``, all
          ``< duration_s`` (irregular on purpose: a periodic schedule would lock onto the launch rhythm);
        - target: uniform over ``range(n_targets)``;
        - suspension: log-uniform on ``[min_suspend_s, max_suspend_s]`` (default minimum
          ``max_suspend_s / 100``), so short holds (that reorder a barrier release, ~10–500 µs) and
          long ones (that let a whole stage of the other cores run ahead) both occur.
        """
        if not is_int(seed):
            raise UsageError(f"chaos schedule: seed must be an int, got {seed!r}")
        if n_targets < 1:
            raise UsageError(f"chaos schedule: n_targets must be >= 1, got {n_targets}")
        if not duration_s > 0 or not mean_interval_s > 0 or not max_suspend_s > 0:
            raise UsageError(
                "chaos schedule: duration_s, mean_interval_s and max_suspend_s must be > 0, got "
                f"{duration_s}, {mean_interval_s}, {max_suspend_s}"
            )
        lo = max_suspend_s / 100.0 if min_suspend_s is None else float(min_suspend_s)
        if not 0 < lo <= max_suspend_s:
            raise UsageError(f"chaos schedule: need 0 < min_suspend_s <= max_suspend_s, got {lo}, {max_suspend_s}")
        rng = random.Random(seed)
        log_lo, log_hi = math.log(lo), math.log(max_suspend_s)
        entries: list[ChaosEntry] = []
        t = rng.expovariate(1.0 / mean_interval_s)
        while t < duration_s:
            target = rng.randrange(n_targets)
            suspend = math.exp(rng.uniform(log_lo, log_hi))
            entries.append(ChaosEntry(t, target, suspend))
            t += rng.expovariate(1.0 / mean_interval_s)
        return cls(seed, n_targets, float(duration_s), float(mean_interval_s), float(max_suspend_s), lo, tuple(entries))

    # -- the entries as a sequence ------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[ChaosEntry]:
        return iter(self.entries)

    def __getitem__(self, i: int) -> ChaosEntry:
        return self.entries[i]

    @property
    def total_suspend_s(self) -> float:
        """Sum of the suspensions of one pass (overlaps on one target counted twice)."""
        return sum(e.suspend_s for e in self.entries)

    # -- the looped stream -----------------------------------------------------------------------

    def stream_time(self, m: int) -> float:
        """Time of entry ``m`` of the looped stream: ``(m // len) · duration_s + entries[m % len].t_offset_s``."""
        if not self.entries:
            raise UsageError("chaos schedule has no entries")
        cycle, i = divmod(m, len(self.entries))
        return cycle * self.duration_s + self.entries[i].t_offset_s

    def stream_entry(self, m: int) -> ChaosEntry:
        """Entry ``m`` of the looped stream, with its time on the stream clock."""
        e = self.entries[m % len(self.entries)]
        return ChaosEntry(self.stream_time(m), e.target_index, e.suspend_s)

    def position_at(self, t_s: float) -> int:
        """How many stream entries are due at or before stream time ``t_s`` (the next entry's index)."""
        if not self.entries or t_s < 0:
            return 0
        cycle = int(t_s // self.duration_s)
        offsets = [e.t_offset_s for e in self.entries]
        pos = cycle * len(self.entries) + bisect.bisect_right(offsets, t_s - cycle * self.duration_s)
        # The estimate can be off by one at float boundaries; settle it with stream_time itself, the
        # arithmetic the runner uses.
        while self.stream_time(pos) <= t_s:
            pos += 1
        while pos > 0 and self.stream_time(pos - 1) > t_s:
            pos -= 1
        return pos

    # -- JSON ---------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; entries are stored as ``[t_offset_s, target_index, suspend_s]`` lists."""
        return {
            "format": _FORMAT,
            "seed": self.seed,
            "n_targets": self.n_targets,
            "duration_s": self.duration_s,
            "mean_interval_s": self.mean_interval_s,
            "max_suspend_s": self.max_suspend_s,
            "min_suspend_s": self.min_suspend_s,
            "entries": [list(e) for e in self.entries],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ChaosSchedule":
        """Inverse of :meth:`to_dict` (validates the entries; raises :class:`UsageError` if malformed)."""
        if d.get("format") != _FORMAT:
            raise UsageError(f"not a chaos schedule (format {d.get('format')!r}, expected {_FORMAT!r})")
        try:
            n_targets = int(d["n_targets"])
            duration_s = float(d["duration_s"])
            entries = tuple(ChaosEntry(float(t), int(i), float(s)) for t, i, s in d["entries"])
            sched = cls(
                int(d["seed"]),
                n_targets,
                duration_s,
                float(d["mean_interval_s"]),
                float(d["max_suspend_s"]),
                float(d["min_suspend_s"]),
                entries,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(f"malformed chaos schedule: {e}") from None
        times = [e.t_offset_s for e in entries]
        if times != sorted(times) or any(not 0 <= t < duration_s for t in times):
            raise UsageError("malformed chaos schedule: entry times must be sorted and within [0, duration_s)")
        if any(not 0 <= e.target_index < n_targets or e.suspend_s < 0 for e in entries):
            raise UsageError("malformed chaos schedule: target index out of range or negative suspension")
        return sched


@dataclass
class ChaosReport:
    """What a :class:`ChaosRunner` actually did.

    ``next_entry`` is the stream position to resume from (``ChaosRunner(..., start_entry=next_entry)``).
    ``reported`` is False if the helper died without reporting (SIGKILL): the counts are then 0 and
    ``next_entry`` is estimated from the elapsed wall time.
    """

    pids: list[int]
    start_entry: int
    next_entry: int
    entries_executed: int = 0  #: suspensions started or extended
    entries_vanished: int = 0  #: entries skipped because the target pid was gone
    merged: int = 0  #: entries that extended a suspension already in progress
    cut_short: int = 0  #: suspensions ended early by stop
    suspended_s_by_target: list[float] = field(default_factory=list)
    max_lateness_s: float = 0.0  #: worst delay of an entry behind its scheduled time
    elapsed_s: float = 0.0
    finished: bool = False  #: the (non-looping) schedule ran to its end
    reported: bool = False

    @property
    def suspended_s_total(self) -> float:
        """Total time targets spent suspended (each target's suspensions, summed over targets)."""
        return sum(self.suspended_s_by_target)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["suspended_s_total"] = self.suspended_s_total
        return d


def _run_chaos(
    conn: Any,
    parent_pid: int,
    report: ChaosReport,
    schedule: ChaosSchedule,
    procs: list[psutil.Process],
    loop: bool,
) -> None:
    n = len(schedule.entries)
    m = report.start_entry

    def has_next() -> bool:
        return n > 0 and (loop or m < n)

    base = schedule.stream_time(m - 1) if m > 0 else 0.0
    t0 = time.monotonic()
    resume_at: dict[int, float] = {}  # target index -> monotonic time to resume it
    since: dict[int, float] = {}  # target index -> monotonic time it was suspended
    gone: set[int] = set()

    def resume(idx: int) -> None:
        try:
            procs[idx].resume()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            gone.add(idx)
        report.suspended_s_by_target[idx] += time.monotonic() - since.pop(idx)
        del resume_at[idx]

    try:
        while True:
            now = time.monotonic()
            for idx in [i for i, when in resume_at.items() if when <= now]:
                resume(idx)
            while has_next() and t0 + schedule.stream_time(m) - base <= now:
                entry = schedule.stream_entry(m)
                report.max_lateness_s = max(report.max_lateness_s, now - (t0 + entry.t_offset_s - base))
                m += 1
                report.next_entry = m
                idx = entry.target_index
                if idx in gone:
                    report.entries_vanished += 1
                elif idx in resume_at:
                    resume_at[idx] = max(resume_at[idx], now + entry.suspend_s)
                    report.entries_executed += 1
                    report.merged += 1
                else:
                    # Booked (and counted) before the SIGSTOP: a SIGTERM landing right after the
                    # signal is sent still finds the target in resume_at, so `finally` resumes it,
                    # and the report still counts the suspension it cut short.
                    since[idx] = time.monotonic()
                    resume_at[idx] = since[idx] + entry.suspend_s
                    report.entries_executed += 1
                    try:
                        procs[idx].suspend()  # psutil refuses if the pid was reused
                    except (psutil.NoSuchProcess, psutil.AccessDenied):
                        del since[idx], resume_at[idx]
                        gone.add(idx)
                        report.entries_executed -= 1
                        report.entries_vanished += 1
                        continue
            if not has_next() and not resume_at:
                report.finished = True
                break
            wake = min([*resume_at.values(), *([t0 + schedule.stream_time(m) - base] if has_next() else [])])
            if should_stop(conn, parent_pid, wake - time.monotonic()):
                break
    finally:
        shield_cleanup()
        report.cut_short += len(resume_at)
        for idx in list(resume_at):
            resume(idx)
        report.elapsed_s = time.monotonic() - t0
        report.reported = True


class ChaosRunner(HelperOwner):
    """Execute a :class:`ChaosSchedule` on ``pids`` (``pids[i]`` is target ``i``) from a helper process.

    ``loop``: repeat the schedule until stopped. ``start_entry``: stream position to begin at (from a
    previous runner's ``ChaosReport.next_entry``, when the pool was rebuilt with new pids).
    A non-looping runner ends by itself after the last entry; :meth:`stop` must still be called
    (it collects the report). See the module docstring for the guarantees.
    """

    def __init__(
        self, schedule: ChaosSchedule, pids: Sequence[int], *, loop: bool = False, start_entry: int = 0
    ) -> None:
        pids = [int(p) for p in pids]
        if len(pids) != schedule.n_targets:
            raise UsageError(f"ChaosRunner: schedule has {schedule.n_targets} targets but {len(pids)} pids were given")
        if len(set(pids)) != len(pids):
            raise UsageError(f"ChaosRunner: duplicate pids {pids}")
        if os.getpid() in pids:
            raise UsageError("ChaosRunner: refusing to suspend the calling process itself")
        if start_entry < 0:
            raise UsageError(f"ChaosRunner: start_entry must be >= 0, got {start_entry}")
        self.schedule = schedule
        self.pids = pids
        self.loop = loop
        self.start_entry = start_entry
        self._procs: list[psutil.Process] = []
        self._helper: HelperProcess | None = None
        self._t_start = 0.0
        self._report: ChaosReport | None = None


    def start(self) -> "ChaosRunner":
        """Start the helper. Raises :class:`~mpnpu.harness.stress.placement.ProcessGoneError` if a pid is
        already gone (a wrong pid list is a bug; pids that vanish *later* are skipped and counted)."""
        if self._helper is not None:
            raise UsageError("ChaosRunner already started (a runner runs once; make a new one)")
        # Handles made before the fork: psutil then refuses to signal a reused pid.
        self._procs = process_handles(self.pids, "run chaos on")
        report = ChaosReport(
            pids=list(self.pids),
            start_entry=self.start_entry,
            next_entry=self.start_entry,
            suspended_s_by_target=[0.0] * len(self.pids),
        )
        helper = HelperProcess("mpnpu-chaos", _run_chaos, report, (self.schedule, self._procs, self.loop))
        self._t_start = time.monotonic()
        helper.start()
        self._helper = helper
        return self

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for a non-looping schedule to run out; True if it has."""
        process = self._helper.process if self._helper is not None else None
        if process is None:
            raise UsageError("ChaosRunner.wait() before start()")
        process.join(timeout)
        return not process.is_alive()

    def stop(self, timeout: float = 0.5) -> ChaosReport:
        """Stop, resume every target (from the helper, then again from here), return the report.

        Idempotent: a second call returns the same report.
        """
        if self._report is not None:
            return self._report
        if self._helper is None:
            raise UsageError("ChaosRunner.stop() before start()")
        elapsed = time.monotonic() - self._t_start
        try:
            report = self._helper.stop(timeout)
        finally:
            # Belt and braces: if the helper was SIGKILLed mid-suspension, this is what resumes.
            resume_all(self._procs)
        if not isinstance(report, ChaosReport):
            start = self.start_entry
            base = self.schedule.stream_time(start - 1) if start > 0 and self.schedule.entries else 0.0
            next_entry = max(start, self.schedule.position_at(base + elapsed)) if self.schedule.entries else start
            if not self.loop:
                next_entry = min(next_entry, len(self.schedule.entries))
            report = ChaosReport(
                pids=list(self.pids),
                start_entry=start,
                next_entry=next_entry,
                suspended_s_by_target=[0.0] * len(self.pids),
                elapsed_s=elapsed,
            )
        self._report = report
        return report

    def __enter__(self) -> "ChaosRunner":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def resume_all(procs: Iterable[psutil.Process | int]) -> int:
    """Send SIGCONT to each process (handles or pids), skipping ones that are gone; returns how many
    were signalled. Safe on processes that are not stopped."""
    count = 0
    for p in procs:
        try:
            (p if isinstance(p, psutil.Process) else psutil.Process(p)).resume()
            count += 1
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return count
