"""Helpers shared by the runtime tests: a small-footprint Device factory and kernel references."""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import psutil

from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.device import Device
from tests.waiting import wait_for

KERNELS = "tests.kernels_for_tests"

#: small GM segments; generous sync timeouts (the watchdog must report long before them);
#: a launch timeout that bounds every test even if the watchdog missed something
OPTIONS = RuntimeOptions(
    gm_segment_bytes=1 << 20,
    sync_timeout_s=30.0,
    launch_timeout_s=40.0,
    stall_grace_s=1.0,
)


def k(name: str) -> str:
    """Reference of a test kernel."""
    return f"{KERNELS}:{name}"


@contextlib.contextmanager
def device(block_dim: int = 2, **kwargs) -> Iterator[Device]:
    kwargs.setdefault("options", OPTIONS)
    with Device(block_dim, **kwargs) as dev:
        yield dev


def filled(dev: Device, name: str, shape, value=-1, dtype="int32"):
    """A GM tensor of ``shape`` filled with ``value`` (so an unwritten slot reads as ``value``)."""
    return dev.to_device(name, np.full(shape, value, dtype=np.dtype(dtype)))


def still_alive(pids: list[int], within: float) -> list[int]:
    """Pids still alive (not zombies) after waiting up to ``within`` seconds for them to end."""
    def alive() -> list[int]:
        out = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    out.append(pid)
            except psutil.NoSuchProcess:
                pass
        return out

    wait_for(lambda: not alive(), within, interval=0.02)
    return alive()
