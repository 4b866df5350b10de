"""The batch on a C++ operator whose kernel is vector-only: block_dim counts its vector cores, so
its default is one AI core's two (with one, a cross-core race has nobody to race with), and the
report counts the core processes that ran, not three per block."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mpnpu.runtime.cpuset import cpus_wanted
from tests.ascendc_util import needs_cxx


def _batch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mpnpu.batch", *args], capture_output=True, text=True, timeout=300)


@needs_cxx
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("op, given, block_dim, processes", [
    ("vecin-early-read-cxx", None, 2, 2),  # vector-only: one AI core's 2 vector cores
    ("vecin-early-read-cxx", "1", 1, 1),
    ("accum-init-cxx", None, 1, 3),  # mix 1:2: 1 cube + 2 vector core processes per block
])
def test_the_report_counts_the_processes_that_ran(tmp_path, op, given, block_dim, processes) -> None:
    report = tmp_path / "r.json"
    p = _batch("--op", op, "--variant", "fixed", "--cases", "2", "--repeat", "1", "--json", str(report),
               *(("--block-dim", given) if given else ()))
    assert p.returncode == 0, p.stderr
    data = json.loads(report.read_text())
    assert (data["block_dim"], data["core_processes"]) == (block_dim, processes)
    noun = "process" if processes == 1 else "processes"
    assert f"block_dim {block_dim} ({processes} core {noun} on " in p.stdout.splitlines()[0]
    assert f"CPU set: {processes} core {noun} " in p.stdout


@pytest.mark.slow
def test_help_shows_the_default_block_dim_of_the_operator() -> None:
    def default(op: str) -> str:
        text = " ".join(_batch("--op", op, "--help").stdout.split())
        after = text[text.index("--block-dim BLOCK_DIM AI cores"):]
        return after.split("(default ", 1)[1].split(")")[0]

    assert default("vecin-early-read-cxx") == "2"
    assert default("floms") == "1"


def test_a_device_asks_for_cpus_by_its_processes() -> None:
    assert cpus_wanted(1) == 2 and cpus_wanted(4) == 8  # (mix: 2 CPUs per AI core of 3 processes)
    assert cpus_wanted(2, processes=2) == 2  # (2 vector cores: one AI core's share)
    assert cpus_wanted(1, processes=1) == 1 and cpus_wanted(8, processes=8) == 6
    assert cpus_wanted(1, 3, processes=3) == 3


@pytest.mark.slow
@needs_cxx
@pytest.mark.usefixtures("no_leaks")
def test_stress_chaos_suspends_the_vector_cores_a_vector_only_device_has(tmp_path) -> None:
    """The chaos schedule has one target per core process of the device (it used to assume 3 per
    block and refused a vector-only device's pids)."""
    report = tmp_path / "s.json"
    p = subprocess.run([sys.executable, "-m", "mpnpu", "stress", "--op", "vecin-early-read-cxx", "--cases", "2",
                        "--repeat", "1", "--block-dims", "1,2", "--placements", "pack", "--chaos", "on",
                        "--json", str(report)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    data = json.loads(report.read_text())
    assert [(c["block_dim"], c["core_processes"]) for c in data["configurations"]] == [(1, 1), (2, 2)]
    schedules = data["chaos"]["schedules"]
    assert sorted((int(bd), s["n_targets"]) for bd, s in schedules.items()) == [(1, 1), (2, 2)]
    assert data["configurations"][1]["active"][0].startswith("placement pack: all 2 core processes on CPU")


@pytest.mark.slow
@needs_cxx
@pytest.mark.usefixtures("no_leaks")
def test_a_soak_shard_of_a_vector_only_operator_says_how_many_processes_it_packed(tmp_path) -> None:
    report = tmp_path / "soak.json"
    p = subprocess.run([sys.executable, "-m", "mpnpu", "soak", "fixed", "--op", "vecin-early-read-cxx",
                        "--case-runs", "20", "--json", str(report)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    data = json.loads(report.read_text())
    assert (data["block_dim"], data["core_processes"]) == (2, 2)
    assert {s["packing"].split(" on ")[0] for s in data["shards"]} == {"2"}
