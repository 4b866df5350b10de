"""The Matmul's MatmulPolicy argument and ScheduleType::OUTER_PRODUCT against numpy
(kernels/matmul_policy.cpp): MatmulPolicy and NBuffer33MatmulPolicy give the plain product, as does
a Matmul with enableMixDualMaster on the cube core of a cube-only kernel, and an A of CubeFormat::VECTOR
(one row),
TrianUpperMatmulPolicy / TrianLowerMatmulPolicy leave C's base blocks below / above the diagonal
(block row > block column, or <) as they were, with base blocks that are not square and tails in M
and N; with OUTER_PRODUCT the configuration's iterateOrder, not the tiling's, orders the tiles
Iterate gives; a MatmulApiStaticTiling from GetMatmulApiTiling stands for the tiling when fully
constant and fixes the base blocks when only they are constant. Split K across cores with the host
tiling's EnableMultiCoreSplitK (kernels/matmul_splitk.cpp). int4b_t A and B, transposed or not."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from mpnpu.ascendc.build.compiler import INCLUDE_DIR
from mpnpu.errors import KernelError
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]

HERE = Path(__file__).parent / "kernels"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
PLAIN, UPPER, LOWER, NBUFFER33, OUTER_N, OUTER_M, STATIC_FULL, STATIC_BASE, PARTIAL, DUAL, GEMV, INT4 = range(12)
M, N, K = 100, 150, 64  # tails in M and N


@pytest.fixture(scope="module")
def kernels():
    from mpnpu.ascendc import compile_kernel

    return {"policy": compile_kernel(str(HERE / "matmul_policy.cpp"), "mm_policy", flags=WARN,
                                     kernel_type=KernelType.AIC),
            "splitk": compile_kernel(str(HERE / "matmul_splitk.cpp"), "mm_splitk", flags=WARN,
                                     kernel_type=KernelType.AIC)}


def operands(seed: int, k: int = K):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 4, (M, k)).astype(np.float16)
    b = rng.integers(-4, 4, (k, N)).astype(np.float16)
    bias = rng.integers(-8, 8, N).astype(np.float32)
    return a, b, bias


def run(kernels, mode: int, *, base=(32, 48), order=0, bias=True, seed=0, k=K):
    a, b, bv = operands(seed, k)
    tiles = -(-M // base[0]) * -(-N // base[1]) * base[0] * base[1]  # (packed tiles need more than M x N)
    tiles *= -(-k // 32) if mode == PARTIAL else 1
    c0 = np.full(max(M * N, tiles) if mode in (OUTER_N, OUTER_M, STATIC_BASE, PARTIAL) else M * N, -777.0, np.float32)
    with device(1, kernel_type=KernelType.AIC) as dev:
        args = [dev.to_device("a", a), dev.to_device("b", b), dev.to_device("bias", bv), dev.to_device("c", c0)]
        dev.launch(kernels["policy"], *args, M, N, k, *base, order, int(bias), mode)
        out = dev.to_host(args[3])
    if out.size == M * N:
        out, c0 = out.reshape(M, N), c0.reshape(M, N)
    if mode == PARTIAL:  # the operands, for the parts' reference
        return out, (a.astype(np.float32), b.astype(np.float32), bv), c0
    return out, a.astype(np.float32) @ b.astype(np.float32) + (bv if bias else 0), c0


@pytest.mark.parametrize("mode", [PLAIN, NBUFFER33, DUAL])
def test_the_plain_policies_give_the_product(kernels, mode) -> None:
    out, ref, _ = run(kernels, mode, seed=mode)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("mode", [UPPER, LOWER])
@pytest.mark.parametrize("base", [(32, 48), (48, 32)])
def test_the_triangle_policies_leave_the_other_triangles_blocks(kernels, mode, base) -> None:
    out, ref, c0 = run(kernels, mode, base=base, seed=3)
    rows, cols = np.indices((M, N))
    mi, ni = rows // base[0], cols // base[1]
    kept = mi <= ni if mode == UPPER else mi >= ni
    np.testing.assert_array_equal(out[kept], ref[kept])
    np.testing.assert_array_equal(out[~kept], c0[~kept])
    assert (~kept).any() and kept.any()


@pytest.mark.parametrize("mode,order", [(OUTER_N, 0), (OUTER_M, 1)])
def test_outer_product_takes_the_configurations_iterate_order(kernels, mode, order) -> None:
    bm, bn = 32, 48
    out, ref, _ = run(kernels, mode, base=(bm, bn), order=order, bias=False, seed=5)
    mt, nt = -(-M // bm), -(-N // bn)
    flat = out.ravel()
    # tile t is packed at t * bm * bn: ORDER_N walks along N first, ORDER_M down M first
    for t in range(mt * nt):
        mi, ni = divmod(t, nt) if mode == OUTER_N else (t % mt, t // mt)
        tm, tn = min(bm, M - mi * bm), min(bn, N - ni * bn)
        got = flat[t * bm * bn:t * bm * bn + tm * bn].reshape(tm, bn)[:, :tn]
        np.testing.assert_array_equal(got, ref[mi * bm:mi * bm + tm, ni * bn:ni * bn + tn], err_msg=f"tile {t}")


def test_a_fully_constant_tiling_stands_for_the_tiling(kernels) -> None:
    out, ref, _ = run(kernels, STATIC_FULL, base=(1, 1), seed=9)  # (the kernel's tiling is not used)
    np.testing.assert_array_equal(out, ref)


def test_constant_base_blocks_are_the_ones_iterate_uses(kernels) -> None:
    bm, bn = 32, 48
    out, ref, _ = run(kernels, STATIC_BASE, base=(bm, bn), bias=False, seed=11)  # the tiling's blocks: 64 x 64
    mt = -(-M // bm)
    flat = out.ravel()
    for t in range(mt * -(-N // bn)):
        mi, ni = t % mt, t // mt
        tm, tn = min(bm, M - mi * bm), min(bn, N - ni * bn)
        got = flat[t * bm * bn:t * bm * bn + tm * bn].reshape(tm, bn)[:, :tn]
        np.testing.assert_array_equal(got, ref[mi * bm:mi * bm + tm, ni * bn:ni * bn + tn], err_msg=f"tile {t}")


def test_partial_output_gives_each_tiles_k_parts_apart(kernels) -> None:
    bm, bn, bk, k = 32, 48, 32, 72  # K parts 32, 32, 8
    out, (a, b, bv), _ = run(kernels, PARTIAL, base=(bm, bn), seed=13, k=k)
    mt, parts = -(-M // bm), -(-k // bk)
    flat = out.ravel()
    for u in range(mt * -(-N // bn) * parts):
        t, kc = divmod(u, parts)
        mi, ni = t % mt, t // mt
        tm, tn = min(bm, M - mi * bm), min(bn, N - ni * bn)
        ks = slice(kc * bk, min(k, kc * bk + bk))
        ref = a[mi * bm:mi * bm + tm, ks] @ b[ks, ni * bn:ni * bn + tn] + (bv[ni * bn:ni * bn + tn] if kc == 0 else 0)
        got = flat[u * bm * bn:u * bm * bn + tm * bn].reshape(tm, bn)[:, :tn]
        np.testing.assert_array_equal(got, ref, err_msg=f"step {u}")
    assert (flat[mt * -(-N // bn) * parts * bm * bn:] == -777.0).all()


@pytest.mark.parametrize("m", [1, 2])
def test_a_vector_a_is_one_row(kernels, m) -> None:
    a, b, bv = operands(17)
    c0 = np.full((m, N), -777.0, np.float32)
    with device(1, kernel_type=KernelType.AIC) as dev:
        args = [dev.to_device("a", a[:m].copy()), dev.to_device("b", b), dev.to_device("bias", bv),
                dev.to_device("c", c0)]
        if m > 1:
            with pytest.raises(KernelError, match=r"IterateAll: A of CubeFormat::VECTOR is one row"):
                dev.launch(kernels["policy"], *args, m, N, K, 32, 48, 0, 1, GEMV)
            return
        dev.launch(kernels["policy"], *args, m, N, K, 32, 48, 0, 1, GEMV)
        out = dev.to_host(args[3]).reshape(m, N)
    np.testing.assert_array_equal(out, a[:1].astype(np.float32) @ b.astype(np.float32) + bv)


def pack_int4(x: np.ndarray) -> np.ndarray:
    """Signed 4-bit values, two a byte, the even element in the low half."""
    flat = (x.ravel().astype(np.int16) & 0xF).astype(np.uint8)
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


@pytest.mark.parametrize("trans", [0, 1, 2, 3])
def test_int4_a_and_b_give_the_integer_product(kernels, trans) -> None:
    m, n, k = 40, 56, 96  # tails in M and N with 32 x 48 blocks
    rng = np.random.default_rng(trans)
    a, b = rng.integers(-8, 8, (m, k)), rng.integers(-8, 8, (k, n))
    bias = rng.integers(-100, 100, n).astype(np.int32)
    with device(1, kernel_type=KernelType.AIC) as dev:
        args = [dev.to_device("a", pack_int4(a.T if trans & 1 else a)),
                dev.to_device("b", pack_int4(b.T if trans & 2 else b)),
                dev.to_device("bias", bias), dev.to_device("c", np.full((m, n), -7, np.int32))]
        dev.launch(kernels["policy"], *args, m, n, k, 32, 48, trans, 1, INT4)
        out = dev.to_host(args[3]).reshape(m, n)
    np.testing.assert_array_equal(out, a @ b + bias)


_SPLITK_DRIVER = r"""
#include <cstdio>
#include "tiling/tiling_api.h"
using namespace matmul_tiling;
int main(int argc, char** argv) {
    if (argc != 5) return 2;
    int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]), dim = std::atoi(argv[4]);
    MultiCoreMatmulTiling t;
    t.SetDim(dim);
    t.SetAType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT16);
    t.SetBType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT16);
    t.SetCType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT);
    t.SetOrgShape(m, n, k);
    t.SetShape(m, n, k);
    t.EnableMultiCoreSplitK(true);
    TCubeTiling d;
    if (t.GetTiling(d) == -1) return 1;
    int cd, md, nd;
    t.GetCoreNum(cd, md, nd);
    std::printf("%d %d %d %d %d %d %d %d %d %d\n", d.usedCoreNum, d.singleCoreM, d.singleCoreN, d.singleCoreK,
                d.baseM, d.baseN, d.baseK, cd, md, nd);
}
"""


@pytest.fixture(scope="module")
def splitk_driver(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("splitk")
    src, exe = tmp / "driver.cpp", tmp / "driver"
    src.write_text(_SPLITK_DRIVER.replace("#include <cstdio>", "#include <cstdio>\n#include <cstdlib>"))
    cc = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE_DIR}", str(src), "-o",
                         str(exe)], capture_output=True, text=True, timeout=300)
    assert cc.returncode == 0, cc.stderr
    return str(exe)


@pytest.mark.parametrize("m,n,k,dim", [(16, 16, 1024, 8), (32, 48, 512, 8)])
def test_split_k_cores_accumulate_numpys_product(kernels, splitk_driver, m, n, k, dim) -> None:
    out = subprocess.run([splitk_driver, str(m), str(n), str(k), str(dim)], capture_output=True, text=True,
                         timeout=30, check=True).stdout.split()
    used, sm, sn, sk, bm, bn, bk, cd, md, nd = map(int, out)
    kd = -(-k // sk)
    assert kd > 1 and k % sk == 0 and used == md * nd * kd == cd <= dim
    rng = np.random.default_rng(k)
    a = rng.integers(-4, 4, (m, k)).astype(np.float16)
    b = rng.integers(-4, 4, (k, n)).astype(np.float16)
    with device(used, kernel_type=KernelType.AIC) as dev:
        args = [dev.to_device("a", a), dev.to_device("b", b), dev.to_device("c", np.zeros((m, n), np.float32))]
        dev.launch(kernels["splitk"], *args, m, n, k, sm, sn, sk, bm, bn, bk, used)
        got = dev.to_host(args[2]).reshape(m, n)
    np.testing.assert_array_equal(got, a.astype(np.float32) @ b.astype(np.float32))
