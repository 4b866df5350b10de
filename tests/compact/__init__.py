"""A user's first kernel (issue 21), kept as a test operator: stream compaction over vector cores
(compact.py), and what its tests share."""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "compact.py")
REPO = os.path.dirname(os.path.dirname(HERE))


def ref(name: str = "OPERATOR") -> str:
    """How --op names one of the operators of compact.py."""
    return f"{SOURCE}:{name}"


def line_of(marker: str) -> int:
    """The line of compact.py that carries ``# marker``."""
    with open(SOURCE) as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith(f"# {marker}"):
                return n
    raise LookupError(marker)


def site(marker: str) -> str:
    """The kernel site of that line, as mpnpu names it."""
    return f"compact/compact.py:{line_of(marker)}"


def mpnpu(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """``mpnpu ARGS`` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "mpnpu", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)
