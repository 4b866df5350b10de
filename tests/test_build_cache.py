"""The C++ build cache stays bounded: the least recently used entries go first, down to the cap;
recent ones, the one just built and the CPU-debug host libraries (loaded by path) are never removed."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor

from mpnpu.ascendc.build import cache
from mpnpu.runtime import toolchain


def _entry(path, nbytes: int, age_s: float) -> str:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "lib.so"), "wb") as f:
        f.write(b"\0" * nbytes)
    t = time.time() - age_s
    os.utime(path, (t, t))
    return str(path)


def test_prune_removes_the_least_recently_used_down_to_the_cap(tmp_path) -> None:
    old = _entry(tmp_path / "aaaa", 400, 3600)
    older_pch = _entry(tmp_path / "pch" / "p1", 500, 7200)
    mid = _entry(tmp_path / "bbbb", 300, 1800)
    recent = _entry(tmp_path / "cccc", 300, 5)  # used seconds ago: a build may be reading it
    kept = _entry(tmp_path / "dddd", 300, 9000)  # the one just built
    host = _entry(tmp_path / "cpudebug" / "h1", 1000, 99999)  # loaded by programs by path
    removed = cache.prune(str(tmp_path), keep=[kept], max_bytes=1200)
    assert removed == [older_pch, old]  # oldest first, until 1800 - 900 <= 1200... and no further
    assert all(os.path.exists(p) for p in (mid, recent, kept, host))
    assert cache.prune(str(tmp_path), keep=[kept], max_bytes=10_000) == []  # under the cap: nothing


def test_a_cache_hit_counts_as_a_use(tmp_path) -> None:
    e = _entry(tmp_path / "eeee", 10, 3600)
    before = os.path.getmtime(e)
    cache.used(e)
    assert os.path.getmtime(e) > before + 3000
    assert [p for _, _, p in cache.entries(str(tmp_path))] == [e]


def test_two_builds_of_one_library_at_once_compile_it_once(tmp_path, monkeypatch) -> None:
    """Two builds of the same library started together (a batch and the tests beside it, two runs on one
    cache): the second waits on the library's build lock and takes the first's result, no second compile."""
    from mpnpu.ascendc.build import compiler

    monkeypatch.setenv("MPNPU_CACHE_DIR", str(tmp_path))
    compiles: list[int] = []
    waiting = threading.Event()  # set when a build finds the lock taken and waits
    monkeypatch.setattr(toolchain, "time", types.SimpleNamespace(  # (the lock's wait: cache.building)
        monotonic=time.monotonic, sleep=lambda s: (waiting.set(), time.sleep(s))))

    def compile_once_the_other_waits(folder: str, lib: str, spec: object, cxx: object) -> None:
        compiles.append(threading.get_ident())
        assert waiting.wait(timeout=20), "the second build never waited on the lock"
        with open(lib, "wb") as f:
            f.write(b"\0")
        with open(os.path.join(folder, "deps.json"), "w") as f:
            json.dump({}, f)

    monkeypatch.setattr(compiler, "_compile_into", compile_once_the_other_waits)
    source = tmp_path / "k.cpp"
    source.write_text("// a kernel source\n")
    spec = compiler.BuildSpec((str(source),), "k")
    with ThreadPoolExecutor(2) as pool:
        built = list(pool.map(lambda _: compiler.build(spec, cxx=[sys.executable]), range(2)))
    assert len(compiles) == 1
    assert sorted(b.cached for b in built) == [False, True] and built[0].path == built[1].path


def test_prune_spares_an_entry_being_built(tmp_path) -> None:
    """An old entry whose build lock another build holds (a long compile) is not removed under it."""
    busy = _entry(tmp_path / "ffff", 400, 3600)
    idle = _entry(tmp_path / "gggg", 400, 3000)
    held = threading.Event()
    done = threading.Event()

    def hold() -> None:
        with cache.building(busy):
            os.utime(busy, (time.time() - 7200, time.time() - 7200))  # (the oldest, as a long build's)
            held.set()
            done.wait(timeout=20)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(timeout=20)
        assert cache.prune(str(tmp_path), max_bytes=100) == [idle]
        assert os.path.exists(busy)
    finally:
        done.set()
        t.join(timeout=20)
    assert cache.prune(str(tmp_path), max_bytes=100) == [busy]  # its build over, it goes like any other
