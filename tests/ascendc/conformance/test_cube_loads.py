"""The cube core's L1 -> L0 loads against cuberef.py, element by element over the whole destination
(what the call writes, and what it must leave as it was): the img2col load (LoadData with
LoadData3DParamsV2 / V2Pro: padding, strides, dilation, filter taps, channel blocks, start points,
the repeat modes, the L1 boundary, the feature-map and padding registers), LoadDataWithTranspose on
8-bit squares, LoadData2DParamsV2's fractal blocks; each misuse is a KernelAPIError at the kernel's
line; racecheck sees the loads on PIPE_MTE1; DumpTensor prints what the page shows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cuberef import Img2col, img2col_load, load_2d_v2, with_transpose

from mpnpu.errors import KernelError
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

KERNEL = Path(__file__).parent / "kernels" / "cube_loads.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
DTYPES = {"float16": 0, "float32": 1, "int8": 2}
SENTINEL = -7


def line(marker: str) -> int:
    for i, text in enumerate(KERNEL.read_text().splitlines(), 1):
        if marker in text:
            return i
    raise AssertionError(marker)


@pytest.fixture(scope="module")
def kernels():
    from mpnpu.ascendc import compile_kernel

    return {
        "plain": compile_kernel(str(KERNEL), "cube_loads", flags=WARN),
        "nosync": compile_kernel(str(KERNEL), "cube_loads", flags=WARN, defines={"DROP_SYNC": 1}),
    }


def params(dst: int, n_src: int, n_dst: int, **kw: int) -> np.ndarray:
    p = np.zeros(32, np.int32)
    p[0], p[24], p[25], p[27] = dst, n_src, n_dst, SENTINEL
    for k, v in kw.items():
        p[int(k[1:])] = v
    return p


def g_params(g: Img2col, dst: int, n_src: int, n_dst: int) -> np.ndarray:
    p = params(dst, n_src, n_dst)
    p[1:15] = [g.l1h, g.l1w, g.channels, g.k_ext, g.m_ext, g.k_start, g.m_start, g.stride[1], g.stride[0],
               g.filt[1], g.filt[0], g.dil[1], g.dil[0], int(g.transpose)]
    p[15:20] = [*g.pad, g.pad_value]
    p[20:24] = [g.repeat_time, g.repeat_stride, g.repeat_mode, g.boundary]
    return p


def launch(kernels, op: int, src: np.ndarray, p: np.ndarray, *, which: str = "plain", trace: bool = False):
    n_dst = int(p[25])
    with device(1, kernel_type=KernelType.AIC) as dev:
        out = dev.empty("out", (n_dst,), src.dtype)
        r = dev.launch_with(LaunchOptions(trace=trace), kernels[which], dev.to_device("src", src),
                            dev.to_device("prm", p), out, op, DTYPES[src.dtype.name])
        return dev.to_host(out), r


def source(dtype: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-100, 100, n).astype(np.int8)
    return rng.integers(-1000, 1000, n).astype(dtype)  # exact in half


def check_img2col(kernels, dtype: str, g: Img2col, to_l0b: bool, op: int = 0, n_dst: int = 8192, seed: int = 0,
                  right: int = 0):
    c0 = 32 // np.dtype(dtype).itemsize
    n_src = g.channels // c0 * g.l1h * g.l1w * c0
    src = source(dtype, n_src, seed)
    p = g_params(g, int(to_l0b), n_src, n_dst)
    p[28] = right
    out, _ = launch(kernels, op, src, p)
    ref = img2col_load(src, np.full(n_dst, SENTINEL, dtype=src.dtype), g, to_l0b)
    np.testing.assert_array_equal(out, ref)
    assert (out != SENTINEL).sum() > 0


# a 5 x 6 map, filter 3 (h) x 2 (w) dilated 1 x 2, strides 2 x 1, padded left 1, top 2, bottom 1:
# Ho 3, Wo 5 -> 15 rows, the last block's rows past them continue the arithmetic
GEOMETRY = dict(l1h=5, l1w=6, stride=(2, 1), filt=(3, 2), dil=(1, 2), pad=(1, 0, 2, 1), pad_value=3)
CASES = {  # dtype: (channels, kStartPt, kExtension) for 2 channel blocks (int8: 1)
    "float16": (32, 16, 176),  # kStartPt one block in, the block reaching the last column (192)
    "float32": (16, 8, 88),
    "int8": (32, 64, 64),
}


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("m_start,m_ext", [(0, 15), (0, 16), (4, 11)])
def test_img2col_into_l0a(kernels, dtype, m_start, m_ext) -> None:
    ch, ks, ke = CASES[dtype]
    check_img2col(kernels, dtype, Img2col(channels=ch, k_ext=ke, m_ext=m_ext, k_start=ks, m_start=m_start,
                                          **GEOMETRY), to_l0b=False)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_img2col_transposed_into_l0a(kernels, dtype) -> None:
    ch, ks, ke = CASES[dtype]
    check_img2col(kernels, dtype, Img2col(channels=ch, k_ext=ke, m_ext=15, k_start=ks, transpose=True, **GEOMETRY),
                  to_l0b=False)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("transpose", [False, True], ids=["plain", "enTranspose-ignored"])
def test_img2col_into_l0b(kernels, dtype, transpose) -> None:
    ch, ks, ke = CASES[dtype]
    check_img2col(kernels, dtype, Img2col(channels=ch, k_ext=ke, m_ext=16, k_start=ks, transpose=transpose,
                                          **GEOMETRY), to_l0b=True)


def test_img2col_as_a_2d_load_of_an_nz_matrix(kernels) -> None:
    """l1H 1, a 1 x 1 filter: the map is an NZ matrix (l1W rows, channelSize columns) and L0A gets its Zz."""
    g = Img2col(l1h=1, l1w=48, channels=64, k_ext=64, m_ext=48)
    check_img2col(kernels, "float16", g, to_l0b=False)
    src = source("float16", 48 * 64, 3)
    out, _ = launch(kernels, 0, src, g_params(g, 0, src.size, 4096))
    a = src.reshape(4, 48, 16).transpose(1, 0, 2).reshape(48, 64)  # NZ -> the 48 x 64 matrix
    zz = a.reshape(3, 16, 4, 16).transpose(0, 2, 1, 3).ravel()
    np.testing.assert_array_equal(out[: zz.size], zz)


@pytest.mark.parametrize("mode,reps,stride,m_ext,k_ext", [(0, 2, 1, 16, 32), (0, 3, 2, 16, 16), (1, 3, 1, 16, 16),
                                                          (1, 2, 2, 32, 16)])
def test_repeat_modes(kernels, mode, reps, stride, m_ext, k_ext) -> None:
    g = Img2col(l1h=4, l1w=10, channels=32, k_ext=k_ext, m_ext=m_ext, filt=(2, 2), pad=(0, 1, 1, 0), pad_value=-2,
                repeat_time=reps, repeat_stride=stride, repeat_mode=mode)
    check_img2col(kernels, "float16", g, to_l0b=False, seed=5)


def test_boundary_wraps_reads_to_the_start_of_l1(kernels) -> None:
    g = Img2col(l1h=32, l1w=1, channels=32, k_ext=32, m_ext=32, boundary=1024)  # 2 KiB map, 1 KiB boundary
    check_img2col(kernels, "float16", g, to_l0b=False, seed=6)


@pytest.mark.parametrize("op", [1, 2], ids=["IsResetLoad3dConfig-false", "V2Pro"])
@pytest.mark.parametrize("to_l0b", [False, True], ids=["L0A", "L0B"])
@pytest.mark.parametrize("right", [0, 1], ids=["left", "right"])
def test_registers_give_the_map_and_padding(kernels, op, to_l0b, right) -> None:
    ch, ks, ke = CASES["float16"]
    g = Img2col(channels=ch, k_ext=ke, m_ext=16, k_start=ks, **GEOMETRY)
    check_img2col(kernels, "float16", g, to_l0b=to_l0b, op=op, seed=7, right=right)


@pytest.mark.parametrize("to_l0b", [0, 1], ids=["L0A", "L0B"])
@pytest.mark.parametrize("start,reps,stride,gap,frac_gap", [(0, 1, 1, 0, 0), (1, 3, 2, 1, 0), (0, 2, 1, 0, 2)])
def test_8bit_transpose(kernels, to_l0b, start, reps, stride, gap, frac_gap) -> None:
    src = source("int8", 8 * 1024, 8)
    p = params(to_l0b, src.size, 8192, p1=start, p2=reps, p3=stride, p4=gap, p5=frac_gap)
    out, _ = launch(kernels, 3, src, p)
    ref = with_transpose(src, np.full(8192, SENTINEL, np.int8), start, reps, stride, gap, frac_gap)
    np.testing.assert_array_equal(out, ref)
    t = src[start * 1024:][:1024].reshape(32, 32).T  # the first square, by hand
    np.testing.assert_array_equal(out[:512].reshape(16, 32), t[:16])


@pytest.mark.parametrize("dtype,transpose", [("float16", 0), ("float16", 1), ("float32", 0), ("int8", 0)])
def test_2d_v2_block(kernels, dtype, transpose) -> None:
    src = source(dtype, 24 * 512 // np.dtype(dtype).itemsize, 9)  # 24 fractals: 4 (M) x 6 (K), srcStride 4
    p = params(0, src.size, 16 * 512 // np.dtype(dtype).itemsize, p1=1, p2=2, p3=2, p4=3, p5=4, p6=3, p7=transpose)
    out, _ = launch(kernels, 4, src, p)
    ref = load_2d_v2(src, np.full(out.size, SENTINEL, src.dtype), 1, 2, 2, 3, 4, 3, bool(transpose))
    np.testing.assert_array_equal(out, ref)


def test_racecheck_sees_the_load_on_mte1(kernels) -> None:
    from mpnpu.racecheck import analyze

    ch, ks, ke = CASES["float16"]
    g = Img2col(channels=ch, k_ext=ke, m_ext=16, k_start=ks, **GEOMETRY)
    src = source("float16", 960, 1)
    p = g_params(g, 0, src.size, 8192)
    _, r = launch(kernels, 0, src, p, trace=True)
    assert analyze(r.trace) == []
    _, r = launch(kernels, 0, src, p, which="nosync", trace=True)
    hazards = analyze(r.trace)
    assert hazards, "the copy into L1 and the load that reads it are unordered without the flag"
    h = hazards[0]
    assert (h.kind, h.first.pipe, h.second.pipe) == ("RAW", "PIPE_MTE2", "PIPE_MTE1")
    assert h.second.site.endswith(f"cube_loads.cpp:{line('// LOAD_V2')}")


def _misuse(kernels, op, dtype, p, message, marker):
    src = source(dtype, int(p[24]), 0)
    with pytest.raises(KernelError) as info:
        launch(kernels, op, src, p)
    text = str(info.value)
    assert "KernelAPIError" in text and message in text, text
    assert f"cube_loads.cpp:{line(marker)}" in text, text


def _g(**kw) -> Img2col:
    base = dict(channels=32, k_ext=32, m_ext=16, **GEOMETRY)
    base.update(kw)
    return Img2col(**base)


MISUSE = [
    ("int8-to-l0b", "int8", _g(), 1, "L1 -> L0B does not take 8-bit elements"),
    ("int8-transposed", "int8", _g(transpose=True), 0, "enTranspose does not take 8-bit elements"),
    ("kStartPt", "float16", _g(k_start=8), 0, "kStartPt (8) must be a multiple of 16"),
    ("kExtension", "float16", _g(k_ext=24), 0, "kExtension (24) must be a multiple of 16"),
    ("mExtension", "float16", _g(m_ext=10), 0, "mExtension (10) must be a multiple of 16"),
    ("strideW", "float16", _g(stride=(1, 64)), 0, "strideW (64) and strideH (1) must be at most 63"),
    ("channelSize", "float16", _g(channels=18), 0, "channelSize 18 is not one the API documents"),
    ("filter", "float16", _g(filt=(9, 1)), 0, "does not fit the padded feature map"),
]


@pytest.mark.parametrize("name,dtype,g,dst,message", MISUSE, ids=[m[0] for m in MISUSE])
def test_img2col_misuse(kernels, name, dtype, g, dst, message) -> None:
    c0 = 32 // np.dtype(dtype).itemsize
    n_src = max(g.channels // c0, 1) * g.l1h * g.l1w * c0
    _misuse(kernels, 0, dtype, g_params(g, dst, n_src, 8192), message, "// LOAD_V2")


def test_register_misuse(kernels) -> None:
    g = _g()
    _misuse(kernels, 0, "float16", g_params(Img2col(**{**g.__dict__, "boundary": 512}), 0, 960, 8192),
            "SetLoadDataBoundary: 512 bytes", "SetLoadDataBoundary(")
    _misuse(kernels, 0, "float16", g_params(Img2col(**{**g.__dict__, "repeat_mode": 2}), 0, 960, 8192),
            "SetLoadDataRepeat: repeatMode 2", "SetLoadDataRepeat(")
    p = g_params(Img2col(**{**g.__dict__, "l1h": 0}), 0, 960, 8192)
    _misuse(kernels, 1, "float16", p, "SetFmatrix: l1H (0) and l1W (6) must be in [1, 32767]", "// SET_FMATRIX")
    p = g_params(Img2col(**{**g.__dict__, "boundary": 1024}), 0, 960, 8192)
    p[26] = 1024  # the map starts 2 KiB into L1, past the boundary
    _misuse(kernels, 0, "float16", p, "past the boundary SetLoadDataBoundary set (1024)", "// LOAD_V2")


def test_2d_v2_misuse(kernels) -> None:
    p = params(0, 8192, 8192, p3=256, p4=1, p5=1, p6=1)
    _misuse(kernels, 4, "float16", p, "mStep (256) and kStep (1) must be at most 255", "// LOAD_2DV2")


def test_fix_pipe_config_wants_the_fixpipe_buffer(kernels) -> None:
    p = params(0, 512, 512)
    _misuse(kernels, 6, "float16", p, "SetFixPipeConfig: preData must be in the fixpipe buffer (C2PIPE2GM) or L0C",
            "// FIX_PIPE_CONFIG")


def test_dump_tensor_prints_the_elements(kernels, capfd) -> None:
    src = np.arange(64, dtype=np.float32)
    launch(kernels, 5, src, params(0, 64, 512))
    out = capfd.readouterr().out
    assert "DumpTensor: desc=7, addr=0x0, data_type=float32, position=L1, dump_size=5\n" \
           "[0.000000,1.000000,2.000000,3.000000,4.000000]\n" in out, out
    assert "DumpTensor: desc=8, addr=0x0, data_type=float32, position=L1, dump_size=6\n" \
           "shape is [2, 4], dumpSize is 6, data is not enough.\n" \
           "[[0.000000,1.000000,2.000000,3.000000],\n[4.000000,5.000000,-,-]]\n" in out, out
