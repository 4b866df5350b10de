"""A kernel's tiling struct as the compiler lays it out, and packing values into it by field name.

The tiling struct is C++ (a CPU-debug ``*_tiling_def.h`` with a plain ``struct``, or a host header
written with ``BEGIN_TILING_DATA_DEF`` / ``TILING_DATA_FIELD_DEF*``). Its layout is never packed by
hand here: the field names are read from the header's text, then a small probe program, compiled
with the same flags as the kernel, prints every field's ``offsetof``, size, kind and array length.
:meth:`TilingLayout.pack` writes values by name (nested fields dotted: ``mmTiling.baseM``) into
bytes the kernel's ``GET_TILING_DATA`` reads back.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Mapping, Sequence

import numpy as np

from mpnpu.errors import UsageError

from .build.compiler import INCLUDE_DIR, BuildSpec, CompileError, cache_dir, find_compiler, first_error, headers_digest

_SCALARS = {
    "bool", "char", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
    "int", "unsigned", "short", "long", "float", "double", "size_t", "half", "bfloat16_t",
}
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_MEMBER = re.compile(
    r"^(?:(?:const|volatile|static|alignas\s*\([^)]*\))\s+)*(?P<type>[A-Za-z_][\w:]*(?:\s+(?:int|long|short|char))*)"
    r"\s+(?P<name>[A-Za-z_]\w*)\s*(?:\[\s*(?P<n>[\w+*/ ()]+)\s*\])?\s*(?:=.*|\{.*\})?$", re.S)


@dataclass(frozen=True)
class Field:
    """One scalar (or array of scalars) in the tiling struct."""

    name: str  # dotted for nested structs: "mmTiling.baseM"
    offset: int
    size: int  # bytes of one element
    kind: str  # "i" signed, "u" unsigned, "f" floating
    count: int  # 1, or the array length

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(f"{'f' if self.kind == 'f' else self.kind}{self.size}")


#: struct-module codes of one scalar field, by (kind, size)
_STRUCT_CODES = {("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q", ("u", 1): "B", ("u", 2): "H",
                 ("u", 4): "I", ("u", 8): "Q", ("f", 2): "e", ("f", 4): "f", ("f", 8): "d"}


#: packed tilings a layout remembers
_PACKED_MAX = 1024


def _pack_key(values: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What identifies a packing of ``values``: plain ints and floats only (a float by its bits, so
    that 0.0 and -0.0 stay apart); None (not remembered) for anything else."""
    key: list[Any] = []
    for name, value in values.items():
        kind = type(value)
        if kind is int:
            key.append((name, value))
        elif kind is float:
            key.append((name, value.hex()))
        else:
            return None
    return tuple(key)


def _pack_scalar(out: np.ndarray, f: Field, value: Any) -> bool:
    """Write one Python int (into an integer field) or float (into a floating one) at the field's
    offset, checking an integer's range; False for anything else (the general path packs it). A
    tiling of a few dozen scalars is packed per case: this keeps that well under a millisecond."""
    code = _STRUCT_CODES.get((f.kind, f.size))
    if code is None or isinstance(value, bool):
        return False
    if f.kind == "f":
        if not isinstance(value, (int, float)):
            return False
    elif isinstance(value, (int, np.integer)):
        bits = 8 * f.size
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if f.kind == "i" else (0, (1 << bits) - 1)
        if not lo <= int(value) <= hi:
            return False  # the general path reports it
        value = int(value)
    else:
        return False
    struct.pack_into("<" + code, out.data, f.offset, value)
    return True


@dataclass(frozen=True)
class TilingLayout:
    """The layout of struct ``struct`` (``size`` bytes) as the compiler made it."""

    struct: str
    size: int
    fields: tuple[Field, ...]
    #: the bytes pack made, by the values it was given (see _pack_key): a batch packs the same few
    #: tilings case after case, and packing costs more than the launch work around it
    _packed: dict[tuple[Any, ...], np.ndarray] = dataclass_field(default_factory=dict, compare=False, repr=False)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        known = ", ".join(f.name for f in self.fields)
        raise UsageError(f"tiling struct {self.struct} has no field {name!r}; its fields: {known}")

    def pack(self, values: Mapping[str, Any]) -> np.ndarray:
        """The struct's bytes with ``values`` (by field name; every other field 0), a new array."""
        key = _pack_key(values)
        if key is not None:
            hit = self._packed.get(key)
            if hit is not None:
                copy: np.ndarray = hit.copy()
                return copy
        out = self._pack(values)
        if key is not None:
            if len(self._packed) >= _PACKED_MAX:  # (bounded: a sweep over many shapes must not grow it for ever)
                self._packed.clear()
            self._packed[key] = out.copy()
        return out

    def _pack(self, values: Mapping[str, Any]) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.uint8)
        by_name = {f.name: f for f in self.fields}
        for name, value in values.items():
            f = by_name.get(name) or self.field(name)
            if f.count == 1 and _pack_scalar(out, f, value):
                continue
            arr = np.asarray(value)
            if arr.size != f.count:
                raise UsageError(f"tiling field {self.struct}.{name} holds {f.count} value(s), got {arr.size}")
            if f.kind != "f":
                info = np.iinfo(f.dtype)
                if not np.all((arr >= info.min) & (arr <= info.max)):
                    raise UsageError(f"tiling field {self.struct}.{name} is {f.dtype}: {value!r} does not fit")
            out[f.offset:f.offset + f.size * f.count] = np.asarray(arr, dtype=f.dtype).reshape(-1).view(np.uint8)
        return out

    def unpack(self, data: np.ndarray) -> dict[str, Any]:
        """Every field's value(s) from the struct's bytes."""
        raw = np.asarray(data, dtype=np.uint8).reshape(-1)
        out: dict[str, Any] = {}
        for f in self.fields:
            v = raw[f.offset:f.offset + f.size * f.count].view(f.dtype)
            out[f.name] = v.item() if f.count == 1 else v.tolist()
        return out


def member_names(text: str, struct: str) -> list[tuple[str, str, str]]:
    """(type, name, array length or "") of the data members of ``struct`` in a header's text."""
    text = _COMMENT.sub(" ", text)
    short = struct.split("::")[-1]
    m = re.search(rf"\bBEGIN_TILING_DATA_DEF\s*\(\s*{re.escape(short)}\s*\)(?P<body>.*?)\bEND_TILING_DATA_DEF",
                  text, re.S)
    if m:
        out = []
        fields = re.finditer(r"\bTILING_DATA_FIELD_DEF(?P<suffix>_ARR|_STRUCT)?\s*\((?P<args>[^)]*)\)", m.group("body"))
        for f in fields:
            args = [a.strip() for a in f.group("args").split(",")]
            if f.group("suffix") == "_ARR" and len(args) == 3:
                out.append((args[0], args[2], args[1]))
            elif len(args) == 2:
                out.append((args[0], args[1], ""))
        return out
    m = re.search(rf"\b(?:struct|class)\s+{re.escape(short)}\s*(?::[^{{]*)?\{{", text)
    if not m:
        raise UsageError(f"no definition of struct {struct} in the tiling header")
    depth, i, start = 1, m.end(), m.end()
    body_parts: list[str] = []
    while i < len(text) and depth:
        ch = text[i]
        if ch == "{":
            if depth == 1:
                body_parts.append(text[start:i])
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 1:
                start = i + 1
        i += 1
    body_parts.append(text[start:i - 1])
    out = []
    for stmt in ";".join(body_parts).split(";"):
        stmt = " ".join(stmt.split())
        if not stmt or "(" in stmt.split("=")[0] or stmt.startswith(("public", "private", "protected", "using",
                                                                      "typedef", "friend", "template")):
            continue
        stmt = re.sub(r"^(public|private|protected)\s*:\s*", "", stmt)
        mm = _MEMBER.match(stmt)
        if mm:
            out.append((mm.group("type"), mm.group("name"), (mm.group("n") or "").strip()))
    return out


def _flatten(texts: Sequence[str], struct: str, prefix: str = "", depth: int = 0) -> list[str]:
    """Dotted names of every scalar (or array) member, nested structs expanded."""
    if depth > 8:
        raise UsageError(f"tiling struct {struct} nests too deeply")
    members = None
    for text in texts:
        try:
            members = member_names(text, struct)
            break
        except UsageError:
            continue
    if members is None:
        raise UsageError(f"no definition of struct {struct} in the tiling header or the headers it includes")
    names: list[str] = []
    for type_, name, count in members:
        base = type_.split("::")[-1].replace("unsigned ", "u")
        if type_ in _SCALARS or base in _SCALARS or count:
            names.append(prefix + name)
        else:
            names += _flatten(texts, type_, f"{prefix}{name}.", depth + 1)
    return names


def _probe_source(header: str, struct: str, names: Sequence[str]) -> str:
    lines = [
        "#include <cstddef>", "#include <cstdint>", "#include <cstdio>", "#include <cstring>", "#include <type_traits>",
        f'#include "{os.path.abspath(header)}"',
        "#undef main  // (a source with a host program: its main renamed by a define, the probe's own kept)",
        "template <class T> const char* kind() { using E = std::remove_all_extents_t<T>;",
        '  return std::is_floating_point_v<E> || std::is_class_v<E> ? "f" : std::is_signed_v<E> ? "i" : "u"; }',
        f"using S = {struct};",
        "int main() {",
        '  std::printf("{\\"size\\": %zu, \\"fields\\": [", sizeof(S));',
    ]
    for i, n in enumerate(names):
        t = f"decltype(((S*)nullptr)->{n})"
        sep = "," if i else ""
        lines.append(
            f'  std::printf("{sep}[\\"{n}\\", %zu, %zu, \\"%s\\", %zu]", offsetof(S, {n}), '
            f"sizeof(std::remove_all_extents_t<{t}>), kind<{t}>(), "
            f"std::extent_v<{t}> ? std::extent_v<{t}> : size_t(1));"
        )
    lines += ['  std::printf("]}\\n");', "  return 0;", "}"]
    return "\n".join(lines) + "\n"


_TILING_DEF = re.compile(r"\bBEGIN_TILING_DATA_DEF\s*\(\s*(?P<name>\w+)\s*\).*?\bEND_TILING_DATA_DEF\s*;?", re.S)
_REGISTER = re.compile(r"\bREGISTER_TILING_DATA_CLASS\s*\(\s*(?P<op>\w+)\s*,\s*(?P<name>\w+)\s*\)")


#: a constant of integral type at namespace scope: ``constexpr uint16_t MAX_CORE_COUNT = 50;``
_CONSTANT = re.compile(r"^[ \t]*(?:static\s+)?(?:constexpr|const)\s+(?:unsigned\s+)?(?:u?int(?:8|16|32|64)_t|int|long|"
                       r"size_t|uint32_t)\s+(?P<name>[A-Za-z_]\w*)\s*=\s*[^;{}]+;", re.M)


def registered_tiling_structs(text: str) -> list[tuple[str, str]]:
    """(operator type, struct) of each ``REGISTER_TILING_DATA_CLASS`` of a host tiling header's text,
    in order, comments left out."""
    return [(m.group("op"), m.group("name")) for m in _REGISTER.finditer(_COMMENT.sub(" ", text))]


def kernel_tiling_header(host_header: str, struct: str | None = None, op_type: str | None = None) -> str:
    """The kernel side of a host tiling header (``op_host/<op>_tiling.h``, which includes host-only
    headers): its ``BEGIN_TILING_DATA_DEF`` ... ``END_TILING_DATA_DEF`` structs at global scope, as
    plain structs (mpnpu's kernel_tiling.h defines the macros), and a ``GET_TILING_DATA`` that fills
    ``struct`` (default: the one ``REGISTER_TILING_DATA_CLASS`` registers for the operator type
    ``op_type``, else the first one it registers, else the last defined) — what an operator
    repository's unit-test build generates for a kernel without a ``*_tiling_def.h`` (it asks the
    tiling library for the class registered under the operator's type; a header may also register
    the structs nested in it, under other names). Returns the header's text."""
    try:
        with open(host_header, errors="replace") as f:
            text = _COMMENT.sub(" ", f.read())
    except OSError as e:
        raise UsageError(f"cannot read the tiling header {host_header}: {e}") from None
    defs = list(_TILING_DEF.finditer(text))
    if not defs:
        raise UsageError(f"{host_header} defines no tiling struct (BEGIN_TILING_DATA_DEF ... END_TILING_DATA_DEF)")
    names = [m.group("name") for m in defs]
    registered = registered_tiling_structs(text)
    for_type = [name for op, name in registered if op == op_type]
    chosen = struct or (for_type[0] if for_type else registered[0][1] if registered else names[-1])
    if chosen not in names:
        raise UsageError(f"{host_header} defines no tiling struct {chosen}; it defines {', '.join(names)}")
    guard = "MPNPU_KERNEL_TILING_" + re.sub(r"\W", "_", os.path.basename(host_header)).upper()
    body = "\n\n".join(m.group(0).rstrip(";") + ";" for m in defs)
    # the header's own constants that the structs use (an array field's length: MAX_CORE_COUNT), first
    constants = [m.group(0).strip() for m in _CONSTANT.finditer(text) if re.search(rf"\b{m.group('name')}\b", body)]
    if constants:
        body = "\n".join(constants) + "\n\n" + body
    return (f"// generated by mpnpu.ascendc.tiling from {os.path.basename(host_header)}: the kernel side of its\n"
            f"// tiling structs\n#ifndef {guard}\n#define {guard}\n\n#include \"kernel_tiling/kernel_tiling.h\"\n\n"
            f"{body}\n\n#undef GET_TILING_DATA\n"
            f"#define GET_TILING_DATA(var, tiling) GET_TILING_DATA_WITH_STRUCT({chosen}, var, tiling)\n\n"
            f"#endif  // {guard}\n")


def tiling_layout(header: str, struct: str, *, include_dirs: Sequence[str] = (),
                  defines: Mapping[str, str] | None = None) -> TilingLayout:
    """The layout of ``struct`` defined in ``header`` (cached by the header's contents)."""
    if not os.path.isfile(header):
        raise UsageError(f"no such tiling header: {header}")
    here = os.path.dirname(os.path.abspath(header))
    texts = []
    for path in [header, os.path.join(INCLUDE_DIR, "kernel_tiling", "kernel_tiling.h"),
                 *[os.path.join(here, f) for f in sorted(os.listdir(here)) if f.endswith((".h", ".hpp"))]]:
        with open(path, errors="replace") as f:
            texts.append(f.read())
    names = _flatten(texts, struct)
    defines = dict(defines or {})
    key = hashlib.sha256(json.dumps([texts[0], struct, names, sorted(defines.items()), list(include_dirs),
                                     headers_digest()]).encode()).hexdigest()[:24]
    cached = os.path.join(cache_dir(), "tiling", f"{key}.json")
    try:
        with open(cached) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = _run_probe(header, struct, names, include_dirs, defines)
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        tmp = f"{cached}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, cached)
    return TilingLayout(struct, int(data["size"]), tuple(Field(n, int(o), int(s), k, int(c))
                                                       for n, o, s, k, c in data["fields"]))


def _run_probe(header: str, struct: str, names: Sequence[str], include_dirs: Sequence[str],
               defines: Mapping[str, str]) -> dict[str, Any]:
    cxx = find_compiler()
    with tempfile.TemporaryDirectory(prefix="mpnpu-tiling-") as tmp:
        src, exe = os.path.join(tmp, "probe.cpp"), os.path.join(tmp, "probe")
        with open(src, "w") as f:
            f.write(_probe_source(header, struct, names))
        cmd = [*cxx, "-std=c++17", "-Wno-invalid-offsetof", f"-I{INCLUDE_DIR}",
               f"-I{os.path.dirname(os.path.abspath(header))}", *[f"-I{d}" for d in include_dirs],
               *[f"-D{k}={v}" for k, v in sorted(defines.items())], src, "-o", exe]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise CompileError("reading the tiling struct's layout: "
                               + first_error(proc.stderr, BuildSpec((header,), "main")), stderr=proc.stderr)
        out = subprocess.run([exe], capture_output=True, text=True, timeout=60)
        data: dict[str, Any] = json.loads(out.stdout)
        return data
