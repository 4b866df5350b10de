"""Every error mpnpu raises, in one hierarchy, and the exit codes of its commands.

Each error has a one-line message that names what went wrong and where (which core, which sync),
keeps structured details in ``.details`` for programs, and survives pickling, so an error raised in
a core process arrives in the parent intact. The commands exit with the error's ``exit_code``:
2 (:attr:`ExitCode.USAGE`) for a :class:`UsageError`, 1 (:attr:`ExitCode.FAILED`) for a
:class:`BaselineError`, 3 (:attr:`ExitCode.ERROR`) for the other :class:`MpnpuError`, printing the
one line without a traceback.

Where Python's protocols expect a built-in exception (``len()`` a ``TypeError``, a module's
``__getattr__`` an ``AttributeError``, a bad value a ``ValueError``), the error derives from both:
``except ValueError`` keeps working, and so does ``except MpnpuError``.

Not errors, and so not here: ``KeyboardInterrupt`` and its subclass
:class:`mpnpu.runtime.procutil.Terminated` (SIGTERM), which stop a run in order (exit 130 / 143).
"""

from __future__ import annotations

import enum
from typing import Any


class ExitCode(enum.IntEnum):
    """Exit status of every mpnpu command (the shell convention for signals: 128 + signal number)."""

    OK = 0
    FAILED = 1  # a variant expected clean was not, a conclusion did not match, a soak saw a failure
    USAGE = 2  # a UsageError: arguments, an operator name, a dtype, a shape
    ERROR = 3  # any other MpnpuError: the device or a kernel failed in a way that stopped the run
    INTERRUPTED = 130  # Ctrl-C (SIGINT); what was measured so far is printed
    TERMINATED = 143  # SIGTERM


def _rebuild(cls: type[MpnpuError], message: str, details: dict[str, Any]) -> MpnpuError:
    err = cls.__new__(cls)
    MpnpuError.__init__(err, message, **details)
    return err


class MpnpuError(Exception):
    """Base class. ``str(err)`` is one line; ``err.details`` holds the structured facts;
    ``exit_code`` is the status a command exits with when the error ends it."""

    exit_code = ExitCode.ERROR

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, tuple[type[MpnpuError], str, dict[str, Any]]]:
        return (_rebuild, (type(self), self.message, self.details))


# -- user mistakes (exit code 2 in the CLIs) ------------------------------------------------------


class UsageError(MpnpuError):
    """Bad input: arguments, shapes, dtypes, indices, configuration."""

    exit_code = ExitCode.USAGE


class DeviceConfigError(UsageError):
    """The device cannot be built as asked (e.g. block_dim beyond the device's AI cores)."""


class InvalidArgumentError(UsageError, ValueError):
    """A value outside what the function accepts (a rate, a flag mode, results that cannot merge)."""


class InvalidTypeError(UsageError, TypeError):
    """A value of a type the function cannot take."""


class DTypeError(InvalidTypeError):
    """A dtype the device does not have (``Device.empty("x", 4, "complex64")``)."""


class NotFoundError(UsageError, LookupError):
    """A key or index that is not there (a diagnosis step, an epoch of a vector clock)."""


class UnknownNameError(UsageError, AttributeError):
    """A name a package does not have (``mpnpu.api.subs``, ``mpnpu.Nothing``)."""


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
        return str(self.details.get("remote_traceback", ""))


class CoreDiedError(LaunchError):
    """A core process ended without reporting (os._exit, a signal, a crash)."""


class SyncAllNotReachedError(LaunchError):
    """A SyncAll can never complete: some core finished without reaching it."""


class DeadlockError(LaunchError):
    """Every running core is blocked in a wait that no other core can satisfy."""


class LaunchTimeoutError(LaunchError):
    """The launch did not finish within its timeout."""


class BaselineError(MpnpuError):
    """A tool that judges sync points against the fixed variant (the audit, race-directed
    reproduction) refused: the fixed variant itself fails or errors, so nothing it would say about
    a dropped sync could be trusted. Exit status 1, as for a batch whose fixed variant fails.
    ``details``: case, reason ("failed" / "error"), error."""

    exit_code = ExitCode.FAILED


class DeviceClosedError(MpnpuError):
    """The device was used after close()."""


class RemoteTraceback(MpnpuError):
    """Carries a core's formatted traceback as the ``__cause__`` of a KernelError (as
    ``concurrent.futures`` does); made by :meth:`of`, so that it prints below its own heading."""

    @classmethod
    def of(cls, tb: str) -> RemoteTraceback:
        return cls("\n" + tb)

    @property
    def tb(self) -> str:
        return self.message[1:] if self.message.startswith("\n") else self.message


class WireError(MpnpuError, ValueError):
    """A malformed message on a core's pipe (the parent and the core disagree)."""


class PipeClosedError(MpnpuError, EOFError):
    """The other end of a core's pipe is gone (the parent or the core exited)."""


class TraceError(MpnpuError, ValueError):
    """A launch trace is inconsistent (built by hand, or damaged): racecheck and timelines refuse it."""


class ProcessGoneError(MpnpuError):
    """A pid given to the stress layer no longer exists. ``details``: pid, action."""


class GMOutOfMemoryError(MpnpuError):
    """The GM arena cannot hold an allocation."""
