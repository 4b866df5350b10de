"""python -m mpnpu.stress and the sweep library behind it (mpnpu.harness.stress.sweep: one configuration;
mpnpu.scale.backend.run_sweep: the whole sweep, as the command runs it), on real core processes.

Deterministic properties only: usage errors, the JSON report's schema, the chaos schedule being a
function of its seed (recorded and replayable), placements read back from the OS while a batch runs,
perturbers following a pool rebuild, the fixed kernel clean under every perturbation, and Ctrl-C
leaving no process (stopped, pinned or busy) and no /dev/shm segment behind. Failure *rates* of the
incident kernel are measured by the sweep itself (README of the issue), not asserted here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from mpnpu.cli.commands.stress import COMMAND
from mpnpu.cli.common import run_cli
from mpnpu.harness.runner import Variant
from mpnpu.harness.stress import ChaosSchedule, available_cpus, read_affinity
from mpnpu.harness.stress.plan import ChaosSettings, Configuration, SweepPlan, configurations
from mpnpu.harness.stress.sweep import run_config
from mpnpu.kernels.fused_linear_online_max_sum.operator import OPERATOR
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.scale.backend import Backend
from mpnpu.scale.backend import run_sweep as run_sharded
from tests.conftest import SHM_DIR
from tests.waiting import wait_for, wait_until

REPO = Path(__file__).resolve().parents[1]
CPUS = available_cpus()
OPTIONS = RuntimeOptions(gm_segment_bytes=8 << 20, launch_timeout_s=60.0)
FIXED = Variant("fixed", frozenset())
INCIDENT = Variant("incident", frozenset({"S1"}))


def stress(*args: str) -> int:
    """Run the CLI in this process (cheaper than a subprocess: numpy is already imported)."""
    return run_cli(COMMAND.main, list(args), prog="mpnpu.stress")


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# -- usage ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, needle", [
    (["--block-dims", "0"], "positive integer"),
    (["--block-dims", "25"], "exceeds"),
    (["--block-dims", "1,,2"], "comma-separated"),
    (["--block-dims", "2,2"], "repeated"),
    (["--placements", "scatter"], "unknown placement"),
    (["--chaos", "maybe"], "on/off"),
    (["--load", "-1"], "integer >= 0"),
    (["--chaos-max-ms", "500"], "ms"),
    (["--chaos-max-ms", "5", "--chaos-min-ms", "10"], "min <= max"),
    (["--duration", "0"], "positive number"),
    (["--cases", "x"], "positive integer"),
    (["--no-such-option"], "unrecognized"),
])
def test_usage_errors_exit_2_with_one_line(capsys, args, needle) -> None:
    assert stress(*args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("mpnpu.stress: error: ") and needle in err, err


def test_usage_error_as_a_subprocess() -> None:
    proc = subprocess.run([sys.executable, "-m", "mpnpu.stress", "--placements", "pack,bogus"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "unknown placement 'bogus'" in proc.stderr


def test_defaults_cover_the_issue_sweep() -> None:
    a = COMMAND.parser().parse_args([])
    assert a.block_dims == [1, 2, 4, 24] and a.placements == ["none", "spread", "pack", "migrate"]
    assert a.load == [0] and a.chaos == [False, True] and a.time_limit == 180.0 and a.variant == "both"


# -- JSON: schema, seed and schedule, replay --------------------------------------------------------


@pytest.mark.slow
def test_json_schema_seed_schedule_and_replay(tmp_path, no_leaks) -> None:
    common = ["--block-dims", "1", "--placements", "migrate", "--load", "1", "--chaos", "on", "--cases", "2",
              "--quiet"]
    first, second, other, replay = (tmp_path / f"{n}.json" for n in ("first", "second", "other", "replay"))
    assert stress(*common, "--chaos-seed", "11", "--json", str(first)) == 0
    assert stress(*common, "--chaos-seed", "11", "--json", str(second), "--variant", "fixed") == 0
    assert stress(*common, "--chaos-seed", "12", "--json", str(other), "--variant", "fixed") == 0
    d1, d2, d3 = (json.loads(p.read_text()) for p in (first, second, other))

    # seed and schedule are recorded, and the schedule is a function of the seed (and settings)
    chaos = d1["chaos"]
    assert chaos["seed"] == 11 and chaos["max_suspend_s"] == 0.02 and chaos["rate_per_core_hz"] == 20.0
    sched = ChaosSchedule.from_dict(chaos["schedules"]["1"])
    assert sched == ChaosSchedule.generate(11, 3, chaos["period_s"], 1 / (20.0 * 3), 0.02, min_suspend_s=0.002)
    assert d2["chaos"]["schedules"] == chaos["schedules"]
    assert d3["chaos"]["seed"] == 12 and d3["chaos"]["schedules"]["1"]["entries"] != chaos["schedules"]["1"]["entries"]
    assert max(e[2] for e in sched.entries) <= 0.02  # far below the 60 s sync timeout

    # replaying from the report uses its schedules whatever the seed arguments
    assert stress(*common, "--chaos-replay", str(other), "--json", str(replay), "--variant", "fixed") == 0
    d4 = json.loads(replay.read_text())
    assert d4["chaos"]["schedules"] == d3["chaos"]["schedules"] and d4["chaos"]["seed"] == 12

    # schema
    assert d1["format"] == "mpnpu.stress_sweep/1" and d1["command"].startswith("python -m mpnpu.stress ")
    assert d1["variants"] == ["incident", "fixed"] and d1["interrupted"] is False
    assert d1["cpus"] == len(CPUS) and d1["cases"] == 2 and d1["repeat"] == 1
    assert d1["expected_clean_are_clean"] is True and d1["totals"]["fixed"] == {"case_runs": 2, "failed_case_runs": 0}
    (cfg,) = d1["configurations"]
    assert cfg["label"] == "bd1 migrate load1 chaos" and cfg["core_processes"] == 3
    assert (cfg["placement"], cfg["load"], cfg["chaos"]) == ("migrate", 1, True)
    assert any(a.startswith("placement migrate") for a in cfg["active"])
    assert any(a.startswith("chaos: seed 11") for a in cfg["active"])
    assert any(a.startswith("load: 1 busy process") for a in cfg["active"])
    for name in ("incident", "fixed"):
        v = cfg["variants"][name]
        assert v["case_runs"] == 2 and len(v["failure_rate_wilson95"]) == 2
        for key in ("failed_case_runs", "failure_rate", "first_failure_case_run", "first_failure_s",
                    "upper_bound95_rule_of_three", "failing_cases_by_repeat", "dropped_syncs"):
            assert key in v
    fixed = cfg["variants"]["fixed"]
    assert fixed["failed_case_runs"] == 0 and fixed["upper_bound95_rule_of_three"] == 1.0  # 3/2 capped
    assert fixed["first_failure_case_run"] is None
    did = cfg["perturbations"]
    assert did["chaos"]["runs"][0]["reported"] and did["chaos"]["runs"][0]["start_entry"] == 0
    assert did["chaos"]["next_entry"] == did["chaos"]["entries_executed"] + did["chaos"]["entries_vanished"]
    assert did["migrator"][0]["reported"] and did["migrator"][0]["ticks"] >= 1
    assert did["load"]["processes"] == 1 and len(did["load"]["pids"]) == 1 and did["load"]["alive_at_end"] == 1
    assert set(did["affinity"]["read_back"]) == {"aic0", "aiv0", "aiv1"}
    assert cfg["pool_rebuilds"] == 0 and cfg["budget_s"] > 0
    assert [row["core"] for row in cfg["contention"]] == ["aic0", "aiv0", "aiv1"]
    for row in cfg["contention"]:
        assert row["ctx_switches_involuntary"] >= 0 and row["cpu_user_s"] + row["cpu_system_s"] > 0
    assert set(cfg["contention_total"]) == {"ctx_switches_involuntary", "ctx_switches_voluntary",
                                            "cpu_user_s", "cpu_system_s"}


# -- placement read back during a run, and followed across a pool rebuild ----------------------------


def _plan(configs, variants=(FIXED,), cases=2, **kw) -> SweepPlan:
    return SweepPlan(configurations=configs, variants=list(variants), cases=cases, options=OPTIONS, **kw)


def run_sweep(op, plan: SweepPlan):
    """The whole sweep in this process, one shard per configuration, unpinned: the driver of
    ``mpnpu stress --jobs 1 --cpus-per-core 0``."""
    return run_sharded(op, plan, Backend(jobs=1, cpus_per_core=None)).result


@pytest.mark.slow
@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 usable CPUs to tell spread from pack")
@pytest.mark.parametrize("placement", ["spread", "pack", "migrate"])
def test_affinity_is_applied_during_the_run_and_restored(placement, no_leaks) -> None:
    config = Configuration(2, placement)
    seen: list[dict[int, list[int]]] = []
    with Device(2, options=OPTIONS) as dev:
        pids = dev.core_pids()
        original = read_affinity(pids)
        r = run_config(OPERATOR, config, _plan([config], cases=4), device=dev,
                       on_case_run=lambda d: seen.append(read_affinity(d.core_pids())))
        assert read_affinity(pids) == original  # put back when the configuration ended
    assert len(seen) == 4 and r.variants["fixed"].clean
    if placement == "spread":
        want = {pid: [CPUS[i % len(CPUS)]] for i, pid in enumerate(pids)}
        assert all(s == want for s in seen)
    elif placement == "pack":
        assert all(s == {pid: [CPUS[0]] for pid in pids} for s in seen)
    else:  # every core pinned to one CPU at a time, the CPUs changing
        assert all(len(cpus) == 1 for s in seen for cpus in s.values())
        assert r.migrator_runs[0].moves >= len(pids)
    assert set(r.affinity["read_back"]) == {"aic0", "aic1", "aiv0", "aiv1", "aiv2", "aiv3"}


@pytest.mark.slow
def test_perturbers_follow_a_pool_rebuild(no_leaks) -> None:
    """Kill a core after the first case-run: the device rebuilds its pool with new pids, and the
    placement and chaos must move to them (chaos continuing its stream where it stopped)."""
    config = Configuration(1, "pack", chaos=True)
    plan = _plan([config], cases=4, chaos=ChaosSettings(seed=5, rate_hz=20.0))
    seen: list[tuple[list[int], dict[int, list[int]]]] = []

    def on_case_run(dev: Device) -> None:
        pids = dev.core_pids()
        seen.append((pids, read_affinity(pids)))
        if len(seen) == 1:
            os.kill(pids[1], signal.SIGKILL)
            # not reaped here (the device's own join does that), just dead before the next launch
            wait_until(lambda: gone(pids[1]), timeout=5, what="the killed core to die")

    r = run_config(OPERATOR, config, plan, on_case_run=on_case_run)
    assert r.pool_rebuilds == 1
    old, new = seen[0][0], seen[-1][0]
    assert set(old).isdisjoint(new)
    assert seen[-1][1] == {pid: [CPUS[0]] for pid in new}  # the new pool is packed too
    first, second = r.chaos_runs
    assert first.pids == old and second.pids == new and second.start_entry == first.next_entry
    fixed = r.variants["fixed"]
    assert fixed.case_runs == 4 and fixed.launch_errors == 1  # the launch that found the core dead
    assert {row["pool_generation"] for row in r.contention} == {2}
    assert all(gone(p) for p in old + new)


# -- the fixed kernel under every perturbation ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.time_limit(120)
def test_fixed_variant_clean_under_every_perturbation(no_leaks, time_limit) -> None:
    configs = configurations([1, 2], ["none", "spread", "pack", "migrate"], [0, 1], [True])
    configs.insert(0, Configuration(2, "pack"))
    result = run_sweep(OPERATOR, _plan(configs, cases=3, chaos=ChaosSettings(seed=2, rate_hz=30.0)))
    assert not result.interrupted and len(result.results) == len(configs)
    for r in result.results:
        v = r.variants["fixed"]
        assert (v.case_runs, v.failed_case_runs, r.error) == (3, 0, ""), r.config.label
        if r.config.chaos:
            assert sum(c.entries_executed for c in r.chaos_runs) > 0, r.config.label
    assert result.expected_clean_are_clean and result.totals()["fixed"]["case_runs"] == 3 * len(configs)


@pytest.mark.slow
def test_duration_splits_the_budget_and_stops_configurations(no_leaks) -> None:
    configs = configurations([1], ["none", "pack"])
    t = time.monotonic()
    result = run_sweep(OPERATOR, _plan(configs, cases=10_000, duration_s=4.0))
    elapsed = time.monotonic() - t
    assert elapsed < 4.0 + 3.0  # device start/stop and one case-run of slack
    budgets = [r.budget_s for r in result.results]
    assert all(b is not None and b > 0.5 for b in budgets)
    assert budgets[1] >= 4.0 - elapsed_of(result.results[:1]) - 1.0  # the rest went to the last one
    assert elapsed_of(result.results) <= 4.0 + 0.5
    for r in result.results:
        assert r.interrupted and r.batch.interrupt is None  # stopped by its deadline, not Ctrl-C
        assert 0 < r.variants["fixed"].case_runs < 10_000 and r.elapsed_s <= r.budget_s + 1.0


def elapsed_of(results) -> float:
    return sum(r.elapsed_s for r in results)


# -- Ctrl-C -------------------------------------------------------------------------------------------


def affinity(p: psutil.Process) -> list[int] | None:
    try:
        return p.cpu_affinity()
    except psutil.NoSuchProcess:
        return None


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_prints_partial_results_and_leaves_nothing_behind(tmp_path, sig, code) -> None:
    out = tmp_path / "partial.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpnpu.stress", "--block-dims", "2", "--placements", "pack,migrate", "--load", "1",
         "--chaos", "on", "--chaos-rate", "40", "--cases", "5000", "--time-limit", "inf", "--json", str(out)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "MPNPU_PROGRESS_EVERY": "0"},  # a progress line after every case-run
    )
    err_lines: list[str] = []
    out_text: list[str] = []
    readers = [threading.Thread(target=lambda: err_lines.extend(proc.stderr), daemon=True),
               threading.Thread(target=lambda: out_text.append(proc.stdout.read()), daemon=True)]
    for r in readers:
        r.start()
    seen: dict[int, psutil.Process] = {}

    def case_runs_done() -> int:
        counts = [int(m.group(1)) for line in list(err_lines) for m in [re.search(r": (\d+)/\d+ runs", line)] if m]
        return max(counts, default=0)

    def all_running() -> bool:
        kids = _descendants(proc.pid)
        seen.update({p.pid: p for p in kids})
        # resource tracker + 6 core processes + chaos helper + load process
        return len([p for p in kids if not gone(p.pid)]) >= 9

    try:
        # wait until the core processes, the chaos helper and the load process all run, and a few
        # case-runs finished (so there is something to report)
        wait_until(all_running, timeout=30, interval=0.05, what="9 descendants")
        wait_until(lambda: case_runs_done() >= 3, timeout=60, interval=0.05, what="3 case-runs")
        seen.update({p.pid: p for p in _descendants(proc.pid)})
        assert len(seen) >= 9, [p.name() for p in seen.values()]
        if len(CPUS) >= 2:  # the first configuration packs the cores: some descendants are pinned
            assert sum(1 for p in seen.values() if affinity(p) == [CPUS[0]]) >= 6
        # Ctrl-C reaches the whole foreground process group; SIGTERM only the parent
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        proc.wait(timeout=30)
        for r in readers:
            r.join(10)
        stdout, stderr = "".join(out_text), "".join(err_lines)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    assert proc.returncode == code, stderr
    assert "INTERRUPTED" in stdout and "bd2 pack" in stdout and "verdict:" in stdout, stdout
    assert "Traceback" not in stderr, stderr
    data = json.loads(out.read_text())
    assert data["interrupted"] is True and data["configurations"][0]["interrupted"] is True
    assert data["configurations"][0]["variants"]["incident"]["case_runs"] >= 1
    # nothing left: no process (stopped, pinned or busy) and no shared-memory segment
    wait_for(lambda: all(gone(pid) for pid in seen), 3)
    left = [(pid, p.name()) for pid, p in seen.items() if not gone(pid)]
    assert not left, left
    assert not [e for e in os.listdir(SHM_DIR) if e.startswith(f"mpnpu_{proc.pid}_")]


# -- the text report: one line per configuration unless --verbose (issue 21, item 9) ------------------


@pytest.mark.slow
def test_the_report_summarises_each_configuration_in_one_line(no_leaks) -> None:
    """At block_dim 24 every configuration has 72 cores: the report gives each configuration one
    line (its busiest core), and every core's counts only under --verbose (and in the JSON)."""
    from mpnpu.report.text.stress import format_sweep

    configs = configurations([1, 2], ["none", "pack"], [0], [False])
    result = run_sweep(OPERATOR, _plan(configs, cases=1))
    short, long = format_sweep(result).splitlines(), format_sweep(result, verbose=True).splitlines()
    start = next(i for i, line in enumerate(short) if line.startswith("per configuration ("))
    section = short[start + 1:short.index("", start)]
    assert [line.split(":")[0].strip() for line in section] == [f"{i}. {c.label}" for i, c in enumerate(configs, 1)]
    assert all("most involuntary switches: " in line for line in section)
    cell = re.compile(r"\baiv\d+ \d+/\d+\.\d\d\b")  # a core's "switches/CPU s" cell
    assert not any(cell.search(line) for line in short)
    assert sum(bool(cell.search(line)) for line in long) >= len(configs)
    assert len(long) > len(short)
    # Every core's counts stay in the JSON.
    assert all(len(r["contention"]) == 3 * r["block_dim"] for r in result.to_dict()["configurations"])
