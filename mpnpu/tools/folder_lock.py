"""One run at a time per build folder: `mpnpu ut` and `mpnpu samples` stage sources, cache
objects and run programs in a folder that every run shares by default.

Two runs in one folder remove each other's staged sources mid-compile (a stage is rebuilt from
scratch each run), and a compile that failed because its source had just been removed used to be
cached as the test's own failure. So a run holds an exclusive lock on ``<folder>/.lock`` for as
long as it uses the folder. The lock is an ``flock``: the kernel drops it when the holder exits or
is killed, so no stale lock is ever left behind. A second run does not wait (a corpus run takes
many minutes): it stops at once, naming the process that holds the folder and ``--build-dir``.
"""

from __future__ import annotations

import fcntl
import os
import socket
from contextlib import contextmanager
from typing import Iterator

from mpnpu.errors import UsageError

LOCK_NAME = ".lock"


def _holder(path: str) -> str:
    """What the lock file says about the run that holds it ("pid 123: mpnpu ut"), or ""."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(200).strip()
    except OSError:
        return ""


@contextmanager
def hold_folder(folder: str, command: str) -> Iterator[None]:
    """Hold ``folder`` (made if missing) for ``command`` until the block ends; a UsageError at once
    when another run holds it."""
    path = os.path.join(folder, LOCK_NAME)
    writable = True
    try:
        os.makedirs(folder, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError:  # another user's lock file in a shared folder: a lock needs no writing
            fd, writable = os.open(path, os.O_RDONLY), False
    except OSError as e:
        raise UsageError(f"cannot use the build folder {folder}: {e.strerror or e}; give another with "
                         "--build-dir") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = _holder(path)
            raise UsageError(f"the build folder {folder} is in use by another run"
                             f"{f' ({who})' if who else ''}; wait for it to end, or give this run a "
                             "folder of its own with --build-dir") from None
        except OSError as e:  # (a file system without locks: some network mounts)
            raise UsageError(f"cannot lock the build folder {folder} ({e.strerror or e}); give one on a "
                             "local disk with --build-dir") from None
        if writable:
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}: {command}\n".encode())
        try:
            yield
        finally:
            if writable:
                os.ftruncate(fd, 0)  # (the lock itself goes with the descriptor)
    finally:
        os.close(fd)
