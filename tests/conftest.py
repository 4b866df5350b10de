"""Shared fixtures: the one leak and orphan check for tests that start processes or create GM.

``no_leaks`` asserts, after the test, that

- no child process of the test process started during the test is still alive (allowing ~2 s for
  exits; the multiprocessing resource tracker, which lives as long as the test process, is exempt);
- no ``mpnpu_*`` shared-memory segment created during the test by this process (or by a child of
  it) is left in /dev/shm.

Segments of other live processes (another test run on the same machine) are never counted.
Leftovers are cleaned up after the assertion so that one failure does not cascade.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Iterator

import psutil
import pytest

import mpnpu
from mpnpu.runtime.config import SEGMENT_PREFIX
from tests.waiting import wait_for

# Subprocesses the tests start (the CLI, inner pytest runs) import the same copy of mpnpu as the
# test process. Without this a test process importing the checkout would start subprocesses that
# import the installed copy: a different path for every kernel source, so every C++ library those
# subprocesses need was compiled a second time (about a fifth of the suite's compiling).
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mpnpu.__file__)))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
# The suite builds its C++ kernels at -O1 unless told otherwise: a third less compiling than the
# default -O2 for kernels that behave the same, and from an empty build cache most of the suite's
# time is compiling (docs/ascendc.md, "Optimisation level").
os.environ.setdefault("MPNPU_KERNEL_OPT", "1")

SHM_DIR = "/dev/shm"
#: the checkout the tests are in (tests/prebuild.py runs from there)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the session's prebuild process (tests/prebuild.py), while it runs
_prebuild: subprocess.Popen[bytes] | None = None


def shm_segments() -> set[str]:
    """Names of every mpnpu segment in /dev/shm."""
    try:
        return {e for e in os.listdir(SHM_DIR) if e.startswith(SEGMENT_PREFIX)}
    except OSError:
        return set()


def own_segments() -> set[str]:
    """The mpnpu segments this process created (another xdist worker's device is not ours to count)."""
    return {s for s in shm_segments() if segment_pid(s) == os.getpid()}


def segment_pid(name: str) -> int | None:
    """The creating pid encoded in an mpnpu segment name ("mpnpu_<pid>_<token>_<n>")."""
    try:
        return int(name[len(SEGMENT_PREFIX):].split("_", 1)[0])
    except ValueError:
        return None


def _tracker_pid() -> int | None:
    from multiprocessing import resource_tracker

    return getattr(resource_tracker._resource_tracker, "_pid", None)


def live_children() -> list[psutil.Process]:
    """The live descendants of this process, but for the session's prebuild process and the
    compilers it runs (:func:`pytest_collection_finish`): they are no test's."""
    out = []
    prebuild = _prebuild.pid if _prebuild is not None and _prebuild.poll() is None else None
    for p in psutil.Process().children(recursive=True):
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and (
                    prebuild is None or prebuild not in {p.pid, *(a.pid for a in p.parents())}):
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture
def no_leaks() -> Iterator[None]:
    before_children = {p.pid for p in live_children()}
    before_shm = shm_segments()
    yield
    exempt = before_children | {_tracker_pid()}

    def leftovers() -> tuple[list[psutil.Process], list[str]]:
        ours = {os.getpid()} | {p.pid for p in psutil.Process().children(recursive=True)}
        new_children = [p for p in live_children() if p.pid not in exempt]
        return new_children, sorted(s for s in shm_segments() - before_shm if segment_pid(s) in ours)

    wait_for(lambda: not any(leftovers()), 2.0, interval=0.02)  # what the test started is still ending
    new_children, new_shm = leftovers()
    for p in new_children:  # clean up anyway so that one failure does not poison later tests
        try:
            p.resume()  # a process left SIGSTOPped (stress chaos) is resumed, then killed
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(new_children, timeout=2)
    for s in new_shm:
        try:
            os.unlink(os.path.join(SHM_DIR, s))
        except OSError:
            pass
    assert not new_children, f"child processes left behind: {[(p.pid, p.name()) for p in new_children]}"
    assert not new_shm, f"shared-memory segments left behind: {new_shm}"


class TimeLimitExceeded(BaseException):
    """Raised by the ``time_limit`` fixture's alarm (a BaseException, so no kernel-side
    ``except Exception`` swallows it in the parent)."""


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """SIGALRM raises TimeLimitExceeded in the main thread wherever it is blocked, so a hung launch
    turns into a failure (and the Device's own cleanup runs) instead of a hung test run."""

    def _expired(signum, frame):
        raise TimeLimitExceeded(f"test exceeded its {seconds:g} s time limit")

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _limit(node: pytest.Item) -> float | None:
    marker = node.get_closest_marker("time_limit")
    return float(marker.args[0]) if marker else None


@pytest.fixture
def time_limit(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that runs longer than its ``@pytest.mark.time_limit(seconds)`` (default 30 s)."""
    with _alarm(_limit(request.node) or 30.0):
        yield


@pytest.fixture(autouse=True)
def _time_limit_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    """The ``time_limit`` marker works on its own: a marked test that does not ask for the fixture
    gets the same alarm (an autouse fixture runs first, so the test's other fixtures are covered)."""
    seconds = _limit(request.node)
    if seconds is None or "time_limit" in request.fixturenames:
        yield
        return
    with _alarm(seconds):
        yield


@pytest.fixture(params=["native-serve", "python-serve"])
def serve_modes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a C++ launch test twice: with compiled kernels' native serving loop on (the default) and
    off (``MPNPU_NATIVE_SERVE=0``: every launch through the core process's Python), as coverage.py
    runs its suite under each tracer. A kernel object reads the setting once (in the parent, for
    the frames it sends; in each core, when it would register a loop): the test kernels are built
    afresh for each mode."""
    from tests import ascendc_util

    monkeypatch.setenv("MPNPU_NATIVE_SERVE", "1" if request.param == "native-serve" else "0")
    ascendc_util.kernel.cache_clear()
    try:
        yield request.param
    finally:
        ascendc_util.kernel.cache_clear()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "time_limit(seconds): fail the test if it runs longer (default 30 s with "
                                       "the time_limit fixture)")
    config.addinivalue_line("markers", "slow: longer than about a second; the fast loop (-m 'not slow') skips it")


#: rows of one parametrized test that the fast loop keeps (evenly spaced over the rows, the first
#: among them); the other rows are marked ``slow``, so ``-m "not slow"`` runs a sample of every
#: table (the C++ conformance rows above all) and the full suite runs every row. One row keeps the
#: loop under a minute on 2 CPUs; every row still runs in the full suite (and in CI).
FAST_ROWS = 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark all but :data:`FAST_ROWS` evenly spaced rows of each parametrized test ``slow``.

    Deterministic (collection order, no randomness): the same rows run in every fast loop, and a
    failing row is reproduced by its node id alone."""
    rows: dict[tuple[str, str], list[pytest.Item]] = {}
    for item in items:
        if isinstance(item, pytest.Function) and getattr(item, "callspec", None) is not None:
            rows.setdefault((str(item.path), item.originalname), []).append(item)
    for group in rows.values():
        if len(group) <= FAST_ROWS:
            continue
        keep = {round(i * (len(group) - 1) / max(FAST_ROWS - 1, 1)) for i in range(FAST_ROWS)}
        for i, item in enumerate(group):
            if i not in keep:
                item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start building, in a process of its own, the C++ libraries the selected tests will need most
    (tests/prebuild.py): those of each module whose ``PREBUILD`` names them, when a selected test
    of it uses the module's ``built`` fixture. MPNPU_TEST_PREBUILD=0 turns it off."""
    global _prebuild
    if session.config.option.collectonly or os.environ.get("MPNPU_TEST_PREBUILD", "1") == "0":
        return
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return  # (under pytest-xdist one worker's prebuild serves all: they share the build cache)
    groups = sorted({g for item in session.items if "built" in getattr(item, "fixturenames", ())
                     for g in getattr(getattr(item, "module", None), "PREBUILD", ())})
    if groups:
        _prebuild = subprocess.Popen([sys.executable, "-m", "tests.prebuild", *groups], cwd=_ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=_die_with_parent)


def _die_with_parent() -> None:
    """(In the prebuild process before it starts) be killed when the test process dies, however it
    dies: a crashed session leaves no compiler running."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The prebuild process ends with the session, done or not (its compilers with it)."""
    global _prebuild
    if _prebuild is not None and _prebuild.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(_prebuild.pid, signal.SIGKILL)
        _prebuild.wait(timeout=10)
    _prebuild = None
