"""The matmul API's configuration forms and data formats against numpy: MatmulImpl with A, B and C
in CubeFormat::NZ (16-row fractals, C0 = 32 bytes of A and B, 16-wide blocks of C), alone and mixed
with ND, transposed, with tails in M, N and K (shapes not whole fractals, base tiles not dividing the
matrix) and padding that holds garbage; and the fields of the MatmulConfig GetMMConfig returns for
each template mode and parameter group (kernels/matmul_nz.cpp); TSCM inputs in L1; NotifyEvent /
WaitEvent and SYNC_AIC_FLAG between a cube core and its vector cores (kernels/notify_wait.cpp)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]

KERNEL = Path(__file__).parent / "kernels" / "matmul_nz.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
TRANS_A, TRANS_B, ITERATE, NO_SYNC = 1, 2, 4, 8
A_NZ, B_NZ, C_NZ = 1, 2, 4
TYPES = {"float16": (0, np.float16, np.float32), "float32": (1, np.float32, np.float32),
         "float16->float16": (2, np.float16, np.float16), "int8": (3, np.int8, np.int32),
         "tscm": (4, np.float16, np.float32), "channel split": (5, np.float16, np.float32),
         "nd align": (6, np.float16, np.float32)}


@pytest.fixture(scope="module")
def kernels():
    from mpnpu.ascendc import compile_kernel

    return {"nz": compile_kernel(str(KERNEL), "mm_nz", flags=WARN, kernel_type=KernelType.AIC),
            "config": compile_kernel(str(KERNEL), "mm_config", flags=WARN, kernel_type=KernelType.AIC)}


def to_nz(x: np.ndarray, c0: int, pad) -> np.ndarray:
    """``x`` (rows x cols) in the NZ layout: the columns in blocks of ``c0``, each block all the rows
    (rounded up to 16) one after another; the padding holds ``pad``."""
    rows, cols = x.shape
    rp, cp = -(-rows // 16) * 16, -(-cols // c0) * c0
    full = np.full((rp, cp), pad, x.dtype)
    full[:rows, :cols] = x
    return full.reshape(rp, cp // c0, c0).transpose(1, 0, 2).copy().ravel()


def from_nz(flat: np.ndarray, rows: int, cols: int, c0: int) -> np.ndarray:
    rp, blocks = -(-rows // 16) * 16, -(-cols // c0)
    return flat.reshape(blocks, rp, c0).transpose(1, 0, 2).reshape(rp, blocks * c0)[:rows, :cols]


def run_nz(kernels, m, n, k, fmt, mode, base=(32, 32, 16), types="float16", seed=0, trace=False):
    code, src, dst = TYPES[types]
    rng = np.random.default_rng(seed)
    if src is np.int8:
        a, b = (rng.integers(-4, 4, s).astype(np.int8) for s in ((m, k), (k, n)))
        pad = np.int8(127)
    else:
        a, b = (rng.integers(-4, 4, s).astype(src) for s in ((m, k), (k, n)))  # exact in half
        pad = src(np.inf if src is np.float32 else 60000)
    c0_ab = 32 // np.dtype(src).itemsize
    c0_c = 32 if np.dtype(dst).itemsize == 1 else 8 if types == "channel split" else 16
    sa = a.T.copy() if mode & TRANS_A else a
    sb = b.T.copy() if mode & TRANS_B else b
    a_dev = to_nz(sa, c0_ab, pad) if fmt & A_NZ else sa
    b_dev = to_nz(sb, c0_ab, pad) if fmt & B_NZ else sb
    if types == "tscm":  # A and B are NZ, copied into L1 whole; fmt says whether A's L1 is short (A_NZ) and
        # whether B goes through a TSCM queue (B_NZ)
        a_dev, b_dev, fmt = to_nz(sa, 16, pad), to_nz(sb, 16, pad), fmt & (A_NZ | B_NZ)
    sentinel = dst(-12345)
    ld = -(-n // 8) * 8 if types == "nd align" else n  # ND_ALIGN: rows 32 bytes (8 floats) aligned
    c_init = (np.full(-(-m // 16) * 16 * -(-n // c0_c) * c0_c, sentinel, dst) if fmt & C_NZ
              else np.full((m, ld), sentinel, dst))
    with device(1, kernel_type=KernelType.AIC) as dev:
        args = [dev.to_device("a", a_dev), dev.to_device("b", b_dev), dev.to_device("c", c_init)]
        r = dev.launch_with(LaunchOptions(trace=trace), kernels["nz"], *args, m, n, k, *base, mode, fmt, code)
        out = dev.to_host(args[2])
    out = from_nz(out, m, n, c0_c) if fmt & C_NZ else out.reshape(m, ld)[:, :n]
    ref = a.astype(np.int64) @ b.astype(np.int64)
    return (out, ref, r) if trace else (out, ref)


@pytest.mark.parametrize("fmt", range(8))
@pytest.mark.parametrize("mode", [0, TRANS_A | ITERATE, TRANS_B, TRANS_A | TRANS_B | ITERATE])
def test_nz_a_b_c_equal_numpy_with_tails(kernels, fmt, mode) -> None:
    # M 40 and K 24 are not whole fractals (half: 16 x 16); base tiles 32 x 32 x 16 leave tails in M and N
    out, ref = run_nz(kernels, 40, 56, 24, fmt, mode, seed=fmt * 8 + mode)
    np.testing.assert_array_equal(out, ref.astype(np.float32))


@pytest.mark.parametrize("mode", [0, TRANS_B])
def test_nd_align_c_rows_are_32_bytes_apart(kernels, mode) -> None:
    # CubeFormat::ND_ALIGN: N 57 is written in rows of 64 floats (the dev kit's matmul_format_nd_align)
    out, ref = run_nz(kernels, 40, 57, 24, 0, mode, types="nd align", seed=11 + mode)
    np.testing.assert_array_equal(out, ref.astype(np.float32))


@pytest.mark.parametrize("mode", [0, TRANS_A | ITERATE])
def test_channel_split_stores_a_float_c_in_16_by_8_fractals(kernels, mode) -> None:
    # MatmulConfig::isEnableChannelSplit: each 16 x 16 fractal of a float NZ C is stored as two 16 x 8 ones
    out, ref = run_nz(kernels, 40, 56, 24, C_NZ, mode, types="channel split", seed=3 + mode)
    np.testing.assert_array_equal(out, ref.astype(np.float32))


@pytest.mark.parametrize("types", ["float32", "float16->float16", "int8"])
@pytest.mark.parametrize("mode", [0, TRANS_A | TRANS_B | ITERATE])
def test_nz_other_element_types(kernels, types, mode) -> None:
    # float: C0 8 (K 20 leaves a partial block of 4); int8: C0 32, C int32 in 16-wide blocks
    out, ref = run_nz(kernels, 24, 40, 20 if types == "float32" else 40, A_NZ | B_NZ | C_NZ, mode, types=types)
    np.testing.assert_array_equal(out.astype(np.int64), ref)


@pytest.mark.parametrize("mode", [0, TRANS_A | TRANS_B])
def test_tscm_a_and_b_in_l1_equal_numpy(kernels, mode) -> None:
    # the kernel copies A and B (NZ) into TSCM buffers with DataCopy and syncs MTE2 -> MTE1 before the Matmul
    out, ref, r = run_nz(kernels, 40, 56, 24, 0, mode, types="tscm", trace=True)
    np.testing.assert_array_equal(out, ref.astype(np.float32))
    assert analyze(r.trace) == []


def test_a_tscm_queue_orders_its_copy_before_the_matmul_reads_it(kernels) -> None:
    # B copied into a TSCM<TPosition::GM, 1> queue's tensor after the kernel's own MTE2 -> MTE1 flag:
    # only the queue's EnQue / DeQue orders that copy before the Matmul's read
    out, ref, r = run_nz(kernels, 40, 56, 24, B_NZ, 0, types="tscm", trace=True)
    np.testing.assert_array_equal(out, ref.astype(np.float32))
    assert analyze(r.trace) == []


def test_racecheck_sees_the_matmul_read_tscm_on_mte1(kernels) -> None:
    *_, r = run_nz(kernels, 40, 56, 24, 0, NO_SYNC, types="tscm", trace=True)
    hazards = analyze(r.trace)
    assert hazards and {h.kind for h in hazards} == {"RAW"}, hazards


def test_a_tscm_tensor_too_small_is_memcheck_at_the_kernel_line(kernels) -> None:
    with pytest.raises(KernelError, match=r"(?s)L1.*matmul_nz\.cpp"):
        run_nz(kernels, 40, 56, 24, A_NZ, 0, types="tscm")


# -- GetMMConfig ---------------------------------------------------------------------------------------------------

FIELDS = ["doNorm", "doBasicBlock", "doMultiDataLoad", "doSpecialMDL", "doIBShareNorm", "basicM", "basicN", "basicK",
          "singleCoreM", "singleCoreN", "singleCoreK", "intrinsicsCheck", "isNBatch", "enVecND2NZ", "doMTE2Preload",
          "enUnitFlag", "isPerTensor", "hasAntiQuantOffset", "batchMode", "isBiasBatch", "bmmOutMode",
          "iterateOrder", "scheduleType", "enableReuse", "enableUBReuse", "enableL1CacheUB", "enableDoubleCache",
          "isPartialOutput", "isA2B2Shared", "isEnableChannelSplit", "enableKdimReorderLoad",
          "enableL1BankConflictOptimise"]
NONE, LESS_THAN_L1, SINGLE_LARGE = 0, 1, 3  # BatchMode
ORDER_N, UNDEF = 1, 2  # IterateOrder
DYNAMIC = 2  # BatchOutMode

# the templates' documented defaults (GetNormalConfig(), GetMDLConfig(), ... with no arguments)
BASE = {f: 0 for f in FIELDS} | {"enUnitFlag": 1, "isBiasBatch": 1, "enableReuse": 1, "iterateOrder": UNDEF}
NORM = BASE | {"doNorm": 1, "batchMode": LESS_THAN_L1}
MDL = BASE | {"doMultiDataLoad": 1, "enUnitFlag": 0, "enableUBReuse": 1}
SPECIAL_MDL = BASE | {"doSpecialMDL": 1, "enUnitFlag": 0}
IBSHARE = BASE | {"doIBShareNorm": 1, "batchMode": LESS_THAN_L1}
SHAPE = {"singleCoreM": 64, "singleCoreN": 48, "singleCoreK": 32, "basicM": 32, "basicN": 16, "basicK": 16}
QUANT = {"isPerTensor": 1, "hasAntiQuantOffset": 1}
BATCH = {"isNBatch": 1, "batchMode": SINGLE_LARGE, "isBiasBatch": 0, "bmmOutMode": DYNAMIC}
BATCH_FIRST = {"isNBatch": 1, "batchMode": LESS_THAN_L1, "isBiasBatch": 1, "bmmOutMode": 0}
FUNC = {"intrinsicsCheck": 1, "enVecND2NZ": 1, "enableDoubleCache": 1, "enableL1CacheUB": 1, "doMTE2Preload": 1,
        "iterateOrder": ORDER_N, "scheduleType": 1, "enableReuse": 0, "enableUBReuse": 1, "isPartialOutput": 1,
        "isA2B2Shared": 1, "isEnableChannelSplit": 1, "enableKdimReorderLoad": 1, "enableL1BankConflictOptimise": 1}
EXPECTED = [NORM, MDL, SPECIAL_MDL, IBSHARE, NORM | SHAPE | QUANT | BATCH | FUNC, MDL | FUNC | BATCH_FIRST | SHAPE,
            NORM | BATCH_FIRST]


def test_get_mm_config_fields(kernels) -> None:
    with device(1, kernel_type=KernelType.AIC) as dev:
        out = dev.empty("out", (len(EXPECTED) * len(FIELDS) + 2,), np.int32)
        dev.launch(kernels["config"], out)
        flat = dev.to_host(out)
    got = flat[:-2].reshape(len(EXPECTED), len(FIELDS))
    for i, want in enumerate(EXPECTED):
        assert dict(zip(FIELDS, got[i].tolist())) == want, i
    # ToMatmulConfig of a MatmulConfig is that configuration; TOTAL_L0C_SIZE is L0C's 128 KiB
    assert flat[-2:].tolist() == [SHAPE["singleCoreM"], 128 * 1024]


# -- NotifyEvent / WaitEvent and SYNC_AIC_FLAG ----------------------------------------------------------------------

NOTIFY = Path(__file__).parent / "kernels" / "notify_wait.cpp"


def test_notify_and_wait_event_order_the_cube_and_its_vector_cores() -> None:
    from mpnpu.ascendc import compile_kernel

    k = compile_kernel(str(NOTIFY), "notify_wait", flags=WARN, kernel_type=KernelType.MIX_1_2)
    for drop in (0, 1):
        with device(1, kernel_type=KernelType.MIX_1_2) as dev:
            out = dev.to_device("out", np.zeros(8, np.int32))
            r = dev.launch_with(LaunchOptions(trace=True), k, out, drop)
            got = dev.to_host(out)
        hazards = analyze(r.trace)
        if drop:  # the cube core reads the vector cores' values with nothing ordering the reads
            assert "RAW" in {h.kind for h in hazards}, hazards
        else:
            assert hazards == []
            assert got[:5].tolist() == [10, 20, 30, 30, 30]
