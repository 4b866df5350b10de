#!/usr/bin/env python
"""Runtime overhead, measured side by side with the bare multiprocessing primitive it wraps.

Prints three ratios (lower is better), each from the same run on the same machine:

- launch:  empty-kernel Device.launch (block_dim 2: 6 core processes) vs a bare pipe round trip
           to 6 forked processes (send a message to each, wait for each reply). Target <= 1.5x.
- SyncAll: one mpnpu sync_all() round among all cores vs a bare multiprocessing.Barrier.wait
           round with the same number of parties. Target <= 1.3x.
- flag:    a cross-core flag round trip (cube sets flag mode 2 -> both vector cores wait, both set
           -> cube waits) vs the same pattern on bare multiprocessing.Semaphores. Target <= 1.3x.

Each measurement lasts a few hundred milliseconds: shorter ones mostly measure how the OS scheduler
spreads freshly woken processes over the CPUs, not the primitive. Each is repeated in alternating rounds (mpnpu, then bare, back to back); the ratio is
the median of the per-round ratios, so that load drifting on a shared machine hits both sides of
each pair alike. Run: python scripts/bench_runtime.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from mpnpu import api  # noqa: E402
from mpnpu.device import Device  # noqa: E402

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


def _echo(conn) -> None:
    while True:
        msg = conn.recv_bytes()
        if msg == b"exit":
            return
        conn.send_bytes(b"ok")


def bare_pipe_round_trip(n_procs: int, iters: int) -> float:
    pairs = [CTX.Pipe() for _ in range(n_procs)]
    procs = [CTX.Process(target=_echo, args=(child,), daemon=True) for _, child in pairs]
    for p in procs:
        p.start()
    conns = [parent for parent, _ in pairs]
    try:
        for c in conns:  # warm up
            c.send_bytes(b"go")
        for c in conns:
            c.recv_bytes()
        start = time.perf_counter()
        for _ in range(iters):
            for c in conns:
                c.send_bytes(b"go")
            for c in conns:
                c.recv_bytes()
        return (time.perf_counter() - start) / iters
    finally:
        for c in conns:
            c.send_bytes(b"exit")
        for p in procs:
            p.join(5)


def _barrier_worker(barrier, rounds: int, out) -> None:
    barrier.wait(10)
    start = time.perf_counter()
    for _ in range(rounds):
        barrier.wait(10)
    out.put(time.perf_counter() - start)


def bare_barrier_round(parties: int, rounds: int) -> float:
    barrier = CTX.Barrier(parties)
    out = CTX.Queue()
    procs = [CTX.Process(target=_barrier_worker, args=(barrier, rounds, out), daemon=True) for _ in range(parties)]
    for p in procs:
        p.start()
    times = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(5)
    return statistics.median(times) / rounds


def _sem_cube(to_vec, from_vec, rounds: int, out) -> None:
    start = time.perf_counter()
    for _ in range(rounds):
        for s in to_vec:
            s.release()
        for s in from_vec:
            s.acquire(timeout=10)
    out.put(time.perf_counter() - start)


def _sem_vector(mine, back, rounds: int) -> None:
    for _ in range(rounds):
        mine.acquire(timeout=10)
        back.release()


def bare_semaphore_round_trip(rounds: int) -> float:
    to_vec = [CTX.Semaphore(0), CTX.Semaphore(0)]
    from_vec = [CTX.Semaphore(0), CTX.Semaphore(0)]
    out = CTX.Queue()
    procs = [CTX.Process(target=_sem_vector, args=(to_vec[i], from_vec[i], rounds), daemon=True) for i in range(2)]
    procs.append(CTX.Process(target=_sem_cube, args=(to_vec, from_vec, rounds, out), daemon=True))
    for p in procs:
        p.start()
    t = out.get(timeout=60)
    for p in procs:
        p.join(5)
    return t / rounds


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
        n = dev2.topology.n_cores
        for _ in range(args.rounds):
            results["launch"][0].append(mpnpu_launch(dev2, args.iters))
            results["launch"][1].append(bare_pipe_round_trip(n, args.iters))
            results["sync_all"][0].append(mpnpu_sync_all_round(dev2, args.sync_rounds))
            results["sync_all"][1].append(bare_barrier_round(n, args.sync_rounds))
            results["flag"][0].append(mpnpu_flag_round_trip(dev1, args.flag_rounds))
            results["flag"][1].append(bare_semaphore_round_trip(args.flag_rounds))

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
        print(f"{labels[key]:<74} {m * 1e6:8.1f}us {b * 1e6:8.1f}us {ratio:6.2f}x {'<=' + str(targets[key]):>6}{'' if ok else '  MISSED'}")
    print(f"(times: medians of {args.rounds} alternating rounds; ratio: median of the "
          f"per-round ratios; CPUs: {len(os.sched_getaffinity(0))})")
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main())
