"""What every mpnpu command shares: the parser class, running a command to an exit code, progress bars.

:func:`run_cli` wraps a command's ``main`` so that a user mistake prints one line and exits 2, a
device failure prints one line and exits 3, and Ctrl-C / SIGTERM stop in order (130 / 143), never
with a traceback (:class:`mpnpu.errors.ExitCode`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, NoReturn, Sequence

from mpnpu.errors import ExitCode, MpnpuError, UsageError
from mpnpu.runtime.gm import sweep_stale_segments
from mpnpu.runtime.procutil import exit_code_for_interrupt, terminate_as_interrupt


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2 (argparse's own usage dump is noisy)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see --help)")


def progress_bar(total: int, description: str, disable: bool) -> Any:
    """A tqdm bar on stderr when it is a terminal, else occasional plain lines (cli.progress).

    No monitor thread: the device forks core processes while a bar is open (pool rebuilds), and
    forking a process that has threads is unsafe."""
    from tqdm import tqdm

    if not disable and not _isatty(sys.stderr):
        from mpnpu.cli.progress import PlainProgress

        return PlainProgress(total, description)

    tqdm.monitor_interval = 0
    return tqdm(total=total, desc=description, unit="run", disable=disable, leave=False, dynamic_ncols=True)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def exit_status(interrupt: BaseException | None, ok: bool) -> int:
    """A command's exit status: the interrupt's (130 / 143) if it was stopped, else OK or FAILED."""
    if isinstance(interrupt, KeyboardInterrupt):
        return exit_code_for_interrupt(interrupt)
    return ExitCode.OK if ok else ExitCode.FAILED


def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None,
            prog: str = "mpnpu") -> int:
    """Run a command's ``main`` and turn every way it can end into an exit code and at most one line.

    Every command first unlinks the GM segments that runs killed with SIGKILL left in /dev/shm
    (a library user does that explicitly: ``mpnpu.runtime.gm.sweep_stale_segments()``).
    """
    sweep_stale_segments()
    try:
        with terminate_as_interrupt():
            return int(main(argv))
    except MpnpuError as e:  # 2 for a UsageError, 1 for a refused baseline, else 3 (MpnpuError.exit_code)
        print(f"{prog}: error: {e}", file=sys.stderr)
        return int(e.exit_code)
    except KeyboardInterrupt as e:
        print(f"{prog}: interrupted", file=sys.stderr)
        return exit_code_for_interrupt(e)
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error worth a traceback.
        sys.stderr.close()
        return ExitCode.OK


class LazyBar:
    """A progress bar opened when the work's size is known (``started(n)``), advanced with a label per
    item (``advance("name: status")``) and closed on leaving the ``with`` block."""

    def __init__(self, noun: str, quiet: bool) -> None:
        self.noun, self.quiet = noun, quiet
        self.bar: Any = None

    def started(self, total: int) -> None:
        self.bar = progress_bar(total, self.noun, disable=self.quiet).__enter__()

    def advance(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(label)
            self.bar.update(1)

    def note(self, label: str) -> None:
        """Say how far the items under way are, without advancing (shown now on a terminal, with the
        next plain line elsewhere)."""
        if self.bar is not None:
            self.bar.set_postfix_str(label, refresh=False)
            self.bar.refresh()

    def __enter__(self) -> LazyBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
