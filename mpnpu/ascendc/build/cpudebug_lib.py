"""Building libmpnpu_cpudebug (the library a CPU-debug unit test links instead of the vendor's CPU
library) and the compiler flags that use it: ``python -m mpnpu.ascendc --cflags --libs``."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile

from .compiler import INCLUDE_DIR, CompileError, cache_dir, find_compiler, headers_digest

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native", "cpudebug_lib.cpp")


def _python_link() -> tuple[str, list[str]]:
    """(include dir, link flags) of the running interpreter's libpython."""
    include = sysconfig.get_paths()["include"]
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    ldlib = sysconfig.get_config_var("LDLIBRARY") or ""
    version = sysconfig.get_config_var("LDVERSION") or f"{sys.version_info.major}.{sys.version_info.minor}"
    if not sysconfig.get_config_var("Py_ENABLE_SHARED") or not ldlib.endswith(".so"):
        raise CompileError(
            f"this Python ({sys.executable}) has no shared libpython ({ldlib or 'none'}), which a CPU-debug test "
            "embeds; use a Python built with --enable-shared (Debian's python3, pyenv with "
            "PYTHON_CONFIGURE_OPTS=--enable-shared)")
    return include, [f"-L{libdir}", f"-lpython{version}", f"-Wl,-rpath,{libdir}"]


def cpudebug_library() -> str:
    """The folder holding libmpnpu_cpudebug.so for this interpreter (built once, cached)."""
    include, link = _python_link()
    python = os.path.abspath(sys.executable)
    with open(SOURCE, "rb") as f:
        body = f.read()
    key = hashlib.sha256(body + python.encode() + " ".join(link).encode() + headers_digest().encode()).hexdigest()[:20]
    folder = os.path.join(cache_dir(), "cpudebug", key)
    lib = os.path.join(folder, "libmpnpu_cpudebug.so")
    if os.path.isfile(lib):
        return folder
    os.makedirs(folder, exist_ok=True)
    cxx = find_compiler()
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        out = os.path.join(tmp, "libmpnpu_cpudebug.so")
        cmd = [*cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", f"-I{include}", f"-I{INCLUDE_DIR}",
               f'-DMPNPU_PYTHON="{python}"', SOURCE, "-o", out, *link]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "LC_ALL": "C"})
        if proc.returncode != 0:
            first = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "?"
            raise CompileError(f"building libmpnpu_cpudebug: {first}", stderr=proc.stderr)
        os.replace(out, lib)
    return folder


def cflags() -> list[str]:
    """What compiling a CPU-debug test against mpnpu needs.

    The CPU-debug build defines both ``__CCE_KT_TEST__`` and ``ASCENDC_CPU_DEBUG``: public kernels and
    their unit tests test either name to pick the code they run on the host (docs/ut.md).
    """
    return ["-std=c++17", f"-I{INCLUDE_DIR}", "-D__CCE_KT_TEST__", "-DASCENDC_CPU_DEBUG=1", "-pthread"]


def libs() -> list[str]:
    """What linking it needs (builds libmpnpu_cpudebug on first use)."""
    folder = cpudebug_library()
    return [f"-L{folder}", "-lmpnpu_cpudebug", f"-Wl,-rpath,{folder}", "-pthread"]
