"""Shards as Ray tasks on an embedded local Ray cluster (skipped when Ray is not installed).

One cluster for the module (starting one takes ~5 s): a small sweep merges into the same counts
the shards report, each shard's provenance names the node and the CPUs its task claimed; a Ray
worker killed while it runs a shard loses that shard, which is retried and counted once, and the
killed worker's core processes and GM segment do not outlive it.
"""

from __future__ import annotations

import os
import threading

import psutil
import pytest

ray = pytest.importorskip("ray")

from mpnpu import load_operator  # noqa: E402
from mpnpu.harness.runner import Variant  # noqa: E402
from mpnpu.harness.stress.plan import Configuration, configurations  # noqa: E402
from mpnpu.runtime import cpuset  # noqa: E402
from mpnpu.runtime.config import RuntimeOptions  # noqa: E402
from mpnpu.scale.cluster import run_on_cluster  # noqa: E402
from mpnpu.scale.shards import ShardPlan, make_shards, merge_shards  # noqa: E402
from tests.conftest import SHM_DIR  # noqa: E402
from tests.waiting import wait_for  # noqa: E402

OPERATOR = load_operator("floms")
FIXED = Variant("fixed", frozenset())
INCIDENT = Variant("incident", frozenset({"S1"}))
OPTIONS = RuntimeOptions(gm_segment_bytes=8 << 20, launch_timeout_s=60.0)


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=len(cpuset.real_cpus()), include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_sweep_on_a_local_cluster_merges_like_a_local_sweep(cluster) -> None:
    plan = ShardPlan(OPERATOR, (INCIDENT, FIXED), cpus_per_core=1, options=OPTIONS)
    shards = make_shards(configurations([1], ["none", "pack"]), 8, shard_cases=4)
    run = run_on_cluster(shards, plan)
    assert not run.interrupted and not run.retries and not run.not_run
    assert run.backend["kind"] == "ray" and run.backend["nodes"] == 1
    assert sorted(r.shard.index for r in run.results) == [0, 1, 2, 3]
    for r in run.results:
        p = r.provenance
        assert p["backend"] == "ray" and p["ray_node"] and p["reserved_cpus"] == 1
        assert len(p["cpus"]) == 1 and p["packing"] == "3 on 1 CPU" and p["pid"] != os.getpid()
    merged = merge_shards(run.results)
    assert [m.config.label for m in merged] == ["bd1 none", "bd1 pack"]
    for m in merged:
        assert m.variants["incident"].case_runs == m.variants["fixed"].case_runs == 8
        assert m.variants["fixed"].clean
        assert sorted(m.variants["fixed"].fingerprints) == list(range(8))


@pytest.mark.slow
def test_killed_worker_shard_is_retried_and_counted_once(cluster) -> None:
    plan = ShardPlan(OPERATOR, (FIXED,), cpus_per_core=1, options=OPTIONS)
    shards = make_shards([Configuration(1)], 60, shard_cases=30)
    killed: dict[str, object] = {}
    stop = threading.Event()

    def killer() -> None:
        # Kill the first Ray worker of this test's cluster (a descendant of this process: other Ray
        # clusters may run on the machine) seen running a shard with its core processes up.
        def killed_one() -> bool:
            for p in psutil.Process().children(recursive=True):
                try:
                    if "ray::run_shard_task" in " ".join(p.cmdline()) and len(p.children()) >= 3:
                        killed["cores"] = [c.pid for c in p.children()]
                        killed["pid"] = p.pid
                        p.kill()
                        return True
                except psutil.Error:
                    continue
            return False

        wait_for(lambda: stop.is_set() or killed_one(), 300, interval=0.02)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    try:
        run = run_on_cluster(shards, plan)
    finally:
        stop.set()
        t.join(5)
    assert "pid" in killed
    assert len(run.retries) == 1 and run.retries[0].attempt == 1
    assert sorted(r.shard.index for r in run.results) == [0, 1]
    (merged,) = merge_shards(run.results)
    assert merged.variants["fixed"].case_runs == 60  # the lost attempt counted nothing
    assert max(r.provenance["attempt"] for r in run.results) == 2
    # the killed worker's core processes died with it, and its GM segment went too
    def live_cores() -> list[int]:
        return [c for c in killed["cores"] if psutil.pid_exists(c)  # type: ignore[union-attr]
                and psutil.Process(c).status() != "zombie"]

    def segments() -> list[str]:
        return [e for e in os.listdir(SHM_DIR) if e.startswith(f"mpnpu_{killed['pid']}_")]

    wait_for(lambda: not live_cores(), 5)
    assert not live_cores()
    wait_for(lambda: not segments(), 5)
    assert not segments()
