"""Building a sample's host program against mpnpu.

Each ``.asc`` source is staged as a C++ file that starts with ``#line 1 "<the sample's file>"`` and has
every ``kernel<<<blocks, l2ctrl, stream>>>(args);`` statement replaced, on the same line, by the
launch ``ICPU_RUN_KF(kernel, blocks, args)`` makes: it runs on the multi-process device through the
CPU-debug runtime, and every report names the sample's own file and line. A kernel parameter marked
``__kfc_workspace__`` becomes the system workspace at the kernel's start (``SetSysWorkspace``, on the
line of the kernel's opening brace). The sample's ``acl/acl.h`` is mpnpu's,
built with ``MPNPU_ACL_GM`` so that ``aclrtMalloc`` gives GM the core processes share. The sample's
files on disk are never changed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field

from mpnpu.ascendc.build.compiler import INCLUDE_DIR
from mpnpu.ascendc.build.syncpoints import blank_comments_and_strings
from mpnpu.tools.run import LAUNCH_STATEMENT, set_kfc_workspaces
from mpnpu.tools.samples.discover import Sample
from mpnpu.tools.ut import missing
from mpnpu.tools.ut.conditionals import active_text, parse_defines
from mpnpu.tools.ut.kernel_mode import kernel_mode_of


@dataclass
class SampleBuild:
    """A sample's build: its program, or the compiler's words and the names mpnpu lacks."""

    ok: bool = False
    program: str = ""
    seconds: float = 0.0
    kernel_mode: str = "mix"
    errors: list[str] = field(default_factory=list)
    missing: list[missing.Missing] = field(default_factory=list)


def _top_level_split(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


_QUALIFIER = r"\b(__vector__|__cube__|__mix__\s*\(\s*(\d)\s*,\s*(\d)\s*\))(?:\s+\w+)*\s+void\s+{name}\s*\("
_MODES = {"__vector__": "AIV_MODE", "__cube__": "AIC_MODE", ("1", "0"): "AIC_MODE", ("0", "1"): "AIV_MODE"}


def _declared_mode(text: str, kernel: str) -> str | None:
    """The CPU-debug kernel mode a kernel's own qualifier declares (``__vector__``: AIV_MODE, ``__cube__``:
    AIC_MODE, ``__mix__(c, v)``: by its ratio), or None for a kernel that declares none (``__aicore__``)."""
    m = re.search(_QUALIFIER.format(name=re.escape(kernel)), text)
    if not m:
        return None
    if m.group(1).startswith("__mix__"):
        return _MODES.get((m.group(2), m.group(3)), "MIX_MODE")
    return _MODES[m.group(1)]


def stage_source(path: str, out_dir: str, defines: dict[str, str] | None = None) -> str:
    """The staged copy of ``path`` (launches as ICPU_RUN_KF, lines kept); its path. A kernel's type is
    read from its qualifier in the text the build's ``defines`` select (a sample may declare its kernel
    ``__cube__`` in one scenario and ``__aicore__`` in another)."""
    with open(path, errors="replace") as f:
        text = set_kfc_workspaces(f.read())
    parts, at = [], 0
    blanked = blank_comments_and_strings(text)
    selected = active_text(blanked, defines or {})
    for m in LAUNCH_STATEMENT.finditer(blanked):
        config = _top_level_split(text[m.start("config"):m.end("config")])
        args = text[m.start("args"):m.end("args")]
        kernel = m.group("kernel")
        # the launch ICPU_RUN_KF makes, spelt out: a template-id's commas cannot pass through a macro
        # a kernel whose qualifier says its type runs as that type, whatever the program's other kernels are
        mode = _declared_mode(selected, re.sub(r"<.*", "", kernel, flags=re.S).strip())
        launch_as = f"::mpnpu::cpudebug::LaunchAs mpnpu_as_(::KernelMode::{mode}); " if mode else ""
        # (by value, not &kernel: a launch may name a variable that holds the kernel's pointer)
        call = (f"{{ {launch_as}auto mpnpu_kernel_ = {kernel}; ::mpnpu::cpudebug::run_kf("
                f"{json.dumps(re.sub(r'<.*', '', kernel))}, mpnpu_kernel_, uint32_t({config[0]}), "
                f"{json.dumps(' '.join(args.split()))}, __FILE__, __LINE__{', ' + args if args.strip() else ''}); }}")
        newlines = text[m.start():m.end()].count("\n")
        parts += [text[at:m.start()], call + "\n" * newlines]
        at = m.end()
    body = "".join(parts) + text[at:]
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, re.sub(r"\.asc$", ".cpp", os.path.basename(path)))
    with open(out, "w") as f:
        f.write(f'#line 1 "{os.path.abspath(path)}"\n{body}')
    return out


def build_sample(sample: Sample, out_dir: str, cflags: list[str], libs: list[str], cxx: list[str],
                 timeout_s: float = 900.0) -> SampleBuild:
    """Compile and link ``sample``'s program into ``out_dir``."""
    start = time.monotonic()
    result = SampleBuild(kernel_mode=kernel_mode_of(sample.sources, parse_defines(sample.defines)))
    absent = [s for s in sample.sources if not os.path.isfile(s)]
    if absent:
        result.errors = [f"{os.path.relpath(a, sample.folder)}: a source its CMakeLists.txt names is not there"
                         for a in absent]
        return result
    defines = parse_defines(sample.defines)
    staged = [stage_source(s, os.path.join(out_dir, "src"), defines) if s.endswith(".asc") else s
              for s in sample.sources]
    program = os.path.join(out_dir, sample.program)
    # A sample is built as its NPU program (its <<<>>> launches rewritten, acl on mpnpu's device), not as
    # the vendor's CPU build: the CPU-debug flags' ASCENDC_CPU_DEBUG is undone, since every sample's
    # ASCENDC_CPU_DEBUG branch includes a header of that build (cpu_debug_launch.h) and calls its own.
    cmd = [*cxx, "-std=c++17", "-O1", "-w", "-DMPNPU_ACL_GM", *sample.defines, f"-I{sample.folder}",
           "-include", "tikicpulib.h", *cflags, "-UASCENDC_CPU_DEBUG", *staged, "-o", program, *libs]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env={**os.environ, "LC_ALL": "C"})
    except subprocess.TimeoutExpired:
        result.errors = [f"the build took longer than {timeout_s:g} s"]
        result.seconds = time.monotonic() - start
        return result
    result.seconds = time.monotonic() - start
    if proc.returncode == 0:
        result.ok, result.program = True, program
        return result
    is_user, shown = missing.user_path_rules([INCLUDE_DIR], [sample.folder])
    result.missing = missing.parse(proc.stderr, is_user, shown)
    result.errors = missing.error_lines(proc.stderr, 20) or proc.stderr.strip().splitlines()[-20:]
    return result
