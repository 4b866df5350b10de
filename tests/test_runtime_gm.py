"""GM and local memory: the caching allocator (reuse, best fit, split/merge, poison, zero-size,
double free, stats), GM views, local-memory capacities, data_copy checks, and errors that
survive pickling."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import numpy as np
import pytest

import mpnpu.errors as errors_mod
from mpnpu.errors import (
    CapacityError,
    GMAccessError,
    GMOutOfMemoryError,
    KernelError,
    MemcheckError,
    MpnpuError,
    UsageError,
)
from mpnpu.runtime.config import DEFAULT_SPEC
from mpnpu.runtime.gm import BLOCK_ROUND, CachingAllocator, GlobalMemory
from tests.runtime_util import OPTIONS, device, filled, k

SEG = 2 << 20  # the allocator's smallest segment (sizes round up to 2 MiB)


@pytest.fixture
def gm():
    g = GlobalMemory(SEG)
    try:
        yield g
    finally:
        g.close()


def _where(t) -> tuple[str, int]:
    return t.segment, t.offset


# -- stale segments --------------------------------------------------------------------------------


def _stale_segment() -> str:
    """A segment named as if a process that has ended (a SIGKILLed run) had made it."""
    import os
    import subprocess
    import sys
    from multiprocessing import shared_memory

    from mpnpu.runtime.config import SEGMENT_PREFIX

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(10)
    name = f"{SEGMENT_PREFIX}{dead.pid}_1_0"
    shm = shared_memory.SharedMemory(name=name, create=True, size=4096)
    shm.close()
    from multiprocessing import resource_tracker

    resource_tracker.unregister(shm._name, "shared_memory")  # it is "left behind": nobody owns it
    assert os.path.exists(f"/dev/shm/{name}")
    return name


def test_sweep_unlinks_segments_of_dead_runs_only() -> None:
    import os

    from mpnpu.runtime.gm import sweep_stale_segments

    name = _stale_segment()
    with device(1) as dev:
        live = dev.to_device("x", np.arange(4, dtype=np.int32)).segment
        swept = sweep_stale_segments()
        assert os.path.exists(f"/dev/shm/{live}") and live not in swept  # a live run's segment stays
    # Other runs on this machine may sweep it first; either way it is gone.
    assert not os.path.exists(f"/dev/shm/{name}")


def test_sweeping_is_an_explicit_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Constructing a Device sweeps nothing unless asked; every CLI sweeps at start-up."""
    import mpnpu.cli.common as common
    import mpnpu.runtime.device as device_mod

    calls: list[str] = []
    monkeypatch.setattr(device_mod, "sweep_stale_segments", lambda: calls.append("device") or ["s"])
    monkeypatch.setattr(common, "sweep_stale_segments", lambda: calls.append("cli") or [])
    with device(1) as dev:
        assert dev.swept_segments == []
    assert calls == []
    with device(1, sweep_stale=True) as dev:
        assert dev.swept_segments == ["s"]
    assert calls == ["device"]
    assert common.run_cli(lambda argv: 0, []) == 0
    assert calls == ["device", "cli"]


# -- caching allocator ---------------------------------------------------------------------------


@pytest.mark.usefixtures("no_leaks")
def test_free_then_alloc_same_size_reuses_the_block_with_its_old_bytes(gm: GlobalMemory) -> None:
    a = gm.alloc("a", (250,), "float32")
    gm.write(a, np.arange(250, dtype=np.float32))
    where = _where(a)
    gm.free(a)
    b = gm.alloc("b", (1000,), "uint8")  # same rounded size (1000 bytes -> 1024)
    assert _where(b) == where
    np.testing.assert_array_equal(gm.read(b).view(np.float32), np.arange(250, dtype=np.float32))


@pytest.mark.usefixtures("no_leaks")
def test_best_fit_split_and_merge(gm: GlobalMemory) -> None:
    r = BLOCK_ROUND
    t = [gm.alloc(f"t{i}", (n,), "uint8") for i, n in enumerate([r, 4 * r, r, 2 * r, r])]
    offs = [x.offset for x in t]
    assert offs == [0, r, 5 * r, 6 * r, 8 * r]  # consecutive in one segment
    gm.free(t[1])  # a 4r hole
    gm.free(t[3])  # a 2r hole
    # best fit: a 2r request takes the 2r hole, not the first (larger) one
    x = gm.alloc("x", (2 * r - 10,), "uint8")
    assert x.offset == 6 * r
    # split: a 1r request takes the front of the 4r hole; the rest stays free for a 3r request
    y = gm.alloc("y", (r,), "uint8")
    z = gm.alloc("z", (3 * r,), "uint8")
    assert (y.offset, z.offset) == (r, 2 * r)
    # merge: freeing y, z and t2 gives one 5r hole that a 5r request fits in
    for u in (y, z, t[2]):
        gm.free(u)
    w = gm.alloc("w", (5 * r,), "uint8")
    assert w.offset == r
    stats = gm.stats()
    assert stats["segments"] == 1 and stats["reserved_bytes"] == SEG
    assert stats["allocated_bytes"] == r + 5 * r + 2 * r + r  # t0, w, x, t4


def test_allocator_merges_both_neighbours_and_grows_segments() -> None:
    made: list[int] = []

    def new_segment(n: int) -> str:
        made.append(n)
        return f"s{len(made)}"

    al = CachingAllocator(new_segment, 4 * BLOCK_ROUND)
    a, b, c, d = (al.malloc(BLOCK_ROUND) for _ in range(4))
    assert len(made) == 1 and al.stats()["allocated_bytes"] == 4 * BLOCK_ROUND
    al.free(a)
    al.free(c)
    al.free(b)  # merges with a (before) and c (after)
    big = al.malloc(3 * BLOCK_ROUND)
    assert (big.segment, big.offset, big.size) == ("s1", 0, 3 * BLOCK_ROUND)
    assert made == [2 << 20]  # segments are at least 2 MiB
    e = al.malloc((2 << 20) + 1)  # nothing fits: a new segment, rounded up to 2 MiB
    assert e.segment == "s2" and made == [2 << 20, 4 << 20]
    assert al.stats() == {"segments": 2, "reserved_bytes": 6 << 20,
                          "allocated_bytes": 4 * BLOCK_ROUND + (2 << 20) + BLOCK_ROUND}
    with pytest.raises(GMAccessError, match="double free"):
        al.free(b)  # b was merged away: it is marked free
    assert al.round_size(0) == BLOCK_ROUND and al.round_size(BLOCK_ROUND + 1) == 2 * BLOCK_ROUND
    del d


@pytest.mark.usefixtures("no_leaks")
def test_poison_fills_freed_blocks() -> None:
    g = GlobalMemory(SEG, poison=0xAB)
    try:
        a = g.alloc("a", (100,), "int32")
        g.write(a, np.arange(100, dtype=np.int32))
        g.free(a)
        b = g.alloc("b", (BLOCK_ROUND,), "uint8")  # the whole rounded block is poisoned
        assert b.offset == a.offset
        assert (g.read(b) == 0xAB).all()
    finally:
        g.close()
    with pytest.raises(UsageError):
        GlobalMemory(SEG, poison=256)


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_device_poison_reaches_the_cores() -> None:
    with device(1, options=dataclasses.replace(OPTIONS, gm_poison=0x7F)) as dev:
        a = dev.to_device("a", np.arange(64, dtype=np.int32))
        dev.free(a)
        b = dev.empty("b", (64,), "int32")  # a's block, poisoned
        seen = filled(dev, "seen", (64,), value=0)
        dev.launch(k("copy_kernel"), b, seen)
        assert (dev.to_host(seen) == 0x7F7F7F7F).all()
        # zero-size tensors go through data_copy and launches like any other
        z_src, z_dst = dev.empty("zs", (0, 3), "int32"), dev.empty("zd", (0, 3), "int32")
        dev.launch(k("copy_kernel"), z_src, z_dst)
        assert dev.to_host(z_dst).shape == (0, 3)


@pytest.mark.usefixtures("no_leaks")
def test_zero_size_tensors(gm: GlobalMemory) -> None:
    before = gm.stats()
    z = gm.alloc("z", (0, 5), "float32")
    assert z.size == 0 and z.nbytes == 0 and z.segment == ""
    assert gm.read(z).shape == (0, 5)
    gm.write(z, np.zeros((0, 5), np.float32))
    assert gm.stats() == before
    gm.free(z)
    gm.free(z)  # nothing to free: harmless
    with pytest.raises(UsageError):
        gm.alloc("neg", (-1,), "float32")


@pytest.mark.usefixtures("no_leaks")
def test_double_free_is_an_error_even_after_the_block_was_reused(gm: GlobalMemory) -> None:
    a = gm.alloc("x", (64,), "int32")
    gm.free(a)
    with pytest.raises(UsageError, match="not a live allocation"):
        gm.free(a)
    b = gm.alloc("x", (64,), "int32")  # same name, shape and block as a
    assert _where(b) == _where(a)
    with pytest.raises(UsageError, match="not a live allocation"):
        gm.free(a)  # a stale handle must not free b's block
    gm.write(b, np.arange(64, dtype=np.int32))
    c = gm.alloc("c", (64,), "int32")
    assert _where(c) != _where(b)
    gm.free(b[10:20])  # a view frees its allocation
    with pytest.raises(UsageError):
        gm.free(b)
    with pytest.raises(UsageError):
        gm.free(c.carve("part", 0, (8,), "int32"))  # a carved buffer is not an allocation


@pytest.mark.usefixtures("no_leaks")
def test_gm_limit_and_closed_gm() -> None:
    g = GlobalMemory(SEG, max_bytes=SEG)
    try:
        g.alloc("a", (SEG,), "uint8")
        with pytest.raises(GMOutOfMemoryError):
            g.alloc("b", (1,), "uint8")
    finally:
        g.close()
    g.close()
    with pytest.raises(UsageError):
        g.alloc("c", (1,), "uint8")


# -- GM views -------------------------------------------------------------------------------------


def test_gm_view_indexing(gm: GlobalMemory) -> None:
    m = gm.alloc("m", (4, 6), "float32")
    gm.write(m, np.arange(24, dtype=np.float32).reshape(4, 6))
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    for index in [np.s_[1], np.s_[1:3], np.s_[:, 2], np.s_[1:3, ::2], np.s_[2, 1:5], np.s_[:, 5], np.s_[3, 5],
                  np.s_[4:4], np.s_[3:1]]:
        view = m[index]
        assert view.name == "m" and not view.outside
        np.testing.assert_array_equal(gm.read(view), host[index], err_msg=str(index))
    assert m[2].element_offset == 12 and m[:, 1].is_contiguous is False and m[1].is_contiguous
    for bad in [np.s_[::-1], np.s_[1, 2, 3], np.s_["x"], np.s_[1.0], np.s_[0:2.0]]:
        with pytest.raises(GMAccessError):
            m[bad]
    # Bounds as written (memcheck): never clipped, never counted from the end; reading through such
    # a view is an illegal read naming the requested range and the tensor.
    for bad, note, (e0, e1) in [
        (np.s_[4], "m[4] leaves axis 0 (size 4)", (24, 30)), (np.s_[-1], "m[-1] leaves axis 0 (size 4)", (-6, 0)),
        (np.s_[5:9], "m[5:9] leaves axis 0 (size 4)", (30, 54)),
        (np.s_[:, -1], "m[:, -1] leaves axis 1 (size 6)", (-1, 18)),
        (np.s_[0, 4:8], "m[0, 4:8] leaves axis 1 (size 6)", (4, 8)),
        (np.s_[-2:2], "m[-2:2] leaves axis 0 (size 4)", (-12, 12)),
    ]:
        view = m[bad]
        assert view.outside == note
        with pytest.raises(MemcheckError) as info:
            gm.read(view)
        assert str(info.value) == (f"illegal read of GM tensor m by a host read: elements [{e0}, {e1}) (bytes "
                                   f"[{4 * e0}, {4 * e1})) of a tensor of 24 float32 elements (96 bytes); {note}")
        assert info.value.details == {"kind": "illegal read", "memory": "GM", "tensor": "m", "start": 4 * e0,
                                      "stop": 4 * e1, "size": 96, "site": "", "call": "a host read"}
    assert m[1:9][0:2].outside == "m[1:9] leaves axis 0 (size 4)"  # what is sliced from it stays outside
    assert m[-1:2].reshape(18).outside and not m[6:6].size
    np.testing.assert_array_equal(gm.read(m.reshape(2, -1)), host.reshape(2, 12))
    with pytest.raises(GMAccessError):
        m.reshape(5, 5)
    with pytest.raises(GMAccessError):
        m[:, 1].reshape(4)
    with pytest.raises(GMAccessError, match="aligned"):
        m.carve("c", 4, (2,), "float32")
    with pytest.raises(GMAccessError, match="exceed"):
        m.carve("c", 64, (16,), "float32")
    c = m.carve("c", 32, (4,), "float32")
    np.testing.assert_array_equal(gm.read(c), host.reshape(-1)[8:12])


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_strided_views_in_a_kernel() -> None:
    with device(1) as dev:
        host = np.arange(12, dtype=np.float32).reshape(3, 4)
        m = dev.to_device("m", host)
        out = dev.to_device("out", np.zeros(3, np.float32))
        dev.launch(k("strided_views"), m, 2, out)
        np.testing.assert_array_equal(dev.to_host(out), host[:, 2])
        expected = host.copy()
        expected[1, ::2] = 7.0
        np.testing.assert_array_equal(dev.to_host(m), expected)


# -- local memory capacities and data_copy checks ----------------------------------------------------

CAP = {"UB": DEFAULT_SPEC.ub_bytes, "L1": DEFAULT_SPEC.l1_bytes, "L0A": DEFAULT_SPEC.l0a_bytes,
       "L0B": DEFAULT_SPEC.l0b_bytes, "L0C": DEFAULT_SPEC.l0c_bytes}


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_local_capacities() -> None:
    with device(1) as dev:
        for memory, cap in CAP.items():
            on = "vector" if memory == "UB" else "cube"
            label = "vector core 0 (block 0, sub 0)" if on == "vector" else "cube core 0 (block 0)"
            dev.launch(k("reserve_local"), memory, [cap], on)  # exactly full: fine
            dev.launch(k("reserve_local"), memory, [cap], on)  # reservations end with the launch
            for sizes in ([cap + 1], [cap // 2, cap // 2, 1], [cap - 31, 32]):
                with pytest.raises(KernelError) as ei:
                    dev.launch(k("reserve_local"), memory, sizes, on)
                err = ei.value
                assert err.details["error_type"] == "CapacityError", (memory, sizes)
                assert err.details["core"] == label
                assert isinstance(err.__cause__, CapacityError)
                assert err.__cause__.details["memory"] == memory
                assert err.__cause__.details["capacity"] == cap
                assert f"{memory} overflow" in str(err)
        with pytest.raises(KernelError, match="has no UB"):
            dev.launch(k("reserve_local"), "UB", [32], "cube")
        with pytest.raises(KernelError, match="has no L1"):
            dev.launch(k("reserve_local"), "L1", [32], "vector")
        with pytest.raises(KernelError) as ei:
            dev.launch(k("tbuf_get_too_big"))
        assert ei.value.details["error_type"] == "CapacityError"


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks", "time_limit")
@pytest.mark.parametrize("what,error_type,message", [
    ("dtype", "GMAccessError", "cast() first"),
    ("size", "GMAccessError", "has 8 elements"),
    ("gm_to_gm", "KernelAPIError", "GM to GM"),
    ("index", "MemcheckError", "raised MemcheckError: illegal read of GM tensor x by data_copy at "
                               "tests/kernels_for_tests.py:{line} (data_copy_misuse): elements [8, 9) (bytes [32, 36)) "
                               "of a tensor of 8 int32 elements (32 bytes); x[8] leaves axis 0 (size 8)"),
])
def test_data_copy_misuse(what: str, error_type: str, message: str) -> None:
    with device(1) as dev:
        x = dev.to_device("x", np.arange(8, dtype=np.int32))
        with pytest.raises(KernelError) as ei:
            dev.launch(k("data_copy_misuse"), x, what)
        assert ei.value.details["error_type"] == error_type
        assert ei.value.details["core"] == "vector core 0 (block 0, sub 0)"
        assert message.format(line=_line_of_index_misuse()) in str(ei.value)
        np.testing.assert_array_equal(dev.to_host(x), np.arange(8))


def _line_of_index_misuse() -> int:
    """The kernel line of data_copy_misuse's out-of-range copy (the report names it)."""
    import inspect

    from tests import kernels_for_tests

    lines, first = inspect.getsourcelines(kernels_for_tests.data_copy_misuse)
    return first + next(i for i, text in enumerate(lines) if "x[x.shape[0]]" in text)


# -- errors cross process boundaries intact -------------------------------------------------------


def _error_classes() -> list[type]:
    return [c for _, c in inspect.getmembers(errors_mod, inspect.isclass)
            if issubclass(c, MpnpuError) and c.__module__ == errors_mod.__name__]


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda c: c.__name__)
def test_every_error_survives_pickling(cls: type) -> None:
    err = cls("something went wrong on vector core 3", core="vector core 3 (block 1, sub 1)", core_id=5,
              remote_traceback="Traceback ...", others=["cube core 0 (block 0)"], nested={"a": [1, 2]})
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(err, protocol=protocol))
        assert type(back) is cls
        assert str(back) == str(err) == "something went wrong on vector core 3"
        assert back.details == err.details
        assert back.args == err.args
    plain = pickle.loads(pickle.dumps(cls("just a message")))
    assert str(plain) == "just a message" and plain.details == {}
    if cls is errors_mod.KernelError:
        assert back.remote_traceback == "Traceback ..."


def test_closing_gm_under_a_live_view_is_quiet_and_unlinks() -> None:
    """A view still alive at close (a Ctrl-C'd write's frame, kept by the stored interrupt) keeps its
    mapping; the segment's name is unlinked and nothing is printed at exit."""
    import subprocess
    import sys

    code = (
        "import os, numpy as np\n"
        "from mpnpu.runtime.gm import GlobalMemory\n"
        "g = GlobalMemory(1 << 20)\n"
        "t = g.alloc('x', (10,), 'float32')\n"
        "v = np.frombuffer(g._table.get(t.segment).buf, dtype=np.uint8)\n"
        "g.close()\n"
        "assert not os.path.exists('/dev/shm/' + t.segment)\n"
        "print(int(v[:4].sum()))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "0", r.stderr
    assert "Exception ignored" not in r.stderr and "BufferError" not in r.stderr, r.stderr


def test_a_segment_interrupted_while_it_is_zero_filled_is_ended(monkeypatch) -> None:
    """Ctrl-C or SIGTERM (a slot being stopped) inside create_segment's zero-fill: the segment is
    closed and unlinked there, not left for SharedMemory.__del__ to fail on at exit."""
    import types

    from mpnpu.runtime.gm import segments

    class Interrupted(np.ndarray):
        def fill(self, value):
            raise KeyboardInterrupt

    real_np = segments.np
    fake = types.SimpleNamespace(**{n: getattr(real_np, n) for n in ("uint8",)})
    fake.frombuffer = lambda buf, dtype: real_np.frombuffer(buf, dtype=dtype).view(Interrupted)
    monkeypatch.setattr(segments, "np", fake)
    from tests.conftest import own_segments as mine

    before, still_mapped = mine(), len(segments._STILL_MAPPED)
    with pytest.raises(KeyboardInterrupt):
        segments.create_segment(1 << 16, "test")
    assert mine() - before == set()  # unlinked
    assert len(segments._STILL_MAPPED) == still_mapped  # and closed: the view was dropped first


# -- what a launch carries -------------------------------------------------------------------------


def test_a_tensor_pickles_to_an_equal_tensor_with_the_same_dtype_object() -> None:
    with device(1) as dev:
        t = dev.to_device("x", np.arange(64, dtype=np.float32).reshape(8, 8))
        for view in (t, t[2:5, 1:3], t[6:10, :]):  # the last leaves its tensor
            back = pickle.loads(pickle.dumps(view, protocol=pickle.HIGHEST_PROTOCOL))
            assert back == view and back.dtype is view.dtype and back.outside == view.outside


@pytest.mark.parametrize("spec, name", [(np.float32, "float32"), (np.dtype(np.float16), "float16"),
                                        (np.dtype(np.uint16), "uint16"), ("bf16", "bfloat16"), ("HALF", "float16")])
def test_get_dtype_answers_the_same_the_second_time(spec, name: str) -> None:
    from mpnpu.runtime.dtypes import get_dtype

    assert get_dtype(spec).name == name and get_dtype(spec) is get_dtype(spec)


def test_get_dtype_of_a_numpy_scalar_is_its_own_type() -> None:
    from mpnpu.runtime.dtypes import get_dtype

    # (numpy scalars hash and compare as numbers: a cache keyed by them would mix them up)
    assert get_dtype(np.float32(1.0)).name == "float32" and get_dtype(np.int64(1)).name == "int64"


def test_a_tensor_pickles_every_field() -> None:
    from mpnpu.runtime.gm.tensor import _FIELDS, GlobalTensor

    assert _FIELDS == tuple(f.name for f in dataclasses.fields(GlobalTensor))


@pytest.mark.parametrize("spec", [np.dtype(np.complex64), "float8", [1, 2], 1, True])
def test_get_dtype_refuses_every_time(spec) -> None:
    from mpnpu.errors import DTypeError
    from mpnpu.runtime.dtypes import get_dtype

    for _ in range(2):
        with pytest.raises(DTypeError):
            get_dtype(spec)


def test_alloc_takes_any_integer_shape_and_builds_the_tensor_its_constructor_would(gm: GlobalMemory) -> None:
    """alloc's fast path (cached dtypes and strides, no dataclass __init__) makes the very tensor
    the constructor makes, for tuples, lists and numpy integers alike; bad shapes still fail."""
    from mpnpu.runtime.gm.tensor import GlobalTensor

    a = gm.alloc("a", (3, 5, 7), "float16")
    b = gm.alloc("b", [np.int64(3), np.int32(5), 7], "fp16")
    for t in (a, b):
        assert t == GlobalTensor(t.name, t.dtype, (3, 5, 7), t.segment, t.offset, (70, 14, 2), t.offset, 210,
                                 t.alloc_id)
        assert all(type(s) is int for s in t.shape)
    assert a.dtype is b.dtype  # the alias and the name give the one DType
    c = gm.alloc("c", (5, 3, 7), "float32")  # another shape, another itemsize: its own strides
    assert c.strides == (84, 28, 4) and c.nbytes == 420
    assert gm.alloc("d", (4, 0, 2), "float32").strides == (8, 8, 4)  # (a zero dimension counts as 1)
    with pytest.raises(UsageError, match="negative dimension"):
        gm.alloc("e", (2, -1), "float32")
    with pytest.raises(errors_mod.DTypeError, match="unknown dtype"):
        gm.alloc("f", (2,), "float17")


def test_strides_of_a_shape_with_non_int_dimensions_are_not_remembered_for_int_shapes() -> None:
    from mpnpu.runtime.gm.tensor import c_strides

    assert c_strides((4.0, 8.0), 4) == (32.0, 4)  # (a caller's own types come back to it)
    assert [type(s) for s in c_strides((4, 8), 4)] == [int, int]
