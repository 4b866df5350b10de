"""MatmulCallBackFunc against numpy: a Matmul whose A and / or B reach L1 through the kernel's own copy
routines (CopyA1 / CopyB1) and / or whose C leaves L0C through its own copy-out routine (DataCopyOut),
with tails in M, N and K and L1 blocks of several base blocks (kernels/matmul_callback.cpp).

The routines are the only code that knows how A, B and C really lie in GM (A and B with wider rows
than the tiling says, C with wider rows and an offset), so a routine mpnpu did not call, or called
with other arguments, gives a wrong C; each call's arguments are logged and compared with the
documented ones as mpnpu reads them (blocks of stepM * baseM x stepKa * baseK of A, stepKb * baseK x
stepN * baseN of B, row / col the block's index)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
from mpnpu.ascendc.build.compiler import CompileError
from mpnpu.ascendc.matmul_tiling import workspace_bytes
from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]

KERNEL = Path(__file__).parent / "kernels" / "matmul_callback.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
CB_A, CB_B, CB_OUT = 1, 2, 4
ITERATE, REGIST, BIAS = 1, 2, 4
LOG_MAX = 4096
SENTINEL = np.float32(-12345)


@pytest.fixture(scope="module")
def kernel():
    return compile_kernel(str(KERNEL), "mm_cb", flags=WARN, kernel_type=KernelType.AIC)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def run_cb(kernel, m, n, k, cb, mode=0, base=(32, 32, 16), steps=(1, 1, 1, 1), pad=(8, 8, 8), off_c=5, seed=0,
           trace=False):
    """C = A x B (+ bias) through the routines ``cb`` picks. A is stored with rows K + pad[0] apart when
    CopyA1 reads it (else K), B with rows N + pad[1] apart when CopyB1 reads it (else N); the padding
    holds garbage. With DataCopyOut C is written rows N + pad[2] apart from element ``off_c`` on.
    Returns (C as the kernel left it, the reference, the log's records, the launch's result)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 4, (m, k)).astype(np.float16)  # (exact products and sums in float32)
    b = rng.integers(-4, 4, (k, n)).astype(np.float16)
    bias = rng.integers(-8, 8, n).astype(np.float32)
    lda = k + pad[0] if cb & CB_A else k
    ldb = n + pad[1] if cb & CB_B else n
    ldc, offc = (n + pad[2], off_c) if cb & CB_OUT else (n, 0)
    a_dev = np.full((m, lda), 60000, np.float16)
    a_dev[:, :k] = a
    b_dev = np.full((k, ldb), 60000, np.float16)
    b_dev[:, :n] = b
    c_size = offc + m * ldc + 64
    with device(1, kernel_type=KernelType.AIC) as dev:
        args = [dev.to_device("a", a_dev), dev.to_device("b", b_dev), dev.to_device("bias", bias),
                dev.to_device("c", np.full(c_size, SENTINEL, np.float32)),
                dev.to_device("log", np.zeros(1 + LOG_MAX * 8, np.int32))]
        r = dev.launch_with(LaunchOptions(trace=trace), kernel, *args, m, n, k, *base, *steps, lda, ldb, ldc, offc,
                            cb, mode)
        c = dev.to_host(args[3])
        log = dev.to_host(args[4])
    ref = a.astype(np.float32) @ b.astype(np.float32)
    if mode & BIAS:
        ref = ref + bias
    out = c[offc:offc + m * ldc].reshape(m, ldc)
    # nothing written outside C's rows: before it, the padding of each row, after it
    assert (c[:offc] == SENTINEL).all() and (out[:, n:] == SENTINEL).all() and (c[offc + m * ldc:] == SENTINEL).all()
    records = [tuple(int(v) for v in log[1 + i * 8:1 + i * 8 + 8]) for i in range(int(log[0]))]
    return out[:, :n], ref, records, r


def expected_records(m, n, k, cb, base=(32, 32, 16), steps=(1, 1, 1, 1)):
    """The routine calls mpnpu documents: per C tile (baseM x baseN, down M first), the A blocks holding
    its rows and the B blocks holding its columns, each over all of K; then the tile's copy-out."""
    bm, bn, bk = base
    step_m, step_n, step_ka, step_kb = steps
    am, ak = step_m * bm, step_ka * bk  # A's L1 block
    bkk, bnn = step_kb * bk, step_n * bn  # B's L1 block
    rec = []
    for ni in range(cdiv(n, bn)):
        for mi in range(cdiv(m, bm)):
            m0, n0 = mi * bm, ni * bn
            tm, tn = min(bm, m - m0), min(bn, n - n0)
            if cb & CB_A:
                row = m0 // am
                rec += [(1, row, col, min(am, m - row * am), min(ak, k - col * ak), 0, 0, 0)
                        for col in range(cdiv(k, ak))]
            if cb & CB_B:
                col = n0 // bnn
                rec += [(2, row, col, min(bkk, k - row * bkk), min(bnn, n - col * bnn), 0, 0, 0)
                        for row in range(cdiv(k, bkk))]
            if cb & CB_OUT:
                rec.append((3, m0 * n + n0, tm, tn, cdiv(tm, 16) * 16, n, tn, 1))
    return rec


STEPS = [(1, 1, 1, 1), (2, 2, 2, 3)]


@pytest.mark.parametrize("steps", STEPS)
@pytest.mark.parametrize("cb", [CB_A, CB_B, CB_A | CB_B, CB_OUT, CB_A | CB_B | CB_OUT])
def test_callbacks_equal_numpy_with_tails(kernel, cb, steps) -> None:
    # M 40, N 56, K 72 with base blocks 32 x 32 x 16: tails in M, N and K (and in each L1 block)
    out, ref, records, _ = run_cb(kernel, 40, 56, 72, cb, steps=steps, seed=cb)
    np.testing.assert_array_equal(out, ref)
    assert sorted(records) == sorted(expected_records(40, 56, 72, cb, steps=steps))


@pytest.mark.parametrize("mode", [ITERATE, REGIST | BIAS, ITERATE | REGIST | BIAS])
def test_callbacks_with_iterate_bias_and_regist(kernel, mode) -> None:
    cb = CB_A | CB_B | CB_OUT
    out, ref, records, _ = run_cb(kernel, 40, 56, 72, cb, mode=mode, steps=(2, 1, 2, 2), seed=mode)
    np.testing.assert_array_equal(out, ref)
    assert sorted(records) == sorted(expected_records(40, 56, 72, cb, steps=(2, 1, 2, 2)))


def test_copy_out_routine_places_c_where_it_says(kernel) -> None:
    # C's rows 24 elements wider and 37 elements on from c's start: where only the routine puts them (the
    # Matmul's own copy would write rows N apart from the start, the sentinel checks in run_cb fail)
    out, ref, records, _ = run_cb(kernel, 48, 40, 32, CB_OUT, pad=(0, 0, 24), off_c=37)
    np.testing.assert_array_equal(out, ref)
    assert records == expected_records(48, 40, 32, CB_OUT)


def test_callbacks_race_free(kernel) -> None:
    # the Matmul waits for the routines' copies before it reads L1, and for the copy-out before it
    # writes L0C again
    out, ref, _, r = run_cb(kernel, 40, 56, 72, CB_A | CB_B | CB_OUT, steps=(2, 2, 2, 3), trace=True)
    np.testing.assert_array_equal(out, ref)
    assert analyze(r.trace) == []


@pytest.mark.parametrize("a_trans,c_format,cb,message", [
    ("true", "ND", "nullptr, CopyA1, nullptr",
     r"CopyA1: mpnpu calls it for an A in GM, CubeFormat::ND, not transposed"),
    ("false", "NZ", "CopyOut, nullptr, nullptr",
     r"DataCopyOut: mpnpu calls it for a C in GM, CubeFormat::ND or ND_ALIGN"),
])
def test_an_unsupported_callback_form_does_not_compile(tmp_path, a_trans, c_format, cb, message) -> None:
    src = tmp_path / "form.cpp"
    src.write_text(
        '#include "kernel_operator.h"\n#include "lib/matmul_intf.h"\nusing namespace AscendC;\n'
        "void CopyA1(const LocalTensor<int8_t>&, const __gm__ void*, int, int, int, int, const uint64_t,\n"
        "            const uint64_t) {}\n"
        "void CopyOut(const __gm__ void*, const LocalTensor<int8_t>&, const void*, const uint64_t, const uint64_t) {}\n"
        "extern \"C\" __global__ __aicore__ void k(GM_ADDR x) {\n"
        f"    MatmulImpl<MatmulType<TPosition::GM, CubeFormat::ND, half, {a_trans}>, MatmulType<TPosition::GM, "
        f"CubeFormat::ND, half>, MatmulType<TPosition::GM, CubeFormat::{c_format}, float>, "
        f"MatmulType<TPosition::GM, CubeFormat::ND, float>, CFG_NORM, MatmulCallBackFunc<{cb}>> mm;\n"
        "    (void)x;\n}\n")
    with pytest.raises(CompileError, match=message):
        compile_kernel(str(src), "k", kernel_type=KernelType.AIC)


def test_callbacks_on_a_vector_core_of_a_mix_kernel_are_refused_at_the_call(tmp_path) -> None:
    # the routines run on the core that computes; a vector core's tilingPtr / dataPtr would mean nothing
    # in its cube core's process
    src = tmp_path / "mix.cpp"
    src.write_text(
        '#include "kernel_operator.h"\n#include "lib/matmul_intf.h"\nusing namespace AscendC;\n'
        "void CopyA1(const LocalTensor<int8_t>&, const __gm__ void*, int, int, int, int, const uint64_t,\n"
        "            const uint64_t) {}\n"
        "extern \"C\" __global__ __aicore__ void k(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR ws) {\n"
        "    TCubeTiling t{};\n    t.usedCoreNum = 1;\n    t.M = t.N = t.Ka = t.Kb = 16;\n"
        "    t.singleCoreM = t.singleCoreN = t.singleCoreK = t.baseM = t.baseN = t.baseK = 16;\n"
        "    TPipe pipe;\n"
        "    Matmul<MatmulType<TPosition::GM, CubeFormat::ND, half>, MatmulType<TPosition::GM, CubeFormat::ND, half>, "
        "MatmulType<TPosition::GM, CubeFormat::ND, float>, MatmulType<TPosition::GM, CubeFormat::ND, float>, CFG_NORM, "
        "MatmulCallBackFunc<nullptr, CopyA1, nullptr>> mm;\n"
        "    REGIST_MATMUL_OBJ(&pipe, ws, mm, &t);\n"
        "    GlobalTensor<half> ag, bg;\n    GlobalTensor<float> cg;\n"
        "    ag.SetGlobalBuffer((__gm__ half*)a);\n    bg.SetGlobalBuffer((__gm__ half*)b);\n"
        "    cg.SetGlobalBuffer((__gm__ float*)c);\n"
        "    mm.SetTensorA(ag);\n    mm.SetTensorB(bg);\n    mm.IterateAll(cg);\n    mm.End();\n}\n")
    k = compile_kernel(str(src), "k", flags=WARN, kernel_type=KernelType.MIX_1_2)
    with device(1, kernel_type=KernelType.MIX_1_2) as dev:
        args = [dev.to_device("a", np.zeros(256, np.float16)), dev.to_device("b", np.zeros(256, np.float16)),
                dev.to_device("c", np.zeros(256, np.float32)),
                dev.to_device("workspace", np.zeros(workspace_bytes(1, 1), np.uint8))]
        with pytest.raises(KernelError, match=r"MatmulCallBackFunc on a vector core of a mix kernel"):
            dev.launch(k, *args)
