"""Run by tests/test_runtime_faults.py in a subprocess: a parent that gets a signal mid-launch.

Usage: python tests/parent_fault_helper.py interrupt MARKER

Starts a Device, prints ``READY {"core_pids": [...], "segments": [...]}``, then launches a kernel
in which cube 0 touches MARKER and spins while every other core blocks in a SyncAll. The test
then signals this process. On SIGINT/SIGTERM (turned into KeyboardInterrupt by
``terminate_as_interrupt``) it prints ``INTERRUPTED`` and exits 128 + signal number.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.procutil import exit_code_for_interrupt, terminate_as_interrupt

OPTIONS = RuntimeOptions(gm_segment_bytes=1 << 20, sync_timeout_s=30.0, launch_timeout_s=40.0)


def main() -> int:
    mode, marker = sys.argv[1], sys.argv[2]
    if mode != "interrupt":
        raise SystemExit(f"unknown mode {mode!r}")
    try:
        with terminate_as_interrupt():
            with Device(2, options=OPTIONS) as dev:
                dev.to_device("x", np.arange(16, dtype=np.int32))
                info = {"pid": os.getpid(), "core_pids": dev.core_pids(), "segments": dev.gm.segment_names}
                print("READY " + json.dumps(info), flush=True)
                dev.launch("tests.kernels_for_tests:block_in_sync_all", marker)
        print("FINISHED", flush=True)  # the launch should never finish by itself
        return 3
    except KeyboardInterrupt as e:
        print("INTERRUPTED", type(e).__name__, flush=True)
        return exit_code_for_interrupt(e)


if __name__ == "__main__":
    sys.exit(main())
