// TransData and the Layout structures on one vector core.
// transdata: src (srcElems 16-bit values, an NCDHW one padded per (n, c, d) row to 16) is copied to UB,
//   converted by TransData<config kind> (1 NCDHW -> NDC1HWC0, 2 NDC1HWC0 -> NCDHW, 3 NCDHW ->
//   FRACTAL_Z_3D, 4 FRACTAL_Z_3D -> NCDHW) and dstElems copied out. type: 0 half, 1 bfloat16_t,
//   2 int16_t, 3 uint16_t, 4 float (refused). tmp 0: the form without a buffer; 1: a sharedTmpBuffer of
//   tmpBytes (0: GetTransDataMaxMinTmpSize's minimum). misuse 1: the split-channel layout's C1 one too
//   many; 2: dst is src. misc[0], [1]: the helper's min and max (0xFFFFFFFF when it refuses).
// layout_index: Layout offsets of every coordinate of a few layouts into out (see the test).
#include "kernel_operator.h"
using namespace AscendC;

constexpr TransDataConfig CFG1 = {DataFormat::NCDHW, DataFormat::NDC1HWC0};
constexpr TransDataConfig CFG2 = {DataFormat::NDC1HWC0, DataFormat::NCDHW};
constexpr TransDataConfig CFG3 = {DataFormat::NCDHW, DataFormat::FRACTAL_Z_3D};
constexpr TransDataConfig CFG4 = {DataFormat::FRACTAL_Z_3D, DataFormat::NCDHW};

template <const TransDataConfig& cfg, typename T, typename U, typename S>
static void call(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& tmp, bool withTmp,
                 const TransDataParams<U, S>& params) {
    if (withTmp) TransData<cfg>(dst, src, tmp, params);  // the call
    else TransData<cfg>(dst, src, params);
}

template <typename T>
static void run(GM_ADDR src, GM_ADDR dst, GM_ADDR misc, int32_t n, int32_t c, int32_t d, int32_t h, int32_t w,
                int32_t kind, int32_t tmp, uint32_t tmpBytes, int32_t misuse) {
    const int32_t c1 = (c + 15) / 16, n1 = (n + 15) / 16, hwp = (h * w + 15) / 16 * 16;
    const uint32_t ncdhw = uint32_t(n * c * d * hwp), ndc1hwc0 = uint32_t(n * d * c1 * h * w * 16);
    const uint32_t fz = uint32_t(d * c1 * h * w * n1 * 256);
    const uint32_t split = kind <= 2 ? ndc1hwc0 : fz;
    const uint32_t srcElems = (kind == 1 || kind == 3) ? ncdhw : split;
    const uint32_t dstElems = (kind == 1 || kind == 3) ? split : ncdhw;
    const int32_t bad = misuse == 1 ? 1 : 0;
    auto ncdhwL = MakeLayout(MakeShape(n, c, d, h, w), MakeStride());
    auto ndc1hwc0L = MakeLayout(MakeShape(n, d, c1 + bad, h, w, 16), MakeStride());
    auto fzL = MakeLayout(MakeShape(d, c1 + bad, h, w, n1, 16, 16), MakeStride());

    GlobalTensor<uint32_t> miscGm;
    miscGm.SetGlobalBuffer((__gm__ uint32_t*)misc);
    const TransDataConfig& cfg = kind == 1 ? CFG1 : kind == 2 ? CFG2 : kind == 3 ? CFG3 : CFG4;
    const bool srcNcdhw = kind == 1 || kind == 3;
    const TensorShape ncShape({n, c, d, h, w});
    const TensorShape spShape = kind <= 2 ? TensorShape({n, d, c1, h, w, 16}) : TensorShape({d, c1, h, w, n1, 16, 16});
    uint32_t lo = 0, hi = 0;
    const TensorDataType dt = sizeof(T) == 2 ? ge::DT_FLOAT16 : ge::DT_FLOAT;
    const bool ok = GetTransDataMaxMinTmpSize(*platform_ascendc::PlatformAscendCManager::GetInstance(),
                                              srcNcdhw ? ncShape : spShape, srcNcdhw ? spShape : ncShape, dt, cfg, hi,
                                              lo);
    miscGm.SetValue(0, ok ? lo : 0xFFFFFFFFu);
    miscGm.SetValue(1, ok ? hi : 0xFFFFFFFFu);
    if (tmpBytes == 0) tmpBytes = lo;

    GlobalTensor<T> srcGm, dstGm;
    srcGm.SetGlobalBuffer((__gm__ T*)src);
    dstGm.SetGlobalBuffer((__gm__ T*)dst);
    TPipe pipe;
    TBuf<TPosition::VECCALC> srcBuf, dstBuf, tmpBuf;
    pipe.InitBuffer(srcBuf, srcElems * 2);
    pipe.InitBuffer(dstBuf, dstElems * 2);
    pipe.InitBuffer(tmpBuf, tmpBytes ? tmpBytes : 32);
    LocalTensor<T> s = srcBuf.Get<T>(), o = misuse == 2 ? s : dstBuf.Get<T>();
    const uint32_t srcCopy = srcElems * 2 / sizeof(T), dstCopy = dstElems * 2 / sizeof(T);
    DataCopy(s, srcGm, srcCopy);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    const LocalTensor<uint8_t> t = tmpBuf.Get<uint8_t>();
    if (kind == 1) call<CFG1>(o, s, t, tmp, TransDataParams<decltype(ncdhwL), decltype(ndc1hwc0L)>{ncdhwL, ndc1hwc0L});
    if (kind == 2) call<CFG2>(o, s, t, tmp, TransDataParams<decltype(ndc1hwc0L), decltype(ncdhwL)>{ndc1hwc0L, ncdhwL});
    if (kind == 3) call<CFG3>(o, s, t, tmp, TransDataParams<decltype(ncdhwL), decltype(fzL)>{ncdhwL, fzL});
    if (kind == 4) call<CFG4>(o, s, t, tmp, TransDataParams<decltype(fzL), decltype(ncdhwL)>{fzL, ncdhwL});
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(dstGm, o, dstCopy);
}

extern "C" __global__ __aicore__ void transdata(GM_ADDR src, GM_ADDR dst, GM_ADDR misc, int32_t n, int32_t c,
                                                int32_t d, int32_t h, int32_t w, int32_t kind, int32_t type,
                                                int32_t tmp, uint32_t tmpBytes, int32_t misuse) {
    if (type == 0) run<half>(src, dst, misc, n, c, d, h, w, kind, tmp, tmpBytes, misuse);
    if (type == 1) run<bfloat16_t>(src, dst, misc, n, c, d, h, w, kind, tmp, tmpBytes, misuse);
    if (type == 2) run<int16_t>(src, dst, misc, n, c, d, h, w, kind, tmp, tmpBytes, misuse);
    if (type == 3) run<uint16_t>(src, dst, misc, n, c, d, h, w, kind, tmp, tmpBytes, misuse);
    if (type == 4) run<float>(src, dst, misc, n, c, d, h, w, kind, tmp, tmpBytes, misuse);
}

// Compile-time facts of the Layout structures.
static_assert(is_layout<decltype(MakeLayout(MakeShape(4, 2), MakeStride(4, 1)))>::value);
static_assert(!is_layout<Shape<int, int>>::value);
static_assert(decltype(Crd2Idx(MakeCoord(Std::Int<1>{}, Std::Int<2>{}, Std::Int<3>{}),
                               MakeShape(Std::Int<3>{}, Std::Int<4>{}, Std::Int<5>{}),
                               MakeStride(Std::Int<20>{}, Std::Int<5>{}, Std::Int<1>{})))::value == 33);
static_assert(MakeLayout(MakeShape(4, 2), MakeStride(4, 1))(MakeCoord(3, 1)) == 13);

// out: [0, 60) layout (3, 4, 5) : (1, 3, 12) at every (i, j, k), written at i*20 + j*5 + k;
// [60, 120) layout (3, 4, 5) : (20, 5, 1) likewise; [120, 128) layout (4, 2) : (4, 1) at (i, j), at i*2 + j;
// [128] the nested ((2, 4), (3, 5)) : ((3, 6), (1, 24)) at (11, 12); [129] layout (4, 2) : (4, 1) at the
// integer 5 (split over the shape, first entry fastest); [130, 133) GetShape's entries of the first layout,
// [133, 136) its GetStride's.
extern "C" __global__ __aicore__ void layout_index(GM_ADDR out) {
    GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out);
    Shape<int, int, int> shape = MakeShape(3, 4, 5);
    Stride<int, int, int> colMajor = MakeStride(1, 3, 12);
    Layout<Shape<int, int, int>, Stride<int, int, int>> a(shape, colMajor);
    AscendC::Layout b = MakeLayout(shape, MakeStride(20, 5, 1));
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
            for (int k = 0; k < 5; ++k) {
                o.SetValue(i * 20 + j * 5 + k, int32_t(a(MakeCoord(i, j, k))));
                o.SetValue(60 + i * 20 + j * 5 + k, int32_t(Crd2Idx(MakeCoord(i, j, k), b)));
            }
    auto c = MakeLayout(MakeShape(4, 2), MakeStride(4, 1));
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j) o.SetValue(120 + i * 2 + j, int32_t(c(MakeCoord(i, j))));
    auto nested = MakeLayout(MakeShape(MakeShape(2, 4), MakeShape(3, 5)), MakeStride(MakeStride(3, 6), MakeStride(1, 24)));
    o.SetValue(128, int32_t(nested(MakeCoord(11, 12))));
    o.SetValue(129, int32_t(c(5)));
    o.SetValue(130, Std::get<0>(a.GetShape()));
    o.SetValue(131, Std::get<1>(a.layout().GetShape()));
    o.SetValue(132, Std::get<2>(a.GetShape()));
    o.SetValue(133, Std::get<0>(a.GetStride()));
    o.SetValue(134, Std::get<1>(a.GetStride()));
    o.SetValue(135, Std::get<2>(a.GetStride()));
}
