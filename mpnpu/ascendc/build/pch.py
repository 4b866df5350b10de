"""A precompiled header of mpnpu's Ascend C headers, so that each kernel library parses them once.

Every kernel library includes the same headers (``kernel_operator.h`` and the bridge), and parsing
and instantiating them was 1-2 s of each build: a third of a small kernel's compile. With g++ the
build puts them into one precompiled header (``.gch``), made once per compiler, flag set and
version of the headers, kept in the build cache beside the libraries::

    <cache>/pch/<key>/mpnpu_pch.h       #include "<mpnpu's headers>/kernel_operator.h"
                                        #include "<mpnpu's headers>/mpnpu/bridge.h"
    <cache>/pch/<key>/mpnpu_pch.h.gch   (about 90 MB)

and compiles a kernel with ``-include <that mpnpu_pch.h>`` in front of everything else. That moves
mpnpu's headers before the kernel's tiling header and before whatever the kernel's source puts
above its ``#include "kernel_operator.h"``. The two orders compile alike unless that text defines
a macro our headers look at, so the precompiled header is used only when it does not:
:func:`pch_args` reads the tiling header and the source up to that include, and says no at the
first ``#define`` or ``#undef`` of a name that occurs in mpnpu's headers, or at a local
``#include "..."`` of something else (its contents unseen). g++ itself refuses a precompiled header
that a ``-D`` flag would have changed and then parses the headers as usual; a build that fails with
one with an error that names the precompiled header is compiled again without it, so errors read as
they would without (an error in the kernel's own code reads the same either way). ``MPNPU_PCH=0``
turns it off; other compilers (clang, zig) never use it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from functools import lru_cache
from typing import Sequence

from mpnpu import settings

from .cache import building, used

PCH_NAME = "mpnpu_pch.h"
#: the headers the precompiled header holds, relative to mpnpu's include directory
PCH_HEADERS = ("kernel_operator.h", "mpnpu/native/bridge.h")

_DIRECTIVE = re.compile(r"^\s*#\s*(define|undef|include)\b\s*(.*)$", re.M)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def enabled(identity: str) -> bool:
    """Whether this compiler takes mpnpu's precompiled header: g++ (not clang, not zig), and
    ``MPNPU_PCH`` is not ``0``."""
    if not settings.from_env(settings.PCH):
        return False
    return "Free Software Foundation" in identity and "clang" not in identity


@lru_cache(maxsize=2)
def header_facts(include_dir: str, digest: str) -> tuple[frozenset[str], frozenset[str]]:
    """What the rule reads of mpnpu's headers (``digest`` names their version), in one walk: every
    identifier in them (a macro of one of these names, defined before the headers, could change
    them) and the include names they answer to (``kernel_operator.h``, ``lib/matmul_intf.h``, ...)."""
    del digest  # part of the cache key only
    names: set[str] = set()
    provided: set[str] = set()
    for root, _, files in os.walk(include_dir):
        for name in files:
            path = os.path.join(root, name)
            provided.add(os.path.relpath(path, include_dir).replace(os.sep, "/"))
            with open(path, encoding="utf-8", errors="replace") as f:
                names.update(_IDENT.findall(f.read()))
    return frozenset(names), frozenset(provided)


def safe_prefix(text: str, identifiers: frozenset[str], provided: frozenset[str], whole: bool) -> bool:
    """Whether ``text`` (a tiling header if ``whole``, else a kernel source read up to its first
    include of an mpnpu header) leaves mpnpu's headers as they are when they are included first."""
    text = _COMMENT.sub(" ", text)
    for m in _DIRECTIVE.finditer(text):
        kind, rest = m.group(1), m.group(2).strip()
        if kind == "include":
            target = rest[1:].split('"' if rest.startswith('"') else ">", 1)[0]
            if target in provided:
                if not whole:
                    return True  # the source's own include of our headers: what follows is after them either way
                continue
            if rest.startswith('"'):
                return False  # a local header we have not read
            continue
        name = _IDENT.match(rest)
        if name and name.group(0) in identifiers:
            return False
    return True


def applies(sources: Sequence[str], tiling_header: str | None, include_dir: str, digest: str) -> bool:
    """Whether a kernel of these files compiles alike with mpnpu's headers included first."""
    identifiers, provided = header_facts(include_dir, digest)
    try:
        if tiling_header:
            with open(tiling_header, encoding="utf-8", errors="replace") as f:
                if not safe_prefix(f.read(), identifiers, provided, whole=True):
                    return False
        with open(sources[0], encoding="utf-8", errors="replace") as f:
            return safe_prefix(f.read(), identifiers, provided, whole=False)
    except OSError:
        return False


def pch_args(cxx: Sequence[str], identity: str, flags: Sequence[str], include_dir: str, cache: str,
             digest: str) -> list[str]:
    """``["-include", <mpnpu_pch.h>]`` for a compile with ``cxx`` and ``flags``, building the
    precompiled header first if this cache has none for them; ``[]`` when it cannot be built
    (the failure is remembered, and the kernel compiles without it)."""
    key = hashlib.sha256(json.dumps([list(cxx), identity, list(flags), digest]).encode()).hexdigest()[:20]
    folder = os.path.join(cache, "pch", key)
    header, gch, failed = (os.path.join(folder, PCH_NAME), os.path.join(folder, PCH_NAME + ".gch"),
                           os.path.join(folder, "failed"))
    if os.path.isfile(gch) and os.path.isfile(header):
        used(folder)  # the cache prunes the least recently used first (mpnpu.ascendc.build.cache)
        return ["-include", header]
    if os.path.exists(failed):
        return []
    os.makedirs(folder, exist_ok=True)
    with building(folder):  # (one build of it at a time: another process's may have made it meanwhile)
        if os.path.isfile(gch) and os.path.isfile(header):
            return ["-include", header]
        if os.path.exists(failed):
            return []
        return _build(cxx, flags, include_dir, header, gch, failed, folder)


def _build(cxx: Sequence[str], flags: Sequence[str], include_dir: str, header: str, gch: str, failed: str,
           folder: str) -> list[str]:
    text = "".join(f'#include "{os.path.join(include_dir, h)}"\n' for h in PCH_HEADERS)
    with tempfile.TemporaryDirectory(dir=folder, prefix="build-") as tmp:
        tmp_header = os.path.join(tmp, PCH_NAME)
        with open(tmp_header, "w") as f:
            f.write(text)
        cmd = [*cxx, *flags, f"-I{include_dir}", "-x", "c++-header", tmp_header, "-o", tmp_header + ".gch"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "LC_ALL": "C"})
            ok = proc.returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if not ok:
            with open(failed, "w") as f:
                f.write(" ".join(cmd) + "\n")
            return []
        # The header first, then its .gch: a reader that sees the .gch sees its header.
        if not os.path.isfile(header):
            os.replace(tmp_header, header)
        os.replace(tmp_header + ".gch", gch)
    return ["-include", header]


def mentioned(compiler_output: str) -> bool:
    """Whether a failed compile's messages name the precompiled header (an error its order may
    have caused, such as a macro the kernel redefines)."""
    return PCH_NAME in compiler_output
