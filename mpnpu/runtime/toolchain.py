"""What builds of native code share, whichever front end asks: the C++ compiler, the build cache's
place, and the lock two processes building the same entry take.

The C++ front end builds kernel libraries with them (:mod:`mpnpu.ascendc.build`); the runtime builds
the Python front end's trace recorder (:mod:`mpnpu.runtime.native_trace`). The cache's pruning stays
with the C++ front end's builds (``mpnpu.ascendc.build.cache``).
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import time
from contextlib import contextmanager
from typing import Iterator

from mpnpu import settings
from mpnpu.errors import UsageError

_COMPILERS = ("g++", "clang++", "c++")


class CompileError(UsageError):
    """Native code did not compile (exit 2): a kernel's, with the compiler's first error at its
    file:line, or mpnpu's own."""


class NoCompilerError(UsageError):
    """No C++17 compiler was found."""


def find_compiler() -> list[str]:
    """The C++ compiler command: $CXX, else g++, clang++ or c++, else the ziglang extra."""
    env = os.environ.get("CXX")
    if env:
        cmd = shlex.split(env)
        if shutil.which(cmd[0]):
            return cmd
        raise NoCompilerError(f"CXX={env!r} is not a command here; unset it or point it at a C++17 compiler")
    for name in _COMPILERS:
        path = shutil.which(name)
        if path:
            return [path]
    try:  # the optional extra: pip install 'mpnpu[cxx]' brings a compiler from the package index
        import sys

        import ziglang  # type: ignore[import-not-found, unused-ignore]  # noqa: F401

        return [sys.executable, "-m", "ziglang", "c++"]
    except ImportError:
        pass
    raise NoCompilerError(
        "no C++17 compiler found for the Ascend C kernel: install one (Debian/Ubuntu: apt install g++; "
        "Fedora: dnf install gcc-c++; macOS: xcode-select --install) or pip install 'mpnpu[cxx]', or set CXX"
    )


def cache_dir() -> str:
    """Where built libraries are kept: $MPNPU_CACHE_DIR, else the user's cache directory."""
    env = settings.from_env(settings.CACHE_DIR)
    if env:
        return os.path.join(env, "ascendc")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mpnpu", "ascendc")


#: the build lock's file in an entry's folder (:func:`building`)
LOCK = ".lock"
#: how long a build waits for another process's build of the same entry before building it itself
BUILD_WAIT_S = 660.0


@contextmanager
def building(folder: str) -> Iterator[None]:
    """Hold the build lock of the entry ``folder`` (an exclusive ``flock`` on ``<folder>/.lock``):
    two processes that need the same library or precompiled header (a batch and the tests beside
    it, two runs sharing a cache) build it once, the second finding the first's result when it gets
    the lock. A lock held past :data:`BUILD_WAIT_S` (longer than any compile may take) is given up
    on, and the entry built regardless. The entry counts as used once the lock is held."""
    fd = os.open(os.path.join(folder, LOCK), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        deadline = time.monotonic() + BUILD_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        used(folder)
        yield
    finally:
        os.close(fd)  # (releases the lock)


def used(path: str) -> None:
    """Note that the entry ``path`` was used now (its modification time orders pruning)."""
    try:
        os.utime(path)
    except OSError:
        pass  # removed meanwhile, or not ours to touch: nothing to order
