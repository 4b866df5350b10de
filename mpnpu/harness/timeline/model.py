"""A traced launch as a timeline: spans per core, sync relations and races, in one clock.

:func:`build_timeline` turns a :class:`~mpnpu.runtime.trace.LaunchTrace` (every core's events with
CLOCK_MONOTONIC timestamps) into a :class:`LaunchTimeline`, the one model that every timeline
writer draws (Chrome Trace Event JSON, the PNG/SVG picture)::

    LaunchTrace ──build_timeline──▶ LaunchTimeline
      (events, t0/t1 ns)              spans     per core and lane: on the core's own lane (its kernel
                                                 thread) stages, SyncAll waits, flag sets and waits,
                                                 and the GM accesses it made itself, nested and never
                                                 partly overlapping; on a pipe's lane (MTE2, MTE3,
                                                 FIX) the copies that pipe executed asynchronously,
                                                 one after the other
                                      instants  dropped and inserted sync points
                                      barriers  SyncAll rounds: first arrival, last arrival (release)
                                      flows     flag set -> the wait it released
                                      races     racecheck hazards: one access pair each, preferring a
                                                 pair whose order in time was the wrong one
                                      inversions  a core's GM accesses its pipes ran in the
                                                 opposite order to their issue order

Times are nanoseconds from the launch's first event (``origin_ns`` keeps the absolute clock), so
launches recorded seconds apart can be laid side by side.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from mpnpu.errors import TraceError
from mpnpu.harness.timeline.inversions import Inversion, pipe_inversions
from mpnpu.racecheck.hazards import ACCESS_NAMES, AccessSite, Hazard
from mpnpu.racecheck.pairs import AccessPair, HazardPairs, core_hazard_pairs, hazard_pairs
from mpnpu.runtime.topology import Topology
from mpnpu.runtime.trace import (
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    LaunchTrace,
    LocalAccess,
    StageEvent,
    SyncAllEvent,
)

#: Span categories (the Chrome trace ``cat``).
STAGE, SYNC, FLAG = "stage", "sync", "flag"
GM = {"R": "gm.read", "W": "gm.write", "A": "gm.atomic"}
#: An instruction of a pipe that runs inline on the kernel thread (PIPE_V, PIPE_M) and the local
#: memory it read and wrote.
LOCAL = "local"
#: Instant categories.
DROPPED, INSERTED = "dropped", "inserted"
#: Pipe lanes in display order (the pipes that make GM copies asynchronously, and MTE1).
PIPE_LANES = ("MTE2", "MTE1", "MTE3", "FIX")
#: Sync point names of syncs inserted for a launch start with this (``mpnpu.runtime.insert``).
INSERTED_PREFIX = "+"


@dataclass(frozen=True)
class Span:
    """Something one core did from ``t0`` to ``t1`` (ns from the launch origin)."""

    core: int
    name: str
    cat: str
    t0: int
    t1: int
    args: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    event: int = -1  # index of the trace event in its core's list (-1: none)
    #: where it ran: "" the core's kernel thread; "MTE2", "MTE3", "FIX"...: that pipe, asynchronously
    #: (its copies overlap the kernel's own work and the other pipes', so they get a lane of their own)
    lane: str = ""


@dataclass(frozen=True)
class Instant:
    """A moment on one core: a sync point the launch dropped (``cat`` "dropped") or inserted
    (``cat`` "inserted", :mod:`mpnpu.runtime.insert`)."""

    core: int
    name: str
    cat: str
    t: int
    args: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Flow:
    """An arrow between two spans (``src`` is the earlier in time)."""

    name: str
    cat: str
    src: Span
    dst: Span
    args: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Barrier:
    """One SyncAll round: every party's wait, and when the last party arrived (the release)."""

    name: str  # "SyncAll S0"
    aiv_only: bool
    first_arrival: int
    release: int  # last arrival
    waits: tuple[Span, ...]


@dataclass(frozen=True)
class Race:
    """A racecheck hazard drawn as one of its access pairs.

    ``first_side``/``second_side`` are the drawn pair's own accesses (its cores; the hazard's
    ``first``/``second`` are one representative pair of all it merges), in the intended order:
    the write of a RAW first. ``inverted``: in this launch the second access started before the
    first had finished — the race did not just exist, it showed in time.
    """

    hazard: Hazard
    first: Span
    second: Span
    inverted: bool
    pairs: int  # access pairs of this hazard in the launch
    inverted_pairs: int
    elements: tuple[int, int]  # [lo, hi) of the drawn pair, elements of the first access's tensor
    first_side: AccessSite
    second_side: AccessSite

    @property
    def title(self) -> str:
        """Named like the racecheck report line: ``RAW workspace.buf[5:128]`` (a race inside a
        core: ``RAW UB[0:4096] inside aiv0``)."""
        lo, hi = self.hazard.element_range
        inside = f" inside {self.first_side.short}" if self.hazard.scope != "GM" else ""
        consequence = " (a consequence)" if self.hazard.root is not None else ""
        return f"{self.hazard.kind} {self.hazard.tensor}[{lo}:{hi}]{inside}{consequence}"

    @property
    def in_time_order(self) -> tuple[tuple[AccessSite, Span], tuple[AccessSite, Span]]:
        """The drawn pair's two accesses (side, span), the one that started first first."""
        a, b = (self.first_side, self.first), (self.second_side, self.second)
        return (b, a) if self.second.t0 < self.first.t0 else (a, b)


@dataclass
class LaunchTimeline:
    """Everything a timeline writer draws for one launch."""

    label: str  # e.g. "incident, case 34, repeat 2"
    role: str  # why this launch was picked, e.g. "first failure"
    passed: bool | None  # the case-run's verdict (None: not judged)
    summary: str  # one line on the verdict, e.g. "FAILED: out (relative error up to 9e3)"
    topology: Topology
    kernel: str
    dropped_syncs: frozenset[str]
    origin_ns: int
    duration_ns: int
    spans: list[Span]
    instants: list[Instant]
    flows: list[Flow]
    barriers: list[Barrier]
    races: list[Race]
    stages: list[str]  # in the order the launch entered them
    #: GM accesses of one core that its pipes ran in the opposite order to their issue order (see
    #: :mod:`.inversions`): racecheck does not report these, the times show them
    inversions: list[Inversion] = field(default_factory=list)

    def spans_of(self, core: int, cat: str | None = None) -> list[Span]:
        return [s for s in self.spans if s.core == core and (cat is None or s.cat == cat)]

    def lanes_of(self, core: int) -> list[str]:
        """The core's lanes that have spans: "" (its kernel thread) first, then its pipes in pipe order."""
        used = {s.lane for s in self.spans if s.core == core}
        return [""] + [p for p in PIPE_LANES if p in used] + sorted(used - set(PIPE_LANES) - {""})


def _access_span(core: int, index: int, ev: Access, origin: int) -> Span:
    lo, hi = ev.elements() if ev.ranges else (0, 0)
    access = ACCESS_NAMES.get(ev.kind, ev.kind)
    args = {
        "tensor": ev.tensor,
        "elements": f"[{lo}:{hi}]",
        "access": access,
        "site": ev.site,
        "stage": ev.stage,
        "bytes": sum(b - a for a, b in ev.ranges),
        "byte_ranges": len(ev.ranges),
    }
    lane = ev.ran_on[5:] if ev.ran_on.startswith("PIPE_") else ev.ran_on
    if ev.pipe:
        args["pipe"] = ev.pipe
    return Span(core, f"{access} {ev.tensor}[{lo}:{hi}]", GM.get(ev.kind, "gm"), ev.t0 - origin, ev.t1 - origin,
                args, index, lane)


def _origin(trace: LaunchTrace) -> tuple[int, int]:
    stamps = [t for evs in trace.events for ev in evs for t in (ev.t0, ev.t1) if t]
    if not stamps:
        raise TraceError("the trace has no timestamps (recorded by hand, or by an older mpnpu)")
    return min(stamps), max(stamps)


def build_timeline(trace: LaunchTrace, *, label: str = "", role: str = "", passed: bool | None = None,
                   summary: str = "", races: bool = True) -> LaunchTimeline:
    """The timeline of one traced launch; ``races``: run racecheck on it to find its hazards.

    Raises ValueError for a trace without timestamps, or (with ``races``) one racecheck cannot
    analyse (a launch that failed part-way).
    """
    origin, end = _origin(trace)
    topo = trace.topology
    spans: list[Span] = []
    instants: list[Instant] = []
    by_event: dict[tuple[int, int], Span] = {}
    rounds: dict[tuple[bool, int], list[Span]] = defaultdict(list)
    sets: dict[tuple[int, int, int, int], list[Span]] = defaultdict(list)  # (mode, id, receiver, sender)
    waits: dict[tuple[int, int, int], list[Span]] = defaultdict(list)  # (receiver, mode, id)
    stage_order: dict[str, None] = {}
    for c, evs in enumerate(trace.events):
        last = max((ev.t1 or ev.t0 for ev in evs), default=origin) - origin
        n_rounds = {False: 0, True: 0}
        for i, ev in enumerate(evs):
            if isinstance(ev, Access):
                if not ev.t0:
                    continue  # queued on a pipe that never executed it (the launch failed first)
                span = _access_span(c, i, ev, origin)
            elif isinstance(ev, StageEvent):
                stage_order.setdefault(ev.name, None)
                # A stage still open (its core failed inside it) ends with the core's last event.
                t1 = ev.t1 - origin if ev.t1 else last
                span = Span(c, ev.name, STAGE, ev.t0 - origin, t1, {"site": ev.site}, i)
            elif isinstance(ev, SyncAllEvent):
                what = "SyncAll<true>" if ev.aiv_only else "SyncAll"
                span = Span(c, f"{what} {ev.name}".rstrip(), SYNC, ev.t0 - origin, ev.t1 - origin,
                            {"site": ev.site, "round": n_rounds[ev.aiv_only] + 1,
                             "phase": "arrival to release"}, i)
                rounds[(ev.aiv_only, n_rounds[ev.aiv_only])].append(span)
                n_rounds[ev.aiv_only] += 1
            elif isinstance(ev, FlagSetEvent):
                span = Span(c, f"set flag {ev.flag_id} (mode {ev.mode})", FLAG, ev.t0 - origin, ev.t1 - origin,
                            {"site": ev.site, "name": ev.name}, i)
                try:
                    for r in topo.flag_receivers(ev.mode, c):
                        sets[(ev.mode, ev.flag_id, r, c)].append(span)
                except ValueError:
                    pass
            elif isinstance(ev, FlagWaitEvent):
                name = f"wait flag {ev.flag_id} (mode {ev.mode})" + (f" {ev.name}" if ev.name else "")
                span = Span(c, name, FLAG, ev.t0 - origin, ev.t1 - origin, {"site": ev.site, "name": ev.name}, i)
                waits[(c, ev.mode, ev.flag_id)].append(span)
            elif isinstance(ev, DroppedSyncEvent):
                instants.append(Instant(c, f"{ev.name} dropped", DROPPED, ev.t0 - origin,
                                        {"call": ev.call, "site": ev.site, "stage": ev.stage}))
                continue
            else:
                continue
            if isinstance(ev, (SyncAllEvent, FlagSetEvent, FlagWaitEvent)) and ev.name.startswith(INSERTED_PREFIX):
                # A sync the launch inserted (a repair tried without editing the kernel): marked where
                # this core reached it, like a dropped one, besides its span.
                instants.append(Instant(c, f"{ev.name} inserted", INSERTED, ev.t0 - origin,
                                        {"call": _CALLS[type(ev)], "site": ev.site, "stage": ev.stage}))
            spans.append(span)
            by_event[(c, i)] = span
        spans += _local_spans(c, evs, origin, by_event)

    flows = _flag_flows(topo, sets, waits)
    barriers = [
        Barrier(parties[0].name, aiv_only, min(s.t0 for s in parties), max(s.t0 for s in parties), tuple(parties))
        for (aiv_only, _), parties in sorted(rounds.items(), key=lambda kv: min(s.t0 for s in kv[1]))
    ]
    found = _races(trace, by_event) if races else []
    # A race inside a core on GM is drawn as a hazard; an inversion of the same core and tensor
    # would be a second arrow for it.
    inside = {(r.first_side.short, r.hazard.tensor) for r in found if r.hazard.scope == "core"}
    inversions = [inv for inv in pipe_inversions(trace, by_event, topo) if (inv.core, inv.tensor) not in inside]
    return LaunchTimeline(
        label=label, role=role, passed=passed, summary=summary, topology=topo, kernel=trace.kernel,
        dropped_syncs=trace.dropped_syncs, origin_ns=origin, duration_ns=end - origin, spans=spans,
        instants=instants, flows=flows, barriers=barriers, races=found, stages=list(stage_order),
        inversions=inversions,
    )


_CALLS = {SyncAllEvent: "sync_all", FlagSetEvent: "cross_core_set_flag", FlagWaitEvent: "cross_core_wait_flag"}


def _flag_flows(topo: Topology, sets: dict[tuple[int, int, int, int], list[Span]],
                waits: dict[tuple[int, int, int], list[Span]]) -> list[Flow]:
    """The j-th set from each sender the wait needs released the receiver's j-th wait."""
    flows = []
    for (r, mode, flag_id), spans in waits.items():
        try:
            senders = topo.flag_senders(mode, r)
        except ValueError:
            continue
        for j, wait in enumerate(spans):
            for s in senders:
                src = sets.get((mode, flag_id, r, s), [])
                if j < len(src):
                    flows.append(Flow(f"flag {flag_id} (mode {mode})", "flag", src[j], wait,
                                      {"set": src[j].args.get("site"), "wait": wait.args.get("site")}))
    return flows


def _local_spans(c: int, evs: Sequence[Any], origin: int, by_event: dict[tuple[int, int], Span]) -> list[Span]:
    """Spans for a core's local-memory accesses: one per instruction of an inline pipe that
    recorded its time (its records, consecutive, share pipe, line and time), on the kernel
    thread's lane; a copy's local side (the record right after the copy's GM record, same line and
    pipe) is that copy's span, whose args gain the local range."""
    out: list[Span] = []
    i = 0
    while i < len(evs):
        ev = evs[i]
        if type(ev) is not LocalAccess:
            i += 1
            continue
        where = f"{ACCESS_NAMES.get(ev.kind, ev.kind)} {ev.memory}[{ev.start}:{ev.stop}]"
        if not ev.t0:
            prev = evs[i - 1] if i else None
            copy = by_event.get((c, i - 1))
            if isinstance(prev, Access) and copy is not None and (prev.site, prev.pipe) == (ev.site, ev.pipe):
                copy.args["local"] = where
                by_event[(c, i)] = copy
            i += 1
            continue
        j = i + 1
        while j < len(evs) and type(evs[j]) is LocalAccess and (evs[j].pipe, evs[j].site, evs[j].t0, evs[j].t1) == (
                ev.pipe, ev.site, ev.t0, ev.t1):
            j += 1
        group = [evs[k] for k in range(i, j)]
        accesses = [f"{ACCESS_NAMES.get(x.kind, x.kind)} {x.memory}[{x.start}:{x.stop}]" for x in group]
        pipe = ev.pipe[5:] if ev.pipe.startswith("PIPE_") else ev.pipe
        span = Span(c, f"{pipe}: {', '.join(accesses)}", LOCAL, ev.t0 - origin, ev.t1 - origin,
                    {"pipe": ev.pipe, "accesses": accesses, "site": ev.site, "stage": ev.stage}, i)
        out.append(span)
        for k in range(i, j):
            by_event[(c, k)] = span
        i = j
    return out


def _side(trace: LaunchTrace, side: AccessSite, core: int) -> AccessSite:
    """The hazard's side as made by ``core`` (a hazard merges pairs of many cores)."""
    info = trace.topology.core(core)
    return replace(side, core=info.label, core_id=core, short=info.short)


def _races(trace: LaunchTrace, by_event: dict[tuple[int, int], Span]) -> list[Race]:
    out = []
    groups: list[HazardPairs] = [*hazard_pairs(trace), *core_hazard_pairs(trace)]
    for hp in groups:
        def lateness(p: AccessPair) -> int:
            # How long before the first access ended the second one started (> 0: the wrong order).
            return by_event[p.first].t1 - by_event[p.second].t0

        # Pairs whose both accesses have a time (an access on a pipe that never ran it has none).
        drawable = [p for p in hp.pairs if p.first in by_event and p.second in by_event]
        if not drawable:
            continue
        inverted = [p for p in drawable if lateness(p) > 0]
        # Draw the pair that shows the race best: the most inverted one, else the closest call.
        pick = max(drawable, key=lateness)
        first_ev = trace.events[pick.first[0]][pick.first[1]]
        elements = first_ev.elements(pick.byte_lo, pick.byte_hi) if isinstance(first_ev, Access) else (
            pick.byte_lo, pick.byte_hi)
        out.append(Race(
            hazard=hp.hazard, first=by_event[pick.first], second=by_event[pick.second],
            inverted=lateness(pick) > 0, pairs=len(hp.pairs), inverted_pairs=len(inverted), elements=elements,
            first_side=_side(trace, hp.hazard.first, pick.first[0]),
            second_side=_side(trace, hp.hazard.second, pick.second[0]),
        ))
    return out
