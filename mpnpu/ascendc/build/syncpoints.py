"""The sync points of an Ascend C kernel, read from its source: every call site of a sync call.

A C++ kernel's sync points have no names of their own: each is named by its kernel line,
``dir/file:line`` (as its trace records and reports name it), and ``--drop-sync FILE:LINE`` or
``Device.launch_with(LaunchOptions(drop_syncs=...), ...)`` skips the call made there. The calls that count:

    SyncAll, CrossCoreSetFlag, CrossCoreWaitFlag       (between cores)
    SetFlag, WaitFlag, PipeBarrier, pipe_barrier       (between the pipes of a core)
    AllocTensor, EnQue, DeQue, FreeTensor, FreeAllEvent (the syncs a queue inserts)

A call written inside a ``#define`` takes the line where the macro is used (that is where the
compiler's call site is), so such macros are followed to their uses.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from mpnpu.errors import UsageError

from ..native.bridge import site_name

SYNC_CALLS = ("SyncAll", "CrossCoreSetFlag", "CrossCoreWaitFlag", "SetFlag", "WaitFlag", "PipeBarrier",
              "pipe_barrier", "AllocTensor", "EnQue", "DeQue", "FreeTensor", "FreeAllEvent")
_CALL = re.compile(r"\b(?P<call>" + "|".join(SYNC_CALLS) + r")\b\s*(?P<targs><[^;{}()]*?>)?\s*\(")
_FUNC = re.compile(r"(?:(?P<cls>\w+)\s*::\s*)?(?P<name>~?\w+)\s*\([^;{}]*\)\s*(?:const\s*)?(?:noexcept\s*)?"
                   r"(?:->\s*[\w:<>]+\s*)?$")
_KEYWORDS = {"if", "constexpr", "for", "while", "switch", "return", "catch", "sizeof", "decltype", "static_assert"}


@dataclass(frozen=True)
class SyncPoint:
    """One sync call site: its name (``dir/file:line``), the call, and the function it is in."""

    name: str
    call: str
    function: str
    path: str
    line: int

    @property
    def description(self) -> str:
        return f"{self.call} in {self.function}"


def blank_comments_and_strings(text: str) -> str:
    """The text with comments and string literals replaced by spaces (lines and columns kept)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _functions(text: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of every brace block that is a function body."""
    found = []
    stack: list[tuple[int, str]] = []
    last = 0
    for i, ch in enumerate(text):
        if ch in ";}":
            if ch == "}" and stack:
                start, name = stack.pop()
                if name:
                    found.append((start, i, name))
            last = i + 1
        elif ch == "{":
            head = " ".join(text[last:i].split())
            m = _FUNC.search(head)
            name = m.group("name") if m and m.group("name") not in _KEYWORDS else ""
            stack.append((i, name))
            last = i + 1
    return found


def scan(paths: Iterable[str]) -> dict[str, SyncPoint]:
    """Every sync point in these source files, by name, in file and line order."""
    points: dict[str, SyncPoint] = {}
    for path in paths:
        try:
            with open(path, errors="replace") as f:
                raw = f.read()
        except OSError as e:
            raise UsageError(f"cannot read kernel source {path}: {e}") from None
        text = blank_comments_and_strings(raw)
        funcs = _functions(text)
        macros: dict[str, str] = {}  # sync macro -> the call inside it
        define_spans: list[tuple[int, int]] = []
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?:\([^)]*\))?((?:[^\n]*\\\n)*[^\n]*)", text, re.M):
            define_spans.append((m.start(), m.end()))
            inner = _CALL.search(m.group(2))
            if inner:
                macros[m.group(1)] = inner.group("call")

        def line_of(pos: int, text: str = text) -> int:
            return text.count("\n", 0, pos) + 1

        def function_at(pos: int, funcs: list[tuple[int, int, str]] = funcs) -> str:
            best = ""
            for start, end, name in funcs:
                if start <= pos <= end:
                    best = name  # innermost wins: blocks are appended inner first
                    break
            return best or "?"

        def in_define(pos: int, define_spans: list[tuple[int, int]] = define_spans) -> bool:
            return any(a <= pos < b for a, b in define_spans)

        hits = [(m.start(), m.group("call")) for m in _CALL.finditer(text) if not in_define(m.start())]
        if macros:
            use = re.compile(r"\b(" + "|".join(map(re.escape, macros)) + r")\b\s*(?:\(|;)")
            hits += [(m.start(), f"{m.group(1)} ({macros[m.group(1)]})") for m in use.finditer(text)
                     if not in_define(m.start())]
        for pos, call in sorted(hits):
            line = line_of(pos)
            name = site_name(os.path.abspath(path), line)
            if name not in points:
                points[name] = SyncPoint(name, call, function_at(pos), os.path.abspath(path), line)
    return dict(sorted(points.items(), key=lambda kv: (kv[1].path, kv[1].line)))


_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def local_includes(sources: Iterable[str], include_dirs: Sequence[str] = ()) -> list[str]:
    """Every file the sources reach through ``#include "..."`` that exists beside the including file
    or in ``include_dirs`` (the user's own headers, followed transitively; a header found nowhere,
    such as mpnpu's own, is left out), sources first."""
    seen: list[str] = []
    todo = [os.path.abspath(s) for s in sources]
    while todo:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.append(path)
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        for name in _QUOTED_INCLUDE.findall(text):
            for folder in (os.path.dirname(path), *include_dirs):
                candidate = os.path.abspath(os.path.join(folder, name))
                if os.path.isfile(candidate):
                    todo.append(candidate)
                    break
    return seen


def kernel_sync_points(sources: Iterable[str], include_dirs: Sequence[str] = ()) -> dict[str, SyncPoint]:
    """The sync points of a kernel: those in its sources, in the headers beside them (a kernel's own
    ``.h`` files hold its stage classes), and in the files they include with ``#include "..."`` from
    their folder or ``include_dirs`` (a wrapper source that includes the kernel's)."""
    files = local_includes(sources, include_dirs)
    for src in list(files):
        folder = os.path.dirname(src)
        files += [os.path.join(folder, f) for f in sorted(os.listdir(folder))
                  if f.endswith((".h", ".hpp")) and os.path.join(folder, f) not in files]
    return scan(files)


def resolve(names: Iterable[str], points: Mapping[str, SyncPoint]) -> frozenset[str]:
    """Sync point names as the user wrote them ("add.cpp:45", "op_kernel/add.cpp:45") -> full names.

    An entry may name the file by any path suffix; one that names no sync point is a UsageError
    listing the nearest ones."""
    out = set()
    for raw in names:
        entry = raw.strip()
        if not entry:
            continue
        matches = [n for n in points if n == entry or n.endswith("/" + entry) or _same_site(entry, points[n])]
        if not matches:
            near = ", ".join(f"{n} ({points[n].call})" for n in _nearest(entry, points)) or "none"
            raise UsageError(f"{entry!r} is not a sync point of the kernel (a sync call's FILE:LINE); "
                             f"nearest: {near}{' ...' if len(points) > 6 else ''}")
        out.update(matches)
    return frozenset(out)


def _nearest(entry: str, points: Mapping[str, SyncPoint], n: int = 6) -> list[str]:
    """The sync points closest to what ``entry`` names: the same file first, then by line."""
    file, _, line = entry.rpartition(":")
    base = os.path.basename(file)
    wanted = int(line) if line.isdigit() else 0

    def distance(name: str) -> tuple[int, int]:
        p = points[name]
        return (0 if base and os.path.basename(p.path) == base else 1, abs(p.line - wanted))

    return sorted(points, key=distance)[:n]


def _same_site(entry: str, point: SyncPoint) -> bool:
    file, _, line = entry.rpartition(":")
    return bool(file) and line.isdigit() and int(line) == point.line and (
        os.path.abspath(file) == point.path or point.path.endswith(os.sep + file.lstrip("./")))


def first_after(points: Mapping[str, SyncPoint], path: str, pattern: str, call: str = "SyncAll") -> str:
    """The name of the first ``call`` sync point after the first line of ``path`` matching the regex
    ``pattern`` (a sync point named by where it stands, robust to edits above it)."""
    full = os.path.abspath(path)
    with open(full, errors="replace") as f:
        lines = f.read().splitlines()
    rx = re.compile(pattern)
    start = next((i + 1 for i, ln in enumerate(lines) if rx.search(ln)), None)
    if start is None:
        raise UsageError(f"{path}: no line matches {pattern!r}")
    for p in points.values():
        if p.path == full and p.line > start and p.call.split(" ")[0] == call:
            return p.name
    raise UsageError(f"{path}: no {call} after the line matching {pattern!r}")
