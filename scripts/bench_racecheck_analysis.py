"""Time the race detector's analysis on synthetic traces shaped like the FLOMS kernel (docs/operator-floms.md).

No processes: the trace is built directly, with the access pattern of the real kernel —
InitOutputAndWorkspace (vector) / S0 / TargetProcess (vector) / S1 / CVProcess (cube computes
ping-pong tiles from 2D input and weight tiles, one range per row; mode-2 flag 5 hands a tile to
its two vector cores, flags 6/7 hand the buffer back; vectors gather via masked_target, atomically
add into predicted_logits and update their online max/sum) / S2 / AllReduceProcess (vector).

Each size runs twice: with S1 (no hazard expected) and with S1 dropped (the incident's RAW on
masked_target). Prints events, accesses, byte ranges, hazards, the analysis time per launch
(median) and, for scale, the time Python took to build the trace's event objects (a lower bound
on what recording them costs the runtime).

    /work/venv/bin/python scripts/bench_racecheck_analysis.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from mpnpu.racecheck import analyze
from mpnpu.report.hazards import format_hazards
from mpnpu.runtime.topology import Topology
from mpnpu.runtime.trace import (
    ATOMIC,
    READ,
    WRITE,
    Access,
    DroppedSyncEvent,
    FlagSetEvent,
    FlagWaitEvent,
    LaunchTrace,
    StageEvent,
    SyncAllEvent,
)

BASE_M, BASE_N, BASE_K = 128, 256, 64


class _Gm:
    """Lays tensors out in segments and makes Access records for row-major 2D views."""

    def __init__(self) -> None:
        self.tensors: dict[str, tuple[str, int, int, int]] = {}  # name -> segment, offset, row elems, itemsize
        self._top: dict[str, int] = defaultdict(int)

    def alloc(self, name: str, segment: str, rows: int, cols: int, itemsize: int) -> None:
        off = self._top[segment]
        self.tensors[name] = (segment, off, cols, itemsize)
        self._top[segment] = off + (rows * cols * itemsize + 511) // 512 * 512

    def access(self, kind: str, name: str, r0: int, r1: int, c0: int, c1: int, stage: str, line: int) -> Access:
        seg, off, cols, isz = self.tensors[name]
        if c0 == 0 and c1 == cols:  # whole rows: one contiguous range
            ranges = ((off + r0 * cols * isz, off + r1 * cols * isz),)
        else:
            ranges = tuple((off + (r * cols + c0) * isz, off + (r * cols + c1) * isz) for r in range(r0, r1))
        root = name.split("[")[0]
        return Access(kind, root, seg, ranges, off, isz, stage, f"kernel.py:{line}")


def floms_trace(block_dim: int, bt: int, v: int, h: int, drop_s1: bool, chunks_per_tile: int = 2) -> LaunchTrace:
    """A trace of one FLOMS launch with the kernel's access and sync pattern."""
    topo = Topology(block_dim)
    gm = _Gm()
    gm.alloc("input", "gm", bt, h, 2)
    gm.alloc("weight", "gm", v, h, 2)
    gm.alloc("target", "gm", 1, bt, 4)
    gm.alloc("masked_target", "gm", 1, bt, 4)
    gm.alloc("target_mask", "gm", 1, (bt + 7) // 8, 1)
    for out in ("predicted_logits", "logits_max", "sum_exp_logits"):
        gm.alloc(out, "gm", 1, bt, 4)
    for k in range(block_dim):
        for b in range(2):
            gm.alloc(f"workspace.tile_buf{k}_{b}", "ws", BASE_M, BASE_N, 2)
        gm.alloc(f"workspace.max{k}", "ws", 1, bt, 4)
        gm.alloc(f"workspace.sum{k}", "ws", 1, bt, 4)
    ev: dict[int, list] = defaultdict(list)
    nv = topo.n_vector

    def rows_of(vi: int, n: int, align: int = 8) -> tuple[int, int]:
        per = -(-n // nv // align) * align
        return min(vi * per, n), min((vi + 1) * per, n)

    def sync_point(name: str, stage: str, dropped: bool) -> None:
        for c in topo.all_ids:
            ev[c].append(DroppedSyncEvent(name, "sync_all", stage, "kernel.py:90") if dropped
                         else SyncAllEvent(False, name, stage, "kernel.py:90"))

    # 1. InitOutputAndWorkspace (vector)
    st = "InitOutputAndWorkspace"
    for vi in range(nv):
        c = topo.vector_id(vi)
        r0, r1 = rows_of(vi, bt)
        ev[c] += [StageEvent(st, "kernel.py:100"), gm.access(WRITE, "predicted_logits", 0, 1, r0, r1, st, 101)]
        if vi % 2 == 0:  # one vector core per AI core initialises its cube's partials
            k = topo.core(c).ai_core
            ev[c] += [gm.access(WRITE, f"workspace.max{k}", 0, 1, 0, bt, st, 102),
                      gm.access(WRITE, f"workspace.sum{k}", 0, 1, 0, bt, st, 103)]
    sync_point("S0", st, False)

    # 2. TargetProcess (vector), 64-row chunks
    st = "TargetProcess"
    for vi in range(nv):
        c = topo.vector_id(vi)
        ev[c].append(StageEvent(st, "kernel.py:110"))
        r0, r1 = rows_of(vi, bt)
        for a in range(r0, r1, 64):
            b = min(a + 64, r1)
            ev[c] += [gm.access(READ, "target", 0, 1, a, b, st, 111),
                      gm.access(WRITE, "masked_target", 0, 1, a, b, st, 120),
                      gm.access(WRITE, "target_mask", 0, 1, a // 8, -(-b // 8), st, 121)]
    sync_point("S1", st, drop_s1)

    # 3. CVProcess: tiles dealt round-robin to cube cores
    st = "CVProcess"
    for c in topo.all_ids:
        ev[c].append(StageEvent(st, "kernel.py:130"))
    tiles = [(m, n) for m in range(0, bt, BASE_M) for n in range(0, v, BASE_N)]
    for k in range(block_dim):
        mine = tiles[k::block_dim]
        vecs = topo.vector_ids_of(k)
        for t, (m0, n0) in enumerate(mine):
            m1, n1 = min(m0 + BASE_M, bt), min(n0 + BASE_N, v)
            buf = f"workspace.tile_buf{k}_{t % 2}"
            if t >= 2:  # buffer reuse: wait until both vector cores released it
                ev[k].append(FlagWaitEvent(2, 6 + t % 2, "", st, "kernel.py:140"))
            for k0 in range(0, h, BASE_K):
                k1 = min(k0 + BASE_K, h)
                ev[k] += [gm.access(READ, "input", m0, m1, k0, k1, st, 141),
                          gm.access(READ, "weight", n0, n1, k0, k1, st, 142)]
            ev[k] += [gm.access(WRITE, buf, 0, m1 - m0, 0, n1 - n0, st, 143),
                      FlagSetEvent(2, 5, "", st, "kernel.py:144")]
            half = -(-(m1 - m0) // 2)
            for sub, c in enumerate(vecs):
                lo, hi = sub * half, min((sub + 1) * half, m1 - m0)
                ev[c].append(FlagWaitEvent(2, 5, "", st, "kernel.py:150"))
                step = -(-(hi - lo) // chunks_per_tile) if hi > lo else 1
                for a in range(lo, hi, step):
                    b = min(a + step, hi)
                    ev[c] += [gm.access(READ, buf, a, b, 0, n1 - n0, st, 151),
                              gm.access(READ, "masked_target", 0, 1, m0 + a, m0 + b, st, 201),
                              gm.access(ATOMIC, "predicted_logits", 0, 1, m0 + a, m0 + b, st, 202),
                              gm.access(READ, f"workspace.max{k}", 0, 1, m0 + a, m0 + b, st, 203),
                              gm.access(READ, f"workspace.sum{k}", 0, 1, m0 + a, m0 + b, st, 204),
                              gm.access(WRITE, f"workspace.max{k}", 0, 1, m0 + a, m0 + b, st, 205),
                              gm.access(WRITE, f"workspace.sum{k}", 0, 1, m0 + a, m0 + b, st, 206)]
                ev[c].append(FlagSetEvent(2, 6 + t % 2, "", st, "kernel.py:207"))
    sync_point("S2", st, False)

    # 4. AllReduceProcess (vector): merge every cube core's partials for my rows
    st = "AllReduceProcess"
    for vi in range(nv):
        c = topo.vector_id(vi)
        ev[c].append(StageEvent(st, "kernel.py:300"))
        r0, r1 = rows_of(vi, bt)
        for k in range(block_dim):
            ev[c] += [gm.access(READ, f"workspace.max{k}", 0, 1, r0, r1, st, 301),
                      gm.access(READ, f"workspace.sum{k}", 0, 1, r0, r1, st, 302)]
        ev[c] += [gm.access(READ, "predicted_logits", 0, 1, r0, r1, st, 303),
                  gm.access(WRITE, "predicted_logits", 0, 1, r0, r1, st, 304),
                  gm.access(WRITE, "logits_max", 0, 1, r0, r1, st, 305),
                  gm.access(WRITE, "sum_exp_logits", 0, 1, r0, r1, st, 306)]
    events = tuple(tuple(ev[c]) for c in topo.all_ids)
    return LaunchTrace(block_dim, "floms", events, frozenset({"S1"}) if drop_s1 else frozenset())


def _stats(trace: LaunchTrace) -> tuple[int, int, int]:
    n_ev = sum(len(e) for e in trace.events)
    accs = [x for e in trace.events for x in e if isinstance(x, Access)]
    return n_ev, len(accs), sum(len(a.ranges) for a in accs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed analyses per trace (median reported)")
    ap.add_argument("--show", action="store_true", help="print the hazard report of the racy 6-core trace")
    args = ap.parse_args()
    sizes = [
        ("6 cores (block_dim 2)", dict(block_dim=2, bt=1024, v=2048, h=512)),
        ("72 cores (block_dim 24)", dict(block_dim=24, bt=2048, v=6144, h=256)),
    ]
    print(f"{'trace':<26}{'S1':>8}{'events':>9}{'accesses':>10}{'ranges':>9}{'hazards':>9}{'pairs':>8}"
          f"{'ms/launch':>11}{'build ms':>10}")
    for label, kw in sizes:
        for drop in (False, True):
            t0 = time.perf_counter()
            trace = floms_trace(drop_s1=drop, **kw)
            build_ms = (time.perf_counter() - t0) * 1e3
            n_ev, n_acc, n_rng = _stats(trace)
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                hz = analyze(trace)
                times.append(time.perf_counter() - t0)
            ms = sorted(times)[len(times) // 2] * 1e3
            print(f"{label:<26}{'dropped' if drop else 'kept':>8}{n_ev:>9}{n_acc:>10}{n_rng:>9}{len(hz):>9}"
                  f"{sum(h.count for h in hz):>8}{ms:>11.1f}{build_ms:>10.1f}")
            if args.show and drop and kw["block_dim"] == 2:
                print(format_hazards(hz))


if __name__ == "__main__":
    main()
