"""What every mpnpu command line shares: exit codes, argument types, error handling, progress bars.

Each CLI module keeps its own parser and its own report; ``run_cli`` wraps its ``main`` so that a
user mistake prints one line and exits 2, a device failure prints one line and exits 3, and
Ctrl-C / SIGTERM stop in order (130 / 143), never with a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Sequence

from mpnpu.errors import InvalidTypeError, MpnpuError, UsageError
from mpnpu.runtime.gm import sweep_stale_segments
from mpnpu.runtime.procutil import exit_code_for_interrupt, terminate_as_interrupt

EXIT_OK = 0
EXIT_FAILED = 1  # a variant expected clean was not (or an investigation conclusion did not match)
EXIT_USAGE = 2
EXIT_ERROR = 3  # the device or a kernel failed in a way that stopped the run


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2 (argparse's own usage dump is noisy)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see --help)")


def int_at_least(low: int, what: str):
    """An argparse type: an integer >= ``low``, described as ``what`` in the error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value

    return parse


positive_int = int_at_least(1, "a positive integer")
non_negative_int = int_at_least(0, "an integer >= 0")


def float_in(low: float, high: float | None = None, *, low_open: bool = False, what: str = "a number"):
    """An argparse type: a float in [low, high) (or (low, high) with ``low_open``)."""

    def parse(text: str) -> float:
        bounds = f"{'>' if low_open else '>='} {low:g}" + (f" and < {high:g}" if high is not None else "")
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} {bounds}, got {text!r}") from None
        if (value <= low if low_open else value < low) or (high is not None and not value < high):
            raise argparse.ArgumentTypeError(f"expected {what} {bounds}, got {value:g}")
        return value

    return parse


positive_float = float_in(0.0, low_open=True, what="a positive number")


def byte_value(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a byte value such as 0xFF, got {text!r}") from None
    if not 0 <= value <= 255:
        raise argparse.ArgumentTypeError(f"expected a byte value 0..255, got {value}")
    return value


def writable_path(text: str) -> str:
    """A file path that can be written (checked before a long run, not after it)."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory")
    directory = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(directory):
        raise argparse.ArgumentTypeError(f"directory {directory} does not exist")
    probe = f"{text}.tmp"  # what write_json writes first
    try:
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot write {text}: {e.strerror or e}") from None
    return text


def write_json(path: str, data: Any) -> None:
    """Write JSON atomically: a reader never sees half a report."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, default=_json_default)
        f.write("\n")
    os.replace(tmp, path)


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise InvalidTypeError(f"not JSON serialisable: {type(value).__name__}")


def progress_bar(total: int, description: str, disable: bool):
    """A tqdm bar on stderr when it is a terminal, else occasional plain lines (cli.progress).

    No monitor thread: the device forks core processes while a bar is open (pool rebuilds), and
    forking a process that has threads is unsafe."""
    from tqdm import tqdm

    if not disable and not _isatty(sys.stderr):
        from mpnpu.cli.progress import PlainProgress

        return PlainProgress(total, description)

    tqdm.monitor_interval = 0
    return tqdm(total=total, desc=description, unit="run", disable=disable, leave=False, dynamic_ncols=True)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None,
            prog: str = "mpnpu") -> int:
    """Run a CLI ``main`` and turn every way it can end into an exit code and at most one line.

    Every command first unlinks the GM segments that runs killed with SIGKILL left in /dev/shm
    (a library user does that explicitly: ``mpnpu.runtime.gm.sweep_stale_segments()``).
    """
    sweep_stale_segments()
    try:
        with terminate_as_interrupt():
            return main(argv)
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except MpnpuError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as e:
        print(f"{prog}: interrupted", file=sys.stderr)
        return exit_code_for_interrupt(e)
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error worth a traceback.
        sys.stderr.close()
        return EXIT_OK
