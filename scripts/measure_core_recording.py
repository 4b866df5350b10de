"""What tracing costs inside the core processes: CPU time per launch per core, plain and traced.

Runs the same batch twice in one run, plain and with ``--racecheck``, alternating ``--rounds`` times,
and in every core process measures with the process clock (``time.process_time``, so a loaded
machine inflates it far less than wall time) how long each launch took on that core
(``mpnpu.runtime.core.run_launch``: the kernel, its tracing, and packing its events to ship), how
much of that was packing (``PackedEvents.pack``), and how many events the core recorded (a compiled
kernel's: its records). Prints per
core and mode the means over the launches, and the traced/plain ratio of the CPU per launch.

This is the recording half of racecheck's cost (docs/racecheck-speed.md); the parent's analysis is
the other half (``scripts/bench_racecheck.py`` times the whole batch).

    python scripts/measure_core_recording.py [--op floms] [--cases 20] [--repeat 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import mpnpu.runtime.core as core
import mpnpu.runtime.trace as trace
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.operators.registry import load_operator


def _instrument(out_dir: str) -> None:
    """Wrap run_launch and PackedEvents.pack (inherited by the core processes the batch forks): each
    core process writes its running totals to ``out_dir/<mode>-<pid>.json`` after every launch."""
    real_launch = core.run_launch
    real_pack = trace.PackedEvents.pack.__func__  # type: ignore[attr-defined]
    totals: dict[str, Any] = {"launches": 0, "cpu_s": 0.0, "pack_s": 0.0, "events": 0}

    def pack(cls: type, events: Any) -> Any:
        t = time.process_time()
        packed = real_pack(cls, events)
        totals["pack_s"] += time.process_time() - t
        totals["events"] += len(packed)  # (records, for a compiled kernel's: counted from their layout)
        return packed

    def run_launch(ctx: Any, command: Any) -> Any:
        t = time.process_time()
        try:
            return real_launch(ctx, command)
        finally:
            totals["cpu_s"] += time.process_time() - t
            totals["launches"] += 1
            mode = os.environ.get("MEASURE_MODE", "?")
            # (a name of this process's own: a pid may come again in a later round's pool)
            token = totals.setdefault("token", f"{os.getpid()}-{time.monotonic_ns()}")
            with open(os.path.join(out_dir, f"{mode}-{token}.json"), "w") as f:
                json.dump(totals, f)

    trace.PackedEvents.pack = classmethod(pack)  # type: ignore[method-assign,assignment]
    core.run_launch = run_launch  # type: ignore[assignment]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--op", default="floms", help="the operator (default %(default)s)")
    p.add_argument("--cases", type=int, default=20)
    p.add_argument("--repeat", type=int, default=4)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    op = load_operator(args.op)
    with tempfile.TemporaryDirectory(prefix="mpnpu-core-rec-") as out:
        _instrument(out)
        for _ in range(args.rounds):
            for mode in ("plain", "traced"):
                os.environ["MEASURE_MODE"] = mode
                # a fresh batch (and device) per mode: its core processes start with zero totals
                run_batch(op, cases=args.cases, repeat=args.repeat, variants=make_variants(op, ("incident",)),
                          racecheck=mode == "traced")
        per_mode: dict[str, list[dict[str, Any]]] = {"plain": [], "traced": []}
        for name in sorted(os.listdir(out)):
            mode = name.split("-", 1)[0]
            with open(os.path.join(out, name)) as f:
                per_mode.setdefault(mode, []).append(json.load(f))
    cpu = {}
    for mode, cores in per_mode.items():
        launches = sum(c["launches"] for c in cores)
        if not launches:
            continue
        cpu[mode] = sum(c["cpu_s"] for c in cores) / launches * 1e3
        pack = sum(c["pack_s"] for c in cores) / launches * 1e3
        events = sum(c["events"] for c in cores) / launches
        print(f"{args.op} {mode:6}: {cpu[mode]:.2f} ms CPU per launch per core ({launches} core-launches), "
              f"packing {pack:.2f} ms, {events:.0f} events")
    if "plain" in cpu and "traced" in cpu:
        extra = cpu["traced"] - cpu["plain"]
        events = statistics.mean(c["events"] / max(1, c["launches"]) for c in per_mode["traced"])
        print(f"traced/plain {cpu['traced'] / cpu['plain']:.2f}x; {extra:.2f} ms more per launch per core, "
              f"{extra / max(1.0, events) * 1e3:.1f} us per recorded event")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
