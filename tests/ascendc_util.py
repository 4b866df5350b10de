"""Helpers for the C++ front end's tests: our own test kernels (tests/ascendc_kernels/) compiled
once per session with the system compiler; the tests skip with a clear reason when there is none."""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Iterable
from typing import Any

import pytest

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ascendc_kernels")


def have_compiler() -> bool:
    return bool(os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++") or shutil.which("c++"))


needs_cxx = pytest.mark.skipif(not have_compiler(), reason="no C++17 compiler (g++ or clang++) on this machine")


def source(name: str) -> str:
    return os.path.join(KERNELS, name)


@functools.lru_cache(maxsize=None)
def kernel(name: str, entry: str, kernel_type=None, **defines: str):
    """Our test kernel ``name`` (a file in tests/ascendc_kernels/) compiled with ``defines``."""
    from mpnpu.ascendc import compile_kernel

    return compile_kernel(source(name), entry, defines=defines or None, kernel_type=kernel_type)


def line_of(name: str, text: str) -> int:
    """The first line of tests/ascendc_kernels/``name`` that contains ``text`` (1-based)."""
    with open(source(name)) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise AssertionError(f"{text!r} not in {name}")


def hazard_lines(hazards: Iterable[Any]) -> set[tuple[str, str, str]]:
    """(kind, line of the first access, line of the second) of each hazard, the lines as strings."""
    return {(h.kind, h.first.site.rsplit(":", 1)[1], h.second.site.rsplit(":", 1)[1]) for h in hazards}


def run_host_program(tmp_path: Any, text: str) -> list[str]:
    """Build the host program ``text`` against mpnpu's headers (warnings are errors) and run it: its lines."""
    import subprocess

    from mpnpu.ascendc.build.compiler import INCLUDE_DIR, find_compiler

    src, exe = tmp_path / "host.cpp", tmp_path / "host"
    src.write_text(text)
    build = subprocess.run([*find_compiler(), "-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I",
                            str(INCLUDE_DIR), str(src), "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.splitlines()
