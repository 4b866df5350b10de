"""The one option table: every option of every mpnpu command, defined once.

Each option has one spelling, one meaning and one help text; a command lists the options it takes
(:class:`mpnpu.cli.command.Command`), and may give one of them its own default, never another
meaning. ``--help`` shows them in three groups: what runs, what is reported, scale-out (and the
chosen operator's own options, e.g. FLOMS's tile sizes, in a group of their own).

An option that is a setting of :mod:`mpnpu.settings` (one that can also come from the environment
or the pytest plugin, or whose default is the runtime's: ``--block-dim``, ``--repeat``,
``--timeout``, ``--pipes`` ...) is made from it (:func:`_s`): its spelling, parser, default and help
are the setting's, so they are written once for every surface. The others are the commands' own.

Adding an option: one entry in :data:`OPTIONS` (its group, argparse settings, help; or ``_s`` of
its setting), then its name in the ``options`` of each command that takes it. A report option (a
file the command writes) names its :class:`~mpnpu.report.Reporter` in ``report``; the command hands
the result to :func:`mpnpu.cli.outputs.write_reports`. Spellings of earlier releases stay accepted,
unlisted, in ``former`` (``--repeats`` is now ``--repeat``), so no documented command breaks.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

from mpnpu import settings
from mpnpu.errors import UsageError
from mpnpu.harness.runner import DEFAULT_MAX_SAME_ERRORS
from mpnpu.harness.stress.plan import PLACEMENTS
from mpnpu.runtime.checks import check_block_dim, check_launch_width
from mpnpu.runtime.config import DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.topology import KernelType
from mpnpu.scale.backend import Backend
from mpnpu.settings import Setting, show

# The plain types are the settings' (re-exported: commands, scripts and tests take them from here).
from mpnpu.settings import byte_value as byte_value
from mpnpu.settings import float_in as float_in
from mpnpu.settings import int_at_least as int_at_least
from mpnpu.settings import non_negative_int as non_negative_int
from mpnpu.settings import positive_float as positive_float
from mpnpu.settings import positive_int as positive_int
from mpnpu.settings import writable_path as writable_path

#: the operator every command runs unless --op names another
DEFAULT_OPERATOR = "floms"

RUNS = "what runs"
REPORTS = "what is reported"
SCALE = "scale-out (slots on this machine, or a Ray cluster)"
GROUPS = (RUNS, REPORTS, SCALE)

T = TypeVar("T")


# -- argument types: each raises argparse.ArgumentTypeError, which the parser turns into one line ---
# (the types of settings, and the plain numbers and paths, are mpnpu.settings')


def picture_path(text: str) -> str:
    """A writable .png or .svg path."""
    if os.path.splitext(text)[1].lower() not in (".png", ".svg"):
        raise argparse.ArgumentTypeError(f"{text}: a picture must end in .png or .svg")
    return writable_path(text)


def block_dim(text: str) -> int:
    """A block_dim the device has (1..24 AI cores): the setting's positive integer, checked against
    the device before a run starts rather than when its first device opens."""
    value = settings.BLOCK_DIM.parse(text)
    try:
        return check_block_dim(value)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def launch_width(text: str) -> int:
    """A block count a launch of a kernel of any type may have on the device, waves included (up to
    MAX_WAVES times its vector cores): for a command whose kernel's type is known only once its
    source is read, where the device checks the width against that type (``mpnpu run``)."""
    value = settings.BLOCK_DIM.parse(text)
    try:
        return check_launch_width(value, kernel_type=KernelType.AIV)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def list_of(item: Callable[[str], T], what: str) -> Callable[[str], list[T]]:
    """A comma-separated list of distinct ``item`` values."""

    def parse(text: str) -> list[T]:
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or any(not p for p in parts):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}, got {text!r}")
        values = [item(p) for p in parts]
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"repeated value in {text!r}")
        return values

    return parse


def _placement(text: str) -> str:
    if text not in PLACEMENTS:
        raise argparse.ArgumentTypeError(f"unknown placement {text!r}; choose from {', '.join(PLACEMENTS)}")
    return text


def _on_off(text: str) -> bool:
    if text in ("on", "off"):
        return text == "on"
    raise argparse.ArgumentTypeError(f"expected on/off, got {text!r}")


def _kernel_type(text: str) -> KernelType:
    for k in KernelType:
        if text in (k.value, k.name, k.name.lower(), k.value.replace(" ", "-")):
            return k
    raise argparse.ArgumentTypeError(f"unknown kernel type {text!r}; choose from "
                                     f"{', '.join(k.value for k in KernelType)}")


def duration(text: str) -> float | None:
    """Seconds, or 'inf' / 'none' / 'unlimited' for no limit."""
    if text.strip().lower() in ("inf", "none", "unlimited"):
        return None
    return positive_float(text)


def _at_least_two(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError("expected at least 2 (consistency compares repeats of a case)")
    return value


# -- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One option: its spelling, group, argparse settings and help (``{default}`` is filled in)."""

    flag: str
    group: str
    help: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)  # argparse: type, default, metavar, action, ...
    former: tuple[str, ...] = ()  # earlier spellings, still accepted, not shown
    #: a report option: "module:Class" of the Reporter that writes its file (mpnpu.cli.outputs)
    report: str = ""
    #: the setting the option is made from (:func:`_s`), if it is one
    setting: Setting[Any] | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def positional(self) -> bool:
        """An argument given by position (``mpnpu run SOURCE ARG...``), not by flag."""
        return not self.flag.startswith("-")

    def help_text(self, default: Any) -> str:
        """The help with ``{default}`` filled in: ``default`` (the command's), or, for a setting's
        option that is None until given, the setting's default, which is what applies then."""
        if default is None and self.setting is not None:
            default = self.setting.default
        return self.help.replace("{default}", show(default))


def _o(flag: str, group: str, help: str, *, former: tuple[str, ...] = (), report: str = "", **kwargs: Any) -> Option:
    return Option(flag, group, help, kwargs, former, report)


def _s(setting: Setting[Any], group: str, *, report: str = "", **kwargs: Any) -> Option:
    """The option of a setting: its flag, former spellings, help, parser and default are the
    setting's; ``kwargs`` adds argparse settings or replaces one (``default=None``: the option is
    None unless given, so that the library's default, which is the setting's, applies; ``type``:
    a stricter parser of the same values)."""
    base: dict[str, Any]
    if setting.switch:
        base = {"action": "store_true"}
    elif setting.choices:  # (argparse's own message names them)
        base = {"choices": setting.choices, "default": setting.default}
    else:
        base = {"type": setting.parse, "default": setting.default}
    if setting.metavar is not None:
        base["metavar"] = setting.metavar
    return Option(setting.flag, group, setting.help, {**base, **kwargs}, setting.former, report, setting)


def _table(*options: Option) -> dict[str, Option]:
    return {o.dest: o for o in options}


OPTIONS: dict[str, Option] = _table(
    # -- what runs: the operator and its variants
    _o("--op", RUNS, "the operator under test: a registered name (--list-ops), 'package.module:OBJECT' or "
                     "'path/to/file.py[:OBJECT]' (OBJECT defaults to OPERATOR; the file's folder goes on sys.path) "
                     "(default {default})", default=DEFAULT_OPERATOR, metavar="NAME_OR_REF"),
    _o("--list-ops", RUNS, "list the registered operators with their sync points and variants, and exit",
       action="store_true"),
    _o("--list-syncs", RUNS, "list the chosen operator's sync points (a C++ kernel's: FILE:LINE of each sync call, "
                             "its function and call) as --drop-sync takes them, and exit", action="store_true"),
    _o("--variant", RUNS, "which kernel variant(s) to run, A/B (default {default})",
       choices=("incident", "fixed", "both"), default="both"),
    _s(settings.DROP_SYNC, RUNS),
    _o("--probe", RUNS, "run a diagnosis probe on every variant (see mpnpu investigate --help)", default="",
       metavar="NAME"),
    # -- what runs: how much
    _o("--cases", RUNS, "distinct seeded cases (default {default})", type=positive_int, default=100),
    _s(settings.REPEAT, RUNS),
    _s(settings.SEED, RUNS),
    _o("--case-runs", RUNS, "at least this many case-runs (default {default})", type=positive_int, default=10_000),
    _o("--time-limit", RUNS, "a cap on the run time in seconds, not a length to run for: the run ends when its "
                             "cases are done or at this limit, whichever comes first (a configuration or shard "
                             "stops at its share of it; 'inf' for no limit; default {default})", type=duration,
       default=None, metavar="SECONDS", former=("--duration",)),
    # -- what runs: the device
    _s(settings.BLOCK_DIM, RUNS, type=block_dim),
    _s(settings.PIPES, RUNS),
    _s(settings.PIPE_LATENCY_US, RUNS, default=None),
    _s(settings.TIMEOUT, RUNS, default=None),
    _s(settings.STALL_GRACE, RUNS, default=None),
    _s(settings.POISON, RUNS),
    _s(settings.NO_AUTO_SYNC, RUNS),
    # -- what runs: race detection and directed runs
    _s(settings.RACECHECK, RUNS),
    _s(settings.INITCHECK, RUNS),
    _s(settings.SYNCCHECK, RUNS),
    _o("--confirm", RUNS, "with --racecheck: reproduce each hazard of a variant that drops syncs by held launches "
                          "that reverse the racing pair for real (race-directed), and say whether it is harmful",
       action="store_true"),
    _o("--directed-runs", RUNS, "race-directed runs per hazard (default {default})", type=positive_int, default=10,
       former=("--confirm-runs", "--runs"), metavar="N"),
    _o("--scout-cases", RUNS, "cases traced to find hazards and the pairs to hold (default {default})",
       type=positive_int, default=3),
    _o("--max-same-errors", RUNS, "stop a variant after the same launch error (same kind, same kernel line) in N "
                                  "consecutive case-runs, with one summary line, instead of rebuilding the core "
                                  "pool for every case-run to say the same again; 0: never (default {default})",
       type=non_negative_int, default=DEFAULT_MAX_SAME_ERRORS, metavar="N"),
    _o("--directed-seed", RUNS, "seed of the directed runs' choices of case and pair (default {default})",
       type=non_negative_int, default=0),
    # -- what runs: investigate
    _o("--calibration-cases", RUNS, "cases in the calibration step (x repeats case-runs; default {default})",
       type=positive_int, default=50),
    _o("--min-cases", RUNS, "floor on cases per step (default {default})", type=positive_int, default=75),
    _o("--max-cases", RUNS, "cap on cases per step, which bounds the run time when the race is rare "
                            "(default {default})", type=positive_int, default=120),
    _o("--confidence", RUNS, "probability with which each step must show a fault at the guarded rate "
                             "(default {default})", type=float_in(0.0, 1.0, low_open=True, what="a probability"),
       default=0.99),
    _o("--safety", RUNS, "steps are sized for the calibrated rate's 95%% lower bound divided by this "
                         "(default {default})", type=float_in(1.0), default=4.0),
    _o("--shapes", RUNS, "case shapes of the diagnosis chain (default: the chain's choice)", default=None),
    # -- what runs: stress configurations and chaos
    _o("--block-dims", RUNS, "AI cores per configuration, each 3 core processes (default {default})",
       type=list_of(block_dim, "block_dims 1..24"), default="1,2,4,24", metavar="LIST"),
    _o("--placements", RUNS, "none (OS decides), spread (one core process per CPU, round-robin), pack (all on one "
                             "CPU), migrate (re-pinned to random CPUs at random 5-50 ms intervals) (default {default})",
       type=list_of(_placement, "placements"), default="none,spread,pack,migrate", metavar="LIST"),
    _o("--load", RUNS, "busy background processes per configuration, each ending by itself shortly after the "
                       "configuration's time budget (default {default})",
       type=list_of(non_negative_int, "integers >= 0"), default="0", metavar="LIST"),
    _o("--chaos", RUNS, "chaos off and/or on (default {default})", type=list_of(_on_off, "on/off"), default="off,on",
       metavar="LIST"),
    _o("--chaos-seed", RUNS, "seed of the chaos schedules and of migration (default: random, printed and recorded)",
       type=non_negative_int, default=None, metavar="N"),
    _o("--chaos-rate", RUNS, "suspensions per second per core process (default {default})", type=positive_float,
       default=20.0, metavar="HZ"),
    _o("--chaos-max-ms", RUNS, "longest suspension (default {default}, at most 100)", type=positive_float,
       default=20.0, metavar="MS"),
    _o("--chaos-min-ms", RUNS, "shortest suspension (default a tenth of the longest)", type=positive_float,
       default=None, metavar="MS"),
    _o("--chaos-replay", RUNS, "use the chaos schedules recorded in a previous sweep's --json report", type=str,
       default=None, metavar="REPORT.json"),
    # -- what runs: audit
    _o("--pairs", RUNS, "also drop every pair of sync points", action="store_true"),
    _o("--sync", RUNS, "audit only these sync points", default=None, metavar="S0,S1,..."),
    _o("--batch-cases", RUNS, "cases of the short batch per row and per repair (default {default})",
       type=positive_int, default=20),
    _o("--no-repair", RUNS, "skip suggesting and verifying repairs", action="store_true"),
    _o("--replay", RUNS, "instead of an audit, rerun the directed run with this seed (as printed by --confirm or "
                         "the audit) and print what it did; give the same --drop-sync, --block-dim, --scout-cases "
                         "and --seed it was made with", type=non_negative_int, default=None, metavar="SEED"),
    # -- what runs: soaks
    _o("--cases-per-round", RUNS, "cases per configuration per round (default {default})", type=positive_int,
       default=20),
    _o("--no-bd24", RUNS, "leave out the 72-process configurations", action="store_true"),
    _o("--rounds", RUNS, "launches of each of the three handshake kernels (default {default})", type=positive_int,
       default=1000),
    _o("--tick-ms", RUNS, "watchdog interval in ms (default {default}; the runtime's default is "
                          f"{DEFAULT_OPTIONS.watchdog_interval_s * 1000:g})",
       type=float_in(0.0, low_open=True, what="--tick-ms"), default=0.2),
    _o("--late-ms", RUNS, "how late the late core of each handshake arrives, in ms (default {default})",
       type=float_in(0.0, what="--late-ms"), default=1.0),
    _o("--hogs", RUNS, "busy-looping processes run beside the soak (default {default})", type=non_negative_int,
       default=0),
    # -- what runs: sync mutation testing of a CPU-debug program (mpnpu mutate)
    _o("program", RUNS, "the CPU-debug test program (built with python -m mpnpu.ascendc --cflags --libs) and its "
                        "arguments, after --", nargs="*", metavar="PROGRAM"),
    _s(settings.MIN_SCORE, RUNS),
    _o("--run-timeout", RUNS, "give up one run of the program after this long, the mutant then counting as "
                              "killed by a time-out (default {default})", type=float_in(0.0, low_open=True,
                              what="seconds"), default=600.0, metavar="SECONDS"),
    _o("--sources", RUNS, "kernel sources or folders to read sync call sites from, so that those the program "
                          "never executes are listed as uncovered; repeatable", action="append", default=[],
       metavar="PATH"),
    # -- what runs: one C++ kernel (mpnpu run)
    _o("source", RUNS, "the kernel's source, SOURCE.cpp or SOURCE.asc, with :ENTRY when it defines more than one "
                       "kernel and launches none with <<<>>>", metavar="SOURCE[:ENTRY]"),
    _o("kernel_args", RUNS, "the kernel's arguments in the order of its parameters: in:PATH:DTYPE, "
                            "out:PATH:DTYPE:COUNT, io:IN:OUT:DTYPE (read from IN, written to OUT), "
                            "gm:DTYPE:COUNT[:FILL], tiling:HEADER:STRUCT:field=value,..., "
                            "a scalar (u32:16384, f32:0.5, ...) or null", nargs="*", metavar="ARG"),
    _o("--pre-include", RUNS, "a header the compiler includes before the kernel's source (a CPU-debug "
                               "*_tiling_def.h, a prelude of definitions); repeatable, in order", action="append",
       default=[], metavar="HEADER"),
    _o("--golden", RUNS, "compare an out: argument with this .bin after every repeat: PATH for the only out: "
                         "argument, or N=PATH for argument N (1-based); repeatable", action="append", default=[],
       metavar="[N=]PATH"),
    _o("--rtol", RUNS, "relative tolerance of the golden comparison of float outputs (default {default}; "
                       "integer outputs must be equal)", type=float_in(0.0, what="a tolerance"), default=1e-3),
    _o("--atol", RUNS, "absolute tolerance of the golden comparison of float outputs (default {default})",
       type=float_in(0.0, what="a tolerance"), default=1e-5),
    _o("--define", RUNS, "a preprocessor define for the kernel's build, NAME or NAME=VALUE; repeatable",
       action="append", default=[], metavar="NAME[=VALUE]"),
    _o("--include", RUNS, "an include folder for the kernel's build (its own folder is one already); repeatable",
       action="append", default=[], metavar="DIR"),
    _o("--tiling-key", RUNS, "the tiling key TILING_KEY_IS branches on (default {default})",
       type=non_negative_int, default=0),
    _o("--kernel-type", RUNS, "the cores a launch starts: vector-only, cube-only, 'mix 1:1' or 'mix 1:2' "
                              "(default: what the source declares: KERNEL_TASK_TYPE_DEFAULT, __mix__(1, 2), __cube__; "
                              "else vector-only)",
       type=_kernel_type, default=None, metavar="TYPE"),
    # -- what runs: an operator repository's unit tests (mpnpu ut)
    _o("checkout", RUNS, "a checkout of an operator repository laid out like the public ones (cmake/ut.cmake; "
                         "<category>/<op>/tests/ut/op_kernel/ with AddOpTestCase)", metavar="CHECKOUT"),
    _o("--ops", RUNS, "only these operators' unit tests, comma-separated: operator names or folders "
                      "(swi_glu,activation/gelu; --op works too); default: every one", type=list_of(str, "operators"),
       default=None, metavar="NAME,..."),
    _o("tree", RUNS, "a dev kit's samples folder (its examples/, or any folder holding samples: a CMakeLists.txt "
                     "with add_executable of a .asc, scripts/, a README with the recipe)", metavar="TREE"),
    _o("--samples", RUNS, "only these samples, comma-separated: names or trailing folders (brcb,"
                          "01_memory_vector_compute/cast); default: every one", type=list_of(str, "samples"),
       default=None, metavar="NAME,..."),
    _o("--step-timeout", RUNS, "stop a sample's data, program or verify step after this long, failing the sample "
                               "(default {default})", type=positive_float, default=600.0, metavar="SECONDS"),
    _o("-j", RUNS, "build N tests at a time; the built ones run meanwhile, --run-jobs at a time (default {default})",
       type=positive_int, default=1, metavar="N"),
    _o("--run-jobs", RUNS, "run N built tests at a time, each in a run folder of its own; the tests' own data "
                           "scripts and small kernels leave CPUs idle that a second test uses (default {default})",
       type=positive_int, default=1, metavar="N"),
    _o("--build-dir", RUNS, "where the unit tests' object cache, staged sources, binaries and run folders are kept "
                            "(default: beside mpnpu's kernel build cache)", default=None, metavar="DIR",
       type=os.path.abspath),  # (the runs happen in folders of their own: a relative path would move)
    _o("--build-opt", RUNS, "the optimisation level of the unit tests' builds, as -O takes it (default {default})",
       choices=("0", "1", "2", "3", "g", "s"), default="1"),
    _o("--build-only", RUNS, "build the unit tests and report what they need, without running them",
       action="store_true"),
    _s(settings.MUTATE_SYNCS, RUNS),
    _o("--run-proven", RUNS, "sync mutation testing: run the mutants the baseline's traces already prove redundant "
                             "too (a SetFlag, WaitFlag or PipeBarrier whose removal leaves racecheck with no hazard; "
                             "by default they are classed redundant without a run)", action="store_true"),
    _o("--cold-python", RUNS, "run the tests' data scripts in a fresh python3 each call; by default each is forked "
                              "from one interpreter that has imported the heavy packages they import (numpy, torch, "
                              "TensorFlow, ...) once, the scripts unchanged", action="store_true"),
    _o("--resume", RUNS, "with --mutate-syncs: take over the mutants the earlier run whose --json report is PATH "
                         "classified, for each test whose program, own folder, mpnpu and options are the same (its "
                         "baseline still runs; the mutants that run did not reach run now); a long run stopped "
                         "or out of time goes on where it was", default=None, metavar="PATH"),
    _o("--mutate-jobs", RUNS, "mutants of one test run side by side, each in a run folder of its own "
                              "(default {default})", type=positive_int, default=1, metavar="N"),
    _o("--case-timeout", RUNS, "stop a gtest case of a unit test after this long, failing it; the test goes on "
                               "with its next case (default {default})", type=positive_float, default=600.0,
       metavar="SECONDS"),
    _o("--test-timeout", RUNS, "stop a unit test's program after this long (default {default})",
       type=positive_float, default=3600.0, metavar="SECONDS"),
    _o("--with-opbase", RUNS, "the checkout of the opbase repository whose headers the tests' build takes (default: "
                         "CHECKOUT's sibling opbase/ or ops-base/, if there)", default=None, metavar="DIR"),
    _o("--with-ops-tensor", RUNS, "the checkout of the ops-tensor repository (default: CHECKOUT's sibling ops-tensor/, "
                             "if there)", default=None, metavar="DIR"),
    # -- what is reported
    _o("--json", REPORTS, "also write the report as JSON", type=writable_path, default=None, metavar="PATH",
       report="mpnpu.report.json:JsonReport"),
    _o("--junit", REPORTS, "also write the result as JUnit XML for CI (expected failures reported as xfail)",
       type=writable_path, default=None, metavar="PATH", report="mpnpu.report.junit:JUnitReport"),
    _o("--markdown", REPORTS, "also write the table as Markdown", type=writable_path, default=None, metavar="PATH",
       report="mpnpu.report.markdown:MarkdownReport"),
    _s(settings.TIMELINE, REPORTS, report="mpnpu.report.chrome_trace:ChromeTraceReport"),
    _o("--timeline-case", REPORTS, "draw case N instead: a failing and a passing run of it per variant (or step), "
                                   "as far as the run has them", type=non_negative_int, default=None, metavar="N"),
    _o("--timeline-png", REPORTS, "draw the same launches as a picture, .png or .svg "
                                  "(needs pip install 'mpnpu[plot]')", type=picture_path, default=None,
       metavar="PATH", report="mpnpu.report.picture:TimelinePicture"),
    _o("--plot", REPORTS, "draw the failure rate per configuration with its 95%% Wilson interval, .png or .svg "
                          "(needs pip install 'mpnpu[plot]')", type=picture_path, default=None, metavar="PATH",
       report="mpnpu.report.picture:SweepPicture"),
    _o("--quiet", REPORTS, "no progress bar; print only the verdict line", action="store_true"),
    _o("--verbose", REPORTS, "show details: the last frames of a core's traceback for launch errors (the JSON "
                             "report has them too), every configuration's lines", action="store_true"),
    # -- scale-out
    _o("--jobs", SCALE, "parallel slots on this machine, each its own device pinned to its own CPUs (default: as "
                        "many as the CPUs hold at --cpus-per-core; 1 runs in this process)", type=positive_int,
       default=None, metavar="N"),
    _o("--cluster", SCALE, "run the shards as Ray tasks: on the Ray cluster at ADDRESS, or without ADDRESS on an "
                           "embedded local one (needs pip install 'mpnpu[cluster]')", nargs="?", const="",
       default=None, metavar="ADDRESS"),
    _s(settings.CPUS_PER_CORE, SCALE),
    _o("--shard-cases", SCALE, "cut each configuration's cases into shards of N cases, which run side by side "
                               "(default: one shard per configuration)", type=positive_int, default=None,
       metavar="N"),
)

#: the options of every command that runs a device (see :func:`runtime_options`)
DEVICE = ("pipes", "pipe_latency_us", "timeout", "stall_grace", "poison", "no_auto_sync")


def runtime_options(args: argparse.Namespace, base: RuntimeOptions = DEFAULT_OPTIONS) -> RuntimeOptions:
    """``base`` with what the device options on the command line ask for (the ones it has)."""
    changes: dict[str, Any] = {}
    if getattr(args, "pipes", None) is not None:
        changes["pipes"] = args.pipes
    if getattr(args, "pipe_latency_us", None) is not None:
        changes["pipe_latency_us"] = args.pipe_latency_us
    if getattr(args, "timeout", None):
        changes["launch_timeout_s"] = args.timeout
    if getattr(args, "stall_grace", None) is not None:
        changes["stall_grace_s"] = args.stall_grace
    if getattr(args, "poison", None) is not None:
        changes["gm_poison"] = args.poison
    if getattr(args, "no_auto_sync", False):
        changes["auto_sync"] = False
    return dataclasses.replace(base, **changes) if changes else base


def device_notes(args: argparse.Namespace) -> list[str]:
    """The lines a report adds when a device option is not at its default."""
    notes = []
    if getattr(args, "pipes", "kernel") != "kernel":
        notes.append(f"pipes: {args.pipes} (--pipes; the default runs pipelined kernels' pipes asynchronously)")
    if getattr(args, "pipe_latency_us", None) is not None:
        notes.append(f"pipe latency bound: {args.pipe_latency_us:g} us (--pipe-latency-us; default "
                     f"{show(settings.PIPE_LATENCY_US.default)}): only when copies run changes")
    if getattr(args, "poison", None) is not None:
        notes.append(f"freed GM blocks were poisoned with 0x{args.poison:02X}")
    if getattr(args, "racecheck", False):
        notes.append("racecheck assumed a kernel built without the compiler's automatic synchronisation "
                     "(--no-auto-sync)" if getattr(args, "no_auto_sync", False) else
                     "racecheck assumed the compiler's automatic synchronisation between MTE2/MTE3/V and the "
                     "scalar unit (--cce-auto-sync, its default; --no-auto-sync for a kernel built without it)")
    return notes


#: the scale-out options (see :func:`scale_backend`)
SCALE_OUT = ("jobs", "cluster", "cpus_per_core", "shard_cases")


def scale_backend(args: argparse.Namespace) -> Backend:
    """Where the shards run, as the scale-out options say; with --cluster and no Ray installed, the
    one-line UsageError that says what to install, before anything starts."""
    if args.cluster is not None:
        from mpnpu.scale.cluster import import_ray

        import_ray()
    return Backend(jobs=args.jobs, cluster=args.cluster is not None, address=args.cluster or None,
                   cpus_per_core=args.cpus_per_core or None)
