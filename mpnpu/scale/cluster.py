"""Run shards as Ray tasks: on an embedded local Ray cluster, or on an existing one by address.

Optional: Ray comes with ``pip install 'mpnpu[cluster]'``; without it :func:`import_ray` raises a
one-line UsageError saying so. Every node must have mpnpu installed (the same version).

::

    driver ── submit run_shard_task(shard, plan, cpus=n, attempt), num_cpus=n ──► Ray worker on some node
      │      (a window of tasks at a time, so a shard's time budget starts when it does) │
      │                                                                                  │ takes n CPUs of the node
      │                                                                                  │ (NodeCpus: a lock file per
      │                                                                                  │ CPU), pins itself, runs
      ◄──────────────────────────── ShardResult ─────────────────────────────────────────┘ the shard on its device

Why each task picks its own CPUs: inside a Ray worker the CPU affinity shows the whole node, and
Ray reserves a *number* of CPUs (``num_cpus``), not particular ones. So the task sizes its device
from the CPUs it reserved and claims that many CPUs of the node with non-blocking ``flock`` on one
file per CPU (released by the kernel when the worker exits, however it exits), so that tasks
sharing a node never share CPUs. Tasks run on the worker's main thread, which the device's
parent-death signal needs (plain tasks, never threaded or async actors).

Failures and stopping:

- A worker or node lost while running a shard (``WorkerCrashedError``, ``NodeDiedError``, ...):
  the shard is submitted again whole, the retry recorded; Ray's own retries are off
  (``max_retries=0``) so every retry is ours and visible. A shard counts only when its result
  came back, so nothing is counted twice. A killed worker's core processes die with it.
- Ctrl-C: every running task is cancelled without force, which raises KeyboardInterrupt in it: its
  batch stops with partial counts, closes its device (no core process or segment left) and
  returns them. Tasks that do not return within the grace period are force-cancelled (their cores
  die; a GM segment may then stay until the next device on that node sweeps it).
- An error raised by mpnpu itself inside a task (a usage error, say) is not retried: the shard is
  reported with that error.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
import time
from typing import Any, Callable, Sequence

from mpnpu.errors import UsageError
from mpnpu.runtime import cpuset
from mpnpu.scale.shards import Shard, ShardPlan, ShardResult, failed_shard_result, run_shard
from mpnpu.scale.slots import CANCEL_GRACE_S, MAX_ATTEMPTS, ShardRun, record_loss, share_of_time_left

__all__ = ["INSTALL_HINT", "import_ray", "connect", "NodeCpus", "run_on_cluster"]

INSTALL_HINT = "pip install 'mpnpu[cluster]'"


def import_ray() -> Any:
    """The ``ray`` module, or a one-line UsageError naming what to install."""
    try:
        import ray
    except ImportError:
        raise UsageError(f"--cluster needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


class NodeCpus:
    """Claims CPUs of this node for one task: an exclusive ``flock`` per CPU, on files in a
    directory shared by every task of the node in the same Ray cluster (``scope``: the Ray node
    id; two clusters on one machine are two separate runs, which share CPUs as two local runs
    do). Locks die with the process that holds them."""

    def __init__(self, scope: str = "", directory: str | None = None) -> None:
        base = os.path.join(tempfile.gettempdir(), f"mpnpu-cpus-{os.getuid()}")
        self.directory = directory or (os.path.join(base, scope) if scope else base)
        os.makedirs(self.directory, exist_ok=True)
        self._fds: list[int] = []

    def _try(self, cpu: int) -> int | None:
        fd = os.open(os.path.join(self.directory, f"cpu{cpu}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        return fd

    def acquire(self, n: int, timeout_s: float = 30.0) -> list[int]:
        """``n`` CPUs of this node no other task holds (an aligned block if possible); after
        ``timeout_s`` without enough free ones, whatever could be had (at least one CPU is shared
        then, which the shard's provenance shows)."""
        cpus = cpuset.real_cpus()
        n = min(n, len(cpus))
        deadline = time.monotonic() + timeout_s
        while True:
            got: dict[int, int] = {}
            blocks = [cpus[i:i + n] for i in range(0, len(cpus) - n + 1, n)] + [cpus]
            for block in blocks:
                for cpu in block:
                    if len(got) == n:
                        break
                    if cpu not in got:
                        fd = self._try(cpu)
                        if fd is not None:
                            got[cpu] = fd
                if len(got) == n:
                    break
            if len(got) == n or time.monotonic() >= deadline:
                self._fds = list(got.values())
                return sorted(got) or cpus[:n]
            for fd in got.values():
                os.close(fd)
            time.sleep(0.05)

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []


def connect(address: str | None, ray_init: dict[str, Any] | None = None) -> tuple[Any, bool]:
    """The ``ray`` module, connected: to the cluster at ``address``, or (None) to an embedded local one
    started with this machine's CPUs; ``ray_init`` adds to ``ray.init``'s arguments. Also whether this
    call connected it (False when this process already was). A wrong address is a one-line UsageError."""
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    if address is None:
        kwargs["num_cpus"] = len(cpuset.real_cpus())
    else:
        kwargs["address"] = address
    kwargs.update(ray_init or {})
    try:
        ray.init(**kwargs)
    except Exception as e:  # a wrong address, no cluster there
        raise UsageError(f"cannot connect to the Ray cluster{' at ' + address if address else ''}: "
                         f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    return ray, True


def run_shard_task(shard: Shard, plan: ShardPlan, n_cpus: int, attempt: int, budget_s: float | None) -> ShardResult:
    """Body of the Ray task: claim ``n_cpus`` CPUs of this node, run the shard on them."""
    node_id = ""
    try:
        import ray

        node_id = ray.get_runtime_context().get_node_id()
    except Exception:
        pass
    claim = NodeCpus(node_id)
    cpus = claim.acquire(n_cpus)
    try:
        r = run_shard(shard, plan, cpus, attempt=attempt, budget_s=budget_s,
                      where={"backend": "ray", "node": socket.gethostname(), "ray_node": node_id,
                             "reserved_cpus": n_cpus})
        r.result.batch.interrupt = None  # does not survive pickling; ``interrupted`` stays set
        return r
    finally:
        claim.release()


def _node_cpus(ray: Any) -> list[int]:
    """CPU counts of the cluster's live nodes."""
    out = []
    for node in ray.nodes():
        if node.get("Alive") and node.get("Resources", {}).get("CPU"):
            out.append(int(node["Resources"]["CPU"]))
    return out


def run_on_cluster(
    shards: Sequence[Shard],
    plan: ShardPlan,
    *,
    address: str | None = None,
    jobs: int | None = None,
    duration_s: float | None = None,
    progress: Callable[[int], None] | None = None,
    on_result: Callable[[ShardResult], None] | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    on_submit: Callable[[Shard, int], None] | None = None,
    ray_init: dict[str, Any] | None = None,
) -> ShardRun:
    """Run the shards as Ray tasks; ``address`` None starts (and stops) an embedded local cluster.

    At most ``jobs`` tasks are in flight (default: as many as the cluster's CPUs hold at once).
    ``on_submit(shard, attempt)`` is called as a shard is submitted.
    """
    ray, connected = connect(address, ray_init)
    run = ShardRun()
    start = time.perf_counter()
    own = connected and address is None
    task = ray.remote(max_retries=0)(run_shard_task)
    pending: list[tuple[Shard, int]] = [(s, 1) for s in shards]
    in_flight: dict[Any, tuple[Shard, int]] = {}
    try:
        nodes = _node_cpus(ray)
        largest = max(nodes, default=1)
        total = sum(nodes) or 1
        smallest = min((min(plan.cpus_wanted(s), largest) for s in shards), default=1)
        window = jobs or max(1, total // smallest)
        run.backend = {"kind": "ray", "address": address or "embedded local cluster", "nodes": len(nodes),
                       "cluster_cpus": total, "node_cpus": nodes, "max_in_flight": window}

        def submit() -> None:
            while pending and len(in_flight) < window:
                if duration_s is not None and time.perf_counter() - start >= duration_s:
                    return
                shard, attempt = pending.pop(0)
                n = min(plan.cpus_wanted(shard), largest)
                deadline = start + duration_s if duration_s is not None else None
                budget = share_of_time_left(deadline, window, len(pending) + 1)
                ref = task.options(num_cpus=n).remote(shard, plan, n, attempt, budget)
                in_flight[ref] = (shard, attempt)
                if on_submit is not None:
                    on_submit(shard, attempt)

        def collect(timeout: float) -> None:
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=timeout)
            for ref in ready:
                shard, attempt = in_flight.pop(ref)
                try:
                    r = ray.get(ref)
                except ray.exceptions.TaskCancelledError:
                    run.not_run.append(shard)
                    continue
                except ray.exceptions.RayTaskError as e:  # mpnpu raised inside the task: not a lost worker
                    cause = getattr(e, "cause", None) or e
                    r = failed_shard_result(shard, plan, f"{type(cause).__name__}: {str(cause).splitlines()[0]}",
                                            {"attempt": attempt, "backend": "ray"})
                except ray.exceptions.RayError as e:  # worker or node lost
                    if run.interrupt is not None:
                        run.not_run.append(shard)
                        continue
                    reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    record_loss(run, plan, shard, attempt, reason, max_attempts,
                                lambda s, a: pending.insert(0, (s, a)), on_result, "ray")
                    continue
                run.results.append(r)
                if progress is not None:
                    progress(r.case_runs())
                if on_result is not None:
                    on_result(r)

        try:
            while pending or in_flight:
                submit()
                if not in_flight:
                    break  # out of time
                collect(0.5)
        except KeyboardInterrupt as e:
            run.interrupt = e
            for ref in list(in_flight):
                ray.cancel(ref, force=False)  # KeyboardInterrupt in the task: partial counts come back
            since = time.monotonic()
            try:
                while in_flight and time.monotonic() - since < CANCEL_GRACE_S:
                    collect(0.5)
            except KeyboardInterrupt:
                pass
            for ref in list(in_flight):
                ray.cancel(ref, force=True)
                run.not_run.append(in_flight.pop(ref)[0])
    finally:
        run.not_run += [s for s, _ in pending]
        if own:
            ray.shutdown()
        run.elapsed_s = time.perf_counter() - start
    return run
