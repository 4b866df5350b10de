"""Every error mpnpu raises, in one hierarchy.

Each error has a one-line message that names what went wrong and where (which core, which sync),
keeps structured details in ``.details`` for programs, and survives pickling, so an error raised in
a core process arrives in the parent intact. The CLIs map :class:`UsageError` to exit code 2 and
the other :class:`MpnpuError` to their own codes, printing the one line without a traceback.
"""

from __future__ import annotations

from typing import Any


def _rebuild(cls: type, message: str, details: dict[str, Any]) -> "MpnpuError":
    err = cls.__new__(cls)
    MpnpuError.__init__(err, message, **details)
    return err


class MpnpuError(Exception):
    """Base class. ``str(err)`` is one line; ``err.details`` holds the structured facts."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return (_rebuild, (type(self), self.message, self.details))


# -- user mistakes (exit code 2 in the CLIs) ------------------------------------------------------


class UsageError(MpnpuError):
    """Bad input: arguments, shapes, dtypes, indices, configuration."""


class DeviceConfigError(UsageError):
    """The device cannot be built as asked (e.g. block_dim beyond the device's AI cores)."""


# -- errors raised inside a core by the kernel-facing API ----------------------------------------


class KernelAPIError(MpnpuError):
    """A kernel used the device API in a way the device does not allow."""


class CapacityError(KernelAPIError):
    """A local buffer (UB, L1, L0A/B/C) would exceed the device's capacity."""


class FlagOverflowError(KernelAPIError):
    """A cross-core flag counter would exceed 15."""


class GMAccessError(KernelAPIError):
    """A GM view or copy outside its tensor, or with mismatched shapes or dtypes."""


class MemcheckError(GMAccessError):
    """An illegal read or write: an access outside the GM tensor or local buffer it goes through.

    ``details``: kind ("illegal read" / "illegal write"), memory ("GM", "UB", ...), tensor (or
    buffer), start / stop (the requested bytes, from the tensor's or memory's start), size (the
    tensor's bytes, or the buffer's [lo, hi)), site (the kernel's file:line), call.
    """


class UnsupportedError(KernelAPIError):
    """A kernel called a part of the kernel API that mpnpu does not implement (yet)."""


class SyncTimeoutError(KernelAPIError):
    """A SyncAll or flag wait inside a core waited longer than the sync timeout."""


# -- launch failures seen by the parent -----------------------------------------------------------


class LaunchError(MpnpuError):
    """A kernel launch failed. The device's core pool has been rebuilt and is usable again."""


class KernelError(LaunchError):
    """A core raised. ``details``: core, error_type, remote_traceback."""

    @property
    def remote_traceback(self) -> str:
        return self.details.get("remote_traceback", "")


class CoreDiedError(LaunchError):
    """A core process ended without reporting (os._exit, a signal, a crash)."""


class SyncAllNotReachedError(LaunchError):
    """A SyncAll can never complete: some core finished without reaching it."""


class DeadlockError(LaunchError):
    """Every running core is blocked in a wait that no other core can satisfy."""


class LaunchTimeoutError(LaunchError):
    """The launch did not finish within its timeout."""


class DeviceClosedError(MpnpuError):
    """The device was used after close()."""


class GMOutOfMemoryError(MpnpuError):
    """The GM arena cannot hold an allocation."""
