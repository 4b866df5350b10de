"""The cube core's kernel API on the multi-process device, against numpy: the instructions
(ND2NZ copy, LoadData, Mmad, Fixpipe), MatmulImpl on the cube cores of a mix kernel, Matmul driven
by the vector cores through REGIST_MATMUL_OBJ (client / server over GM and mode-2 flags), and what
memcheck, the race detector and the watchdog see of them. Our own kernels: tests/ascendc_kernels/cube/."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
from mpnpu.ascendc.build.compiler import CompileError
from mpnpu.ascendc.matmul_tiling import as_fields, matmul_tiling, workspace_bytes
from mpnpu.ascendc.tiling import tiling_layout
from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import line_of, needs_cxx, source
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
BF16 = "bfloat16"


@pytest.fixture(scope="module")
def kernels():
    """The three test kernels, built side by side (two compilers at a time)."""
    specs = {"basic": ("cube/mmad_basic.cpp", "mmad_basic", None), "impl": ("cube/mm_impl.cpp", "mm_impl", None),
             "client": ("cube/mm_client.cpp", "mm_client", KernelType.MIX_1_2),
             "client_1_1": ("cube/mm_client_1_1.cpp", "mm_client", KernelType.MIX_1_1)}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {k: pool.submit(compile_kernel, source(f), e, flags=WARN, kernel_type=kt)
                   for k, (f, e, kt) in specs.items()}
        built = {k: f.result() for k, f in futures.items()}
    built["layout"] = tiling_layout(source("cube/mm_tiling.h"), "MmTestTiling")
    return built


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits (round to nearest even), as uint16."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _from_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _inputs(rng, shape, kind):
    """(device array, its float32 value) of random inputs of ``kind`` (float16 / bfloat16 / float32)."""
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == BF16:
        bits = _bf16(x)
        return bits, _from_bf16(bits)
    dev = x.astype(kind)
    return dev, dev.astype(np.float32)


def _close(out, ref, rel=1e-5):
    scale = max(1.0, float(np.abs(ref).max()))
    assert np.abs(np.asarray(out, np.float32) - ref).max() <= rel * scale * 4, np.abs(out - ref).max()


# -- the instructions ---------------------------------------------------------------------------------------

TRANS_A, TRANS_B, ACC, BIAS, RELU, ATOMIC, NZ, UNIT, FROM_TABLE, HALF_BIAS, HF32 = 1, 2, 4, 8, 16, 32, 64, 128, 256, \
    512, 1024
TYPES = {("float16", "float32"): 0, (BF16, "float32"): 1, ("float32", "float32"): 2, ("float16", "float16"): 3,
         (BF16, BF16): 4}


def _basic(k, m, n, kk, flags, src="float16", dst="float32", seed=0):
    rng = _rng(seed)
    a_dev, a = _inputs(rng, (m, kk), src)
    b_dev, b = _inputs(rng, (kk, n), src)
    bias = rng.standard_normal(-(-n // 16) * 16).astype(np.float32)
    if flags & HALF_BIAS:  # (given as half; its float values are the reference's)
        bias = bias.astype(np.float16).astype(np.float32)
    mp, np_ = -(-m // 16) * 16, -(-n // 16) * 16
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    out_kind = np.uint16 if dst == BF16 else np.dtype(dst)
    c_init = np.zeros(mp * np_, out_kind) if flags & NZ else (_bf16(c0) if dst == BF16 else c0.astype(dst))
    with device(1, kernel_type=KernelType.AIC) as dev:
        args = [dev.to_device("a", a_dev.T.copy() if flags & TRANS_A else a_dev),
                dev.to_device("b", b_dev.T.copy() if flags & TRANS_B else b_dev),
                dev.to_device("bias", bias.astype(np.float16) if flags & HALF_BIAS else bias),
                dev.to_device("c", c_init)]
        dev.launch(k, *args, m, n, kk, flags, TYPES[(src, dst)])
        out = dev.to_host(args[3])
    out = _from_bf16(out) if dst == BF16 else out.astype(np.float32)
    ref = a @ b
    if flags & ACC:
        ref = 2 * ref
    if flags & BIAS:
        ref = ref + bias[:n]
    if flags & RELU:
        ref = np.maximum(ref, 0)
    if flags & NZ:  # 16-column blocks of mp rows each
        out = out.reshape(np_ // 16, mp, 16)[:, :m, :].transpose(1, 0, 2).reshape(m, np_)[:, :n]
    if flags & ATOMIC:
        ref = ref + (_from_bf16(_bf16(c0)) if dst == BF16 else c0.astype(dst).astype(np.float32))
    return out, ref


def test_a_half_bias_becomes_float_on_its_way_into_the_bias_table(kernels) -> None:
    out, ref = _basic(kernels["basic"], 48, 64, 32, BIAS | HALF_BIAS, seed=3)
    _close(out, ref)


def test_hf32_mode_on_is_refused_at_the_call(kernels) -> None:
    line = line_of("cube/mmad_basic.cpp", "SetHF32Mode(bool(flags & 1024));")
    with pytest.raises(KernelError, match=r"SetHF32Mode\(enable\)") as e:
        _basic(kernels["basic"], 16, 16, 16, HF32)
    assert f"cube/mmad_basic.cpp:{line}" in str(e.value)


@pytest.mark.parametrize("flags", [0, TRANS_A, TRANS_B, TRANS_A | TRANS_B, ACC, BIAS, RELU, ATOMIC, NZ,
                                   ACC | BIAS | TRANS_B, BIAS | FROM_TABLE])
def test_nd2nz_loaddata_mmad_fixpipe_equal_numpy(kernels, flags) -> None:
    out, ref = _basic(kernels["basic"], 64, 48, 32, flags, seed=flags)
    _close(out, ref)


@pytest.mark.parametrize("m,n,k", [(30, 40, 70), (16, 16, 16), (1, 32, 48)])
def test_tiles_that_are_not_whole_fractals(kernels, m, n, k) -> None:
    # k and n are padded inside the fractals (ND2NZ zero-fills the columns; Mmad ignores the
    # rows beyond k); m == 1 reads A as a row (GEMV)
    out, ref = _basic(kernels["basic"], m, n, k, 0 if m > 1 else TRANS_B)
    _close(out, ref)


@pytest.mark.parametrize("src,dst,flags", [(BF16, "float32", 0), ("float32", "float32", TRANS_B),
                                           ("float16", "float16", BIAS), (BF16, BF16, TRANS_A)])
def test_other_element_types(kernels, src, dst, flags) -> None:
    out, ref = _basic(kernels["basic"], 48, 32, 64, flags, src, dst)
    rel = 1e-5 if dst == "float32" else 8e-3  # a 16-bit C is rounded once, at Fixpipe
    _close(out, ref, rel)


def test_racecheck_sees_the_instructions_pipes(kernels) -> None:
    # the kernel orders MTE2 -> MTE1 -> M -> FIX with flags: no hazard; without the wait before
    # Fixpipe, Fixpipe's read of L0C races Mmad's write (local memory, inside the cube core)
    wait = f"cube/mmad_basic.cpp:{line_of('cube/mmad_basic.cpp', 'WaitFlag<HardEvent::M_FIX>(EVENT_ID0);')}"
    found = {}
    for drop in ((), (wait,)):
        with device(1, kernel_type=KernelType.AIC) as dev:
            args = [dev.to_device("a", np.ones((64, 32), np.float16)),
                    dev.to_device("b", np.ones((32, 48), np.float16)),
                    dev.to_device("bias", np.ones(48, np.float32)), dev.to_device("c", np.zeros(64 * 48, np.float32))]
            r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=drop), kernels["basic"], *args,
                                64, 48, 32, TRANS_A | ACC | BIAS, 0)
        found[drop] = analyze(r.trace)
    assert found[()] == []
    (h,) = [h for h in found[(wait,)] if h.scope == "local"]
    assert (h.kind, h.tensor, h.first.pipe, h.second.pipe) == ("RAW", "L0C", "PIPE_M", "PIPE_FIX")
    assert h.second.site == f"cube/mmad_basic.cpp:{line_of('cube/mmad_basic.cpp', 'Fixpipe(cGm, c1, fp);')}"


def test_unit_flags_order_mmad_and_fixpipe(kernels) -> None:
    # unitFlag 3 on both: the Fixpipe waits for the Mmad without the M -> FIX flag (no hazard, C right)
    wait = f"cube/mmad_basic.cpp:{line_of('cube/mmad_basic.cpp', 'WaitFlag<HardEvent::M_FIX>(EVENT_ID0);')}"
    a, b = np.ones((64, 32), np.float16), np.ones((32, 48), np.float16)
    with device(1, kernel_type=KernelType.AIC) as dev:
        c = dev.to_device("c", np.zeros(64 * 48, np.float32))
        r = dev.launch_with(LaunchOptions(trace=True, drop_syncs=(wait,)), kernels["basic"], dev.to_device("a", a),
                            dev.to_device("b", b), dev.to_device("bias", np.zeros(48, np.float32)), c, 64, 48, 32,
                            UNIT, 0)
        np.testing.assert_array_equal(dev.to_host(c).reshape(64, 48), np.full((64, 48), 32, np.float32))
    assert analyze(r.trace) == []

# -- MatmulImpl on the cube cores of a mix 1:2 kernel ---------------------------------------------------------

M_TRANS_A, M_TRANS_B, M_BIAS, M_ATOMIC, M_ITERATE, M_CO1, M_DATACOPY = 1, 2, 4, 8, 16, 32, 64


def _impl(kernels, m, n, k, mode, *, cores=1, block_dim=1, rounds=1, src="float16", dst="float32", seed=1,
          tiling_bias=None, **base):
    rng = _rng(seed)
    a_dev, a = _inputs(rng, (m, k), src)
    b_dev, b = _inputs(rng, (k, n), src)
    bias = rng.standard_normal(n).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(np.float32).astype(dst)
    t = matmul_tiling(m, n, k, in_dtype="float16" if src == BF16 else src, out_dtype=dst, cores=cores,
                      bias=bool(mode & M_BIAS) if tiling_bias is None else tiling_bias, **base)
    packed = kernels["layout"].pack({**as_fields(t, "cube"), "mode": mode, "rounds": rounds})
    with device(block_dim, kernel_type=KernelType.MIX_1_2) as dev:
        args = [dev.to_device("a", a_dev.T.copy() if mode & M_TRANS_A else a_dev),
                dev.to_device("b", b_dev.T.copy() if mode & M_TRANS_B else b_dev),
                dev.to_device("bias", bias), dev.to_device("c", c0), dev.to_device("tiling", packed)]
        dev.launch(kernels["impl"], *args, TYPES[(src, dst)])
        out = dev.to_host(args[3]).astype(np.float32)
    ref = a @ b + (bias if mode & M_BIAS else 0)
    if mode & M_ATOMIC:
        ref = c0.astype(np.float32) + rounds * ref
    return out, ref


@pytest.mark.parametrize("m,n,k,mode,base", [
    (128, 256, 64, 0, {}),
    (128, 256, 128, M_ITERATE, {}),
    (100, 70, 50, 0, {"base_m": 32, "base_n": 32, "base_k": 16}),      # tails in M, N and K
    (100, 70, 50, M_ITERATE | M_BIAS, {"base_m": 32, "base_n": 48}),
    (96, 64, 80, M_TRANS_A | M_TRANS_B, {"base_m": 32}),
    (64, 96, 32, M_TRANS_B | M_BIAS | M_ITERATE, {"base_n": 32}),
])
def test_matmul_impl_equals_numpy(kernels, m, n, k, mode, base) -> None:
    out, ref = _impl(kernels, m, n, k, mode, **base)
    _close(out, ref)


@pytest.mark.parametrize("mode", [0, M_ITERATE])
def test_a_tiling_with_a_bias_the_kernel_never_sets_adds_none(kernels, mode) -> None:
    # isBias and no SetBias (kernels that add a bias of another type on the vector cores do this)
    out, ref = _impl(kernels, 64, 96, 32, mode, tiling_bias=True, base_m=32, base_n=32)
    _close(out, ref)


def test_matmul_impl_iterate_all_accumulates_atomically_into_gm(kernels) -> None:
    out, ref = _impl(kernels, 64, 80, 48, M_ATOMIC, rounds=3, base_m=32, base_n=32)
    _close(out, ref)


def test_matmul_impl_splits_over_two_cube_cores(kernels) -> None:
    out, ref = _impl(kernels, 200, 300, 96, M_BIAS | M_ITERATE, cores=2, block_dim=2, base_m=64, base_n=64, base_k=32)
    _close(out, ref)


@pytest.mark.parametrize("mode", [M_CO1, M_CO1 | M_DATACOPY | M_BIAS | M_TRANS_A])
def test_matmul_impl_iterate_into_the_kernels_own_co1(kernels, mode) -> None:
    # Iterate(false, co1Tensor) leaves each tile in L0C (NZ); the kernel moves it with Fixpipe or DataCopy
    out, ref = _impl(kernels, 80, 96, 48, mode, base_m=32, base_n=64)
    _close(out, ref)


@pytest.mark.parametrize("src,dst", [(BF16, "float32"), ("float32", "float32"), ("float16", "float16")])
def test_matmul_impl_element_types(kernels, src, dst) -> None:
    out, ref = _impl(kernels, 64, 64, 48, M_TRANS_B, src=src, dst=dst)
    _close(out, ref, 1e-5 if dst == "float32" else 8e-3)


# -- Matmul from the vector cores: REGIST_MATMUL_OBJ -----------------------------------------------------------

C_TRANS_B, C_BIAS, C_ATOMIC, C_ITERATE, C_UB, C_ASYNC, C_EARLY, C_NO_END, C_SUB0 = 2, 4, 8, 16, 32, 64, 128, 256, 512
C_SCRATCH = 16384
C_UB_ALL, C_TWO, C_CROSS, C_ASYNC_ITERATE, C_CROSS_MANY = 1024, 2048, 4096, 8192, 32768
C_CROSS_FLAG, C_DSB = 65536, 131072


def _client(kernels, m, n, k, mode, *, block_dim=1, rounds=1, a_rows=None, trace=False, seed=2, kt=KernelType.MIX_1_2,
            launches=1, workspace=None, drop=(), **base):
    rng = _rng(seed)
    a = rng.standard_normal((a_rows or m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    c0 = np.zeros((m, n), np.float32) if mode & C_EARLY else rng.standard_normal((m, n)).astype(np.float32)
    vectors = 2 if kt is KernelType.MIX_1_2 else 1
    t = matmul_tiling(m, n, k, cores=vectors * block_dim, bias=bool(mode & C_BIAS), **base)
    packed = kernels["layout"].pack({**as_fields(t, "cube"), "mode": mode, "rounds": rounds})
    with device(block_dim, kernel_type=kt) as dev:
        args = [dev.to_device("a", a), dev.to_device("b", b.T.copy() if mode & C_TRANS_B else b),
                dev.to_device("bias", bias), dev.to_device("c", c0), dev.to_device("peek", np.zeros(64, np.float32)),
                dev.to_device("workspace", np.zeros(workspace or workspace_bytes(block_dim, 2), np.uint8)),
                dev.to_device("tiling", packed)]
        for _ in range(launches):
            dev.gm.write(args[3], c0)
            client = kernels["client" if kt is KernelType.MIX_1_2 else "client_1_1"]
            result = dev.launch_with(LaunchOptions(trace=trace, drop_syncs=drop), client, *args)
        out, peek = dev.to_host(args[3]), dev.to_host(args[4])
    ref = a[:m].astype(np.float32) @ b.astype(np.float32) + (bias if mode & C_BIAS else 0)
    if mode & C_ATOMIC:
        ref = c0 + rounds * ref
    if mode & C_TWO:
        ref = ref + a[:m].astype(np.float32) @ b.astype(np.float32)
    return out, ref, peek, result, t


@pytest.mark.parametrize("block_dim", [1, 2])
@pytest.mark.parametrize("mode", [0, C_ITERATE | C_TRANS_B | C_BIAS, C_UB, C_UB_ALL, C_ASYNC, C_TWO | C_ITERATE,
                                  C_UB | C_ASYNC_ITERATE])
def test_vector_cores_drive_their_cube_core(kernels, block_dim, mode) -> None:
    out, ref, *_ = _client(kernels, 128 * block_dim, 256, 64, mode, block_dim=block_dim, base_m=64, base_n=128)
    _close(out, ref)


def test_c_in_ub_may_be_named_veccalc_or_vecout(kernels) -> None:
    """The pages' examples give C in UB as VECCALC as well as VECIN (public rnn kernels do too)."""
    for pos in ("VECCALC", "VECOUT"):
        built = dict(kernels, client=compile_kernel(source("cube/mm_client.cpp"), "mm_client", flags=WARN,
                                                    defines={"MM_CLIENT_C_POS": pos}, kernel_type=KernelType.MIX_1_2))
        for mode in (C_UB, C_UB_ALL):
            out, ref, *_ = _client(built, 128, 256, 64, mode, base_m=64, base_n=128)
            _close(out, ref)


def test_a_cube_only_program_computes_on_the_cube_core_in_a_mix_kernel() -> None:
    """ASCENDC_CUBE_ONLY defined: REGIST_MATMUL_OBJ on the cube core of a mix kernel registers its Matmul and
    returns (it used to serve vector cores that never ask, a deadlock); the cube core computes C itself and
    hands it to its vector cores with a flag."""
    k = compile_kernel(source("cube/mm_cube_only.cpp"), "mm_cube_only", flags=WARN, kernel_type=KernelType.MIX_1_2)
    layout = tiling_layout(source("cube/mm_tiling.h"), "MmTestTiling")
    rng = _rng(5)
    m, n, kk = 64, 64, 32
    a = rng.standard_normal((m, kk)).astype(np.float16)
    b = rng.standard_normal((kk, n)).astype(np.float16)
    t = matmul_tiling(m, n, kk, cores=1)
    packed = layout.pack({**as_fields(t, "cube"), "mode": 0, "rounds": 1})
    with device(1, kernel_type=KernelType.MIX_1_2) as dev:
        args = [dev.to_device("a", a), dev.to_device("b", b), dev.empty("c", m * n, "float32"),
                dev.empty("out", m * n, "float32"),
                dev.to_device("workspace", np.zeros(workspace_bytes(1, 1), np.uint8)), dev.to_device("tiling", packed)]
        dev.launch(k, *args)
        out = dev.to_host(args[3]).reshape(m, n)
    _close(out, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("mode", [C_ITERATE | C_BIAS, C_UB_ALL | C_TRANS_B])
def test_a_mix_1_1_kernel_has_one_client_per_cube_core(kernels, mode) -> None:
    out, ref, *_ = _client(kernels, 128, 192, 64, mode, block_dim=2, kt=KernelType.MIX_1_1, base_m=64, base_n=64)
    _close(out, ref)


def test_the_same_device_runs_the_client_kernel_again(kernels) -> None:
    # core processes are reused: the client state, the workspace rings and the flags start afresh
    for seed in (3, 4):
        out, ref, *_ = _client(kernels, 128, 128, 64, C_ITERATE, seed=seed, base_m=64, base_n=64, launches=2)
        _close(out, ref)


def test_client_rounds_accumulate_atomically_with_tails(kernels) -> None:
    out, ref, *_ = _client(kernels, 96, 80, 40, C_ATOMIC, block_dim=2, rounds=3, base_m=32, base_n=32, base_k=16)
    _close(out, ref)


def test_one_vector_core_computes_while_the_other_only_ends(kernels) -> None:
    # the server's rounds pair the vector cores' requests; the one that ended takes part with empty ones
    out, ref, _, _, t = _client(kernels, 128, 128, 64, C_SUB0 | C_ITERATE, base_m=32, base_n=32)
    sm = t["singleCoreM"]
    mine = slice(0, sm)  # part 0 (vector core 0); part 1 (vector core 1) is left as it was
    _close(out[mine], ref[mine])
    assert not np.allclose(out[sm:], ref[sm:])


def test_vector_cores_meeting_in_a_syncall_between_their_requests(kernels) -> None:
    # vector core 0: IterateAll then SyncAll; vector core 1: SyncAll then IterateAll. The server
    # pairs requests; core 1's SyncAll sends an empty one, so core 0's is served and both meet.
    out, ref, *_ = _client(kernels, 128, 128, 64, C_CROSS, base_m=64, base_n=64)
    _close(out, ref)


def _count(events, kind: str, flag: int) -> int:
    return sum(type(e).__name__ == kind and e.flag_id == flag for e in events)


@pytest.mark.parametrize("mode,trace,launches", [(C_CROSS_MANY, False, 1), (C_CROSS_MANY, True, 2),
                                                 (C_CROSS_FLAG, True, 1)])
def test_a_vector_core_held_in_a_sync_does_not_hold_back_its_siblings_requests(kernels, mode, trace,
                                                                              launches) -> None:
    # vector core 0: 16 tiles, an Iterate and a GetTensorC each (32 requests, more than the ring's 16),
    # then SyncAll<true> (or a flag set); vector core 1 waits there first. The server pairs the two
    # cores' requests; core 1's stand-in answers each of core 0's with an empty one and takes the
    # answers, so core 0 gets there (before, the two waited for each other until the watchdog's report).
    out, ref, _, result, _ = _client(kernels, 128, 128, 64, mode, base_m=16, base_n=32, trace=trace,
                                     launches=launches)
    _close(out, ref)
    if trace:  # the stand-in's sets and waits are in core 1's trace, paired with the server's rounds
        assert analyze(result.trace) == []
        cube, *vectors = result.trace.events
        rounds = _count(cube, "FlagWaitEvent", 0)
        assert rounds > 16 and [_count(v, "FlagSetEvent", 0) for v in vectors] == [rounds, rounds]
        assert [_count(v, "FlagWaitEvent", 1) for v in vectors] == [rounds, rounds]
        # ... as the API's own syncs (no sync point name), its waits after the kernel's sync: a wait
        # recorded before it could be for an answer to a request made after it
        held = vectors[1]
        sync = next(i for i, e in enumerate(held) if type(e).__name__ in ("SyncAllEvent", "FlagWaitEvent")
                    and e.name)
        assert not any(type(e).__name__ == "FlagWaitEvent" and e.flag_id == 1 for e in held[:sync])
        stand_in = [e for e in held if type(e).__name__ in ("FlagSetEvent", "FlagWaitEvent")
                    and e.site == held[sync].site and e is not held[sync]]
        assert len(stand_in) > 16 and all(e.name == "" for e in stand_in)


def test_a_data_sync_barrier_holds_nothing_so_nothing_stands_in(kernels) -> None:
    """DataSyncBarrier lets the client post its empty request, as before any of the kernel's syncs, but it
    holds no core: no stand-in starts there, so every later request and answer is the client's own."""
    out, ref, _, result, _ = _client(kernels, 128, 128, 64, C_DSB, base_m=16, base_n=32, trace=True)
    _close(out, ref)
    assert analyze(result.trace) == []
    held = result.trace.events[2]
    dsb = line_of("cube/mm_client.cpp", "DataSyncBarrier<MemDsbT::ALL>();")
    at_dsb = [e for e in held if type(e).__name__ in ("FlagSetEvent", "FlagWaitEvent")
              and e.site == f"cube/mm_client.cpp:{dsb}"]
    assert [(type(e).__name__, e.flag_id) for e in at_dsb] == [("FlagSetEvent", 0)]


def test_out_of_range_set_tensor_a_is_memcheck_at_the_kernel_line(kernels) -> None:
    with pytest.raises(KernelError) as info:
        _client(kernels, 128, 256, 64, 0, a_rows=100)
    text = str(info.value)
    line = line_of("cube/mm_client.cpp", "mm.IterateAll(cPart, atomic);  // the plain case")
    set_a = line_of("cube/mm_client.cpp", "mm.SetTensorA(aGm[m0 * ct.Ka]);")
    assert "raised MemcheckError: illegal read of GM tensor a by Matmul::IterateAll (reading A of SetTensorA at " \
           f"cube/mm_client.cpp:{set_a}) at cube/mm_client.cpp:{line} (mm_client)" in text
    assert "of a tensor of 6400 float16 elements" in text


def test_racecheck_orders_the_servers_accesses_by_the_handshakes(kernels) -> None:
    for mode in (0, C_UB, C_ITERATE | C_BIAS):
        *_, result, _ = _client(kernels, 128, 128, 64, mode, trace=True, base_m=64, base_n=64)
        assert analyze(result.trace) == [], mode
        cube = result.trace.events[0]  # core 0: the cube core
        out = "workspace" if mode & C_UB else "c"  # C for a vector core's UB goes through the workspace
        writes = {(e.site, e.pipe) for e in cube if getattr(e, "tensor", None) == out and e.kind != "R"}
        reads = {e.tensor for e in cube if getattr(e, "tensor", None) in ("a", "b") and e.kind == "R"}
        assert writes and {p for _, p in writes} == {"PIPE_FIX"} and reads == {"a", "b"}
        waits = [e for e in cube if type(e).__name__ == "FlagWaitEvent"]
        assert waits and {(w.mode, w.flag_id) for w in waits} == {(2, 0)}


def test_the_matmul_apis_own_syncs_are_no_sync_points_of_the_kernel(kernels) -> None:
    """The client's requests, the server's answers and its barriers are named at the kernel's line that
    called the API, but they are the API's: no sync point name (mutation testing makes no mutant of them),
    and dropping that line drops none of them (C still right, nothing recorded as dropped). The kernel's
    own syncs around the API stay sync points."""
    from mpnpu.directed.mutation import executed_sync_sites
    from mpnpu.runtime.trace import DroppedSyncEvent, FlagSetEvent, FlagWaitEvent, PipeSyncEvent

    src = "cube/mm_client.cpp"
    plain = f"{src}:{line_of(src, 'mm.IterateAll(cPart, atomic);  // the plain case')}"
    ub_wait = f"{src}:{line_of(src, 'mm.IterateAll(ub);')}"
    for mode, api_line in ((0, plain), (C_UB_ALL, ub_wait)):
        *_, result, _ = _client(kernels, 128, 128, 64, mode, trace=True, base_m=64, base_n=64)
        syncs = [e for core in result.trace.events for e in core
                 if isinstance(e, (FlagSetEvent, FlagWaitEvent, PipeSyncEvent)) and e.site == api_line]
        assert syncs and all(e.name == "" for e in syncs), mode
        flags = {(e.mode, e.flag_id) for e in syncs if isinstance(e, (FlagSetEvent, FlagWaitEvent))}
        assert flags == {(2, 0), (2, 1)}, mode  # the request and answer flags, mode bits intact
        sites = executed_sync_sites(result.trace)
        assert api_line not in sites, mode
        if mode & C_UB_ALL:  # the kernel's own SetFlag / WaitFlag after the IterateAll into UB
            own = f"{src}:{line_of(src, 'mm.IterateAll(ub);') + 1}"
            assert sites[own]["call"] == "SetFlag"
        out, ref, _, dropped, _ = _client(kernels, 128, 128, 64, mode, trace=True, drop=(api_line,),
                                          base_m=64, base_n=64)
        _close(out, ref)
        assert not [e for core in dropped.trace.events for e in core if isinstance(e, DroppedSyncEvent)], mode
        assert analyze(dropped.trace) == [], mode


def test_the_kernels_own_data_at_the_start_of_a_full_system_workspace_leaves_the_matmul_server_alone(kernels) -> None:
    """A kernel may keep its own data at the start of its workspace argument (two dev kit samples keep C there):
    in a workspace that holds the whole 16 MiB system workspace the server's state lies at its end."""
    from mpnpu.ascendc.matmul_tiling import SYS_WORKSPACE_BYTES

    out, ref, *_ = _client(kernels, 128, 128, 64, C_SCRATCH, block_dim=2, workspace=SYS_WORKSPACE_BYTES + 16384)
    _close(out, ref)


@pytest.mark.slow
def test_chunks_that_do_not_fit_the_system_workspace_sit_at_the_tensors_end_and_never_overlap(kernels) -> None:
    """Two objects on 16 AI cores need more than the 16 MiB system workspace: in a larger tensor the
    server's chunks lie at its end, block by block (the kernel's own data at its start is left alone)."""
    from mpnpu.ascendc.matmul_tiling import SYS_WORKSPACE_BYTES

    blocks = 16
    assert workspace_bytes(blocks, 2) > SYS_WORKSPACE_BYTES
    out, ref, *_ = _client(kernels, 16 * 2 * blocks, 64, 32, C_SCRATCH | C_TWO | C_UB, block_dim=blocks, base_m=16,
                           base_n=64, workspace=SYS_WORKSPACE_BYTES + workspace_bytes(blocks, 2))
    _close(out, ref)


def test_reading_c_before_the_async_iterate_all_completed_is_a_raw(kernels) -> None:
    out, ref, peek, result, _ = _client(kernels, 128, 128, 64, C_EARLY, trace=True, base_m=64, base_n=64)
    _close(out, ref)
    hazards = [h for h in analyze(result.trace) if h.tensor == "c" and h.kind == "RAW"]
    assert hazards
    write = line_of("cube/mm_client.cpp", "mm.IterateAll<false>(cPart")
    h = hazards[0]
    assert h.first.core.startswith("cube core") and h.first.site == f"cube/mm_client.cpp:{write}"
    assert h.second.core.startswith("vector core")
    assert h.second.site in {f"cube/mm_client.cpp:{line_of('cube/mm_client.cpp', x)}"
                             for x in ("cPart.GetValue(0)", "DataCopy(ub, cPart, 8)")}


def test_a_client_of_two_objects_that_never_calls_end_finishes_with_its_kernel(kernels) -> None:
    # (End is what switching between objects needs; kernels that never call it finish at their end)
    out, ref, *_ = _client(kernels, 128, 128, 64, C_NO_END)
    _close(out, ref)


# -- what is refused ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("a_type,message", [
    ("TPosition::VECOUT, CubeFormat::ND", r"VECOUT inputs are not implemented"),
    ("TPosition::GM, CubeFormat::ZN", r"takes A in CubeFormat::ND, NZ or VECTOR and B in CubeFormat::ND or NZ"),
])
def test_an_unimplemented_matmul_form_does_not_compile(tmp_path, a_type, message) -> None:
    src = tmp_path / "form.cpp"
    src.write_text('#include "lib/matmul_intf.h"\nusing namespace AscendC;\n'
                   "extern \"C\" __global__ __aicore__ void k(GM_ADDR x) {\n"
                   f"    Matmul<MatmulType<{a_type}, half>, MatmulType<TPosition::GM, "
                   "CubeFormat::ND, half>, MatmulType<TPosition::GM, CubeFormat::ND, float>> mm;\n    (void)x;\n}\n")
    with pytest.raises(CompileError, match=message):
        compile_kernel(str(src), "k")


def test_a_vecin_c_with_the_default_bias_type_compiles_and_set_bias_on_it_does_not(tmp_path) -> None:
    """BIAS_TYPE defaults to C_TYPE: a Matmul with C in VECIN and no bias names a VECIN bias type, which
    is refused only where a GM bias is set on it."""
    def kernel(body: str) -> str:
        src = tmp_path / f"bias{len(body)}.cpp"
        src.write_text('#include "lib/matmul_intf.h"\nusing namespace AscendC;\n'
                       "extern \"C\" __global__ __aicore__ void k(GM_ADDR x) {\n"
                       "    Matmul<MatmulType<TPosition::GM, CubeFormat::ND, half>, MatmulType<TPosition::GM, "
                       "CubeFormat::ND, half>, MatmulType<TPosition::VECIN, CubeFormat::ND, float>> mm;\n"
                       f"    {body}\n    (void)x;\n}}\n")
        return str(src)

    compile_kernel(kernel("mm.DisableBias();"), "k", kernel_type=KernelType.MIX_1_2)
    with pytest.raises(CompileError, match=r"reads the bias from GM \(BIAS_TYPE's position GM\)"):
        compile_kernel(kernel("GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x); mm.SetBias(g);"), "k",
                       kernel_type=KernelType.MIX_1_2)


# -- the tiling helper -----------------------------------------------------------------------------------------


def test_tiling_helper_gives_what_a_cpu_debug_test_sets() -> None:
    t = matmul_tiling(128, 256, 64)
    expect = dict(usedCoreNum=1, M=128, N=256, Ka=64, Kb=64, singleCoreM=128, singleCoreN=256, singleCoreK=64,
                  baseM=128, baseN=256, baseK=64, depthA1=1, depthB1=1, stepM=1, stepN=1, stepKa=1, stepKb=1,
                  iterateOrder=0, dbL0A=2, dbL0B=2, dbL0C=1, isBias=0)
    assert {k: t[k] for k in expect} == expect
    t2 = matmul_tiling(300, 200, 70, cores=4, bias=True)
    assert (t2["singleCoreM"], t2["singleCoreN"], t2["usedCoreNum"], t2["isBias"]) == (160, 112, 4, 1)
    assert all(isinstance(v, int) for v in t2.values())
    assert workspace_bytes(2) == 2 * (64 + 512) * 1024
