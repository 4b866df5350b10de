"""Launch timelines (Chrome trace JSON, PNG/SVG), JUnit reports and plain progress lines.

Deterministic throughout: the format rules of the trace file, the hazard flow joining the two
racing accesses of the incident (happens-before finds that hazard in every launch of a case where
cores read rows other cores wrote, whether or not the race showed), the shared clock (a flag's set
is never later than the wait it released; every core arrives at a SyncAll before any leaves), the
launch selection, the JUnit counts against the run's own JSON, and no carriage returns on a
non-terminal stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from mpnpu.cli.common import run_cli
from mpnpu.harness.runner import BatchResult, Variant, VariantResult
from mpnpu.harness.timeline import TimelineSelector, build_timeline
from mpnpu.kernels.fused_linear_online_max_sum.operator import OPERATOR
from mpnpu.operators.protocol import Verdict
from mpnpu.racecheck import check_case
from mpnpu.report.chrome_trace import flows_of, trace_document
from mpnpu.report.junit import batch_junit
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device

REPO = Path(__file__).resolve().parents[1]
OPTIONS = RuntimeOptions(gm_segment_bytes=8 << 20, launch_timeout_s=60.0)
CASE = 5  # a case whose rows are split over both vector cores: the S1 hazard exists in every launch

try:
    import matplotlib  # noqa: F401

    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False
needs_mpl = pytest.mark.skipif(not HAVE_MPL, reason="needs the plot extra (pip install 'mpnpu[plot]')")


# -- traces of real launches, shared by the tests of this module ---------------------------------------


REPAIR = "after:TargetProcess"  # the SyncAll the incident lacks, inserted for one launch


@pytest.fixture(scope="module")
def launches():
    """One traced incident launch (S1 dropped) and one traced fixed launch of the same case.

    FLOMS is pipelined: its copies run on the cores' asynchronous MTE2/MTE3/FIX pipe threads.
    """
    case = OPERATOR.make_case(0, CASE)
    with Device(1, options=OPTIONS) as dev:
        incident = check_case(OPERATOR, dev, case, drop_syncs={"S1"})
        fixed = check_case(OPERATOR, dev, case)
    return incident, fixed


@pytest.fixture(scope="module")
def repaired():
    """The incident (S1 dropped) with the missing SyncAll inserted after TargetProcess."""
    with Device(1, options=OPTIONS) as dev, dev.launch_settings(insert_syncs=(REPAIR,)):
        return check_case(OPERATOR, dev, OPERATOR.make_case(0, CASE), drop_syncs={"S1"})


def _timelines(launches):
    incident, fixed = launches
    return [
        build_timeline(incident.launch.trace, label=f"incident, case {CASE}", role="test", passed=incident.passed,
                       summary="passed" if incident.passed else "FAILED"),
        build_timeline(fixed.launch.trace, label=f"fixed, case {CASE}", role="test", passed=fixed.passed,
                       summary="passed"),
    ]


# -- the format's rules ------------------------------------------------------------------------------


def _ns(us: float) -> int:
    return round(us * 1000)


def assert_trace_rules(doc: dict) -> None:
    """The Chrome Trace Event rules a viewer relies on (see mpnpu/report/chrome_trace.py)."""
    events = doc["traceEvents"]
    assert events
    for ev in events:
        for key in ("ph", "ts", "pid", "tid"):
            assert key in ev, f"event without {key}: {ev}"
    slices = defaultdict(list)
    for ev in events:
        if ev["ph"] == "X":
            assert ev["dur"] >= 0, ev
            slices[(ev["pid"], ev["tid"])].append((_ns(ev["ts"]), _ns(ev["ts"]) + _ns(ev["dur"]), ev["name"]))
    # No partial overlap on a track: slices either nest or are disjoint.
    for track, spans in slices.items():
        stack: list[tuple[int, int, str]] = []
        for start, end, name in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1][1], f"{name} partly overlaps {stack[-1][2]} on track {track}"
            stack.append((start, end, name))
    # Flows: one start and one end per id, same name and category, forward in time, each bound to a slice.
    for flow_id, flow in flows_of(doc).items():
        phases = sorted(ev["ph"] for ev in flow)
        assert phases == ["f", "s"], f"flow {flow_id}: {phases}"
        s = next(ev for ev in flow if ev["ph"] == "s")
        f = next(ev for ev in flow if ev["ph"] == "f")
        assert (s["name"], s["cat"]) == (f["name"], f["cat"])
        assert s["ts"] <= f["ts"]
        assert f.get("bp") == "e"
        for ev in (s, f):
            t = _ns(ev["ts"])
            assert any(a <= t <= b for a, b, _ in slices[(ev["pid"], ev["tid"])]), f"flow {flow_id} binds no slice"
    # Metadata names every process and every track that has events.
    named_threads = {(ev["pid"], ev["tid"]) for ev in events if ev["ph"] == "M" and ev["name"] == "thread_name"}
    named_procs = {ev["pid"] for ev in events if ev["ph"] == "M" and ev["name"] == "process_name"}
    for ev in events:
        if ev["ph"] != "M":
            assert (ev["pid"], ev["tid"]) in named_threads, f"unnamed track {(ev['pid'], ev['tid'])}"
            assert ev["pid"] in named_procs


def _enclosing(doc: dict, ev: dict) -> dict:
    """The innermost X slice on ev's track containing ev's timestamp (what a viewer binds a flow to)."""
    t = _ns(ev["ts"])
    inside = [x for x in doc["traceEvents"] if x["ph"] == "X" and (x["pid"], x["tid"]) == (ev["pid"], ev["tid"])
              and _ns(x["ts"]) <= t <= _ns(x["ts"]) + _ns(x["dur"])]
    return min(inside, key=lambda x: x["dur"])


def test_trace_json_loads_and_follows_the_format_rules(launches, tmp_path) -> None:
    from mpnpu.report.chrome_trace import write_chrome_trace

    path = tmp_path / "t.json"
    size = write_chrome_trace(str(path), _timelines(launches))
    assert size == path.stat().st_size
    doc = json.loads(path.read_text())
    assert_trace_rules(doc)
    names = {ev["args"]["name"] for ev in doc["traceEvents"] if ev["ph"] == "M" and ev["name"] == "thread_name"}
    # A track per core process, and under it one per pipe that made GM copies asynchronously.
    assert {"aic0 cube", "aiv0 vector 0", "aiv1 vector 1"} <= names
    assert {"aic0 cube · MTE2", "aic0 cube · FIX", "aiv0 vector 0 · MTE2", "aiv0 vector 0 · MTE3"} <= names
    stages = {ev["name"] for ev in doc["traceEvents"] if ev.get("cat") == "stage"}
    assert {"InitOutputAndWorkspace", "TargetProcess", "CVProcess", "AllReduceProcess"} <= stages
    # The incident's launch marks S1 dropped on every core; the fixed launch waits at S1 on every core.
    dropped = [ev for ev in doc["traceEvents"] if ev["ph"] == "i" and ev["name"] == "S1 dropped"]
    assert len(dropped) == 3
    s1_waits = [ev for ev in doc["traceEvents"] if ev["ph"] == "X" and ev["name"] == "SyncAll S1"]
    assert len(s1_waits) == 3


def _tracks(doc: dict) -> dict[tuple[int, int], tuple[str, list[dict]]]:
    """(pid, tid) -> (track name, its X events sorted by start)."""
    names = {(ev["pid"], ev["tid"]): ev["args"]["name"] for ev in doc["traceEvents"] if ev.get("name") == "thread_name"}
    out: dict = {k: (v, []) for k, v in names.items()}
    for ev in doc["traceEvents"]:
        if ev["ph"] == "X":
            out[(ev["pid"], ev["tid"])][1].append(ev)
    for _, evs in out.values():
        evs.sort(key=lambda ev: (_ns(ev["ts"]), -_ns(ev["dur"])))
    return out


def test_pipelined_copies_get_a_track_per_pipe_and_no_track_overlaps(launches) -> None:
    """FLOMS's copies run on pipe threads, concurrently with the kernel thread and each other: each
    pipe's copies are on a track of their own, one after the other; the kernel thread's track keeps
    stages, SyncAll and flag waits, nested and never partly overlapping (Perfetto's rule)."""
    incident, _ = launches
    trace = incident.launch.trace
    ran_on = {ev.ran_on for evs in trace.events for ev in evs if hasattr(ev, "ran_on")}
    assert {"PIPE_MTE2", "PIPE_MTE3", "PIPE_FIX"} <= ran_on  # the launch really ran its pipes asynchronously
    doc = trace_document(_timelines(launches)[:1])
    assert_trace_rules(doc)
    copies = 0
    for name, evs in _tracks(doc).values():
        if " · " in name:
            pipe = name.split(" · ")[1]
            assert evs and all(ev["cat"].startswith("gm.") and ev["args"]["pipe"] == f"PIPE_{pipe}" for ev in evs), name
            # A pipe executes one instruction at a time: its slices follow one another, none inside another.
            for a, b in zip(evs, evs[1:]):
                assert _ns(a["ts"]) + _ns(a["dur"]) <= _ns(b["ts"]), f"{b['name']} overlaps {a['name']} on {name}"
            copies += len(evs)
        else:
            # The kernel thread's own work: stages, SyncAll, flags, and the instructions of the
            # pipes that run inline on it (mmad on PIPE_M, vector instructions on PIPE_V).
            assert {"stage", "sync", "flag"} <= {ev["cat"] for ev in evs} <= {"stage", "sync", "flag", "local"}, name
    assert copies == sum(1 for evs in trace.events for ev in evs if getattr(ev, "ran_on", ""))


def test_copies_that_outlive_their_stage_do_not_overlap_on_a_track() -> None:
    """Hand-made: an MTE3 copy issued in stage A that lands after A ended (while B waits on a flag),
    and an MTE2 copy running at the same time, drawn on their pipes' tracks without partial overlap."""
    from mpnpu.runtime.trace import Access, FlagWaitEvent, LaunchTrace, StageEvent

    def copy(kind, pipe, t0, t1, stage):
        return Access(kind, "buf", "seg", ((0, 64),), 0, 4, stage, "k.py:9", t0, t1, f"PIPE_{pipe}", f"PIPE_{pipe}")

    core = (StageEvent("A", "k.py:1", 1000, 2000), copy("W", "MTE3", 1500, 2600, "A"),
            StageEvent("B", "k.py:2", 2000, 5000), FlagWaitEvent(1, 0, "", "B", "k.py:3", 2100, 3000),
            copy("R", "MTE2", 2500, 3500, "B"), copy("R", "MTE2", 3600, 3700, "B"))
    trace = LaunchTrace(1, "k", (core, (StageEvent("A", "k.py:1", 1000, 1100),), ()), frozenset())
    tl = build_timeline(trace, races=False)
    assert [s.lane for s in tl.spans_of(0) if s.cat.startswith("gm")] == ["MTE3", "MTE2", "MTE2"]
    doc = trace_document([tl])
    assert_trace_rules(doc)
    names = sorted(name for name, evs in _tracks(doc).values() if evs)
    assert names == ["aic0 cube", "aic0 cube · MTE2", "aic0 cube · MTE3", "aiv0 vector 0"]
    # Tracks sort as named: each core, then its pipes.
    tracks = _tracks(doc)
    order = {tracks[(ev["pid"], ev["tid"])][0]: ev["args"]["sort_index"] for ev in doc["traceEvents"]
             if ev.get("name") == "thread_sort_index"}
    assert order["aic0 cube"] < order["aic0 cube · MTE2"] < order["aic0 cube · MTE3"] < order["aiv0 vector 0"]


def test_pipe_order_inversions_inside_a_core() -> None:
    """Hand-made: a core issues a write to MTE3, then a read of the same rows to MTE2 (S1 dropped in
    between), and the read runs first: the timeline reports that inversion (racecheck cannot: it
    orders a core's own GM accesses by issue order). Pairs that ran in issue order, touch other
    bytes, share a pipe or only read are not inversions."""
    from mpnpu.runtime.trace import Access, DroppedSyncEvent, LaunchTrace, StageEvent

    def copy(kind, pipe, t0, t1, lo, hi, tensor="ws"):
        return Access(kind, tensor, f"seg-{tensor}", ((4 * lo, 4 * hi),), 0, 4, "A", f"k.py:{lo}", t0, t1,
                      f"PIPE_{pipe}", f"PIPE_{pipe}")

    core = (StageEvent("A", "k.py:1", 1000, 9000),
            copy("W", "MTE3", 3000, 3500, 0, 64),  # issued first, ran last
            DroppedSyncEvent("S1", "sync_all", "A", "k.py:2", 1200, 1200),
            copy("R", "MTE2", 2000, 2100, 32, 96),  # RAW on [32:64], 1.5 us early
            copy("R", "MTE2", 2200, 2300, 64, 96),  # other bytes
            copy("W", "MTE3", 3600, 3700, 0, 8),  # same pipe as the write, and after it
            copy("R", "MTE2", 3800, 3900, 0, 8),  # after the writes: in order
            copy("R", "MTE2", 1500, 1600, 0, 64, tensor="other"),  # two reads (on one pipe)
            copy("R", "MTE2", 1400, 1450, 0, 64, tensor="other"))
    trace = LaunchTrace(1, "k", (core, (), ()), frozenset({"S1"}))
    tl = build_timeline(trace, races=False)
    [inv] = tl.inversions
    assert (inv.kind, inv.tensor, inv.core, inv.elements, inv.dropped, inv.pairs) == ("RAW", "ws", "aic0", (32, 64),
                                                                                      ("S1",), 1)
    assert (inv.first.lane, inv.second.lane, inv.lead_ns) == ("MTE3", "MTE2", 1500)
    assert inv.title == "RAW ws[32:64] inside aic0"
    doc = trace_document([tl])
    assert_trace_rules(doc)
    [flow] = [evs for evs in flows_of(doc).values() if evs[0]["cat"] == "pipe-order"]
    start = next(ev for ev in flow if ev["ph"] == "s")
    assert _enclosing(doc, start)["args"]["access"] == "READ"  # forward in time: from the read that ran first
    assert doc["otherData"]["launches"][0]["pipe_order_inversions"] == [inv.title]


@pytest.mark.slow
def test_inserted_sync_points_are_marked(repaired, tmp_path) -> None:
    """A sync inserted for a launch (a repair being tried) is an instant marker on every core that
    ran it, like a dropped one, and the repaired launch has no race."""
    tl = build_timeline(repaired.launch.trace, label="repaired", passed=repaired.passed)
    marks = [i for i in tl.instants if i.cat == "inserted"]
    assert sorted(i.core for i in marks) == [0, 1, 2]
    assert {i.name for i in marks} == {f"+{REPAIR} inserted"}
    assert {i.args["call"] for i in marks} == {"sync_all"}
    # Each marker is where its core arrived at the inserted barrier.
    arrivals = {s.core: s.t0 for s in tl.spans if s.name == f"SyncAll +{REPAIR}"}
    assert {i.core: i.t for i in marks} == arrivals
    assert not tl.races and repaired.passed
    doc = trace_document([tl])
    assert_trace_rules(doc)
    assert len([ev for ev in doc["traceEvents"] if ev["ph"] == "i" and ev["cat"] == "inserted"]) == 3
    if HAVE_MPL:
        from mpnpu.report.picture import render_timelines

        svg = tmp_path / "repaired.svg"
        render_timelines(str(svg), [tl])
        text = svg.read_text()
        assert f"+{REPAIR} inserted" in text and "sync point inserted" in text


def test_incident_hazard_flow_joins_the_two_racing_accesses(launches) -> None:
    incident, fixed = launches
    [h] = [h for h in incident.hazards if h.tensor == "workspace.masked_target" and h.scope == "GM"]
    doc = trace_document(_timelines(launches)[:1])
    lo, hi = h.element_range
    [flow] = [evs for evs in flows_of(doc).values()
              if evs[0]["cat"] == "hazard" and evs[0]["name"] == f"RAW workspace.masked_target[{lo}:{hi}]"]
    args = next(ev["args"] for ev in flow if ev["ph"] == "s")
    threads = {(ev["pid"], ev["tid"]): ev["args"]["name"] for ev in doc["traceEvents"]
               if ev.get("name") == "thread_name"}
    joined = {}
    for ev in flow:
        x = _enclosing(doc, ev)
        joined[x["args"]["access"]] = (threads[(x["pid"], x["tid"])].split()[0], x["args"]["site"], x["args"]["tensor"],
                                       x["args"]["elements"])
    # Both ends sit on the racing accesses: the write in TargetProcess and the read in CVProcess,
    # on the kernel lines and tensor the racecheck report names, and on the cores the flow's args
    # name for this pair (the hazard's own sides are one representative core pair of all it merges).
    assert set(joined) == {"WRITE", "READ"}
    for side, drawn in ((h.first, args["first"]), (h.second, args["second"])):
        core, site, tensor, elements = joined[side.access]
        assert (core, site, tensor) == (drawn["core"], side.site, "workspace.masked_target")
        assert drawn["access"] == side.access
        a, b = map(int, elements.strip("[]").split(":"))
        assert a < hi and lo < b, f"{elements} misses the hazard's range [{lo}:{hi}]"
    # The fixed kernel has no hazard, so no hazard flow; and its pipes kept the issue order of every
    # conflicting pair of GM accesses (its syncs make them).
    assert not _timelines(launches)[1].inversions
    # The fixed kernel has no hazard, so no hazard flow.
    assert not [evs for evs in flows_of(trace_document(_timelines(launches)[1:])).values()
                if evs[0]["cat"] == "hazard"]


def test_one_clock_for_every_core(launches) -> None:
    """Flag sets come before the waits they release and every core arrives at a SyncAll before any
    leaves it: true only if the cores' timestamps come from one clock."""
    for tl in _timelines(launches):
        flag_flows = [f for f in tl.flows if f.cat == "flag"]
        assert flag_flows
        for f in flag_flows:
            assert f.src.t0 <= f.dst.t1, f"{f.name}: set at {f.src.t0} ns, wait released at {f.dst.t1} ns"
        assert tl.barriers
        for b in tl.barriers:
            assert len(b.waits) == 3
            assert max(w.t0 for w in b.waits) <= min(w.t1 for w in b.waits), b.name


def test_timeline_needs_timestamps() -> None:
    from mpnpu.runtime.trace import LaunchTrace, StageEvent

    trace = LaunchTrace(1, "k", ((StageEvent("A", "k.py:1"),), (), ()), frozenset())
    with pytest.raises(ValueError, match="no timestamps"):
        build_timeline(trace)


# -- which launches are kept --------------------------------------------------------------------------


def _offer(sel, variant, case, passed, repeat=0, n=1):
    trace = object()  # the selector only keeps it
    sel.offer(variant, case, repeat, n, passed, "passed" if passed else "FAILED", trace)
    return trace


def test_selector_keeps_first_failure_and_a_passing_run_of_the_same_case() -> None:
    sel = TimelineSelector(["incident", "fixed"])
    assert sel.wants("incident", 0) and sel.wants("fixed", 0)
    _offer(sel, "incident", 0, True)
    _offer(sel, "fixed", 0, True)
    failing = _offer(sel, "incident", 1, False, n=2)
    # After its first failure, the incident variant traces only the failing case (until it passes).
    assert not sel.wants("incident", 2) and sel.wants("incident", 1)
    fixed_same = _offer(sel, "fixed", 1, True, n=2)
    assert sel.wants("fixed", 2)  # a variant that has not failed yet may fail at any launch
    _offer(sel, "incident", 1, False, repeat=1, n=3)  # fails again: still no passing run
    assert sel.pending() == [("incident", 1)]
    passing = _offer(sel, "incident", 1, True, repeat=2, n=4)
    assert sel.pending() == []
    kept = sel.kept()
    assert [r.trace for r in kept] == [failing, passing, fixed_same]
    assert [r.role for r in kept] == ["first failure", "passing run of the same case, for contrast",
                                      "the same case in a variant that did not fail"]
    assert kept[0].label == "incident, case 1 (repeat 1, case-run 2)"


def test_selector_without_failures_and_for_one_case() -> None:
    sel = TimelineSelector(["incident", "fixed"])
    first = [_offer(sel, v, 0, True) for v in ("incident", "fixed")]
    _offer(sel, "incident", 1, True)
    assert [r.trace for r in sel.kept()] == first
    assert sel.pending() == []

    one = TimelineSelector(["incident"], case=3)
    assert not one.wants("incident", 2) and one.wants("incident", 3)
    _offer(one, "incident", 2, False)  # another case: ignored
    passing = _offer(one, "incident", 3, True)
    assert one.wants("incident", 3)
    failing = _offer(one, "incident", 3, False, repeat=1)
    assert not one.wants("incident", 3)
    assert [r.trace for r in one.kept()] == [failing, passing]


# -- pictures -----------------------------------------------------------------------------------------


def _red_pixels(img) -> int:
    import numpy as np

    rgb = (img[..., :3] * 255).astype(int) if img.dtype.kind == "f" else img[..., :3].astype(int)
    return int(np.sum((abs(rgb[..., 0] - 214) < 20) & (rgb[..., 1] < 80) & (rgb[..., 2] < 80)))


@pytest.mark.slow
@needs_mpl
def test_png_and_svg_render_at_the_expected_size(launches, tmp_path) -> None:
    import matplotlib.image as mpimg

    from mpnpu.report.picture import DPI, render_timelines, timeline_figure_size

    incident, fixed = _timelines(launches)
    pictures = {}
    for name, tls in (("incident", [incident]), ("fixed", [fixed])):
        png = tmp_path / f"{name}.png"
        render_timelines(str(png), tls)
        img = mpimg.imread(str(png))
        w_in, h_in = timeline_figure_size(tls)
        assert img.shape[:2] == (round(h_in * DPI), round(w_in * DPI))
        assert (img[..., :3] < 0.95).any(axis=-1).mean() > 0.05, "picture is (almost) blank"
        pictures[name] = _red_pixels(img)
    # The racing write and read are circled and joined by a red arrow in the incident's picture
    # (and S1 is marked dropped); the fixed kernel's picture has neither.
    assert pictures["incident"] > 500 > pictures["fixed"]

    svg = tmp_path / "both.svg"
    render_timelines(str(svg), [incident, fixed])
    root = ET.parse(svg).getroot()
    w_in, h_in = timeline_figure_size([incident, fixed])
    assert float(root.get("width").removesuffix("pt")) == pytest.approx(w_in * 72, abs=1)
    assert float(root.get("height").removesuffix("pt")) == pytest.approx(h_in * 72, abs=1)
    text = svg.read_text()
    assert "RAW workspace.masked_target" in text and "S1 dropped" in text
    assert text.count("<path") > 100


def test_pictures_without_matplotlib_fail_with_one_line(monkeypatch, capsys, tmp_path) -> None:
    from mpnpu.cli.commands import batch, stress

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # "import matplotlib" now raises ImportError
    assert run_cli(batch.COMMAND.main, ["--cases", "1", "--timeline-png", str(tmp_path / "t.png")]) == 2
    assert run_cli(stress.COMMAND.main, ["--block-dims", "1", "--cases", "1", "--plot", str(tmp_path / "s.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["mpnpu: error: --timeline-png needs matplotlib: pip install 'mpnpu[plot]'",
                   "mpnpu: error: --plot needs matplotlib: pip install 'mpnpu[plot]'"]
    assert not list(tmp_path.iterdir())


def test_timeline_usage_errors(capsys, tmp_path) -> None:
    from mpnpu.cli.commands import batch

    for argv, needle in ((["--timeline-case", "0"], "needs --timeline"),
                         (["--cases", "3", "--timeline", str(tmp_path / "t.json"), "--timeline-case", "3"],
                          "not a case of this run"),
                         (["--timeline-png", str(tmp_path / "t.gif")], "must end in .png or .svg")):
        assert run_cli(batch.COMMAND.main, argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err


# -- the batch command end to end ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.time_limit(90)
def test_batch_writes_timeline_picture_and_junit_matching_the_run(tmp_path, capsys, no_leaks, time_limit) -> None:
    from mpnpu.cli.commands import batch

    out = {k: tmp_path / f"r.{k}" for k in ("json", "xml")}
    trace, png = tmp_path / "timeline.json", tmp_path / "timeline.png"
    argv = ["--cases", "8", "--repeat", "2", "--quiet", "--json", str(out["json"]), "--junit", str(out["xml"]),
            "--timeline", str(trace)] + (["--timeline-png", str(png)] if HAVE_MPL else [])
    assert run_cli(batch.COMMAND.main, argv) == 0
    report = json.loads(out["json"].read_text())
    doc = json.loads(trace.read_text())
    assert_trace_rules(doc)
    launches = doc["otherData"]["launches"]
    incident = report["variants"]["incident"]
    if incident["failed_case_runs"]:
        # The first failing case-run of the incident comes first, then the same case passing
        # (if any run of it passed), and the fixed kernel on that case.
        first_repeat = next(r for r, cases in enumerate(incident["failing_cases_by_repeat"]) if cases)
        case = incident["failing_cases_by_repeat"][first_repeat][0]
        assert launches[0]["label"].startswith(f"incident, case {case} (repeat {first_repeat + 1}, case-run ")
        assert launches[0]["verdict"].startswith("FAILED: predicted_logits")
        assert launches[0]["hazards"] and launches[0]["hazards"][0].startswith("RAW workspace.masked_target[")
        assert launches[-1]["label"].startswith(f"fixed, case {case} ")
    else:
        assert [entry["label"].split(",")[0] for entry in launches] == ["incident", "fixed"]
    assert all(entry["verdict"] == "passed" for entry in launches if entry["label"].startswith("fixed"))
    if HAVE_MPL:
        assert png.stat().st_size > 10_000

    suite = ET.parse(out["xml"]).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"incident", "fixed"}
    assert suite.get("tests") == "2" and suite.get("errors") == "0"
    assert suite.get("failures") == str(int(report["variants"]["fixed"]["failed_case_runs"] > 0)) == "0"
    assert suite.get("skipped") == str(int(incident["failed_case_runs"] > 0))
    skipped = cases["incident"].find("skipped")
    if incident["failed_case_runs"]:
        assert skipped.get("type") == "pytest.xfail"
        assert f"{incident['failed_case_runs']}/{incident['case_runs']} case-runs failed" in skipped.get("message")
    else:
        assert skipped is None
    assert list(cases["fixed"]) == []


def _variant(name: str, dropped: frozenset, failures: list[int], runs: int) -> VariantResult:
    v = VariantResult(Variant(name, dropped), repeats=1)
    for i in range(runs):
        failed = i in failures
        verdict = Verdict(passed=not failed, failed_outputs=["predicted_logits"] if failed else [],
                          min_rel_error=10.0, max_rel_error=1e3)
        v.record(i, 0, verdict, "", 0.1 * i)
    return v


def test_junit_counts_follow_expectations() -> None:
    """A fixed variant that fails is a CI failure; an incident that fails is an expected failure;
    an incident that does not fail passes (as a non-strict xfail does)."""
    result = BatchResult(operator="op", seed=0, cases=5, repeat=1, block_dim=1, probe="", cpus=2, variants={
        "incident": _variant("incident", frozenset({"S1"}), [], 5),
        "fixed": _variant("fixed", frozenset(), [1, 3], 5),
    })
    suite = batch_junit(result).find("testsuite")
    counts = (suite.get("tests"), suite.get("failures"), suite.get("skipped"), suite.get("errors"))
    assert counts == ("2", "1", "0", "0")
    fixed = next(c for c in suite.iter("testcase") if c.get("name") == "fixed")
    failure = fixed.find("failure")
    assert failure.get("message").startswith("2/5 case-runs failed (40%; 95% Wilson interval")
    assert "repeat 1: failing cases 1, 3" in failure.text
    incident = next(c for c in suite.iter("testcase") if c.get("name") == "incident")
    assert incident.find("failure") is None and incident.find("skipped") is None
    assert "expected to fail" in incident.find("system-out").text


# -- stress -----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.time_limit(60)
def test_stress_junit_and_plot(tmp_path, no_leaks, time_limit) -> None:
    from mpnpu.cli.commands import stress

    xml, report = tmp_path / "s.xml", tmp_path / "s.json"
    argv = ["--block-dims", "1", "--placements", "none,pack", "--chaos", "off", "--cases", "3", "--quiet",
            "--time-limit", "inf", "--json", str(report), "--junit", str(xml)]
    if HAVE_MPL:
        argv += ["--plot", str(tmp_path / "s.svg")]
    assert run_cli(stress.COMMAND.main, argv) == 0
    data = json.loads(report.read_text())
    suite = ET.parse(xml).getroot().find("testsuite")
    names = [c.get("name") for c in suite.iter("testcase")]
    assert names == [f"{v}[{c['label']}]" for c in data["configurations"] for v in ("incident", "fixed")]
    failed_incident = sum(c["variants"]["incident"]["failed_case_runs"] > 0 for c in data["configurations"])
    assert (suite.get("failures"), suite.get("skipped")) == ("0", str(failed_incident))
    if HAVE_MPL:
        svg = (tmp_path / "s.svg").read_text()
        assert "bd1 pack" in svg and "95% Wilson interval" in svg


# -- progress -------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.time_limit(60)
def test_no_carriage_returns_when_stderr_is_a_file(tmp_path, time_limit) -> None:
    err = tmp_path / "err.txt"
    env = {**os.environ, "MPNPU_PROGRESS_EVERY": "0"}  # a line at every update, to see the lines
    with open(err, "w") as f:
        proc = subprocess.run([sys.executable, "-m", "mpnpu.batch", "--variant", "fixed", "--cases", "3",
                               "--repeat", "1"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=f, env=env,
                              timeout=60)
    assert proc.returncode == 0
    text = err.read_text()
    assert "\r" not in text
    lines = text.splitlines()
    assert [line.split(" (")[0] for line in lines[:3]] == ["case-runs: 1/3 runs", "case-runs: 2/3 runs",
                                                            "case-runs: 3/3 runs"]
    assert lines[-1].endswith("- done")


def test_a_cxx_launchs_race_inside_a_core_is_on_its_timeline() -> None:
    """vecin-early-read-cxx's incident: the vector unit reads a buffer MTE2 has not filled. Its C++ vector
    instructions now carry their times, so the timeline has the race inside the core (and the JSON its local
    slices), as the Python twin's has, instead of "no race"."""
    from mpnpu.operators.protocol import device_for
    from mpnpu.operators.registry import load_operator

    op = load_operator("vecin-early-read-cxx")
    case = op.make_case(0, 0)
    with device_for(op, 1) as dev:
        _, launch = op.run(dev, case, drop_syncs=op.variants["incident"], trace=True)
    tl = build_timeline(launch.trace)
    assert tl.races, "no race on the C++ launch's timeline"
    race = tl.races[0]
    assert race.hazard.scope == "local" and "MTE2" in {race.first.lane, race.second.lane}
    doc = trace_document([tl])
    assert any(ev.get("cat") == "local" for ev in doc["traceEvents"])


def _overlapping_labels(fig) -> list[tuple[str, str]]:
    """Pairs of boxed labels (barriers, dropped sync points, race callouts) drawn over each other in one panel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    found = []
    for ax in fig.get_axes():
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts
                 if t.get_bbox_patch() is not None and t.get_text().strip()]
        found += [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:] if ba.overlaps(bb)]
    return found


@pytest.mark.slow
@needs_mpl
def test_picture_labels_and_race_callouts_do_not_cover_each_other(launches) -> None:
    """A C++ kernel's labels are FILE:LINE names: a SyncAll's label and a dropped sync point's 2.6 ms apart
    were drawn over each other (placed by time alone), and the zoom panel's WRITE and READ callouts of a
    race between neighbouring lanes met between the lanes. Lanes of a vector-only kernel are one core
    per block: no AI-core lines every three lanes, no sub-block index."""
    import dataclasses

    from mpnpu.report.picture import _lane_label, timeline_figure
    from mpnpu.runtime.topology import KernelType, Topology

    tl = _timelines(launches)[0]
    race = next(r for r in tl.races)
    end = tl.duration_ns
    # the race's write and read on the two vector cores (lanes next to each other), 30% of the zoom apart
    first = dataclasses.replace(race.first, core=1, t0=end // 2, t1=end // 2 + end // 400)
    second = dataclasses.replace(race.second, core=2, t0=end // 2 + end // 40, t1=end // 2 + end // 40 + end // 400)
    side = dataclasses.replace(race.first_side, stage="TargetProcessWithALongerName", site="ascendc/floms.cpp:300")
    shown = dataclasses.replace(race, first=first, second=second, inverted=True, first_side=side,
                                second_side=dataclasses.replace(side, access="READ", site="ascendc/floms.cpp:452"))
    barriers = [dataclasses.replace(b, name=f"SyncAll ascendc/floms.cpp:{100 + i}", release=end // 2 + i * end // 30)
                for i, b in enumerate(tl.barriers)]
    instants = [dataclasses.replace(i, name="ascendc/floms.cpp:143 dropped", t=end // 2 + end // 25)
                for i in tl.instants]
    drawn = dataclasses.replace(tl, races=[shown], inversions=[], barriers=barriers, instants=instants)
    assert len(barriers) >= 2 and instants
    assert _overlapping_labels(timeline_figure([drawn])) == []

    aiv = SimpleNamespace(topology=Topology(8, KernelType.AIV))
    mix = SimpleNamespace(topology=Topology(2, KernelType.MIX_1_2))
    assert [_lane_label(aiv, c) for c in (0, 5)] == ["aiv0  vector", "aiv5  vector"]  # type: ignore[arg-type]
    assert sorted(_lane_label(mix, c) for c in range(6))[:3] == ["aic0  cube", "aic1  cube", "aiv0  vector 0"]  # type: ignore[arg-type]
