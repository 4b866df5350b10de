"""Stress sweeps: run kernel variants under one configuration of OS-level perturbations, count failures.

The library behind ``mpnpu stress`` (no printing, no argparse); the plan and result types are in
:mod:`mpnpu.harness.stress.plan`, and a whole sweep is run by :func:`mpnpu.scale.backend.run_sweep`,
which cuts it into shards that each call :func:`run_config` here. A *configuration* is a
block_dim plus the perturbations active while its batch runs:

- placement (:mod:`~mpnpu.harness.stress.placement`): ``none`` (the OS decides), ``spread`` (core process
  ``i`` pinned to CPU ``i mod n``), ``pack`` (every core process on one CPU), ``migrate`` (re-pinned
  to random CPUs at random intervals, like ``stress-ng --affinity-rand``);
- background load (:mod:`~mpnpu.harness.stress.load`): N busy processes, bounded in time (pinned to the
  packed CPU under ``pack``, so they compete with the cores rather than idle next to them);
- chaos (:mod:`~mpnpu.harness.stress.chaos`): a seeded, looped schedule of SIGSTOP/SIGCONT of random core
  processes for short random spans, from a helper process.

None of them touches the kernel's code path or its data: they act on the core processes' pids
through the OS only. Per configuration the result holds, per variant, the batch counts of
:func:`mpnpu.harness.runner.run_batch` (failure rate with its 95% Wilson interval, time to first failure,
rule-of-three bound when clean), what each perturbation actually did, and per core process the
involuntary context switches and CPU time it accumulated (:mod:`~mpnpu.harness.stress.contention`).

Data flow of one configuration::

    run_config ── BackgroundLoad.start ──▶ run_batch(device, on_device=attach, progress=hook)
                                              attach: read affinity, pin / Migrator / ChaosRunner,
                                                      contention sample
                                              device rebuild listener (a failed launch forked
                                                      new core processes): release the old pids,
                                                      attach to the new ones
               ◀── release: stop chaos (resumes all), stop migrator, restore affinity, sample ──
               ── BackgroundLoad.stop

Why the chaos and pack settings reproduce the race without relying on a crowded machine: a core
process stopped by chaos while it waits in SyncAll S0 (or before it writes its masked targets)
leaves the other AI cores' vector cores free to read stale masked targets, whatever the number of
idle CPUs; ``pack`` puts every core process on one CPU, so the time-slicing that reorders the
stages is created by the configuration itself, not borrowed from the machine.

A sweep reuses one device for consecutive shards with the same block_dim (a 24-AI-core pool takes
seconds to start; :class:`mpnpu.scale.shards.DeviceCache`) and splits an optional time budget
across them: each gets its share of what is left (:func:`mpnpu.scale.slots.share_of_time_left`),
enforced here through ``run_batch(deadline_s=...)``, so time left over by a quick configuration goes
to the later ones.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

from mpnpu.errors import MpnpuError, ProcessGoneError, UsageError
from mpnpu.harness.runner import BatchResult, VariantResult, run_batch
from mpnpu.harness.stress.chaos import ChaosRunner, ChaosSchedule
from mpnpu.harness.stress.contention import delta, sample
from mpnpu.harness.stress.load import BackgroundLoad
from mpnpu.harness.stress.placement import (
    Migrator,
    available_cpus,
    pack,
    read_affinity,
    restore,
    spread,
)
from mpnpu.harness.stress.plan import (
    ConfigResult,
    Configuration,
    SweepPlan,
)
from mpnpu.operators.protocol import Operator, device_for
from mpnpu.runtime.device import Device
from mpnpu.runtime.procutil import signals_blocked

__all__ = ["run_config"]

#: Seconds reserved at the end of a configuration's budget for stopping perturbers and load.
_TEARDOWN_RESERVE_S = 0.3

#: Load processes outlive a configuration by at most this much if it has no time budget
#: (they are stopped when the configuration ends; the bound covers a parent that vanished).
_LOAD_BOUND_NO_BUDGET_S = 3600.0

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


# -- one configuration ---------------------------------------------------------------------------


class _Perturbations:
    """Applies a configuration's per-pid perturbations to a device's core processes, follows pool
    rebuilds (new pids), and undoes everything on :meth:`release`. Every public method runs with
    SIGINT/SIGTERM blocked, so a Ctrl-C lands before or after it, never half-way (and the helpers
    it starts are always owned by this object)."""

    def __init__(self, result: ConfigResult, plan: SweepPlan, schedule: ChaosSchedule | None) -> None:
        self.r = result
        self.config = result.config
        self.plan = plan
        self.cpus = list(plan.cpus or available_cpus())
        self.schedule = schedule
        self.next_entry = 0
        self.device: Device | None = None
        self.generation = -1
        self.pids: list[int] = []
        self.names: list[str] = []  # the cores' short names, in pid order
        self.before: dict[int, Any] = {}
        self.chaos: ChaosRunner | None = None
        self.migrator: Migrator | None = None
        self.on_case_run: Callable[[Device], None] | None = None

    # called by run_batch ------------------------------------------------------------------------

    def attach(self, device: Device) -> None:
        with signals_blocked(*_SIGNALS):
            self.device = device
            self._apply()
            device.add_rebuild_listener(self._follow_rebuild)

    def after_case_run(self) -> None:
        if self.device is not None and self.on_case_run is not None:
            self.on_case_run(self.device)

    def release(self) -> None:
        with signals_blocked(*_SIGNALS):
            if self.device is not None:
                self.device.remove_rebuild_listener(self._follow_rebuild)
            self._undo(final=True)

    def _follow_rebuild(self, device: Device) -> None:
        """The device forked new core processes (a launch failed): move the perturbations to them."""
        with signals_blocked(*_SIGNALS):
            self._undo(final=False)
            self.r.pool_rebuilds += 1
            self._apply()

    # internals ------------------------------------------------------------------------------------

    def _apply(self) -> None:
        device = self.device
        assert device is not None
        self.generation = device.pool_generation
        topo = device.topology
        names = self.names = [c.short for c in topo.cores]
        try:
            pids = device.core_pids()
            self.saved = read_affinity(pids)
            self.pids = pids
            placement = self.config.placement
            if placement == "spread":
                spread(pids, self.cpus)
            elif placement == "pack":
                pack(pids, self.cpus)
            if "read_back" not in self.r.affinity:
                # Read from the OS after applying, not echoed from what was asked.
                back = read_affinity(pids)
                self.r.affinity["read_back"] = {names[i]: back[pid] for i, pid in enumerate(pids)}
            if placement == "migrate":
                m = self.plan.migrate
                self.migrator = Migrator(pids, self.cpus, seed=m.seed, min_interval_s=m.min_interval_s,
                                         max_interval_s=m.max_interval_s).start()
            if self.config.chaos and self.schedule is not None:
                self.chaos = ChaosRunner(self.schedule, pids, loop=True, start_entry=self.next_entry).start()
            self.before = sample(pids)
        except ProcessGoneError as e:
            # A core died between launches: the next launch fails and rebuilds the pool, and the
            # new generation is perturbed again. Until then this generation runs unperturbed.
            self._undo(final=False)
            self.r.notes.append(f"pool generation {self.generation}: perturbations not applied ({e})")

    def _undo(self, final: bool) -> None:
        pids = self.pids
        if not pids:
            return
        names = self.names
        if final and pids:
            try:
                at_end = read_affinity(pids)
                self.r.affinity["at_end"] = {names[i]: at_end[pid] for i, pid in enumerate(pids)}
            except ProcessGoneError:
                pass
        try:
            if self.chaos is not None:
                report = self.chaos.stop()  # resumes every target, from the helper and again from here
                self.r.chaos_runs.append(report)
                self.next_entry = report.next_entry
        finally:
            self.chaos = None
            try:
                if self.migrator is not None:
                    self.r.migrator_runs.append(self.migrator.stop())  # restores the pre-migration affinity
            finally:
                self.migrator = None
                restore(self.saved)
                after = sample(pids)
                d = delta(self.before, after)
                for i, pid in enumerate(pids):
                    if pid in d:
                        self.r.contention.append({"core": names[i], "pid": pid, "pool_generation": self.generation,
                                                  **d[pid]})
                self.pids, self.saved, self.before = [], {}, {}


def _describe(config: Configuration, plan: SweepPlan, schedule: ChaosSchedule | None) -> list[str]:
    cpus = list(plan.cpus or [])
    out = []
    if config.placement == "spread":
        out.append(f"placement spread: core process i pinned to CPU i mod {len(cpus)} of {cpus} (round-robin)")
    elif config.placement == "pack":
        out.append(f"placement pack: all {plan.core_processes(config.block_dim)} core processes on CPU {cpus[0]}")
    elif config.placement == "migrate":
        m = plan.migrate
        out.append(f"placement migrate: each core process re-pinned to a random CPU of {cpus} every "
                   f"{m.min_interval_s * 1000:g}-{m.max_interval_s * 1000:g} ms (seed {m.seed})")
    if config.load:
        where = f"pinned to CPU {cpus[0]}" if config.placement == "pack" else "placed by the OS"
        out.append(f"load: {config.load} busy process{'es' if config.load > 1 else ''} ({where})")
    if config.chaos and schedule is not None:
        c = plan.chaos
        out.append(
            f"chaos: seed {schedule.seed}, ~{c.rate_hz:g} suspensions/s per core process of "
            f"{schedule.min_suspend_s * 1000:g}-{schedule.max_suspend_s * 1000:g} ms "
            f"({len(schedule)} entries looped every {schedule.duration_s:g} s)"
        )
    return out or ["none: the OS schedules the core processes freely"]


def _empty_batch(op: Operator, plan: SweepPlan, block_dim: int) -> BatchResult:
    return BatchResult(
        operator=op.name, seed=plan.seed, cases=plan.cases, repeat=plan.repeat, block_dim=block_dim, probe="",
        cpus=len(plan.cpus or []), variants={v.name: VariantResult(v, plan.repeat) for v in plan.variants},
        processes=plan.core_processes(block_dim),
    )


def run_config(
    op: Operator,
    config: Configuration,
    plan: SweepPlan,
    *,
    device: Device | None = None,
    budget_s: float | None = None,
    schedule: ChaosSchedule | None = None,
    progress: Callable[[int], None] | None = None,
    on_case_run: Callable[[Device], None] | None = None,
) -> ConfigResult:
    """Run ``plan``'s variants over ``plan.cases`` × ``plan.repeat`` under ``config``.

    Uses ``device`` if given (its block_dim must match), else makes one and closes it.
    ``budget_s`` bounds the configuration (from this call); ``progress(n)`` is called after every
    case-run, as is ``on_case_run(device)`` (tests read the placement back through it). Ctrl-C:
    the returned result's ``batch.interrupt`` is set; every perturbation is undone before returning.
    """
    start = time.perf_counter()
    if config.chaos and schedule is None:
        schedule = plan.chaos.schedule(config.block_dim, plan.core_processes(config.block_dim))
    result = ConfigResult(config, _empty_batch(op, plan, config.block_dim), budget_s=budget_s,
                          active=_describe(config, plan, schedule))
    perturb = _Perturbations(result, plan, schedule)
    perturb.on_case_run = on_case_run
    load: BackgroundLoad | None = None
    own_device = device is None
    if device is not None and device.block_dim != config.block_dim:
        raise UsageError(f"device has block_dim {device.block_dim}, configuration wants {config.block_dim}")

    def hook(n: int) -> None:
        perturb.after_case_run()
        if progress is not None:
            progress(n)

    try:
        if config.load:
            cpus = list(plan.cpus or [])
            bound = (budget_s + 10.0) if budget_s is not None else _LOAD_BOUND_NO_BUDGET_S
            with signals_blocked(*_SIGNALS):
                load = BackgroundLoad(config.load, bound, cpus=cpus[:1] if config.placement == "pack" else None)
                load.start()
            result.load = {"processes": config.load, "pids": load.pids, "bound_s": bound,
                           "cpus": cpus[:1] if config.placement == "pack" else None}
        if device is None:
            device = device_for(op, config.block_dim, options=plan.options)
        deadline = None
        if budget_s is not None:
            deadline = max(0.0, budget_s - (time.perf_counter() - start) - _TEARDOWN_RESERVE_S)
        result.batch = run_batch(
            op, cases=plan.cases, repeat=plan.repeat, variants=plan.variants, seed=plan.seed, device=device,
            options=plan.options, progress=hook, deadline_s=deadline, on_device=perturb.attach,
            max_same_errors=plan.max_same_errors,
        )
        if budget_s is not None and result.batch.interrupted and result.batch.interrupt is None:
            result.notes.append(f"stopped at its time budget ({budget_s:.1f} s)")
    except KeyboardInterrupt as e:  # outside run_batch (load start, device start): nothing measured
        result.batch.interrupted, result.batch.interrupt = True, e
    except MpnpuError as e:
        if isinstance(e, UsageError):
            raise
        result.error = str(e)
    finally:
        with signals_blocked(*_SIGNALS):
            try:
                perturb.release()
            finally:
                if load is not None:
                    result.load["alive_at_end"] = load.alive()
                    load.stop()
                if own_device and device is not None:
                    device.close()
        result.elapsed_s = time.perf_counter() - start
    return result
