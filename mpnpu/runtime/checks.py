"""Argument checks shared by the runtime and the tools built on it."""

from __future__ import annotations

from typing import Any

from mpnpu.errors import DeviceConfigError

from .config import DEFAULT_SPEC, DeviceSpec


def is_int(value: Any) -> bool:
    """True for an int that is not a bool (``True == 1``, so ``isinstance(True, int)`` holds)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_block_dim(block_dim: Any, spec: DeviceSpec = DEFAULT_SPEC, kernel_type: Any = None) -> int:
    """``block_dim`` if the device can run a launch that wide, else a :class:`DeviceConfigError`.

    On the chip a launch with more AI cores than it has makes SyncAll hang (the extra blocks run
    only after the first ones finish), so mpnpu refuses it up front. A vector-only launch counts
    vector cores (2 per AI core); the other kernel types count AI cores.
    """
    if not is_int(block_dim) or block_dim < 1:
        raise DeviceConfigError(f"block_dim must be a positive integer, got {block_dim!r}")
    vector_only = getattr(kernel_type, "value", "") == "vector-only"
    limit = 2 * spec.ai_cores if vector_only else spec.ai_cores
    if block_dim > limit:
        what = f"the {limit} vector cores" if vector_only else f"the {limit} AI cores"
        raise DeviceConfigError(
            f"block_dim {block_dim} exceeds {what} of the device ({spec.name}); "
            f"on the chip SyncAll would hang. Use at most {limit}.",
            block_dim=block_dim, ai_cores=spec.ai_cores,
        )
    return int(block_dim)
