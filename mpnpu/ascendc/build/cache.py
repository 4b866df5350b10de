"""The build cache kept bounded: a size cap, least recently used entries pruned first.

The cache (:func:`mpnpu.ascendc.build.compiler.cache_dir`) holds one folder per built library
(``<key>/``), per precompiled header (``pch/<key>/``, about 90 MB each, one per compiler and flag
set), per CPU-debug host library (``cpudebug/<key>/``), per prepared sample source
(``prepared/<key>/``), per trace recorder of Python kernels (``pytrace/<key>/``), and the tiling
layouts (``tiling/<key>.json``). The CPU-debug host libraries and the recorders are never pruned
(:data:`KEPT`). Over a corpus of hundreds of unit tests, each with its own defines, nothing ever
being removed, it grows past any disk.

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
from typing import Iterable

from mpnpu import settings

# (the lock and the use mark live with the compiler's lookup; kept importable from here)
from mpnpu.runtime.toolchain import BUILD_WAIT_S as BUILD_WAIT_S
from mpnpu.runtime.toolchain import LOCK as LOCK
from mpnpu.runtime.toolchain import building as building
from mpnpu.runtime.toolchain import used as used

#: folders of the cache that hold entries (the rest of its folders are entries themselves)
CONTAINERS = ("pch", "prepared", "tiling")
#: never pruned: programs built with ``python -m mpnpu.ascendc --libs`` load libmpnpu_cpudebug from
#: there by path (rpath), and core processes load the Python front end's trace recorder
#: (mpnpu.runtime.native_trace) from there; a few MB per interpreter is all they ever hold
KEPT = ("cpudebug", "pytrace")
#: an entry used more recently than this (seconds) is never pruned
RECENT_S = 60.0
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
