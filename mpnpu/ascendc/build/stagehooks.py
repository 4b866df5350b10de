"""Syncs inserted at a C++ kernel's function boundaries, to try a repair without editing the source.

A Python kernel marks its stages (``with stage("CopyOut")``), and a launch's ``insert_syncs``
(:mod:`mpnpu.runtime.insert`) run at their boundaries. A C++ kernel's stages are its functions: the
trace names a stage by the function that made the calls (``CopyOut``). To insert ``after:CopyOut``,
the kernel is built a second time with ``-finstrument-functions`` (the compiler then calls a hook
on entering and leaving each of the kernel's functions, inlined ones too; mpnpu's own headers and
the system's are left out) and ``-DMPNPU_STAGE_HOOKS`` (which defines the hooks:
include/mpnpu/bridge.h). The functions a stage name means are found in the library's symbol table
(``nm``): every function of that unqualified name, its overloads and template instances included.
Each core is told the offsets of those functions and what to run there (include/mpnpu/abi.h,
MpnpuInsert); the inserted syncs record trace events under the insert's name, as a Python kernel's do.

The plain library, which every other launch uses, has no hooks and pays nothing for them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from typing import Iterable, Sequence

from mpnpu.errors import UnsupportedError, UsageError
from mpnpu.runtime.insert import InsertedSync

from .compiler import INCLUDE_DIR, BuildSpec, build

#: the flags of the instrumented build (the hooks are compiled in by MPNPU_STAGE_HOOKS)
#: (-Bsymbolic: the library's calls to the hooks bind to its own, not to the C library's empty ones
#: of the same name, which come first in the process's global scope)
HOOK_FLAGS = ("-finstrument-functions", f"-finstrument-functions-exclude-file-list={INCLUDE_DIR},/usr/include,"
              "/usr/lib,include/c++", "-DMPNPU_STAGE_HOOKS", "-Wl,-Bsymbolic")


def instrumented(spec: BuildSpec) -> str:
    """The path of ``spec``'s library built with stage hooks (cached like every build)."""
    hooked = BuildSpec(spec.sources, spec.entry, spec.defines, spec.include_dirs, spec.tiling_header,
                       (*spec.flags, *HOOK_FLAGS))
    return build(hooked).path


@lru_cache(maxsize=32)
def functions_by_name(library: str) -> dict[str, tuple[int, ...]]:
    """Unqualified function name -> the offsets of every function of that name in ``library``."""
    nm = shutil.which(os.environ.get("NM", "nm"))
    if nm is None:
        raise UnsupportedError("inserting syncs into a C++ kernel reads its library's symbols with nm "
                               "(binutils), which is not installed")
    try:
        out = subprocess.run([nm, "-C", "--defined-only", library], capture_output=True, text=True,
                             timeout=120, env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError) as e:
        raise UnsupportedError(f"nm {library} failed: {e}") from None
    if out.returncode != 0:
        raise UnsupportedError(f"nm {library} failed: {out.stderr.strip()[:200]}")
    found: dict[str, list[int]] = {}
    for line in out.stdout.splitlines():
        parts = line.split(" ", 2)
        if len(parts) != 3 or parts[1] not in ("t", "T", "w", "W"):
            continue
        name = unqualified(parts[2])
        if name:
            found.setdefault(name, []).append(int(parts[0], 16))
    return {k: tuple(sorted(set(v))) for k, v in found.items()}


def unqualified(symbol: str) -> str:
    """'KernelAdd<half>::CopyOut(int) const' -> 'CopyOut'; '' for what is not a plain function."""
    s = symbol.split(" [clone ", 1)[0].strip()
    for suffix in (" const", " volatile", " &&", " &"):
        if s.endswith(suffix):
            s = s[: -len(suffix)]
    if not s.endswith(")"):
        return s if s.isidentifier() else ""
    s = s[: _opening(s, len(s) - 1, "(", ")")]
    if s.endswith(">"):
        s = s[: _opening(s, len(s) - 1, "<", ">")]
    name = s.rsplit("::", 1)[-1].rsplit(" ", 1)[-1]
    return name if name.isidentifier() else ""


def _opening(s: str, close: int, left: str, right: str) -> int:
    """The index of the bracket that opens the one at ``close``."""
    depth = 0
    for i in range(close, -1, -1):
        if s[i] == right:
            depth += 1
        elif s[i] == left:
            depth -= 1
            if depth == 0:
                return i
    return 0


def stage_functions(library: str, stages: Iterable[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """For each stage name, the offsets of the functions it names; a UsageError for a name that
    names no function of the kernel (a misspelt stage must not run the kernel unrepaired)."""
    table = functions_by_name(library)
    out = []
    for stage in sorted(set(stages)):
        offsets = table.get(stage)
        if not offsets:
            near = sorted(n for n in table if n.lower() == stage.lower() or stage.lower() in n.lower())[:6]
            raise UsageError(f"insert_syncs names stage {stage!r}, but the kernel has no function of that name"
                             + (f"; similar: {', '.join(near)}" if near else ""))
        out.append((stage, offsets))
    return tuple(out)


def stages_of(inserts: Sequence[InsertedSync]) -> set[str]:
    """The stage names parsed insert entries name (where they set, and where they wait)."""
    return {ins.after for ins in inserts} | {ins.before for ins in inserts if ins.before}
