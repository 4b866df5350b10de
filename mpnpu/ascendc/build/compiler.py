"""Compiling an Ascend C kernel into a library that mpnpu's core processes load.

::

    sources (+ tiling header, -D defines)
      └─ entry.cpp (generated): #include <the entry's source> ; #include "mpnpu/native/bridge.h" ;
                                 MPNPU_EXPORT_ENTRY(<entry>)
           └─ $CXX -std=c++17 -O<MPNPU_KERNEL_OPT, default 2> -shared -fPIC -fvisibility=hidden -I<mpnpu's headers> ...
                   [-include <cache>/pch/<key>/mpnpu_pch.h: g++, mpnpu's headers precompiled (mpnpu.ascendc.build.pch)]
                └─ <cache>/<key>/lib<entry>.so   (+ deps.json: every file the compiler read, hashed)

The library is cached by a hash of the generated entry file, the sources, the flags, the
compiler's identity and mpnpu's headers; a cached build is reused while every file the compiler
read for it (its -MD dependencies) still has the same contents. Builds are atomic (a library
appears under its final name only once complete), so parallel runs share a cache safely.

A compile error is one :class:`CompileError` line with the compiler's first error and its
file:line; a missing compiler is one line saying how to get one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Sequence

from mpnpu import settings
from mpnpu.errors import UsageError

# (kept importable from here, where the C++ front end's modules and its users look for them)
from mpnpu.runtime.toolchain import CompileError as CompileError
from mpnpu.runtime.toolchain import NoCompilerError as NoCompilerError
from mpnpu.runtime.toolchain import cache_dir as cache_dir
from mpnpu.runtime.toolchain import find_compiler as find_compiler

from . import cache, pch

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")
#: flags every kernel library is built with (ours; a kernel's own come after them)
BASE_FLAGS = ("-std=c++17", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing", "-pthread")
#: MPNPU_KERNEL_UBSAN=1: undefined behaviour in a kernel library ends its core at the first report (the
#: address sanitizer is not offered: its runtime must be loaded first, and a core is a Python process)
UBSAN_FLAGS = ("-fsanitize=undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")


def base_flags() -> tuple[str, ...]:
    """The flags of every kernel build: :data:`BASE_FLAGS` and the optimisation level of the
    KERNEL_OPT setting (``MPNPU_KERNEL_OPT``, default -O2), with a line table (-g) at levels 0 and
    g, the ones for stepping through a kernel (a fault then names its line too), and
    :data:`UBSAN_FLAGS` when ``MPNPU_KERNEL_UBSAN`` is on."""
    level = settings.from_env(settings.KERNEL_OPT)
    # the sanitizer's flags are part of every build's flags, so its builds and headers are cached apart
    ubsan = UBSAN_FLAGS if settings.from_env(settings.KERNEL_UBSAN) else ()
    return (*BASE_FLAGS, f"-O{level}", *(("-g",) if level in ("0", "g") else ()), *ubsan)
@dataclass(frozen=True)
class BuildSpec:
    """What to build: ``sources`` (the first one defines ``entry``), and how."""

    sources: tuple[str, ...]
    entry: str
    defines: Mapping[str, str] = field(default_factory=dict)
    include_dirs: tuple[str, ...] = ()
    tiling_header: str | None = None  # included before the sources (-include)
    flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.sources:
            raise UsageError("a C++ kernel needs at least one source file")
        for s in (*self.sources, *([self.tiling_header] if self.tiling_header else [])):
            if not os.path.isfile(s):
                raise UsageError(f"no such kernel source: {s}")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_:]*(<[^;{}]*>)?", self.entry):
            raise UsageError(f"kernel entry {self.entry!r} is not a C++ function name (e.g. add_custom or "
                             "add_example<0>)")


@dataclass(frozen=True)
class Built:
    """A compiled kernel library."""

    path: str
    spec: BuildSpec
    cached: bool  # found in the cache, not compiled now


@lru_cache(maxsize=8)
def _compiler_identity(cmd: tuple[str, ...]) -> str:
    try:
        out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60)
        return out.stdout.strip() or out.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        raise NoCompilerError(f"the C++ compiler {' '.join(cmd)} does not run: {e}") from None


@lru_cache(maxsize=1)
def headers_digest() -> str:
    """A digest of mpnpu's own headers (a change to them rebuilds every kernel)."""
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(INCLUDE_DIR)):
        for name in sorted(files):
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, INCLUDE_DIR).encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def entry_source(spec: BuildSpec) -> str:
    """The generated entry file: the kernel's source, then the exported bridge for its entry."""
    main = os.path.abspath(spec.sources[0])
    return (
        "// generated by mpnpu.ascendc.build.compiler: the kernel library's entry\n"
        f'#include "{main}"\n'
        '#include "mpnpu/native/bridge.h"\n'
        f"MPNPU_EXPORT_ENTRY({spec.entry})\n"
    )


def _command(cxx: Sequence[str], spec: BuildSpec, entry_path: str, out: str, deps: str,
             pch: Sequence[str] = ()) -> list[str]:
    cmd = [*cxx, *base_flags(), f"-I{INCLUDE_DIR}"]
    for d in spec.include_dirs:
        cmd.append(f"-I{os.path.abspath(d)}")
    # The kernel's own folders, as its build system would have them.
    for d in dict.fromkeys(os.path.dirname(os.path.abspath(s)) for s in spec.sources):
        cmd.append(f"-I{d}")
    for k, v in sorted(spec.defines.items()):
        cmd.append(f"-D{k}={v}" if v != "" else f"-D{k}")
    cmd += list(pch)  # first of the forced includes (mpnpu.ascendc.build.pch)
    if spec.tiling_header:
        cmd += ["-include", os.path.abspath(spec.tiling_header)]
    cmd += list(spec.flags)
    cmd += ["-MD", "-MF", deps, entry_path, *[os.path.abspath(s) for s in spec.sources[1:]], "-o", out]
    return cmd


def _key(cxx: Sequence[str], spec: BuildSpec) -> str:
    h = hashlib.sha256()
    h.update(entry_source(spec).encode())
    h.update(json.dumps([list(base_flags()), list(spec.flags), sorted(spec.defines.items()),
                         [os.path.abspath(d) for d in spec.include_dirs],
                         os.path.abspath(spec.tiling_header) if spec.tiling_header else None,
                         [os.path.abspath(s) for s in spec.sources]]).encode())
    h.update(_compiler_identity(tuple(cxx)).encode())
    h.update(headers_digest().encode())
    for s in spec.sources:
        with open(s, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:24]


def _file_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _deps_from_make(text: str) -> list[str]:
    """The prerequisites of a -MD dependency file."""
    body = text.replace("\\\n", " ")
    _, _, prereqs = body.partition(":")
    out = []
    for token in re.split(r"(?<!\\)\s+", prereqs.strip()):
        if token:
            out.append(token.replace("\\ ", " "))
    return out


def _still_valid(folder: str) -> bool:
    try:
        with open(os.path.join(folder, "deps.json")) as f:
            deps = json.load(f)
    except (OSError, ValueError):
        return False
    return all(_file_digest(p) == d for p, d in deps.items())


def _cache_place(compiler: Sequence[str], spec: BuildSpec) -> tuple[str, str, bool]:
    """(the cache folder of ``spec``'s library, the library's path, whether it is there and still valid)."""
    folder = os.path.join(cache_dir(), _key(compiler, spec))
    lib = os.path.join(folder, f"lib{re.sub(r'[^A-Za-z0-9_]', '_', spec.entry)}.so")
    return folder, lib, os.path.isfile(lib) and _still_valid(folder)


def is_built(spec: BuildSpec, *, cxx: Sequence[str] | None = None) -> bool:
    """Whether :func:`build` would take ``spec``'s library from the cache (no compile)."""
    return _cache_place(list(cxx) if cxx else find_compiler(), spec)[2]


def build(spec: BuildSpec, *, cxx: Sequence[str] | None = None, force: bool = False) -> Built:
    """The library for ``spec``: from the cache when still valid, else compiled now."""
    compiler = list(cxx) if cxx else find_compiler()
    folder, lib, valid = _cache_place(compiler, spec)
    if not force and valid:
        cache.used(folder)
        return Built(lib, spec, cached=True)
    os.makedirs(folder, exist_ok=True)
    with cache.building(folder):
        if not force and _cache_place(compiler, spec)[2]:  # (another process built it meanwhile; the lock
            return Built(lib, spec, cached=True)           # counted the entry as used)
        _compile_into(folder, lib, spec, compiler)
    cache.prune(cache_dir(), keep=[folder])  # bounded: the least recently used entries go first
    return Built(lib, spec, cached=False)


def _compile_into(folder: str, lib: str, spec: BuildSpec, compiler: Sequence[str]) -> None:
    with tempfile.TemporaryDirectory(dir=folder, prefix="build-") as tmp:
        entry_path = os.path.join(tmp, "mpnpu_entry.cpp")
        with open(entry_path, "w") as f:
            f.write(entry_source(spec))
        out, deps = os.path.join(tmp, os.path.basename(lib)), os.path.join(tmp, "deps.d")
        pch_include = _pch_args(compiler, spec)
        cmd = _command(compiler, spec, entry_path, out, deps, pch_include)
        proc = _compile(cmd, spec, compiler)
        if proc.returncode != 0 and pch_include and pch.mentioned(proc.stderr):
            # An error the precompiled header's order may have caused: as it reads without it.
            cmd = _command(compiler, spec, entry_path, out, deps)
            proc = _compile(cmd, spec, compiler)
        if proc.returncode != 0:
            raise CompileError(first_error(proc.stderr, spec), stderr=proc.stderr, command=cmd)
        with open(deps) as f:
            digests = {p: _file_digest(p) for p in _deps_from_make(f.read()) if p != entry_path}
        with open(os.path.join(tmp, "deps.json"), "w") as f:
            json.dump(digests, f)
        os.replace(out, lib)
        os.replace(os.path.join(tmp, "deps.json"), os.path.join(folder, "deps.json"))


def _pch_args(compiler: Sequence[str], spec: BuildSpec) -> list[str]:
    """The precompiled header's ``-include`` for this build, or none (see :mod:`mpnpu.ascendc.build.pch`)."""
    identity = _compiler_identity(tuple(compiler))
    if not pch.enabled(identity) or not pch.applies(spec.sources, spec.tiling_header, INCLUDE_DIR, headers_digest()):
        return []
    return pch.pch_args(compiler, identity, [*base_flags(), *spec.flags], INCLUDE_DIR, cache_dir(), headers_digest())


def _compile(cmd: Sequence[str], spec: BuildSpec, compiler: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        # (LC_ALL=C: plain ASCII quotes in the compiler's messages, whatever the user's locale)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "LC_ALL": "C"})
    except subprocess.TimeoutExpired:
        raise CompileError(f"compiling {spec.sources[0]} took longer than 600 s") from None
    except OSError as e:
        raise NoCompilerError(f"the C++ compiler {compiler[0]} does not run: {e}") from None


_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal )?error:\s*(?P<msg>.*)$", re.M)


def first_error(stderr: str, spec: BuildSpec) -> str:
    """'add.cpp:12:5: error: ...' from the compiler's output, pointing into mpnpu's headers only
    when the error is there (an unsupported call or form)."""
    m = _DIAG.search(stderr)
    if m is None:
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        tail = lines[-1] if lines else "(no output)"
        return f"{os.path.basename(spec.sources[0])}: the C++ compiler failed: {tail}"
    path, line, col, msg = m.group("file"), m.group("line"), m.group("col"), m.group("msg").strip()
    if path.endswith("mpnpu_entry.cpp"):
        # The file mpnpu writes to export the entry (a temporary the user never sees): the entry's
        # name does not compile there, e.g. a template argument taken from a <<<>>> line's variable.
        return (f"{os.path.basename(spec.sources[0])}: the kernel entry {spec.entry} cannot be exported: {msg}; "
                "name an existing kernel function, a template one with constant arguments "
                "(mpnpu run SOURCE:'add_custom<2048>')")
    where = f"{_shown_path(path)}:{line}" + (f":{col}" if col else "")
    text = f"{where}: error: {msg}"
    if os.path.abspath(path).startswith(INCLUDE_DIR + os.sep):
        user = _first_user_frame(stderr)
        text += (f" (inside mpnpu's Ascend C headers{', from ' + user if user else ''}: the call or form may not be "
                 "supported; see docs/ascendc.md)")
    return text


def _shown_path(path: str) -> str:
    rel = os.path.relpath(os.path.abspath(path))
    return rel if not rel.startswith("..") else path


def _first_user_frame(stderr: str) -> str:
    """The first 'required from here' (or 'In file included from') line outside mpnpu's headers."""
    for m in re.finditer(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)?\s+(?:required from|note:)", stderr, re.M):
        path = m.group("file").strip()
        if not os.path.abspath(path).startswith(INCLUDE_DIR + os.sep) and not path.endswith("mpnpu_entry.cpp"):
            return f"{_shown_path(path)}:{m.group('line')}"
    return ""
