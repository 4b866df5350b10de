"""``mpnpu run``: one kernel on inputs from ``.bin`` files, outputs to ``.bin`` files, repeated, each
repeat compared with a golden ``.bin`` — the layout the Ascend C samples use::

    gen_data.py        -> input/*.bin, output/golden.bin (the sample's own script, unchanged)
    mpnpu run k.asc:add_custom --block-dim 8 in:input/input_x.bin:float32 in:input/input_y.bin:float32 \\
                               out:output/output.bin:float32:16384 u32:16384 --golden output/golden.bin
    verify_result.py   <- output/output.bin (the sample's own check, unchanged)

The kernel's arguments are given in the order of its parameters, one word each:

    in:PATH:DTYPE              a GM tensor filled from a .bin file
    out:PATH:DTYPE:COUNT       a GM tensor of COUNT elements, written to PATH after the last repeat
    io:IN:OUT:DTYPE            a GM tensor filled from the .bin file IN (each repeat), written to OUT after
                               the last repeat (an output the kernel accumulates into: atomics)
    gm:DTYPE:COUNT[:FILL]      a GM buffer (workspace, sync space), filled with FILL (default 0)
    tiling:HEADER:STRUCT:f=v,g=w   a tiling struct packed by field name (mpnpu.ascendc.tiling)
    i32:V, u32:V, i64:V, u64:V, f32:V, f64:V, null   a scalar (or a null pointer)

A sample's source may hold its host program and its ``kernel<<<blocks, ...>>>(args)`` launches (one per
scenario, say), which are not C++: those statements are the one thing the runner replaces (in a
prepared copy that keeps every line where it was, so reports name the sample's own lines); its
``main`` is compiled but not run.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from mpnpu.ascendc.build import syncpoints
from mpnpu.ascendc.build.compiler import cache_dir
from mpnpu.ascendc.build.syncpoints import blank_comments_and_strings
from mpnpu.ascendc.kernel import CompiledKernel, compile_kernel, detect_kernel_type
from mpnpu.ascendc.run_result import OutputCheck, RunResult
from mpnpu.ascendc.tiling import TilingLayout, tiling_layout
from mpnpu.errors import InvalidArgumentError, UsageError
from mpnpu.racecheck import HazardLog
from mpnpu.racecheck.directed import hold_pairs
from mpnpu.racecheck.reuse import AnalysisCache
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.dtypes import get_dtype, to_float32
from mpnpu.runtime.topology import KernelType

#: a kernel launch statement of a host source, ``kernel<<<config>>>(args);`` (groups kernel, config and
#: args); mpnpu run and mpnpu samples both find launches with it
LAUNCH_STATEMENT = re.compile(r"\b(?P<kernel>[A-Za-z_]\w*(?:<[^<>;]*>)?)\s*<<<(?P<config>.*?)>>>"
                     r"\s*\((?P<args>[^;]*)\)\s*;", re.S)
_SCALAR_KINDS = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32,
                 "i64": np.int64, "u64": np.uint64, "f32": np.float32, "f64": np.float64}


@dataclass(frozen=True)
class RunArg:
    """One kernel argument of ``mpnpu run``."""

    kind: str  # "in", "out", "io", "gm", "tiling", "scalar", "null"
    text: str
    path: str = ""  # the file read ("in", "io") or written ("out")
    out_path: str = ""  # the file an "io" tensor is written to
    dtype: str = ""
    count: int = 0
    fill: float = 0.0
    value: Any = None
    tiling: tuple[str, str, tuple[tuple[str, str], ...]] | None = None


def parse_arg(text: str) -> RunArg:
    """One argument word (forms in the module docstring); a UsageError says what is wrong."""
    head, _, rest = text.partition(":")
    try:
        if head == "in":
            path, _, dtype = rest.rpartition(":")
            get_dtype(dtype)
            return RunArg("in", text, path=path, dtype=dtype)
        if head == "out":
            path, dtype, count = rest.rsplit(":", 2)
            get_dtype(dtype)
            return RunArg("out", text, path=path, dtype=dtype, count=_count(count))
        if head == "io":
            paths, _, dtype = rest.rpartition(":")
            src, _, dst = paths.rpartition(":")
            if not src or not dst:
                raise InvalidArgumentError("expected io:IN_PATH:OUT_PATH:DTYPE")
            get_dtype(dtype)
            return RunArg("io", text, path=src, dtype=dtype, out_path=dst)
        if head == "gm":
            parts = rest.split(":")
            get_dtype(parts[0])
            return RunArg("gm", text, dtype=parts[0], count=_count(parts[1]),
                          fill=float(parts[2]) if len(parts) > 2 else 0.0)
        if head == "tiling":
            header, struct, fields = rest.split(":", 2)
            pairs = tuple(tuple(kv.split("=", 1)) for kv in fields.split(",") if kv)
            if any(len(p) != 2 for p in pairs):
                raise InvalidArgumentError("fields are NAME=VALUE, comma-separated")
            return RunArg("tiling", text, tiling=(header, struct, pairs))  # type: ignore[arg-type]
        if head == "null" and not rest:
            return RunArg("null", text)
        if head in _SCALAR_KINDS:
            kind: Any = _SCALAR_KINDS[head]
            value = kind(float(rest)) if head.startswith("f") else kind(int(rest, 0))
            return RunArg("scalar", text, dtype=head, value=value)
    except (ValueError, TypeError, IndexError) as e:
        raise UsageError(f"kernel argument {text!r}: {e}") from None
    raise UsageError(f"kernel argument {text!r}: expected in:PATH:DTYPE, out:PATH:DTYPE:COUNT, io:IN:OUT:DTYPE, "
                     "gm:DTYPE:COUNT, "
                     "tiling:HEADER:STRUCT:f=v,..., a scalar such as u32:16384, or null")


def _count(text: str) -> int:
    n = int(text, 0)
    if n <= 0:
        raise InvalidArgumentError(f"element count must be positive, got {n}")
    return n


@dataclass
class Prepared:
    """A source ready to compile: its path (a prepared copy if it held ``<<<>>>`` launches or a
    ``__kfc_workspace__`` kernel parameter, see :func:`set_kfc_workspaces`), the
    kernel the first launch named and how many arguments it passed (``None`` when there was none),
    and every launch as (kernel, argument count) — a sample may launch one kernel per scenario."""

    path: str
    original: str
    launched: str | None = None
    launch_args: int | None = None
    launches: tuple[tuple[str, int], ...] = ()

    def arguments_of(self, kernel: str) -> int | None:
        """How many arguments the sample's launches of ``kernel`` pass (``None``: it launches none,
        or launches it with different counts)."""
        counts = {n for k, n in self.launches if k == kernel}
        return counts.pop() if len(counts) == 1 else None


#: a kernel parameter marked as the system workspace: before its type (``__kfc_workspace__ __gm__ uint8_t*
#: ws``) or after it (``__gm__ uint8_t* __kfc_workspace__ ws``, as the dev kit's matmul samples write it)
_KFC_WORKSPACE = re.compile(r"\b__kfc_workspace__\s+(?:__gm__\s+)?[\w:]+\s*\*\s*(?P<name>[A-Za-z_]\w*)"
                            r"|\*\s*__kfc_workspace__\s+(?P<after>[A-Za-z_]\w*)")


def set_kfc_workspaces(text: str) -> str:
    """``text`` with each kernel whose parameter is marked ``__kfc_workspace__`` starting (on the line
    of its opening brace) by making that parameter the system workspace, as the chip's toolchain
    does for the matmul server: ``AscendC::SetSysWorkspace(workspace);``."""
    blank = blank_comments_and_strings(text)
    inserts = []
    for m in _KFC_WORKSPACE.finditer(blank):
        brace, semi = blank.find("{", m.end()), blank.find(";", m.end())
        if brace < 0 or 0 <= semi < brace:
            continue  # (a declaration, not the definition)
        inserts.append((brace + 1, f" AscendC::SetSysWorkspace({m.group('name') or m.group('after')});"))
    for at, code in reversed(inserts):
        text = text[:at] + code + text[at:]
    return text


def prepare_source(path: str) -> Prepared:
    """Replace each of a sample's ``kernel<<<...>>>(...)`` statements by an empty statement,
    keeping every line in place."""
    with open(path, errors="replace") as f:
        original_text = f.read()
    text = set_kfc_workspaces(original_text)
    # (searched with comments and strings blanked out, which keeps every position)
    matches = list(LAUNCH_STATEMENT.finditer(blank_comments_and_strings(text)))
    if not matches and text == original_text:
        return Prepared(os.path.abspath(path), os.path.abspath(path))
    launches = tuple((m.group("kernel"), len([a for a in m.group("args").split(",") if a.strip()]))
                     for m in matches)
    parts, at = [], 0
    for m in matches:
        blank = "".join("\n" if ch == "\n" else " " for ch in text[m.start():m.end()])
        parts += [text[at:m.start()], ";" + blank[1:]]
        at = m.end()
    body = "".join(parts) + text[at:]
    original = os.path.abspath(path)
    digest = hashlib.sha256((original + body).encode()).hexdigest()[:16]
    folder = os.path.join(cache_dir(), "prepared", digest)
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, os.path.basename(path))
    tmp = f"{out}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        # #line keeps the sample's own file and line numbers in every report and sync point name.
        f.write(f'#line 1 "{original}"\n{body}')
    os.replace(tmp, out)
    if not launches:
        return Prepared(out, original)
    return Prepared(out, original, launches[0][0], launches[0][1], launches)


_KERNEL_DEF = re.compile(r"\b(?:__global__\s+__aicore__|__aicore__\s+__global__)\s+void\s+(\w+)\s*\(")


def kernel_names(path: str) -> list[str]:
    """The kernels a source defines (``__global__ __aicore__ void NAME(``), in order, once each."""
    with open(path, errors="replace") as f:
        text = blank_comments_and_strings(f.read())
    return list(dict.fromkeys(_KERNEL_DEF.findall(text)))


def only_kernel(path: str) -> str:
    """The one kernel a source defines, for a source that launches none with ``<<<>>>`` and was
    named without ``:ENTRY``; a usage error naming them when there are several, or none."""
    names = kernel_names(path)
    if len(names) == 1:
        return names[0]
    if not names:
        raise UsageError(f"{path}: no kernel (__global__ __aicore__ void NAME(...)) and no <<<>>> launch in it")
    raise UsageError(f"{path} defines {len(names)} kernels ({', '.join(names)}) and launches none with <<<>>>: "
                     f"name one, {path}:{names[0]}")


def _compare(got: np.ndarray, golden: np.ndarray, dtype: str, rtol: float,
             atol: float) -> tuple[int, list[tuple[int, float, float]]]:
    d = get_dtype(dtype)
    if golden.size != got.size:
        raise UsageError(f"the golden has {golden.size} elements of {dtype}, the output {got.size}")
    if d.is_float:
        g, w = to_float32(got, d).astype(np.float64), to_float32(golden, d).astype(np.float64)
        bad = ~(np.abs(g - w) <= atol + rtol * np.abs(w)) & ~(np.isnan(g) & np.isnan(w))
    else:
        g, w = got.astype(np.float64), golden.astype(np.float64)
        bad = got != golden
    idx = np.flatnonzero(bad)
    return int(idx.size), [(int(i), float(g[i]), float(w[i])) for i in idx[:8]]


def run(source: str, entry: str | None, args: Sequence[RunArg], *, block_dim: int, golden: dict[int, str],
        repeat: int = 1, rtol: float = 1e-3, atol: float = 1e-5, kernel_type: KernelType | None = None,
        defines: dict[str, str] | None = None, include_dirs: Sequence[str] = (), tiling_header: str | None = None,
        pre_includes: Sequence[str] = (), tiling_key: int = 0,
        drop_syncs: Sequence[str] = (), racecheck: bool = False, options: Any = None,
        progress: Any = None, timeline: str | None = None, confirm: bool = False,
        initcheck: bool = False, synccheck: bool = False, timeline_png: str | None = None) -> RunResult:
    """Run the kernel ``repeat`` times (module docstring); ``golden``: output argument position
    (0-based) -> golden .bin path; ``tiling_header``: a header included before the source (a
    CPU-debug ``*_tiling_def.h``, or what ``python -m mpnpu.ascendc --kernel-tiling`` makes);
    ``pre_includes``: more headers included before the source, in order, after it (a prelude);
    ``timeline``: write a Chrome trace of the first repeat that failed (or differed from the first)
    beside one that passed, or of the first repeat when none failed (every repeat is then traced);
    ``timeline_png``: the same repeats drawn as a picture (.png or .svg; the report's picture module);
    ``confirm`` (with ``racecheck``): after the repeats, a race-directed launch that holds the first core
    of racecheck's first hazard between cores until its partner has made the conflicting access, on
    fresh inputs, its outputs checked as a repeat's (:func:`_confirm`); ``initcheck`` / ``synccheck``:
    every repeat is traced and its findings merged into the result's (:mod:`mpnpu.racecheck.checks`)."""
    from mpnpu.racecheck.checks import TraceChecks
    from mpnpu.racecheck.findings import FindingLog
    from mpnpu.runtime.device import Device

    prepared = prepare_source(source)
    name = entry or prepared.launched or only_kernel(source)
    n_args = prepared.arguments_of(name)
    if n_args is not None and n_args != len(args):
        raise UsageError(f"{source}: the sample launches {name} with {n_args} arguments, {len(args)} given")
    include = [os.path.dirname(prepared.original), *include_dirs]
    for header in pre_includes:
        if not os.path.isfile(header):
            raise UsageError(f"--pre-include {header}: no such file")
    headers = [h for h in (tiling_header, *pre_includes) if h]
    kernel: CompiledKernel = compile_kernel(prepared.path, name, defines={**(defines or {}),
                                            "main": "mpnpu_sample_main"}, include_dirs=include,
                                            tiling_header=headers[0] if headers else None,
                                            flags=[w for h in headers[1:] for w in ("-include", os.path.abspath(h))],
                                            kernel_type=kernel_type or detect_kernel_type([prepared.original]),
                                            tiling_key=tiling_key)
    kernel = kernel.with_launch() if not tiling_key else kernel
    for i in golden:
        if not 0 <= i < len(args) or args[i].kind not in ("out", "io"):
            raise UsageError(f"--golden names argument {i + 1}, which is not an out: or io: argument")
    goldens = {i: np.fromfile(p, dtype=get_dtype(args[i].dtype).storage) for i, p in golden.items()}
    # tiling: arguments' layouts, once, read as the kernel is built (its folders, defines and prepared copy)
    layouts = {i: _tiling_layout(a, prepared, include, {**(defines or {}), "main": "mpnpu_sample_main"})
               for i, a in enumerate(args) if a.kind == "tiling"}
    kw = {"options": options} if options is not None else {}
    checks: list[list[OutputCheck]] = []
    same: list[bool] = []
    hazards = HazardLog()
    analyses = AnalysisCache()  # a repeated launch, the same but for its times, reuses the analysis
    first_bytes: list[bytes] | None = None
    drawn: dict[bool, tuple[int, Any]] = {}  # timeline: the first repeat that passed / failed, with its trace
    scout = None  # confirm: the trace of the first repeat with a hazard between cores
    trace_checks = TraceChecks(initcheck=initcheck, synccheck=synccheck)
    findings = FindingLog()
    drawing = bool(timeline or timeline_png)
    traced = bool(racecheck or drawing or trace_checks)
    # a FILE:LINE that names no sync call is an error, not a run with every sync in place
    dropped = tuple(sorted(syncpoints.resolve(drop_syncs, syncpoints.kernel_sync_points([prepared.original],
                                                                                       include_dirs))))

    interrupt: KeyboardInterrupt | None = None

    def one_repeat(dev: Any, r: int) -> None:
        nonlocal first_bytes, scout
        with dev.scope() as gm:
            values, outs = [], []
            for i, a in enumerate(args):
                values.append(_materialise(gm, a, i, layouts.get(i)))
                if a.kind in ("out", "io"):
                    outs.append((i, values[-1]))
            launch = dev.launch_with(LaunchOptions(drop_syncs=dropped, trace=traced), kernel, *values)
            if racecheck and launch.trace is not None:
                hazards.add(analyses.analyze(launch.trace), reused=analyses.last_reused)
                if confirm and scout is None and hold_pairs(launch.trace)[1]:
                    scout = launch.trace
            if trace_checks and launch.trace is not None:
                findings.add(trace_checks.run(launch.trace))
            results = [(i, dev.to_host(t)) for i, t in outs]
        row = []
        for i, arr in results:
            if i in goldens:
                n_bad, first = _compare(arr, goldens[i], args[i].dtype, rtol, atol)
            else:
                n_bad, first = 0, []
            row.append(OutputCheck(i, _written(args[i]), int(arr.size), n_bad, first, golden=i in goldens))
        checks.append(row)
        blobs = [arr.tobytes() for _, arr in results]
        if first_bytes is None:
            first_bytes = blobs
        same.append(blobs == first_bytes)
        if drawing and launch.trace is not None:
            ok = all(c.passed for c in row) and same[-1]
            drawn.setdefault(ok, (r + 1, launch.trace))
        if r == repeat - 1:
            for i, arr in results:
                path = _written(args[i])
                if os.path.dirname(path):
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                arr.tofile(path)
        if progress is not None:
            progress(1)

    with Device(block_dim, kernel_type=kernel.kernel_type, **kw) as dev:
        try:
            for r in range(repeat):
                one_repeat(dev, r)
        except KeyboardInterrupt as e:  # what finished is the result; the device ends in order
            interrupt = e
            done = min(len(checks), len(same))  # (a repeat the signal cut short is not one of them)
            del checks[done:], same[done:]
        confirmation = (_confirm(dev, kernel, args, layouts, dropped, goldens, rtol, atol, scout, hazards)
                        if confirm and interrupt is None else "")
    result = RunResult(kernel.mpnpu_kernel_name, block_dim, kernel.kernel_type, repeat, checks, same, hazards,
                       dropped, bool(racecheck), checks_run=trace_checks.checks, findings=findings,
                       interrupt=interrupt)
    if drawing and drawn:
        result.notes.extend(_write_timeline(timeline, timeline_png, drawn, kernel.mpnpu_kernel_name))
    if confirmation:
        result.notes.append(confirmation)
    return result


#: held launches a confirmation tries until the hold reverses the pair (it ends early when the other
#: cores look blocked, which a loaded machine can make them seem)
CONFIRM_TRIES = 6


def _confirm(dev: Any, kernel: CompiledKernel, args: Sequence[RunArg], layouts: dict[int, TilingLayout],
             dropped: tuple[str, ...],
             goldens: dict[int, np.ndarray], rtol: float, atol: float, scout: Any, hazards: HazardLog) -> str:
    """``--confirm``: force racecheck's first hazard between cores with a held launch and say what
    its outputs did (the note the report prints)."""
    from mpnpu.runtime.hold import REVERSED

    if scout is None:
        if len(hazards):
            return ("confirm: every hazard is inside one core; a hold orders cores, not a core's own pipes, so "
                    "none can be forced (run with --pipes async and more --repeat to see them show)")
        return "confirm: no hazard between cores to force"
    pair = next(ps[0] for ps in hold_pairs(scout)[1].values() if ps)
    plan = pair.plan()
    outcome, bad = "not reached", 0
    for _ in range(CONFIRM_TRIES):
        with dev.scope() as gm:
            values, outs = [], []
            for i, a in enumerate(args):
                # An output starts as 0xFF bytes, not as what the last repeat left in the same block
                # (the right values, which a stale read would pass for).
                values.append(_poisoned(gm, a, i) if a.kind == "out" else _materialise(gm, a, i, layouts.get(i)))
                if a.kind in ("out", "io"):
                    outs.append((i, values[-1]))
            launch = dev.launch_with(LaunchOptions(drop_syncs=dropped, hold=plan), kernel, *values)
            results = [(i, dev.to_host(t)) for i, t in outs]
        outcome = launch.hold.outcome if launch.hold is not None else "not reached"
        if outcome == REVERSED:
            break
    bad = sum(_compare(arr, goldens[i], args[i].dtype, rtol, atol)[0] for i, arr in results if i in goldens)
    held = f"{plan.describe()} ({outcome})"
    if outcome != REVERSED:
        return f"confirm: not confirmed: the hold could not reverse the pair in {CONFIRM_TRIES} tries: {held}"
    if not goldens:
        return f"confirm: the race was forced ({held}); give --golden to say whether it is harmful"
    if bad:
        return f"confirm: CONFIRMED harmful: with the race forced, {bad} output elements differ from the golden: {held}"
    return (f"confirm: forced, harmless for these inputs: the outputs (0xFF before the launch) still match the "
            f"golden: {held}")

def _write_timeline(path: str | None, picture: str | None, drawn: dict[bool, tuple[int, Any]],
                    kernel: str) -> list[str]:
    """Write the traces of ``drawn`` (a failed repeat first, then a passed one) as one Chrome trace
    (``path``) and as a picture (``picture``); the notes that say which repeats they show."""
    from mpnpu.harness.timeline.model import build_timeline
    from mpnpu.report.chrome_trace import write_chrome_trace

    shown = [(f"repeat {n} ({'passed' if ok else 'FAILED'})", ok, trace) for ok, (n, trace) in
             sorted(drawn.items(), key=lambda kv: kv[0])]
    timelines = [build_timeline(trace, label=f"{kernel}: {label}", passed=ok) for label, ok, trace in shown]
    which = " and ".join(label for label, _, _ in shown)
    notes = []
    if path:
        write_chrome_trace(path, timelines)
        notes.append(f"timeline of {which} written to {path}")
    if picture:
        from mpnpu.report.picture import render_timelines

        render_timelines(picture, timelines)
        notes.append(f"timeline picture of {which} written to {picture}")
    return notes


def format_sync_list(source: str, include_dirs: Sequence[str] = ()) -> str:
    """``mpnpu run --list-syncs``: the kernel's sync points as --drop-sync takes them (FILE:LINE), with
    their call and function; from its source, the headers beside it and the files it includes."""
    points = syncpoints.kernel_sync_points([source], include_dirs)
    width = max((len(n) for n in points), default=0)
    lines = [f"{source}: {len(points)} sync point{'s' if len(points) != 1 else ''} (--drop-sync FILE:LINE, the file "
             f"by any path suffix)"]
    lines += [f"  {name:<{width}}  {p.call} in {p.function}" for name, p in points.items()]
    return "\n".join(lines)


def _written(a: RunArg) -> str:
    """The file an output argument is written to."""
    return a.out_path if a.kind == "io" else a.path


def _poisoned(gm: Any, a: RunArg, i: int) -> Any:
    """An out: argument's tensor filled with 0xFF bytes."""
    storage = get_dtype(a.dtype).storage
    raw = np.full(a.count * np.dtype(storage).itemsize, 0xFF, np.uint8).view(storage)
    return gm.to_device(f"arg{i + 1}:{os.path.basename(a.path)}", raw, a.dtype)


def _tiling_layout(a: RunArg, prepared: Prepared, include_dirs: Sequence[str],
                   defines: dict[str, str]) -> TilingLayout:
    """The layout of a tiling: argument's struct, read with the kernel's include folders and defines.
    A struct the kernel's own source defines is read from the source as compiled (a sample's
    ``<<<>>>`` launches replaced; its ``main`` renamed by the defines, as in the kernel's build)."""
    header, struct, _ = a.tiling  # type: ignore[misc]
    if os.path.isfile(header) and os.path.samefile(header, prepared.original):
        header = prepared.path
    return tiling_layout(header, struct, include_dirs=include_dirs, defines=defines)


def _materialise(gm: Any, a: RunArg, i: int, layout: TilingLayout | None = None) -> Any:
    name = f"arg{i + 1}"
    if a.kind in ("in", "io"):
        if not os.path.isfile(a.path):
            raise UsageError(f"input file {a.path} does not exist (run the sample's gen_data.py first?)")
        data = np.fromfile(a.path, dtype=get_dtype(a.dtype).storage)
        return gm.to_device(f"{name}:{os.path.basename(a.path)}", data, a.dtype)
    if a.kind == "out":
        return gm.empty(f"{name}:{os.path.basename(a.path)}", a.count, a.dtype)
    if a.kind == "gm":
        d = get_dtype(a.dtype)
        return gm.to_device(f"{name}:gm", np.full(a.count, a.fill, dtype=np.float64 if d.is_float else np.int64)
                            .astype(np.float32 if d.is_float else d.storage), a.dtype)
    if a.kind == "tiling":
        _, _, pairs = a.tiling  # type: ignore[misc]
        assert layout is not None  # (run reads every tiling: argument's layout before the first repeat)
        values = {k: (float(v) if layout.field(k).kind == "f" else int(v, 0)) for k, v in pairs}
        return gm.to_device(f"{name}:tiling", layout.pack(values), "uint8")
    if a.kind == "null":
        return None
    return a.value.item()
