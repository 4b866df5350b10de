// The cube core's L1 -> L0 loads, one call per launch, for test_cube_loads.py: the source elements go
// GM -> L1 (at an element offset), the L0A / L0B destination is filled with a sentinel, the load
// under test runs, and the whole destination comes back to GM element by element, so every element
// the call writes (and every one it must leave alone) is checked.
//
// op 0: LoadData with LoadData3DParamsV2 (the params set the feature-map and padding registers)
// op 1: the same with IsResetLoad3dConfig {false, false}: SetFmatrix / SetLoadDataPaddingValue give them
// op 2: LoadData with LoadData3DParamsV2Pro (the registers, and extConfig / filterConfig)
// op 3: LoadDataWithTranspose        op 4: LoadData with LoadData2DParamsV2
// op 5: DumpTensor of the source     op 6: SetFixPipeConfig on the destination (a misuse)
// DROP_SYNC: no MTE2 -> MTE1 flag between the copy into L1 and the load (a race)
// p (int32): 0 dst (0 L0A, 1 L0B); op 0-2: 1 l1H, 2 l1W, 3 channelSize, 4 kExtension, 5 mExtension,
// 6 kStartPt, 7 mStartPt, 8 strideW, 9 strideH, 10 filterW, 11 filterH, 12 dilationW, 13 dilationH,
// 14 enTranspose, 15-18 padList, 19 padValue, 20 repeatTime, 21 repeatStride, 22 repeatMode,
// 23 boundary (bytes); op 3: 1 startIndex, 2 repeatTimes, 3 srcStride, 4 dstGap, 5 dstFracGap;
// op 4: 1 mStartPosition, 2 kStartPosition, 3 mStep, 4 kStep, 5 srcStride, 6 dstStride, 7 ifTranspose;
// all: 24 source elements, 25 destination elements, 26 the source's element offset in L1, 27 sentinel;
// op 1, 2: 28 the feature map in the right register (fMatrixCtrl true).
// dtype: 0 half, 1 float, 2 int8_t.
#include "kernel_operator.h"
using namespace AscendC;

static constexpr IsResetLoad3dConfig FROM_REGISTERS = {false, false};

template <typename T>
static LoadData3DParamsV2<T> v2_params(const GlobalTensor<int32_t>& p) {
    LoadData3DParamsV2<T> q;
    for (int i = 0; i < 4; ++i) q.padList[i] = uint8_t(p.GetValue(15 + i));
    q.l1H = uint16_t(p.GetValue(1));
    q.l1W = uint16_t(p.GetValue(2));
    q.channelSize = uint16_t(p.GetValue(3));
    q.kExtension = uint16_t(p.GetValue(4));
    q.mExtension = uint16_t(p.GetValue(5));
    q.kStartPt = uint16_t(p.GetValue(6));
    q.mStartPt = uint16_t(p.GetValue(7));
    q.strideW = uint8_t(p.GetValue(8));
    q.strideH = uint8_t(p.GetValue(9));
    q.filterW = uint8_t(p.GetValue(10));
    q.filterH = uint8_t(p.GetValue(11));
    q.dilationFilterW = uint8_t(p.GetValue(12));
    q.dilationFilterH = uint8_t(p.GetValue(13));
    q.enTranspose = p.GetValue(14) != 0;
    q.padValue = T(p.GetValue(19));
    return q;
}

// The feature map into the register p[28] names (0 left, 1 right; the other one gets a 1 x 1 map),
// the padding value into its register.
template <typename T>
static void set_registers(const GlobalTensor<int32_t>& p) {
    uint8_t pads[PAD_SIZE];
    for (int i = 0; i < 4; ++i) pads[i] = uint8_t(p.GetValue(15 + i));
    const uint8_t none[PAD_SIZE] = {0, 0, 0, 0};
    const bool right = p.GetValue(28) != 0;
    const FmatrixMode mine = right ? FmatrixMode::FMATRIX_RIGHT : FmatrixMode::FMATRIX_LEFT;
    SetFmatrix(1, 1, none, right ? FmatrixMode::FMATRIX_LEFT : FmatrixMode::FMATRIX_RIGHT);
    SetFmatrix(uint16_t(p.GetValue(1)), uint16_t(p.GetValue(2)), pads, mine);  // SET_FMATRIX
    SetLoadDataPaddingValue(T(p.GetValue(19)));
}

template <typename T>
static void load(const LocalTensor<T>& dst, const LocalTensor<T>& src, const GlobalTensor<int32_t>& p, uint32_t op) {
    if (op <= 2) {
        SetLoadDataRepeat({uint16_t(p.GetValue(21)), uint8_t(p.GetValue(20)), uint8_t(p.GetValue(22))});
        SetLoadDataBoundary(uint32_t(p.GetValue(23)));
    }
    if (op == 0) {
        LoadData(dst, src, v2_params<T>(p));  // LOAD_V2
    } else if (op == 1) {
        set_registers<T>(p);
        LoadData3DParamsV2<T> q = v2_params<T>(p);
        q.l1H = 1;  // (what the params say is not used: the registers are)
        q.l1W = 1;
        q.padList[0] = 9;
        q.padValue = T(0);
        q.fMatrixCtrl = p.GetValue(28) != 0;
        LoadData<T, FROM_REGISTERS>(dst, src, q);  // LOAD_V2_REGISTERS
    } else if (op == 2) {
        set_registers<T>(p);
        LoadData3DParamsV2Pro q;
        q.fMatrixCtrl = p.GetValue(28) != 0;
        q.channelSize = uint16_t(p.GetValue(3));
        q.enTranspose = p.GetValue(14) != 0;
        q.extConfig = (uint64_t(uint16_t(p.GetValue(7))) << 48) | (uint64_t(uint16_t(p.GetValue(6))) << 32) |
                      (uint64_t(uint16_t(p.GetValue(5))) << 16) | uint64_t(uint16_t(p.GetValue(4)));
        q.filterConfig = (uint64_t(uint8_t(p.GetValue(13))) << 40) | (uint64_t(uint8_t(p.GetValue(12))) << 32) |
                         (uint64_t(uint8_t(p.GetValue(11))) << 24) | (uint64_t(uint8_t(p.GetValue(10))) << 16) |
                         (uint64_t(uint8_t(p.GetValue(9))) << 8) | uint64_t(uint8_t(p.GetValue(8)));
        LoadData(dst, src, q);  // LOAD_V2PRO
    } else if (op == 3) {
        LoadData2dTransposeParams q(uint16_t(p.GetValue(1)), uint8_t(p.GetValue(2)), uint16_t(p.GetValue(3)),
                                    uint16_t(p.GetValue(4)), uint16_t(p.GetValue(5)));
        LoadDataWithTranspose(dst, src, q);  // LOAD_TRANSPOSE
    } else if (op == 5) {
        DumpTensor(src, 7, 5);
        uint32_t dims[2] = {2, 4};
        DumpTensor(src, 8, 6, ShapeInfo(2, dims));
    } else if (op == 6) {
        SetFixPipeConfig<T>(dst, true);  // FIX_PIPE_CONFIG
    } else {
        LoadData2DParamsV2 q;
        q.mStartPosition = uint32_t(p.GetValue(1));
        q.kStartPosition = uint32_t(p.GetValue(2));
        q.mStep = uint16_t(p.GetValue(3));
        q.kStep = uint16_t(p.GetValue(4));
        q.srcStride = p.GetValue(5);
        q.dstStride = uint16_t(p.GetValue(6));
        q.ifTranspose = p.GetValue(7) != 0;
        LoadData(dst, src, q);  // LOAD_2DV2
    }
}

template <typename T>
static void run(GM_ADDR src, GM_ADDR prm, GM_ADDR out, uint32_t op) {
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 32);
    const uint32_t n_src = uint32_t(p.GetValue(24)), n_dst = uint32_t(p.GetValue(25));
    const uint32_t at = uint32_t(p.GetValue(26));
    const T sentinel = T(p.GetValue(27));
    GlobalTensor<T> srcGm, outGm;
    srcGm.SetGlobalBuffer((__gm__ T*)src, n_src);
    outGm.SetGlobalBuffer((__gm__ T*)out, n_dst);
    LocalMemAllocator<Hardware::L1> l1;
    LocalTensor<T> l1All = l1.Alloc<TPosition::A1, T>(at + n_src);
    LocalTensor<T> a1 = l1All[at];
    LocalTensor<T> l0;
    if (p.GetValue(0) == 0) {
        LocalMemAllocator<Hardware::L0A> l0a;
        l0 = l0a.Alloc<TPosition::A2, T>(n_dst);
    } else {
        LocalMemAllocator<Hardware::L0B> l0b;
        l0 = l0b.Alloc<TPosition::B2, T>(n_dst);
    }
    DataCopy(a1, srcGm, n_src);
    for (uint32_t i = 0; i < n_dst; ++i) l0.SetValue(i, sentinel);
#ifndef DROP_SYNC
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
#endif
    load(l0, a1, p, op);
    PipeBarrier<PIPE_ALL>();
    for (uint32_t i = 0; i < n_dst; ++i) outGm.SetValue(i, l0.GetValue(i));
}

extern "C" __global__ __aicore__ void cube_loads(GM_ADDR src, GM_ADDR prm, GM_ADDR out, uint32_t op, uint32_t dtype) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    if (dtype == 0) run<half>(src, prm, out, op);
    else if (dtype == 1) run<float>(src, prm, out, op);
    else run<int8_t>(src, prm, out, op);
}
