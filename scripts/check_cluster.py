#!/usr/bin/env python
"""Check --cluster end to end as a user meets it: Ctrl-C on a sweep running on an embedded local Ray
cluster keeps the partial counts, exits 130, and leaves no core process and no GM segment behind.

Runs ``python -m mpnpu.stress --cluster ...`` in its own session (as a terminal would), waits until
Ray workers run shards with their core processes up and working, sends SIGINT to the whole process
group (a terminal's Ctrl-C), then checks the exit code, the report and the JSON, and that every
core process seen has ended and no segment created by a worker is left in /dev/shm. Prints what it
saw; exit 0 when everything held.

    python scripts/check_cluster.py
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import psutil

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def main() -> int:
    out = os.path.join(tempfile.mkdtemp(), "partial.json")
    cmd = [sys.executable, "-m", "mpnpu.stress", "--cluster", "--block-dims", "1", "--placements", "none,pack",
           "--chaos", "off", "--cases", "3000", "--time-limit", "inf", "--cpus-per-core", "1", "--json", out]
    print("command:", " ".join(cmd[1:]))
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    workers: dict[int, psutil.Process] = {}
    cores: dict[int, psutil.Process] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for p in psutil.process_iter(["cmdline"]):
                try:
                    if "ray::run_shard_task" in " ".join(p.info["cmdline"] or []) and p.pid not in cores:
                        workers[p.pid] = p
                        for c in p.children():
                            cores[c.pid] = c
                except psutil.Error:
                    continue
            try:
                busy = sum(c.cpu_times().user for c in cores.values() if alive(c))
            except psutil.Error:
                busy = 0.0
            if len(cores) >= 6 and busy > 1.0:
                break
            time.sleep(0.1)
        else:
            print("FAIL: the shards did not start within 120 s")
            return 1
        print(f"{time.monotonic() - start:.1f} s: {len(workers)} Ray workers run shards, {len(cores)} core processes; "
              "sending SIGINT to the process group")
        os.killpg(proc.pid, signal.SIGINT)
        t = time.monotonic()
        stdout, stderr = proc.communicate(timeout=90)
        print(f"exited {proc.returncode} {time.monotonic() - t:.1f} s after Ctrl-C")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    ok = True

    def check(cond: bool, what: str) -> None:
        nonlocal ok
        print(("ok:   " if cond else "FAIL: ") + what)
        ok = ok and cond

    check(proc.returncode == 130, f"exit code 130 (got {proc.returncode})")
    check("INTERRUPTED" in stdout, "the report says INTERRUPTED")
    check("Traceback" not in stderr, "no traceback on stderr")
    try:
        data = json.load(open(out))
    except (OSError, ValueError) as e:
        data = {}
        check(False, f"JSON written ({e})")
    shards = data.get("shards", [])
    counted = sum(s["variants"]["incident"]["case_runs"] for s in shards)
    check(bool(shards) and all(s["interrupted"] for s in shards), f"{len(shards)} shard(s) came back interrupted")
    check(counted > 0, f"partial counts kept: {counted} incident case-runs over the shards")
    check(data.get("totals", {}).get("incident", {}).get("case_runs") == counted, "totals equal the shards' counts")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(c) for c in cores.values()):
        time.sleep(0.1)
    check(not any(alive(c) for c in cores.values()), f"all {len(cores)} core processes ended")
    left = [e for e in os.listdir("/dev/shm") if any(e.startswith(f"mpnpu_{pid}_") for pid in workers)]
    check(not left, f"no GM segment of the workers left in /dev/shm {left or ''}")
    for line in stdout.splitlines():
        if line.startswith(("shards:", "  #", "verdict:", "INTERRUPTED")):
            print("  | " + line)
    print("ALL HOLD" if ok else "SOMETHING DOES NOT HOLD")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
