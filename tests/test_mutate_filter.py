"""How a mutant of a unit-test program runs only the tests that executed its site (mpnpu.tools.mutate):
the filtered tests run once with nothing dropped, and a kill seen through a filter that passes so
stands without a run of the program whole; a filter whose tests fail alone (a test that needs files
an earlier one wrote) has its kills confirmed by the program whole, as before. On a stand-in program
of our own (a Python script that speaks the sync log and GoogleTest's filter and verdict lines)."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

from mpnpu.directed.mutation import KILLED
from mpnpu.tools.mutate import mutate_program

# s.a executes k.h:1; s.b executes k.h:2 and k.h:3, and dropping either fails s.b. With NEEDS_A
# set, s.b fails unless s.a ran before it in the same run (as a test reading an earlier one's file).
PROGRAM = textwrap.dedent("""\
    import json, os, sys
    flt = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--gtest_filter=")), "s.a:s.b")
    tests = flt.split(":")
    drop = os.environ.get("MPNPU_DROP_SYNC", "")
    with open(os.environ["CALLS"], "a") as f:
        f.write(json.dumps({"filter": flt, "drop": drop}) + "\\n")
    log = os.environ.get("MPNPU_SYNC_LOG")
    sites = {"s.a": ["k.h:1"], "s.b": ["k.h:2", "k.h:3"]}
    failed = []
    for t in tests:
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"kernel": "k", "test": t, "state": "1:0",
                                    "sites": {s: {"call": "SyncAll", "count": 1} for s in sites[t]}}) + "\\n")
        if t == "s.b" and (drop in sites[t] or (os.environ.get("NEEDS_A") and "s.a" not in tests)):
            failed.append(t)
            print(f"[  FAILED  ] {t}")
    sys.exit(1 if failed else 0)
""")


def _program(tmp_path) -> str:
    path = tmp_path / "fake_test"
    path.write_text(f"#!{sys.executable}\n" + PROGRAM)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _calls(path) -> list[dict]:
    return [json.loads(line) for line in open(path)]


def test_a_kill_through_a_filter_whose_tests_pass_alone_needs_no_whole_run(tmp_path) -> None:
    calls = tmp_path / "calls"
    env = {**os.environ, "CALLS": str(calls)}
    report = mutate_program([_program(tmp_path)], jobs=2, timeout_s=60, env=env)
    by_site = {m.site: m for m in report.mutants}
    assert by_site["k.h:2"].status == KILLED and by_site["k.h:3"].status == KILLED
    assert by_site["k.h:2"].ran == ["s.b"]
    runs = _calls(calls)
    # the baseline, s.a's and s.b's filtered baselines once each, one run per mutant (k.h:1 survives:
    # a second, racechecked run), and no run of the program whole with a sync dropped
    assert runs.count({"filter": "s.b", "drop": ""}) == 1
    assert not [r for r in runs if r["filter"] == "s.a:s.b" and r["drop"]]
    assert {"filter": "s.b", "drop": "k.h:2"} in runs and {"filter": "s.b", "drop": "k.h:3"} in runs


def test_a_kill_through_a_filter_whose_tests_fail_alone_is_confirmed_whole(tmp_path) -> None:
    calls = tmp_path / "calls"
    env = {**os.environ, "CALLS": str(calls), "NEEDS_A": "1"}
    report = mutate_program([_program(tmp_path)], jobs=1, timeout_s=60, env=env)
    by_site = {m.site: m for m in report.mutants}
    assert by_site["k.h:2"].status == KILLED
    runs = _calls(calls)
    assert {"filter": "s.b", "drop": ""} in runs  # s.b alone fails: the filter cannot tell
    assert {"filter": "s.a:s.b", "drop": "k.h:2"} in runs  # so the program whole decided,
    assert {"filter": "s.b", "drop": "k.h:2"} not in runs  # without a filtered run bound to fail
