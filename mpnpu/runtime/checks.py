"""Argument checks shared by the runtime and the tools built on it."""

from __future__ import annotations

from typing import Any

from mpnpu.errors import DeviceConfigError

from .config import DEFAULT_SPEC, DeviceSpec


def is_int(value: Any) -> bool:
    """True for an int that is not a bool (``True == 1``, so ``isinstance(True, int)`` holds)."""
    return isinstance(value, int) and not isinstance(value, bool)


#: How many waves of blocks mpnpu runs at most: it starts a core process per block, so a launch may
#: be this many times wider than the device (the chip itself takes up to 65535 blocks).
MAX_WAVES = 4


def cores_at_once(spec: DeviceSpec = DEFAULT_SPEC, kernel_type: Any = None) -> int:
    """How many blocks of a launch the device runs at once: its vector cores (2 per AI core) for a
    vector-only kernel, its AI cores for the other kernel types."""
    return 2 * spec.ai_cores if getattr(kernel_type, "value", "") == "vector-only" else spec.ai_cores


def _cores_named(spec: DeviceSpec, kernel_type: Any) -> str:
    limit = cores_at_once(spec, kernel_type)
    return f"the {limit} vector cores" if limit != spec.ai_cores else f"the {limit} AI cores"


def check_block_dim(block_dim: Any, spec: DeviceSpec = DEFAULT_SPEC, kernel_type: Any = None) -> int:
    """``block_dim`` if it fits the device's cores at once, else a :class:`DeviceConfigError`.

    What mpnpu's own tools accept (--block-dim, stress plans): their operators may call SyncAll,
    which on the chip hangs in a launch wider than the cores (the extra blocks run only after the
    first ones finish). A vector-only launch counts vector cores (2 per AI core); the other kernel
    types count AI cores. A :class:`~mpnpu.runtime.device.Device` takes wider launches
    (:func:`check_launch_width`).
    """
    width = check_launch_width(block_dim, spec, kernel_type)
    limit = cores_at_once(spec, kernel_type)
    if width > limit:
        raise DeviceConfigError(
            f"block_dim {block_dim} exceeds {_cores_named(spec, kernel_type)} of the device ({spec.name}); "
            f"on the chip SyncAll would hang. Use at most {limit}.",
            block_dim=block_dim, ai_cores=spec.ai_cores,
        )
    return width


def check_launch_width(block_dim: Any, spec: DeviceSpec = DEFAULT_SPEC, kernel_type: Any = None) -> int:
    """``block_dim`` if a device can run a launch that wide, else a :class:`DeviceConfigError`.

    On the chip a launch wider than the cores runs in waves: a block starts when a core is free.
    mpnpu runs it so (a core process per block, at most :func:`cores_at_once` blocks at a time, the
    next started as one ends: mpnpu.runtime.pool.Waves); the calls that would hang on the chip in
    such a launch (SyncAll, a mode-0 flag wait) are refused when a core makes them
    (mpnpu.runtime.kcontext). Up to :data:`MAX_WAVES` waves.
    """
    if not is_int(block_dim) or block_dim < 1:
        raise DeviceConfigError(f"block_dim must be a positive integer, got {block_dim!r}")
    limit = MAX_WAVES * cores_at_once(spec, kernel_type)
    if block_dim > limit:
        raise DeviceConfigError(
            f"block_dim {block_dim} exceeds {MAX_WAVES} waves of {_cores_named(spec, kernel_type)} of the device "
            f"({spec.name}); mpnpu starts a core process per block and runs at most {limit}.",
            block_dim=block_dim, ai_cores=spec.ai_cores,
        )
    return int(block_dim)
