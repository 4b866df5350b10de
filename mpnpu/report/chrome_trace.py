"""Launch timelines as Chrome Trace Event JSON (chrome://tracing, Perfetto UI, MindStudio Insight).

Layout of the file, per launch (several launches share one file, each starting at time 0):

- one *process* per AI core (``pid``), one *thread* (track) per core process: cube, vector 0,
  vector 1 (``tid``), and below each one track per pipe that executed copies asynchronously
  (``aiv0 vector 0 · MTE3``), named and ordered by ``M`` metadata events (``process_name``,
  ``process_sort_index``, ``thread_name``, ``thread_sort_index``);
- complete events (``ph: X``, ``ts``/``dur`` in microseconds): on a core's track its stages, each
  SyncAll from the core's arrival to its release, flag sets, flag waits from the start of the wait
  to its release, and the GM accesses the kernel thread made itself (tensor, element range, access
  kind and kernel source line in ``args``); on a pipe's track the copies that pipe executed, which
  run concurrently with the kernel thread and the other pipes. On one track slices nest (an access
  inside its stage) and never partly overlap: Perfetto would move a partly overlapping slice to an
  overflow track. A pipe executes one instruction at a time, so its track never needs to nest;
- instant events (``ph: i``): dropped and inserted sync points on their core's track, and each
  SyncAll's release (its last arrival) across the launch;
- flows (``ph: s`` then ``ph: f`` with ``bp: e``, paired by ``id``): from each flag set to the
  wait it released, and for each racecheck hazard between its two accesses, named like the report
  line (``RAW workspace.buf[5:128]``). Flows always point forward in time (Perfetto
  reverses a backward one anyway): when the read of a RAW came *before* the write — the race
  showing — the arrow goes from the read to the write, and ``args.order`` says so. Also one
  flow (category ``pipe-order``) per core and tensor whose GM accesses the core's pipes ran in the
  opposite order to their issue order (:mod:`mpnpu.harness.timeline.inversions`).

Timestamps are microseconds with nanosecond decimals, from CLOCK_MONOTONIC, which every core
process shares.
"""

from __future__ import annotations

import json
from typing import IO, Any, Iterable

from mpnpu.harness.timeline.inversions import Inversion
from mpnpu.harness.timeline.model import PIPE_LANES, LaunchTimeline, Race, Span
from mpnpu.racecheck.hazards import key_text
from mpnpu.report import write_report
from mpnpu.runtime.topology import CoreType

#: pids of launch k are k * _PID_STRIDE + AI core + 1 (pid 0 means "the kernel" to some viewers).
_PID_STRIDE = 1000


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


#: A core's tracks: its kernel thread ("") and then its pipes, in this order within the core.
_LANE_INDEX = {"": 0, **{p: i + 1 for i, p in enumerate(PIPE_LANES)}}


def _track(tl: LaunchTimeline, k: int, core: int, lane: str = "") -> tuple[int, int]:
    """(pid, tid) of a core's lane: tid = pid * 100 + 10 * core slot + lane index, so sorting by
    tid puts each core's pipes right under it."""
    info = tl.topology.core(core)
    pid = k * _PID_STRIDE + info.ai_core + 1
    slot = 0 if info.core_type is CoreType.CUBE else 1 + info.sub_block_idx
    return pid, pid * 100 + 10 * slot + _LANE_INDEX.get(lane, 9)


def _lane_name(tl: LaunchTimeline, core: int, lane: str = "") -> str:
    info = tl.topology.core(core)
    name = f"{info.short} cube" if info.core_type is CoreType.CUBE else f"{info.short} vector {info.sub_block_idx}"
    return f"{name} · {lane}" if lane else name


def process_name(tl: LaunchTimeline, k: int, ai_core: int) -> str:
    """A process's name: verdict, launch and AI core first (Perfetto cuts a long name in the
    middle and ignores ``process_sort_index``), then the launch's label and verdict in words."""
    verdict = "" if tl.passed is None else ("passed" if tl.passed else "FAILED")
    detail = tl.summary
    for word in ("FAILED: ", "FAILED", "passed"):
        if verdict and detail.startswith(word):
            detail = detail[len(word):].strip()
            break
    return " | ".join(part for part in (verdict, f"launch {k + 1}", f"AI core {ai_core}", tl.label, detail) if part)


def _metadata(tl: LaunchTimeline, k: int) -> list[dict[str, Any]]:
    out = []
    for ai_core in range(tl.topology.block_dim):
        cores = [c.core_id for c in tl.topology.cores if c.ai_core == ai_core]
        pid, first_tid = _track(tl, k, cores[0])
        out.append({"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": first_tid,
                    "args": {"name": process_name(tl, k, ai_core)}})
        out.append({"name": "process_sort_index", "ph": "M", "ts": 0, "pid": pid, "tid": first_tid,
                    "args": {"sort_index": pid}})
        for c in cores:
            for lane in tl.lanes_of(c):
                _, tid = _track(tl, k, c, lane)
                out.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
                            "args": {"name": _lane_name(tl, c, lane)}})
                out.append({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
                            "args": {"sort_index": tid % 100}})
    return out


def _flow_pair(flow_id: int, name: str, cat: str, src: Span, dst: Span, tl: LaunchTimeline, k: int,
               args: dict[str, Any], src_ns: int, dst_ns: int) -> list[dict[str, Any]]:
    """A flow from ``src`` at ``src_ns`` to ``dst`` at ``dst_ns``; its args on the start only (the
    legacy viewer merges both ends' args and warns, arg_merge_error, when both have the same)."""
    if src_ns > dst_ns:  # flows point forward in time
        src, dst, src_ns, dst_ns = dst, src, dst_ns, src_ns
    spid, stid = _track(tl, k, src.core, src.lane)
    dpid, dtid = _track(tl, k, dst.core, dst.lane)
    return [
        {"name": name, "cat": cat, "ph": "s", "id": flow_id, "ts": _us(src_ns), "pid": spid, "tid": stid,
         "args": args},
        {"name": name, "cat": cat, "ph": "f", "bp": "e", "id": flow_id, "ts": _us(dst_ns), "pid": dpid,
         "tid": dtid},
    ]


#: The slice a flag arrow ends on: it starts when the wait was released and lasts this long at
#: most (less when the track's next slice starts sooner, or an enclosing one ends sooner).
RELEASE_NS = 2000


def _release_slices(tl: LaunchTimeline) -> dict[Span, tuple[int, int]]:
    """Per flag wait that a set released: the short slice [release, release + d] where its arrows
    end. Perfetto draws an arrow from whichever of its two slices starts first, and a wait usually
    starts before the set that releases it: bound to the wait, the arrow would point backwards."""
    out: dict[Span, tuple[int, int]] = {}
    by_track: dict[tuple[int, str], list[Span]] = {}
    for s in tl.spans:
        by_track.setdefault((s.core, s.lane), []).append(s)
    for f in tl.flows:
        w = f.dst
        if w in out:
            continue
        r = w.t1
        d = RELEASE_NS
        for s in by_track.get((w.core, w.lane), ()):
            if s.t0 >= r:
                d = min(d, s.t0 - r)
            elif s.t1 > r:
                d = min(d, s.t1 - r)  # an enclosing slice (the stage): stay inside it
        out[w] = (r, r + d)
    return out


def _start(s: Span) -> int:
    """Where a flow binds to ``s``: 1 ns after its start when it lasts longer. Perfetto binds a
    flow event to the slice open on its track when it reads the event, and reads events of equal
    time in no promised order: strictly inside, the slice is open."""
    return s.t0 + 1 if s.t1 - s.t0 >= 2 else s.t0


def _race_args(race: Race) -> dict[str, Any]:
    h = race.hazard
    lo, hi = race.elements

    def side(site: Any, span: Span) -> dict[str, Any]:
        out = {"core": site.short, "access": site.access, "stage": site.stage, "site": site.site,
               "start_us": _us(span.t0), "end_us": _us(span.t1)}
        return {**out, "pipe": site.pipe} if site.pipe else out

    (early, early_span), (late, late_span) = race.in_time_order
    return {
        "kind": h.kind,
        "tensor": h.tensor,
        "elements": f"[{lo}:{hi}]",
        # this drawn pair's own accesses, in the intended order (the hazard merges pairs of many cores)
        "first": side(race.first_side, race.first),
        "second": side(race.second_side, race.second),
        "happened": (f"{early.short} {early.access} at {_us(early_span.t0)} us, then {late.short} {late.access} at "
                     f"{_us(late_span.t0)} us"),
        "missing_sync": h.missing_sync,
        "order": ("the second access started before the first ended: the race showed" if race.inverted
                  else "in the intended order this time (nothing ordered it)"),
        "pairs": race.pairs,
        "pairs_in_wrong_order": race.inverted_pairs,
        **({"scope": h.scope} if h.scope != "GM" else {}),
        # a hazard whose accesses depend on data read through another one: drawn, but not a bug of its own
        **({"consequence_of": key_text(h.root)} if h.root is not None else {}),
    }


def launch_events(tl: LaunchTimeline, k: int = 0, first_flow_id: int = 1) -> list[dict[str, Any]]:
    """The trace events of one launch (``k``: its position in the file)."""
    events = _metadata(tl, k)
    racing: dict[tuple[int, int], str] = {}
    races: list[Race | Inversion] = [*tl.races, *tl.inversions]
    for race in races:
        racing.setdefault((race.first.core, race.first.event), race.title)
        racing.setdefault((race.second.core, race.second.event), race.title)
    for s in tl.spans:
        pid, tid = _track(tl, k, s.core, s.lane)
        ev = {"name": s.name, "cat": s.cat, "ph": "X", "ts": _us(s.t0), "dur": _us(max(0, s.t1 - s.t0)),
              "pid": pid, "tid": tid, "args": s.args}
        title = racing.get((s.core, s.event))
        if title is not None:
            ev["args"] = {**s.args, "race": title}
            ev["cname"] = "terrible"  # chrome://tracing's red
        events.append(ev)
    releases = _release_slices(tl)
    for w, (r0, r1) in releases.items():
        pid, tid = _track(tl, k, w.core, w.lane)
        events.append({"name": f"{w.name.split(' (')[0]} released", "cat": "flag", "ph": "X", "ts": _us(r0),
                       "dur": _us(r1 - r0), "pid": pid, "tid": tid,
                       "args": {"wait": w.args.get("site"), "waited_us": _us(w.t1 - w.t0)}})
    for i in tl.instants:
        pid, tid = _track(tl, k, i.core)
        events.append({"name": i.name, "cat": i.cat, "ph": "i", "s": "t", "ts": _us(i.t), "pid": pid, "tid": tid,
                       "args": i.args})
    pid0, tid0 = _track(tl, k, 0)
    for b in tl.barriers:
        events.append({"name": f"{b.name} released", "cat": "sync", "ph": "i", "s": "p", "ts": _us(b.release),
                       "pid": pid0, "tid": tid0,
                       "args": {"first_arrival_us": _us(b.first_arrival), "last_arrival_us": _us(b.release),
                                "parties": len(b.waits)}})
    flow_id = first_flow_id
    for f in tl.flows:
        # From the set's start to the slice that starts when the wait was released.
        r0, r1 = releases[f.dst]
        events += _flow_pair(flow_id, f.name, f.cat, f.src, f.dst, tl, k, f.args, _start(f.src), (r0 + r1) // 2)
        flow_id += 1
    # Hazard arrows from the access that started first to the other (as Perfetto draws them anyway).
    for race in tl.races:
        events += _flow_pair(flow_id, race.title, "hazard", race.first, race.second, tl, k, _race_args(race),
                             _start(race.first), _start(race.second))
        flow_id += 1
    for inv in tl.inversions:
        lo, hi = inv.elements
        sides = {name: {"access": s.args["access"], "pipe": s.lane, "stage": s.args["stage"], "site": s.args["site"]}
                 for name, s in (("issued_first", inv.first), ("issued_second", inv.second))}
        args = {
            "kind": inv.kind, "tensor": inv.tensor, "elements": f"[{lo}:{hi}]", "core": inv.core, **sides,
            "order": (f"issued second, started {_us(inv.lead_ns)} us before the access issued first had finished: "
                      "the core's pipes ran them in the wrong order (observed in this launch; racecheck reported "
                      "no hazard inside the core on this tensor)"),
            "dropped_between": list(inv.dropped), "pairs_in_wrong_order": inv.pairs,
        }
        events += _flow_pair(flow_id, inv.title, "pipe-order", inv.first, inv.second, tl, k, args,
                             _start(inv.first), _start(inv.second))
        flow_id += 1
    return events


def trace_document(timelines: Iterable[LaunchTimeline]) -> dict[str, Any]:
    """The whole JSON document for several launches."""
    events: list[dict[str, Any]] = []
    launches = []
    for k, tl in enumerate(timelines):
        events += launch_events(tl, k, first_flow_id=len(events) + 1)
        launches.append({"label": tl.label, "role": tl.role, "verdict": tl.summary, "kernel": tl.kernel,
                         "block_dim": tl.topology.block_dim, "dropped_syncs": sorted(tl.dropped_syncs),
                         "clock_origin_ns": tl.origin_ns, "hazards": [r.title for r in tl.races],
                         "pipe_order_inversions": [inv.title for inv in tl.inversions]})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"producer": "mpnpu", "clock": "CLOCK_MONOTONIC, microseconds from each launch's first event",
                      "launches": launches},
    }


class ChromeTraceReport:
    """Launch timelines as one Chrome Trace Event document (compact JSON)."""

    binary = False
    description = "Chrome trace JSON"

    def write(self, timelines: Iterable[LaunchTimeline], out: IO[str]) -> None:
        # UTF-8 as it is (Perfetto shows a \u escape in a name literally).
        json.dump(trace_document(timelines), out, separators=(",", ":"), ensure_ascii=False)
        out.write("\n")


def write_chrome_trace(path: str, timelines: Iterable[LaunchTimeline]) -> int:
    """Write the timelines to ``path`` (atomically); return the file's size in bytes."""
    return write_report(path, ChromeTraceReport(), timelines)


def flows_of(doc: dict[str, Any]) -> dict[Any, list[dict[str, Any]]]:
    """Flow events of a document grouped by id (for checks and tests)."""
    out: dict[Any, list[dict[str, Any]]] = {}
    for ev in doc["traceEvents"]:
        if ev.get("ph") in ("s", "t", "f"):
            out.setdefault(ev["id"], []).append(ev)
    return out


__all__ = ["flows_of", "launch_events", "process_name", "trace_document", "write_chrome_trace"]
