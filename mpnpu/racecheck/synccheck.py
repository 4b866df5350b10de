"""synccheck: sync calls that are unpaired, left pending, duplicated or redundant, from a launch's trace.

The rules (docs/initcheck-synccheck.md), per launch:

    set never waited      an intra-core SetFlag<X_Y>(id) that no WaitFlag<X_Y>(id) of its core consumes
                          before the kernel ends (sets and waits pair in order, as the hardware's event
                          counts them). A set in a queue's release direction (V_MTE2, MTE3_V,
                          MTE1_MTE2, M_MTE1, FIX_M) is not reported: a queue's last FreeTensor leaves
                          one, which the pipe's teardown consumes, and the trace does not tell it from
                          an explicit SetFlag
    pending at kernel end a cross-core flag (CrossCoreSetFlag) raised for a core that does not wait for
                          it as often as it is raised: the flag is still set when the kernel ends (and
                          the next launch would start with it)
    duplicate event id    a SetFlag<X_Y>(id) while an earlier SetFlag<X_Y>(id) of the core is not yet
                          waited: the hardware holds one pending set per event id, so the two sets
                          collapse into one and one wait is left waiting for nothing (or releases too
                          early)
    redundant sync        a SetFlag/WaitFlag pair (same set line, wait line and event in every instance
                          of the launch) whose every wait was already ordered after its set when issued:
                          pipe order, a PipeBarrier, a SyncAll or another flag had already made the
                          waiting pipe wait for the setting pipe's instruction. Conservative: pairs whose
                          set is on PIPE_S or whose two pipes are one are never reported (the model's
                          rule that the scalar unit issues in order is weaker on the chip), nor pairs
                          of an event a queue uses (MTE2_V, V_MTE3, ... and back: the trace does not tell
                          a queue's own syncs, which the kernel cannot remove, from SetFlag/WaitFlag); the
                          compiler's automatic syncs are not counted as ordering (so they never make a
                          pair redundant)

Each finding is reported at the kernel line of the call at fault (the set; for a redundant pair, the
wait), with the other line where there is one.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any, Iterable

from mpnpu.racecheck.findings import (
    DUPLICATE_ID,
    PENDING_AT_END,
    REDUNDANT,
    SET_NOT_WAITED,
    SYNCCHECK,
    Finding,
    merge_launch,
)
from mpnpu.racecheck.pipe_clocks import PIPE_INDEX, N, S
from mpnpu.racecheck.records_scan import Issued, records_of, sync_steps
from mpnpu.runtime.topology import CoreInfo
from mpnpu.runtime.trace import (
    Access,
    FlagSetEvent,
    FlagWaitEvent,
    LaunchTrace,
    LocalAccess,
    PipeSyncEvent,
    SyncAllEvent,
)

#: a queue's release direction (consumer -> producer): its last FreeTensor leaves such a set pending
RELEASE_EVENTS = frozenset({"V_MTE2", "MTE3_V", "MTE1_MTE2", "M_MTE1", "FIX_M"})
#: every event a queue's own syncs use (EnQue/DeQue one way, FreeTensor/AllocTensor the other)
QUEUE_EVENTS = RELEASE_EVENTS | {"MTE2_V", "V_MTE3", "MTE2_MTE1", "MTE1_M", "M_FIX"}


class _Clocks:
    """Per-pipe vector clocks of one core, by the issue, pipe-order, set/wait and barrier rules of
    :mod:`mpnpu.racecheck.intracore` (without the compiler's automatic syncs)."""

    def __init__(self) -> None:
        self.vc = [[0] * N for _ in range(N)]

    def issue(self, p: int) -> list[int]:
        row = self.vc[p] = list(map(max, self.vc[p], self.vc[S]))
        row[p] += 1
        return row

    def drain(self, pipes: Iterable[int]) -> None:
        s = self.vc[S]
        for q in pipes:
            s = list(map(max, s, self.vc[q]))
        s[S] += 1
        self.vc[S] = s


def _pipe(name: str) -> int:
    return PIPE_INDEX.get(name, S)  # (a pipe the model does not know: taken as the scalar unit's)


def _event_text(ev: Any) -> str:
    return f"SetFlag<{ev.event}>({ev.event_id})"


#: per (set site, wait site, event, id), over the cores of a launch: [a wait, its instances, how many of them
#: were already ordered, the cores, a core's label]
_Pairs = dict[tuple[str, str, str, int], list[Any]]


def _core_findings(c: int, events: Any, info: CoreInfo, pairs: _Pairs) -> Iterable[Finding]:
    """Core ``c``'s findings; ``events``: its trace events, or :func:`records_scan.sync_steps`'s walk."""
    clocks = _Clocks()
    pending: dict[tuple[str, int], deque[tuple[Any, tuple[int, ...], int]]] = defaultdict(deque)
    cores = frozenset({info.short})
    ev: Any
    for ev in events:
        t = type(ev)
        if t is LocalAccess or (t is Access and ev.pipe):
            clocks.issue(_pipe(ev.pipe))
        elif t is Issued:
            ev.apply(clocks.vc)
        elif t is SyncAllEvent:
            clocks.drain(range(N))
        elif t is PipeSyncEvent:
            if ev.op == "barrier":
                clocks.drain(range(N) if ev.pipe == "PIPE_ALL" else (_pipe(ev.pipe),))
                continue
            p = _pipe(ev.pipe)
            if ev.op == "set":
                key = (ev.event, ev.event_id)
                q = pending[key]
                if q:
                    first = q[-1][0]
                    yield Finding(
                        check=SYNCCHECK, kind=DUPLICATE_ID, subject=_event_text(ev), site=ev.site, stage=ev.stage,
                        core=info.label, other_site=first.site, pipe=ev.pipe, cores=cores,
                        message=f"{_event_text(ev)} while the set at {first.site} is not yet waited: the event id "
                                "holds one pending set, so the two collapse into one",
                        fix=f"wait for the set at {first.site} (WaitFlag<{ev.event}>({ev.event_id})) before setting "
                            f"it again, or use another event id")
                q.append((ev, tuple(clocks.issue(p)), p))
            elif ev.op == "wait":
                q = pending[(ev.event, ev.event_id)]
                row = clocks.issue(p)
                if not q:
                    continue  # (a wait with no set hangs the device: the launch fails before a trace exists)
                setter, set_clock, sp = q.popleft()
                ordered = row[sp] >= set_clock[sp]  # the wait's pipe had already seen the set's instruction
                clocks.vc[p] = list(map(max, row, set_clock))
                if sp != S and sp != p and ev.event not in QUEUE_EVENTS:
                    k = (setter.site, ev.site, ev.event, ev.event_id)
                    entry = pairs.get(k)
                    if entry is None:
                        pairs[k] = [ev, 1, int(ordered), {info.short}, info.label]
                    else:
                        entry[1] += 1
                        entry[2] += ordered
                        entry[3].add(info.short)
            # ("xset", the pipe of a cross-core set: nothing to pair here)
    for (event, _), q in pending.items():
        if event in RELEASE_EVENTS:
            continue
        for setter, _, _ in q:
            yield Finding(
                check=SYNCCHECK, kind=SET_NOT_WAITED, subject=_event_text(setter), site=setter.site,
                stage=setter.stage, core=info.label, pipe=setter.pipe, cores=cores,
                message=f"{_event_text(setter)} is never waited: the event is still set when the kernel ends",
                fix=f"add its WaitFlag<{setter.event}>({setter.event_id}) where the {setter.event.split('_')[-1]} "
                    "pipe needs what it orders (before the kernel ends), or remove the set")


def _redundant(pairs: _Pairs) -> Iterable[Finding]:
    """The pairs every instance of which (on every core) was ordered before its wait was issued."""
    for (set_site, wait_site, event, event_id), (wev, n, ordered, cores, label) in pairs.items():
        if ordered == n:
            yield Finding(
                check=SYNCCHECK, kind=REDUNDANT, subject=f"WaitFlag<{event}>({event_id})", site=wait_site,
                stage=wev.stage, core=label, other_site=set_site, pipe=wev.pipe, count=n, cores=frozenset(cores),
                message=f"WaitFlag<{event}>({event_id}) orders nothing: in each of its {n} waits, {wev.pipe} was "
                        f"already ordered after the set at {set_site} (pipe order, a barrier or another flag)",
                fix=f"remove this WaitFlag and its SetFlag at {set_site}, or keep them if a later change needs them")


def _flag_findings(trace: LaunchTrace, walks: list[Any]) -> Iterable[Finding]:
    """Cross-core flags raised for a receiver more often than it waits for them (``walks``: per core,
    what :func:`_core_findings` walked)."""
    topo = trace.topology
    sets: dict[tuple[int, int, int], list[tuple[int, Any]]] = defaultdict(list)  # (receiver, mode, id)
    waits: dict[tuple[int, int, int], int] = defaultdict(int)
    ev: Any
    for c, events in enumerate(walks):
        for ev in events:
            t = type(ev)
            if t is FlagSetEvent:
                for r in topo.flag_receivers(ev.mode, c):
                    sets[(r, ev.mode, ev.flag_id)].append((c, ev))
            elif t is FlagWaitEvent:
                waits[(c, ev.mode, ev.flag_id)] += 1
    for (r, mode, flag_id), raised in sets.items():
        by_sender: dict[int, list[Any]] = defaultdict(list)
        for c, ev in raised:
            by_sender[c].append(ev)
        n_waits = waits[(r, mode, flag_id)]
        for c, evs in by_sender.items():
            left = evs[n_waits:]
            if not left:
                continue
            info, receiver = topo.core(c), topo.core(r)
            first = left[0]
            what = f"CrossCoreSetFlag<{mode}>({flag_id})"
            yield Finding(
                check=SYNCCHECK, kind=PENDING_AT_END, subject=what, site=first.site, stage=first.stage,
                core=info.label, count=len(left), cores=frozenset({f"{info.short}->{receiver.short}"}),
                message=f"{what} raised for {receiver.label} {len(evs)} times, waited {n_waits}: the flag is still "
                        "set when the kernel ends",
                fix=f"add the CrossCoreWaitFlag<{mode}>({flag_id}) on {receiver.short} that consumes this set, or "
                    "raise it only as often as it is waited")


def synccheck(trace: LaunchTrace, *, from_records: bool = True) -> list[Finding]:
    """The sync defects of one traced launch, merged by kind, lines and event. ``from_records``: walk
    a compiled kernel's records as they are (:func:`records_scan.sync_steps`; False: the decoded
    events, the reference the tests compare with)."""
    topo = trace.topology
    found: list[Finding] = []
    pairs: _Pairs = {}
    walks: list[Any] = []
    for c, events in enumerate(trace.events):
        records = records_of(events) if from_records else None
        walk = events if records is None else list(sync_steps(records))
        walks.append(walk)
        found.extend(_core_findings(c, walk, topo.core(c), pairs))
    found.extend(_redundant(pairs))
    found.extend(_flag_findings(trace, walks))
    return merge_launch(found)
