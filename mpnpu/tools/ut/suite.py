"""``mpnpu ut CHECKOUT``, the library side: discover the checkout's kernel unit tests, build those
registered for this chip class (``jobs`` at a time, through the object cache) and run each as soon
as it is built (``run_jobs`` binaries at a time, each in its run folder: each runs many core
processes of its own), into a :class:`~mpnpu.tools.ut.results.UtRun`.

::

    discover (cmake/ut.cmake's recipe per test)
      └─ build: -j workers, each test's units then its link ──► queue ──► run: --run-jobs binaries at a time
                                                                          (its cases each in a forked
                                                                           process; memcheck, hazards,
                                                                           data steps read from its output)
"""

from __future__ import annotations

import difflib
import os
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from mpnpu.errors import UsageError
from mpnpu.tools.folder_lock import hold_folder
from mpnpu.tools.ut import execute, resume
from mpnpu.tools.ut.build import Build, Builder, build_all, default_build_dir, toolchain
from mpnpu.tools.ut.discover import SOC_VERSION, Corpus, UtTest, discover
from mpnpu.tools.ut.execute import DataStep
from mpnpu.tools.ut.results import TestResult, UtRun
from mpnpu.tools.ut.warm_python import HEAVY, WarmPython


@dataclass(frozen=True)
class UtOptions:
    """What ``mpnpu ut`` runs and how."""

    ops: tuple[str, ...] = ()  # operator names or folders to keep (empty: every one)
    jobs: int = 1  # tests built at a time
    run_jobs: int = 1  # built tests run at a time, each in its run folder
    racecheck: bool = False  # MPNPU_RACECHECK=1 for every binary
    opt: str = "-O1"
    build_dir: str | None = None  # default: beside mpnpu's kernel cache
    run: bool = True  # False: build only
    case_timeout_s: float = 300.0  # one gtest case (MPNPU_GTEST_TIMEOUT)
    binary_timeout_s: float = 3600.0  # one test binary
    launch_timeout_s: float = 300.0  # one ICPU_RUN_KF (MPNPU_TIMEOUT)
    opbase: str | None = None
    ops_tensor: str | None = None
    mutate_syncs: bool = False  # sync mutation testing of every test that passes (mpnpu.tools.mutate)
    mutate_jobs: int = 1  # mutants of a test run side by side, each in a run folder of its own
    mutate_run_proven: bool = False  # run the mutants the baseline's traces prove redundant too
    #: where each mutant runs (a mpnpu.tools.mutate.MutantRunner; None: in this process's slots)
    mutate_runner: Any = None
    checks: tuple[str, ...] = ()  # "initcheck", "synccheck": MPNPU_INITCHECK / MPNPU_SYNCCHECK for every binary
    pipes: str = "kernel"  # MPNPU_PIPES for every binary
    pipe_latency_us: float | None = None  # MPNPU_PIPE_LATENCY_US (None: the default)
    no_auto_sync: bool = False  # MPNPU_NO_AUTO_SYNC=1: racecheck without the compiler's automatic syncs
    stall_grace_s: float | None = None  # MPNPU_STALL_GRACE (None: the default)
    #: --resume: an earlier run's mutants by test id (mpnpu.tools.ut.resume.load), taken over where the
    #: test's identity is the same
    resume: dict[str, resume.Earlier] | None = None
    #: the data scripts run forked from an interpreter that imported their heavy packages once
    #: (mpnpu.tools.ut.warm_python); False: a fresh python3 each time
    warm_python: bool = True
    #: told (test id, mutants classified, mutants) as each mutant of a test is classified
    mutant_progress: Callable[[str, int, int], None] | None = None


def select(tests: list[UtTest], wanted: tuple[str, ...]) -> list[UtTest]:
    """The tests named by ``wanted`` (an operator name, its folder, or the folder's last part); every
    test when empty. A name that matches nothing is a usage error naming the closest ones."""
    if not wanted:
        return tests
    chosen: list[UtTest] = []
    for w in wanted:
        w = w.strip().strip("/")
        hits = [t for t in tests if w in (t.op, t.op_dir, os.path.basename(t.op_dir))]
        if not hits:
            names = sorted({t.op for t in tests} | {t.op_dir for t in tests})
            near = difflib.get_close_matches(w, names, n=5)
            raise UsageError(f"--ops {w}: no such operator unit test" + (f"; did you mean {', '.join(near)}?" if near
                                                                         else ""))
        chosen += [t for t in hits if t not in chosen]
    return [t for t in tests if t in chosen]


def _result_of(test: UtTest) -> TestResult:
    return TestResult(test.id, test.op, test.socs, test.in_scope)


def _apply_build(r: TestResult, b: Build) -> None:
    r.built = b.compiled
    r.linked = b.linked
    r.build_cached = b.cached
    r.build_s = b.seconds
    r.units = [{"source": u.source, "ok": u.ok, "cached": u.cached, "seconds": round(u.seconds, 2)} for u in b.units]
    r.missing = b.missing
    r.errors = b.errors
    r.error_count = b.error_count
    r.notes = b.notes
    r.high_level_headers = b.high_level_headers
    r.high_level_names = b.high_level_names
    r.compiles_with_stand_ins = b.compiles_with_stand_ins


def _mutate(r: TestResult, b: Build, corpus: Corpus, build_dir: str, options: UtOptions,
            stop: threading.Event | None = None, warm: WarmPython | None = None) -> None:
    """Sync mutation testing of a test that passed: each sync site it executes dropped in turn
    (:func:`mpnpu.tools.mutate.mutate_program`), each mutant in a run folder of its own; the sync
    sites of the operator's kernel folder that no launch executed are listed as uncovered."""
    from mpnpu.ascendc.build.syncpoints import scan
    from mpnpu.tools.mutate import mutate_program

    places = []
    for i in range(options.mutate_jobs):
        slot = f"-mutant{i}"
        places.append((execute.run_dir(build_dir, b.test, corpus, slot),
                       execute.environment(build_dir, b.test, corpus, case_timeout=options.case_timeout_s,
                                           launch_timeout=options.launch_timeout_s, racecheck=False, slot=slot,
                                           pipes=options.pipes, pipe_latency_us=options.pipe_latency_us,
                                           checks=options.checks, kernel_mode=b.kernel_mode,
                                           no_auto_sync=options.no_auto_sync,
                                           stall_grace_s=options.stall_grace_s, warm=warm)))
    # What must not have changed for an earlier run's mutants of this test to stand (--resume)
    r.resume_key = resume.identity(b.binary, os.path.join(corpus.repo, b.test.op_dir, "tests"), {
        "pipes": options.pipes, "pipe_latency_us": options.pipe_latency_us, "checks": list(options.checks),
        "no_auto_sync": options.no_auto_sync, "stall_grace_s": options.stall_grace_s,
        "case_timeout_s": options.case_timeout_s, "launch_timeout_s": options.launch_timeout_s,
        "binary_timeout_s": options.binary_timeout_s, "run_proven": options.mutate_run_proven,
        "kernel_mode": str(b.kernel_mode)}, places[0][1])
    earlier = (options.resume or {}).get(b.test.id)
    known = earlier.mutants if earlier is not None and earlier.identity == r.resume_key else None
    kernel_dir = os.path.join(corpus.repo, b.test.op_dir, "op_kernel")
    sources = [os.path.join(d, n) for d, _, names in sorted(os.walk(kernel_dir)) for n in sorted(names)
               if n.endswith((".cpp", ".h", ".hpp", ".inl"))] if os.path.isdir(kernel_dir) else []
    try:
        r.mutation = mutate_program([b.binary], jobs=options.mutate_jobs, timeout_s=options.binary_timeout_s,
                                    sources_sites=sorted(scan(sources)), places=places,
                                    stop=stop.is_set if stop is not None else None, runner=options.mutate_runner,
                                    run_proven=options.mutate_run_proven, known=known,
                                    progress=_mutants_of(b.test.id, options.mutant_progress))
    except UsageError as e:  # (a test that passed once and failed its baseline: flaky, or fails in a new folder)
        r.mutation_error = str(e)


def _warm_python(steps: Iterable[list[DataStep]]) -> WarmPython | None:
    """The warm interpreter for the data scripts the tests call (``steps``: each test's), importing
    the heavy packages they import that are installed; None when they import none."""
    wanted = {name for test_steps in steps for step in test_steps if step.called
              for name in step.imports if name not in step.missing}
    packages = [p for p in HEAVY if p in wanted]
    if not packages:
        return None
    return WarmPython(packages, env={**os.environ, "LC_ALL": "C", "PYTHONUNBUFFERED": "1"})


def _mutants_of(test: str, told: Callable[[str, int, int], None] | None) -> Callable[[int, int, Any], None] | None:
    """mutate_program's progress as ``told(test, classified, mutants)``."""
    if told is None:
        return None
    return lambda done, total, _: told(test, done, total)


def run_ut(checkout: str, options: UtOptions, progress: Callable[[TestResult], None] | None = None,
           started: Callable[[int], None] | None = None) -> UtRun:
    """Discover, build and run the checkout's unit tests for this chip class.

    ``started(n)`` is told how many tests will be built; ``progress(result)`` is called as each test
    finishes (built and run, or failed to build). Ctrl-C ends the run in order: the result says it
    was interrupted and holds the tests that finished. The build folder is this run's alone while
    it lasts (:mod:`mpnpu.tools.folder_lock`): a UsageError at once when another run holds it.
    """
    start = time.monotonic()
    corpus = Corpus.at(checkout, options.opbase, options.ops_tensor)  # (a wrong checkout is said first)
    build_dir = os.path.abspath(options.build_dir or default_build_dir())
    with hold_folder(build_dir, "mpnpu ut"):
        return _run_ut(corpus, options, build_dir, start, progress, started)


def _run_ut(corpus: Corpus, options: UtOptions, build_dir: str, start: float,
            progress: Callable[[TestResult], None] | None, started: Callable[[int], None] | None) -> UtRun:
    found = discover(corpus)
    tests = select(found.tests, options.ops)
    run = UtRun(corpus.repo, SOC_VERSION, [_result_of(t) for t in tests], racecheck=options.racecheck,
                jobs=options.jobs, run_jobs=options.run_jobs, opt=options.opt, filtered=bool(options.ops),
                unreadable=found.unreadable,
                mutate_syncs=options.mutate_syncs, checks=options.checks)
    by_id = {r.id: r for r in run.tests}
    todo = [t for t in tests if t.in_scope]
    if started is not None:
        started(len(todo))
    builder = Builder(corpus, toolchain(options.opt), build_dir)
    runnable: queue.Queue[Build | None] = queue.Queue()
    stop = threading.Event()
    # (the tests run meanwhile: until the server has imported its packages, their scripts wait for it)
    steps = {t.id: execute.data_steps(t) for t in todo}  # (read once: the warm interpreter's packages, the report)
    warm = _warm_python(steps.values()) if options.run and options.warm_python else None

    # (progress is called from the build workers and every runner thread)
    progress_lock = threading.Lock()

    def report(r: TestResult) -> None:
        if progress is not None:
            with progress_lock:
                progress(r)

    def finished(b: Build) -> None:
        r = by_id[b.test.id]
        _apply_build(r, b)
        r.data = steps[b.test.id]
        if options.run and b.linked:
            runnable.put(b)
        else:
            report(r)

    def run_one(b: Build) -> None:
        r = by_id[b.test.id]
        cwd = execute.run_dir(build_dir, b.test, corpus)
        env = execute.environment(build_dir, b.test, corpus, case_timeout=options.case_timeout_s,
                                  launch_timeout=options.launch_timeout_s, racecheck=options.racecheck,
                                  pipes=options.pipes, pipe_latency_us=options.pipe_latency_us,
                                  checks=options.checks, kernel_mode=b.kernel_mode,
                                  no_auto_sync=options.no_auto_sync, stall_grace_s=options.stall_grace_s,
                                  warm=warm)
        run = execute.run_binary(b.binary, cwd, env, options.binary_timeout_s)
        if stop.is_set():  # stopped by the interrupt, not finished: the test stays built, not run
            return
        r.run = run
        if options.mutate_syncs and r.status == "passed":
            _mutate(r, b, corpus, build_dir, options, stop, warm)
        report(r)

    def runner() -> None:
        while True:
            b = runnable.get()
            if b is None or stop.is_set():
                return
            try:
                run_one(b)
            except OSError as e:  # (its run folder or binary could not be set up: this test only)
                by_id[b.test.id].errors.append(f"could not run the test: {e}")
                report(by_id[b.test.id])

    # Each runner takes the next built test; a test runs in its own run folder (and its mutants in
    # theirs), so tests running side by side share no file.
    threads = [threading.Thread(target=runner, name=f"mpnpu-ut-runner-{i}", daemon=True)
               for i in range(max(1, options.run_jobs))]
    execute.allow_running()
    for thread in threads:
        thread.start()
    try:
        build_all(builder, todo, options.jobs, finished)
        for _ in threads:
            runnable.put(None)
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
    except KeyboardInterrupt as e:
        run.interrupted, run.interrupt = True, e
        stop.set()
        for _ in threads:
            runnable.put(None)
        execute.stop_running()
        deadline = time.monotonic() + 60  # (one wait for them all: each binary ends in order)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
    finally:
        if warm is not None:
            warm.close()
    run.wall_s = time.monotonic() - start
    return run
