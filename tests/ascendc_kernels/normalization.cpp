// A kernel of our own for the normalization calls: x [R, H] (R = 8 rows of H = 64 floats) is copied in and
// mode 0: RmsNorm with gamma, its buffer the rest of UB (PopStackBuffer) and its tiling from the host helper;
// mode 1: LayerNorm [1, R, H] with a sharedTmpBuffer of the helper's minimum (y, then mean and variance after
// the rows); copied out. Misuse: mode 10, a sharedTmpBuffer below the minimum; 11, LayerNorm's mean output
// on gamma. The copy in and the call are ordered by the MTE2_V flag, the call and the copy out by V_MTE3 (a test
// drops one to see the race).
#include "kernel_operator.h"
#include "tiling/tiling_api.h"

using namespace AscendC;

constexpr uint32_t R = 8;
constexpr uint32_t H = 64;

extern "C" __global__ __aicore__ void normalization(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
                                                    int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<float> xg, gg, bg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, R * H);
    gg.SetGlobalBuffer((__gm__ float*)gamma, H);
    bg.SetGlobalBuffer((__gm__ float*)beta, H);
    yg.SetGlobalBuffer((__gm__ float*)y, R * H + 2 * R);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 8192);
    LocalTensor<float> src = buf.GetWithOffset<float>(R * H, 0);
    LocalTensor<float> dst = buf.GetWithOffset<float>(R * H + 2 * R, 2048);
    LocalTensor<float> g = buf.GetWithOffset<float>(H, 4224);
    LocalTensor<float> b = buf.GetWithOffset<float>(H, 4480);
    LocalTensor<float> mean = dst[R * H];
    LocalTensor<float> var = dst[R * H + R];
    const TensorShape shape({1, R, H});

    DataCopy(src, xg, R * H);
    DataCopy(g, gg, H);
    DataCopy(b, bg, H);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    if (mode == 0) {
        LocalTensor<uint8_t> stack;
        if (!PopStackBuffer<uint8_t, TPosition::LCM>(stack)) return;
        RmsNormTiling tiling;
        GetRmsNormTilingInfo(shape, shape, stack.GetSize(), sizeof(float), tiling);
        RmsNorm<float>(dst, src, g, stack, 1e-5f, tiling);
    } else {
        uint32_t most = 0, least = 0;
        GetLayerNormMaxMinTmpSize(TensorShape({1, R, H, H}), sizeof(float), false, most, least);
        LayerNormTiling tiling;
        GetLayerNormNDTilingInfo(TensorShape({1, R, H, H}), least, sizeof(float), false, tiling);
        LocalTensor<uint8_t> tmp = buf.GetWithOffset<uint8_t>(mode == 10 ? least - 32 : least, 4736);
        if (mode == 11) {
            LayerNorm<float>(dst, g, var, src, g, b, tmp, 1e-5f, tiling);  // the mean over gamma
        } else {
            LayerNorm<float>(dst, mean, var, src, g, b, tmp, 1e-5f, tiling);
        }
    }
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(yg, dst, R * H + 2 * R);
}
