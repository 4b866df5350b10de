"""Where the core processes run: pin them to CPUs, read the pinning back, undo it, migrate them.

Placement changes which races the OS lets happen: ``spread`` (one process per CPU) lets cores run
truly in parallel, ``pack`` (all on one CPU) turns every launch into time-slicing, and a
:class:`Migrator` (like ``stress-ng --affinity-rand``) moves processes between CPUs at random moments,
which costs them cache warmth and scheduling latency at points the kernel does not choose.

Everything works on plain pids and only calls ``sched_setaffinity`` on them: the kernel's code and data
are never touched. Maps are ``{pid: [cpu, ...]}`` with sorted CPU lists, so they compare and
serialise plainly.

Typical use::

    saved = read_affinity(pids)
    try:
        spread(pids, available_cpus())
        ...
    finally:
        restore(saved)
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psutil

from mpnpu.errors import ProcessGoneError, UsageError
from mpnpu.harness.stress.load import HelperOwner, HelperProcess, shield_cleanup, sleep_or_stop
from mpnpu.runtime.procutil import available_cpus

__all__ = [
    "ProcessGoneError",
    "available_cpus",
    "apply_affinity",
    "spread",
    "pack",
    "read_affinity",
    "restore",
    "Migrator",
    "MigratorReport",
]

AffinityMap = dict[int, list[int]]


def _unique(pids: Iterable[int]) -> list[int]:
    return list(dict.fromkeys(int(p) for p in pids))


def _check_cpus(cpus: Sequence[int] | None, who: str) -> list[int]:
    allowed = available_cpus()
    if cpus is None:
        return allowed
    cpus = [int(c) for c in cpus]
    if not cpus:
        raise UsageError(f"{who}: empty CPU list")
    bad = sorted(set(cpus) - set(allowed))
    if bad:
        raise UsageError(f"{who}: CPUs {bad} are not available (available: {allowed})")
    return cpus


def _gone(pid: int, action: str) -> ProcessGoneError:
    return ProcessGoneError(f"cannot {action}: process {pid} no longer exists", pid=pid, action=action)


def process_handles(pids: Iterable[int], action: str) -> list[psutil.Process]:
    """psutil handles for ``pids``, raising :class:`ProcessGoneError` for a gone pid.

    Helpers create them before they fork and act only through them: psutil then refuses to signal
    or re-pin a process whose pid was reused by an unrelated process after ours exited.
    """
    out = []
    for pid in _unique(pids):
        try:
            out.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            raise _gone(pid, action) from None
    return out


def read_affinity(pids: Iterable[int]) -> AffinityMap:
    """``{pid: sorted CPUs}`` for each pid. Raises :class:`ProcessGoneError` if a pid is gone."""
    out: AffinityMap = {}
    for pid in _unique(pids):
        try:
            out[pid] = sorted(psutil.Process(pid).cpu_affinity())
        except psutil.NoSuchProcess:
            raise _gone(pid, "read CPU affinity") from None
    return out


def apply_affinity(mapping: Mapping[int, Sequence[int]]) -> AffinityMap:
    """Pin each pid to its CPUs; all-or-nothing.

    If a pid is gone, the pids already changed by this call get their previous affinity back before
    :class:`ProcessGoneError` is raised, so a failed call leaves no half-applied placement behind.
    Returns the map applied.
    """
    applied: AffinityMap = {}
    previous: AffinityMap = {}
    try:
        for pid, cpus in mapping.items():
            try:
                proc = psutil.Process(pid)
                previous[pid] = sorted(proc.cpu_affinity())
                proc.cpu_affinity(sorted(cpus))
            except psutil.NoSuchProcess:
                raise _gone(pid, "set CPU affinity") from None
            applied[pid] = sorted(cpus)
    except BaseException:
        restore(previous)
        raise
    return applied


def spread(pids: Iterable[int], cpus: Sequence[int] | None = None) -> AffinityMap:
    """Pin process ``i`` to ``cpus[i % len(cpus)]`` (round-robin, one CPU each).

    ``cpus`` defaults to :func:`available_cpus`. Returns the ``{pid: [cpu]}`` map applied.
    """
    cpus = _check_cpus(cpus, "spread")
    return apply_affinity({pid: [cpus[i % len(cpus)]] for i, pid in enumerate(_unique(pids))})


def pack(pids: Iterable[int], cpus: Sequence[int] | None = None) -> AffinityMap:
    """Pin every process to one CPU, the first of ``cpus`` (default :func:`available_cpus`).

    Same signature as :func:`spread` so a caller can pick either by name. Returns the map applied.
    """
    cpus = _check_cpus(cpus, "pack")
    return apply_affinity({pid: [cpus[0]] for pid in _unique(pids)})


def restore(saved: Mapping[int, Sequence[int]]) -> list[int]:
    """Give each pid its saved affinity back (from :func:`read_affinity`).

    Cleanup, so it never raises for a pid that is gone (it needs no restoring) and continues past
    failures. Returns the pids actually restored.
    """
    done: list[int] = []
    for pid, cpus in saved.items():
        try:
            psutil.Process(pid).cpu_affinity(sorted(cpus))
            done.append(pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError, OSError):
            pass
    return done


# -- random migration in a helper process ---------------------------------------------------------


@dataclass
class MigratorReport:
    """What a :class:`Migrator` did. ``reported`` is False if its helper died without reporting
    (the counts are then unknown, left at 0)."""

    moves: int = 0
    ticks: int = 0
    vanished: int = 0
    reported: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"moves": self.moves, "ticks": self.ticks, "vanished": self.vanished, "reported": self.reported}


def _migrate(
    conn: Any,
    parent_pid: int,
    report: MigratorReport,
    procs: list[psutil.Process],
    original: AffinityMap,
    cpus: list[int],
    seed: int,
    min_interval_s: float,
    max_interval_s: float,
) -> None:
    rng = random.Random(seed)
    gone: set[int] = set()
    try:
        while True:
            report.ticks += 1
            for proc in procs:
                cpu = rng.choice(cpus)  # drawn even for a gone pid, so the sequence depends on the seed only
                if proc.pid in gone:
                    continue
                try:
                    # psutil.Process checks the pid was not reused since it was created in start().
                    proc.cpu_affinity([cpu])
                    report.moves += 1
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    gone.add(proc.pid)
            report.vanished = len(gone)
            if sleep_or_stop(conn, parent_pid, rng.uniform(min_interval_s, max_interval_s)):
                break
    finally:
        shield_cleanup()
        restore(original)
        report.reported = True


class Migrator(HelperOwner):
    """Re-pin ``pids`` to random CPUs at random intervals, from a background process.

    Every tick, each pid is pinned to one CPU drawn from ``cpus``; the next tick comes after
    ``uniform(min_interval_s, max_interval_s)`` seconds. Both draws come from
    ``random.Random(seed)``, so the sequence of moves is reproducible (their timing is not).

    The original affinity is read in :meth:`start` and restored by the helper when it ends (stop,
    SIGTERM, or its parent dying) and again by :meth:`stop` in the parent (in case the helper was
    SIGKILLed). :meth:`stop` returns within about 0.5 s.
    """

    def __init__(
        self,
        pids: Iterable[int],
        cpus: Sequence[int] | None = None,
        seed: int = 0,
        min_interval_s: float = 0.005,
        max_interval_s: float = 0.05,
    ) -> None:
        if not 0 < min_interval_s <= max_interval_s:
            raise UsageError(
                f"Migrator: need 0 < min_interval_s <= max_interval_s, got {min_interval_s}, {max_interval_s}"
            )
        self.pids = _unique(pids)
        self.cpus = _check_cpus(cpus, "Migrator")
        self.seed = int(seed)
        self.min_interval_s = float(min_interval_s)
        self.max_interval_s = float(max_interval_s)
        self._original: AffinityMap = {}
        self._helper: HelperProcess | None = None
        self._report: MigratorReport | None = None


    def start(self) -> "Migrator":
        """Read the original affinity (raises :class:`ProcessGoneError` for a gone pid) and start."""
        if self._helper is not None:
            raise UsageError("Migrator already started (a Migrator runs once; make a new one)")
        self._original = read_affinity(self.pids)
        # Created here, before the fork, so the helper's psutil objects detect pid reuse.
        procs = process_handles(self.pids, "migrate")
        helper = HelperProcess(
            "mpnpu-migrator",
            _migrate,
            MigratorReport(),
            (procs, self._original, self.cpus, self.seed, self.min_interval_s, self.max_interval_s),
        )
        helper.start()  # nothing to undo if the fork fails: no pid has been touched yet
        self._helper = helper
        return self

    def stop(self, timeout: float = 0.5) -> MigratorReport:
        """Stop migrating and restore every pid's original affinity. Idempotent."""
        if self._report is not None:
            return self._report
        if self._helper is None:
            raise UsageError("Migrator.stop() before start()")
        try:
            report = self._helper.stop(timeout)
        finally:
            restore(self._original)
        self._report = report if isinstance(report, MigratorReport) else MigratorReport()
        return self._report

    def __enter__(self) -> "Migrator":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
