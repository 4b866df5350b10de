"""Sync mutation testing of CPU-debug programs (mpnpu mutate, mpnpu.tools.mutate), on a program of our
own (tests/ascendc_kernels/cpudebug/test_mutate.cpp) whose checks kill every sync, leave one
untested, or meet a redundant one; the score and the --min-score gate; JSON and JUnit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from mpnpu.directed.mutation import BY_CHECK, BY_DEADLOCK, KILLED, REDUNDANT, SURVIVED, UNTESTED
from mpnpu.tools.mutate import mutate_program
from tests.ascendc_util import line_of, needs_cxx
from tests.test_cpudebug import program

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]
SRC = "cpudebug/test_mutate.cpp"


def _site(text: str) -> str:
    return f"cpudebug/test_mutate.cpp:{line_of(SRC, text)}"


@pytest.fixture(scope="module")
def exe(tmp_path_factory) -> str:
    return program("test_mutate.cpp", str(tmp_path_factory.mktemp("mutate")))


def _by_site(report) -> dict:
    return {m.site: m for m in report.mutants}


def test_checks_that_kill_every_sync_score_one(exe) -> None:
    """SyncAll, the flag's set and its wait, each dropped: the set leaves the cube waiting (a deadlock mpnpu
    names), the SyncAll and the wait give wrong outputs the program's own check catches (in a plain run, or
    in the directed run that forces the race racecheck found, whichever comes first)."""
    r = mutate_program([exe, "checked"], jobs=2, timeout_s=120)
    m = _by_site(r)
    assert set(m) == {_site("SyncAll();"), _site("CrossCoreSetFlag<"), _site("CrossCoreWaitFlag(")}
    assert m[_site("CrossCoreSetFlag<")].status == KILLED and m[_site("CrossCoreSetFlag<")].how == BY_DEADLOCK
    for text in ("SyncAll();", "CrossCoreWaitFlag("):
        x = m[_site(text)]
        if x.status == KILLED:
            assert x.how in (BY_CHECK, f"{BY_CHECK} in a directed run"), x
        else:
            # A directed hold ends early when the other cores look blocked, so on a heavily loaded machine
            # every try can miss; the mutant must then still carry racecheck's hazard, never look redundant.
            assert x.status == SURVIVED and x.survivor_class == UNTESTED and x.hazards >= 1, x
    assert sum(x.status == KILLED for x in r.mutants) >= 2


def test_a_sync_whose_output_no_check_reads_survives_untested(exe) -> None:
    """The program does not check out[1], which the cube core's wait protects: without the wait the race
    is there (racecheck's hazard), no assertion catches it, the score is 2/3."""
    r = mutate_program([exe, "unchecked"], jobs=2, timeout_s=120)
    wait = _by_site(r)[_site("CrossCoreWaitFlag(")]
    assert wait.status == SURVIVED and wait.survivor_class == UNTESTED and wait.hazards >= 1
    assert [x.status for x in r.mutants].count(KILLED) == 2 and r.score == pytest.approx(2 / 3)
    # the baseline's trace with the wait taken out gives the hazards the mutant's own racecheck run found
    assert wait.hazards_without == wait.hazards


def test_a_sync_another_one_already_gives_survives_redundant(exe) -> None:
    """Two SyncAlls back to back: either dropped alone leaves the other ordering the same accesses, so both
    survive, redundant (racecheck finds no hazard without it)."""
    r = mutate_program([exe, "redundant"], jobs=2, timeout_s=120)
    m = _by_site(r)
    first, second = _site("SyncAll();"), _site("if (extra_sync) SyncAll();")
    for site in (first, second):
        assert m[site].status == SURVIVED and m[site].survivor_class == REDUNDANT and m[site].hazards == 0
        assert m[site].hazards_without == 0  # known from the baseline's trace: no racecheck run of its own
        assert m[site].seconds > 0 and m[site].exit_code == 0  # a cross-core sync's mutant still runs
    # A barrier inside one core that orders nothing: proven redundant by the baseline's traces, not run;
    # with run_proven it runs, and survives the same way.
    barrier = _site("if (extra_sync) PipeBarrier<PIPE_ALL>();")
    b = m[barrier]
    assert (b.status, b.survivor_class, b.seconds, b.exit_code) == (SURVIVED, REDUNDANT, 0.0, None)
    assert "not run" in b.detail
    ran = _by_site(mutate_program([exe, "redundant"], jobs=2, timeout_s=120, run_proven=True))[barrier]
    assert (ran.status, ran.survivor_class, ran.exit_code) == (SURVIVED, REDUNDANT, 0) and ran.seconds > 0
    # The wait is not redundant: killed by the check or the directed run, or (when every directed try
    # misses on a loaded machine, as in the test above) surviving untested with racecheck's hazard.
    wait = m[_site("CrossCoreWaitFlag(")]
    assert wait.status == KILLED or (wait.survivor_class == UNTESTED and wait.hazards >= 1), wait


def test_the_gate_fails_below_its_threshold_and_reports_in_json_and_junit(exe, tmp_path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mpnpu", "mutate", *args], capture_output=True, text=True,
                              timeout=600, env={k: v for k, v in os.environ.items() if not k.startswith("MPNPU_")
                                                or k == "MPNPU_CACHE_DIR"})

    js, xml = tmp_path / "m.json", tmp_path / "m.xml"
    below = cli("--quiet", "--min-score", "0.9", "--json", str(js), "--junit", str(xml), "--", exe, "unchecked")
    assert below.returncode == 1, below.stderr
    assert below.stdout.strip() == ("score: 0.67 (2 of 3 executed sync points killed by the program's own checks); "
                                    "below --min-score 0.9")
    data = json.loads(js.read_text())
    assert data["executed"] == 3 and data["killed"] == 2 and data["score"] == pytest.approx(2 / 3)
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "3" and suite.get("failures") == "1"
    met = cli("--quiet", "--min-score", "0.5", "--", exe, "unchecked")
    assert met.returncode == 0 and "meets --min-score 0.5" in met.stdout


def test_uncovered_sync_points_and_a_failing_baseline(exe, tmp_path) -> None:
    """A sync call site in the named sources that the program never executes is listed as uncovered; a
    program that fails as it is cannot be mutation-tested (exit 2, one line)."""
    src = tmp_path / "extra.cpp"
    src.write_text("void f() {\n  AscendC::SyncAll();\n}\n")
    r = mutate_program([exe, "checked"], jobs=2, timeout_s=120, sources_sites=[f"{tmp_path.name}/extra.cpp:2"])
    assert r.uncovered == [f"{tmp_path.name}/extra.cpp:2"]
    bad = subprocess.run([sys.executable, "-m", "mpnpu", "mutate", "--", "/bin/false"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "fails as it is" in bad.stderr


def test_gtest_failures_are_named_without_its_summary_lines_and_sites_match_by_file_and_line() -> None:
    from mpnpu.tools.mutate import _Run, _same_site, classify_failure

    out = ("[  FAILED  ] suite.case_a (12 ms)\n[==========] 2 tests ran.\n[  FAILED  ] 1 test, listed below:\n"
           "[  FAILED  ] suite.case_a\n")
    how, tests, detail = classify_failure(_Run(1, out, "", 0.1))
    assert how == "gtest failure" and tests == ["suite.case_a"] and detail == "1 test failed: suite.case_a"
    assert _same_site("op_kernel/k.h:12", "k/k.h:12") and not _same_site("op_kernel/k.h:12", "k/k.h:13")


def test_a_unit_test_programs_log_selects_the_tests_that_executed_each_site() -> None:
    """A launch's log line names its test and the settings it started with: a mutant then runs only the
    tests that executed its site, each started with those settings; one launch outside a named test (or
    a name a filter cannot say) and every mutant runs the program whole."""
    from mpnpu.tools.mutate import learn

    def line(test, sites, state="1:0"):
        return json.dumps({"kernel": "k", "sites": {s: {"call": "SetFlag", "count": 1} for s in sites},
                           **({"test": test, "state": state} if test else {})})

    log = "\n".join([line("s.a", ["k.h:1", "k.h:2"]), line("s.b", ["k.h:2"], "2:7"), line("s.b", ["k.h:3"], "2:7")])
    got = learn(log)
    assert list(got.sites) == ["k.h:1", "k.h:2", "k.h:3"]
    assert got.only("k.h:1") == (["--gtest_filter=s.a"], {"MPNPU_GTEST_STATES": "s.a=1:0"})
    assert got.only("k.h:2") == (["--gtest_filter=s.a:s.b"], {"MPNPU_GTEST_STATES": "s.a=1:0;s.b=2:7"})
    assert learn(log + "\n" + line(None, ["k.h:4"])).only("k.h:1") == ([], {})
    assert learn(line("P/s.c/0*", ["k.h:1"])).only("k.h:1") == ([], {})


def test_an_interrupted_caller_leaves_the_mutants_not_started(exe) -> None:
    """mpnpu ut stops between mutants when it is interrupted (its report is written then): a mutant not
    started stays unclassified and the report says it was interrupted (it used to go on to the end of the
    test, after the report, keeping its core processes at work)."""
    r = mutate_program([exe, "checked"], jobs=1, timeout_s=120, stop=lambda: True)
    assert r.interrupted and r.mutants and all(m.status == "" and m.exit_code is None for m in r.mutants)


def test_mutants_run_as_ray_tasks_classify_as_the_slots_do(exe, tmp_path) -> None:
    """--cluster: each mutant is a Ray task (on an embedded local cluster here), says which node ran it,
    and comes back with the classification the slots give: the set without which the cube never wakes is a
    deadlock, the wait no check reads survives untested."""
    pytest.importorskip("ray")
    from mpnpu.tools.mutate_cluster import RayMutants

    with RayMutants() as runner:
        r = mutate_program([exe, "unchecked"], jobs=2, timeout_s=120, runner=runner)
    m = _by_site(r)
    assert not r.interrupted and len(r.mutants) == 3
    assert all(x.ran_on.startswith("ray node ") for x in r.mutants), [x.ran_on for x in r.mutants]
    assert m[_site("CrossCoreSetFlag<")].status == KILLED and m[_site("CrossCoreSetFlag<")].how == BY_DEADLOCK
    wait = m[_site("CrossCoreWaitFlag(")]
    assert wait.status == SURVIVED and wait.survivor_class == UNTESTED and wait.hazards >= 1, wait


def test_cluster_without_mutants_to_run_is_a_usage_error(tmp_path) -> None:
    r = subprocess.run([sys.executable, "-m", "mpnpu", "ut", str(tmp_path), "--cluster"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "mpnpu ut: error: --cluster runs the mutants of --mutate-syncs as Ray tasks: give --mutate-syncs too"], r.stderr


def test_a_site_proven_redundant_makes_only_syncs_inside_one_core() -> None:
    """A line whose removal leaves no hazard is proven without a run only if every call made there is a
    SetFlag, WaitFlag or PipeBarrier: a line that also makes a cross-core set is run (a set left over
    reaches the next launch); no verdict from the traces (None), or a hazard, is no proof either."""
    from mpnpu.tools.mutate import Mutant, proven_redundant

    assert proven_redundant(Mutant("k.cpp:1", "PipeBarrier"), 0, {"PipeBarrier", "WaitFlag"})
    assert not proven_redundant(Mutant("k.cpp:2", "PipeBarrier"), 0, {"PipeBarrier", "CrossCoreSetFlag"})
    assert not proven_redundant(Mutant("k.cpp:3", "SyncAll"), 0)
    assert not proven_redundant(Mutant("k.cpp:4", "WaitFlag"), None)
    assert not proven_redundant(Mutant("k.cpp:5", "WaitFlag"), 2)
    m = Mutant("k.cpp:6", "SetFlag")
    assert proven_redundant(m, 0) and (m.status, m.survivor_class, m.seconds) == (SURVIVED, REDUNDANT, 0.0)


def test_known_mutants_of_an_earlier_run_are_taken_over_and_the_rest_run(exe) -> None:
    """``known`` (mpnpu ut --resume): a site an earlier run classified is taken over as it was (marked
    resumed, not run), through its JSON form; the sites it did not classify, or where another call was
    made, run."""
    from mpnpu.tools.mutate import Mutant

    first = mutate_program([exe, "unchecked"], jobs=2, timeout_s=120)
    earlier = {m.site: Mutant.from_dict(json.loads(json.dumps(m.to_dict()))) for m in first.mutants}
    wait, set_ = _site("CrossCoreWaitFlag("), _site("CrossCoreSetFlag<")
    earlier[set_].call = "SyncAll"  # (as if that line had made another call then)
    known = {s: earlier[s] for s in (wait, set_)}
    again = mutate_program([exe, "unchecked"], jobs=2, timeout_s=120, known=known)
    m = _by_site(again)
    assert again.resumed == 1 and m[wait].resumed and not m[set_].resumed
    assert m[wait].to_dict() == {**earlier[wait].to_dict(), "resumed": True}
    assert m[set_].status == KILLED and m[set_].exit_code not in (None, 0)
    assert not m[_site("SyncAll();")].resumed and m[_site("SyncAll();")].status
