// The basic API's 4:2 sparse multiply on a cube core: A (m x k int8_t, already Zz fractals in GM) and
// the dense B (k / 2 x n, Zn fractals) with its index (128 bytes a B fractal, the same order) copied to
// L1, A to L0A by LoadData, B and its index by LoadDataWithSparse, then MmadWithSparse and a Fixpipe
// of C (m x n int32_t, ND) to GM. shape: m, n, k.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void mmad_sparse(GM_ADDR a, GM_ADDR b, GM_ADDR index, GM_ADDR c, GM_ADDR shape) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GlobalTensor<uint16_t> dims;
    dims.SetGlobalBuffer((__gm__ uint16_t*)shape, 4);
    const uint16_t m = dims.GetValue(0), n = dims.GetValue(1), k = dims.GetValue(2);
    const uint32_t aBytes = uint32_t(m) * k, bBytes = uint32_t(k) / 2 * n;
    GlobalTensor<int8_t> aGm, bGm;
    GlobalTensor<uint8_t> idxGm;
    GlobalTensor<int32_t> cGm;
    aGm.SetGlobalBuffer((__gm__ int8_t*)a, aBytes);
    bGm.SetGlobalBuffer((__gm__ int8_t*)b, bBytes);
    idxGm.SetGlobalBuffer((__gm__ uint8_t*)index, bBytes / 4);
    cGm.SetGlobalBuffer((__gm__ int32_t*)c, uint32_t(m) * n);
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf, idxBuf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, aBytes);
    pipe.InitBuffer(b1Buf, bBytes);
    pipe.InitBuffer(idxBuf, bBytes / 4 < 32 ? 32 : bBytes / 4);
    pipe.InitBuffer(a2Buf, aBytes);
    pipe.InitBuffer(b2Buf, bBytes);
    pipe.InitBuffer(cBuf, uint32_t(m) * n * sizeof(int32_t));
    LocalTensor<int8_t> a1 = a1Buf.Get<int8_t>(), b1 = b1Buf.Get<int8_t>(), a2 = a2Buf.Get<int8_t>(),
                        b2 = b2Buf.Get<int8_t>();
    LocalTensor<uint8_t> idx1 = idxBuf.Get<uint8_t>();
    LocalTensor<int32_t> c1 = cBuf.Get<int32_t>();
    DataCopy(a1, aGm, aBytes);
    DataCopy(b1, bGm, bBytes);
    DataCopy(idx1, idxGm, bBytes / 4);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData2DParams loadA;
    loadA.repeatTimes = uint8_t(aBytes / 512);
    loadA.srcStride = 1;  // (fractal after fractal: A is Zz in GM already)
    LoadData(a2, a1, loadA);
    LoadData2DParams loadB;
    loadB.repeatTimes = uint8_t(bBytes / 512);
    LoadDataWithSparse(b2, b1, idx1, loadB);
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadWithSparse(c1, a2, b2, MmadParams(m, n, k));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 fp;
    fp.nSize = n;
    fp.mSize = m;
    fp.srcStride = m;
    fp.dstStride = n;
    fp.ndNum = 1;
    Fixpipe(cGm, c1, fp);
}
