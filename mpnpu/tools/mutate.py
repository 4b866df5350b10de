"""Sync mutation testing of a CPU-debug test program: would its own tests notice a missing sync?

::

    baseline    the program as it is, MPNPU_SYNC_LOG set: it must pass (exit 0); every sync call site
                its launches executed is learnt (mpnpu.tools.cpudebug writes them)
    mutants     one run per executed site, MPNPU_DROP_SYNC=<site> (a run-time switch: nothing is
                rebuilt), side by side in ``jobs`` slots; in a unit-test program of ``mpnpu ut``,
                only the tests whose launches executed the site run (--gtest_filter, each test
                started with the CPU-debug settings it had: Learnt.only); the filtered tests run once
                with nothing dropped first (once per distinct filter), and when they pass so, a kill
                seen through that filter stands; otherwise (a test may need files an earlier test
                wrote) the kill is confirmed by the program whole; a run that fails is the site **killed**,
                and how: the program's own check (a non-zero exit), a gtest failure (which tests),
                a deadlock or another device error mpnpu reported, a time-out
    proven      a sync inside one core (SetFlag, WaitFlag, PipeBarrier) whose removal leaves racecheck
                with no hazard over the baseline's traces (mpnpu.directed.mutation.hazards_without) is
                **redundant** without a run at all: no pair of accesses becomes unordered, so no
                launch can compute anything else, and its pipe events start afresh each launch, as
                racecheck pairs them (a cross-core sync is run: a flag set left over reaches the next
                launch, which one launch's trace does not show); ``run_proven`` runs them anyway
    survivors   when racecheck of the baseline's traces with the site taken out finds no hazard
                (mpnpu.directed.mutation.hazards_without), **redundant** without another run;
                otherwise rerun with MPNPU_RACECHECK=1 and MPNPU_DIRECTED=1: racecheck's first hazard
                between cores is forced by a hold (the audit's directed runs), and a failure there
                kills the mutant too ("... in a directed run"); otherwise a hazard that no assertion caught is
                **untested** (the sync protects something no test checks, or a race these inputs
                do not show); no hazard is **redundant** for these inputs
    score       killed / executed: the share of executed sync points the tests' own assertions
                kill (racecheck alone never kills a mutant)

Nothing here changes the program or its data: a mutant is the same binary with one sync call
skipped, and the device's scheduling is as in any run (no perturbation).
"""

from __future__ import annotations

import copy
import json
import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from mpnpu import settings
from mpnpu.directed.mutation import (
    BY_CHECK,
    BY_DEADLOCK,
    BY_DEVICE,
    BY_GTEST,
    BY_PYTEST,
    BY_TIMEOUT,
    IN_DIRECTED_RUN,
    KILLED,
    REDUNDANT,
    SURVIVED,
    UNTESTED,
    score,
)
from mpnpu.errors import UsageError

#: a failed test's line in gtest's output (not its summary "[  FAILED  ] 2 tests, listed below:")
_GTEST_FAILED = re.compile(r"^\[  FAILED  \] (?!\d+ tests?,)(\S+)", re.M)
#: a failed test in pytest's short summary ("FAILED tests/t.py::test_x - AssertionError ...")
_PYTEST_FAILED = re.compile(r"^FAILED (\S+)", re.M)
_HAZARDS = re.compile(r"SUMMARY: (\d+) hazards? ")
_MPNPU_DEVICE_STATUS = 3
#: what mpnpu says of a launch that could never finish (a wait nobody releases, a barrier short of a party)
_DEADLOCK_WORDS = ("deadlock", "would hang", "did not complete", "that no core set", "waits for an event no")
_DIRECTED = re.compile(r"directed run: held .*")


@dataclass
class Mutant:
    """One executed sync site, dropped."""

    site: str  # "dir/file.cpp:LINE", as MPNPU_DROP_SYNC takes it
    call: str  # "SyncAll", "SetFlag", ...
    status: str = ""  # KILLED or SURVIVED
    how: str = ""  # for a killed mutant: BY_CHECK, BY_GTEST, ...
    tests: list[str] = field(default_factory=list)  # gtest tests that failed
    survivor_class: str = ""  # for a survivor: REDUNDANT or UNTESTED
    hazards: int = 0  # racecheck's count for a survivor
    detail: str = ""  # the first line mpnpu or the program said about it
    exit_code: int | None = None
    seconds: float = 0.0
    #: the tests its runs ran (those that executed the site); empty: the program whole
    ran: list[str] = field(default_factory=list)
    #: racecheck's hazards in the baseline's traces with the site taken out (None: not worked out)
    hazards_without: int | None = None
    #: where its runs ran: "" on this machine's slots; "ray node HOST (ID)" for a Ray task
    ran_on: str = ""
    #: classified by an earlier run and taken over (mpnpu ut --resume), not run in this one
    resumed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"site": self.site, "call": self.call, "status": self.status, "how": self.how, "tests": self.tests,
                "survivor_class": self.survivor_class, "hazards": self.hazards, "detail": self.detail,
                "exit_code": self.exit_code, "seconds": round(self.seconds, 3), "ran": self.ran,
                "hazards_without": self.hazards_without, **({"ran_on": self.ran_on} if self.ran_on else {}),
                **({"resumed": True} if self.resumed else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Mutant:
        """The mutant :meth:`to_dict` wrote (an earlier run's report: ``mpnpu ut --resume``)."""
        m = cls(str(d["site"]), str(d["call"]))
        for name in ("status", "how", "survivor_class", "detail", "ran_on"):
            setattr(m, name, str(d.get(name) or ""))
        m.tests, m.ran = list(d.get("tests") or []), list(d.get("ran") or [])
        m.hazards, m.seconds = int(d.get("hazards") or 0), float(d.get("seconds") or 0.0)
        m.exit_code, m.hazards_without = d.get("exit_code"), d.get("hazards_without")
        return m


@dataclass
class MutationReport:
    """Every mutant of one program, and the score."""

    command: list[str]
    mutants: list[Mutant]
    baseline_s: float
    elapsed_s: float = 0.0
    #: sync call sites found in sources the caller named that no launch executed
    uncovered: list[str] = field(default_factory=list)
    interrupted: bool = False
    #: mutants taken over from an earlier run (``known`` of :func:`mutate_program`), not run now
    resumed: int = 0

    @property
    def killed(self) -> list[Mutant]:
        return [m for m in self.mutants if m.status == KILLED]

    @property
    def survivors(self) -> list[Mutant]:
        return [m for m in self.mutants if m.status == SURVIVED]

    @property
    def score(self) -> float:
        """Killed / executed sync points (1.0 when the program executes none: nothing to kill)."""
        return score(len(self.killed), len([m for m in self.mutants if m.status]))

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, "score": self.score, "executed": len(self.mutants),
                "killed": len(self.killed), "survived": len(self.survivors), "uncovered": self.uncovered,
                "baseline_s": round(self.baseline_s, 3), "elapsed_s": round(self.elapsed_s, 3),
                "interrupted": self.interrupted, "resumed": self.resumed,
                "mutants": [m.to_dict() for m in self.mutants]}


@dataclass(frozen=True)
class _Run:
    code: int | None  # None: timed out
    stdout: str
    stderr: str
    seconds: float


def _run(argv: Sequence[str], env: Mapping[str, str], timeout_s: float, cwd: str | None = None) -> _Run:
    """The program once, in a session of its own (a time-out ends its core processes with it)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(env),
                         cwd=cwd, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout_s)
        code: int | None = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        code = None
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    return _Run(code, out, err, time.perf_counter() - t0)


#: the controls each run sets for itself (the caller's would change what a run does or reports)
_CONTROLS = tuple(s.env for s in (settings.DROP_SYNC, settings.SYNC_LOG, settings.RACECHECK, settings.DIRECTED,
                                  settings.TIMELINE)) + ("GTEST_FAIL_FAST", "MPNPU_GTEST_STATES")


def _clean_env(base: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment without the run controls mutation testing sets itself (the rest, such
    as a checkout the tests need or the build cache, as the caller has it)."""
    return {k: v for k, v in base.items() if k not in _CONTROLS}


def executed_sites(log_text: str) -> dict[str, str]:
    """site -> call, from an MPNPU_SYNC_LOG file: every site any launch executed, in first-seen order."""
    return learn(log_text).sites


#: a mutant's run stops at the first failed test (GoogleTest's variable; other programs ignore it)
_FAIL_FAST = {"GTEST_FAIL_FAST": "1"}


@dataclass
class Learnt:
    """What the baseline's MPNPU_SYNC_LOG says: every executed site (site -> call, first-seen order)
    and, when every launch named its test (a unit-test program of ``mpnpu ut``), which tests
    executed each site and the CPU-debug settings each test started with."""

    sites: dict[str, str] = field(default_factory=dict)
    #: site -> every call any launch made there (one line may make several)
    calls_of: dict[str, set[str]] = field(default_factory=dict)
    tests_of: dict[str, list[str]] = field(default_factory=dict)
    state_of: dict[str, str] = field(default_factory=dict)
    #: site -> racecheck's hazards over the baseline's launches with the site dropped from their traces
    #: (None: some launch's could not be worked out; mpnpu.directed.mutation.hazards_without)
    hazards_without: dict[str, int | None] = field(default_factory=dict)

    def only(self, site: str) -> tuple[list[str], dict[str, str]]:
        """(arguments, environment) that run only the tests that executed ``site``, each started with
        the settings it had in the run of them all; ([], {}) to run the program whole."""
        tests = self.tests_of.get(site)
        if not tests:
            return [], {}
        states = ";".join(f"{t}={self.state_of[t]}" for t in tests if self.state_of.get(t))
        return [f"--gtest_filter={':'.join(tests)}"], ({"MPNPU_GTEST_STATES": states} if states else {})


def learn(log_text: str) -> Learnt:
    """:class:`Learnt` from an MPNPU_SYNC_LOG file's text."""
    out = Learnt()
    by_test = True
    for text in log_text.splitlines():
        if not text.strip():
            continue
        line = json.loads(text)
        test = line.get("test")
        by_test = by_test and bool(test) and bool(settings.GTEST_NAME.fullmatch(test))
        for site, info in line["sites"].items():
            out.sites.setdefault(site, info["call"])
            out.calls_of.setdefault(site, set()).update(info.get("calls") or [info["call"]])
            known, more = out.hazards_without.get(site, 0), info.get("hazards_without")
            out.hazards_without[site] = None if known is None or more is None else known + more
            if test:
                tests = out.tests_of.setdefault(site, [])
                if test not in tests:
                    tests.append(test)
        if test:
            out.state_of.setdefault(test, line.get("state", ""))
    if not by_test:  # a launch outside any named test (or a name a filter cannot say): run everything
        out.tests_of.clear()
    return out


def classify_failure(run: _Run) -> tuple[str, list[str], str]:
    """(how, failed gtest names, detail) for a mutant run that did not pass."""
    failed = list(dict.fromkeys(_GTEST_FAILED.findall(run.stdout)))
    said = next((line for line in run.stderr.splitlines() if line.startswith("mpnpu:")), "")
    if run.code is None:
        return BY_TIMEOUT, failed, "the program did not end within the time-out"
    if run.code == _MPNPU_DEVICE_STATUS and said:
        how = BY_DEADLOCK if any(w in said for w in _DEADLOCK_WORDS) else BY_DEVICE
        return how, failed, said
    how = BY_GTEST
    if not failed:
        failed, how = list(dict.fromkeys(_PYTEST_FAILED.findall(run.stdout))), BY_PYTEST
    if failed:
        return how, failed, f"{len(failed)} test{'s' if len(failed) != 1 else ''} failed: {', '.join(failed)}"
    last = (run.stdout.strip().splitlines() or run.stderr.strip().splitlines() or [""])[-1]
    return BY_CHECK, failed, f"exit status {run.code}" + (f": {last}" if last else "")


#: the calls whose mutant the baseline's traces settle when racecheck finds no hazard without them:
#: syncs inside one core, whose pipe events start afresh each launch (see the module docstring)
PROVEN_BY_TRACE = frozenset({"SetFlag", "WaitFlag", "PipeBarrier"})
PROVEN_DETAIL = "racecheck finds no hazard without it over the baseline's launches, for these inputs (not run)"


def proven_redundant(m: Mutant, hazards_without: int | None, calls: set[str] | None = None) -> bool:
    """Fill in ``m`` as redundant without a run when the baseline's traces prove it (see the module
    docstring); whether they did. ``calls``: every call made at its site (default: ``m.call``), all of
    which must be syncs inside one core."""
    if not (calls or {m.call}) <= PROVEN_BY_TRACE or hazards_without != 0:
        return False
    m.status, m.survivor_class, m.hazards_without, m.seconds = SURVIVED, REDUNDANT, 0, 0.0
    m.detail = PROVEN_DETAIL
    return True


#: how a mutant runs only the tests that executed its site: (arguments, environment, whether those
#: tests alone pass with nothing dropped: True, False, or None when not known here), from
#: :meth:`Learnt.only` and a filtered baseline run; ([], {}, True) runs the program whole
Only = tuple[list[str], dict[str, str], bool | None]

#: runs one mutant and classifies it: :func:`classify_mutant`'s arguments, the mutant it classified back
MutantRunner = Callable[[list[str], Mutant, Only, list[str], int | None, str | None, dict[str, str], float], Mutant]


def classify_mutant(argv: list[str], m: Mutant, only: Only, ran: list[str],
                    hazards_without: int | None, cwd: str | None, base: dict[str, str], timeout_s: float) -> Mutant:
    """Run the mutant ``m`` (``argv`` with ``m.site`` dropped) in ``cwd`` with ``base`` and classify it
    (see the module docstring); ``m`` filled in and returned. ``only``: the arguments and environment
    that run just the tests that executed the site (:meth:`Learnt.only`) and whether those tests
    alone passed with nothing dropped (:data:`Only`), ``ran`` their names,
    ``hazards_without`` racecheck's count over the baseline's traces without the site. Self-contained,
    so that it can run in another process (a Ray task) and hand ``m`` back."""
    # Only the tests that executed the site run: the others never reach the dropped call, so they
    # run as in the baseline. A kill seen that way stands when those tests alone passed with nothing
    # dropped; otherwise it is confirmed by the program whole (a test may need files an earlier
    # test wrote).
    extra, only_env, filter_passes = only
    if extra and filter_passes is False:  # its tests fail alone even with nothing dropped: the whole says
        extra, only_env, ran = [], {}, []
    m.ran, m.hazards_without = list(ran), hazards_without
    # A mutant stops at its first kill: GoogleTest's GTEST_FAIL_FAST skips the tests after a failed one.
    r = _run([*argv, *extra], {**base, **only_env, **_FAIL_FAST, "MPNPU_DROP_SYNC": m.site}, timeout_s, cwd)
    m.seconds = r.seconds
    if r.code != 0 and extra and filter_passes is None:  # (not known here: confirmed by the whole)
        whole = _run(argv, {**base, **_FAIL_FAST, "MPNPU_DROP_SYNC": m.site}, timeout_s, cwd)
        m.seconds += whole.seconds
        if whole.code == 0:  # not killed after all: the rest of its runs are whole too
            r, extra, only_env, m.ran = whole, [], {}, []
    m.exit_code = r.code
    if r.code != 0:
        m.status = KILLED
        m.how, m.tests, m.detail = classify_failure(r)
        return m
    if hazards_without == 0:
        # racecheck of the baseline's traces with the site taken out finds nothing: no race to force
        m.status, m.survivor_class = SURVIVED, REDUNDANT
        m.detail = "racecheck finds no hazard without it, for these inputs"
        return m
    check = _run([*argv, *extra], {**base, **only_env, **_FAIL_FAST, "MPNPU_DROP_SYNC": m.site,
                                   "MPNPU_RACECHECK": "1", "MPNPU_DIRECTED": "1"}, timeout_s, cwd)
    m.seconds += check.seconds
    m.hazards = sum(int(n) for n in _HAZARDS.findall(check.stderr))
    if check.code != 0:  # the race, forced by a hold (or shown by the traced run), was caught
        m.status, m.exit_code = KILLED, check.code
        m.how, m.tests, m.detail = classify_failure(check)
        held = _DIRECTED.search(check.stderr)
        if held and m.how in (BY_CHECK, BY_GTEST):
            m.how = f"{m.how} {IN_DIRECTED_RUN}"
            m.detail += f" ({held.group(0)})"
        return m
    m.status = SURVIVED
    m.survivor_class = UNTESTED if m.hazards else REDUNDANT
    m.detail = (f"racecheck found {m.hazards} hazard{'s' if m.hazards != 1 else ''} that no assertion caught"
                if m.hazards else "racecheck finds no hazard without it, for these inputs")
    return m


#: where one run of the program happens: its working directory (None: this process's) and environment
Place = tuple[str | None, Mapping[str, str]]


def mutate_program(argv: Sequence[str], *, jobs: int = 1, timeout_s: float = 300.0,
                   env: Mapping[str, str] | None = None, sources_sites: Sequence[str] = (),
                   progress: Callable[[int, int, Mutant], None] | None = None,
                   places: Sequence[Place] | None = None,
                   stop: Callable[[], bool] | None = None,
                   runner: MutantRunner | None = None, run_proven: bool = False,
                   known: Mapping[str, Mutant] | None = None) -> MutationReport:
    """Mutation-test the CPU-debug program ``argv`` (built with ``python -m mpnpu.ascendc --cflags
    --libs``): see the module docstring. ``sources_sites``: sync call sites read from its sources
    (:func:`mpnpu.ascendc.build.syncpoints`), so that those no launch executed are listed as uncovered.
    ``progress(done, total, mutant)`` after each mutant is classified.

    ``places``: one (working directory, environment) per slot, for a program that writes and reads
    files where it runs (a unit test's generated data and outputs): runs side by side each take a
    place of their own, so no mutant reads another's files; the baseline runs in the first. Default:
    ``jobs`` slots in this process's directory, with ``env``. ``stop()``: true once the caller was
    interrupted (asked from another thread): the mutants not started yet are left unclassified and
    the report says it was interrupted. ``runner``: where each mutant runs (default
    :func:`classify_mutant` in this process; :class:`mpnpu.tools.mutate_cluster.RayMutants` runs them
    as Ray tasks), at most one per place at a time. ``run_proven``: run the mutants the baseline's
    traces prove redundant too (:func:`proven_redundant`). ``known``: mutants an earlier run of the
    same program classified, by site (:mod:`mpnpu.tools.ut.resume`): a site executed now that is
    among them takes its classification over without a run (``report.resumed`` counts them)."""
    if not argv:
        raise UsageError("give the program to run, after --")
    if not os.path.isfile(argv[0]) or not os.access(argv[0], os.X_OK):
        raise UsageError(f"{argv[0]} is not an executable program")
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if places is not None and not places:
        raise UsageError("mutation testing needs at least one place to run the program")
    # each run takes a free place and gives it back: runs side by side never share one
    slots: queue.Queue[tuple[str | None, dict[str, str]]] = queue.Queue()
    given: Sequence[Place] = places or [(None, os.environ if env is None else env)] * jobs
    every = [(cwd, _clean_env(place_env)) for cwd, place_env in given]
    for place in every:
        slots.put(place)
    first_cwd, base = every[0]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mpnpu-mutate-") as tmp:
        log = os.path.join(tmp, "sync.log")
        baseline = _run(argv, {**base, "MPNPU_SYNC_LOG": log}, timeout_s, first_cwd)
        if baseline.code != 0:
            how, _, detail = classify_failure(baseline)
            raise UsageError(f"{argv[0]} fails as it is ({how}: {detail}); mutation testing needs a program "
                             f"that passes")
        learnt = learn(open(log).read()) if os.path.exists(log) else Learnt()
        sites = learnt.sites
    report = MutationReport(list(argv), [Mutant(site, call) for site, call in sites.items()], baseline.seconds)
    report.uncovered = sorted(s for s in sources_sites if not any(_same_site(s, t) for t in sites))

    run_one = runner or classify_mutant

    def one(m: Mutant) -> None:
        if stop is not None and stop():
            report.interrupted = True
            return
        earlier = (known or {}).get(m.site)
        if earlier is not None and earlier.status and earlier.call == m.call:
            m.__dict__.update(copy.deepcopy(earlier.__dict__))
            m.resumed = True
            with lock:
                report.resumed += 1
            done(m)
            return
        if not run_proven and proven_redundant(m, learnt.hazards_without.get(m.site), learnt.calls_of.get(m.site)):
            m.ran = list(learnt.tests_of.get(m.site, []))
            done(m)
            return
        cwd, place_env = slots.get()
        try:
            extra, only_env = learnt.only(m.site)
            # (a runner elsewhere, a Ray task, runs where this process's verdict says nothing: there
            # a kill through a filter is confirmed whole, as before)
            passes = (filter_passes(extra, only_env, cwd, place_env) if runner is None else None) if extra else True
            got = run_one(list(argv), m, (extra, only_env, passes), list(learnt.tests_of.get(m.site, [])),
                          learnt.hazards_without.get(m.site), cwd, place_env, timeout_s)
        finally:
            slots.put((cwd, place_env))
        if stop is not None and stop():
            # Interrupted while it ran: its programs may have been stopped under it (and the data
            # scripts they call), so a failure now says nothing about the sync; left unclassified
            # (classify_mutant fills ``m`` in as it goes).
            m.__dict__.update(Mutant(m.site, m.call).__dict__)
            report.interrupted = True
            return
        m.__dict__.update(got.__dict__)  # a runner elsewhere (a Ray task) hands back a copy
        if not m.status and not m.detail:  # the runner was cancelled before it ran this one
            report.interrupted = True
            return
        done(m)

    lock = threading.Lock()
    finished = [0]
    # (place, filter) -> whether its tests alone pass there with nothing dropped: run once per place
    # and distinct filter, the first mutant that needs it running it and the others waiting for it
    filtered: dict[str, tuple[threading.Event, list[bool]]] = {}

    def filter_passes(extra: list[str], only_env: dict[str, str], cwd: str | None, place_env: dict[str, str]) -> bool:
        # per place: what a place's earlier runs left there (files a test reads) is part of the verdict
        key = f"{cwd}|" + " ".join(extra) + "|" + json.dumps(only_env, sort_keys=True)
        with lock:
            entry = filtered.get(key)
            mine = entry is None
            if entry is None:
                entry = filtered[key] = (threading.Event(), [False])
        ready, verdict = entry
        if mine:
            try:
                verdict[0] = _run([*argv, *extra], {**place_env, **only_env}, timeout_s, cwd).code == 0
            finally:
                ready.set()
        ready.wait()
        return verdict[0]

    def done(m: Mutant) -> None:
        with lock:
            finished[0] += 1
            if progress is not None:
                progress(finished[0], len(report.mutants), m)

    pool = ThreadPoolExecutor(max_workers=slots.qsize())
    try:
        for f in [pool.submit(one, m) for m in report.mutants]:
            f.result()
    except KeyboardInterrupt:
        report.interrupted = True
        cancel = getattr(run_one, "cancel", None)
        if cancel is not None:  # mutants running elsewhere (Ray tasks) are stopped there
            cancel()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    report.elapsed_s = time.perf_counter() - start
    return report


def _same_site(a: str, b: str) -> bool:
    """Two site names of one line: the same file name and line ("op_kernel/k.h:12" read from the
    sources and "k/k.h:12" as the build named the folder it staged them in)."""
    return os.path.basename(a) == os.path.basename(b)
