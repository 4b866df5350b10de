"""The one option table: every option of every mpnpu command, defined once.

Each option has one spelling, one meaning and one help text; a command lists the options it takes
(:class:`mpnpu.cli.command.Command`), and may give one of them its own default, never another
meaning. ``--help`` shows them in three groups: what runs, what is reported, scale-out (and the
chosen operator's own options, e.g. FLOMS's tile sizes, in a group of their own).

Adding an option: one entry in :data:`OPTIONS` (its group, argparse settings, help), then its name
in the ``options`` of each command that takes it. A report option (a file the command writes)
names its :class:`~mpnpu.report.Reporter` in ``report``; the command hands the result to
:func:`mpnpu.cli.outputs.write_reports`. Spellings of earlier releases stay accepted, unlisted, in
``former`` (``--repeats`` is now ``--repeat``), so no documented command breaks.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

from mpnpu.errors import UsageError
from mpnpu.harness.runner import DEFAULT_MAX_SAME_ERRORS
from mpnpu.harness.stress.plan import PLACEMENTS
from mpnpu.runtime.checks import check_block_dim
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM, DEFAULT_OPTIONS, RuntimeOptions
from mpnpu.runtime.cpuset import DEFAULT_CPUS_PER_CORE
from mpnpu.runtime.topology import KernelType
from mpnpu.scale.backend import Backend

#: the operator every command runs unless --op names another
DEFAULT_OPERATOR = "floms"

RUNS = "what runs"
REPORTS = "what is reported"
SCALE = "scale-out (slots on this machine, or a Ray cluster)"
GROUPS = (RUNS, REPORTS, SCALE)

T = TypeVar("T")


# -- argument types: each raises argparse.ArgumentTypeError, which the parser turns into one line ---


def int_at_least(low: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer >= ``low``, described as ``what`` in the error."""

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
    """An argparse type: a float in [low, high) (or (low, high) with ``low_open``)."""

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


def picture_path(text: str) -> str:
    """A writable .png or .svg path."""
    if os.path.splitext(text)[1].lower() not in (".png", ".svg"):
        raise argparse.ArgumentTypeError(f"{text}: a picture must end in .png or .svg")
    return writable_path(text)


def block_dim(text: str) -> int:
    """A block_dim the device has (1..24 AI cores)."""
    value = positive_int(text)
    try:
        return check_block_dim(value)
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

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def positional(self) -> bool:
        """An argument given by position (``mpnpu run SOURCE ARG...``), not by flag."""
        return not self.flag.startswith("-")


def _o(flag: str, group: str, help: str, *, former: tuple[str, ...] = (), report: str = "", **kwargs: Any) -> Option:
    return Option(flag, group, help, kwargs, former, report)


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
    _o("--drop-sync", RUNS, "sync points to drop (comma-separated): an operator's incident variant drops these "
                            "instead of its own (see the list below); a C++ kernel's sync points are the FILE:LINE "
                            "of the sync call, the file by any path suffix (add.cpp:45)", former=("--drop",),
       metavar="S0,S1,..."),
    _o("--probe", RUNS, "run a diagnosis probe on every variant (see mpnpu investigate --help)", default="",
       metavar="NAME"),
    # -- what runs: how much
    _o("--cases", RUNS, "distinct seeded cases (default {default})", type=positive_int, default=100),
    _o("--repeat", RUNS, "how many times every case is run (default {default})", type=positive_int, default=1,
       former=("--repeats",)),
    _o("--seed", RUNS, "case stream seed (default {default})", type=non_negative_int, default=0),
    _o("--case-runs", RUNS, "at least this many case-runs (default {default})", type=positive_int, default=10_000),
    _o("--time-limit", RUNS, "a cap on the run time in seconds, not a length to run for: the run ends when its "
                             "cases are done or at this limit, whichever comes first (a configuration or shard "
                             "stops at its share of it; 'inf' for no limit; default {default})", type=duration,
       default=None, metavar="SECONDS", former=("--duration",)),
    # -- what runs: the device
    _o("--block-dim", RUNS, "AI cores, each 1 cube + 2 vector core processes; for a vector-only or cube-only C++ "
                             "kernel, cores of its one type, as its launch counts them, an AI core being 2 vector "
                             "cores (default {default})",
       type=block_dim, default=DEFAULT_BLOCK_DIM),
    _o("--pipes", RUNS, "how each core runs its data-movement pipes: 'kernel' (default) asynchronously for kernels "
                        "marked @pipelined, in order for the rest; 'async' for every kernel; 'sync' in order for "
                        "every kernel (faster; intra-core races cannot show, racecheck still reports them). "
                        "See docs/pipes.md", choices=("kernel", "async", "sync"), default="kernel"),
    _o("--pipe-latency-us", RUNS, "asynchronous pipes: the longest an issued copy stays queued while the core "
                                  "keeps issuing (default 100); longer shows intra-core races that need a copy to "
                                  "be later. Changes only when copies run", type=positive_float, default=None,
       metavar="US"),
    _o("--timeout", RUNS, "give up a launch after this long (default 300)", type=positive_float, default=None,
       metavar="SECONDS"),
    _o("--poison", RUNS, "fill freed GM blocks with this byte (e.g. 0xFF) instead of leaving stale data",
       type=byte_value, default=None, metavar="BYTE"),
    # -- what runs: race detection and directed runs
    _o("--racecheck", RUNS, "trace every GM access and report unsynchronised conflicting accesses (hazards)",
       action="store_true"),
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
    _o("--tick-ms", RUNS, "watchdog interval in ms (default {default}; the runtime's default is 50)",
       type=float_in(0.0, low_open=True, what="--tick-ms"), default=0.2),
    _o("--late-ms", RUNS, "how late the late core of each handshake arrives, in ms (default {default})",
       type=float_in(0.0, what="--late-ms"), default=1.0),
    _o("--hogs", RUNS, "busy-looping processes run beside the soak (default {default})", type=non_negative_int,
       default=0),
    # -- what runs: one C++ kernel (mpnpu run)
    _o("source", RUNS, "the kernel's source, SOURCE.cpp or SOURCE.asc, with :ENTRY when it defines more than one "
                       "kernel and launches none with <<<>>>", metavar="SOURCE[:ENTRY]"),
    _o("kernel_args", RUNS, "the kernel's arguments in the order of its parameters: in:PATH:DTYPE, "
                            "out:PATH:DTYPE:COUNT, io:IN:OUT:DTYPE (read from IN, written to OUT), "
                            "gm:DTYPE:COUNT[:FILL], tiling:HEADER:STRUCT:field=value,..., "
                            "a scalar (u32:16384, f32:0.5, ...) or null", nargs="*", metavar="ARG"),
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
    _o("-j", RUNS, "build N tests at a time; the built ones run one at a time meanwhile (default {default})",
       type=positive_int, default=1, metavar="N"),
    _o("--build-dir", RUNS, "where the unit tests' object cache, staged sources, binaries and run folders are kept "
                            "(default: beside mpnpu's kernel build cache)", default=None, metavar="DIR"),
    _o("--build-opt", RUNS, "the optimisation level of the unit tests' builds, as -O takes it (default {default})",
       choices=("0", "1", "2", "3", "g", "s"), default="1"),
    _o("--build-only", RUNS, "build the unit tests and report what they need, without running them",
       action="store_true"),
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
    _o("--timeline", REPORTS, "write launch timelines as Chrome Trace Event JSON (Perfetto UI, chrome://tracing, "
                              "MindStudio Insight): by default the first failing case-run of each variant (or step) "
                              "and, for contrast, a passing run of the same case", type=writable_path, default=None,
       metavar="PATH", report="mpnpu.report.chrome_trace:ChromeTraceReport"),
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
    _o("--cpus-per-core", SCALE, "pin each device (and the process that drives it) to N CPUs per AI core (default "
                                 "{default}: block_dim 1 runs 3 core processes on 2 CPUs, the same crowding on any "
                                 "machine); 0: do not pin", type=non_negative_int, default=DEFAULT_CPUS_PER_CORE,
       metavar="N"),
    _o("--shard-cases", SCALE, "cut each configuration's cases into shards of N cases, which run side by side "
                               "(default: one shard per configuration)", type=positive_int, default=None,
       metavar="N"),
)

#: the options of every command that runs a device (see :func:`runtime_options`)
DEVICE = ("pipes", "pipe_latency_us", "timeout", "poison")


def runtime_options(args: argparse.Namespace, base: RuntimeOptions = DEFAULT_OPTIONS) -> RuntimeOptions:
    """``base`` with what the device options on the command line ask for (the ones it has)."""
    changes: dict[str, Any] = {}
    if getattr(args, "pipes", None) is not None:
        changes["pipes"] = args.pipes
    if getattr(args, "pipe_latency_us", None) is not None:
        changes["pipe_latency_us"] = args.pipe_latency_us
    if getattr(args, "timeout", None):
        changes["launch_timeout_s"] = args.timeout
    if getattr(args, "poison", None) is not None:
        changes["gm_poison"] = args.poison
    return dataclasses.replace(base, **changes) if changes else base


def device_notes(args: argparse.Namespace) -> list[str]:
    """The lines a report adds when a device option is not at its default."""
    notes = []
    if getattr(args, "pipes", "kernel") != "kernel":
        notes.append(f"pipes: {args.pipes} (--pipes; the default runs pipelined kernels' pipes asynchronously)")
    if getattr(args, "pipe_latency_us", None) is not None:
        notes.append(f"pipe latency bound: {args.pipe_latency_us:g} us (--pipe-latency-us; default 100): "
                     "only when copies run changes")
    if getattr(args, "poison", None) is not None:
        notes.append(f"freed GM blocks were poisoned with 0x{args.poison:02X}")
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
