"""Progress on stderr: a live bar on a terminal, an occasional plain line anywhere else.

On a terminal, tqdm redraws one line with carriage returns. Written to a CI log or a file
(``> log 2>&1``) those redraws become hundreds of lines, so when stderr is not a TTY
:class:`PlainProgress` prints a complete line now and then instead (every
``MPNPU_PROGRESS_EVERY`` seconds, :data:`mpnpu.settings.PROGRESS_EVERY`) and nothing at all for a
run shorter than that.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from mpnpu import settings


def progress_every_s() -> float:
    """Seconds between plain progress lines (``MPNPU_PROGRESS_EVERY``; :data:`mpnpu.settings.PROGRESS_EVERY`)."""
    return settings.from_env(settings.PROGRESS_EVERY)


class PlainProgress:
    """The part of tqdm's interface the commands use, printing whole lines, rate-limited."""

    def __init__(self, total: int, description: str, unit: str = "run", every_s: float | None = None,
                 stream: IO[str] | None = None) -> None:
        self.total = total
        self.n = 0
        self.desc = description
        self.postfix = ""
        self.unit = unit
        self.every_s = progress_every_s() if every_s is None else every_s
        self._stream = stream if stream is not None else sys.stderr
        self._start = self._last = time.monotonic()
        self._lines = 0

    def __enter__(self) -> "PlainProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._maybe_print()

    def set_description(self, desc: str, refresh: bool = True) -> None:
        self.desc = desc

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def refresh(self) -> None:
        """A line now if one is due (a long item says how far it is without finishing: ``mpnpu ut``'s mutants)."""
        self._maybe_print()

    def close(self) -> None:
        if self._lines:  # a run long enough to have reported progress reports its end too
            self._print("done")

    def _maybe_print(self) -> None:
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self._print("")

    def _print(self, note: str) -> None:
        elapsed = time.monotonic() - self._start
        line = f"{self.desc}: {self.n}/{self.total} {self.unit}s"
        if self.total:
            line += f" ({100 * self.n / self.total:.0f}%)"
        line += f", {elapsed:.0f} s"
        if 0 < self.n < self.total and not note:
            line += f", about {elapsed * (self.total - self.n) / self.n:.0f} s left"
        if self.postfix:
            line += f" [{self.postfix}]"
        if note:
            line += f" - {note}"
        try:
            print(line, file=self._stream, flush=True)
        except (OSError, ValueError):
            pass  # a closed stderr must not stop the run
        self._lines += 1
