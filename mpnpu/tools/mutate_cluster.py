"""Mutants as Ray tasks (``mpnpu mutate --cluster``, ``mpnpu ut --mutate-syncs --cluster``).

Each mutant is one :func:`mpnpu.tools.mutate.classify_mutant` call, run as a Ray task on whichever
node has a CPU free; the driver still hands out the places (working directory and environment), so
at most one mutant uses a place at a time, and ``--jobs`` / ``--mutate-jobs`` places are as many
mutants in flight. A mutant runs the program by its path in its place's folder: on a cluster of
several machines every node must see both at the same paths (a shared filesystem), as it must have
mpnpu installed. Without an address an embedded local cluster is started for the run and stopped
after it (a machine's cores used through Ray: the same results as the slots, at Ray's start-up cost).

Ray's own retries are off: a mutant whose worker died is reported as a failed run of mpnpu's (the
mutant is left unclassified with that error as its detail), never silently run twice.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any, Iterator

from mpnpu.scale.cluster import connect
from mpnpu.tools.mutate import Mutant, MutantRunner, Only, classify_mutant

#: how often a waiting driver thread looks whether the run was cancelled
_POLL_S = 0.5


def classify_on_node(argv: list[str], m: Mutant, only: Only, ran: list[str],
                     hazards_without: int | None, cwd: str | None, base: dict[str, str], timeout_s: float) -> Mutant:
    """Body of the Ray task: :func:`classify_mutant`, and which node it ran on."""
    import ray

    got = classify_mutant(argv, m, only, ran, hazards_without, cwd, base, timeout_s)
    got.ran_on = f"ray node {socket.gethostname()} ({ray.get_runtime_context().get_node_id()[:12]})"
    return got


class RayMutants:
    """A :data:`mpnpu.tools.mutate.MutantRunner` that runs each mutant as a Ray task. Use as a context
    manager: connects to the cluster at ``address`` (None or "": an embedded local one, started and
    stopped here), and on leaving cancels whatever still runs."""

    def __init__(self, address: str | None = None) -> None:
        self.address = address or None
        self._ray: Any = None
        self._own = False
        self._task: Any = None
        self._lock = threading.Lock()
        self._in_flight: set[Any] = set()
        self._cancelled = threading.Event()

    def __enter__(self) -> RayMutants:
        ray, self._own = connect(self.address)
        self._ray = ray
        self._task = ray.remote(max_retries=0, num_cpus=1)(classify_on_node)
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()
        if self._own:
            self._ray.shutdown()

    def cancel(self) -> None:
        """Stop every mutant still running (their programs end with the worker's cancellation)."""
        self._cancelled.set()
        with self._lock:
            refs = list(self._in_flight)
        for ref in refs:
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # already finished or gone
                pass

    def __call__(self, argv: list[str], m: Mutant, only: Only, ran: list[str],
                 hazards_without: int | None, cwd: str | None, base: dict[str, str], timeout_s: float) -> Mutant:
        ray = self._ray
        if self._cancelled.is_set():
            return m
        ref = self._task.remote(argv, m, only, ran, hazards_without, cwd, base, timeout_s)
        with self._lock:
            self._in_flight.add(ref)
        try:
            while True:
                ready, _ = ray.wait([ref], timeout=_POLL_S)
                if ready:
                    break
                if self._cancelled.is_set():
                    return m
            try:
                got: Mutant = ray.get(ref)
            except ray.exceptions.RayError as e:  # the worker or its node was lost: say so, classify nothing
                m.detail = f"the Ray task running this mutant failed: {str(e).splitlines()[0] if str(e) else e}"
                return m
            return got
        finally:
            with self._lock:
                self._in_flight.discard(ref)


@contextlib.contextmanager
def mutant_runner(cluster: str | None) -> Iterator[MutantRunner | None]:
    """Where the mutants run: None (this machine's slots) unless --cluster was given (``cluster`` is its
    ADDRESS, "" for an embedded local cluster): then a :class:`RayMutants` for the run."""
    if cluster is None:
        yield None
        return
    with RayMutants(cluster) as runner:
        yield runner
