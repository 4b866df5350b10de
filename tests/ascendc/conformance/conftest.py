"""Builds the conformance runner once per session (cached by the hash of its sources, mpnpu's
headers, the flags and the compiler) and hands tests a function that runs a :class:`vecref.Sim`.

MPNPU_SANITIZE=1 builds and runs it under -fsanitize=address,undefined (any sanitizer report
fails the test that triggered it). No C++ compiler: every test here is skipped, saying so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

HERE = Path(__file__).parent
RUNNER_DIR = HERE / "runner"
INCLUDE_DIR = HERE.parents[2] / "mpnpu" / "ascendc" / "include"
SANITIZE = os.environ.get("MPNPU_SANITIZE", "") not in ("", "0")

BASE_FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-fno-strict-aliasing"]
FAST_FLAGS = ["-O0"]
SAN_FLAGS = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def find_compiler() -> str | None:
    for cxx in (os.environ.get("CXX"), "g++", "clang++", "c++"):
        if cxx and shutil.which(cxx):
            return shutil.which(cxx)
    return None


def _digest(cxx: str, flags: list[str]) -> str:
    h = hashlib.sha256()
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    h.update(version.encode())
    h.update(" ".join(flags).encode())
    for root in (RUNNER_DIR, INCLUDE_DIR):
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in (".h", ".cpp"):
                h.update(str(p.relative_to(root)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()[:20]


def build_runner(cxx: str) -> Path:
    flags = BASE_FLAGS + (SAN_FLAGS if SANITIZE else FAST_FLAGS)
    key = _digest(cxx, flags)
    cache = Path(tempfile.gettempdir()) / f"mpnpu-vecconf-{os.getuid()}" / key
    exe = cache / "vecconf"
    if exe.exists():
        return exe
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=cache))
    sources = sorted(RUNNER_DIR.glob("*.cpp"))
    objs, procs = [], []
    # two compilers at a time (the machine has two CPUs)
    pending = list(sources)
    errors = []
    while pending or procs:
        while pending and len(procs) < 2:
            src = pending.pop(0)
            obj = work / (src.stem + ".o")
            objs.append(obj)
            cmd = [cxx, *flags, "-I", str(INCLUDE_DIR), "-I", str(RUNNER_DIR), "-c", str(src), "-o", str(obj)]
            procs.append((src, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        src, p = procs.pop(0)
        out, _ = p.communicate()
        if p.returncode:
            errors.append(f"{src.name}:\n{out}")
    if errors:
        raise RuntimeError("the conformance runner did not compile:\n" + "\n".join(errors)[:8000])
    tmp_exe = work / "vecconf"
    link = subprocess.run([cxx, *flags, *map(str, objs), "-o", str(tmp_exe)], capture_output=True, text=True)
    if link.returncode:
        raise RuntimeError("the conformance runner did not link:\n" + link.stdout + link.stderr)
    os.replace(tmp_exe, exe)  # atomic: a concurrent session sees the whole file or none
    shutil.rmtree(work, ignore_errors=True)
    return exe


@pytest.fixture(scope="session")
def runner_exe() -> Path:
    cxx = find_compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++, clang++ or c++ on PATH, or $CXX): the vector API conformance suite "
                    "needs one to build its runner")
    return build_runner(cxx)


@pytest.fixture
def run(runner_exe, tmp_path):
    """run(sim) executes the sim's job with the runner and checks it against the reference."""
    from vecharness import execute

    def _run(sim, **kw):
        return execute(runner_exe, sim, tmp_path, sanitize=SANITIZE, **kw)
    return _run
