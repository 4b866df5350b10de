"""The build cache kept bounded: a size cap, least recently used entries pruned first.

The cache (:func:`mpnpu.ascendc.build.compiler.cache_dir`) holds one folder per built library
(``<key>/``), per precompiled header (``pch/<key>/``, about 90 MB each, one per compiler and flag
set), per CPU-debug host library (``cpudebug/<key>/``), per prepared sample source
(``prepared/<key>/``), and the tiling layouts (``tiling/<key>.json``). The CPU-debug host libraries
are never pruned (:data:`KEPT`). Over a corpus of hundreds of
unit tests, each with its own defines, nothing ever being removed, it grows past any disk.

An *entry* is one of those folders (or files). Using an entry touches it (:func:`used`), so its
modification time is when it was last built or used; after each build, :func:`prune` removes the
least recently used entries until the cache is at most :data:`mpnpu.settings.CACHE_MAX_MB`.
Entries used in the last minute are never removed (a build or a run may be reading them now), nor
the one just built, nor one being built (its build lock held, :func:`building`). Removing a library
a running process has loaded is safe on Linux (the process keeps the file it mapped).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from contextlib import contextmanager
from typing import Iterable, Iterator

from mpnpu import settings

#: folders of the cache that hold entries (the rest of its folders are entries themselves)
CONTAINERS = ("pch", "prepared", "tiling")
#: never pruned: programs built with ``python -m mpnpu.ascendc --libs`` load libmpnpu_cpudebug from
#: there by path (rpath), and one of a few MB per interpreter is all it ever holds
KEPT = ("cpudebug",)
#: an entry used more recently than this (seconds) is never pruned
RECENT_S = 60.0
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


def _being_built(path: str) -> bool:
    """Whether another process holds the build lock of the entry ``path`` now."""
    try:
        fd = os.open(os.path.join(path, LOCK), os.O_RDWR)
    except OSError:
        return False  # (no lock file: nothing ever built it under a lock)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def used(path: str) -> None:
    """Note that the entry ``path`` was used now (its modification time orders pruning)."""
    try:
        os.utime(path)
    except OSError:
        pass  # removed meanwhile, or not ours to touch: nothing to order


def _size(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def entries(root: str) -> list[tuple[float, int, str]]:
    """(last used, bytes, path) of every entry of the cache at ``root``, least recently used first."""
    found: list[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return []
    for name in names:
        path = os.path.join(root, name)
        if name in KEPT:
            continue
        if name in CONTAINERS and os.path.isdir(path):
            found += [os.path.join(path, n) for n in os.listdir(path)]
        else:
            found.append(path)
    out = []
    for path in found:
        try:
            out.append((os.path.getmtime(path), _size(path), path))
        except OSError:
            continue
    return sorted(out)


def prune(root: str, keep: Iterable[str] = (), max_bytes: int | None = None) -> list[str]:
    """Remove the least recently used entries of the cache at ``root`` until it holds at most
    ``max_bytes`` (default: the CACHE_MAX_MB setting); never those in ``keep`` nor those used in
    the last :data:`RECENT_S` seconds. Returns the entries removed."""
    cap = max_bytes if max_bytes is not None else int(settings.from_env(settings.CACHE_MAX_MB) * (1 << 20))
    found = entries(root)
    total = sum(size for _, size, _ in found)
    if total <= cap:
        return []
    spared = {os.path.abspath(k) for k in keep}
    now, removed = time.time(), []
    for mtime, size, path in found:
        if total <= cap:
            break
        if os.path.abspath(path) in spared or now - mtime < RECENT_S or (os.path.isdir(path) and _being_built(path)):
            continue
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.remove(path)
            except OSError:
                continue
        total -= size
        removed.append(path)
    return removed
