"""The 4:2 sparse Matmul (SparseMatmulType, SetSparseIndex) and the basic API's LoadDataWithSparse /
MmadWithSparse: C = A x B with B given dense and an index matrix, against numpy's product with the
original sparse B, in every group form the index documents (two values, one at each position, none),
B in ND and NZ, on the cube core alone and driven by the vector cores; a bad index value is named at
the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
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
MODE_BIAS, MODE_ITERATE = 4, 16
BUILDS = {"nd": ({}, KernelType.AIC), "nz": ({"MM_SPARSE_NZ": "1"}, KernelType.AIC),
          "client": ({"MM_SPARSE_CLIENT": "1"}, KernelType.MIX_1_2)}


@pytest.fixture(scope="module")
def kernels():
    built = {name: compile_kernel(source("cube/mm_sparse.cpp"), "mm_sparse", flags=WARN, defines=defines,
                                  kernel_type=kt) for name, (defines, kt) in BUILDS.items()}
    built["layout"] = tiling_layout(source("cube/mm_tiling.h"), "MmTestTiling")
    return built


def sparse_b(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    """B [k, n] int8 with at most two values in every four along K, every group form present."""
    b = np.zeros((k, n), np.int8)
    forms = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (0,), (1,), (2,), (3,), ()]
    for j in range(n):
        for g in range(k // 4):
            for p in forms[(j + 3 * g) % len(forms)]:
                b[4 * g + p, j] = rng.choice([v for v in range(-7, 8) if v])
    return b


def densify(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The dense B (n x k/2, transposed) and the index bytes (n x k/8), by the index page's rules: the first
    kept value's position among the first three (idx0), the second's among the last three (idx1); a group
    with one value at position 3 keeps (0, it), with one elsewhere (it, 0)."""
    k, n = b.shape
    dense = np.zeros((n, k // 2), np.int8)
    idx = np.zeros((n, k // 2), np.uint8)
    for j in range(n):
        for g in range(k // 4):
            grp = b[4 * g:4 * g + 4, j]
            nz = [p for p in range(4) if grp[p]]
            if len(nz) == 2:
                i0, i1, v = nz[0], nz[1] - 1, (grp[nz[0]], grp[nz[1]])
            elif len(nz) == 1 and nz[0] == 3:
                i0, i1, v = 0, 2, (0, grp[3])
            elif len(nz) == 1:
                i0, i1, v = nz[0], 0, (grp[nz[0]], 0)
            else:
                i0, i1, v = 0, 0, (0, 0)
            idx[j, 2 * g:2 * g + 2] = (i0, i1)
            dense[j, 2 * g:2 * g + 2] = v
    packed = (idx[:, 0::4] | idx[:, 1::4] << 2 | idx[:, 2::4] << 4 | idx[:, 3::4] << 6).astype(np.uint8)
    return dense, packed


def zn(index: np.ndarray) -> np.ndarray:
    """Index bytes (n x k/8) in the Zn layout: fractals of 16 columns x 8 bytes, along N first."""
    n, kb = index.shape
    pad = np.zeros((-(-n // 16) * 16, -(-kb // 8) * 8), np.uint8)
    pad[:n, :kb] = index
    return pad.reshape(pad.shape[0] // 16, 16, pad.shape[1] // 8, 8).transpose(2, 0, 1, 3).copy()


def nz(rows: np.ndarray) -> np.ndarray:
    """An int8 matrix (r x c) in NZ: blocks of 32 columns, each all the rows (to 16) one after another."""
    r, c = rows.shape
    pad = np.zeros((-(-r // 16) * 16, -(-c // 32) * 32), np.int8)
    pad[:r, :c] = rows
    return pad.reshape(pad.shape[0], pad.shape[1] // 32, 32).transpose(1, 0, 2).copy()


def run(kernels, build: str, m: int, n: int, k: int, mode: int, *, cores: int, trace: bool = False,
        spoil=None, index_bytes: int | None = None):
    rng = np.random.default_rng(7)
    a = rng.integers(-8, 8, (m, k)).astype(np.int8)
    b = sparse_b(rng, k, n)
    bias = rng.integers(-50, 50, n).astype(np.int32)
    dense, index = densify(b)
    index_zn = zn(index)
    if spoil is not None:
        spoil(index_zn)
    t = matmul_tiling(m, n, k, in_dtype="int8", out_dtype="int32", cores=cores, base_n=32,
                      bias=bool(mode & MODE_BIAS))
    packed = kernels["layout"].pack({**as_fields(t, "cube"), "mode": mode, "rounds": 1})
    kt = BUILDS[build][1]
    blocks = cores if kt is KernelType.AIC else -(-cores // 2)
    with device(blocks, kernel_type=kt) as dev:
        args = [dev.to_device("a", a), dev.to_device("b", nz(dense) if build == "nz" else dense),
                dev.to_device("index", index_zn.reshape(-1)[:index_bytes]), dev.to_device("bias", bias),
                dev.empty("c", m * n, "int32"),
                dev.to_device("workspace", np.zeros(workspace_bytes(blocks, 1), np.uint8)),
                dev.to_device("tiling", packed)]
        result = dev.launch_with(LaunchOptions(trace=trace), kernels[build], *args)
        out = dev.to_host(args[4]).reshape(m, n)
    ref = a.astype(np.int32) @ b.astype(np.int32) + (bias if mode & MODE_BIAS else 0)
    return out, ref, result


@pytest.mark.parametrize("build,mode,cores", [("nd", 0, 1), ("nd", MODE_BIAS | MODE_ITERATE, 2), ("nz", 0, 2),
                                              ("nz", MODE_BIAS, 1), ("client", MODE_ITERATE, 2)])
def test_a_sparse_matmul_is_the_product_with_bs_zeros_left_out(kernels, build, mode, cores) -> None:
    out, ref, _ = run(kernels, build, 48, 96, 128, mode, cores=cores)
    np.testing.assert_array_equal(out, ref)


def test_the_index_and_the_dense_b_decide_the_product(kernels) -> None:
    """A swapped index pair picks other A values: the product changes (the index is read, not ignored)."""
    def swap(index_zn: np.ndarray) -> None:
        # group 1 of column 0 (dense rows 2, 3): (idx0, idx1) = (1, 0), so both of A's values at position 1
        index_zn[0, 0, 0, 0] = 0b00010000 | (index_zn[0, 0, 0, 0] & 0x0F)

    out, ref, _ = run(kernels, "nd", 16, 32, 64, 0, cores=1, spoil=swap)
    assert not np.array_equal(out[:, 0], ref[:, 0]) and np.array_equal(out[:, 1:], ref[:, 1:])


def test_the_cube_cores_sparse_reads_race_with_nothing(kernels) -> None:
    *_, result = run(kernels, "client", 32, 64, 64, 0, cores=2, trace=True)
    assert analyze(result.trace) == []
    reads = {e.tensor for evs in result.trace.events for e in evs if getattr(e, "kind", "") == "R"
             and getattr(e, "tensor", None) in ("a", "b", "index")}
    assert reads == {"a", "b", "index"}


def test_an_index_matrix_shorter_than_b_is_a_memcheck_error_at_the_kernels_line(kernels) -> None:
    with pytest.raises(KernelError) as info:
        run(kernels, "nd", 16, 64, 64, 0, cores=1, index_bytes=64 * 64 // 8 - 64)
    text = str(info.value)
    assert "illegal read of GM tensor index" in text, text
    assert f"mm_sparse.cpp:{line_of('cube/mm_sparse.cpp', 'mm.IterateAll(cGm);')}" in text, text


def test_an_index_of_3_is_an_error_at_the_kernels_line(kernels) -> None:
    def three(index_zn: np.ndarray) -> None:
        index_zn[0, 0, 5, 1] = 0b11  # dense row 4 (group 2's first) of column 5

    with pytest.raises(KernelError) as info:
        run(kernels, "nd", 16, 32, 64, 0, cores=1, spoil=three)
    text = str(info.value)
    assert "holds 3 for dense row 4 of column 5" in text, text
    assert f"mm_sparse.cpp:{line_of('cube/mm_sparse.cpp', 'mm.IterateAll(cGm);')}" in text, text
    assert f"mm_sparse.cpp:{line_of('cube/mm_sparse.cpp', 'mm.SetSparseIndex(indexGm);')}" in text, text


def zz(a: np.ndarray) -> np.ndarray:
    """int8 A (m x k) as L0A's Zz fractals: 16 rows x 32 columns each, along K first, rows inside."""
    m, k = a.shape
    return a.reshape(m // 16, 16, k // 32, 32).transpose(0, 2, 1, 3).copy()


def zn_b(dense: np.ndarray) -> np.ndarray:
    """The dense B (n x kd, transposed) as L0B's Zn fractals: 32 rows (K) x 16 columns, along N first,
    a column's 32 values in a row."""
    n, kd = dense.shape
    return dense.reshape(n // 16, 16, kd // 32, 32).transpose(2, 0, 1, 3).copy()


@pytest.mark.parametrize("m,n,k", [(16, 16, 64), (32, 48, 128)])
def test_mmad_with_sparse_multiplies_l0a_by_the_dense_b_it_loaded_with_its_index(m, n, k) -> None:
    kernel = compile_kernel(source("cube/mmad_sparse.cpp"), "mmad_sparse", flags=WARN, kernel_type=KernelType.AIC)
    rng = np.random.default_rng(11)
    a = rng.integers(-8, 8, (m, k)).astype(np.int8)
    b = sparse_b(rng, k, n)
    dense, index = densify(b)
    with device(1, kernel_type=KernelType.AIC) as dev:
        args = [dev.to_device("a", zz(a)), dev.to_device("b", zn_b(dense)), dev.to_device("index", zn(index)),
                dev.empty("c", m * n, "int32"), dev.to_device("shape", np.array([m, n, k, 0], np.uint16))]
        dev.launch(kernel, *args)
        out = dev.to_host(args[3]).reshape(m, n)
    np.testing.assert_array_equal(out, a.astype(np.int32) @ b.astype(np.int32))
