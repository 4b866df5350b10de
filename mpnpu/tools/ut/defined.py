"""Which names the corpus defines itself: a missing name the repositories define (a helper class of
an operator, a constant of a common header) is missing because something before it failed (a
header that did not compile, a host header that is absent), not because mpnpu lacks an Ascend C
name; the histogram keeps the two apart.

A name counts as the corpus's own for a test when a file that test's sources reach through their
includes defines it (a rough reading: macros, classes, structs, enums and their values, namespaces,
aliases, constants, function definitions, variables and parameters); a name asked for in namespace AscendC is never the
corpus's.
"""

from __future__ import annotations

import os
import re
from typing import Iterable

_SOURCES = (".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".inc", ".inl")
_KEYWORDS = frozenset(("if", "for", "while", "switch", "return", "sizeof", "catch", "else", "do", "case", "decltype",
                       "static_assert", "alignas", "alignof", "noexcept", "operator", "template", "typename",
                       "defined", "new", "delete", "throw"))
_DEFS = re.compile(
    r"#\s*define\s+(?P<macro>\w+)"
    r"|\b(?:class|struct|union|namespace)\s+(?:__attribute__\s*\(\(.*?\)\)\s*)?(?:alignas\s*\([^)]*\)\s*)?(?P<type>\w+)"
    r"|\benum\s+(?:class\s+|struct\s+)?(?P<enum>\w+)?[^;{]*\{(?P<values>[^{}]*)\}"
    r"|\busing\s+(?P<alias>\w+)\s*="
    r"|\btypedef\b[^;{}]*?\b(?P<typedef>\w+)\s*(?:\[[^\]]*\]\s*)?;"
    r"|\b(?:constexpr|const)\b[^;=(){}]*?\b(?P<const>\w+)\s*(?:=|\{|\[)"
    r"|\b(?P<func>\w+)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)\s*(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?"
    r"(?:->\s*[\w:<>,\s*&]+)?\{"
    r"|\b(?!(?:return|else|case|throw|new|delete|goto|typedef|using|namespace|sizeof|operator|public|private|"
    r"protected|co_return|co_yield|co_await|define|include|if|elif|ifdef|ifndef|undef|pragma)\b)"
    r"[A-Za-z_][\w:]*(?:<[^;{}()]*?>)?[\s*&]+(?P<var>[A-Za-z_]\w*)\s*(?=[;=\[,)({:])",
    re.S)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ENUM_VALUE = re.compile(r"(?:^|,)\s*(\w+)")


def names_in(text: str) -> set[str]:
    """The names a C/C++ source defines (roughly: see the module's docstring)."""
    text = _COMMENTS.sub(" ", text)
    out: set[str] = set()
    for m in _DEFS.finditer(text):
        for group in ("macro", "type", "alias", "typedef", "const", "func", "enum", "var"):
            name = m.group(group)
            if name and name not in _KEYWORDS:
                out.add(name)
        values = m.group("values")
        if values:
            out.update(v for v in _ENUM_VALUE.findall(re.sub(r"=[^,]*", "", values)) if v)
    return out


class DefinedNames:
    """The names each file defines, read once per file (and again when it changes)."""

    def __init__(self) -> None:
        self._by_file: dict[str, tuple[float, frozenset[str]]] = {}

    def of(self, path: str) -> frozenset[str]:
        try:
            mtime = os.path.getmtime(path)
        except OSError:
            return frozenset()
        got = self._by_file.get(path)
        if got is not None and got[0] == mtime:
            return got[1]
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                names = frozenset(names_in(f.read()))
        except OSError:
            names = frozenset()
        self._by_file[path] = (mtime, names)
        return names

    def union(self, paths: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for p in paths:
            out |= self.of(p)
        return out
