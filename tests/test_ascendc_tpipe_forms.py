"""TPipe / TQue forms real kernels use, through a compiled kernel of our own (tpipe_forms.cpp):
a TPipe member assigned from the entry's pipe is the same pipe (its buffers come after the entry's,
the UB capacity check counts both, GetTPipePtr's event ids are one set); a queue declared with a
TQueConfig (TQue<pos, depth, &conf>) whose bufferNumber / bufferLen InitBuffer must agree with;
DeQue() with no type, which still waits for the enqueued copy (racecheck sees the copy and the
vector read ordered by it, and a race without it). Each misuse is an error at the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import hazard_lines, kernel, line_of, needs_cxx

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]
SRC = "tpipe_forms.cpp"
N = 1024


def _run(drop: tuple[str, ...] = (), **defines: str):
    k = kernel(SRC, "forms", kernel_type=KernelType.AIV, **defines)
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=N).astype(np.float32), rng.normal(size=N).astype(np.float32)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.empty("out", 2 * N, "float32")
        r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), k, dev.to_device("x", x),
                            dev.to_device("y", y), out)
        return x, y, dev.to_host(out), r.trace


def _error_at(entry: str, line_text: str, message: str, **defines: str) -> None:
    k = kernel(SRC, entry, kernel_type=KernelType.AIV, **defines)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        names = {"forms": ("x", "y", "out"), "long_view": ("x", "out")}.get(entry, ("x",))
        args = [dev.empty(n, 2 * N, "float32") for n in names]
        with pytest.raises(KernelError, match=message) as e:
            dev.launch(k, *args)
    assert f"{SRC}:{line_of(SRC, line_text)}" in str(e.value), str(e.value)


def test_assigned_pipe_config_queues_and_untyped_deque() -> None:
    x, y, out, trace = _run()
    assert np.array_equal(out[:N], x * 2) and np.array_equal(out[N:], y + 1)
    assert analyze(trace) == []


@pytest.mark.parametrize("sync, first, second", [
    ("inQue.DeQue();", "DataCopy(a, xg", "Muls(b, a"),  # the untyped DeQue's MTE2 -> V wait
    ("sync.WaitFlag(f);  // the TQueSync wait", "Adds(c, c", "DataCopy(og[N], c"),  # TQueSync's V -> MTE3 wait
])
def test_without_the_wait_the_two_pipes_race(sync: str, first: str, second: str) -> None:
    _, _, _, trace = _run(drop=(f"{SRC}:{line_of(SRC, sync)}",))
    lines = hazard_lines(analyze(trace))
    assert ("RAW", str(line_of(SRC, first)), str(line_of(SRC, second))) in lines, lines


def test_the_assigned_pipe_counts_the_entry_pipes_buffers() -> None:
    # 190 KiB through the entry's pipe leaves too little for the member's queues: one UB, one count
    _error_at("forms", "member pipe InitBuffer", r"UB overflow: 4096 bytes asked with 194560 of",
              MPNPU_TEST_FIRST_BYTES=str(190 * 1024))


@pytest.mark.parametrize("defines, message", [
    ({"MPNPU_TEST_BUFFER_NUMBER": "2"}, "TQueConfig says bufferNumber 2, and InitBuffer asks for 1 buffers"),
    ({"MPNPU_TEST_BUFFER_LEN": "128"}, "TQueConfig says bufferLen 128, and InitBuffer asks for 4096 bytes"),
    ({"MPNPU_TEST_ND2NZ": "true"}, "nd2nz / nz2nd"),
])
def test_a_queue_config_initbuffer_disagrees_with_is_an_error_at_the_line(defines: dict[str, str],
                                                                          message: str) -> None:
    _error_at("forms", "member pipe InitBuffer", message, **defines)


def test_untyped_deque_with_nothing_enqueued_is_an_error_at_the_line() -> None:
    _error_at("empty_deque", "que.DeQue();  // nothing enqueued", "TQue::DeQue: nothing is enqueued")


def test_a_config_matching_initbuffer_runs() -> None:
    x, _, out, trace = _run(MPNPU_TEST_BUFFER_LEN=str(N * 4), MPNPU_TEST_BUFFER_NUMBER="1")
    assert np.array_equal(out[:N], x * 2)
    assert analyze(trace) == []


def test_a_tquesync_between_pipes_no_event_joins_is_an_error_at_the_line() -> None:
    _error_at("bad_sync", "sync.SetFlag(0);  // no MTE3_M event", r"TQueSync<PIPE_MTE3, PIPE_M>: no event goes")


def _long_view(**defines: str) -> np.ndarray:
    k = kernel(SRC, "long_view", kernel_type=KernelType.AIV, **defines)
    x = np.arange(64, dtype=np.float32)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.empty("out", 64, "float32")
        dev.launch(k, dev.to_device("x", x), out)
        return dev.to_host(out) - x


@pytest.mark.slow
def test_a_view_longer_than_its_tbuf_runs_while_accesses_stay_inside() -> None:
    # A documented limit the device does not check: the view alone changes nothing.
    assert np.array_equal(_long_view(), np.ones(64, np.float32))


@pytest.mark.slow
def test_an_access_past_the_tbuf_through_a_long_view_is_a_memcheck_report() -> None:
    k = kernel(SRC, "long_view", kernel_type=KernelType.AIV, MPNPU_TEST_TOUCH="72")
    with Device(1, kernel_type=KernelType.AIV) as dev:
        args = [dev.empty(n, 64, "float32") for n in ("x", "out")]
        with pytest.raises(KernelError) as e:
            dev.launch(k, *args)
    msg = str(e.value)
    assert "MemcheckError" in msg and "Adds" in msg, msg
    assert f"{SRC}:{line_of(SRC, '// the access')}" in msg, msg


@pytest.mark.slow
def test_a_tbuf_view_past_the_end_of_ub_is_an_error_at_the_line() -> None:
    _error_at("long_view", "// the long view", "TBuf::Get: 65536 elements of 4 bytes at byte 0 of a buffer at "
              "byte 0 run past the end of UB", MPNPU_TEST_VIEW="65536")


@pytest.mark.slow
def test_a_buffer_length_is_rounded_up_to_32_bytes_for_the_whole_buffer_tensor() -> None:
    """InitBuffer rounds a length that is not a multiple of 32 bytes up to one (the TPipe and
    TBuf pages): a 24-byte buffer of float gives an 8-element tensor, and a ReduceMax whose
    sharedTmpBuffer needs 32 bytes may use it (dynamic_quant's 6-element rows in the corpus)."""
    k = kernel("tbuf_len.cpp", "tbuf_len", kernel_type=KernelType.AIV)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.full(8, -1, np.int32))
        dev.launch(k, out)
        assert dev.to_host(out)[:4].tolist() == [8, 8, 8, 9]


@pytest.mark.slow
def test_queue_buffers_hold_event_ids_until_free_all_event_gives_them_back() -> None:
    """The TQue page's limit: a queue buffer holds an event id per direction, 8 of them at a
    position on this chip class (4 double-buffered queues). FreeAllEvent gives a queue's ids back,
    so a ninth queue made after it runs (the page's own example); a ninth buffer in use without it
    is an error at its AllocTensor."""
    x = np.random.default_rng(5).normal(size=12 * 64).astype(np.float32)
    k = kernel("many_queues.cpp", "many_queues", kernel_type=KernelType.AIV)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.zeros(12 * 64, np.float32))
        r = dev.launch_with(LaunchOptions(trace=True), k, dev.to_device("x", x), out)
        np.testing.assert_array_equal(dev.to_host(out)[:9 * 64], x[:9 * 64] + 1)
        assert analyze(r.trace) == []
    k2 = kernel("many_queues.cpp", "many_queues", kernel_type=KernelType.AIV, MPNPU_TEST_DOUBLE_BUFFERED="1")
    with Device(1, kernel_type=KernelType.AIV) as dev:
        with pytest.raises(KernelError, match=r"TQue::AllocTensor: all 8 event ids of HardEvent::MTE2_V are taken "
                                              r".*4 queues when double-buffered") as e:
            dev.launch(k2, dev.to_device("x", x), dev.empty("out", 12 * 64, "float32"))
    assert f"many_queues.cpp:{line_of('many_queues.cpp', 'the tile')}" in str(e.value), str(e.value)


@pytest.mark.slow
def test_a_queue_copied_by_value_names_the_same_buffers_and_their_event_ids() -> None:
    """The event ids belong to the buffers, so a copy of a queue that takes them first hands them to
    the original too: its FreeTensor's set meets the copy's still pending one (synccheck's duplicate
    event id), the defect ops-nn's apply_fused_ema_adam shows (docs/public-kernels.md)."""
    from mpnpu.racecheck.findings import DUPLICATE_ID
    from mpnpu.racecheck.synccheck import synccheck

    k = kernel("many_queues.cpp", "many_queues", kernel_type=KernelType.AIV, MPNPU_TEST_COPIED="1")
    x = np.arange(12 * 64, dtype=np.float32)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.zeros(12 * 64, np.float32))
        r = dev.launch_with(LaunchOptions(trace=True), k, dev.to_device("x", x), out)
        np.testing.assert_array_equal(dev.to_host(out)[:2 * 64], x[:2 * 64] + 1)
    found = [(f.kind, f.subject) for f in synccheck(r.trace)]
    assert (DUPLICATE_ID, "SetFlag<V_MTE2>(0)") in found, found


def _shared_init(block_dim: int, misuse: int = 0):
    k = kernel(SRC, "shared_init", kernel_type=KernelType.MIX_1_2, MPNPU_TEST_MISUSE=str(misuse))
    x = np.random.default_rng(4).normal(size=N).astype(np.float32)
    with Device(block_dim, kernel_type=KernelType.MIX_1_2) as dev:
        out = dev.empty("out", N, "float32")
        r = dev.launch_with(LaunchOptions(trace=True), k, dev.to_device("x", x), out)
        return x, dev.to_host(out), r.trace


@pytest.mark.slow
def test_every_core_may_initbuffer_the_other_kind_of_cores_memory() -> None:
    """InitBuffer only assigns addresses: a mix kernel's one Init on both kinds of core is legal."""
    x, out, trace = _shared_init(2)
    assert np.array_equal(out, x * 2)
    assert analyze(trace) == []


@pytest.mark.slow
@pytest.mark.parametrize("misuse, line_text, message", [
    (1, "// VECIN on the cube core", r"TQue::AllocTensor: VECIN \(UB\) is on vector cores, and this is a cube core"),
    (2, "// VECCALC on the cube core", r"TBuf::Get: VECCALC \(UB\) is on vector cores, and this is a cube core"),
    (3, "// A1 on a vector core", r"TQue::AllocTensor: A1 \(L1\) is on cube cores, and this is a vector core"),
])
def test_the_first_use_of_the_other_kind_of_cores_memory_is_the_error(misuse: int, line_text: str,
                                                                      message: str) -> None:
    with pytest.raises(KernelError, match=message) as e:
        _shared_init(1, misuse)
    assert f"{SRC}:{line_of(SRC, line_text)}" in str(e.value), str(e.value)


@pytest.mark.parametrize("how", [0, 1, 2], ids=["Destroy", "Reset", "DestroyWithoutPipeAll"])
def test_ending_a_pipe_forgets_the_sets_its_queues_left_so_the_next_pipe_pairs_its_own(how: int) -> None:
    """Two stages, each on a TPipe of its own; the first leaves its queues' last FreeTensor sets
    untaken, and the second's queues get the same event ids. Ending the first pipe forgets those sets,
    so each wait of the second stage pairs with its own stage's set: the output is right and
    racecheck finds nothing (ops-nn's embedding_dense_grad_v2 reported 4 hazards before)."""
    k = kernel("pipe_destroy.cpp", "pipe_destroy")
    x = np.arange(4 * 256, dtype=np.float32)
    with Device(1, kernel_type=KernelType.AIV) as dev:
        xd, out = dev.to_device("x", x), dev.to_device("out", np.zeros(4 * 256, np.float32))
        r = dev.launch_with(LaunchOptions(trace=True), k, xd, out, how)
        np.testing.assert_array_equal(dev.to_host(out), np.concatenate([2 * x[:512], x[512:] + 1]))
    assert analyze(r.trace) == []


def test_a_vector_core_may_use_a_tscm_buffer_as_its_own() -> None:
    """TSCM on a vector core (the pages: its window on the cube core's L1) is the vector core's own L1
    here, as in the vendor's CPU-debug library: filled and copied out on that core (ops-nn's
    quant_matmul_reduce_sum clears its output so on every core; before, TBuf::Get refused it)."""
    k = kernel("tscm_vector.cpp", "tscm_vector")
    with Device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.zeros(64, np.float32))
        r = dev.launch_with(LaunchOptions(trace=True), k, out, np.float32(2.5))
        np.testing.assert_array_equal(dev.to_host(out), np.full(64, 2.5, np.float32))
    assert analyze(r.trace) == []
