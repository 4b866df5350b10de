#!/usr/bin/env python3
"""ICPU_RUN_KF of an empty kernel from a CPU-debug style host program vs Device.launch of the same
kernel from Python, on the same kind of device (1 AI core, mix 1:2: 3 core processes), measured
side by side: the host program and the Python loop run alternately, round after round.

    python scripts/bench_host.py [--rounds 7] [--launches 200]

Target: ICPU_RUN_KF <= 1.5x Device.launch. The host program is built with the flags
``python -m mpnpu.ascendc --cflags --libs`` prints (what a user's unit test uses).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from mpnpu.ascendc import compile_kernel
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ascendc")
SOURCE = os.path.join(HERE, "bench_host.cpp")


def build(out_dir: str) -> str:
    flags = subprocess.run([sys.executable, "-m", "mpnpu.ascendc", "--cflags", "--libs"], capture_output=True,
                           text=True, check=True, timeout=600).stdout.split()
    exe = os.path.join(out_dir, "bench_host")
    cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
    subprocess.run([cxx, "-O2", SOURCE, *flags, "-o", exe], check=True, timeout=600)
    return exe


def python_round(dev: Device, kernel: object, x: object, launches: int) -> float:
    t = time.perf_counter()
    for _ in range(launches):
        dev.launch(kernel, x)  # type: ignore[arg-type]
    return (time.perf_counter() - t) / launches * 1e6


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--launches", type=int, default=200)
    args = p.parse_args()
    kernel = compile_kernel(os.path.join(HERE, "bench_kernels.cpp"), "empty_kernel", kernel_type=KernelType.MIX_1_2)
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp)
        host, py, ratios = [], [], []
        with Device(1) as dev:
            x = dev.to_device("x", np.zeros(8, np.float32))
            python_round(dev, kernel, x, 20)
            for _ in range(args.rounds):
                out = subprocess.run([exe, "1", str(args.launches)], capture_output=True, text=True, timeout=600,
                                     env={k: v for k, v in os.environ.items() if not k.startswith("MPNPU_")})
                if out.returncode != 0:
                    print(f"bench_host: the host program failed: {out.stderr.strip()}", file=sys.stderr)
                    return 1
                h = float(out.stdout.split()[-1])
                q = python_round(dev, kernel, x, args.launches)
                host.append(h)
                py.append(q)
                ratios.append(h / q)
    med = statistics.median
    print(f"empty kernel, 1 AI core (3 core processes): ICPU_RUN_KF {med(host):.0f} us, Device.launch "
          f"{med(py):.0f} us per launch; ratio median {med(ratios):.2f}x (rounds: "
          f"{', '.join(f'{r:.2f}' for r in ratios)}; target <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
