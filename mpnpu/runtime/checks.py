"""Argument checks shared by the runtime and the tools built on it."""

from __future__ import annotations

from typing import Any

from mpnpu.errors import DeviceConfigError

from .config import DEFAULT_SPEC, DeviceSpec


def is_int(value: Any) -> bool:
    """True for an int that is not a bool (``True == 1``, so ``isinstance(True, int)`` holds)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_block_dim(block_dim: Any, spec: DeviceSpec = DEFAULT_SPEC) -> int:
    """``block_dim`` if the device can run a launch that wide, else a :class:`DeviceConfigError`.

    On the chip a launch with more AI cores than it has makes SyncAll hang (the extra blocks run
    only after the first ones finish), so mpnpu refuses it up front.
    """
    if not is_int(block_dim) or block_dim < 1:
        raise DeviceConfigError(f"block_dim must be a positive integer, got {block_dim!r}")
    if block_dim > spec.ai_cores:
        raise DeviceConfigError(
            f"block_dim {block_dim} exceeds the {spec.ai_cores} AI cores of the device ({spec.name}); "
            f"on the chip SyncAll would hang. Use at most {spec.ai_cores}.",
            block_dim=block_dim, ai_cores=spec.ai_cores,
        )
    return int(block_dim)
