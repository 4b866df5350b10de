"""The words of sync mutation testing, shared by its faces: ``mpnpu mutate`` on a CPU-debug program
(:mod:`mpnpu.tools.mutate`) and the sync audit of an operator (:mod:`mpnpu.directed.audit`).

A sync point dropped is a *mutant*. It is **killed** when the tests notice: their own check fails
(a CPU-debug program's exit status or gtest assertion; an operator's golden), possibly only in a
directed run that forces the race, or the launch deadlocks or fails on the device. It **survived**
otherwise, and then either **untested** (racecheck finds the race the sync prevented, and no
assertion caught what it does) or **redundant** (racecheck finds no race without it, for these
inputs). The score is killed / executed sync points.
"""

from __future__ import annotations

import json
import time
from typing import Any

from mpnpu import settings

KILLED = "killed"
SURVIVED = "survived"
#: how a mutant was killed
BY_CHECK = "the program's own check"  # a non-zero exit the program chose
BY_GOLDEN = "the golden check"  # an operator's golden comparison (the batch's failing case-runs)
BY_GTEST = "gtest failure"
BY_PYTEST = "pytest failure"  # a test of a pytest suite failed (pytest --mpnpu-mutate-syncs)
BY_DEADLOCK = "deadlock"
BY_DEVICE = "device error"  # a fault, an API misuse, a sync that would hang: mpnpu's exit status 3
BY_TIMEOUT = "time-out"
IN_DIRECTED_RUN = "in a directed run"  # appended to how: the race forced by a hold showed it
#: why a mutant survived
REDUNDANT = "redundant"  # racecheck finds no hazard without it, for these inputs
UNTESTED = "untested"  # racecheck finds a hazard that no assertion caught


def score(killed: int, executed: int) -> float:
    """Killed / executed sync points (1.0 when nothing was executed: nothing to kill)."""
    return killed / executed if executed else 1.0


def executed_sync_sites(trace: Any, by_site: bool = True) -> dict[str, dict[str, Any]]:
    """Per sync point a traced launch executed (on any core): the call (the first seen there), every
    call made there (``calls``) and how often one ran.

    A sync point is named as a launch drops it: a compiled kernel's by its call's FILE:LINE
    (``by_site``), a Python kernel's by the ``name=`` of its sync call (an unnamed one cannot be
    dropped, so it is no mutant). A sync a high-level API issued inside itself names no sync point
    (its ``name`` is empty, its site the kernel's line that called the API): it is none either."""
    from mpnpu.runtime.trace import FlagSetEvent, FlagWaitEvent, PipeSyncEvent, SyncAllEvent

    sites: dict[str, dict[str, Any]] = {}
    for events in trace.events:
        for ev in events:
            if isinstance(ev, SyncAllEvent):
                call = "SyncAll"
            elif isinstance(ev, FlagSetEvent):
                call = "CrossCoreSetFlag"
            elif isinstance(ev, FlagWaitEvent):
                call = "CrossCoreWaitFlag"
            elif isinstance(ev, PipeSyncEvent):
                call = {"set": "SetFlag", "wait": "WaitFlag"}.get(ev.op, "PipeBarrier")
            else:
                continue
            key = ev.site if by_site else ev.name
            if key and ev.name:
                entry = sites.setdefault(key, {"call": call, "count": 0, "calls": []})
                entry["count"] += 1
                if call not in entry["calls"]:  # (one line may make several: a macro, a queue call)
                    entry["calls"].append(call)
    return sites


#: traces of at most this many events get each executed site's hazards computed without it
#: (:func:`hazards_without`); a bigger one leaves that to the mutant's own racecheck run
ANALYTIC_EVENTS = 400_000
#: ... and only while events x sites stays at most this: each site's analysis is of the whole
#: trace (in one launch of a corpus test, 40 cores' 150 thousand events and 10 sites took 168 s,
#: 3.5 s since hazards inside a core group their pairs as arrays: two of its sites leave 2.1
#: million unordered pairs each)
ANALYTIC_WORK = 1_000_000
#: ... and no site's analysis starts after a launch's have taken this many seconds, or the
#: program's ANALYTIC_PROGRAM_S: the sites left are classified by their mutants' own racecheck
#: runs, with the same result, only later (so which sites a run proves redundant without a run of
#: their own can depend on the machine's load, never their class)
ANALYTIC_BUDGET_S = 5.0
ANALYTIC_PROGRAM_S = 60.0
#: seconds this process has spent on those analyses
_spent = [0.0]

#: the runtime's name of the call a dropped sync event skipped (DroppedSyncEvent.call)
_DROPPED_CALL = {"SyncAllEvent": "sync_all", "FlagSetEvent": "cross_core_set_flag",
                 "FlagWaitEvent": "cross_core_wait_flag", "GmFlagEvent": "gm_flag"}
_DROPPED_PIPE_CALL = {"set": "set_flag", "wait": "wait_flag", "barrier": "pipe_barrier"}


def without_site(trace: Any, site: str) -> Any:
    """``trace`` as a launch that dropped the sync point ``site`` would have recorded it: each of its
    sync events there is a DroppedSyncEvent (a cross-core set's pipe event goes with it), but for those
    a high-level API issued inside itself (no name: a launch never drops them). The accesses are the
    same: a dropped sync changes the order of what a kernel does, not what it does."""
    from mpnpu.runtime.trace import (
        DroppedSyncEvent,
        FlagSetEvent,
        FlagWaitEvent,
        GmFlagEvent,
        PipeSyncEvent,
        SyncAllEvent,
    )

    kinds = (SyncAllEvent, FlagSetEvent, FlagWaitEvent, GmFlagEvent, PipeSyncEvent)
    cores = []
    for events in trace.events:
        if not any(type(ev) in kinds and ev.site == site and ev.name for ev in events):
            cores.append(events)
            continue
        out = []
        for ev in events:
            if type(ev) not in kinds or ev.site != site or not ev.name:
                out.append(ev)
            elif type(ev) is PipeSyncEvent:
                if ev.op in _DROPPED_PIPE_CALL:
                    out.append(DroppedSyncEvent(ev.name, _DROPPED_PIPE_CALL[ev.op], ev.stage, ev.site, ev.t0, ev.t1))
            else:
                out.append(DroppedSyncEvent(ev.name, _DROPPED_CALL[type(ev).__name__], ev.stage, ev.site, ev.t0,
                                            ev.t1))
        cores.append(tuple(out))
    return trace._replace(events=tuple(cores), dropped_syncs=trace.dropped_syncs | {site})


def hazards_without(trace: Any, site: str) -> int | None:
    """racecheck's hazard count for ``trace`` with the sync point ``site`` dropped
    (:func:`without_site`), or None when that trace cannot be analysed (its syncs cannot pair up:
    such a mutant deadlocks on the device). racecheck pairs waits with sets by their order, as the
    device does, so a later wait takes the set a dropped one would have taken, exactly as in a run
    of the mutant; only a kernel whose accesses depend on the timing of what it reads (a polled flag)
    could record other accesses in such a run."""
    from mpnpu.errors import TraceError
    from mpnpu.racecheck import analyze

    try:
        return len(analyze(without_site(trace, site)))
    except (TraceError, ValueError):
        return None


def log_sync_sites(trace: Any, kernel: str, path: str, by_site: bool = True) -> None:
    """Append one JSON line to ``path`` (what ``MPNPU_SYNC_LOG`` names): the launch's kernel and its
    :func:`executed_sync_sites`; the format mutation testing learns a program's sync points from.
    In a unit-test program of ``mpnpu ut``, the line also names the test that launched
    (``"test"``) and the CPU-debug settings it started with (``"state"``, "MODE:KEY"). For a
    compiled kernel's trace of at most :data:`ANALYTIC_EVENTS` events, each site also carries
    ``"hazards_without"`` (:func:`hazards_without`), while events x sites is at most
    :data:`ANALYTIC_WORK` and for as many sites as :data:`ANALYTIC_BUDGET_S` and
    :data:`ANALYTIC_PROGRAM_S` give time for."""
    sites = executed_sync_sites(trace, by_site)
    events = sum(len(evs) for evs in trace.events)
    if by_site and events <= ANALYTIC_EVENTS and events * len(sites) <= ANALYTIC_WORK:
        start = time.monotonic()
        for site, entry in sites.items():
            now = time.monotonic()
            if now - start > ANALYTIC_BUDGET_S or _spent[0] + (now - start) > ANALYTIC_PROGRAM_S:
                break  # (no "hazards_without": the mutant's racecheck run decides, as for a bigger trace)
            entry["hazards_without"] = hazards_without(trace, site)
        _spent[0] += time.monotonic() - start
    line: dict[str, Any] = {"kernel": kernel, "sites": sites}
    test = settings.live_text(settings.GTEST_TEST)
    if test:
        line["test"] = test
        line["state"] = settings.live_text(settings.GTEST_TEST_STATE)
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")
