"""The branches of a source's ``#if`` / ``#ifdef`` blocks that the build's own ``-D`` defines rule out.

The runners read a kernel's files as text to tell how the chip would launch it (``kernel_mode``). A
sample that picks its kernel type per scenario (``#if SCENARIO_NUM == 2`` ... ``__cube__`` ... ``#else``
... ``__aicore__``) must be read as the build it runs sees it, or the text of a scenario it does not build
decides its launch. This is not a preprocessor: a condition is decided only when every name in it is a
``-D`` define of the build (or the operand of ``defined``, which is then true); a condition naming
anything else (a header's macro, ``__CCE_AICORE__``) is undecided, and its branches are all kept.
"""

from __future__ import annotations

import ast
import re

_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
_DEFINED = re.compile(r"\bdefined\s*(?:\(\s*(\w+)\s*\)|(\w+))")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_INT_SUFFIX = re.compile(r"\b(\d+)[uUlL]+\b")


def parse_defines(flags: list[str] | tuple[str, ...]) -> dict[str, str]:
    """The ``-DNAME=VALUE`` / ``-DNAME`` flags among ``flags`` as a mapping (``-DNAME`` is 1)."""
    out: dict[str, str] = {}
    for flag in flags:
        for token in flag.split():
            if not token.startswith("-D"):
                continue
            body = token[2:]
            name, _, value = body.partition("=")
            if re.fullmatch(r"[A-Za-z_]\w*", name):
                out[name] = value if "=" in body else "1"
    return out


def decide(condition: str, defines: dict[str, str]) -> bool | None:
    """The value of an ``#if`` condition under ``defines``, or None when it names anything else."""
    undecided = False

    def defined(m: re.Match[str]) -> str:
        nonlocal undecided
        name = m.group(1) or m.group(2)
        if name in defines:
            return " 1 "
        undecided = True  # a header may define it
        return " 0 "

    expr = _DEFINED.sub(defined, condition)

    def value(m: re.Match[str]) -> str:
        nonlocal undecided
        if m.group(0) in defines:
            return f"({defines[m.group(0)]})"
        undecided = True
        return "0"

    # twice: a define's value may itself name another define
    for _ in range(2):
        expr = _NAME.sub(value, expr)
    if undecided:
        return None
    expr = _INT_SUFFIX.sub(r"\1", expr).replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant, ast.And, ast.Or,
               ast.Not, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Add, ast.Sub, ast.Mult,
               ast.USub, ast.UAdd)
    if not all(isinstance(node, allowed) for node in ast.walk(tree)) or \
            any(isinstance(n, ast.Constant) and type(n.value) is not int for n in ast.walk(tree)):
        return None
    try:
        # only the node kinds above, no names, no builtins: arithmetic and comparisons of integers
        return bool(eval(compile(tree, "<condition>", "eval"), {"__builtins__": {}}))
    except Exception:  # e.g. a string define compared with a number: undecided
        return None


def active_text(text: str, defines: dict[str, str]) -> str:
    """``text`` with the lines of branches that ``defines`` rule out blanked (line numbers kept)."""
    lines = text.split("\n")
    # per open block: (the enclosing text is live, a branch known true was taken, this branch is live)
    stack: list[list[bool]] = []
    live = True
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _DIRECTIVE.match(line)
        if not m:
            out.append(line if live else "")
            i += 1
            continue
        # a directive continued over several lines
        span = [line]
        while span[-1].endswith("\\") and i + len(span) < len(lines):
            span.append(lines[i + len(span)])
        kind, rest = m.group(1), " ".join(s.rstrip("\\") for s in [m.group(2), *span[1:]])
        if kind in ("if", "ifdef", "ifndef"):
            if kind == "if":
                value = decide(rest, defines)
            else:
                name = rest.split()[0] if rest.split() else ""
                value = (name in defines) if name in defines else None
                value = None if value is None else (value if kind == "ifdef" else not value)
            stack.append([live, value is True, value is not False])
        elif kind == "elif" and stack:
            top = stack[-1]
            value = False if top[1] else decide(rest, defines)
            top[1], top[2] = top[1] or value is True, value is not False
        elif kind == "else" and stack:
            stack[-1][2] = not stack[-1][1]
        elif kind == "endif" and stack:
            stack.pop()
        live = all(frame[0] and frame[2] for frame in stack) if stack else True
        out.extend(span)  # directives stay as they are
        i += len(span)
    return "\n".join(out)
