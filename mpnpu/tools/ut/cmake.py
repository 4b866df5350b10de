"""Reading the few CMake commands an operator repository's unit-test folders use, without CMake.

A ``CMakeLists.txt`` is read as its list of command invocations (``name(arg arg "quoted arg")``),
comments and bracket comments left out, quoted arguments kept whole (a backslash-newline inside one
continues it, as CMake reads it). Arguments are expanded against the variables the file ``set``s
and a few the build defines (``${CMAKE_CURRENT_SOURCE_DIR}``...); an unquoted argument is split on
``;`` as CMake splits lists. Nothing is evaluated: ``if``/``else`` blocks are read as flat text, and
which ``AddOpTestCase`` applies is decided by the chips it names (:mod:`mpnpu.tools.ut.discover`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


@dataclass(frozen=True)
class Arg:
    """One argument as written: its text (quotes removed) and whether it was quoted."""

    text: str
    quoted: bool


@dataclass(frozen=True)
class Call:
    """One command invocation: its name (lower case, as CMake compares them), arguments and line."""

    name: str
    args: tuple[Arg, ...]
    line: int


@dataclass
class Scope:
    """The variables a file's arguments are expanded against (``set`` calls add to it, in order)."""

    variables: dict[str, str] = field(default_factory=dict)

    def expand(self, text: str) -> str:
        """``text`` with every ``${NAME}`` replaced (an unknown variable expands to nothing, as in CMake)."""
        for _ in range(8):  # nested references, a few levels
            new = _VAR.sub(lambda m: self.variables.get(m.group(1), ""), text)
            if new == text:
                break
            text = new
        return text

    def values(self, args: tuple[Arg, ...]) -> list[str]:
        """The arguments as CMake passes them: expanded; an unquoted one split into its list items."""
        out: list[str] = []
        for a in args:
            value = self.expand(a.text)
            if a.quoted:
                out.append(value)
            else:
                out.extend(v for v in value.split(";") if v)
        return out


def parse(text: str) -> list[Call]:
    """The command invocations of a CMake file, in order."""
    calls: list[Call] = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif c == "#":
            i, line = _skip_comment(text, i, line)
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            name = text[i:j]
            k = j
            while k < n and text[k] in " \t":
                k += 1
            if k < n and text[k] == "(":
                start_line = line
                args, i, line = _arguments(text, k + 1, line)
                calls.append(Call(name.lower(), tuple(args), start_line))
            else:
                i = j
        else:
            i += 1
    return calls


def _skip_comment(text: str, i: int, line: int) -> tuple[int, int]:
    """Past a ``#`` comment (a ``#[[ ... ]]`` bracket comment may span lines)."""
    m = re.match(r"#\[(=*)\[", text[i:])
    if m:
        end = text.find(f"]{m.group(1)}]", i + m.end())
        end = len(text) if end < 0 else end + len(m.group(1)) + 2
        return end, line + text.count("\n", i, end)
    end = text.find("\n", i)
    return (len(text) if end < 0 else end), line


def _arguments(text: str, i: int, line: int) -> tuple[list[Arg], int, int]:
    """The arguments from just after ``(`` to the matching ``)``: (arguments, index after it, line)."""
    args: list[Arg] = []
    depth, cur, n = 0, "", len(text)

    def flush() -> None:
        nonlocal cur
        if cur:
            args.append(Arg(cur, False))
            cur = ""

    while i < n:
        c = text[i]
        if c == '"':
            flush()
            j, value = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    nxt = text[j + 1]
                    if nxt == "\n":  # a continued line inside the quotes
                        line += 1
                    elif nxt in '"\\$;':
                        value.append(nxt)
                    else:
                        value.append({"n": "\n", "t": "\t"}.get(nxt, "\\" + nxt))
                    j += 2
                    continue
                if text[j] == "\n":
                    line += 1
                value.append(text[j])
                j += 1
            args.append(Arg("".join(value), True))
            i = j + 1
        elif c == "#":
            flush()
            i, line = _skip_comment(text, i, line)
        elif c == "(":
            depth += 1
            cur += c
            i += 1
        elif c == ")":
            if depth == 0:
                flush()
                return args, i + 1, line
            depth -= 1
            cur += c
            i += 1
        elif c.isspace():
            if c == "\n":
                line += 1
            flush()
            i += 1
        else:
            cur += c
            i += 1
    flush()
    return args, i, line


def apply_set(scope: Scope, call: Call) -> None:
    """``set(NAME value...)`` (and ``list(APPEND NAME value...)``) into ``scope``; other calls are ignored."""
    if call.name == "set" and call.args:
        values = [v for v in scope.values(call.args[1:]) if v not in ("CACHE", "PARENT_SCOPE", "FORCE")]
        if "CACHE" in [a.text for a in call.args]:
            values = values[:1]
        scope.variables[call.args[0].text] = ";".join(values)
    elif call.name == "list" and len(call.args) >= 2 and call.args[0].text == "APPEND":
        name = call.args[1].text
        old = scope.variables.get(name, "")
        new = scope.values(call.args[2:])
        scope.variables[name] = ";".join([*([old] if old else []), *new])
