"""Timelines as real viewers draw them, and captions about the drawn pair (issue 21, items 6 and 8).

Hand-made traces with known times, so every property is deterministic:

- a hazard merges access pairs of several core pairs; the drawn instance names its own cores, in
  the order they ran, and the caption says who read stale data and whether it mattered;
- Perfetto draws a flow from whichever of its two slices starts first, so a flag's arrow ends on
  a short slice that starts when the wait was released, and starts at the set's start;
- the file is UTF-8 (Perfetto shows a ``\\u00b7`` escape literally), a flow's args are on one end
  (the legacy viewer's arg_merge_error), process names start with the verdict and launch;
- a race between the pipes of one core is drawn like a race between cores.
"""

from __future__ import annotations

import json

import pytest

from mpnpu.harness.timeline import build_timeline
from mpnpu.report.chrome_trace import flows_of, trace_document, write_chrome_trace
from mpnpu.runtime.trace import (
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    LaunchTrace,
    LocalAccess,
    StageEvent,
)
from tests.test_timeline import _enclosing, _ns, assert_trace_rules

US = 1000  # ns


def _acc(kind, lo, hi, t0, t1, *, stage, site, tensor="counts"):
    """An access of int32 elements [lo, hi) of ``tensor``, made by the kernel thread."""
    return Access(kind, tensor, "seg", ((4 * lo, 4 * hi),), 0, 4, stage, site, t0, t1)


def _counts_trace() -> LaunchTrace:
    """Each vector core writes its count, counts[me], in Publish (k.py:10), then reads the other's
    in Gather (k.py:20), with nothing in between: one RAW hazard merging two core pairs. aiv0 is
    the representative (it wrote first in trace order), but aiv1 writes late, at 418.7 us, after
    aiv0 already read counts[1:2] at 177.9 us: the drawn instance is aiv1 -> aiv0."""
    aiv0 = (StageEvent("Publish", "k.py:9", 100 * US, 110 * US),
            _acc("W", 0, 1, 101 * US, 102 * US, stage="Publish", site="k.py:10"),
            StageEvent("Gather", "k.py:19", 170 * US, 200 * US),
            _acc("R", 1, 2, 177_900, 178_900, stage="Gather", site="k.py:20"))
    aiv1 = (StageEvent("Publish", "k.py:9", 400 * US, 420 * US),
            _acc("W", 1, 2, 418_700, 419_000, stage="Publish", site="k.py:10"),
            StageEvent("Gather", "k.py:19", 430 * US, 450 * US),
            _acc("R", 0, 1, 440 * US, 441 * US, stage="Gather", site="k.py:20"))
    return LaunchTrace(1, "k", ((StageEvent("Publish", "k.py:9", 90 * US, 95 * US),), aiv0, aiv1), frozenset())


def test_the_drawn_instance_carries_its_own_pair_in_the_order_it_happened() -> None:
    tl = build_timeline(_counts_trace(), label="passing run", passed=True, summary="passed")
    [race] = tl.races
    h = race.hazard
    assert race.pairs == 2 and race.inverted
    # The merged hazard's sides are one representative pair; the drawn one is the other.
    assert (h.first.short, h.second.short) == ("aiv0", "aiv1")
    assert (race.first_side.short, race.second_side.short) == ("aiv1", "aiv0")
    assert (race.first.core, race.second.core) == (2, 1)
    assert race.elements == (1, 2)
    (early, _), (late, _) = race.in_time_order
    assert (early.short, early.access, late.short, late.access) == ("aiv0", "READ", "aiv1", "WRITE")

    doc = trace_document([tl])
    assert_trace_rules(doc)
    [flow] = [evs for evs in flows_of(doc).values() if evs[0]["cat"] == "hazard"]
    args = next(ev for ev in flow if ev["ph"] == "s")["args"]
    assert (args["first"]["core"], args["first"]["access"]) == ("aiv1", "WRITE")
    assert (args["second"]["core"], args["second"]["access"]) == ("aiv0", "READ")
    # Times from the launch's first event (90 us): the read at 87.9 us, the write at 328.7 us.
    assert args["first"]["start_us"] == 328.7 and args["second"]["start_us"] == 87.9
    assert args["happened"] == "aiv0 READ at 87.9 us, then aiv1 WRITE at 328.7 us"
    # The flow's ends sit on those very slices.
    threads = {(ev["pid"], ev["tid"]): ev["args"]["name"] for ev in doc["traceEvents"] if ev["name"] == "thread_name"}
    ends = {ev["ph"]: _enclosing(doc, ev) for ev in flow}
    assert threads[(ends["s"]["pid"], ends["s"]["tid"])].startswith("aiv0")  # the read came first
    assert ends["s"]["name"] == "READ counts[1:2]" and ends["f"]["name"] == "WRITE counts[1:2]"
    assert threads[(ends["f"]["pid"], ends["f"]["tid"])].startswith("aiv1")


def test_the_caption_says_who_read_stale_data_and_whether_it_mattered() -> None:
    from mpnpu.report.picture import _caption

    passed = build_timeline(_counts_trace(), label="passing run", passed=True, summary="passed")
    text = _caption(passed.races[0], passed.passed, passed.summary)
    head, order, _ = text.split("\n")
    assert head.startswith("RAW counts[0:2]:  aiv1 writes counts[1:2] in Publish (k.py:10); aiv0 reads it in Gather")
    assert "aiv0's read started at 0.088 ms" in order and "aiv1's write (from 0.329 ms)" in order
    assert "aiv0 read stale data" in order
    assert "did not matter this time: the run passed" in order
    failed = build_timeline(_counts_trace(), label="failing run", passed=False, summary="FAILED: out")
    assert "It mattered: the run failed (FAILED: out)" in _caption(failed.races[0], failed.passed, failed.summary)


# -- flags -----------------------------------------------------------------------------------------------


def _flag_trace() -> LaunchTrace:
    """aiv0 waits for flag 3 from 100 us; aiv1's set is a long slice, 150-400 us (its midpoint,
    275 us, is after the release at 260 us); the wait is released at 260 us, and aiv0 goes on with
    a read at 260.5 us."""
    aiv0 = (StageEvent("A", "k.py:1", 50 * US, 300 * US),
            FlagWaitEvent(0, 3, "", "A", "k.py:2", 100 * US, 260 * US),
            _acc("R", 0, 4, 260_500, 262 * US, stage="A", site="k.py:3"))
    aiv1 = (StageEvent("A", "k.py:1", 60 * US, 450 * US),
            FlagSetEvent(0, 3, "", "A", "k.py:5", 150 * US, 400 * US))
    return LaunchTrace(1, "k", ((), aiv0, aiv1), frozenset())


def _flag_flows(doc):
    return [evs for evs in flows_of(doc).values() if evs[0]["cat"] == "flag"]


def test_flag_arrows_go_from_the_set_start_to_a_slice_starting_at_the_release() -> None:
    tl = build_timeline(_flag_trace(), races=False)
    doc = trace_document([tl])
    assert_trace_rules(doc)
    flows = _flag_flows(doc)
    assert flows
    for flow in flows:
        s = next(ev for ev in flow if ev["ph"] == "s")
        f = next(ev for ev in flow if ev["ph"] == "f")
        src, dst = _enclosing(doc, s), _enclosing(doc, f)
        assert src["name"].startswith("set flag 3")
        # The set's start (1 ns in, so that Perfetto binds it to the set), not its midpoint, which
        # is after the release.
        assert _ns(s["ts"]) - _ns(src["ts"]) == 1
        # The end's slice starts when the wait was released (260 us, 210 us after the launch's first
        # event), after the set started: Perfetto draws the arrow from the slice that starts first,
        # so set -> release.
        assert dst["name"] == "wait flag 3 released" and dst["ts"] == 210.0
        assert src["ts"] < dst["ts"]
        # Short, and it does not run into aiv0's read at 260.5 us.
        assert 0 < _ns(dst["dur"]) <= 500


def test_release_slices_never_partly_overlap_what_follows() -> None:
    """The next slice starts right at the release: the release slice has no time of its own and
    still nests (zero length), the format's rules hold."""
    aiv0 = (StageEvent("A", "k.py:1", 50 * US, 300 * US),
            FlagWaitEvent(0, 3, "", "A", "k.py:2", 100 * US, 260 * US),
            _acc("R", 0, 4, 260 * US, 262 * US, stage="A", site="k.py:3"))
    aiv1 = (StageEvent("A", "k.py:1", 60 * US, 450 * US), FlagSetEvent(0, 3, "", "A", "k.py:5", 150 * US, 160 * US))
    doc = trace_document([build_timeline(LaunchTrace(1, "k", ((), aiv0, aiv1), frozenset()), races=False)])
    assert_trace_rules(doc)
    [release] = [ev for ev in doc["traceEvents"] if ev["name"] == "wait flag 3 released"]
    assert release["dur"] == 0


# -- the file ---------------------------------------------------------------------------------------------


def test_the_file_is_utf8_with_no_escapes_in_names(tmp_path) -> None:
    pipe = Access("W", "buf", "seg", ((0, 64),), 0, 4, "A", "k.py:9", 1500, 2600, "PIPE_MTE3", "PIPE_MTE3")
    trace = LaunchTrace(1, "k", ((StageEvent("A", "k.py:1", 1000, 2000), pipe), (), ()), frozenset())
    path = tmp_path / "t.json"
    write_chrome_trace(str(path), [build_timeline(trace, races=False)])
    raw = path.read_bytes()
    assert b"\\u00b7" not in raw and b"\\u" not in raw
    assert "aic0 cube · MTE3".encode() in raw
    json.loads(raw.decode("utf-8"))


def test_flow_args_are_on_one_end_only() -> None:
    doc = trace_document([build_timeline(_counts_trace(), passed=True), build_timeline(_flag_trace(), races=False)])
    flows = flows_of(doc)
    assert len(flows) >= 2
    for flow in flows.values():
        with_args = [ev["ph"] for ev in flow if ev.get("args")]
        assert with_args == ["s"], flow


def test_process_names_start_with_verdict_and_launch() -> None:
    from mpnpu.report.chrome_trace import process_name

    failing = build_timeline(_counts_trace(), label="incident, case 5 (repeat 1, case-run 3)", passed=False,
                             summary="FAILED: out (relative error up to 9e3)")
    passing = build_timeline(_counts_trace(), label="incident, case 5 (repeat 2, case-run 9)", passed=True,
                             summary="passed")
    doc = trace_document([failing, passing])
    names = [ev["args"]["name"] for ev in doc["traceEvents"] if ev["name"] == "process_name"]
    assert names == ["FAILED | launch 1 | AI core 0 | incident, case 5 (repeat 1, case-run 3) | "
                     "out (relative error up to 9e3)",
                     "passed | launch 2 | AI core 0 | incident, case 5 (repeat 2, case-run 9)"]
    unjudged = build_timeline(_counts_trace(), label="scouted")
    assert process_name(unjudged, 0, 0) == "launch 1 | AI core 0 | scouted"


# -- races inside a core -------------------------------------------------------------------------------------


def _vecin_trace() -> LaunchTrace:
    """vecin-early-read by hand: MTE2 copies x into UB (issued first, executed at 20-30 us), the
    dropped MTE2_V wait, then PIPE_V (inline, at 12-13 us) reads that UB: it ran before the copy."""
    site_in, site_v = "vecin_early_read/kernel.py:34", "vecin_early_read/kernel.py:38"
    aiv0 = (StageEvent("Scale", "kernel.py:30", 10 * US, 40 * US),
            Access("R", "x", "seg", ((0, 4096),), 0, 4, "Scale", site_in, 20 * US, 30 * US, "PIPE_MTE2", "PIPE_MTE2"),
            LocalAccess("W", "UB", 0, 4096, "PIPE_MTE2", "Scale", site_in),
            DroppedSyncEvent("QIN:MTE2_V", "wait_flag", "Scale", "kernel.py:36", 11 * US, 11 * US),
            LocalAccess("R", "UB", 0, 4096, "PIPE_V", "Scale", site_v, 12 * US, 13 * US),
            LocalAccess("W", "UB", 8192, 12288, "PIPE_V", "Scale", site_v, 12 * US, 13 * US))
    return LaunchTrace(1, "k", ((), aiv0, ()), frozenset({"QIN:MTE2_V"}))


def test_a_race_inside_a_core_is_drawn_like_one_between_cores() -> None:
    tl = build_timeline(_vecin_trace(), label="incident", passed=False, summary="FAILED: y")
    [race] = tl.races
    assert race.hazard.scope == "local" and race.inverted
    assert race.title == "RAW UB[0:4096] inside aiv0"
    assert (race.first.lane, race.second.lane) == ("MTE2", "")  # the copy on its pipe, PIPE_V inline
    assert race.second.name == "V: READ UB[0:4096], WRITE UB[8192:12288]"
    assert race.first.args["local"] == "WRITE UB[0:4096]"
    doc = trace_document([tl])
    assert_trace_rules(doc)
    [flow] = [evs for evs in flows_of(doc).values() if evs[0]["cat"] == "hazard"]
    assert flow[0]["name"] == "RAW UB[0:4096] inside aiv0"
    s = next(ev for ev in flow if ev["ph"] == "s")
    assert _enclosing(doc, s)["cat"] == "local"  # from the read that came first
    assert s["args"]["first"]["pipe"] == "PIPE_MTE2" and s["args"]["second"]["pipe"] == "PIPE_V"
    red = [ev["name"] for ev in doc["traceEvents"] if ev.get("cname") == "terrible"]
    assert sorted(red) == ["READ x[0:1024]", "V: READ UB[0:4096], WRITE UB[8192:12288]"]
    assert doc["otherData"]["launches"][0]["hazards"] == ["RAW UB[0:4096] inside aiv0"]


def test_inline_pipe_instructions_are_timed_in_a_real_launch() -> None:
    """The Python API stamps PIPE_V's local accesses with when they ran: the incident of
    vecin-early-read gets its UB race drawn, from the MTE2 copy to the vector instruction."""
    from mpnpu.kernels.vecin_early_read.operator import OPERATOR
    from mpnpu.racecheck import check_case
    from mpnpu.runtime.config import RuntimeOptions
    from mpnpu.runtime.device import Device

    with Device(1, options=RuntimeOptions(launch_timeout_s=60.0)) as dev:
        checked = check_case(OPERATOR, dev, OPERATOR.make_case(0, 3), drop_syncs=set(OPERATOR.incident))
    events = [ev for evs in checked.launch.trace.events for ev in evs if isinstance(ev, LocalAccess)]
    assert all(ev.t0 and ev.t1 >= ev.t0 for ev in events if ev.pipe == "PIPE_V")
    tl = build_timeline(checked.launch.trace, passed=checked.passed)
    [race] = [r for r in tl.races if r.hazard.scope == "local"]
    assert (race.first_side.pipe, race.second_side.pipe) == ("PIPE_MTE2", "PIPE_V")
    assert race.second.cat == "local"
    assert_trace_rules(trace_document([tl]))


@pytest.mark.parametrize("kind", ["WAR", "WAW"])
def test_captions_of_other_kinds_say_what_went_wrong(kind) -> None:
    from mpnpu.report.picture import _caption

    first, second = ("R", "W") if kind == "WAR" else ("W", "W")
    aiv0 = (StageEvent("A", "k.py:1", 10 * US, 20 * US), _acc(first, 0, 4, 15 * US, 16 * US, stage="A", site="k.py:2"))
    aiv1 = (StageEvent("B", "k.py:3", 1 * US, 9 * US), _acc(second, 0, 4, 2 * US, 3 * US, stage="B", site="k.py:4"))
    tl = build_timeline(LaunchTrace(1, "k", ((StageEvent("A", "k.py:1", 0, 1),), aiv0, aiv1), frozenset()),
                        passed=True)
    [race] = tl.races
    assert race.hazard.kind == kind and race.inverted
    text = _caption(race, True, "passed")
    assert ("aiv0 read data aiv1 wrote after it" if kind == "WAR" else "landed out of order") in text


def _bound(doc, ev):
    """The slice Perfetto binds a flow event to: the innermost slice open on its track at its time;
    the event must be strictly inside it (events of equal time are read in no promised order)."""
    x = _enclosing(doc, ev)
    assert _ns(x["dur"]) < 2 or _ns(x["ts"]) < _ns(ev["ts"]) <= _ns(x["ts"]) + _ns(x["dur"]), (ev, x)
    return x


def perfetto_arrows(doc):
    """Per flow: (its name, the slice Perfetto draws the arrow from, the one it draws it to).
    Perfetto points an arrow from whichever of the two bound slices starts first."""
    out = []
    for flow in flows_of(doc).values():
        s, f = (next(ev for ev in flow if ev["ph"] == ph) for ph in "sf")
        a, b = _bound(doc, s), _bound(doc, f)
        out.append((s["name"], *((a, b) if _ns(a["ts"]) <= _ns(b["ts"]) else (b, a))))
    return out


def test_perfetto_draws_every_arrow_of_a_real_launch_the_right_way() -> None:
    """A FLOMS incident launch: every flag arrow from its set to the release of the wait it
    released, every hazard arrow between the racing accesses, as Perfetto binds and orients them."""
    from mpnpu.kernels.fused_linear_online_max_sum.operator import OPERATOR
    from mpnpu.racecheck import check_case
    from mpnpu.runtime.config import RuntimeOptions
    from mpnpu.runtime.device import Device

    with Device(1, options=RuntimeOptions(gm_segment_bytes=8 << 20, launch_timeout_s=60.0)) as dev:
        checked = check_case(OPERATOR, dev, OPERATOR.make_case(0, 5), drop_syncs={"S1"})
    tl = build_timeline(checked.launch.trace, passed=checked.passed)
    doc = trace_document([tl])
    assert_trace_rules(doc)
    arrows = perfetto_arrows(doc)
    flags = [(a, b) for name, a, b in arrows if name.startswith("flag ")]
    assert len(flags) == len(tl.flows) > 10
    for a, b in flags:
        assert a["name"].startswith("set flag ") and b["name"].startswith("wait flag ") and b["name"].endswith(
            " released"), (a["name"], b["name"])
    hazards = [(a, b) for name, a, b in arrows if name.startswith(("RAW ", "WAR ", "WAW "))]
    assert len(hazards) == len(tl.races) + len(tl.inversions) >= 1
    for a, b in hazards:
        assert a["args"].get("race") and b["args"].get("race")


def test_a_consequence_is_drawn_as_one_and_named_under_its_root() -> None:
    """Issue 21 item 5 in the timeline: a hazard whose accesses depend on data read through another
    says so in its title, its flow's args and its caption, instead of "nothing orders the two"."""
    import dataclasses

    from mpnpu.report.picture import _caption

    tl = build_timeline(_counts_trace(), label="failing run", passed=False, summary="FAILED: out")
    [race] = tl.races
    assert "consequence" not in race.title and "consequence_of" not in json.dumps(trace_document([tl]))
    root = ("RAW", "sizes", "Count", "k.py:5", "Gather", "k.py:6")
    consequence = dataclasses.replace(race, hazard=dataclasses.replace(race.hazard, root=root))
    shown = dataclasses.replace(tl, races=[consequence])
    assert consequence.title.endswith("(a consequence)")
    doc = trace_document([shown])
    assert_trace_rules(doc)
    [flow] = [evs for evs in flows_of(doc).values() if evs[0]["cat"] == "hazard"]
    args = next(ev for ev in flow if ev["ph"] == "s")["args"]
    assert args["consequence_of"] == "RAW on sizes (Count at k.py:5 -> Gather at k.py:6)"
    last = _caption(consequence, False, "FAILED: out").split("\n")[-1]
    assert last.startswith("A consequence of RAW on sizes (Count at k.py:5 -> Gather at k.py:6)")


def test_a_picture_prints_cxx_stage_names_without_template_arguments() -> None:
    """C++ stages are functions' full names; the picture prints them short (the JSON keeps them whole)."""
    from mpnpu.report.picture import short_name

    full = ("AscendC::MatmulImpl<AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half, false>, "
            "AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half, true>>::IterateAll")
    assert short_name(full) == "MatmulImpl::IterateAll"
    assert short_name("CopyIn") == "CopyIn" and short_name("Kernel::Process") == "Kernel::Process"
    assert len(short_name("x" * 80)) == 32 and short_name("x" * 80).endswith("...")
