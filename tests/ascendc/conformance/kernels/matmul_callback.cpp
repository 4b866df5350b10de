// MatmulCallBackFunc: a Matmul (cube-only kernel) whose A and / or B reach L1 through the kernel's own
// copy routines and / or whose C leaves L0C through its own copy-out routine.
//   mm_cb   C = A x B (+ bias) of half A and B, float C. A is stored with rows ``ldA`` elements apart and
//           B with rows ``ldB`` apart (wider than K / N: the Matmul's own copies, reading rows Ka / N
//           apart, would read the wrong elements); only the routines know (dataPtr's Info). The
//           copy-out routine writes C with rows ``ldC`` apart starting ``offC`` elements into c
//           (the Matmul's own copy writes rows N apart from c's start). ``cb`` picks the routines
//           (CB_A, CB_B, CB_OUT); ``mode`` MODE_ITERATE: Iterate + GetTensorC instead of IterateAll,
//           MODE_REGIST: Matmul registered with REGIST_MATMUL_OBJ instead of MatmulImpl with Init.
//           Each routine call appends a record of 8 int32 values to ``log`` (count in log[0]):
//           A: 1, row, col, useM, useK, 0, 0, 0; B: 2, row, col, useK, useN, 0, 0, 0;
//           C: 3, the tile's first element's offset from c (from gm), cBurstNum, burstLen, srcStride,
//           dstStride, oriNSize, 1 if tilingPtr is SetUserDefInfo's value (the tiling's address).
#include "kernel_operator.h"
#define ASCENDC_CUBE_ONLY
#include "lib/matmul_intf.h"
using namespace AscendC;

constexpr int32_t CB_A = 1, CB_B = 2, CB_OUT = 4;
constexpr int32_t MODE_ITERATE = 1, MODE_REGIST = 2, MODE_BIAS = 4;
constexpr int32_t LOG_MAX = 4096;

struct Info {
    __gm__ int32_t* log;
    __gm__ float* c;  // C's start
    const TCubeTiling* tiling;
    int32_t ldA, ldB, ldC, offC;
};

static int32_t align16(int32_t v) { return (v + 15) / 16 * 16; }

static void log_call(const Info& info, int32_t a, int32_t b, int32_t c, int32_t d, int32_t e, int32_t f, int32_t g,
                     int32_t h) {
    GlobalTensor<int32_t> log;
    log.SetGlobalBuffer(info.log, 1 + LOG_MAX * 8);
    const int32_t n = log.GetValue(0);
    if (n >= LOG_MAX) return;
    const int32_t v[8] = {a, b, c, d, e, f, g, h};
    for (int32_t i = 0; i < 8; ++i) log.SetValue(1 + n * 8 + i, v[i]);
    log.SetValue(0, n + 1);
}

// rows x cols halves of an ND matrix with rows ld elements apart, from element ``first`` of ``gm``,
// into an L1 block in NZ
__aicore__ inline void nd_block_to_nz(const LocalTensor<int8_t>& block, const __gm__ void* gm, int64_t first, int rows,
                                      int cols, int32_t ld) {
    GlobalTensor<half> src;
    src.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(const_cast<__gm__ void*>(gm)));
    Nd2NzParams p;
    p.ndNum = 1;
    p.nValue = uint16_t(rows);
    p.dValue = uint16_t(cols);
    p.srcNdMatrixStride = 0;
    p.srcDValue = uint16_t(ld);
    p.dstNzC0Stride = uint16_t(align16(rows));
    p.dstNzNStride = 1;
    p.dstNzMatrixStride = 0;
    DataCopy(block.ReinterpretCast<half>(), src[first], p);
}

// A's block (row, col) of stepM * baseM x stepKa * baseK, useM x useK of it, ND -> NZ into L1.
__aicore__ inline void CopyA(const LocalTensor<int8_t>& aMatrix, const __gm__ void* gm, int row, int col, int useM,
                             int useK, const uint64_t tilingPtr, const uint64_t dataPtr) {
    const TCubeTiling& t = *reinterpret_cast<const TCubeTiling*>(tilingPtr);
    const Info& info = *reinterpret_cast<const Info*>(dataPtr);
    log_call(info, 1, row, col, useM, useK, 0, 0, 0);
    const int32_t bm = (t.stepM > 0 ? t.stepM : 1) * t.baseM, bk = (t.stepKa > 0 ? t.stepKa : 1) * t.baseK;
    nd_block_to_nz(aMatrix, gm, int64_t(row) * bm * info.ldA + int64_t(col) * bk, useM, useK, info.ldA);
}

// B's block (row, col) of stepKb * baseK x stepN * baseN, useK x useN of it, ND -> NZ into L1.
__aicore__ inline void CopyB(const LocalTensor<int8_t>& bMatrix, const __gm__ void* gm, int row, int col, int useK,
                             int useN, const uint64_t tilingPtr, const uint64_t dataPtr) {
    const TCubeTiling& t = *reinterpret_cast<const TCubeTiling*>(tilingPtr);
    const Info& info = *reinterpret_cast<const Info*>(dataPtr);
    log_call(info, 2, row, col, useK, useN, 0, 0, 0);
    const int32_t bk = (t.stepKb > 0 ? t.stepKb : 1) * t.baseK, bn = (t.stepN > 0 ? t.stepN : 1) * t.baseN;
    nd_block_to_nz(bMatrix, gm, int64_t(row) * bk * info.ldB + int64_t(col) * bn, useK, useN, info.ldB);
}

// The tile in L0C to C, rows ldC apart, offC elements further on than the Matmul would put it.
__aicore__ inline void CopyOut(const __gm__ void* gm, const LocalTensor<int8_t>& co1Local, const void* dataCopyOutParams,
                               const uint64_t tilingPtr, const uint64_t dataPtr) {
    const DataCopyOutParams& prm = *reinterpret_cast<const DataCopyOutParams*>(dataCopyOutParams);
    const Info& info = *reinterpret_cast<const Info*>(dataPtr);
    const int64_t at = reinterpret_cast<const __gm__ float*>(gm) - info.c;  // the tile's place: row * N + col
    log_call(info, 3, int32_t(at), prm.cBurstNum, prm.burstLen, prm.srcStride, int32_t(prm.dstStride), prm.oriNSize,
             tilingPtr == reinterpret_cast<uint64_t>(info.tiling) ? 1 : 0);
    const int64_t n = prm.dstStride;  // (C's rows as the Matmul would write them)
    const int64_t row = at / n, col = at % n;
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer(info.c + info.offC + row * info.ldC + col);
    FixpipeParamsV220 fp;
    fp.nSize = prm.burstLen;
    fp.mSize = prm.cBurstNum;
    fp.srcStride = prm.srcStride;
    fp.dstStride = uint32_t(info.ldC);
    Fixpipe<float, float, CFG_ROW_MAJOR>(dst, co1Local.ReinterpretCast<float>(), fp);
}

template <int32_t CB>
struct Routines;
template <>
struct Routines<CB_A> {
    using T = MatmulCallBackFunc<nullptr, CopyA, nullptr>;
};
template <>
struct Routines<CB_B> {
    using T = MatmulCallBackFunc<nullptr, nullptr, CopyB>;
};
template <>
struct Routines<CB_A | CB_B> {
    using T = MatmulCallBackFunc<nullptr, CopyA, CopyB>;
};
template <>
struct Routines<CB_OUT> {
    using T = MatmulCallBackFunc<CopyOut, nullptr, nullptr>;
};
template <>
struct Routines<CB_A | CB_B | CB_OUT> {
    using T = MatmulCallBackFunc<CopyOut, CopyA, CopyB>;
};

using aType = MatmulType<TPosition::GM, CubeFormat::ND, half>;
using bType = MatmulType<TPosition::GM, CubeFormat::ND, half>;
using cType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
using biasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;

template <class MM>
static void compute(MM& mm, const TCubeTiling& t, const Info& info, GM_ADDR a, GM_ADDR b, GM_ADDR bias, int32_t mode) {
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<float> cGm, biasGm;
    aGm.SetGlobalBuffer((__gm__ half*)a);
    bGm.SetGlobalBuffer((__gm__ half*)b);
    cGm.SetGlobalBuffer(info.c);
    biasGm.SetGlobalBuffer((__gm__ float*)bias);
    mm.SetUserDefInfo(reinterpret_cast<uint64_t>(&t));
    mm.SetSelfDefineData(reinterpret_cast<uint64_t>(&info));
    mm.SetTensorA(aGm);
    mm.SetTensorB(bGm);
    if (mode & MODE_BIAS) mm.SetBias(biasGm);
    else mm.DisableBias();
    if (mode & MODE_ITERATE) {
        while (mm.Iterate()) mm.GetTensorC(cGm);
    } else {
        mm.IterateAll(cGm);
    }
    mm.End();
}

template <int32_t CB>
static void run(GM_ADDR a, GM_ADDR b, GM_ADDR bias, const TCubeTiling& t, const Info& info, int32_t mode) {
    using Cb = typename Routines<CB>::T;
    if (mode & MODE_REGIST) {
        TPipe pipe;
        Matmul<aType, bType, cType, biasType, CFG_NORM, Cb> mm;
        REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
        compute(mm, t, info, a, b, bias, mode);
    } else {
        MatmulImpl<aType, bType, cType, biasType, CFG_NORM, Cb> mm;
        mm.Init(&t);
        compute(mm, t, info, a, b, bias, mode);
    }
}

extern "C" __global__ __aicore__ void mm_cb(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR log, int32_t m,
                                            int32_t n, int32_t k, int32_t baseM, int32_t baseN, int32_t baseK,
                                            int32_t stepM, int32_t stepN, int32_t stepKa, int32_t stepKb, int32_t ldA,
                                            int32_t ldB, int32_t ldC, int32_t offC, int32_t cb, int32_t mode) {
    TCubeTiling t{};
    t.usedCoreNum = 1;
    t.M = t.singleCoreM = m;
    t.N = t.singleCoreN = n;
    t.Ka = t.Kb = t.singleCoreK = k;
    t.baseM = baseM;
    t.baseN = baseN;
    t.baseK = baseK;
    t.stepM = stepM;
    t.stepN = stepN;
    t.stepKa = stepKa;
    t.stepKb = stepKb;
    t.depthA1 = stepM * stepKa;
    t.depthB1 = stepN * stepKb;
    t.isBias = (mode & MODE_BIAS) ? 1 : 0;
    const Info info{(__gm__ int32_t*)log, (__gm__ float*)c, &t, ldA, ldB, ldC, offC};
    switch (cb) {
        case CB_A: run<CB_A>(a, b, bias, t, info, mode); break;
        case CB_B: run<CB_B>(a, b, bias, t, info, mode); break;
        case CB_A | CB_B: run<CB_A | CB_B>(a, b, bias, t, info, mode); break;
        case CB_OUT: run<CB_OUT>(a, b, bias, t, info, mode); break;
        default: run<CB_A | CB_B | CB_OUT>(a, b, bias, t, info, mode); break;
    }
}
