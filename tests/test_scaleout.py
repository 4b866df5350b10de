"""CPU sets sized to block_dim, shards, parallel slots and their merged reports.

Deterministic properties: CPU-set sizing on any (emulated) machine, core processes inheriting the
pinning, the shard list depending on the command alone, merged counts equal to what the shards
counted, the fixed kernel giving byte-identical results per case whether run in this process or
in two slots, a lost slot's shard retried and counted once, Ctrl-C keeping partial counts and
leaving no process or segment behind, and the one-line error when Ray is missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from mpnpu import load_operator
from mpnpu.cli.common import run_cli
from mpnpu.errors import UsageError
from mpnpu.harness.runner import Variant, VariantResult
from mpnpu.harness.stress.plan import Configuration, configurations
from mpnpu.runtime import cpuset
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM, RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.scale.shards import ShardPlan, make_shards, merge_shards, merge_variant_results
from mpnpu.scale.slots import CpuPool, run_in_process, run_in_slots
from tests.conftest import SHM_DIR
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[1]
OPERATOR = load_operator("floms")
FIXED = Variant("fixed", frozenset())
INCIDENT = Variant("incident", frozenset({"S1"}))
OPTIONS = RuntimeOptions(gm_segment_bytes=8 << 20, launch_timeout_s=60.0)
CPUS = cpuset.real_cpus()


# -- CPU sets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_cpus", [1, 2, 3, 16, 64, 128, 512])
def test_cpu_set_is_sized_to_block_dim_on_any_machine(n_cpus) -> None:
    avail = list(range(n_cpus))
    for bd in (1, 2, 4, 24):
        s = cpuset.plan_cpu_set(bd, 2, avail, sample_load=False)
        assert len(s.cpus) == min(2 * bd, n_cpus)
        assert set(s.cpus) <= set(avail) and s.block_dim == bd and s.pinned
    assert cpuset.plan_cpu_set(1, None, avail).pinned is False


@pytest.mark.parametrize("n_cpus", ["2", "64", "128"])
def test_defaults_under_emulated_cpu_counts(monkeypatch, n_cpus) -> None:
    monkeypatch.setenv(cpuset.EMULATE_ENV, n_cpus)
    assert len(cpuset.visible_cpus()) == int(n_cpus)
    bd = DEFAULT_BLOCK_DIM
    assert 1 <= bd <= 24
    s = cpuset.plan_cpu_set(bd)
    # what the device would get there: 3 core processes on 2 CPUs, runnable here
    assert s.packing == "3 on 2 CPUs" and s.emulated is True
    assert set(s.real()) <= set(CPUS) and s.real()


@pytest.mark.parametrize("n_cpus", ["64", "512"])
def test_no_default_block_dim_exceeds_the_ai_cores(monkeypatch, n_cpus) -> None:
    from mpnpu.testing.devices import plugin_block_dim as plugin_default

    monkeypatch.setenv(cpuset.EMULATE_ENV, n_cpus)
    assert DEFAULT_BLOCK_DIM == 1 and 1 <= plugin_default() <= 24


def test_emulation_variable_is_checked(monkeypatch) -> None:
    monkeypatch.setenv(cpuset.EMULATE_ENV, "many")
    with pytest.raises(UsageError, match=cpuset.EMULATE_ENV):
        cpuset.visible_cpus()


def test_cpu_list_format_round_trips() -> None:
    assert cpuset.format_cpus([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert cpuset.parse_cpus("0-2,5,7-8") == [0, 1, 2, 5, 7, 8]
    with pytest.raises(UsageError):
        cpuset.parse_cpus("3-1")


def test_core_processes_inherit_the_pinned_cpu_set(no_leaks) -> None:
    target = [CPUS[-1]]
    before = cpuset.real_cpus()
    with cpuset.pinned(target):
        dev = Device(1, options=OPTIONS)
    try:
        assert cpuset.real_cpus() == before  # the thread got its affinity back
        for pid in dev.core_pids():
            assert sorted(psutil.Process(pid).cpu_affinity()) == target
    finally:
        dev.close()


def test_cpu_pool_hands_out_disjoint_aligned_blocks() -> None:
    pool = CpuPool(range(8))
    a, b = pool.acquire(2), pool.acquire(4)
    assert a == [0, 1] and b == [4, 5, 6, 7]
    assert pool.acquire(4) is None  # only 2, 3 are free
    assert pool.acquire(2) == [2, 3]
    pool.release(a)
    assert pool.acquire(1) == [0]
    assert pool.acquire(100) is None  # wants all 8, some are taken


@pytest.mark.slow
def test_batch_starts_as_a_big_machine_would_run_it(tmp_path) -> None:
    out = tmp_path / "b.json"
    env = {**os.environ, cpuset.EMULATE_ENV: "128"}
    proc = subprocess.run([sys.executable, "-m", "mpnpu.batch", "--cases", "4", "--repeat", "1", "--quiet",
                           "--json", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(out.read_text())
    assert data["block_dim"] == 1 and data["cpu_set"]["available"] == 128
    assert len(data["cpu_set"]["cpus"]) == 2 and data["cpu_set"]["emulated"] is True
    assert any("pinned to CPUs 0-1 of 128" in n for n in data["notes"])


# -- shards and merging -----------------------------------------------------------------------------


def test_shards_depend_on_the_command_alone() -> None:
    configs = configurations([1, 2], ["none", "pack"])
    a = make_shards(configs, 23, shard_cases=5, seed=3)
    assert a == make_shards(configs, 23, shard_cases=5, seed=3)
    for c in configs:  # every case of every configuration exactly once
        covered = sorted(i for s in a if s.config == c for i in range(s.case_start, s.case_stop))
        assert covered == list(range(23))
    assert [s.index for s in a] == list(range(len(a)))


def test_a_sweep_plan_and_rounds_of_it_make_the_shards_the_tools_run() -> None:
    """plan_shards is the one recipe (mpnpu stress, both soaks): the plan's cases, repeats and
    seeds cut by shard_cases; in rounds, each round's case seed and chaos seed one higher."""
    from mpnpu.harness.soak import CHAOS_SEED_BASE
    from mpnpu.harness.stress.plan import ChaosSettings, SweepPlan
    from mpnpu.scale.shards import plan_shards

    configs = configurations([1, 2], ["none", "pack"])
    plan = SweepPlan(configurations=configs, variants=[FIXED], cases=7, repeat=2, seed=5,
                     chaos=ChaosSettings(seed=9))
    assert plan_shards(plan, shard_cases=3) == make_shards(configs, 7, shard_cases=3, seed=5, repeat=2, chaos_seed=9)
    soak = SweepPlan(configurations=configs, variants=[FIXED], cases=4, seed=1,
                     chaos=ChaosSettings(seed=CHAOS_SEED_BASE + 1))
    rounds = plan_shards(soak, rounds=3)
    assert [(s.index, s.seed, s.chaos_seed) for s in rounds] == [
        (i, r, CHAOS_SEED_BASE + r) for i, r in enumerate(r for r in (1, 2, 3) for _ in configs)]
    assert all((s.case_start, s.case_stop, s.repeat) == (0, 4, 1) for s in rounds)
    shared = ShardPlan.of(OPERATOR, plan, cpus_per_core=1)
    assert (shared.variants, shared.chaos, shared.migrate, shared.options, shared.max_same_errors) == (
        (FIXED,), plan.chaos, plan.migrate, plan.options, plan.max_same_errors)


def test_merge_pools_disjoint_case_ranges() -> None:
    a, b = VariantResult(INCIDENT, 2), VariantResult(INCIDENT, 2)
    a.case_runs, a.failed_case_runs, a.failing_cases_by_repeat = 10, 2, [[3], [1]]
    a.first_failure_case_run, a.first_failure_s = 4, 0.5
    b.case_runs, b.failed_case_runs, b.failing_cases_by_repeat = 10, 1, [[12], []]
    b.failed_by_output.update({"predicted_logits": 1})
    m = merge_variant_results([a, b])
    assert (m.case_runs, m.failed_case_runs, m.failing_cases_by_repeat) == (20, 3, [[3, 12], [1]])
    assert m.first_failure_case_run == 4 and m.failed_by_output["predicted_logits"] == 1
    lo, hi = m.wilson95
    assert lo < 3 / 20 < hi


@pytest.mark.slow
def test_fixed_kernel_same_per_case_in_process_and_in_two_slots(no_leaks) -> None:
    """Same command, 1 slot or 2: the same cases, and the fixed kernel's outputs byte-identical."""
    plan = ShardPlan(OPERATOR, (FIXED,), cpus_per_core=1, options=OPTIONS)
    shards = make_shards([Configuration(1)], 12, shard_cases=3, repeat=2)
    here = run_in_process(shards, plan)
    there = run_in_slots(shards, plan, jobs=2)
    assert not here.interrupted and not there.interrupted and not there.retries
    (m1,), (m2,) = merge_shards(here.results), merge_shards(there.results)
    v1, v2 = m1.variants["fixed"], m2.variants["fixed"]
    assert v1.case_runs == v2.case_runs == 24 and v1.clean and v2.clean
    assert sorted(v1.fingerprints) == sorted(v2.fingerprints) == list(range(12))
    assert v1.fingerprints == v2.fingerprints
    assert len({tuple(r.provenance["cpus"]) for r in there.results}) == min(2, len(CPUS))
    assert all(r.provenance["packing"] == "3 on 1 CPU" for r in there.results)


@pytest.mark.slow
def test_lost_slot_is_retried_and_counted_once(no_leaks) -> None:
    plan = ShardPlan(OPERATOR, (FIXED,), cpus_per_core=1, options=OPTIONS)
    shards = make_shards([Configuration(1)], 60, shard_cases=20)
    killed: list[int] = []

    def kill_first(shard, pid, attempt) -> None:
        if shard.index == 0 and attempt == 1:
            # the shard is underway once its device's core processes exist
            wait_for(lambda: len(psutil.Process(pid).children()) >= 3, 20, interval=0.01)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    run = run_in_slots(shards, plan, jobs=2, on_dispatch=kill_first)
    assert killed and [(r.shard, r.attempt) for r in run.retries] == [(0, 1)]
    assert "SIGKILL" in run.retries[0].reason
    assert sorted(r.shard.index for r in run.results) == [0, 1, 2]
    (merged,) = merge_shards(run.results)
    assert merged.variants["fixed"].case_runs == 60  # the lost attempt counted nothing
    assert next(r for r in run.results if r.shard.index == 0).provenance["attempt"] == 2


@pytest.mark.slow
def test_ctrl_c_keeps_partial_counts_of_every_slot(tmp_path) -> None:
    out = tmp_path / "partial.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpnpu.stress", "--block-dims", "1", "--placements", "none,pack", "--chaos", "off",
         "--cases", "3000", "--time-limit", "inf", "--jobs", "2", "--cpus-per-core", "1", "--json", str(out)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    seen: dict[int, psutil.Process] = {}
    try:
        # wait until both slots run their devices and those cores have done some work
        def slots_busy() -> bool:
            kids = psutil.Process(proc.pid).children(recursive=True)
            seen.update({p.pid: p for p in kids})
            try:  # a process may end between listing and reading it
                cores = [p for p in kids if p.ppid() != proc.pid]
                busy = sum(p.cpu_times().user for p in cores)
            except psutil.NoSuchProcess:
                return False
            return len(cores) >= 6 and busy > 0.5

        if not wait_for(slots_busy, 60, interval=0.05):
            pytest.fail("the slots did not start")
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    assert proc.returncode == 130, stderr
    assert "INTERRUPTED" in stdout and "Traceback" not in stderr, (stdout, stderr)
    data = json.loads(out.read_text())
    assert data["interrupted"] is True and len(data["shards"]) == 2
    assert all(s["interrupted"] for s in data["shards"])
    assert sum(s["variants"]["incident"]["case_runs"] for s in data["shards"]) >= 2
    assert data["totals"]["incident"]["case_runs"] == sum(s["variants"]["incident"]["case_runs"]
                                                          for s in data["shards"])
    wait_for(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE
                             for p in seen.values() if _alive(p)), 5)
    assert not [p.pid for p in seen.values() if _alive(p)]
    assert not [e for e in os.listdir(SHM_DIR) if any(e.startswith(f"mpnpu_{pid}_") for pid in seen)]


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# -- the cluster option without Ray -----------------------------------------------------------------


def test_cluster_without_ray_says_what_to_install(monkeypatch, capsys) -> None:
    from mpnpu.cli.commands.stress import COMMAND
    main = COMMAND.main

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    code = run_cli(main, ["--cluster", "--block-dims", "1", "--placements", "none", "--chaos", "off",
                          "--cases", "1"], prog="mpnpu.stress")
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "pip install 'mpnpu[cluster]'" in err
