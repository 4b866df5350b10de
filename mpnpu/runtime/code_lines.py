"""The kernel line of the instruction a core process died on.

A C++ kernel's core that dies of SIGSEGV or SIGBUS leaves, in its last words, ``; code
/path/of/object+0xOFFSET``: the object file holding the faulting instruction (the CPU-debug program
or the kernel library) and the instruction's offset in it (``put_code_address`` in
``mpnpu/native/bridge_core.h``). :func:`explain` replaces that with the source line, read from the
object's line table with binutils' ``addr2line``: a raw pointer read past the end of a tensor is
named at its own line, not only at the last kernel API call before it. An object built without
``-g`` has no line table; then the function is named and the message says how to get the line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

_CODE = re.compile(r"; code (/[^;]*?)\+0x([0-9a-f]+)")


def _short(path: str) -> str:
    """A source path as mpnpu's reports show kernel lines: its folder and file name."""
    parts = path.split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else path


def source_line(obj: str, offset: int) -> tuple[str, str]:
    """(function, "file:line") of the instruction at ``offset`` in the object file ``obj``; either
    is "" when the object does not say (no symbol, no line table, no addr2line)."""
    tool = shutil.which("addr2line")
    if tool is None or not os.path.isfile(obj):
        return "", ""
    try:
        out = subprocess.run([tool, "-f", "-C", "-e", obj, hex(offset)], capture_output=True, text=True,
                             timeout=20).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return "", ""
    func = out[0].strip() if out and not out[0].startswith("??") else ""
    where = out[1].split(" (discriminator")[0].strip() if len(out) > 1 else ""
    if where.startswith("??") or where.endswith(":0") or where.endswith(":?"):
        where = ""
    return func, (f"{_short(where.rsplit(':', 1)[0])}:{where.rsplit(':', 1)[1]}" if where else "")


def explain(message: str) -> str:
    """``message`` with its ``; code OBJECT+0xOFFSET`` said as the faulting instruction's kernel line
    (or its function, with how to get the line); unchanged when it has none."""
    m = _CODE.search(message)
    if m is None:
        return message
    obj, offset = m.group(1), int(m.group(2), 16)
    func, where = source_line(obj, offset)
    name = func.split("(")[0]
    if where:
        said = f"; the faulting access is at {where}" + (f" ({name})" if name else "")
    elif name:
        said = (f"; the faulting access is in {name} ({os.path.basename(obj)} was built without -g: no line "
                "table to name its line: build with -g, or MPNPU_KERNEL_OPT=g for mpnpu's own kernel builds)")
    else:
        said = f"; the faulting access is at {os.path.basename(obj)}+0x{offset:x}"
    return message[:m.start()] + said + message[m.end():]
