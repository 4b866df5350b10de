"""Running a built unit test and reading what it said: each gtest case's result and time, memcheck
reports, racecheck hazards, and the data steps (the test's own gen_data.py / compare_data.py) that
could not run.

A test runs where the repository's build runs it: in a folder four levels below a view of the
repository (``run/<test>/build/tests/ut/op_kernel``, the levels above holding links to the
repository's top-level entries), so the relative paths tests use for their data folders
(``../../../../quant/<op>/tests/ut/op_kernel/<op>_data``) reach the repository's, and what they
copy and generate lands in the run folder. ``python3`` is the interpreter mpnpu runs in (its
numpy), ``OPS_NN_ROOT`` the repository. Files the test's CMake copies into the build tree are
copied there first.

Each test binary's cases each run in a forked process of their own (mpnpu's gtest), so a memcheck
report, a crash or a hung case fails that case and the binary goes on to the next; a binary that
outlives its timeout is stopped (SIGTERM to its process group, SIGKILL after a grace period).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mpnpu import settings
from mpnpu.tools.ut.discover import Corpus, UtTest

if TYPE_CHECKING:
    from mpnpu.tools.ut.warm_python import WarmPython

_RUN = re.compile(r"^\[ RUN      \] (?P<name>\S+)\s*$")
_END = re.compile(r"^\[ {2}(?P<tag>     OK|FAILED|SKIPPED) {1,2}\] (?P<name>[^\s,]+)(?:, where GetParam\(\) = .*?)?"
                  r" \((?P<ms>\d+) ms\)\s*$")
_HAZARDS = re.compile(r"^====== SUMMARY: (?P<n>\d+) hazards? ")
#: a defect initcheck or synccheck reports (their warnings, e.g. a redundant sync, are not counted)
_CHECK_DEFECT = re.compile(r"^====== ERROR: .* \((?:initcheck|synccheck)\) at ")
_MEMCHECK = re.compile(r"MemcheckError|illegal (?:read|write) of (?:GM|local)|memcheck", re.I)
_NO_MODULE = re.compile(r"No module named '(?P<m>[\w.]+)'")
_NO_SCRIPT = re.compile(r"can't open file '(?P<f>[^']+)'")
_LAUNCH_LINE = re.compile(r"^mpnpu: ICPU_RUN_KF\([^)]*\) at [^:\s]+:\d+: (?P<what>.*)$")
_RAISED = re.compile(r"raised (?P<cls>\w+): (?P<msg>.*?)(?: at (?P<where>\S+:\d+)(?: \([^)]*\))?)?"
                     r"(?: \(and \d+ other cores? failed after it\))?$")
_NOT_FAULTS = ("racecheck", "timeline written", "no run finished")
#: what a case's log keeps (a racecheck report can be long)
LOG_LIMIT = 20_000
#: how long a binary may take to end after SIGTERM before it is killed
GRACE_S = 15.0


@dataclass
class CaseRun:
    """One gtest case of a binary."""

    name: str
    status: str  # passed, failed, skipped, unfinished (the binary ended inside it)
    seconds: float
    memcheck: bool = False
    hazards: int = 0
    log: str = ""
    mpnpu: list[str] = field(default_factory=list)  # mpnpu's own lines (faults, racecheck, repeats)
    fault: str = ""  # what stopped a launch, without its place: "UnsupportedError: KERNEL_TASK_TYPE_DEFAULT(9): ..."
    fault_where: str = ""  # the kernel line it names
    defects: int = 0  # initcheck / synccheck defects (distinct findings) in the case's launches

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "status": self.status, "seconds": round(self.seconds, 3), "memcheck": self.memcheck,
                "hazards": self.hazards, "defects": self.defects, "fault": self.fault, "fault_where": self.fault_where,
                "mpnpu": self.mpnpu, "log": self.log}


@dataclass
class BinaryRun:
    """A test binary's run."""

    exit_code: int | None  # None: stopped at its timeout
    seconds: float
    cases: list[CaseRun] = field(default_factory=list)
    timed_out: bool = False
    output_tail: str = ""  # the end of the output (what a binary that printed no case said)
    missing_packages: list[str] = field(default_factory=list)  # Python packages the data scripts lacked
    missing_files: list[str] = field(default_factory=list)  # scripts a test tried to run and did not find

    @property
    def gtest(self) -> str:
        """The binary's verdict as gtest gives it: passed, failed, or none (no case result printed)."""
        if not self.cases:
            return "none"
        if any(c.status in ("failed", "unfinished") for c in self.cases) or self.timed_out:
            return "failed"
        return "passed" if self.exit_code == 0 else "failed"


def parse_output(text: str) -> list[CaseRun]:
    """The cases of a gtest run's output (stdout and stderr together), with each case's own lines."""
    cases: list[CaseRun] = []
    current: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        m = _RUN.match(line)
        if m:
            if current is not None:
                cases.append(_case(current, "unfinished", 0.0, lines))
            current, lines = m.group("name"), []
            continue
        e = _END.match(line)
        if e and current is not None and e.group("name") == current:
            tag = e.group("tag").strip()
            status = {"OK": "passed", "FAILED": "failed", "SKIPPED": "skipped"}[tag]
            cases.append(_case(current, status, int(e.group("ms")) / 1000.0, lines))
            current, lines = None, []
            continue
        if current is not None:
            lines.append(line)
    if current is not None:
        cases.append(_case(current, "unfinished", 0.0, lines))
    return cases


def _case(name: str, status: str, seconds: float, lines: list[str]) -> CaseRun:
    text = "\n".join(lines)
    hazards = sum(int(m.group("n")) for m in (_HAZARDS.match(ln) for ln in lines) if m)
    memcheck = any(_MEMCHECK.search(ln) for ln in lines if ln.startswith(("mpnpu:", "vector core", "cube core")))
    log = text if len(text) <= LOG_LIMIT else text[:LOG_LIMIT // 2] + "\n...\n" + text[-LOG_LIMIT // 2:]
    case = CaseRun(name, status, seconds, memcheck, hazards, log, [ln for ln in lines if ln.startswith("mpnpu:")][:20],
                   defects=sum(1 for ln in lines if _CHECK_DEFECT.match(ln)))
    case.fault, case.fault_where = _fault(lines)
    return case


def _fault(lines: list[str]) -> tuple[str, str]:
    """(what stopped a launch, the kernel line it names) from mpnpu's lines of a case, or ("", "")."""
    for line in lines:
        m = _LAUNCH_LINE.match(line)
        if not m:
            continue
        what = m.group("what")
        if what.startswith(_NOT_FAULTS) or re.search(r"\bruns?\b.*(?:differ|every one gave)", what):
            continue
        r = _RAISED.search(what)
        if r:
            return f"{r.group('cls')}: {r.group('msg')}", r.group("where") or ""
        return what[:300], ""
    return "", ""


def _run_root(build_dir: str, test: UtTest, slot: str) -> str:
    return os.path.join(build_dir, "run", re.sub(r"[^A-Za-z0-9_.-]", "_", test.id) + slot)


def run_dir(build_dir: str, test: UtTest, corpus: Corpus, slot: str = "") -> str:
    """A fresh run folder for ``test`` (``run/<test><slot>/build/tests/ut/op_kernel``), four levels
    below a view of the repository; returns the working directory. ``slot``: a suffix that gives a
    run beside another (a mutant) a folder of its own."""
    root = _run_root(build_dir, test, slot)
    if os.path.isdir(root):
        shutil.rmtree(root)
    os.makedirs(root)
    for entry in os.listdir(corpus.repo):
        if entry in ("build", ".git"):
            continue
        os.symlink(os.path.join(corpus.repo, entry), os.path.join(root, entry))
    cwd = os.path.join(root, "build", "tests", "ut", "op_kernel")
    os.makedirs(cwd)
    for src, rel in test.data_copies:
        dest = os.path.join(root, "build", rel)
        os.makedirs(dest, exist_ok=True)
        if os.path.isfile(src):
            shutil.copy(src, dest)
    return cwd


def environment(build_dir: str, test: UtTest, corpus: Corpus, *, case_timeout: float, launch_timeout: float,
             racecheck: bool, slot: str = "", pipes: str = "kernel",
             pipe_latency_us: float | None = None, checks: tuple[str, ...] = (),
             kernel_mode: str = "mix", no_auto_sync: bool = False,
             stall_grace_s: float | None = None, warm: WarmPython | None = None) -> dict[str, str]:
    """The environment a test binary runs in (in the run folder of :func:`run_dir` with ``slot``);
    ``pipes`` and ``pipe_latency_us`` become MPNPU_PIPES and MPNPU_PIPE_LATENCY_US, ``checks``
    ("initcheck", "synccheck") MPNPU_INITCHECK=1 / MPNPU_SYNCCHECK=1, ``kernel_mode`` (the type the
    chip would launch the kernel as) MPNPU_DEFAULT_KERNEL_MODE, for launches without SetKernelMode,
    ``no_auto_sync`` MPNPU_NO_AUTO_SYNC=1 (racecheck: kernels built without the compiler's syncs),
    ``stall_grace_s`` MPNPU_STALL_GRACE (None: the default); ``warm``: the data scripts run in that
    warm interpreter (:mod:`mpnpu.tools.ut.warm_python`)."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["OPS_NN_ROOT"] = corpus.repo
    env["BUILD_PATH"] = os.path.join(_run_root(build_dir, test, slot), "build")
    env["MPNPU_GTEST_TIMEOUT"] = f"{case_timeout:g}"
    env["LC_ALL"] = "C"
    env["PYTHONUNBUFFERED"] = "1"
    for setting, value in ((settings.TIMEOUT, float(launch_timeout)), (settings.RACECHECK, racecheck),
                           (settings.INITCHECK, "initcheck" in checks), (settings.SYNCCHECK, "synccheck" in checks),
                           (settings.PIPES, pipes), (settings.DEFAULT_KERNEL_MODE, kernel_mode),
                           (settings.NO_AUTO_SYNC, no_auto_sync), (settings.PIPE_LATENCY_US, pipe_latency_us),
                           (settings.STALL_GRACE, stall_grace_s)):
        settings.to_env(env, setting, value)
    return warm.environment(env) if warm is not None else env


_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
#: set by stop_running (under _LIVE_LOCK): a binary started after it is stopped at once, so a
#: runner thread that took a test just before the interrupt cannot leave its binary running
_STOPPING = threading.Event()


def stop_running() -> None:
    """Stop every test binary running now, and any started from now on until :func:`allow_running`
    (an interrupted run: each ends in order, as on a timeout)."""
    with _LIVE_LOCK:
        _STOPPING.set()
        live = list(_LIVE)
    for proc in live:
        _stop(proc)


def allow_running() -> None:
    """Let binaries run again (a new run after an interrupted one, in the same process)."""
    _STOPPING.clear()


def placed_binary(binary: str, cwd: str) -> str:
    """The test binary as a file of the run folder ``cwd`` (a hard link, else a copy): tests that find
    their data from their own path (/proc/self/exe, which a symbolic link would not change) then
    see the repository view four levels up, as in the repository's own build folder."""
    placed = os.path.join(cwd, os.path.basename(binary))
    if os.path.lexists(placed):
        os.unlink(placed)
    try:
        os.link(binary, placed)
    except OSError:
        shutil.copy2(binary, placed)
    return placed


def run_binary(binary: str, cwd: str, env: dict[str, str], timeout: float) -> BinaryRun:
    """Run a test binary (placed in the run folder ``cwd``) to its end or its timeout and read its
    output."""
    start = time.monotonic()
    proc = subprocess.Popen([placed_binary(binary, cwd)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
        stopping = _STOPPING.is_set()
    timed_out = False
    try:
        if stopping:  # (started after stop_running listed the live binaries)
            _stop(proc)
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _stop(proc)
        out, _ = proc.communicate()
    except BaseException:
        _stop(proc)
        proc.communicate()
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    text = out.decode("utf-8", errors="replace")
    run = BinaryRun(None if timed_out else proc.returncode, time.monotonic() - start, parse_output(text),
                    timed_out, text[-4000:])
    run.missing_packages = sorted(set(_NO_MODULE.findall(text)))
    run.missing_files = sorted({os.path.basename(f) for f in _NO_SCRIPT.findall(text)})
    return run


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the binary's process group (mpnpu ends its core processes in order), SIGKILL later."""
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


# -- the test's own data scripts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataStep:
    """A data script of the test (gen_data.py, compare_data.py, ...) and whether it can run here."""

    script: str  # relative to the test folder
    called: bool  # the test's sources run it (by name)
    missing: tuple[str, ...]  # packages it imports that are not installed
    imports: tuple[str, ...] = ()  # every top-level module it imports, less its own folder's

    def to_dict(self) -> dict[str, object]:
        return {"script": self.script, "called": self.called, "missing_packages": list(self.missing)}


def data_steps(test: UtTest) -> list[DataStep]:
    """The test folder's Python scripts, whether the test calls them, and which packages each
    imports that the interpreter the test's ``python3`` is (mpnpu's) does not have."""
    texts = []
    for src in test.sources:
        try:
            with open(src, encoding="utf-8", errors="replace") as f:
                texts.append(f.read())
        except OSError:
            continue
    code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", "\n".join(texts), flags=re.S)
    generic = bool(re.search(r"\bRun(?:GenData|CompareData|GenTiling|Script)\s*\(", code))
    steps = []
    for script in test.data_scripts:
        name = os.path.basename(script)
        called = name in code or (generic and name in ("gen_data.py", "compare_data.py", "gen_tiling.py"))
        imports = tuple(script_imports(script))
        steps.append(DataStep(os.path.relpath(script, test.ut_dir), called,
                              tuple(n for n in imports if not _importable(n)), imports))
    return steps


def script_imports(script: str) -> list[str]:
    """The top-level modules ``script`` imports, less its own folder's modules (none if it cannot be read)."""
    try:
        with open(script, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return []
    here = os.path.dirname(script)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names
                  if not (os.path.isfile(os.path.join(here, f"{n}.py")) or os.path.isdir(os.path.join(here, n))))


_FOUND: dict[str, bool] = {}


def _importable(module: str) -> bool:
    if module not in _FOUND:
        try:
            _FOUND[module] = module in sys.builtin_module_names or importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            _FOUND[module] = False
    return _FOUND[module]
