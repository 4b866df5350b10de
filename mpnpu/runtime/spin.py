"""Spin-then-sleep: how a core process waits for something another process is about to do.

Waking a process that sleeps costs far more than the work between two launches or two SyncAlls
of a small kernel: the sleeper's CPU has gone idle, and on a virtual machine an idle virtual CPU
is descheduled by the host, so the wake-up waits for the host to run it again. Measured on a
2-CPU VM (scratch ping-pong of two processes over a shared POSIX semaphore): 55-76 us per round
trip when both sleep, 7-12 us when both keep looking. So a core that waits for the next launch
command, or (in the C++ library) for the other cores in a SyncAll or a flag, first looks again
and again for up to ``RuntimeOptions.spin_us``, giving its CPU away between looks
(``sched_yield``) so that a process that needs the CPU to get there is not kept from it, and only
then sleeps. A wait that is over within the budget never sleeps; a longer one costs the budget in
CPU once, and its timeout still bounds it. This changes only how long a waiting core takes to
notice, never what it waits for.

The budget follows the core's CPU set: a core works it out again after each launch (the stress
sweep re-pins core processes between launches), or every SPIN_RECHECK_S (mpnpu.runtime.core) while
its budget is 0 (see CoreContext.refresh_spin).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import TYPE_CHECKING, Callable

from mpnpu import settings
from mpnpu.errors import UsageError

from .procutil import available_cpu_count

if TYPE_CHECKING:
    from .config import RuntimeOptions

#: the environment variable that sets the budget of every device whose RuntimeOptions.spin_us is None
SPIN_ENV = "MPNPU_SPIN_US"
#: the budget when RuntimeOptions.spin_us is None and the processes are not crowded (see spin_budget_s)
DEFAULT_SPIN_US = 200.0
#: more core processes per CPU than this and the default budget is 0: looking would mostly cost
#: other cores their CPU time (a device is pinned to 2 CPUs per AI core: 1.5 processes per CPU)
MAX_PROCESSES_PER_CPU = 2.0


def env_spin_us() -> float | None:
    """``MPNPU_SPIN_US`` in microseconds (None: unset); a UsageError for anything but a number in [0, 1e6]."""
    raw = settings.env_text(settings.SPIN_US)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1e6:
        raise UsageError(f"{SPIN_ENV}={raw!r}: give how long a waiting core looks before it sleeps, in "
                         "microseconds (0 to 1e6; 0: sleep at once)")
    return value


def with_env_spin(options: RuntimeOptions) -> RuntimeOptions:
    """``options`` as a device's core processes get them: ``MPNPU_SPIN_US`` (read here, in the parent,
    once per pool) in place of a ``spin_us`` left at None."""
    env = env_spin_us()
    return options if options.spin_us is not None or env is None else dataclasses.replace(options, spin_us=env)


def spin_budget_s(spin_us: float | None, n_processes: int, cpus: int | None = None) -> float:
    """Seconds a waiting core looks before it sleeps: ``spin_us`` if given, else DEFAULT_SPIN_US
    unless ``n_processes`` core processes share fewer than 1 / MAX_PROCESSES_PER_CPU CPUs each
    (then 0). ``cpus``: those this process may run on (the default: its affinity, now)."""
    if spin_us is not None:
        return max(0.0, float(spin_us)) / 1e6
    cpus = available_cpu_count() if cpus is None else cpus
    return DEFAULT_SPIN_US / 1e6 if n_processes <= MAX_PROCESSES_PER_CPU * cpus else 0.0


def spin_until(ready: Callable[[], bool], budget_s: float) -> bool:
    """Look at ``ready()`` until it is true (True) or ``budget_s`` has passed (False), yielding the
    CPU between looks."""
    if budget_s <= 0:
        return False
    until = time.perf_counter() + budget_s
    yield_cpu = os.sched_yield
    clock = time.perf_counter
    while True:
        yield_cpu()
        if ready():
            return True
        if clock() >= until:
            return False
