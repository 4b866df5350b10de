#!/usr/bin/env python
"""Runtime overhead, measured side by side with the bare multiprocessing primitive it wraps.

Prints three ratios (lower is better), each from the same run on the same machine:

- launch:  empty-kernel Device.launch (block_dim 2: 6 core processes) vs a bare pipe round trip
           to 6 worker processes (send a message to each, wait for each reply). Target <= 1.5x.
- SyncAll: one mpnpu sync_all() round among all cores vs a bare multiprocessing.Barrier.wait
           round with the same number of parties. Target <= 1.3x.
- flag:    a cross-core flag round trip (cube sets flag mode 2 -> both vector cores wait, both set
           -> cube waits) vs the same pattern on bare multiprocessing.Semaphores. Target <= 1.3x.

The bare side runs in a pool of worker processes forked once and reused, as mpnpu's core pool
is, so both sides run in long-lived processes (freshly forked ones get placed on idle CPUs by the
fork balancer and measure faster for a while). Each measurement lasts a few hundred milliseconds:
shorter ones mostly measure how the OS scheduler spreads freshly woken processes over the CPUs,
not the primitive. Each is repeated in alternating rounds (mpnpu, then bare, back to back); the
ratio is the median of the per-round ratios, so that load drifting on a shared machine hits both sides of
each pair alike. Run: python scripts/bench_runtime.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

from mpnpu import api
from mpnpu.runtime.device import Device

CTX = mp.get_context("fork")


# -- kernels (run by mpnpu) --------------------------------------------------------------------


def empty_kernel() -> None:
    pass


def sync_all_kernel(rounds: int) -> None:
    for _ in range(rounds):
        api.sync_all()


def flag_kernel(rounds: int) -> None:
    if api.is_aic():
        for _ in range(rounds):
            api.cross_core_set_flag(5, mode=2)
            api.cross_core_wait_flag(6, mode=2)
    else:
        for _ in range(rounds):
            api.cross_core_wait_flag(5, mode=2)
            api.cross_core_set_flag(6, mode=2)


# -- bare equivalents --------------------------------------------------------------------------


def _bare_worker(index: int, conn, barrier, to_vec, from_vec) -> None:
    """A bare worker: no mpnpu, just the primitive, driven by commands like a core process."""
    while True:
        msg = conn.recv_bytes()
        if msg == b"go":
            conn.send_bytes(b"ok")
        elif msg == b"exit":
            return
        else:
            kind, rounds = msg.decode().split()
            rounds = int(rounds)
            start = time.perf_counter()
            if kind == "barrier":
                for _ in range(rounds):
                    barrier.wait(10)
            elif kind == "sem" and index == 0:  # the "cube": release both, take both
                for _ in range(rounds):
                    for s in to_vec:
                        s.release()
                    for s in from_vec:
                        s.acquire(timeout=10)
            elif kind == "sem" and index in (1, 2):  # the "vectors"
                for _ in range(rounds):
                    to_vec[index - 1].acquire(timeout=10)
                    from_vec[index - 1].release()
            conn.send_bytes(str(time.perf_counter() - start).encode())


class BarePool:
    """Bare worker processes forked once and reused, like mpnpu's core pool, so that both sides
    of every comparison run in long-lived processes that the OS schedules the same way."""

    def __init__(self, n: int) -> None:
        self.barrier = CTX.Barrier(n)
        to_vec = [CTX.Semaphore(0), CTX.Semaphore(0)]
        from_vec = [CTX.Semaphore(0), CTX.Semaphore(0)]
        pairs = [CTX.Pipe() for _ in range(n)]
        self.procs = [CTX.Process(target=_bare_worker, args=(i, child, self.barrier, to_vec, from_vec), daemon=True)
                      for i, (_, child) in enumerate(pairs)]
        for p in self.procs:
            p.start()
        self.conns = [parent for parent, _ in pairs]

    def close(self) -> None:
        for c in self.conns:
            c.send_bytes(b"exit")
        for p in self.procs:
            p.join(5)

    def pipe_round_trip(self, iters: int) -> float:
        """Send a message to every worker and wait for every reply, ``iters`` times."""
        start = time.perf_counter()
        for _ in range(iters):
            for c in self.conns:
                c.send_bytes(b"go")
            for c in self.conns:
                c.recv_bytes()
        return (time.perf_counter() - start) / iters

    def _timed(self, kind: str, rounds: int, workers: list[int]) -> list[float]:
        for i in workers:
            self.conns[i].send_bytes(f"{kind} {rounds}".encode())
        return [float(self.conns[i].recv_bytes()) for i in workers]

    def barrier_round(self, rounds: int) -> float:
        self._timed("barrier", 1, list(range(len(self.conns))))  # absorb the dispatch skew
        return statistics.median(self._timed("barrier", rounds, list(range(len(self.conns))))) / rounds

    def semaphore_round_trip(self, rounds: int) -> float:
        return self._timed("sem", rounds, [0, 1, 2])[0] / rounds  # the "cube" worker's view


# -- mpnpu measurements ------------------------------------------------------------------------


def mpnpu_launch(dev: Device, iters: int) -> float:
    dev.launch(empty_kernel)
    start = time.perf_counter()
    for _ in range(iters):
        dev.launch(empty_kernel)
    return (time.perf_counter() - start) / iters


def mpnpu_sync_all_round(dev: Device, rounds: int) -> float:
    dev.launch(sync_all_kernel, 1)  # the first SyncAll absorbs the dispatch skew
    r = dev.launch(sync_all_kernel, rounds)
    return statistics.median(r.core_elapsed_s) / rounds


def mpnpu_flag_round_trip(dev: Device, rounds: int) -> float:
    r = dev.launch(flag_kernel, rounds)
    return r.core_elapsed_s[0] / rounds  # the cube core's view of a full round trip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="alternating measurement rounds (default 9)")
    parser.add_argument("--iters", type=int, default=300, help="launches per launch measurement (default 300)")
    parser.add_argument("--sync-rounds", type=int, default=2000,
                        help="SyncAll rounds per measurement (default 2000)")
    parser.add_argument("--flag-rounds", type=int, default=20000,
                        help="flag round trips per measurement (default 20000)")
    args = parser.parse_args()

    results: dict[str, tuple[list[float], list[float]]] = {"launch": ([], []), "sync_all": ([], []), "flag": ([], [])}
    with Device(2) as dev2, Device(1) as dev1:
        bare = BarePool(dev2.topology.n_cores)
        try:
            for _ in range(args.rounds):
                results["launch"][0].append(mpnpu_launch(dev2, args.iters))
                results["launch"][1].append(bare.pipe_round_trip(args.iters))
                results["sync_all"][0].append(mpnpu_sync_all_round(dev2, args.sync_rounds))
                results["sync_all"][1].append(bare.barrier_round(args.sync_rounds))
                results["flag"][0].append(mpnpu_flag_round_trip(dev1, args.flag_rounds))
                results["flag"][1].append(bare.semaphore_round_trip(args.flag_rounds))
        finally:
            bare.close()

    targets = {"launch": 1.5, "sync_all": 1.3, "flag": 1.3}
    labels = {
        "launch": "empty launch, block_dim 2 (6 procs) vs bare pipe round trip to 6 procs",
        "sync_all": "SyncAll round, 6 cores vs bare Barrier(6).wait",
        "flag": "flag round trip, mode 2 (1 cube + 2 vector) vs bare Semaphores",
    }
    print(f"{'measurement':<74} {'mpnpu':>10} {'bare':>10} {'ratio':>7} {'target':>7}")
    worst_ok = True
    for key, (ours, bare) in results.items():
        m, b = statistics.median(ours), statistics.median(bare)
        ratio = statistics.median(o / r for o, r in zip(ours, bare))
        ok = ratio <= targets[key]
        worst_ok &= ok
        target, missed = "<=" + str(targets[key]), "" if ok else "  MISSED"
        print(f"{labels[key]:<74} {m * 1e6:8.1f}us {b * 1e6:8.1f}us {ratio:6.2f}x {target:>6}{missed}")
    print(f"(times: medians of {args.rounds} alternating rounds; ratio: median of the "
          f"per-round ratios; CPUs: {len(os.sched_getaffinity(0))})")
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main())
