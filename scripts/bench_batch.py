#!/usr/bin/env python
"""Emulator cost per case next to the CPU golden's, measured side by side on the same cases.

For each of --cases seeded FLOMS cases (default shapes) and each of --rounds rounds, times

- device: the fixed kernel through the emulator, i.e. ``OPERATOR.run`` = to_device + launch + to_host;
- golden: the CPU golden alone (``OPERATOR.golden``), the baseline; ``OPERATOR.prepare`` (golden +
  tolerances, which recomputes max|L|) is printed beside it for reference;

back to back per case, alternating which goes first each round, both with OpenBLAS capped at one
thread in this process (as run_batch does; each core process is single-threaded too). Prints cases
per second through the emulator, golden time per case, and their ratio (target <= 3x), per round and
the median. Also splits the device time: the parent's wall time inside Device.launch, the slowest
core's time inside the kernel function (LaunchResult.core_elapsed_s), and the rest (GM alloc/copies).

    python scripts/bench_batch.py [--cases 50] [--rounds 3] [--block-dim N] [--profile]

--profile runs one more pass of device runs with cProfile on the parent and, through a wrapper
kernel (``profiled_main`` below: cProfile around the unchanged kernel.main, nothing else), in every
core process, and prints the top costs of each side.
"""

from __future__ import annotations

import cProfile
import dataclasses
import io
import os
import pstats
import statistics
import sys
import time

import psutil

from mpnpu import DEFAULT_BLOCK_DIM, Device, RuntimeOptions, api, load_operator
from mpnpu.cli.common import ArgumentParser, run_cli
from mpnpu.cli.options import DEFAULT_OPERATOR, non_negative_int, positive_int
from mpnpu.runtime.core import resolve_kernel
from mpnpu.runtime.procutil import available_cpus, blas_threads
from mpnpu.runtime.topology import CoreType

#: FLOMS, found by name as the tools find it; its kernel, for the profiling wrapper below
OPERATOR = load_operator(DEFAULT_OPERATOR)
KERNEL = resolve_kernel(OPERATOR.kernel)

TARGET_RATIO = 3.0
_PROFILE_DIR_ENV = "MPNPU_BENCH_PROFILE_DIR"


def profiled_main(*args, **kwargs) -> None:
    """The FLOMS kernel under cProfile, dumping one stats file per core and launch.

    Runs in the core processes (launched as "scripts/bench_batch.py:profiled_main"); the directory
    comes from the environment inherited when the device forked its cores.
    """
    directory = os.environ.get(_PROFILE_DIR_ENV)
    if not directory:
        return KERNEL(*args, **kwargs)
    prof = cProfile.Profile()
    prof.enable()
    try:
        KERNEL(*args, **kwargs)
    finally:
        prof.disable()
        kind = "cube" if api.is_aic() else "vector"
        name = f"{kind}-{api.get_block_idx()}-{os.getpid()}-{time.perf_counter_ns()}.prof"
        prof.dump_stats(os.path.join(directory, name))


# The wrapper runs its pipes as the kernel it wraps does (asynchronous for the pipelined FLOMS kernel):
# without the mark the profile would show the in-order engine, not the default batch's.
if getattr(KERNEL, "__mpnpu_pipes__", None):
    profiled_main.__mpnpu_pipes__ = KERNEL.__mpnpu_pipes__


def _core_profiles(dev_factory, cases) -> str:
    """One pass of device runs with every core under cProfile; the top costs per core type."""
    import tempfile

    out = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="mpnpu-bench-") as directory:
        os.environ[_PROFILE_DIR_ENV] = directory
        profiled = dataclasses.replace(OPERATOR, kernel=f"{os.path.abspath(__file__)}:profiled_main")
        try:
            with dev_factory() as dev, blas_threads(1):
                for case in cases:
                    profiled.run(dev, case)
        finally:
            del os.environ[_PROFILE_DIR_ENV]
        for kind in ("cube", "vector"):
            files = [os.path.join(directory, f) for f in sorted(os.listdir(directory)) if f.startswith(kind)]
            if not files:
                continue
            stats = pstats.Stats(files[0], stream=out)
            for f in files[1:]:
                stats.add(f)
            stats.files = []  # no list of dump files in the printout
            total = stats.total_tt
            waiting = sum(tt for (file, _, fn), (_, _, tt, _, _) in stats.stats.items()
                          if "SemLock" in fn and "acquire" in fn)
            out.write(f"\n{kind} cores: {len(files)} kernel runs, {1000 * total / len(cases):.2f} ms per case "
                      f"summed over those cores (profiler overhead included), of which "
                      f"{1000 * waiting / len(cases):.2f} ms blocked in SyncAll / flag waits (SemLock.acquire); "
                      f"top costs by own time:\n")
            stats.sort_stats("tottime").print_stats(12)
    return out.getvalue()


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="python scripts/bench_batch.py",
                       description="Emulator (fixed FLOMS kernel) time per case vs CPU golden time per case.")
    p.add_argument("--cases", type=positive_int, default=50, help="seeded cases, default shapes (default 50)")
    p.add_argument("--rounds", type=positive_int, default=3, help="passes over the cases (default 3)")
    p.add_argument("--block-dim", type=positive_int, default=None,
                   help=f"AI cores (default {DEFAULT_BLOCK_DIM})")
    p.add_argument("--seed", type=non_negative_int, default=0, help="case stream seed (default 0)")
    p.add_argument("--profile", action="store_true", help="cProfile the parent over one extra pass of device runs")
    p.add_argument("--pipes", choices=("kernel", "async", "sync"), default="kernel",
                   help="RuntimeOptions.pipes: 'kernel' (the default batch: FLOMS's pipes asynchronous), "
                        "'sync' (in order, the explicit fast mode) — to measure what asynchronous pipes cost")
    return p


def _cpu_seconds(procs) -> float:
    total = 0.0
    for p in procs:
        t = p.cpu_times()
        total += t.user + t.system
    return total


def _new_totals() -> dict[str, float]:
    return dict.fromkeys(("device", "core_cpu", "launch", "kernel_max_core", "kernel_mean_core"), 0.0)


def _device_run(dev, case, totals: dict[str, float], cores) -> None:
    """One case through the emulator (OPERATOR.run: to_device + launch + to_host), timed."""
    cpu0 = _cpu_seconds(cores)
    t0 = time.perf_counter()
    _, launch = OPERATOR.run(dev, case)
    totals["device"] += time.perf_counter() - t0
    totals["core_cpu"] += _cpu_seconds(cores) - cpu0
    totals["launch"] += launch.elapsed_s
    totals["kernel_max_core"] += max(launch.core_elapsed_s)
    totals["kernel_mean_core"] += sum(launch.core_elapsed_s) / len(launch.core_elapsed_s)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    cases = [OPERATOR.make_case(args.seed, i) for i in range(args.cases)]
    n = len(cases)
    shapes = [c.bt * c.h * c.v for c in cases]
    block_dim = args.block_dim or DEFAULT_BLOCK_DIM
    print(f"bench: {n} FLOMS cases (seed {args.seed}, default shapes: BT*H*V median {statistics.median(shapes):.3g}), "
          f"block_dim {block_dim} ({3 * block_dim} core processes on {len(available_cpus())} CPUs), "
          f"{args.rounds} rounds")
    rows = []  # per round: (device s/case, golden s/case, prepare s/case)
    totals = _new_totals()
    options = RuntimeOptions(pipes=args.pipes)
    if args.pipes != "kernel":
        print(f"pipes: {args.pipes} (not the default batch's)")
    with Device(block_dim, options=options) as dev, blas_threads(1):
        for case in cases[:5]:  # warm-up: first launches import the kernel in every core, fault in GM
            OPERATOR.run(dev, case)
        cores = [psutil.Process(pid) for pid in dev.core_pids()]
        is_cube = [info.core_type is CoreType.CUBE for info in dev.topology.cores]
        cpu_start = [_cpu_seconds([p]) for p in cores]
        for r in range(args.rounds):
            device_before, t_gold, t_prep = totals["device"], 0.0, 0.0
            for case in cases:
                for what in (("device", "golden") if r % 2 == 0 else ("golden", "device")):
                    if what == "device":
                        _device_run(dev, case, totals, cores)
                    else:
                        t0 = time.perf_counter()
                        OPERATOR.golden(case)
                        t1 = time.perf_counter()
                        OPERATOR.prepare(case)
                        t_gold, t_prep = t_gold + t1 - t0, t_prep + time.perf_counter() - t1
            t_dev = totals["device"] - device_before
            rows.append((t_dev / n, t_gold / n, t_prep / n))
            print(f"  round {r + 1}: emulator {n / t_dev:6.1f} cases/s ({1000 * t_dev / n:6.2f} ms/case); "
                  f"golden {1000 * t_gold / n:6.2f} ms/case (prepare {1000 * t_prep / n:6.2f}); "
                  f"ratio {t_dev / t_gold:5.2f}x")
        cpu_by_core = [_cpu_seconds([p]) - c0 for p, c0 in zip(cores, cpu_start)]
        rebuilt = dev.pool_generation != 1
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            for case in cases:
                _device_run(dev, case, _new_totals(), cores)
            prof.disable()
    if args.profile:
        core_text = _core_profiles(lambda: Device(block_dim, options=options), cases)
    dev_ms = statistics.median(r[0] for r in rows) * 1000
    gold_ms = statistics.median(r[1] for r in rows) * 1000
    prep_ms = statistics.median(r[2] for r in rows) * 1000
    ratio = statistics.median(r[0] / r[1] for r in rows)
    total_runs = n * args.rounds
    print(f"median: emulator {1000 / dev_ms:.1f} cases/s ({dev_ms:.2f} ms/case), golden {gold_ms:.2f} ms/case "
          f"(prepare {prep_ms:.2f}), ratio {ratio:.2f}x (target <= {TARGET_RATIO:g}x: "
          f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})")
    if rebuilt:
        print("warning: the core pool was rebuilt during the run; core CPU times are incomplete")
    mean_dev_ms = 1000 * totals["device"] / total_runs
    launch_ms = 1000 * totals["launch"] / total_runs
    print(f"device time split, mean per case ({mean_dev_ms:.2f} ms): inside Device.launch {launch_ms:.2f} ms "
          f"(slowest core inside the kernel {1000 * totals['kernel_max_core'] / total_runs:.2f} ms, mean core "
          f"{1000 * totals['kernel_mean_core'] / total_runs:.2f} ms); GM alloc + copies + host side "
          f"{mean_dev_ms - launch_ms:.2f} ms")
    print(f"CPU time of the {3 * block_dim} core processes: {1000 * totals['core_cpu'] / total_runs:.2f} ms per case "
          f"(cube {1000 * sum(c for c, cube in zip(cpu_by_core, is_cube) if cube) / total_runs:.2f}, vector "
          f"{1000 * sum(c for c, cube in zip(cpu_by_core, is_cube) if not cube) / total_runs:.2f}); the rest "
          f"of the slowest core's time inside the kernel is spent blocked in SyncAll / flag waits or waiting "
          f"for a CPU")
    if args.profile:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
        print("parent profile (one pass of device runs), by own time:")
        print(out.getvalue())
        print(core_text)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="bench_batch"))
