"""Race-directed reproduction (holds), inserted syncs, the sync audit and verified repairs.

The small kernels of tests/kernels_for_confirm.py hand a value between the two vector cores of one
AI core; their ``incident`` variant drops the barrier between the two stages. A hold makes the
reversal certain, so these properties are deterministic: every directed run must reverse the pair
(or report it ordered when a sync is in place), and the verdicts follow from the outputs.
"""

from __future__ import annotations

import json

import pytest

from mpnpu import LaunchOptions
from mpnpu.directed.audit import BENIGN_ONLY, NECESSARY, REDUNDANT, UNPROVEN, audit
from mpnpu.directed.confirm import BENIGN, HARMFUL, confirm_hazards, replay
from mpnpu.directed.repair import repair_hazards
from mpnpu.errors import UsageError
from mpnpu.racecheck import analyze
from mpnpu.racecheck.directed import hold_pairs, occurrences
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.hold import ORDERED, HoldPlan
from mpnpu.runtime.insert import parse_insert
from mpnpu.runtime.trace import Access
from tests import kernels_for_confirm as kc

FAST = dict(scout_cases=1, block_dim=1, quiet_s=0.1)


def _confirm(op, runs=3, **kw):
    args = {**FAST, **kw}
    return confirm_hazards(op, dropped=op.variants["incident"], runs=runs, **args)


@pytest.mark.slow
def test_raw_race_is_reversed_in_every_directed_run_and_harmful():
    r = _confirm(kc.RAW_OP, runs=4)
    (c,) = r.confirmations
    assert c.hazard.kind == "RAW" and c.hazard.tensor == "data"
    assert c.reversed == 4 and c.harmful_runs == 4
    assert c.verdict == HARMFUL
    assert set(c.failed_outputs) == {"out"}  # the consumer copied the stale value
    for run in c.runs:
        assert run.held == "vector core 0 (block 0, sub 0)" and run.partner == "vector core 1 (block 0, sub 1)"
        assert run.plan.held_site.startswith("tests/kernels_for_confirm.py:")
    # The same hold plans on the kernel with its barrier: never reversed, never wrong.
    assert r.fixed_failures == 0
    assert [x.outcome for x in c.fixed_runs] == [ORDERED] * 4


@pytest.mark.slow
def test_benign_race_both_cores_write_the_same_value():
    (c,) = _confirm(kc.BENIGN_OP).confirmations
    assert c.hazard.kind == "WAW"
    assert c.reversed == 3 and c.harmful_runs == 0
    assert c.verdict == BENIGN


@pytest.mark.slow
@pytest.mark.parametrize("op, kind, output", [(kc.WAR_OP, "WAR", "out"), (kc.WAW_OP, "WAW", "data")])
def test_war_and_waw_reversals_are_harmful(op, kind, output):
    (c,) = _confirm(op).confirmations
    assert c.hazard.kind == kind
    assert c.reversed == 3 and c.verdict == HARMFUL
    assert set(c.failed_outputs) == {output}


def _plan_from_incident(device, op):
    case = op.make_case(0, 0)
    _, launch = op.run(device, case, drop_syncs=op.variants["incident"], trace=True)
    _, pairs = hold_pairs(launch.trace)
    (plist,) = pairs.values()
    return case, plist[0]


def test_hold_across_a_barrier_is_reported_ordered_without_a_hang():
    op = kc.RAW_OP
    with Device(1) as dev:
        case, pair = _plan_from_incident(dev, op)
        # Early release: the partner sleeps in the barrier, so nobody else can move.
        plan = pair.plan(bound_s=30.0, quiet_s=0.1)
        with dev.launch_settings(hold=plan):
            outputs, launch = op.run(dev, case, drop_syncs=frozenset())
        h = launch.hold
        assert h.outcome == ORDERED and h.early and h.held_reached and not h.partner_first
        assert h.held_s < plan.bound_s
        assert op.judge(case, op.prepare(case), outputs).passed
    # Without early release, the bound ends the hold: still ordered, still no hang. The partner sits
    # in the barrier far longer than the watchdog's stall grace meanwhile: the watchdog must not
    # take the held core (still running) for a deadlock.
    with Device(1, options=RuntimeOptions(stall_grace_s=0.05)) as dev:
        plan = pair.plan(bound_s=0.6, quiet_s=1e9)
        with dev.launch_settings(hold=plan):
            outputs, launch = op.run(dev, case, drop_syncs=frozenset())
        h = launch.hold
        assert h.outcome == ORDERED and not h.early
        assert plan.bound_s <= h.held_s <= launch.elapsed_s
        assert op.judge(case, op.prepare(case), outputs).passed


def test_occurrences_count_accesses_per_site_in_program_order():
    a = Access("R", "t", "s", ((0, 4),), 0, 4, "", "k.py:1")
    b = Access("W", "t", "s", ((0, 4),), 0, 4, "", "k.py:2")
    assert occurrences([a, b, "sync", a, a, b]) == [0, 0, -1, 1, 2, 1]


def test_hold_plans_are_checked():
    with Device(1) as dev:
        with pytest.raises(UsageError):
            dev.launch_with(LaunchOptions(hold=HoldPlan(1, "x", 0, 1, "y", 0)), "tests.kernels_for_confirm:raw",
                            None, None, 1)
        with pytest.raises(UsageError):
            dev.launch_with(LaunchOptions(hold=HoldPlan(1, "x", 0, 9, "y", 0)), "tests.kernels_for_confirm:raw",
                            None, None, 1)


@pytest.mark.slow
def test_replay_from_the_reported_seed_is_identical():
    op = kc.WAW_OP
    r = _confirm(op, runs=2, seed=5)
    (c,) = r.confirmations
    original = next(x for x in c.runs if x.seed == c.replay_seed)
    again = replay(op, c.replay_seed, dropped=op.variants["incident"], scout_cases=1, base_seed=5, quiet_s=0.1)
    assert (again.case_index, again.plan, again.outcome, again.passed, again.failed_outputs, again.fingerprint) == (
        original.case_index, original.plan, original.outcome, original.passed, original.failed_outputs,
        original.fingerprint)
    with pytest.raises(UsageError):
        replay(op, 12345, dropped=op.variants["incident"], scout_cases=1, base_seed=5)


# -- inserted syncs -------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["", "after:", "before:X", "flag2:5:side:A->B", "flag1:12:A->B", "flag1:3:A"])
def test_bad_insert_specs_are_usage_errors(spec):
    with pytest.raises(UsageError):
        parse_insert(spec)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["after:Produce", "after:Produce:aiv", "flag1:3:Produce->Consume"])
def test_an_inserted_sync_orders_the_race(spec):
    op = kc.RAW_OP
    with Device(1) as dev:
        case = op.make_case(0, 0)
        _, launch = op.run(dev, case, drop_syncs=frozenset({"B"}), trace=True)
        assert analyze(launch.trace)
        with dev.launch_settings(insert_syncs=(spec,)):
            _, launch = op.run(dev, case, drop_syncs=frozenset({"B"}), trace=True)
        assert analyze(launch.trace) == []
        names = {getattr(ev, "name", "") for evs in launch.trace.events for ev in evs}
        assert "+" + spec in names  # the inserted sync is in the trace, named after its spec


# -- audit and repairs ----------------------------------------------------------------------------


@pytest.mark.slow
def test_audit_verdicts_on_small_kernels():
    r = audit(kc.RAW_TWICE_OP, pairs=True, runs=1, scout_cases=1, batch_cases=2, block_dim=1, repair=False)
    verdicts = {"+".join(row.dropped): row.verdict for row in r.rows}
    assert verdicts == {"B": REDUNDANT, "B2": REDUNDANT, "B+B2": NECESSARY}
    (row,) = [row for row in r.rows if len(row.dropped) == 2]
    assert row.directed == "harmful" and row.hazards == 1
    r = audit(kc.BENIGN_OP, runs=1, scout_cases=1, batch_cases=2, block_dim=1, repair=False)
    assert [row.verdict for row in r.rows] == [BENIGN_ONLY]


@pytest.mark.slow
def test_audit_keeps_a_sync_whose_race_inside_a_core_mpnpu_cannot_run_reversed():
    # Dropping QIN:V_MTE2 (MTE2 refills a VECIN buffer the vector pipe may still read) leaves a WAR
    # between PIPE_V and PIPE_MTE2 that racecheck reports, but V runs inline here, so no run fails:
    # "unproven", never "redundant"; QIN:MTE2_V's race shows in the batch: "necessary".
    from mpnpu.operators.registry import load_operator

    op = load_operator("vecin-early-read")
    r = audit(op, only=("QIN:V_MTE2", "QIN:MTE2_V"), runs=1, scout_cases=1, batch_cases=4, block_dim=1,
              repair=False)
    rows = {row.dropped: row for row in r.rows}
    quiet = rows[("QIN:V_MTE2",)]
    assert (quiet.verdict, quiet.hazards, quiet.batch_failures) == (UNPROVEN, 1, 0), quiet.why
    assert "WAR on UB inside a core, PIPE_V -> PIPE_MTE2" in quiet.why and "not reversible by holds" in quiet.why
    assert rows[("QIN:MTE2_V",)].verdict == NECESSARY


@pytest.mark.slow
def test_repair_of_a_small_kernel_suggests_a_flag_first_and_verifies_it():
    (rep,) = repair_hazards(kc.RAW_OP, dropped={"B"}, scout_cases=1, runs=1, block_dim=1, batch_cases=2,
                            quiet_s=0.1)
    kinds = [v.suggestion.kind for v in rep.verifications]
    assert kinds == ["flag1", "sync_aiv", "sync_all"]  # cheapest first
    assert all(v.verified for v in rep.verifications)
    assert rep.best.suggestion.insert.startswith("flag1:")


@pytest.mark.slow
def test_floms_audit_s0_and_s1_are_necessary():
    from mpnpu.kernels.fused_linear_online_max_sum.operator import OPERATOR

    r = audit(OPERATOR, only=("S0", "S1"), runs=1, scout_cases=1, batch_cases=2, block_dim=1, repair=False)
    rows = {row.dropped: row for row in r.rows}
    s1 = rows[("S1",)]
    assert s1.verdict == NECESSARY and s1.directed == "harmful"
    (c,) = s1.confirm.confirmations
    assert c.hazard.tensor == "workspace.masked_target" and c.hazard.kind == "RAW"
    assert (c.hazard.first.stage, c.hazard.second.stage) == ("TargetProcess", "CVProcess")
    assert set(c.failed_outputs) == {"predicted_logits"}
    assert rows[("S0",)].verdict == NECESSARY


@pytest.mark.slow
def test_floms_repair_after_target_process_is_verified():
    from mpnpu.kernels.fused_linear_online_max_sum.operator import OPERATOR

    (rep,) = repair_hazards(OPERATOR, dropped={"S1"}, scout_cases=1, runs=1, block_dim=2, batch_cases=3)
    by_insert = {v.suggestion.insert: v for v in rep.verifications}
    # Two AI cores: vector cores of different AI cores race, so no flag is offered.
    assert list(by_insert) == ["after:TargetProcess:aiv", "after:TargetProcess"]
    for v in by_insert.values():
        assert v.verified, v.to_dict()
        assert v.hazard_gone and v.reversed == 0 and v.batch_failures == 0


# -- command lines --------------------------------------------------------------------------------


@pytest.mark.slow
def test_audit_cli_table_json_markdown(tmp_path, capsys):
    from mpnpu.cli.commands.audit import COMMAND
    main = COMMAND.main

    j, m = tmp_path / "a.json", tmp_path / "a.md"
    code = main(["--op", "tests.kernels_for_confirm:RAW_TWICE_OP", "--pairs", "--runs", "1", "--scout-cases", "1",
                 "--batch-cases", "2", "--block-dim", "1", "--quiet", "--json", str(j), "--markdown", str(m)])
    assert code == 0
    data = json.loads(j.read_text())
    assert [(r["dropped"], r["verdict"]) for r in data["rows"]] == [
        (["B"], "redundant"), (["B2"], "redundant"), (["B", "B2"], "necessary")]
    assert data["repairs"] and data["repairs"][0]["best"]
    assert "| B+B2 |" in m.read_text()
    out = capsys.readouterr().out
    assert "necessary" in out and "VERIFIED" in out
    # what ran, in core processes beside the block_dim (it said "runs 2 AI cores" of any kernel)
    assert (data["block_dim"], data["core_processes"]) == (1, 3)
    assert ", block_dim 1 (3 core processes), each sync point dropped" in out.splitlines()[0], out.splitlines()[0]


def test_confirm_needs_racecheck():
    from mpnpu.cli.commands.batch import COMMAND
    main = COMMAND.main
    from mpnpu.cli.common import run_cli

    assert run_cli(main, ["--confirm", "--cases", "1"]) == 2


@pytest.mark.slow
def test_batch_confirm_reports_each_hazard_in_text_and_json(tmp_path, capsys):
    from mpnpu.cli.commands.batch import COMMAND
    main = COMMAND.main

    j = tmp_path / "b.json"
    code = main(["--op", "tests.kernels_for_confirm:RAW_OP", "--racecheck", "--confirm", "--confirm-runs", "2",
                 "--cases", "2", "--repeat", "1", "--block-dim", "1", "--quiet", "--json", str(j)])
    assert code == 0  # the fixed variant stayed clean
    (h,) = json.loads(j.read_text())["confirm"]["incident"]["hazards"]
    assert (h["verdict"], h["reversed"], h["runs"], h["fixed_failures"]) == ("harmful", 2, 2, 0)
    assert h["failed_outputs"] == {"out": 2}
    # The printed replay command reruns that run from its seed alone.
    from mpnpu.cli.commands.audit import COMMAND
    audit_main = COMMAND.main

    capsys.readouterr()
    assert audit_main(["--op", "tests.kernels_for_confirm:RAW_OP", "--replay", str(h["replay_seed"]), "--drop", "B",
                       "--block-dim", "1", "--scout-cases", "2"]) == 0
    out = capsys.readouterr().out
    assert "outcome: reversed" in out and "wrong: out" in out
    # ... and the replay hint the text report prints is that command in today's spelling, which runs as printed
    main(["--op", "tests.kernels_for_confirm:RAW_OP", "--racecheck", "--confirm", "--confirm-runs", "1", "--cases", "2",
          "--repeat", "1", "--block-dim", "1"])
    hint = next(line.split("replay: ", 1)[1] for line in capsys.readouterr().out.splitlines() if "replay: " in line)
    words = hint.split()
    assert words[:2] == ["mpnpu", "audit"] and "--drop-sync" in words and "--drop" not in words, hint
    assert audit_main(words[2:]) == 0 and "outcome: reversed" in capsys.readouterr().out


def test_audit_evidence_is_a_piece_a_line_and_at_most_four() -> None:
    """An audit row with many hazards: its evidence is shown a piece a line, four at most and how many more
    the JSON has (it ran to ~1000 characters on one line), while the JSON's ``why`` keeps every piece."""
    from types import SimpleNamespace

    from mpnpu.report.text.directed import EVIDENCE_SHOWN, evidence_lines

    parts = [f"RAW on t{i} (k.cpp:{i} -> k.cpp:{i + 1}): harmful in 3/3 directed runs (out)" for i in range(9)]
    lines = evidence_lines(SimpleNamespace(why_parts=parts))  # type: ignore[arg-type]
    assert EVIDENCE_SHOWN == 4 and lines == parts[:4] + ["... 5 more in --json"]
    assert evidence_lines(SimpleNamespace(why_parts=parts[:2])) == parts[:2]  # type: ignore[arg-type]


def test_confirm_on_a_hazard_inside_a_core_says_why_it_is_not_forced(capsys) -> None:
    """--confirm when racecheck's only hazard is inside a core (vecin-early-read: MTE2 -> V): not "no hazard
    in the scouted cases", which contradicted the hazard printed just above, but why holds cannot force it."""
    from mpnpu.cli.commands.batch import COMMAND

    COMMAND.main(["--op", "vecin-early-read", "--racecheck", "--confirm", "--cases", "2", "--repeat", "1",
                  "--variant", "incident", "--block-dim", "1"])
    out = capsys.readouterr().out
    assert "nothing to reproduce" not in out
    assert ("1 hazard inside a core (PIPE_MTE2 -> PIPE_V), none between cores: a directed run holds one core until "
            "another has made its access, which cannot reorder the pipes of one core, so it is not forced here") in out


def test_the_audit_says_each_row_in_sync_mutation_testings_words() -> None:
    """An audit row is a mutant: killed by the golden check (in the batch, or in a directed run), by a
    deadlock, or survived: untested (a hazard, no failing case-run) or redundant (no hazard); the score
    counts the sync points dropped alone."""
    from types import SimpleNamespace

    from mpnpu.directed.audit import AuditResult, AuditRow
    from mpnpu.directed.mutation import BY_DEADLOCK, BY_GOLDEN, KILLED, REDUNDANT, SURVIVED, UNTESTED
    from mpnpu.racecheck import HazardLog

    def row(dropped=("S1",), failures=0, error="", verdicts=()):
        confirm = SimpleNamespace(confirmations=[SimpleNamespace(verdict=v, root=None) for v in verdicts],
                                  hazard_log=HazardLog(), scout_errors=[], to_dict=dict)
        return AuditRow(dropped, confirm, 4, failures, batch_first_error=error)  # type: ignore[arg-type]

    assert row(failures=3).mutation == (KILLED, BY_GOLDEN)
    assert row(failures=3, error="case 0: deadlock: every running core ...").mutation == (KILLED, BY_DEADLOCK)
    assert row(verdicts=("harmful",)).mutation == (KILLED, f"{BY_GOLDEN} in a directed run")
    assert row(verdicts=("benign",)).mutation == (SURVIVED, UNTESTED)
    assert row().mutation == (SURVIVED, REDUNDANT)
    result = AuditResult("op", 2, {}, [row(failures=1), row(("S2",)), row(("S1", "S2"), failures=1)])
    assert result.mutation_score == 0.5 and result.to_dict()["mutation_score"] == 0.5
    assert result.rows[1].to_dict()["mutation"] == {"status": SURVIVED, "class": REDUNDANT}
