"""How much the core processes were pushed around: context switches and CPU time per process.

Take a :func:`sample` before and after a period (a launch, a sweep point) and :func:`delta` them.
Involuntary context switches count preemptions (the OS took the CPU away: oversubscription, load,
migration); voluntary ones count waits (a barrier, a pipe, a sleep). A chaos or load setting that
does not raise involuntary switches did not perturb anything. A core whose waits look before they
sleep (mpnpu.runtime.spin) also counts an involuntary switch each time it yields its CPU to a
process waiting for it: compare configurations run with the same ``spin_us`` (``MPNPU_SPIN_US=0``
counts preemptions alone).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypedDict

import psutil

__all__ = ["ContentionSample", "ContentionDelta", "sample", "delta", "COUNTERS"]

#: The counters reported per process, in report order.
COUNTERS = ("ctx_switches_involuntary", "ctx_switches_voluntary", "cpu_user_s", "cpu_system_s")


class ContentionDelta(TypedDict):
    ctx_switches_involuntary: int
    ctx_switches_voluntary: int
    cpu_user_s: float
    cpu_system_s: float


class ContentionSample(ContentionDelta):
    #: Process start time (psutil), so :func:`delta` can tell a reused pid from the same process.
    create_time: float


def sample(pids: Iterable[int]) -> dict[int, ContentionSample]:
    """Current counters of each pid; pids that are gone (or not readable) are left out."""
    out: dict[int, ContentionSample] = {}
    for pid in dict.fromkeys(pids):
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():  # one read of /proc/<pid>/stat and status for all fields
                ctx = proc.num_ctx_switches()
                cpu = proc.cpu_times()
                out[pid] = ContentionSample(
                    ctx_switches_involuntary=int(ctx.involuntary),
                    ctx_switches_voluntary=int(ctx.voluntary),
                    cpu_user_s=float(cpu.user),
                    cpu_system_s=float(cpu.system),
                    create_time=float(proc.create_time()),
                )
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


def delta(
    before: Mapping[int, ContentionSample], after: Mapping[int, ContentionSample]
) -> dict[int, ContentionDelta]:
    """Per-process increase of each counter between two samples.

    Only pids present in both samples *as the same process* (same start time) are reported: a pid
    that exited, appeared, or was reused in between has no meaningful difference.
    """
    out: dict[int, ContentionDelta] = {}
    for pid, a in after.items():
        b = before.get(pid)
        if b is None or b.get("create_time") != a.get("create_time"):
            continue
        out[pid] = ContentionDelta(
            ctx_switches_involuntary=a["ctx_switches_involuntary"] - b["ctx_switches_involuntary"],
            ctx_switches_voluntary=a["ctx_switches_voluntary"] - b["ctx_switches_voluntary"],
            cpu_user_s=a["cpu_user_s"] - b["cpu_user_s"],
            cpu_system_s=a["cpu_system_s"] - b["cpu_system_s"],
        )
    return out
