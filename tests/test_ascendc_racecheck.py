"""Race detection on C++ kernels: sync points named by their kernel line, dropped at run time, and
the same happens-before analysis as Python kernels, pointing at the C++ source."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.ascendc.build import syncpoints
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx, source
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]


def _launch(drop=(), trace=True, runs=1, inserts=()):
    k = kernel("two_phase.cpp", "two_phase")
    results = []
    with device(4, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.ones(4 * 256, np.float32))
        parts, out = dev.empty("partials", 32, "float32"), dev.empty("out", 8, "float32")
        for _ in range(runs):
            dev.gm.write(parts, np.full(32, -1.0, np.float32))  # a stale row reads as -1
            options = LaunchOptions(trace=trace, drop_syncs=drop, insert_syncs=inserts)
            r = dev.launch_with(options, k, x, parts, out, 4 * 256)
            results.append((r, float(dev.to_host(out)[0])))
    return results


def test_sync_points_are_the_kernels_sync_call_sites() -> None:
    points = syncpoints.scan([source("two_phase.cpp")])
    sync = f"ascendc_kernels/two_phase.cpp:{line_of('two_phase.cpp', 'SyncAll();')}"
    assert points[sync].call == "SyncAll" and points[sync].function == "Process"
    assert {p.call for p in points.values()} == {"SyncAll", "SetFlag", "WaitFlag"}
    assert syncpoints.resolve([f"two_phase.cpp:{points[sync].line}"], points) == {sync}
    with pytest.raises(Exception, match="is not a sync point"):
        syncpoints.resolve(["two_phase.cpp:1"], points)


def test_the_fixed_kernel_has_no_hazard() -> None:
    (r, total), = _launch()
    assert total == 1024.0
    assert analyze(r.trace) == []


def test_dropping_the_syncall_by_its_line_shows_the_raw_at_the_cxx_lines() -> None:
    line = line_of("two_phase.cpp", "SyncAll();")
    (r, _), = _launch(drop=(f"two_phase.cpp:{line}",))
    hazards = analyze(r.trace)
    gm = [h for h in hazards if h.tensor == "partials" and h.scope == "GM"]
    assert len(gm) == 1
    h = gm[0]
    assert h.kind == "RAW"
    assert h.first.site == f"ascendc_kernels/two_phase.cpp:{line_of('two_phase.cpp', 'DataCopy(partGm_[me_')}"
    assert h.second.site == f"ascendc_kernels/two_phase.cpp:{line_of('two_phase.cpp', 'DataCopy(all, partGm_')}"
    assert h.first.stage == "PartialSum" and h.second.stage == "Total"
    assert h.dropped_syncs == (f"ascendc_kernels/two_phase.cpp:{line}",)
    assert {pair[1] for pair in h.core_pairs} == {"aiv0"}


def test_dropping_and_keeping_the_syncall_in_turn_on_one_device_is_decided_per_launch() -> None:
    """The library keeps its sites (and their ids) from launch to launch: a launch that drops the
    SyncAll after one that kept it drops it, and the next that keeps it keeps it, each with its
    hazards named at the kernel's lines."""
    line = line_of("two_phase.cpp", "SyncAll();")
    sync = f"ascendc_kernels/two_phase.cpp:{line}"
    k = kernel("two_phase.cpp", "two_phase")
    seen = []
    with device(4, kernel_type=KernelType.AIV) as dev:
        x = dev.to_device("x", np.ones(4 * 256, np.float32))
        parts, out = dev.empty("partials", 32, "float32"), dev.empty("out", 8, "float32")
        for drop in ((), (f"two_phase.cpp:{line}",), (), (f"two_phase.cpp:{line}",), ()):
            r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), k, x, parts, out, 4 * 256)
            gm = [h for h in analyze(r.trace) if h.scope == "GM"]
            syncs = {ev.site for evs in r.trace.events for ev in evs if type(ev).__name__ == "SyncAllEvent"}
            seen.append((bool(drop), [(h.kind, h.dropped_syncs) for h in gm], syncs))
    for dropped, hazards, syncs in seen:
        if dropped:
            assert hazards == [("RAW", (sync,))] and syncs == set()
        else:
            assert hazards == [] and syncs == {sync}


def test_without_the_syncall_the_race_is_real() -> None:
    # Core 0 reads the partials right after writing its own: the other cores are at most a few
    # microseconds behind, so it reads at least one stale (-1) row in most runs. The bound is loose
    # (1 run in 40) so that a loaded machine cannot make it flaky; measured here: 26-27 of 30.
    line = line_of("two_phase.cpp", "SyncAll();")
    runs = _launch(drop=(f"two_phase.cpp:{line}",), trace=False, runs=40)
    wrong = sum(total != 1024.0 for _, total in runs)
    assert wrong >= 1
    fixed = _launch(trace=False, runs=40)
    assert all(total == 1024.0 for _, total in fixed)


def test_a_syncall_inserted_after_a_cxx_function_repairs_the_dropped_one() -> None:
    # The repair the audit verifies, without editing the source: the kernel is rebuilt with
    # function hooks and every vector core runs SyncAll<true> as it leaves PartialSum.
    drop = (f"two_phase.cpp:{line_of('two_phase.cpp', 'SyncAll();')}",)
    runs = _launch(drop, runs=10, trace=False, inserts=("after:PartialSum:aiv",))
    assert all(total == 1024.0 for _, total in runs)
    (r, total), = _launch(drop, inserts=("after:PartialSum:aiv",))
    assert total == 1024.0 and analyze(r.trace) == []
    inserted = [e for core in r.trace.events for e in core if getattr(e, "name", "") == "+after:PartialSum:aiv"]
    assert len(inserted) == 4  # one SyncAll<true> per vector core, under the insert's name


def test_inserting_at_a_function_the_kernel_lacks_is_one_clear_error() -> None:
    from mpnpu.errors import UsageError

    with pytest.raises(UsageError, match="no function of that name; similar: PartialSum"):
        _launch((), inserts=("after:partialsum",))


def _traced(entry: str, *, auto_sync: bool = True, drop: tuple[str, ...] = ()):
    from mpnpu.runtime.config import RuntimeOptions

    k = kernel("auto_sync.cpp", entry)
    with device(1, kernel_type=KernelType.AIV, options=RuntimeOptions(auto_sync=auto_sync)) as dev:
        a = dev.to_device("a", np.arange(64, dtype=np.float32))
        out = dev.empty("out", 64, "float32")
        r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), k, a, out)
        return r.trace, dev.to_host(out)


def test_vector_to_scalar_is_the_compilers_sync_unless_built_without_it() -> None:
    """The vector unit writes a buffer, the scalar unit reads and writes it next with no sync of the kernel's
    own: a kernel built with the compiler's automatic synchronisation (the default) has no hazard there, one
    built without it (--no-auto-sync) has the V -> S races, at their lines."""
    trace, out = _traced("auto_sync")
    assert trace.auto_sync and analyze(trace) == [] and out[1] == 0.0
    bare, _ = _traced("auto_sync", auto_sync=False)
    hazards = analyze(bare)
    # without it, the scalar unit is ordered after neither MTE2 nor V, and so neither is MTE3 after them
    pairs = {(h.first.pipe, h.second.pipe) for h in hazards}
    assert pairs == {("PIPE_V", "PIPE_S"), ("PIPE_MTE2", "PIPE_S"), ("PIPE_V", "PIPE_MTE3"), ("PIPE_MTE2", "PIPE_MTE3")}
    muls = f"ascendc_kernels/auto_sync.cpp:{line_of('auto_sync.cpp', 'Muls(t, t')}"
    v_to_s = [h for h in hazards if (h.first.pipe, h.second.pipe) == ("PIPE_V", "PIPE_S")]
    assert {h.first.site for h in v_to_s} == {muls} and {h.kind for h in v_to_s} == {"RAW", "WAR", "WAW"}


def _copy_then_get(auto_sync: bool, launches: int) -> list[float]:
    from mpnpu.runtime.config import RuntimeOptions

    k = kernel("auto_sync.cpp", "copy_then_get")
    with device(1, kernel_type=KernelType.AIV, options=RuntimeOptions(auto_sync=auto_sync)) as dev:
        a = dev.to_device("a", np.arange(64, dtype=np.float32))
        out = dev.empty("out", 64, "float32")
        seen = []
        for _ in range(launches):
            dev.launch(k, a, out)
            seen.append(float(dev.to_host(out)[0]))
        return seen


def test_a_scalar_read_waits_for_the_copy_it_reads_when_built_with_auto_sync() -> None:
    """GetValue of what a DataCopy just brought in, no sync of the kernel's own: the compiler's automatic
    synchronisation makes the scalar unit wait for the copy, so every launch reads the copied value (the
    copy queued on MTE2 used to be read before it ran); built without it, the read races the copy and sees
    the vector unit's earlier -1 (the queued copy runs only when something needs it: no launch of 10 has it
    done by then unless the scheduler ran the pipe's thread first, so at least one -1 is the bound)."""
    assert _copy_then_get(True, 10) == [5.0] * 10
    assert -1.0 in _copy_then_get(False, 10)


def test_a_mode0_wait_orders_the_cores_own_set_before_what_follows() -> None:
    """MTE3 writes GM, a mode-0 flag is raised on MTE3 and waited for (the core's own set is among those the
    wait needs), then MTE2 reads the same GM: ordered on the device, so no hazard; without the wait, the
    RAW inside the core between MTE3 and MTE2."""
    trace, out = _traced("own_set")
    assert analyze(trace) == [] and out.tolist() == [3.0] * 64
    wait = f"auto_sync.cpp:{line_of('auto_sync.cpp', 'CrossCoreWaitFlag(5)')}"
    dropped, _ = _traced("own_set", drop=(wait,))
    (h,) = analyze(dropped)
    assert (h.kind, h.scope, h.first.pipe, h.second.pipe) == ("RAW", "core", "PIPE_MTE3", "PIPE_MTE2")


def test_a_copy_out_released_by_a_set_on_its_pipe_stays_released_after_a_set_on_another() -> None:
    """Each vector core copies its slot out on MTE3, raises flag 1 on MTE3, then flag 2 on MTE2 (which
    does not wait for the copy out), and reads the other core's slot after waiting for flag 1: ordered on
    the device, so no hazard (racecheck used to take the later MTE2 set as the copy out's release and report
    the read); with flag 1's wait dropped, the RAW between the cores at those lines."""
    k = kernel("per_set_release.cpp", "per_set_release")

    def run(drop=()):
        with device(2, kernel_type=KernelType.AIV) as dev:
            x = dev.to_device("x", np.zeros(16, dtype=np.float32))
            slots, out = dev.empty("slots", 16, "float32"), dev.empty("out", 16, "float32")
            r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), k, x, slots, out)
            return r.trace, dev.to_host(out)

    trace, out = run()
    assert [h for h in analyze(trace) if h.scope == "GM"] == [] and out.tolist() == [2.0] * 8 + [1.0] * 8
    wait = f"per_set_release.cpp:{line_of('per_set_release.cpp', 'CrossCoreWaitFlag(1)')}"
    copy_out = f"ascendc_kernels/per_set_release.cpp:{line_of('per_set_release.cpp', 'DataCopy(sg[me')}"
    read = f"ascendc_kernels/per_set_release.cpp:{line_of('per_set_release.cpp', 'DataCopy(other')}"
    dropped, _ = run(drop=(wait,))
    gm = [h for h in analyze(dropped) if h.scope == "GM"]
    assert gm and {(h.first.site, h.second.site) for h in gm} <= {(copy_out, read), (read, copy_out)}, gm


def _flag_pipe(drop=()):
    k = kernel("flag_pipe.cpp", "flag_pipe")
    with device(1) as dev:
        parts, out = dev.empty("partials", 16, "float32"), dev.empty("out", 8, "float32")
        return dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), k, parts, out).trace


def test_a_trace_without_a_site_is_what_a_launch_that_dropped_it_records() -> None:
    """Mutation testing works out a survivor's hazards from the baseline's trace with the site's sync events
    taken out (DroppedSyncEvents in their place): racecheck of that trace equals racecheck of a launch that
    dropped the site, hazard for hazard."""
    from mpnpu.directed.mutation import hazards_without, without_site
    from mpnpu.runtime.trace import DroppedSyncEvent, FlagWaitEvent

    traced = _flag_pipe()
    site = next(ev.site for evs in traced.events for ev in evs if type(ev) is FlagWaitEvent)
    cut = without_site(traced, site)
    assert not any(type(ev) is FlagWaitEvent for evs in cut.events for ev in evs)
    assert sum(type(ev) is DroppedSyncEvent for evs in cut.events for ev in evs) == 1 and site in cut.dropped_syncs
    dropped = _flag_pipe(drop=(site.split("/", 1)[-1],))
    key = [(h.kind, h.scope, h.first.site, h.second.site, h.gap) for h in analyze(dropped)]
    assert key and [(h.kind, h.scope, h.first.site, h.second.site, h.gap) for h in analyze(cut)] == key
    assert hazards_without(traced, site) == len(key)


def test_the_sync_log_works_out_hazards_without_a_site_only_within_its_limits(tmp_path, monkeypatch) -> None:
    """MPNPU_SYNC_LOG's line carries each site's hazards without it while events x sites and the
    launch's analysis time stay within their limits; past either, the sites go without (their
    mutants' own racecheck runs decide), and while the program's analyses stay within theirs.
    Unbounded, one launch of a 40-core corpus test took 168 s."""
    import json

    from mpnpu.directed import mutation

    traced = _flag_pipe()
    events = sum(len(evs) for evs in traced.events)

    def logged() -> dict:
        path = tmp_path / "sync.log"
        path.unlink(missing_ok=True)
        mutation.log_sync_sites(traced, "flag_pipe", str(path))
        (line,) = path.read_text().splitlines()
        return json.loads(line)["sites"]

    sites = logged()
    assert sites and all("hazards_without" in e for e in sites.values())
    monkeypatch.setattr(mutation, "ANALYTIC_WORK", events * len(sites) - 1)
    assert not any("hazards_without" in e for e in logged().values())
    monkeypatch.setattr(mutation, "ANALYTIC_WORK", events * len(sites))
    monkeypatch.setattr(mutation, "ANALYTIC_BUDGET_S", -1.0)  # (the launch's spent before the first site)
    assert not any("hazards_without" in e for e in logged().values())
    monkeypatch.setattr(mutation, "ANALYTIC_BUDGET_S", 5.0)
    monkeypatch.setattr(mutation, "_spent", [mutation.ANALYTIC_PROGRAM_S + 1])  # (the program's spent)
    assert not any("hazards_without" in e for e in logged().values())
    monkeypatch.setattr(mutation, "_spent", [0.0])
    assert all("hazards_without" in e for e in logged().values())


def test_a_flag_raised_on_the_wrong_pipe_is_named_as_the_fault() -> None:
    """The vector cores copy their partials out on MTE3 and raise the cube's flag on PIPE_V: racecheck's
    RAW names that flag, its pipe and the fix (not "no SyncAll between ..."); with the wait dropped instead,
    it names the dropped wait."""
    (h,) = [h for h in analyze(_flag_pipe()) if h.scope == "GM"]
    setf = f"ascendc_kernels/flag_pipe.cpp:{line_of('flag_pipe.cpp', 'CrossCoreSetFlag<')}"
    copy = f"ascendc_kernels/flag_pipe.cpp:{line_of('flag_pipe.cpp', 'DataCopy(pg[')}"
    # (one stage: racecheck's pair order may put the cube's read first; the text names the flag either way)
    read = f"ascendc_kernels/flag_pipe.cpp:{line_of('flag_pipe.cpp', 'og.SetValue')}"
    assert {h.first.site, h.second.site} == {copy, read}
    assert h.gap.startswith(f"the CrossCoreSetFlag(4) at {setf} is raised on PIPE_V, which does not wait for the "
                            f"PIPE_MTE3 access at {copy}: raise it on PIPE_MTE3"), h.gap
    wait = f"flag_pipe.cpp:{line_of('flag_pipe.cpp', 'CrossCoreWaitFlag(4)')}"
    (d,) = [h for h in analyze(_flag_pipe(drop=(wait,))) if h.scope == "GM"]
    assert d.gap.startswith("the CrossCoreWaitFlag(4) at ") and d.gap.endswith("was dropped"), d.gap
