"""The one settings table: every setting that reaches mpnpu from outside a caller's code, defined once.

A setting can come from three surfaces: a command-line flag of the ``mpnpu`` commands, an
``MPNPU_*`` environment variable, a ``--mpnpu-*`` option of the pytest plugin. Each
:class:`Setting` holds, once, what all of them share: how a value is written and checked
(``parse``, whose one-line ``argparse.ArgumentTypeError`` the commands and pytest print as a usage
error, and :func:`from_env` turns into a :class:`~mpnpu.errors.UsageError`: exit 2), the default,
the help text (``{default}`` is filled in from the default, so no help repeats it), and the
spelling on each surface it has. The runtime's own defaults live here too (the launch timeout, the
pipes, ``DEFAULT_BLOCK_DIM``, the CPUs per AI core): :class:`mpnpu.runtime.config.RuntimeOptions`
and :mod:`mpnpu.runtime.cpuset` take theirs from the table.

Who builds what from it: :mod:`mpnpu.cli.options` makes the option of each setting that has a
``flag``; :mod:`mpnpu.testing.plugin` adds the ``--mpnpu-*`` option of each that has a ``pytest``
spelling; every module that reads an ``MPNPU_*`` variable calls :func:`from_env` (nowhere else does
anything read one: tests/test_settings.py scans the package for ``os.environ`` reads).

Adding a setting: one :class:`Setting` below (and into :data:`SETTINGS`), then read it where it is
used: ``from_env(SETTING)`` for a variable, the option's ``dest`` (its ``name``) for a flag.

This module sits under everything (the runtime imports it) and imports nothing of mpnpu but the
errors: the pytest plugin imports it in every test run of an environment where mpnpu is
installed, and that must not cost the runtime or numpy.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from mpnpu.errors import UsageError

T = TypeVar("T")


# -- how values are written: each parser raises argparse.ArgumentTypeError, one line ---------------


def int_at_least(low: int, what: str) -> Callable[[str], int]:
    """An integer >= ``low``, described as ``what`` in the error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value

    return parse


positive_int = int_at_least(1, "a positive integer")
non_negative_int = int_at_least(0, "an integer >= 0")


def float_in(low: float, high: float | None = None, *, low_open: bool = False,
             what: str = "a number") -> Callable[[str], float]:
    """A float in [low, high) (or (low, high) with ``low_open``)."""

    def parse(text: str) -> float:
        bounds = f"{'>' if low_open else '>='} {low:g}" + (f" and < {high:g}" if high is not None else "")
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} {bounds}, got {text!r}") from None
        if (value <= low if low_open else value < low) or (high is not None and not value < high):
            raise argparse.ArgumentTypeError(f"expected {what} {bounds}, got {value:g}")
        return value

    return parse


positive_float = float_in(0.0, low_open=True, what="a positive number")


def byte_value(text: str) -> int:
    """A byte: 0..255, in any base Python reads (0xFF, 255, 0o377)."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a byte value such as 0xFF, got {text!r}") from None
    if not 0 <= value <= 255:
        raise argparse.ArgumentTypeError(f"expected a byte value 0..255, got {value}")
    return value


def writable_path(text: str) -> str:
    """A file path that can be written (checked before a long run, not after it)."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory")
    directory = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(directory):
        raise argparse.ArgumentTypeError(f"directory {directory} does not exist")
    probe = f"{text}.tmp"  # what mpnpu.report.write_report writes first
    try:
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot write {text}: {e.strerror or e}") from None
    return text


def path(text: str) -> str:
    """A path, as given (what it must be is checked where it is used)."""
    return text


def names(text: str) -> tuple[str, ...]:
    """Comma-separated names, blanks dropped ('S1, S2' -> ('S1', 'S2')); which names exist is the
    operator's or the kernel's to check."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


_ON = ("1", "on", "yes", "true")
_OFF = ("0", "off", "no", "false")


def switch(text: str) -> bool:
    """On or off: 1/0, on/off, yes/no, true/false."""
    word = text.strip().lower()
    if word in _ON or word in _OFF:
        return word in _ON
    raise argparse.ArgumentTypeError(f"expected 1 or 0 (on/off, yes/no, true/false), got {text!r}")


def racecheck_mode(text: str) -> bool | str:
    """A switch, or ``fail``: on, and a hazard fails the program (a CPU-debug program's exit status 1)."""
    return "fail" if text.strip().lower() == "fail" else switch(text)


def one_of(*choices: str) -> Callable[[str], str]:
    """One of ``choices``."""

    def parse(text: str) -> str:
        if text not in choices:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(choices)}, got {text!r}")
        return text

    return parse


def spin_microseconds(text: str) -> float:
    """Microseconds in [0, 1e6]."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1e6:
        raise argparse.ArgumentTypeError("give how long a waiting core looks before it sleeps, in microseconds "
                                         "(0 to 1e6; 0: sleep at once)")
    return value


def show(value: Any) -> str:
    """A default as help texts show it: ``none``, ``300`` (not ``300.0``), ``kernel``."""
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# -- the table ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One setting: its parser, default and help, and its spelling on each surface it has.

    ``help`` says what the setting means, as ``mpnpu COMMAND --help`` shows it (``{default}`` is
    replaced by the default); ``env_help`` and ``pytest_help`` say what the variable or the pytest
    option does where it is read (a CPU-debug program, the ``mpnpu_device`` fixture): for a setting
    with a flag they stand alone (``mpnpu --help`` lists the variables with them), for one without
    they follow ``help``.
    """

    name: str  # also the dest of its command-line option (args.<name>)
    help: str
    parse: Callable[[str], T]
    default: T
    flag: str = ""  # the mpnpu commands' option
    former: tuple[str, ...] = ()  # the flag's earlier spellings, accepted, not shown
    metavar: str | None = None
    choices: tuple[str, ...] = ()  # the flag's argparse choices (parse checks the same)
    switch: bool = False  # the flag and the pytest option take no value: given means on
    env: str = ""  # the MPNPU_* environment variable
    env_help: str = ""
    pytest: str = ""  # the pytest plugin's option
    pytest_help: str = ""

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every name the setting answers to: flag (and former ones), variable, pytest option."""
        return tuple(s for s in (self.flag, *self.former, self.env, self.pytest) if s)

    def text(self, template: str | None = None) -> str:
        """``template`` (default: :attr:`help`) with ``{default}`` filled in."""
        return (self.help if template is None else template).replace("{default}", show(self.default))


def _table(*settings: Setting[Any]) -> dict[str, Setting[Any]]:
    return {s.name: s for s in settings}


# -- the device and the runtime

_PIPES = ("kernel", "async", "sync")

#: AI cores of a Device, and of every tool, on every machine, unless told otherwise. The
#: incident's rate depends on block_dim as much as on crowding (at 2 CPUs per AI core: a few
#: percent at block_dim 1, about half at block_dim 2), so a default that grew with the machine
#: would change what "the default batch" shows; a bigger machine runs more devices side by side.
BLOCK_DIM: Setting[int] = Setting(
    "block_dim", "AI cores, each 1 cube + 2 vector core processes; for a vector-only or cube-only C++ kernel, cores "
                 "of its one type, as its launch counts them, an AI core being 2 vector cores (default {default})",
    positive_int, 1, flag="--block-dim",
    pytest="--mpnpu-block-dim",
    pytest_help="AI cores of the mpnpu_device fixture's device (3 core processes each) for tests whose marker does "
                "not set block_dim; default: {default}, as the tools",
)
TIMEOUT: Setting[float] = Setting(
    "timeout", "give up a launch after this long (default {default})", positive_float, 300.0,
    flag="--timeout", metavar="SECONDS",
    env="MPNPU_TIMEOUT", env_help="seconds a CPU-debug program's launch (ICPU_RUN_KF) may take (default {default})",
)
PIPES: Setting[str] = Setting(
    "pipes", "how each core runs its data-movement pipes: 'kernel' asynchronously for kernels marked @pipelined, "
             "in order for the rest; 'async' for every kernel; 'sync' in order for every kernel (faster; "
             "intra-core races cannot show, racecheck still reports them). See docs/pipes.md (default {default})",
    one_of(*_PIPES), "kernel", flag="--pipes", choices=_PIPES,
    env="MPNPU_PIPES", env_help="how a CPU-debug program's cores run their data-movement pipes (kernel, async, "
                               "sync; default {default})",
)
PIPE_LATENCY_US: Setting[float] = Setting(
    "pipe_latency_us", "asynchronous pipes: the longest an issued copy stays queued while the core keeps issuing "
                       "(default {default}); longer shows intra-core races that need a copy to be later. Changes "
                       "only when copies run", positive_float, 100.0, flag="--pipe-latency-us", metavar="US",
    env="MPNPU_PIPE_LATENCY_US", env_help="a CPU-debug program's asynchronous pipes: the longest an issued copy "
                                          "stays queued (default {default})",
)
STALL_GRACE: Setting[float] = Setting(
    "stall_grace", "report a deadlock once every unfinished core has been blocked (in a SyncAll, a flag or queue "
                   "wait) or busy without a kernel API call, with nothing changing, for this long; raise it for a "
                   "kernel with long stretches of pure computation (default {default})",
    positive_float, 5.0, flag="--stall-grace", metavar="SECONDS",
    env="MPNPU_STALL_GRACE", env_help="seconds a CPU-debug program's cores may all be stalled before the launch is "
                                      "reported as a deadlock (default {default})",
)
POISON: Setting[int | None] = Setting(
    "poison", "fill freed GM blocks with this byte (e.g. 0xFF) instead of leaving stale data", byte_value, None,
    flag="--poison", metavar="BYTE",
)
SPIN_US: Setting[float | None] = Setting(
    "spin_us", "how long a waiting core looks again and again before it sleeps, in microseconds, for every device "
               "whose RuntimeOptions.spin_us is None (0: sleep at once; unset: a budget that follows how crowded "
               "the core processes are, docs/device-model.md)", spin_microseconds, None,
    env="MPNPU_SPIN_US", env_help="read by the process that opens the device, once per core pool",
)
#: CPUs per AI core of a device's CPU set: 3 core processes on 2 CPUs, about 1.5 per CPU.
CPUS_PER_CORE: Setting[int] = Setting(
    "cpus_per_core", "pin each device (and the process that drives it) to N CPUs per AI core (default {default}: "
                     "block_dim 1 runs 3 core processes on {default} CPUs, the same crowding on any machine); 0: do "
                     "not pin", non_negative_int, 2, flag="--cpus-per-core", metavar="N",
)
EMULATE_CPUS: Setting[int | None] = Setting(
    "emulate_cpus", "pretend this process may use CPUs 0..N-1 when the tools compute their defaults (what a bigger "
                    "machine would do)", positive_int, None,
    env="MPNPU_EMULATE_CPUS", env_help="read wherever the tools plan CPU sets",
)

NO_AUTO_SYNC: Setting[bool] = Setting(
    "no_auto_sync", "racecheck: analyse the kernel as built without the compiler's automatic synchronisation (by "
                    "default it assumes --cce-auto-sync, on in kernel projects: the syncs between MTE2/MTE3/V and "
                    "the scalar unit are the compiler's; docs/pipes.md)", switch, False, flag="--no-auto-sync",
    switch=True,
    env="MPNPU_NO_AUTO_SYNC", env_help="1: a CPU-debug program's racecheck analyses the kernel as built without it",
)

# -- what runs

REPEAT: Setting[int] = Setting(
    "repeat", "how many times every case is run (default {default})", positive_int, 1,
    flag="--repeat", former=("--repeats",),
    env="MPNPU_REPEAT", env_help="a CPU-debug program runs each ICPU_RUN_KF N times from the same GM contents and "
                                 "says which runs' results differed from the first",
    pytest="--mpnpu-repeat",
    pytest_help="run every test marked @pytest.mark.mpnpu N times (seeds from the marker's seed on), whatever repeat "
                "its marker says",
)
SEED: Setting[int] = Setting(
    "seed", "case stream seed (default {default})", non_negative_int, 0, flag="--seed",
    pytest="--mpnpu-seed", pytest_help="run marked tests once, with mpnpu_seed N (replays the seed a failing repeat "
                                       "reported)",
)
RACECHECK: Setting[bool | str] = Setting(
    "racecheck", "trace every GM access and report unsynchronised conflicting accesses (hazards)", racecheck_mode,
    False, flag="--racecheck", switch=True,
    env="MPNPU_RACECHECK", env_help="1: a CPU-debug program traces each launch and prints the racecheck report to "
                                    "stderr; fail: and ends with exit status 1 if a hazard is found",
    pytest="--mpnpu-racecheck",
    pytest_help="trace every launch made on the mpnpu device and fail the test on any GM hazard (a test opts out "
                "with @pytest.mark.mpnpu(racecheck=False))",
)
INITCHECK: Setting[bool | str] = Setting(
    "initcheck", "trace every launch and report reads of GM or local memory that nothing wrote in the launch "
                 "(inputs and buffers the host filled count as written; docs/initcheck-synccheck.md)",
    racecheck_mode, False, flag="--initcheck", switch=True,
    env="MPNPU_INITCHECK", env_help="1: a CPU-debug program traces each launch and prints the initcheck report to "
                                    "stderr (local memory only: the program's own GM writes are not seen); fail: "
                                    "and ends with exit status 1 if it finds one",
    pytest="--mpnpu-initcheck",
    pytest_help="trace every launch made on the mpnpu device and fail the test on any read of never-written memory",
)
SYNCCHECK: Setting[bool | str] = Setting(
    "synccheck", "trace every launch and report syncs that are unpaired (a SetFlag never waited, a flag left "
                 "pending at the kernel's end), duplicated (an event id set twice before its wait) or redundant "
                 "(docs/initcheck-synccheck.md)", racecheck_mode, False, flag="--synccheck", switch=True,
    env="MPNPU_SYNCCHECK", env_help="1: a CPU-debug program traces each launch and prints the synccheck report to "
                                    "stderr; fail: and ends with exit status 1 if it finds one",
    pytest="--mpnpu-synccheck",
    pytest_help="trace every launch made on the mpnpu device and fail the test on any synccheck finding",
)
DROP_SYNC: Setting[tuple[str, ...] | None] = Setting(
    "drop_sync", "sync points to drop (comma-separated): an operator's incident variant drops these instead of its "
                 "own (see the list below); a C++ kernel's sync points are the FILE:LINE of the sync call, the file "
                 "by any path suffix (add.cpp:45)", names, None, flag="--drop-sync", former=("--drop",),
    metavar="S0,S1,...",
    env="MPNPU_DROP_SYNC", env_help="a CPU-debug program's launches skip those sync call sites (FILE:LINE,...)",
)
TIMELINE: Setting[str | None] = Setting(
    "timeline", "write launch timelines as Chrome Trace Event JSON (Perfetto UI, chrome://tracing, MindStudio "
                "Insight): by default the first failing case-run of each variant (or step) and, for contrast, a "
                "passing run of the same case", writable_path, None, flag="--timeline", metavar="PATH",
    env="MPNPU_TIMELINE", env_help="a CPU-debug program writes each launch's Chrome trace (PATH, then PATH's stem "
                                   "with .2.json, ...)",
)

DIRECTED: Setting[bool] = Setting(
    "directed", "race-directed runs of a CPU-debug program's launches: each is first run traced on a copy of GM; if "
                "racecheck finds a hazard between cores, GM is put back and the launch runs again holding one core "
                "before its access until the other has made its own (the race forced, not waited for)", switch,
    False, env="MPNPU_DIRECTED",
    env_help="1: so the program's own checks see what the race does (mpnpu mutate sets it)",
)
SYNC_LOG: Setting[str | None] = Setting(
    "sync_log", "append, a JSON line per launch, the sync call sites the launch executed and how often (what mpnpu "
                "mutate learns a program's sync points from)", writable_path, None,
    env="MPNPU_SYNC_LOG", env_help="a CPU-debug program traces each launch and writes them to PATH",
)
DEFAULT_KERNEL_MODE: Setting[str] = Setting(
    "default_kernel_mode", "the kernel mode of a CPU-debug launch whose program never called SetKernelMode: 'mix' (the "
                           "documented CPU-debug default: a cube and two vector cores per block), 'aiv' or 'aic' "
                           "(default {default}). mpnpu ut sets it per test to the kernel type the chip would launch",
    one_of("mix", "aiv", "aic"), "mix",
    env="MPNPU_DEFAULT_KERNEL_MODE", env_help="read at each ICPU_RUN_KF of a program that never called SetKernelMode",
)
MUTATE_SYNCS: Setting[bool] = Setting(
    "mutate_syncs", "sync mutation testing of every unit test that passes: run it once per sync point it executes "
                    "with that point dropped, and report which its own checks notice (killed) and which survive "
                    "(untested or redundant), with the score", switch, False, flag="--mutate-syncs", switch=True,
    pytest="--mpnpu-mutate-syncs",
    pytest_help="sync mutation testing of the selected tests instead of one run of them: they run once to learn the "
                "sync points their launches on the mpnpu device execute, then once per point with it dropped (each "
                "a pytest run of its own, --mpnpu-racecheck's analysis saying why a survivor survived); prints the "
                "table and the score",
)
MIN_SCORE: Setting[float | None] = Setting(
    "min_score", "exit 1 when the sync mutation score (executed sync points the tests' own checks kill) is below "
                 "this share, 0..1: the gate for CI", float_in(0.0, 1.000001, what="a share"), None,
    flag="--min-score", metavar="SHARE",
    pytest="--mpnpu-min-score", pytest_help="with --mpnpu-mutate-syncs: the run fails (exit 1) when the sync "
                                            "mutation score is below this share, 0..1",
)

# -- the tools and the build

PROGRESS_EVERY: Setting[float] = Setting(
    "progress_every", "seconds between the plain progress lines a command prints when stderr is not a terminal "
                      "(default {default}; 0: a line at every update)", float_in(0.0, what="seconds"), 30.0,
    env="MPNPU_PROGRESS_EVERY", env_help="read by every command's progress bar",
)
CACHE_DIR: Setting[str | None] = Setting(
    "cache_dir", "where built C++ kernel libraries are kept (unset: the user's cache directory, "
                 "$XDG_CACHE_HOME/mpnpu or ~/.cache/mpnpu)", path, None,
    env="MPNPU_CACHE_DIR", env_help="read by every build of a C++ kernel",
)
CACHE_MAX_MB: Setting[float] = Setting(
    "cache_max_mb", "the most the C++ build cache may hold, in MiB: after each build the least recently used "
                    "libraries, precompiled headers and prepared sources are removed down to it (default {default})",
    positive_float, 2048.0,
    env="MPNPU_CACHE_MAX_MB", env_help="read after every build of a C++ kernel",
)
PCH: Setting[bool] = Setting(
    "pch", "build C++ kernels with mpnpu's precompiled header where the compiler takes it (g++)", switch, True,
    env="MPNPU_PCH", env_help="read by every build of a C++ kernel",
)
KERNEL_OPT: Setting[str] = Setting(
    "kernel_opt", "the optimisation level of mpnpu's builds of C++ kernels, as -O takes it (0-3, g, s; default "
                  "{default}): 0 or g add a line table (-g), for a kernel to step through in a debugger; each level "
                  "has its own cached builds",
    one_of("0", "1", "2", "3", "g", "s"), "2",
    env="MPNPU_KERNEL_OPT", env_help="read by every build of a C++ kernel",
)
KERNEL_UBSAN: Setting[bool] = Setting(
    "kernel_ubsan", "build C++ kernels with the compiler's undefined-behaviour sanitizer (-fsanitize=undefined, "
                    "stopping at the first report): a kernel's or mpnpu's own undefined behaviour then ends the core "
                    "process that ran it, with the sanitizer's report on its stderr; sanitized builds are cached apart",
    switch, False,
    env="MPNPU_KERNEL_UBSAN", env_help="read by every build of a C++ kernel",
)
NATIVE_SYNC: Setting[bool] = Setting(
    "native_sync", "a C++ kernel's SyncAll and cross-core flags run in the library (off: every one calls back into "
                   "the core process, e.g. to measure the two side by side)", switch, True,
    env="MPNPU_NATIVE_SYNC", env_help="read by each core process at a launch",
)
NATIVE_SERVE: Setting[bool] = Setting(
    "native_serve", "a C++ kernel's core processes serve launches in the library's own loop (off: every launch "
                    "through the core's Python)", switch, True,
    env="MPNPU_NATIVE_SERVE", env_help="read by the process that opens the device and by its core processes",
)
NATIVE_TRACE: Setting[bool] = Setting(
    "native_trace", "a traced launch of a Python kernel makes its records (local accesses, GM copies, pipe syncs, "
                    "their kernel lines and times) in C "
                    "(a small extension built once with the C++ compiler and cached; off, or where it cannot be "
                    "built: the same records made in Python, slower)", switch, True,
    env="MPNPU_NATIVE_TRACE", env_help="read by the process that opens the device and by its core processes",
)
RACECHECK_PROCESS: Setting[bool] = Setting(
    "racecheck_process", "a batch's racecheck analyses run in a child process at the lowest CPU priority, on CPU "
                         "time the core processes leave idle (off: on a thread of the batch's own process)",
    switch, True,
    env="MPNPU_RACECHECK_PROCESS", env_help="read by the process that runs the batch",
)
OPS_NN: Setting[str | None] = Setting(
    "ops_nn", "a checkout of the open operator repository (or its operator folder), for the operators built from "
              "it (--op floms-public)", path, None,
    env="MPNPU_OPS_NN", env_help="read when such an operator is loaded",
)

#: a GoogleTest test's full name as mpnpu's gtest writes it (Suite.Name, a parameterised one's with its
#: / parts): no character a --gtest_filter pattern gives a meaning to
GTEST_NAME = re.compile(r"[A-Za-z0-9_/.]+")


def _gtest_name(text: str) -> str:
    """A GoogleTest test's full name (:data:`GTEST_NAME`)."""
    if not GTEST_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a test's name (Suite.Name)")
    return text


def _gtest_state(text: str) -> str:
    """CPU-debug settings as mpnpu's gtest writes them: MODE:KEY."""
    if not re.fullmatch(r"-?[0-9]+:[0-9]+", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not MODE:KEY")
    return text


GTEST_TEST: Setting[str | None] = Setting(
    "gtest_test", "the unit test a program of mpnpu ut is running now (Suite.Name)", _gtest_name, None,
    env="MPNPU_GTEST_TEST", env_help="set by mpnpu's gtest for each test; a launch's MPNPU_SYNC_LOG line records it",
)
GTEST_TEST_STATE: Setting[str | None] = Setting(
    "gtest_test_state", "the CPU-debug settings (MODE:KEY) the unit test running now started with", _gtest_state,
    None,
    env="MPNPU_GTEST_TEST_STATE", env_help="set by mpnpu's gtest for each test; a launch's MPNPU_SYNC_LOG line "
                                           "records it",
)
WARM_PYTHON: Setting[str | None] = Setting(
    "warm_python", "the Unix socket of mpnpu ut's warm interpreter, which runs the tests' data scripts forked from "
                   "one that has imported their heavy packages", path, None,
    env="MPNPU_WARM_PYTHON", env_help="set by mpnpu ut in each test's environment; its python3 shim hands a "
                                      "'python3 SCRIPT ...' call to that socket",
)
REAL_PYTHON: Setting[str | None] = Setting(
    "real_python", "the interpreter mpnpu ut's python3 shim runs for what its warm interpreter does not take", path,
    None, env="MPNPU_REAL_PYTHON", env_help="set by mpnpu ut in each test's environment",
)

#: every setting, by name
SETTINGS: dict[str, Setting[Any]] = _table(
    BLOCK_DIM, TIMEOUT, PIPES, PIPE_LATENCY_US, STALL_GRACE, POISON, NO_AUTO_SYNC, SPIN_US, CPUS_PER_CORE, EMULATE_CPUS,
    REPEAT, SEED, RACECHECK, INITCHECK, SYNCCHECK, DROP_SYNC, TIMELINE, DIRECTED, SYNC_LOG, DEFAULT_KERNEL_MODE,
    MUTATE_SYNCS, MIN_SCORE,
    PROGRESS_EVERY, CACHE_DIR, CACHE_MAX_MB, PCH, KERNEL_OPT, KERNEL_UBSAN, NATIVE_SYNC, NATIVE_SERVE, NATIVE_TRACE,
    RACECHECK_PROCESS, OPS_NN,
    GTEST_TEST,
    GTEST_TEST_STATE, WARM_PYTHON, REAL_PYTHON,
)


# -- the one accessor of the environment ----------------------------------------------------------


def env_text(setting: Setting[Any]) -> str:
    """The text of ``setting``'s variable, stripped ("" when it is unset or blank)."""
    if not setting.env:
        raise UsageError(f"setting {setting.name} has no environment variable")
    return os.environ.get(setting.env, "").strip()


def live_text(setting: Setting[Any]) -> str:
    """The text of ``setting``'s variable as the process's environment has it now, stripped: a
    CPU-debug host program sets some (the test it runs) after the Python it embeds started, and
    ``os.environ`` is a copy taken at that start."""
    import ctypes

    if not setting.env:
        raise UsageError(f"setting {setting.name} has no environment variable")
    getenv = ctypes.CDLL(None).getenv
    getenv.restype = ctypes.c_char_p
    value = getenv(setting.env.encode())
    return value.decode(errors="replace").strip() if value else ""


def from_env(setting: Setting[T]) -> T:
    """``setting`` as its ``MPNPU_*`` variable says: its default when unset or blank, else the
    parsed value; a bad value is a one-line UsageError naming the variable (exit 2 in a command)."""
    text = env_text(setting)
    if not text:
        return setting.default
    try:
        return setting.parse(text)
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"{setting.env}={text!r}: {e}") from None


def to_env(env: dict[str, str], setting: Setting[Any], value: Any) -> None:
    """Put ``value`` into ``env`` as ``setting``'s variable, for a program mpnpu starts (the inverse of
    :func:`from_env`): a switch on is "1", a number in its shortest form; None or a switch off takes
    the variable out, so that the caller's own setting does not reach the program."""
    if not setting.env:
        raise UsageError(f"setting {setting.name} has no environment variable")
    if value is None or value is False:
        env.pop(setting.env, None)
    elif value is True:
        env[setting.env] = "1"
    elif isinstance(value, float):
        env[setting.env] = f"{value:g}"
    else:
        env[setting.env] = str(value)
