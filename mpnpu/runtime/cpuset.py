"""CPU sets: how many CPUs a device runs its core processes on, which ones, and pinning to them.

Why a device gets a CPU set sized to its block_dim. Whether a missing inter-core barrier shows
depends on how crowded the CPUs are that the core processes run on: 3 core processes (block_dim 1)
time-sliced on 2 CPUs show the incident in a few percent of case-runs; the same 3 processes on an
idle 64-CPU server each get a CPU of their own and may never show it. So a device is given
``cpus_per_core`` CPUs per AI core (2 by default: 3 core processes on 2 CPUs, as on a 2-CPU
laptop), chosen from the CPUs this process may use, and its core processes are pinned there with
``sched_setaffinity``. The same default then means the same contention on every machine; the CPUs
a bigger machine has beyond that go to parallel slots (``--jobs``), never to a bigger device.

Pinning works by inheritance: the thread that forks the core processes is pinned while it forks
(and, in the tools, for the whole run, so that the parent that dispatches launches and computes
goldens competes for the same CPUs as on a small machine).

``MPNPU_EMULATE_CPUS=N`` makes :func:`visible_cpus` report CPUs ``0..N-1`` instead of the real
affinity: the defaults can be checked as a bigger machine would compute them. A CPU set chosen
under emulation is run on the real CPUs with the same positions (emulated CPU ``i`` is real CPU
``i mod n_real``), so a 2-CPU set chosen "on a 128-CPU machine" really runs on 2 CPUs here.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from mpnpu import settings
from mpnpu.errors import InvalidArgumentError, UsageError

from . import procutil

__all__ = [
    "DEFAULT_CPUS_PER_CORE",
    "EMULATE_ENV",
    "CpuSet",
    "visible_cpus",
    "real_cpus",
    "emulated",
    "cpus_wanted",
    "choose_cpus",
    "plan_cpu_set",
    "pinned",
    "pin_this_thread",
    "format_cpus",
    "parse_cpus",
]

#: Environment variable: pretend this process may use CPUs 0..N-1 (checks of the defaults).
EMULATE_ENV = settings.EMULATE_CPUS.env

#: CPUs per AI core of a device's CPU set (why: :data:`mpnpu.settings.CPUS_PER_CORE`).
DEFAULT_CPUS_PER_CORE = settings.CPUS_PER_CORE.default

def real_cpus() -> list[int]:
    """CPUs this thread may run on (:func:`mpnpu.runtime.procutil.available_cpus`); never emulated."""
    return procutil.available_cpus()


def emulated() -> int | None:
    """The emulated CPU count from ``MPNPU_EMULATE_CPUS``, or None when not emulating."""
    return settings.from_env(settings.EMULATE_CPUS)


def visible_cpus() -> list[int]:
    """CPUs this process may use, as the defaults see them: the real affinity, or ``0..N-1``
    when ``MPNPU_EMULATE_CPUS=N`` is set."""
    n = emulated()
    return list(range(n)) if n is not None else real_cpus()


def cpus_wanted(block_dim: int, cpus_per_core: int = DEFAULT_CPUS_PER_CORE, processes: int = 0) -> int:
    """CPUs a device of ``block_dim`` AI cores asks for (before what the machine has). A device
    whose ``processes`` are not 3 per block (a vector-only or cube-only C++ kernel's, whose
    block_dim counts cores of one type) asks for as many as that many processes' share of AI cores
    (2 vector cores on 2 CPUs, as one AI core's 3 processes are)."""
    if processes:
        return max(1, -(-processes * cpus_per_core // 3))
    return max(1, block_dim * cpus_per_core)


def _cpu_busy(cpus: Sequence[int], interval_s: float = 0.05) -> dict[int, float]:
    """Share of recent time each CPU was busy (from /proc/stat over ``interval_s``); {} if unreadable."""

    def read() -> dict[int, tuple[int, int]]:
        out = {}
        with open("/proc/stat") as f:
            for line in f:
                if not line.startswith("cpu") or line.startswith("cpu "):
                    continue
                name, *fields = line.split()
                values = [int(v) for v in fields]
                idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
                out[int(name[3:])] = (sum(values), idle)
        return out

    try:
        a = read()
        time.sleep(interval_s)
        b = read()
    except (OSError, ValueError):
        return {}
    busy = {}
    for cpu in cpus:
        if cpu in a and cpu in b:
            total = b[cpu][0] - a[cpu][0]
            busy[cpu] = 1.0 - (b[cpu][1] - a[cpu][1]) / total if total > 0 else 0.0
    return busy


def choose_cpus(n: int, available: Sequence[int], *, sample_load: bool = True) -> list[int]:
    """``n`` CPUs out of ``available``: the least busy of the aligned blocks ``available[0:n]``,
    ``available[n:2n]``, ... (neighbouring CPU ids share caches and sockets more often than not).

    Load is sampled for 50 ms only when there is a choice to make and ``sample_load`` is set;
    otherwise (and on ties) the lowest block wins, so the choice is reproducible.
    """
    cpus = sorted(available)
    if n >= len(cpus):
        return cpus
    blocks = [cpus[i:i + n] for i in range(0, len(cpus) - n + 1, n)]
    if len(blocks) == 1 or not sample_load:
        return blocks[0]
    busy = _cpu_busy(cpus)
    if not busy:
        return blocks[0]
    return min(blocks, key=lambda b: (round(sum(busy.get(c, 0.0) for c in b), 1), b[0]))


@dataclass(frozen=True)
class CpuSet:
    """The CPUs a device runs on, and how they were chosen.

    ``cpus`` empty means not pinned (the OS may use every available CPU).
    """

    block_dim: int
    cpus: tuple[int, ...]
    cpus_per_core: int | None  # None: pinning disabled
    available: int  # CPUs this process could use (as the defaults saw them)
    emulated: bool = False
    processes: int = 0  # the device's core processes (0: a mix device's, 3 per block)

    @property
    def pinned(self) -> bool:
        return bool(self.cpus)

    @property
    def n_cpus(self) -> int:
        """CPUs the core processes compete for."""
        return len(self.cpus) if self.cpus else self.available

    @property
    def core_processes(self) -> int:
        return self.processes or 3 * self.block_dim

    @property
    def _processes_text(self) -> str:
        return f"{self.core_processes} core process{'es' if self.core_processes != 1 else ''}"

    @property
    def packing(self) -> str:
        """e.g. "3 on 2 CPUs": what decides how crowded the core processes are."""
        return f"{self.core_processes} on {self.n_cpus} CPU{'s' if self.n_cpus != 1 else ''}"

    def describe(self) -> str:
        """One line for the report header."""
        if not self.pinned:
            return (f"{self._processes_text} on {self.available} CPUs, not pinned "
                    "(the OS places them)")
        wanted = cpus_wanted(self.block_dim, self.cpus_per_core or 1, self.processes)
        short = f"; {wanted} wanted, {self.available} available" if len(self.cpus) < wanted else ""
        emu = f" (emulating {self.available} CPUs)" if self.emulated else ""
        return (f"{self._processes_text} pinned to CPU{'s' if len(self.cpus) > 1 else ''} "
                f"{format_cpus(self.cpus)} of {self.available}{emu}, {self.cpus_per_core} per AI core{short}")

    def real(self) -> list[int]:
        """The real CPUs to pin to (under emulation, emulated CPU i runs on real CPU i mod n)."""
        if not self.cpus:
            return []
        if not self.emulated:
            return list(self.cpus)
        real = real_cpus()
        return sorted({real[c % len(real)] for c in self.cpus})

    def to_dict(self) -> dict[str, Any]:
        return {"block_dim": self.block_dim, "cpus": list(self.cpus), "pinned": self.pinned,
                "cpus_per_core": self.cpus_per_core, "available": self.available, "emulated": self.emulated,
                "packing": self.packing}


def plan_cpu_set(block_dim: int, cpus_per_core: int | None = DEFAULT_CPUS_PER_CORE,
                 available: Sequence[int] | None = None, *, sample_load: bool = True, processes: int = 0) -> CpuSet:
    """The CPU set of a device of ``block_dim`` AI cores: ``cpus_per_core`` CPUs per AI core out of
    ``available`` (default :func:`visible_cpus`), or all of them when fewer; ``cpus_per_core``
    None or 0 disables pinning. ``processes``: the device's core processes, for the report (0: 3 per
    block, a mix device's)."""
    is_emulated = available is None and emulated() is not None
    avail = sorted(available) if available is not None else visible_cpus()
    if not avail:
        raise UsageError("no CPU available")
    if not cpus_per_core:
        return CpuSet(block_dim, (), None, len(avail), is_emulated, processes)
    n = cpus_wanted(block_dim, cpus_per_core, processes)
    cpus = choose_cpus(n, avail, sample_load=sample_load and not is_emulated)
    return CpuSet(block_dim, tuple(cpus), cpus_per_core, len(avail), is_emulated, processes)


def pin_this_thread(cpus: Sequence[int]) -> list[int]:
    """Pin the calling thread (and what it forks from now on) to ``cpus``; return the previous set."""
    previous = real_cpus()
    try:
        os.sched_setaffinity(0, list(cpus))
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot pin to CPUs {format_cpus(cpus)}: {e}") from None
    return previous


@contextlib.contextmanager
def pinned(cpus: Sequence[int] | CpuSet | None) -> Iterator[None]:
    """Within the block the calling thread runs on ``cpus`` (processes forked meanwhile keep them);
    the previous affinity comes back afterwards. None or an unpinned CpuSet: no change."""
    if isinstance(cpus, CpuSet):
        cpus = cpus.real()
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield
        return
    previous = pin_this_thread(cpus)
    try:
        yield
    finally:
        try:
            os.sched_setaffinity(0, previous)
        except OSError:
            pass


def format_cpus(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> "0-2,5,7-8"."""
    out: list[str] = []
    cpus = sorted(set(cpus))
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def parse_cpus(text: str) -> list[int]:
    """"0-2,5" -> [0, 1, 2, 5] (a CPU list as taskset writes it)."""
    out: set[int] = set()
    try:
        for part in text.split(","):
            part = part.strip()
            lo, _, hi = part.partition("-")
            a, b = int(lo), int(hi) if hi else int(lo)
            if a < 0 or b < a:
                raise InvalidArgumentError(part)
            out.update(range(a, b + 1))
    except ValueError:
        raise UsageError(f"expected a CPU list such as 0-3,8, got {text!r}") from None
    return sorted(out)
