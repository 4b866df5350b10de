"""``mpnpu ut --mutate-syncs --resume EARLIER.json``: take over the mutants an earlier run classified.

Sync mutation testing of a whole corpus takes hours (each executed sync point is one more run of
its test); a run that was stopped, or ran out of time, should not start again from nothing. The
earlier run's ``--json`` holds, per test, every mutant it classified and the test's **identity**:

::

    binary    the SHA-256 of the test's program (its kernel, its test source and mpnpu's C++ runtime
              are all in it)
    tests     the SHA-256 of the files of the test's own folder (its data scripts and files)
    mpnpu     the SHA-256 of mpnpu's own sources (the classification is made in Python too)
    options   what the run was told that changes what a mutant does (pipes, checks, time-outs, ...)
    variables the MPNPU_* variables of the test's environment (but those that say where things are)
    packages  the versions of the heavy packages its data scripts make their data with

A test whose identity is the same now takes over each mutant the earlier run classified, at the
same sync site; the baseline still runs (it learns the sites executed now, and a test that no
longer passes is not mutation-tested), and the mutants not classified then (the run was stopped
in the middle of the test) run now. Anything else about the test changed: every mutant runs.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from mpnpu import settings
from mpnpu.errors import UsageError
from mpnpu.tools.mutate import Mutant
from mpnpu.tools.ut.warm_python import HEAVY

#: the files of mpnpu's own sources that make what a mutant does and how it is classified
_SOURCE_SUFFIXES = (".py", ".h", ".hpp", ".cpp", ".cc", ".inc")


def _file_digest(path: str, into: Any) -> None:
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            into.update(block)


def file_sha256(path: str) -> str:
    """The SHA-256 of the file at ``path``."""
    h = hashlib.sha256()
    _file_digest(path, h)
    return h.hexdigest()


def tree_sha256(root: str, suffixes: tuple[str, ...] | None = None) -> str:
    """One SHA-256 over the names and contents of the files below ``root`` (those ending in one of
    ``suffixes``, if given), in a fixed order; caches and compiled Python are left out."""
    h = hashlib.sha256()
    if not os.path.isdir(root):
        return h.hexdigest()
    for folder, dirs, names in os.walk(root, followlinks=True):  # (mpnpu/kernels is a link to kernels/)
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(names):
            if name.endswith(".pyc") or (suffixes is not None and not name.endswith(suffixes)):
                continue
            path = os.path.join(folder, name)
            if not os.path.isfile(path):
                continue
            h.update(os.path.relpath(path, root).encode() + b"\0")
            _file_digest(path, h)
            h.update(b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def mpnpu_sha256() -> str:
    """The SHA-256 of mpnpu's own sources (once per process: they do not change under a run)."""
    import mpnpu

    return tree_sha256(os.path.dirname(os.path.abspath(mpnpu.__file__)), _SOURCE_SUFFIXES)


#: variables of a test's environment that say where, not what: left out of its identity
_PLACES = (settings.WARM_PYTHON.env, settings.REAL_PYTHON.env, settings.CACHE_DIR.env, settings.CACHE_MAX_MB.env,
           settings.PROGRESS_EVERY.env)


@lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    """The versions of the heavy packages the data scripts make their data with (those installed)."""
    from importlib import metadata

    out = {}
    for name in HEAVY:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def identity(binary: str, test_dir: str, options: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """What must be the same for a test's earlier mutants to stand (see the module docstring);
    ``env``: the environment its programs run in (its MPNPU_* variables count)."""
    variables = {k: v for k, v in sorted(env.items()) if k.startswith("MPNPU_") and k not in _PLACES}
    return {"binary": file_sha256(binary), "tests": tree_sha256(test_dir), "mpnpu": mpnpu_sha256(),
            "options": dict(sorted(options.items())), "variables": variables, "packages": package_versions()}


@dataclass(frozen=True)
class Earlier:
    """One test of the earlier run: its identity and the mutants it classified, by site."""

    identity: dict[str, Any]
    mutants: dict[str, Mutant]


def load(path: str) -> dict[str, Earlier]:
    """Test id -> :class:`Earlier`, from an earlier ``mpnpu ut --mutate-syncs --json`` report; tests
    without an identity (a report from before --resume) or without classified mutants are left out.
    A report compressed with gzip (``.gz``, as one is kept) is read as it is. A file that cannot be
    read, or is no such report, is a usage error naming it."""
    try:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            data = json.load(f)
    except OSError as e:
        raise UsageError(f"--resume {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise UsageError(f"--resume {path}: not a JSON report ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list) or "repo" not in data:
        raise UsageError(f"--resume {path}: not a report of mpnpu ut --json")
    out: dict[str, Earlier] = {}
    for test in data["tests"]:
        mutation, key = test.get("mutation"), test.get("resume_key")
        if not isinstance(mutation, dict) or not isinstance(key, dict):
            continue
        try:
            mutants = {m["site"]: Mutant.from_dict(m) for m in mutation.get("mutants", []) if m.get("status")}
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise UsageError(f"--resume {path}: a mutant of {test.get('id', '?')} is malformed ({e!r})") from None
        if mutants:
            out[test["id"]] = Earlier(key, mutants)
    return out
