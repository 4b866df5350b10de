"""The vector headers compile warning-free the way kernels use them (-O2 -Wall -Wextra -Wpedantic
-Werror), and a documented form mpnpu refuses at compile time says so in a static_assert."""

from __future__ import annotations

import subprocess

import pytest
from conftest import INCLUDE_DIR, find_compiler

KERNEL_STYLE = r"""
#include "kernel_operator.h"
using namespace AscendC;

constexpr TransDataTo5HDParams ONE_REPEAT(false, false, 1, 0, 0);

template <typename T>
__aicore__ inline void body(LocalTensor<T>& x, LocalTensor<T>& y, LocalTensor<T>& z, LocalTensor<uint8_t>& bits,
                            LocalTensor<float>& f, LocalTensor<half>& h) {
    const int32_t n = 256;
    Add(z, x, y, n);
    Sub(z, z, y, n);
    Mul<T>(z, x, y, n);
    Max(z, x, y, n);
    Min(z, x, y, n);
    uint64_t mask[2] = {UINT64_MAX, UINT64_MAX};
    Add(z, x, y, mask, 2, {1, 1, 1, 8, 8, 8});
    Add<T, false>(z, x, y, MASK_PLACEHOLDER, 1, {1, 1, 1, 8, 8, 8});
    BinaryRepeatParams bp;
    Div(z, x, y, 64, 4, bp);
    Adds(z, x, (T)1.5, n);
    Muls<T, true>(z, x, (T)2, 64, 2, {1, 1, 8, 8});
    Maxs(z, z, (T)0, n);
    Mins(z, z, (T)6, n);
    LeakyRelu(z, x, (T)0.1, n);
    Exp(z, x, n);
    Ln(z, x, n);
    Abs(z, x, n);
    Sqrt(z, x, n);
    Rsqrt(z, x, n);
    Reciprocal(z, x, n);
    Relu(z, x, n);
    Exp<T, true>(z, x, 64, 2, {1, 1, 8, 8});
    Duplicate(z, (T)0, n);
    Duplicate<T>(z, 1, mask, 2, 1, 8);
    CreateVecIndex(z, (T)0, n);
    Brcb(z, x, 2, {1, 8});
    // TransDataTo5HD the ways kernels write it: a params struct filled field by field or built in
    // one go (a namespace-scope constexpr below), lists of tensors, of addresses, of __ubuf__ pointers
    struct TransDataTo5HDParams tp;
    tp.repeatTimes = 2;
    tp.dstRepStride = 16;
    tp.srcRepStride = 1;
    LocalTensor<T> dl[16], sl[16];
    uint64_t da[16], sa[16];
    __ubuf__ T* dp[16];
    __ubuf__ T* sp[16];
    __ubuf__ T* zb = (__ubuf__ T*)z.GetPhyAddr();
    for (int k = 0; k < 16; ++k) {
        dl[k] = z[k * (32 / sizeof(T))];
        sl[k] = x[k * 64];
        da[k] = (uint64_t)z[k * 64].GetPhyAddr();
        sa[k] = x.GetPhyAddr() + k * 32;
        dp[k] = zb + k * (32 / sizeof(T));
        sp[k] = (__ubuf__ T*)x.GetPhyAddr() + k * 64;
    }
    TransDataTo5HD(dl, sl, tp);
    TransDataTo5HD<T>(da, sa, ONE_REPEAT);
    TransDataTo5HDImpl(dp, sp, tp);
    Compare(bits, x, y, CMPMODE::LT, n);
    Compares(bits, x, (T)0, CMPMODE::GE, n);
    Select(z, bits, x, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);
    Select(z, bits, x, (T)0, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    Select(z, bits, x, y, SELMODE::VSEL_CMPMASK_SPR, mask, 2, bp);
    ReduceSum(z, x, y, n);
    T acc = GetAccVal<T>();
    uint64_t accBits = GetAccVal();
    T accSpr = GetReduceRepeatSumSpr<T>();
    (void)acc, (void)accBits, (void)accSpr;
    AddRelu(z, x, y, n);
    SubRelu<T>(z, x, y, mask, 2, {1, 1, 1, 8, 8, 8});
    ReducePairElem<ReduceType::SUM, T>(z, x, 64, 2, 1, 1, 8);
    PairReduceSum(z, x, 2, mask, 1, 1, 8);
    FusedMulAdd(z, x, y, n);
    FusedMulAdd(z, x, y, mask, 2, {1, 1, 1, 8, 8, 8});
    FusedMulAdd<T, false>(z, x, y, MASK_PLACEHOLDER, 1, {1, 1, 1, 8, 8, 8});
    ReduceMax(z, x, y, n, true);
    ReduceMin<T>(z, x, y, 64, 2, 8, false);
    WholeReduceSum(z, x, 64, 2, 1, 1, 8);
    WholeReduceMax(z, x, mask, 2, 1, 1, 8, ReduceOrder::ORDER_INDEX_VALUE);
    ReduceRepeat<ReduceType::MIN, T>(z, x, 64, 2, 1, 1, 8);
    BlockReduceSum(z, x, 2, 64, 1, 1, 8);
    ReduceDataBlock<ReduceType::MAX, T>(z, x, mask, 2, 1, 1, 8);
    Cast(f, h, RoundMode::CAST_NONE, n);
    Cast(h, f, RoundMode::CAST_ODD, 64, 2, {1, 1, 4, 8});
    SetVectorMask<T, MaskMode::NORMAL>(0, 64);
    SetMaskCount();
    SetVectorMask<T, MaskMode::COUNTER>(100);
    SetMaskNorm();
    ResetMask();
}

// calls passed along as function pointers of their documented types
template <typename T>
using BinaryOp = void(const LocalTensor<T>&, const LocalTensor<T>&, const LocalTensor<T>&, const int32_t&);
template <typename T>
using BinaryL0Op = void(const LocalTensor<T>&, const LocalTensor<T>&, const LocalTensor<T>&, uint64_t, const uint8_t,
                        const BinaryRepeatParams&);
template <typename T>
using UnaryOp = void(const LocalTensor<T>&, const LocalTensor<T>&, const int32_t&);
template <typename T, BinaryOp<T>* op, BinaryL0Op<T>* op0, UnaryOp<T>* uop>
void through_pointers(const LocalTensor<T>& x, int32_t n) {
    op(x, x, x, n);
    op0(x, x, x, 64, 1, {1, 1, 1, 8, 8, 8});
    uop(x, x, n);
}

extern "C" __global__ __aicore__ void sample(GM_ADDR out) {
    (void)out;
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64 * 1024);
    TBuf<> plain;  // the position defaults to LCM (VECCALC)
    pipe.InitBuffer(plain, 1024);
    LocalTensor<half> a = buf.GetWithOffset<half>(2048, 0), b = buf.GetWithOffset<half>(2048, 8192),
                      c = buf.GetWithOffset<half>(2048, 16384);
    LocalTensor<float> fa = buf.GetWithOffset<float>(1024, 24576), fb = buf.GetWithOffset<float>(1024, 32768),
                       fc = buf.GetWithOffset<float>(1024, 40960);
    LocalTensor<uint8_t> bits = buf.GetWithOffset<uint8_t>(1024, 49152);
    body(a, b, c, bits, fa, a);
    body(fa, fb, fc, bits, fa, a);
    LocalTensor<int16_t> i = buf.GetWithOffset<int16_t>(1024, 0);
    And(i, i, i, 128);
    Or(i, i, i, 128);
    Not(i, i, 128);
    Transpose(i, i);
    Transpose(c.ReinterpretCast<uint16_t>(), a.ReinterpretCast<uint16_t>());
    Axpy(fa, a, (half)2, 64);
    LocalTensor<uint32_t> off = buf.GetWithOffset<uint32_t>(256, 53248);
    Gather(c, a, off, 0, 128);
    through_pointers<half, Div, Sub, Exp>(a, 128);
    through_pointers<float, Max, Mul, Sqrt>(fa, 64);
}
"""


def compile_source(tmp_path, source: str, extra=()):
    cxx = find_compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++, clang++ or c++ on PATH, or $CXX)")
    src = tmp_path / "k.cpp"
    src.write_text(source)
    return subprocess.run([cxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I",
                           str(INCLUDE_DIR), *extra, "-c", str(src), "-o", str(tmp_path / "k.o")],
                          capture_output=True, text=True)


@pytest.mark.slow
def test_kernel_style_use_is_warning_free(tmp_path):
    r = compile_source(tmp_path, KERNEL_STYLE)
    assert r.returncode == 0, r.stderr[-4000:]


@pytest.mark.slow
def test_the_baseline_build_without_wide_simd_compiles_warning_free(tmp_path):
    """MPNPU_GEMM_BASELINE leaves out the F16C / AVX2 rows that need it: nothing may still call them."""
    r = compile_source(tmp_path, KERNEL_STYLE, ["-DMPNPU_GEMM_BASELINE"])
    assert r.returncode == 0, r.stderr[-4000:]


SMALL_NAMES = r"""
#include "kernel_tiling/kernel_tiling.h"
#define DT_BF16 bfloat16_t
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "kernel_type.h"
#include "kernel_operator_intf.h"
#include "kernel_common.h"
#include "impl/dav_c220/kernel_operator_reg_others_impl.h"
#include "kernel_operator_dump_tensor_intf.h"
#include "securec.h"
using namespace AscendC;
// the cube loads as kernels spell them: braced params and registers, a config template argument
void cube_loads(LocalTensor<half>& l0b, LocalTensor<half>& l1, LocalTensor<float>& l0c, uint16_t w, uint16_t kStart) {
    static constexpr IsResetLoad3dConfig CONFIG = {false, true};
    const uint8_t pads[PAD_SIZE] = {0, 0, 0, 0};
    SetFmatrix(1, w, pads, FmatrixMode::FMATRIX_RIGHT);
    SetLoadDataRepeat({0, 1, 0});
    SetLoadDataBoundary(0);
    SetLoadDataPaddingValue<half>(half(0));
    LoadData<half, CONFIG>(l0b, l1,
                           {pads, 1, w, 32, 32, BLOCK_CUBE, kStart, 0, 1, 1, 1, 1, 1, 1, true, false, 0, 0, 0, 1});
    LoadData(l0b, l1, LoadData3DParamsV2Pro(32, false, false, false, false, false, (uint64_t(16) << 16) | 32,
                                            0X10101010101));
    SetFixPipeConfig<float>(l0c, true);
    DumpTensor(l0c, 1, 16);
}
static_assert(DT_FLOAT == 0 && DT_INT4 == 29 && ge::DT_FLOAT4_E1M2 == 41 && DT_MAX == 42, "documented values");
static_assert(ONE_BLK_FLOAT_NUM == 8, "floats in a block");
static_assert(B32_BYTE_SIZE == 4 && B32_DATA_NUM_PER_BLOCK == 8 && B32_DATA_NUM_PER_REPEAT == 64 &&
              FULL_MASK == 0xFFFFFFFFFFFFFFFFull && BRCB_BROADCAST_NUMBER == 8, "32-bit counts and masks");
static_assert(uint8_t(CacheMode::CACHE_MODE_DISABLE) == 0 && uint8_t(CacheMode::CACHE_MODE_NORMAL) == 1 && RW == 3,
              "documented values");
inline void hints(GlobalTensor<float>& g) {
    g.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
    g.SetL2CacheHint<CacheRwMode::READ>(AscendC::CacheMode::CACHE_MODE_NORMAL);
}
void copies(LocalTensor<float>& a, GlobalTensor<float>& g, uint32_t len) {
    DataCopyPad(a, g, {1, static_cast<uint16_t>(len), 0, 0}, {false, 0, 0, 0});  // DataCopyParams
    DataCopyPad(g, a, {1, static_cast<uint16_t>(len), 0, 0});
    DataCopyPad(a, g, {1, len, 0, 0, 0}, {false, 0, 0, 0.0f});                     // DataCopyExtParams
    DataCopyPad(g, a, {static_cast<uint16_t>(1), len, 0u, 0u, 0u});
    DataCopyExtParams ext{1, len, 0, 0};
    DataCopyPad(a, g, ext, {false, 0, 0, 0});
    DataCopyPad(a, g, ext, DataCopyPadExtParams<float>{true, 1, 1, 2.0f});
    DataCopyPad(g, a, ext);
}
float scalars(float f, int mode) {
    bfloat16_t b = Cast(f);
    DT_BF16 c = Cast(-f);
    uint8_t bytes[8];
    int rc = memcpy_s(bytes, sizeof(bytes), &f, sizeof(f)) + memset_s(bytes, sizeof(bytes), 0, 8);
    assert(rc == 0);
    if (mode) Trap();
    return Cast(b) + ToFloat(c) + float(rc);
}
"""


@pytest.mark.slow
def test_small_names_compile_warning_free(tmp_path):
    """The include paths, ge::DataType (after a tiling header's own DT_BF16 macro), securec.h, the scalar
    Cast, Trap, and DataCopyPad with braced lists of four and five values, under -Wpedantic -Werror."""
    r = compile_source(tmp_path, SMALL_NAMES)
    assert r.returncode == 0, r.stderr[-4000:]


REFUSED = [
    ("AscendC::Select<float, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE>(d, d, d, 1, AscendC::BinaryRepeatParams());",
     "mode 1 without a mask argument is Select(dst, selMask, src0, repeatTime, repeatParams)"),
    ("auto r = d < d; (void)r;", "the whole-tensor compare operator (dst = src0 < src1) is not implemented"),
    ("AscendC::Adds(d, 1.0f, d, 64);", "Adds with the scalar before the tensor (the flexible scalar position form)"),
    ("AscendC::LocalTensor<uint8_t> b; AscendC::Compares(b, 1.0f, d, AscendC::CMPMODE::LT, 64);",
     "Compares with the scalar before the tensor"),
    ("AscendC::LocalTensor<uint8_t> b; AscendC::Select(d, b, 1.0f, d, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, 64);",
     "Select with a scalar src0 (the flexible scalar position form)"),
    ("AscendC::SetDeqScale(d.ReinterpretCast<uint64_t>(), AscendC::VdeqInfo());",
     "SetDeqScale(vdeq, vdeqInfo) feeds CastDequant"),
    # the normalization calls' refused forms (mpnpu/normalization.h)
    ("AscendC::LocalTensor<half> h; LayerNormTiling t; AscendC::LayerNorm<half, true>(h, h, h, h, h, h, half(0), t);",
     "LayerNorm: isReuseSource is for float data only"),
    ("static constexpr AscendC::LayerNormConfig c{false, false, true, true}; LayerNormSeparateTiling t; "
     "AscendC::LayerNorm<float, float, false, c>(d, d, d, d, d, d, 0.0f, AscendC::LayerNormPara{}, t);",
     "LayerNorm: isOnlyOutput = true is not supported"),
    ("static constexpr AscendC::NormalizeConfig c{AscendC::ReducePattern::RA, -1, false, false, false}; "
     "AscendC::Normalize<float, float, false, c>(d, d, d, d, d, d, d, 0.0f, AscendC::NormalizePara{});",
     "Normalize: only ReducePattern::AR is supported"),
    ("AscendC::LocalTensor<int32_t> i; RmsNormTiling t; AscendC::RmsNorm<int32_t>(i, i, i, 0, t);",
     "RmsNorm: T is half or float"),
    ("AscendC::LocalTensor<half> h; AscendC::WelfordUpdate<float, half>(h, h, h, h, d, AscendC::WelfordUpdateParam{});",
     "WelfordUpdate: U (the means and variances) is float"),
    ("AscendC::FasterGeluV2(d, d, 64u);", "FasterGeluV2: mpnpu does not implement it"),
    # TransData and the Layout structures (mpnpu/transdata.h, mpnpu/layout.h)
    ("static constexpr AscendC::TransDataConfig c{AscendC::DataFormat::ND, AscendC::DataFormat::NZ}; "
     "AscendC::LocalTensor<half> h; auto l = AscendC::MakeLayout(AscendC::MakeShape(1, 2), AscendC::MakeStride()); "
     "AscendC::TransData<c>(h, h, AscendC::TransDataParams<decltype(l), decltype(l)>{l, l});",
     "TransData: this chip class converts NCDHW <-> NDC1HWC0 and NCDHW <-> FRACTAL_Z_3D only"),
    ("static constexpr AscendC::TransDataConfig c{AscendC::DataFormat::NCDHW, AscendC::DataFormat::NDC1HWC0}; "
     "AscendC::LocalTensor<half> h; auto a = AscendC::MakeLayout(AscendC::MakeShape(1, 16, 1, 16), "
     "AscendC::MakeStride()); auto b = AscendC::MakeLayout(AscendC::MakeShape(1, 1, 1, 1, 16, 16), "
     "AscendC::MakeStride()); AscendC::TransData<c>(h, h, AscendC::TransDataParams<decltype(a), decltype(b)>{a, b});",
     "TransData: params.srcLayout's shape has the wrong rank for config.srcFormat"),
    ("(void)AscendC::MakeLayout(AscendC::MakeShape(2, 3), AscendC::MakeStride())(AscendC::MakeCoord(1, 1));",
     "Layout: this Layout has no stride (MakeStride() was empty), so it cannot map a coordinate"),
    ("(void)AscendC::MakeLayout(AscendC::MakeShape(2, 3), AscendC::MakeStride(3, 1))(AscendC::MakeCoord(1, 1, 1));",
     "Crd2Idx: the coordinate, the shape and the stride must have the same number of entries"),
]


@pytest.mark.slow
def test_refused_forms_are_clear_compile_errors(tmp_path):
    """Each refused form in one translation unit: the compiler reports every static_assert."""
    body = "\n".join(f"void f{i}(AscendC::LocalTensor<float>& d) {{ {code} }}" for i, (code, _) in enumerate(REFUSED))
    r = compile_source(tmp_path, "#include \"kernel_operator.h\"\n" + body + "\n", extra=("-fsyntax-only",))
    assert r.returncode != 0
    for _, msg in REFUSED:
        assert msg in r.stderr, f"{msg!r} not reported:\n{r.stderr[-3000:]}"


HOST_SHAPES = r"""
#include <cstdio>
#include "exe_graph/runtime/shape.h"
#include "graph/types.h"

int main() {
    gert::Shape s;
    s.AppendDim(2).AppendDim(3);
    s.AppendDim(4);
    gert::Shape t{2, 3, 4};
    gert::Shape u;
    for (int i = 0; i < 30; ++i) u.AppendDim(1);
    ge::graphStatus ok = ge::GRAPH_SUCCESS;
    std::printf("%zu %lld %lld %d %d %lld %d %zu %d %d\n", s.GetDimNum(), (long long)s.GetDim(1),
                (long long)s.GetShapeSize(), int(s == t), int(s.GetDim(3) == gert::Shape::kInvalidDimValue),
                (long long)gert::Shape().GetShapeSize(), int(gert::Shape().IsScalar()), u.GetDimNum(),
                int(ok == 0u), int(ge::DT_FLOAT16));
    return 0;
}
"""


def test_the_host_shape_and_graph_types_unit_tests_build_their_tiling_with(tmp_path):
    """gert::Shape (append, index, size, the invalid value past the last dimension, at most 25
    dimensions), ge::graphStatus and ge::DataType from their host include paths, warning-free."""
    cxx = find_compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++, clang++ or c++ on PATH, or $CXX)")
    src, exe = tmp_path / "h.cpp", tmp_path / "h"
    src.write_text(HOST_SHAPES)
    build = subprocess.run([cxx, "-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I", str(INCLUDE_DIR),
                            str(src), "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.stdout == "3 3 24 1 1 1 1 25 1 1\n"
