#!/usr/bin/env python
"""Every fault case the tools must end cleanly, rerun: exit status, seconds to exit, the message,
and what was left behind.

Each case runs as a command of its own (in a session of its own, so that an interruption is sent to
its whole process group as a terminal would send it). For each the table gives the exit status, the
seconds from start to exit (from the signal, for an interruption), the first line of what the
command printed on stderr (stdout when stderr is empty), the ``/dev/shm`` entries of its processes
that appeared and stayed, and the processes the command started that are still alive after it ended (every
descendant seen while it ran). Run: ``python scripts/measure_faults.py [--only NAME,...] [--json PATH]``.

The C++ programs are this repository's own test programs (tests/ascendc_kernels/), built here with
``python -m mpnpu.ascendc --cflags --libs``; no kernel is changed to make a case fail.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
KERNELS = os.path.join(REPO, "tests", "ascendc_kernels")
PY = sys.executable


@dataclass
class Case:
    """One fault case: the command, the environment it adds, and when to interrupt it (never: None)."""

    name: str
    argv: Callable[[str], list[str]]  # from the build folder
    env: dict[str, str] = field(default_factory=dict)
    interrupt: int | None = None  # the signal to send once the command is busy
    busy_cpu_s: float = 0.5  # the CPU time its processes must have spent before the signal
    timeout_s: float = 400.0


def _program(name: str, out: str, *cflags: str) -> str:
    exe = os.path.join(out, name.replace(".cpp", "") + "".join(cflags))
    if not os.path.exists(exe):
        flags = subprocess.run([PY, "-m", "mpnpu.ascendc", "--cflags", "--libs"], capture_output=True, text=True,
                               check=True).stdout.split()
        subprocess.run([os.environ.get("CXX", "g++"), *cflags, os.path.join(KERNELS, "cpudebug", name), *flags,
                        "-o", exe], check=True, capture_output=True, text=True)
    return exe


def _line(path: str, text: str) -> int:
    with open(os.path.join(KERNELS, path)) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def cases() -> list[Case]:
    two_phase_sync = f"two_phase.cpp:{_line('two_phase.cpp', 'SyncAll();')}"
    sample = os.path.join(KERNELS, "sample", "scale_add.asc")
    return [
        Case("cpudebug: Ctrl-C while ICPU_RUN_KF repeats",
             lambda d: [_program("test_two_phase.cpp", d)], {"MPNPU_REPEAT": "1000000"}, signal.SIGINT),
        Case("cpudebug: SIGTERM while ICPU_RUN_KF repeats",
             lambda d: [_program("test_two_phase.cpp", d)], {"MPNPU_REPEAT": "1000000"}, signal.SIGTERM),
        Case("cpudebug: MPNPU_DROP_SYNC=S1 (not FILE:LINE)",
             lambda d: [_program("test_two_phase.cpp", d)], {"MPNPU_DROP_SYNC": "S1"}),
        Case("cpudebug: MPNPU_DROP_SYNC at a line with no sync",
             lambda d: [_program("test_two_phase.cpp", d)], {"MPNPU_DROP_SYNC": "two_phase.cpp:1",
                                                              "MPNPU_RACECHECK": "1"}),
        Case("cpudebug: MPNPU_DROP_SYNC of a file the program does not include",
             lambda d: [_program("test_two_phase.cpp", d)], {"MPNPU_DROP_SYNC": "nofile.cpp:3"}),
        Case("cpudebug: MPNPU_DROP_SYNC of the SyncAll, racecheck fail",
             lambda d: [_program("test_two_phase.cpp", d)], {"MPNPU_DROP_SYNC": two_phase_sync,
                                                              "MPNPU_RACECHECK": "fail"}),
        Case("cpudebug: a flag wait nothing sets",
             lambda d: [_program("test_deadlock.cpp", d)]),
        Case("cpudebug: raw read 100 floats past a GmAlloc block",
             lambda d: [_program("test_raw_overrun.cpp", d), "100"]),
        Case("cpudebug: raw read 400000 floats past a GmAlloc block",
             lambda d: [_program("test_raw_overrun.cpp", d), "400000"]),
        Case("cpudebug: raw read 100 floats past a GmAlloc block, program built with -g",
             lambda d: [_program("test_raw_overrun.cpp", d, "-g"), "100"]),
        Case("cpudebug: MPNPU_PIPES=fast",
             lambda d: [_program("test_two_phase.cpp", d)], {"MPNPU_PIPES": "fast"}),
        Case("batch: Ctrl-C mid-batch",
             lambda d: [PY, "-m", "mpnpu", "batch", "--op", "floms", "--cases", "400", "--repeat", "20"],
             interrupt=signal.SIGINT, busy_cpu_s=6.0),
        Case("run: Ctrl-C mid-repeats",
             lambda d: [PY, "-m", "mpnpu", "run", sample, *_sample_words(d), "--block-dim", "8", "--repeat", "100000"],
             interrupt=signal.SIGINT, busy_cpu_s=6.0),
        Case("run: --drop-sync of a line with no sync",
             lambda d: [PY, "-m", "mpnpu", "run", sample, *_sample_words(d), "--block-dim", "8",
                        "--drop-sync", "scale_add.asc:1"]),
        Case("run: a kernel argument that is no file",
             lambda d: [PY, "-m", "mpnpu", "run", sample, "in:/nonexistent.bin:float32"]),
        *(Case(f"run: hangs.cpp mode {mode} ({what})",
               lambda d, mode=mode, timeout=timeout: [PY, "-m", "mpnpu", "run", os.path.join(KERNELS, "hangs.cpp"),
                                                      f"u32:{mode}", "u32:1", *timeout])
          for mode, what, timeout in (
              (1, "a flag wait nothing sets", []),
              (2, "a mode-1 flag wait that needs its own set", []),
              (3, "a core spins after its last API call while the others wait in SyncAll", []),
              (3, "the same with --timeout 10", ["--timeout", "10"]),
              (4, "a core spins before its first API call, the others finish", []))),
        Case("run: block_sync.cpp mode 5, 49 blocks on 48 vector cores (a wait across waves)",
             lambda d: [PY, "-m", "mpnpu", "run", os.path.join(KERNELS, "block_sync.cpp:block_sync"),
                        "gm:float32:8:0", "gm:float32:400:0", "gm:int32:4096:0", "i32:5", "i32:1", "i32:1",
                        "--block-dim", "49"]),
        Case("batch: --block-dim 0",
             lambda d: [PY, "-m", "mpnpu", "batch", "--op", "floms", "--block-dim", "0"]),
    ]


def _sample_words(d: str) -> list[str]:
    """scale_add.asc's arguments, its inputs written once into ``d``."""
    import numpy as np

    x, y = os.path.join(d, "x.bin"), os.path.join(d, "y.bin")
    if not os.path.exists(x):
        rng = np.random.default_rng(0)
        rng.uniform(1, 10, 8 * 2048).astype(np.float32).tofile(x)
        rng.uniform(1, 10, 8 * 2048).astype(np.float32).tofile(y)
    return [f"in:{x}:float32", f"in:{y}:float32", f"out:{d}/z.bin:float32:16384", f"out:{d}/peek.bin:float32:2048",
            "u32:16384"]


def _shm() -> set[str]:
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


def run_case(case: Case, build: str) -> dict[str, object]:
    argv = case.argv(build)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPNPU_") or k == "MPNPU_CACHE_DIR"}
    env.update(case.env)
    before = _shm()
    seen: dict[int, psutil.Process] = {}
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, cwd=build)
    top = psutil.Process(proc.pid)
    signalled = None

    def watch() -> float:
        cpu = 0.0
        try:
            kids = top.children(recursive=True)
        except psutil.Error:
            return cpu
        for k in kids:
            seen.setdefault(k.pid, k)
        for p in (top, *kids):
            try:
                t = p.cpu_times()
                cpu += t.user + t.system
            except psutil.Error:
                pass
        return cpu

    while proc.poll() is None and time.monotonic() - start < case.timeout_s:
        cpu = watch()
        if case.interrupt is not None and signalled is None and cpu >= case.busy_cpu_s:
            os.killpg(proc.pid, case.interrupt)
            signalled = time.monotonic()
        time.sleep(0.05)
    timed_out = proc.poll() is None
    if timed_out:
        os.killpg(proc.pid, signal.SIGKILL)
    out, err = proc.communicate()
    end = time.monotonic()
    time.sleep(0.5)  # (what a clean exit ends, it ends before returning; give stragglers a moment)
    alive = [pid for pid, p in seen.items() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    # (only segments of this command's processes: mpnpu names them mpnpu_<pid>_...; others may run beside it)
    mine = {proc.pid, *seen}
    left = sorted(e for e in _shm() - before
                  if not e.startswith("mpnpu_") or int(e.split("_")[1]) in mine)
    text = (err.strip() or out.strip()).splitlines()
    return {
        "case": case.name, "exit": proc.returncode if not timed_out else "timeout",
        "seconds": round(end - (signalled or start), 2),
        "message": text[0] if text else "", "lines": len(text),
        "traceback": "Traceback" in err, "shm_left": left, "processes_left": alive,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated substrings of case names to run")
    ap.add_argument("--json", default="", help="write the rows here too")
    args = ap.parse_args()
    wanted = [w for w in args.only.split(",") if w]
    # Started in the background of a shell without job control (cmd &), this script inherits SIGINT
    # ignored, and so would every case it starts (an ignored signal stays ignored across exec): the
    # Ctrl-C cases would measure nothing. A handler of our own is reset to the default in each child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rows = []
    with tempfile.TemporaryDirectory() as build:
        for case in cases():
            if wanted and not any(w in case.name for w in wanted):
                continue
            row = run_case(case, build)
            rows.append(row)
            left = "nothing" if not row["shm_left"] and not row["processes_left"] else \
                f"shm {row['shm_left']} pids {row['processes_left']}"
            print(f"{row['case']:<55} exit {row['exit']!s:<4} {row['seconds']:>7.2f} s  left: {left}", flush=True)
            print(f"    {row['message'][:240]}" + (f"  (+{row['lines'] - 1} lines)" if row["lines"] > 1 else "")
                  + ("  TRACEBACK" if row["traceback"] else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
