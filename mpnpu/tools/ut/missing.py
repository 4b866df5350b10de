"""What a build needed that mpnpu lacks: every missing name and header of a compile, at the user's
file:line, read from the compiler's diagnostics (GCC's and Clang's wording) and the linker's.

A diagnostic is read as the kind of thing that is missing and its name:

    header     fatal error: lib/foo.h: No such file or directory      ('lib/foo.h' file not found)
    name       'Foo' was not declared in this scope / has not been declared / does not name a type /
               'Foo' is not a member of 'AscendC' / there are no arguments to 'Foo' that depend ...
               (use of undeclared identifier 'Foo', unknown type name 'Foo', no member named 'Foo' in
               namespace 'AscendC')
    member     'class AscendC::LocalTensor<float>' has no member named 'Foo'   -> LocalTensor::Foo
    overload   no matching function for call to 'Foo(...)': the name exists, this form of it does not
    refused    static assertion failed: ... (a form mpnpu's headers refuse, with their reason)
    macro      #if A == B: operator '==' has no right operand: B is a macro defined empty here (the
               vendor's headers give it a value), read from the source line
    link       undefined reference to `AscendC::Foo(...)': declared, never defined

An error inside mpnpu's own headers (or the system's) is placed at the innermost frame of the user's
code that led to it ("required from here", "In file included from"), so every name comes with the
line of the test or kernel that asked for it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable

KINDS = ("header", "name", "member", "overload", "refused", "macro", "link")

_LOC = r"(?P<file>[^:\n]+?):(?P<line>\d+)(?::(?P<col>\d+))?"
_ERROR = re.compile(rf"^{_LOC}: (?:fatal )?error: (?P<msg>.*)$")
#: an error the compiler reports at no source line: "cc1plus: fatal error: x.cpp: No such file or
#: directory" (not the linker's wrappers: "collect2: error: ld returned 1" says less than its output)
_TOOL_ERROR = re.compile(r"^(?:cc1plus|cc1|[gc]\+\+|gcc|clang\+\+|clang|zig)(?:-[\w.]+)?: (?:fatal )?error: ")
_CONTEXT = re.compile(rf"^{_LOC}:\s+(?:required from|required by substitution|in (?:instantiation|expansion)|"
                      r"instantiated from)")
_SCOPE = re.compile(r"^(?P<file>[^:\n]+?): (?:In (?:instantiation of|function|member function|static member function|"
                    r"constructor|destructor|lambda function|substitution of)|At global scope)")
_INCLUDED = re.compile(r"^(?:In file included from|\s+from) (?P<file>[^:\n]+?):(?P<line>\d+)[:,]?")
_UNDEFINED = re.compile(r"undefined reference to [`'](?P<sym>[^'`]+)'")
_LINK_WHERE = re.compile(r"^(?:/[^:]*ld[^:]*: )?(?P<file>[^:\n]+?):(?P<line>\d+): undefined reference")

_Q = r"[‘'`](?P<{0}>[^’'`]+)[’'`]"
_NAME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("name", re.compile(_Q.format("n") + r" was not declared in this scope")),
    ("name", re.compile(_Q.format("n") + r" has not been declared")),
    ("name", re.compile(_Q.format("n") + r" is not a member of " + _Q.format("ns"))),
    ("name", re.compile(_Q.format("n") + r" in namespace " + _Q.format("ns") + r" does not name a (?:template )?type")),
    ("member", re.compile(_Q.format("n") + r" in " + _Q.format("cls") + r" does not name a (?:template )?type")),
    ("name", re.compile(_Q.format("n") + r" does not name a (?:template )?type")),
    ("name", re.compile(r"there are no arguments to " + _Q.format("n") + r" that depend on a template parameter")),
    ("name", re.compile(_Q.format("n") + r" is not a class, namespace, or enumeration")),
    ("name", re.compile(_Q.format("n") + r" is not a template")),
    ("name", re.compile(r"use of undeclared identifier " + _Q.format("n"))),
    ("name", re.compile(r"unknown type name " + _Q.format("n"))),
    ("name", re.compile(r"no (?:type|template|member) named " + _Q.format("n") + r" in namespace " + _Q.format("ns"))),
    ("member", re.compile(_Q.format("cls") + r" has no member named " + _Q.format("n"))),
    ("member", re.compile(r"no (?:type|template )?(?:member )?named " + _Q.format("n") + r" in " + _Q.format("cls"))),
    ("overload", re.compile(r"no matching (?:member )?function for call to " + _Q.format("n"))),
    ("overload", re.compile(r"no matching constructor for initialization of " + _Q.format("n"))),
    ("overload", re.compile(r"call of overloaded " + _Q.format("n") + r" is ambiguous")),
    ("overload", re.compile(r"no matches converting function " + _Q.format("n") + r" to type")),
    ("overload", re.compile(r"address of overloaded function " + _Q.format("n"))),
)
_HEADER = (re.compile(r"^(?P<n>[^:]+): No such file or directory"),
           re.compile(r"^" + _Q.format("n") + r" file not found"))
_NO_OPERAND = re.compile(r"operator '(?P<op>[^']+)' has no (?P<side>right|left) operand")
_STATIC = re.compile(r"static (?:assertion|assert) failed(?: due to requirement [^:]*)?:?\s*(?P<msg>.*)$")


@dataclass(frozen=True)
class Missing:
    """One thing a build lacked: its kind (:data:`KINDS`), its name, and where the user's code asked for it."""

    kind: str
    name: str  # Foo, AscendC::Foo, LocalTensor::Foo, lib/foo.h, ...
    where: str  # path:line in the user's files (the repository's), or "" when the compiler gave none
    message: str  # the diagnostic, one line
    corpus: bool = False  # a file the test reaches defines it: missing because something before it failed
    behind_header: bool = False  # seen only once empty stand-ins replaced the missing headers

    @property
    def key(self) -> str:
        """What the histogram counts: the name without its namespace (kernels name API calls either way)."""
        if self.kind in ("header", "refused", "member") or self.name.startswith("std::"):
            return self.name
        return self.name.rsplit("::", 1)[-1]

    @property
    def namespace(self) -> str:
        return self.name.rsplit("::", 1)[0] if "::" in self.name and self.kind != "member" else ""

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "name": self.name, "where": self.where, "message": self.message,
                "corpus": self.corpus, "behind_header": self.behind_header}


def _strip_templates(text: str) -> str:
    """``AscendC::LocalTensor<float>`` -> ``AscendC::LocalTensor`` (nested angle brackets too)."""
    out, depth = [], 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _callee(text: str) -> str:
    """The function named in ``Foo<T>(int, float)`` or ``AscendC::Foo(...)``: ``AscendC::Foo``."""
    head = text.split("(", 1)[0]
    head = _strip_templates(head).strip()
    head = re.sub(r"^(?:const\s+)?(?:class|struct|union)\s+", "", head)
    return head.split(" ")[-1] if head else text


def classify(message: str) -> tuple[str, str] | None:
    """(kind, name) of an error message that says something is missing, else None."""
    for pattern in _HEADER:
        m = pattern.search(message)
        if m:
            return "header", m.group("n").strip()
    sm = _STATIC.search(message)
    if sm:
        text = sm.group("msg").strip().strip('"')
        head = text.split(":", 1)[0].strip()
        return "refused", (head if re.fullmatch(r"[A-Za-z_][\w:<>]*", head) and ":" in text else text[:120])
    for kind, pattern in _NAME_PATTERNS:
        m = pattern.search(message)
        if not m:
            continue
        name = m.group("n")
        groups = m.groupdict()
        if kind == "overload":
            return kind, _callee(name)
        if kind == "member":
            cls = _strip_templates(groups.get("cls") or "")
            cls = re.sub(r"^(?:const\s+)?(?:class|struct|union|enum)\s+", "", cls).strip()
            owner = cls.rsplit("::", 1)[-1] if cls else "?"
            return kind, f"{owner}::{_strip_templates(name)}"
        ns = groups.get("ns")
        name = _strip_templates(name)
        if ns and "::" not in name:
            ns = _strip_templates(ns).strip()
            return kind, f"{ns}::{name}" if ns and not ns.startswith(("class ", "struct ")) else name
        return kind, name
    return None


def _empty_macro(path: str, lineno: int, op: str, side: str) -> str | None:
    """The operand missing beside ``op`` on an #if line: the identifier there (a macro defined empty)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    if not 0 < lineno <= len(lines):
        return None
    text = lines[lineno - 1]
    parts = text.split(op)
    for k in range(1, len(parts)):
        left, right = parts[k - 1], parts[k]
        ident = re.match(r"\s*(?:\(\s*)*([A-Za-z_]\w*)", right) if side == "right" else \
            re.search(r"([A-Za-z_]\w*)(?:\s*\))*\s*$", left)
        if ident and ident.group(1) != "defined":
            return ident.group(1)
    return None


def parse(stderr: str, is_user: Callable[[str], bool], shown: Callable[[str], str]) -> list[Missing]:
    """Every missing thing in a compiler's (or linker's) output, each once per (kind, name, place), in order.

    ``is_user(path)``: whether a path is the user's code (not mpnpu's headers or the system's);
    ``shown(path)``: how a path is reported (the repository's path for a staged copy).
    """
    found: list[Missing] = []
    seen: set[tuple[str, str, str]] = set()
    context: list[tuple[str, str]] = []  # (file, line) frames of the diagnostic being read, innermost last
    after_error = False  # an error was read: the next context line starts another diagnostic's frames

    def frame(file: str, line: str) -> None:
        nonlocal context, after_error
        if after_error:
            context, after_error = [], False
        if line:
            context.append((file, line))

    for raw in stderr.splitlines():
        line = raw.rstrip()
        inc = _INCLUDED.match(line)
        if inc:
            frame(inc.group("file"), inc.group("line"))
            continue
        ctx = _CONTEXT.match(line)
        if ctx:
            frame(ctx.group("file"), ctx.group("line"))
            continue
        if _SCOPE.match(line):
            frame("", "")
            continue
        und = _UNDEFINED.search(line)
        if und:
            sym = und.group("sym")
            name = _callee(sym)
            lw = _LINK_WHERE.match(line)
            where = f"{shown(lw.group('file'))}:{lw.group('line')}" if lw and is_user(lw.group("file")) else ""
            _add(found, seen, Missing("link", name, where, f"undefined reference to {sym}"))
            continue
        m = _ERROR.match(line)
        if not m:
            continue
        got = classify(m.group("msg"))
        file, lineno = m.group("file"), m.group("line")
        empty = _NO_OPERAND.search(m.group("msg"))
        if got is None and empty:
            macro = _empty_macro(file, int(lineno), empty.group("op"), empty.group("side"))
            if macro:
                got = ("macro", macro)
        if got is not None:
            if not is_user(file):
                user = next(((f, n) for f, n in reversed(context) if is_user(f)), None)
                where = f"{shown(user[0])}:{user[1]}" if user else f"{shown(file)}:{lineno}"
            else:
                where = f"{shown(file)}:{lineno}"
            kind, name = got
            _add(found, seen, Missing(kind, name, where, m.group("msg").strip()[:300]))
        after_error = True
    return found


def _add(found: list[Missing], seen: set[tuple[str, str, str]], item: Missing) -> None:
    key = (item.kind, item.name, item.where)
    if key not in seen:
        seen.add(key)
        found.append(item)


def error_lines(stderr: str, limit: int = 20) -> list[str]:
    """The first ``limit`` error lines of a compiler's output (what a build failure shows when no
    missing name explains it)."""
    out = [ln.strip() for ln in stderr.splitlines() if _ERROR.match(ln.strip()) or "undefined reference" in ln]
    if not out:  # an error of the compiler itself, at no line ("cc1plus: fatal error: ...")
        out = [ln.strip() for ln in stderr.splitlines() if _TOOL_ERROR.match(ln.strip())]
    return out[:limit]


def count_errors(stderr: str) -> int:
    """The compiler's error lines: those at a source line, else the tool's own (at no line)."""
    lines = [ln.strip() for ln in stderr.splitlines()]
    return sum(1 for ln in lines if _ERROR.match(ln)) or sum(1 for ln in lines if _TOOL_ERROR.match(ln))


@dataclass(frozen=True)
class Row:
    """One line of the missing-name histogram."""

    name: str
    tests: int  # tests that need it (seen directly, or behind a missing header)
    direct: int  # of them, tests whose compile reached it as it is (no stand-in headers)
    sole: int  # tests for which it is the only thing missing (behind missing headers too): it may be all they need
    example: str  # where one of them asks for it

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "tests": self.tests, "direct": self.direct, "sole": self.sole,
                "example": self.example}


def label(item: Missing) -> str:
    """How an item is counted in the histogram: its key, with the kinds that are not plain names said."""
    if item.kind == "overload":
        return f"{item.key} (form)"
    if item.kind == "link":
        return f"{item.key} (link)"
    return item.key


def histogram(per_test: Iterable[Iterable[Missing]], kinds: Iterable[str] = KINDS) -> list[Row]:
    """A :class:`Row` for each missing thing of ``kinds``, most needed first: a test counts once per
    name however often it uses it. Names the corpus defines itself (:attr:`Missing.corpus`) are left
    out, here and in what makes a name a test's only one."""
    wanted = set(kinds)
    tests: dict[str, int] = {}
    direct: dict[str, int] = {}
    sole: dict[str, int] = {}
    example: dict[str, str] = {}
    for items in per_test:
        items = [it for it in items if not it.corpus]
        blocking = {label(it) for it in items}  # (behind a missing header too: it is needed all the same)
        names: dict[str, bool] = {}
        for it in items:
            if it.kind not in wanted:
                continue
            key = label(it)
            names[key] = names.get(key, False) or not it.behind_header
            if not it.behind_header or key not in example:
                example.setdefault(key, it.where or it.message)
        for key, seen_directly in names.items():
            tests[key] = tests.get(key, 0) + 1
            direct[key] = direct.get(key, 0) + int(seen_directly)
            sole[key] = sole.get(key, 0) + int(blocking == {key})
    rows = [Row(k, tests[k], direct[k], sole[k], example[k]) for k in tests]
    return sorted(rows, key=lambda r: (-r.tests, -r.direct, r.name))


def user_path_rules(mpnpu_dirs: Iterable[str], corpus_roots: Iterable[str]
                    ) -> tuple[Callable[[str], bool], Callable[[str], str]]:
    """(is_user, shown) for :func:`parse`: a path is the user's when it is not under one of
    ``mpnpu_dirs`` nor a system folder; it is shown relative to the corpus root it really lies in
    (a staged copy resolves to the repository's own file)."""
    mine = [os.path.realpath(d) + os.sep for d in mpnpu_dirs]
    roots = [os.path.realpath(r) for r in corpus_roots]

    def is_user(path: str) -> bool:
        real = os.path.realpath(path)
        if any(real.startswith(d) for d in mine):
            return False
        return not real.startswith(("/usr/", "/lib/", "/opt/"))

    def shown(path: str) -> str:
        real = os.path.realpath(path)
        for r in roots:
            if real.startswith(r + os.sep):
                return f"{os.path.basename(r)}/{os.path.relpath(real, r)}"
        return path

    return is_user, shown


def mark_corpus_names(items: list[Missing], defined: set[str]) -> list[Missing]:
    """``items`` with :attr:`Missing.corpus` set on the names that ``defined`` (what the files the test
    reaches define) holds: never a header, and never a name asked for in namespace AscendC or std."""
    out = []
    for it in items:
        bare = it.name.rsplit("::", 1)[-1]
        ascendc = it.name.startswith(("AscendC::", "std::")) or it.kind == "refused"
        own = it.kind in ("name", "member", "overload", "link") and not ascendc and bare in defined
        out.append(replace(it, corpus=own) if own != it.corpus else it)
    return out
