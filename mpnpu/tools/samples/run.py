"""Running a sample's recipe in a run folder of its own: its data step, its program, its verify step.

The run folder holds links to the sample's files and a ``build/`` folder, the working directory of
each step, as the README's ``mkdir -p build && cd build`` makes it (``../scripts/gen_data.py`` reaches
the sample's scripts; ``./input`` and ``./output`` are the run's own). A verify step passes when it
exits 0 and says it passed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

from mpnpu.tools.samples.discover import Sample


@dataclass
class Step:
    """One step of a recipe: what ran, its exit status, the last of its output, how long it took."""

    argv: list[str]
    code: int | None  # None: not run, or stopped at its timeout
    tail: str
    seconds: float


def run_dir(sample: Sample, root: str) -> str:
    """A fresh run folder for ``sample`` under ``root``: links to its files, and its ``build/`` (returned)."""
    folder = os.path.join(root, sample.slug)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    for entry in os.listdir(sample.folder):
        if entry != "build":
            os.symlink(os.path.join(sample.folder, entry), os.path.join(folder, entry))
    build = os.path.join(folder, "build")
    for sub in ("input", "output"):
        os.makedirs(os.path.join(build, sub))
    return build


def run_step(argv: list[str], cwd: str, timeout_s: float, env: dict[str, str]) -> Step:
    """``argv`` in ``cwd`` (``python3`` is the interpreter mpnpu runs in)."""
    if argv and argv[0].startswith("python"):
        argv = [sys.executable, *argv[1:]]
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return Step(argv, None, (out + f"\nstopped after {timeout_s:g} s")[-2000:], time.monotonic() - start)
    except OSError as e:
        return Step(argv, None, str(e), time.monotonic() - start)
    return Step(argv, proc.returncode, (proc.stdout + proc.stderr)[-2000:], time.monotonic() - start)


def passed(step: Step) -> bool:
    """A verify step that exited 0 and said it passed."""
    return step.code == 0 and "pass" in step.tail.lower() and "fail" not in step.tail.lower()


_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def missing_module(step: Step) -> str | None:
    """The Python package a failed script step of the sample could not import (its top-level name), or None."""
    if step.code in (0, None) or not step.argv or not os.path.basename(step.argv[0]).startswith("python"):
        return None
    m = _NO_MODULE.search(step.tail)
    return m.group(1).split(".")[0] if m else None
