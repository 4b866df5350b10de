"""Run shards on this machine: in this process, or in parallel slots pinned to disjoint CPU sets.

::

    main process ── CpuPool (which CPUs are free) ── dispatch (shard, CPUs, attempt, budget) ──► slot k
       ▲   selects on every slot's pipe and process sentinel                           │ pins itself to the CPUs,
       │                                                                               │ runs the shard on its own
       └──────── ("progress", n) ... ("result", ShardResult) ◄─────────────────────────┘ device (cached per slot)

A slot is a process forked once, serving shard after shard; each shard gets, from the pool, as
many CPUs as its block_dim asks for (:meth:`ShardPlan.cpus_wanted`), preferring an aligned block
of neighbouring CPUs, so that concurrent shards never share CPUs and a shard's crowding does not
depend on how many slots run beside it. ``--jobs`` caps the number of slots; the CPU pool caps how
many shards run at once.

Failures and stopping:

- A slot that dies (killed, out of memory) loses its shard: the shard is queued again whole (up
  to ``max_attempts``), the retry is recorded, a fresh slot takes the dead one's place. Only
  results that came back whole are counted, so nothing is counted twice. The dead slot's core
  processes die with it (parent-death signal); its GM segments are swept by the next device.
- Ctrl-C reaches every process of the terminal's process group; slots ignore it and the main
  process decides: it sends each busy slot one SIGTERM, which ends the shard's batch early with
  its partial counts (as Ctrl-C does in a single process), collects those results, and stops the
  slots. A second Ctrl-C stops waiting and kills the slots (their cores die with them).
- A time budget (``deadline_s``) gives each shard a share of what is left when it starts; shards
  not started when it runs out are reported as not run.
"""

from __future__ import annotations

import collections
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from dataclasses import dataclass, field
from multiprocessing import resource_tracker
from typing import Any, Callable, Sequence

from mpnpu.errors import UsageError
from mpnpu.runtime import cpuset
from mpnpu.runtime.procutil import Terminated, describe_exit, set_parent_death_signal, signals_blocked
from mpnpu.scale.shards import DeviceCache, Retry, Shard, ShardPlan, ShardResult, failed_shard_result, run_shard

__all__ = ["CpuPool", "ShardRun", "run_in_process", "run_in_slots", "default_jobs"]

#: Attempts per shard before it is reported as failed (a slot lost each time).
MAX_ATTEMPTS = 3

#: After cancelling, how long busy slots get to send back their partial results.
CANCEL_GRACE_S = 30.0

_PROGRESS_EVERY_S = 0.25


@dataclass
class ShardRun:
    """What an executor did with a list of shards."""

    results: list[ShardResult] = field(default_factory=list)  # in the order they finished
    retries: list[Retry] = field(default_factory=list)
    not_run: list[Shard] = field(default_factory=list)  # cancelled or out of time before they started
    interrupt: BaseException | None = None  # Ctrl-C / SIGTERM of the whole run
    elapsed_s: float = 0.0
    backend: dict[str, Any] = field(default_factory=dict)  # kind, slots, CPUs, nodes...
    notes: list[str] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        return self.interrupt is not None


class CpuPool:
    """Which of a set of CPUs are free. :meth:`acquire` hands out ``n`` CPUs, preferring an aligned
    block (``cpus[k*n:(k+1)*n]``) of free neighbours, else the lowest free ones."""

    def __init__(self, cpus: Sequence[int]) -> None:
        self.cpus = sorted(cpus)
        self.free = set(self.cpus)

    def acquire(self, n: int) -> list[int] | None:
        n = min(n, len(self.cpus))
        for i in range(0, len(self.cpus) - n + 1, n):
            block = self.cpus[i:i + n]
            if self.free.issuperset(block):
                self.free.difference_update(block)
                return block
        if len(self.free) < n:
            return None
        block = sorted(self.free)[:n]
        self.free.difference_update(block)
        return block

    def release(self, cpus: Sequence[int]) -> None:
        self.free.update(cpus)


def record_loss(run: ShardRun, plan: ShardPlan, shard: Shard, attempt: int, reason: str, max_attempts: int,
                requeue: Callable[[Shard, int], None], on_result: Callable[[ShardResult], None] | None,
                backend: str) -> None:
    """A shard's slot or task was lost: record the retry and queue the next attempt, or, after
    ``max_attempts``, report the shard as failed (no counts). Shared by every executor."""
    run.retries.append(Retry(shard.index, attempt, reason))
    if attempt < max_attempts:
        requeue(shard, attempt + 1)
        return
    r = failed_shard_result(shard, plan, f"lost {attempt} times; last: {reason}",
                            {"attempt": attempt, "backend": backend})
    run.results.append(r)
    if on_result is not None:
        on_result(r)


def default_jobs(plan: ShardPlan, shards: Sequence[Shard], cpus: Sequence[int]) -> int:
    """As many slots as the CPUs allow for the smallest shard (at least 1)."""
    smallest = min((plan.cpus_wanted(s) for s in shards), default=1)
    return max(1, len(cpus) // max(1, smallest))


def share_of_time_left(deadline: float | None, slots: int, left: int) -> float | None:
    """A shard's share of the time left: what remains, spread over the shards still to start."""
    if deadline is None:
        return None
    remaining = max(0.0, deadline - time.perf_counter())
    return remaining * min(1.0, slots / max(1, left))


# -- in this process ------------------------------------------------------------------------------


def run_in_process(
    shards: Sequence[Shard],
    plan: ShardPlan,
    *,
    cpus: Sequence[int] | None = None,
    duration_s: float | None = None,
    progress: Callable[[int], None] | None = None,
    on_result: Callable[[ShardResult], None] | None = None,
) -> ShardRun:
    """Run the shards one after another in this process (one slot, no extra process)."""
    run = ShardRun(backend={"kind": "in-process", "slots": 1})
    start = time.perf_counter()
    deadline = start + duration_s if duration_s is not None else None
    cpus = sorted(cpus) if cpus is not None else cpuset.real_cpus()
    devices = DeviceCache()
    todo = list(shards)
    try:
        while todo:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            shard = todo[0]
            budget = share_of_time_left(deadline, 1, len(todo))
            r = run_shard(shard, plan, cpus, budget_s=budget, devices=devices, progress=progress,
                          where={"slot": 0, "backend": "in-process"})
            todo.pop(0)
            run.results.append(r)
            if on_result is not None:
                on_result(r)
            if r.result.batch.interrupt is not None:
                run.interrupt = r.result.batch.interrupt
                break
    except KeyboardInterrupt as e:  # between shards, or while a device started
        run.interrupt = e
    finally:
        with signals_blocked(signal.SIGINT, signal.SIGTERM):
            devices.close()
        run.not_run = [s for s in todo if all(r.shard != s for r in run.results)]
        run.elapsed_s = time.perf_counter() - start
    return run


# -- slot processes ---------------------------------------------------------------------------------


def _slot_main(conn: multiprocessing.connection.Connection, slot: int, plan: ShardPlan) -> None:
    """Body of a slot process: run shards sent by the main process until told to stop."""
    set_parent_death_signal(signal.SIGKILL)  # the main process died: so do we (and our cores, with us)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process turns Ctrl-C into a SIGTERM per slot

    def terminated(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    signal.signal(signal.SIGTERM, terminated)
    # Forked with both blocked (see _start_slot): handlers are in place now.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    devices = DeviceCache()
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                return
            shard, cpus, attempt, budget = msg
            pending = [0, time.monotonic()]

            def progress(n: int, pending: list[float] = pending) -> None:
                pending[0] += n
                now = time.monotonic()
                if now - pending[1] >= _PROGRESS_EVERY_S:
                    with signals_blocked(signal.SIGTERM):
                        conn.send(("progress", pending[0]))
                    pending[0], pending[1] = 0, now

            r = run_shard(shard, plan, cpus, attempt=attempt, budget_s=budget, devices=devices, progress=progress,
                          where={"slot": slot, "backend": "slots"})
            stop = r.result.batch.interrupt is not None
            r.result.batch.interrupt = None  # exceptions of that kind do not survive pickling
            with signals_blocked(signal.SIGTERM):
                if pending[0]:
                    conn.send(("progress", pending[0]))
                conn.send(("result", r))
            if stop:
                return
    except (KeyboardInterrupt, EOFError, OSError):
        return  # cancelled while idle, or the main process went away
    finally:
        with signals_blocked(signal.SIGTERM):
            devices.close()


@dataclass
class _Slot:
    index: int
    process: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection
    task: tuple[Shard, list[int], int] | None = None  # (shard, CPUs, attempt) while busy
    cancelled: bool = False


class _Slots:
    """The main process's side of the slot processes (start, dispatch, receive, stop)."""

    def __init__(self, plan: ShardPlan) -> None:
        self.plan = plan
        self.ctx = multiprocessing.get_context("fork")
        self.slots: dict[int, _Slot] = {}

    def start(self, index: int) -> _Slot:
        parent_end, child_end = self.ctx.Pipe(duplex=True)
        proc = self.ctx.Process(target=_slot_main, name=f"mpnpu-slot-{index}", args=(child_end, index, self.plan),
                                daemon=False)  # a daemonic process may not fork its core processes
        with signals_blocked(signal.SIGINT, signal.SIGTERM):
            proc.start()
        child_end.close()
        slot = _Slot(index, proc, parent_end)
        self.slots[index] = slot
        return slot

    def busy(self) -> list[_Slot]:
        return [s for s in self.slots.values() if s.task is not None]

    def cancel(self) -> None:
        """One SIGTERM to every busy slot: its shard stops with partial counts and comes back."""
        for s in self.busy():
            if not s.cancelled and s.process.exitcode is None:
                s.cancelled = True
                try:
                    os.kill(s.process.pid, signal.SIGTERM)  # type: ignore[arg-type]  # started
                except ProcessLookupError:
                    pass

    def stop(self, grace_s: float = 5.0) -> None:
        """Tell idle slots to exit, then make sure every slot has ended (kill after ``grace_s``)."""
        for s in self.slots.values():
            if s.process.exitcode is None:
                try:
                    s.conn.send(None)
                except OSError:
                    pass
        deadline = time.monotonic() + grace_s
        for s in self.slots.values():
            s.process.join(max(0.0, deadline - time.monotonic()))
        for s in self.slots.values():
            if s.process.exitcode is None:
                s.process.kill()
                s.process.join(2.0)
            s.conn.close()
        self.slots.clear()


def run_in_slots(
    shards: Sequence[Shard],
    plan: ShardPlan,
    *,
    jobs: int,
    cpus: Sequence[int] | None = None,
    duration_s: float | None = None,
    progress: Callable[[int], None] | None = None,
    on_result: Callable[[ShardResult], None] | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    on_dispatch: Callable[[Shard, int, int], None] | None = None,
) -> ShardRun:
    """Run the shards in up to ``jobs`` slot processes, each shard on its own CPUs out of ``cpus``
    (default: every CPU this process may use). ``on_dispatch(shard, slot pid, attempt)`` is called
    as a shard is handed to a slot (tests kill slots through it)."""
    if jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {jobs}")
    cpus = sorted(cpus) if cpus is not None else cpuset.real_cpus()
    pool = CpuPool(cpus)
    run = ShardRun(backend={"kind": "slots", "slots": jobs, "cpus": cpus})
    fits = default_jobs(plan, shards, cpus)
    if jobs > fits:
        run.notes.append(f"{jobs} slots asked for, but at {plan.cpus_per_core} CPUs per AI core only {fits} shard(s) "
                         f"fit on {len(cpus)} CPUs at once; the others wait for CPUs (fewer CPUs per AI core, "
                         "e.g. --cpus-per-core 1, run more side by side)")
    start = time.perf_counter()
    deadline = start + duration_s if duration_s is not None else None
    pending: collections.deque[tuple[Shard, int]] = collections.deque((s, 1) for s in shards)
    slots = _Slots(plan)
    resource_tracker.ensure_running()  # one tracker for every slot's GM segments, started before forking
    cancelling_since: float | None = None

    def finish(slot: _Slot) -> None:
        assert slot.task is not None
        pool.release(slot.task[1])
        slot.task = None

    def lost(slot: _Slot) -> None:
        """The slot's process ended while it held a shard: requeue it (or give up), replace the slot."""
        shard, _, attempt = slot.task  # type: ignore[misc]
        slot.process.join(1.0)
        how = describe_exit(slot.process.exitcode)
        finish(slot)
        slot.conn.close()
        del slots.slots[slot.index]
        if cancelling_since is not None:
            run.not_run.append(shard)
            return
        record_loss(run, plan, shard, attempt, f"slot {slot.index} (pid {slot.process.pid}) {how}", max_attempts,
                    lambda s, a: pending.appendleft((s, a)), on_result, "slots")
        slots.start(slot.index)

    def dispatch() -> None:
        for slot in sorted(slots.slots.values(), key=lambda s: s.index):
            if slot.task is not None or not pending:
                continue
            if deadline is not None and time.perf_counter() >= deadline:
                return
            for i, (shard, _) in enumerate(pending):
                got = pool.acquire(plan.cpus_wanted(shard))
                if got is not None:
                    shard, attempt = pending[i]
                    del pending[i]
                    break
            else:
                return  # nothing fits until a shard ends
            budget = share_of_time_left(deadline, jobs, len(pending) + 1)
            slot.conn.send((shard, got, attempt, budget))
            slot.task = (shard, got, attempt)
            if on_dispatch is not None:
                on_dispatch(shard, slot.process.pid, attempt)  # type: ignore[arg-type]  # started

    def receive(timeout: float) -> None:
        waitables: dict[Any, _Slot] = {}
        for s in slots.slots.values():
            waitables[s.conn] = s
            waitables[s.process.sentinel] = s
        for ready in multiprocessing.connection.wait(list(waitables), timeout=timeout):
            slot = waitables[ready]
            if slots.slots.get(slot.index) is not slot:
                continue  # replaced meanwhile
            # Read everything the slot sent before looking at whether it ended: a slot that sent
            # its result and then exited must not count as lost.
            ended = False
            while True:
                try:
                    if not slot.conn.poll(0):
                        break
                    kind, payload = slot.conn.recv()
                except (EOFError, OSError):
                    ended = True
                    break
                if kind == "progress":
                    if progress is not None:
                        progress(payload)
                else:
                    finish(slot)
                    run.results.append(payload)
                    if on_result is not None:
                        on_result(payload)
            if not ended and slot.process.exitcode is None:
                continue
            if slot.task is not None:
                lost(slot)
            else:
                # An idle slot ended (cancelled while idle): it is simply not there any more.
                slot.process.join(1.0)
                slot.conn.close()
                del slots.slots[slot.index]
                if cancelling_since is None:
                    slots.start(slot.index)

    try:
        n_slots = min(jobs, max(1, len(shards)))
        run.backend["slots"] = n_slots
        for i in range(n_slots):
            slots.start(i)
        try:
            while pending or slots.busy():
                with signals_blocked(signal.SIGINT, signal.SIGTERM):
                    dispatch()
                if not slots.busy() and pending:
                    break  # out of time: the rest is not run
                with signals_blocked(signal.SIGINT, signal.SIGTERM):
                    receive(0.2)
        except KeyboardInterrupt as e:
            run.interrupt = e
            cancelling_since = time.monotonic()
            with signals_blocked(signal.SIGINT, signal.SIGTERM):
                slots.cancel()
            try:
                while slots.busy() and time.monotonic() - cancelling_since < CANCEL_GRACE_S:
                    with signals_blocked(signal.SIGINT, signal.SIGTERM):
                        receive(0.2)
            except KeyboardInterrupt:
                pass  # a second Ctrl-C: stop waiting, the slots are killed below
            for s in slots.busy():
                run.not_run.append(s.task[0])  # type: ignore[index]
    finally:
        with signals_blocked(signal.SIGINT, signal.SIGTERM):
            slots.stop(grace_s=1.0 if run.interrupt is not None else 5.0)
        run.not_run += [s for s, _ in pending]
        run.elapsed_s = time.perf_counter() - start
    return run
