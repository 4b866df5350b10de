"""Stress building blocks: perturb how the OS schedules the core processes, never the kernel itself.

Everything here acts on plain pids (the device's core processes) through the OS only:

- :mod:`~mpnpu.harness.stress.placement` — pin to CPUs (:func:`spread`, :func:`pack`), read back, :func:`restore`,
  random migration (:class:`Migrator`);
- :mod:`~mpnpu.harness.stress.chaos` — seeded, replayable SIGSTOP/SIGCONT schedules (:class:`ChaosSchedule`,
  :class:`ChaosRunner`);
- :mod:`~mpnpu.harness.stress.load` — competing busy processes (:class:`BackgroundLoad`);
- :mod:`~mpnpu.harness.stress.contention` — context switches and CPU time per process (:func:`sample`, :func:`delta`).

Helpers run in background *processes* from ``multiprocessing.get_context("fork")`` (never threads:
the caller forks core processes later), each owned by one object whose ``stop()`` undoes its effects;
each helper also exits by itself when its parent dies. Rates and bounds live in :mod:`mpnpu.harness.stats`.
"""

from mpnpu.errors import ProcessGoneError
from mpnpu.harness.stress.chaos import ChaosEntry, ChaosReport, ChaosRunner, ChaosSchedule, resume_all
from mpnpu.harness.stress.contention import COUNTERS, delta, sample
from mpnpu.harness.stress.load import BackgroundLoad
from mpnpu.harness.stress.placement import (
    Migrator,
    MigratorReport,
    apply_affinity,
    available_cpus,
    pack,
    read_affinity,
    restore,
    spread,
)

__all__ = [
    "available_cpus",
    "spread",
    "pack",
    "apply_affinity",
    "read_affinity",
    "restore",
    "ProcessGoneError",
    "Migrator",
    "MigratorReport",
    "ChaosEntry",
    "ChaosSchedule",
    "ChaosRunner",
    "ChaosReport",
    "resume_all",
    "BackgroundLoad",
    "sample",
    "delta",
    "COUNTERS",
]
