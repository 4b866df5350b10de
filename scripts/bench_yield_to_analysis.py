"""What a core's yield to racecheck's analysis process costs, with and without the analysis giving its
CPU back often (mpnpu.racecheck.worker: YIELD_EVERY_S).

A waiting core yields its CPU between looks (mpnpu.runtime.spin). When the only other process that
may run there is a busy ``nice`` 19 one (the analysis), the yield hands it the CPU until the
scheduler's next tick. This pins a yielding process and a busy ``nice`` 19 process to one CPU, both
ways in one run, and prints how long the yields took back (median, 99.9th percentile, longest) and
the ratio of the long ones::

    python scripts/bench_yield_to_analysis.py [--seconds 2] [--cpu 0]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

from mpnpu.racecheck.worker import NICENESS, YIELD_EVERY_S, _YieldingOften


def busy_child(seconds: float, yielding: bool) -> int:
    """Fork a process at ``nice`` NICENESS that computes for ``seconds`` (giving its CPU back every
    YIELD_EVERY_S when ``yielding``); its pid."""
    pid = os.fork()
    if pid:
        return pid
    try:
        os.nice(NICENESS)
        end = time.monotonic() + seconds
        with _YieldingOften(YIELD_EVERY_S) if yielding else contextlib.nullcontext():
            while time.monotonic() < end:
                pass
    finally:
        os._exit(0)


def yield_gaps(seconds: float) -> list[float]:
    """How long each sched_yield of this process took, for ``seconds``, sorted."""
    gaps = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        os.sched_yield()
        gaps.append(time.perf_counter() - t)
    return sorted(gaps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="how long each way yields (default 2)")
    parser.add_argument("--cpu", type=int, default=0, help="the CPU both processes are pinned to (default 0)")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    rows = {}
    for yielding in (False, True):
        child = busy_child(args.seconds + 1.0, yielding)
        try:
            time.sleep(0.2)  # (the child is at work: its priority lowered, its timer armed)
            gaps = yield_gaps(args.seconds)
        finally:
            os.waitpid(child, 0)
        rows[yielding] = (gaps[len(gaps) // 2], gaps[int(len(gaps) * 0.999)], gaps[-1])
        print(f"analysis {'gives its CPU back' if yielding else 'keeps its CPU'}: {len(gaps)} yields, median "
              f"{rows[yielding][0] * 1e6:.1f} us, 99.9th percentile {rows[yielding][1] * 1e3:.2f} ms, "
              f"longest {rows[yielding][2] * 1e3:.2f} ms")
    print(f"longest yield, keeps / gives back: {rows[False][2] / rows[True][2]:.1f}x; "
          f"99.9th percentile: {rows[False][1] / rows[True][1]:.1f}x")


if __name__ == "__main__":
    main()
