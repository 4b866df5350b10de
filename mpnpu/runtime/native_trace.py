"""The Python front end's trace recorder in C: building it, loading it, and putting it in place.

A traced launch of a Python kernel records every local-tensor operand of every instruction, every
pipe sync, and the kernel line of each (``mpnpu.api._trace.record_local`` / ``record_sync``,
:func:`mpnpu.runtime.kcontext.call_site`). In Python each record costs a few Python frames and a frame
walk; ``native_trace.cpp`` makes the same records in C (docs/racecheck-speed.md has the figures).

- The process that opens a device builds the extension on its first traced launch (:func:`prepare`),
  with the C++ compiler the C++ front end uses, against this interpreter's and numpy's headers, into
  the build cache (``<cache>/pytrace/<key>/``; the key hashes the source, the interpreter and numpy).
- A core process loads it from there at its first traced launch (:func:`activate`) and puts its
  functions in place of the Python ones: ``kcontext.call_site``, and whatever registered with
  :func:`use` (the Python API's recording functions).
- Without a compiler or headers, with ``MPNPU_NATIVE_TRACE=0``, or if the build fails, the Python
  functions stay: the records are the same, only slower. :func:`status` says which is in use and why.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
from types import ModuleType
from typing import Callable

import numpy as np

from mpnpu import settings
from mpnpu.errors import TraceError
from mpnpu.runtime import kcontext, toolchain, trace
from mpnpu.runtime.toolchain import CompileError, cache_dir, find_compiler
from mpnpu.runtime.trace import Access, LocalAccess, PipeSyncEvent, byte_ranges

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native_trace.cpp")
MODULE_NAME = "_mpnpu_native_trace"
#: the folder of the build cache that holds it (never pruned: see mpnpu.ascendc.build.cache.KEPT)
CACHE_FOLDER = "pytrace"
#: how long one build may take (a small file: seconds)
BUILD_TIMEOUT_S = 300.0

_installers: list[Callable[[ModuleType], None]] = []
_module: ModuleType | None = None
_activated = False  # activate() has put the extension in place, or found it is not to be
_lib: str | None = None  # library_path(), once worked out in this process
_prepared = False  # prepare() has run in this process
_why_not = "not tried in this process"


def _headers() -> tuple[str, str]:
    return sysconfig.get_paths()["include"], np.get_include()


def library_path() -> str:
    """Where the extension for this interpreter and numpy is (or would be) kept."""
    with open(SOURCE, "rb") as f:
        body = f.read()
    # (the interpreter and numpy decide the headers it is built against; sysconfig, which says where
    # they are, is not imported here: a core process looks this up at its first traced launch)
    ident = f"{sys.executable}|{sys.version}|{np.__version__}|{np.__file__}".encode()
    key = hashlib.sha256(body + ident).hexdigest()[:20]
    return os.path.join(cache_dir(), CACHE_FOLDER, key, MODULE_NAME + ".so")


def build() -> str:
    """Build the extension if it is not in the cache; its path. Raises CompileError or
    NoCompilerError (one line each) when it cannot be built."""
    lib = library_path()
    if os.path.isfile(lib):
        return lib
    folder = os.path.dirname(lib)
    os.makedirs(folder, exist_ok=True)
    with toolchain.building(folder):
        if os.path.isfile(lib):  # (another process built it while this one waited for the lock)
            return lib
        python_include, numpy_include = _headers()
        if not os.path.isfile(os.path.join(python_include, "Python.h")):
            raise CompileError(f"no Python.h in {python_include} (Debian/Ubuntu: apt install python3-dev)")
        cxx = find_compiler()
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            out = os.path.join(tmp, os.path.basename(lib))
            cmd = [*cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra",
                   f"-I{python_include}", f"-I{numpy_include}", SOURCE, "-o", out]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                                      env={**os.environ, "LC_ALL": "C"})
            except (OSError, subprocess.SubprocessError) as e:
                raise CompileError(f"building the trace recorder: {e}") from None
            if proc.returncode != 0:
                lines = proc.stderr.strip().splitlines()
                first = next((line for line in lines if "error" in line), lines[0] if lines else "?")
                raise CompileError(f"building the trace recorder: {first}", stderr=proc.stderr)
            os.replace(out, lib)
    return lib


def _load(lib: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, lib)
    spec = importlib.util.spec_from_file_location(MODULE_NAME, lib, loader=loader)
    if spec is None:
        raise TraceError(f"{lib} cannot be loaded as a module")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    module.configure(kcontext._SITE_PREFIX, kcontext._SITES, kcontext._site_prefix, LocalAccess, PipeSyncEvent,
                     Access, functools.partial(byte_ranges, deferred=True))
    return module


def prepare() -> None:
    """In the process that launches: make sure the extension is built before a core needs it (once per
    process; a failure leaves the Python recorder, and :func:`status` says why)."""
    global _prepared, _why_not
    if _prepared:
        return
    _prepared = True
    if not settings.from_env(settings.NATIVE_TRACE):
        _why_not = "MPNPU_NATIVE_TRACE is off"
        return
    try:
        build()
    except Exception as e:  # (a failure to build only means the slower Python recorder)
        _why_not = f"not built: {e}"


def activate() -> ModuleType | None:
    """In a core process, at a traced launch: load the built extension and put it in place of the
    Python recording functions, once; the module, or None while the Python ones stay. A library not
    built yet is looked for again at the next traced launch (a compiled kernel's launches do not
    have it built; a Python kernel's later launch on the same device may)."""
    global _activated, _module, _why_not, _lib
    if _activated:
        return _module
    if not settings.from_env(settings.NATIVE_TRACE):
        _activated, _why_not = True, "MPNPU_NATIVE_TRACE is off"
        return None
    try:
        if _lib is None:
            _lib = library_path()
        if not os.path.isfile(_lib):
            _why_not = f"not built ({_lib} is missing)"
            return None
        _activated = True
        module = _load(_lib)
    except Exception as e:  # (a library that does not load only means the Python recorder)
        _why_not = f"not loaded: {e}"
        return None
    _module = module
    kcontext.call_site = module.call_site
    kcontext.gm_access = module.gm_access
    kcontext.retime_access = module.retime_access
    kcontext.traced_copy = module.traced_copy
    trace.columns = functools.partial(module.columns, trace._time_slots)
    for install in _installers:
        install(module)
    return module


def use(install: Callable[[ModuleType], None]) -> None:
    """Have ``install(module)`` put the extension's functions in place once it is loaded in this
    process (now, if it already is)."""
    _installers.append(install)
    if _module is not None:
        install(_module)


def status() -> str:
    """"C" when this process records in C, else why it records in Python."""
    return "C" if _module is not None else f"Python ({_why_not})"
