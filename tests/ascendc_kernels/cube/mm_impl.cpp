// MatmulImpl on the cube cores of a mix 1:2 kernel (the vector cores do nothing): each cube core
// computes its part of C = A x B (+ bias), split over the cores as the tiling's singleCore sizes
// say, with SetTail for the parts at the edges; IterateAll, or Iterate + GetTensorC, optionally
// accumulating into C atomically, A and B optionally given transposed. types: 0 half -> float,
// 1 bfloat16_t -> float, 2 float -> float, 3 half -> half (A and B -> C; the bias is float).
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "mm_tiling.h"
using namespace AscendC;

constexpr int32_t MODE_TRANS_A = 1, MODE_TRANS_B = 2, MODE_BIAS = 4, MODE_ATOMIC = 8, MODE_ITERATE = 16, MODE_CO1 = 32,
                  MODE_DATACOPY = 64;

// Iterate into a CO1 tensor of the kernel's own, then out with Fixpipe (or the older DataCopy with
// DataCopyCO12DstParams): C is float, tiles down M first, each NZ with ceil(tm / 16) * 16 rows.
template <class MM>
static void co1_tiles(MM& mm, const TCubeTiling& ct, GlobalTensor<float> cPart, int32_t tailM, int32_t tailN,
                      bool datacopy) {
    LocalMemAllocator<Hardware::L0C> l0c;
    LocalTensor<float> co1 = l0c.Alloc<TPosition::CO1, float>(uint32_t(ct.baseM * ct.baseN));
    const int32_t mt = (tailM + ct.baseM - 1) / ct.baseM;
    int32_t tile = 0;
    while (mm.Iterate(false, co1)) {
        const int32_t tm0 = (tile % mt) * ct.baseM, tn0 = (tile / mt) * ct.baseN;
        const int32_t tm = tailM - tm0 < ct.baseM ? tailM - tm0 : ct.baseM;
        const int32_t tn = tailN - tn0 < ct.baseN ? tailN - tn0 : ct.baseN;
        const uint16_t rows = uint16_t((tm + 15) / 16 * 16);
        SetFlag<HardEvent::M_FIX>(EVENT_ID0);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
        if (datacopy) {
            SetFixpipeNz2ndFlag(1, 0, 0);
            DataCopyCO12DstParams p;
            p.nSize = uint16_t(tn);
            p.mSize = uint16_t(tm);
            p.srcStride = rows;
            p.dstStride = uint32_t(ct.N);
            p.nz2ndEn = true;
            DataCopy(cPart[tm0 * ct.N + tn0], co1, p);
        } else {
            FixpipeParamsV220 p(uint16_t(tn), uint16_t(tm), rows, uint32_t(ct.N), false);
            Fixpipe(cPart[tm0 * ct.N + tn0], co1, p);
        }
        SetFlag<HardEvent::FIX_M>(EVENT_ID0);
        WaitFlag<HardEvent::FIX_M>(EVENT_ID0);
        ++tile;
    }
}

template <typename DTYPE, typename CTYPE>
static void run(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, const MmTestTiling& t) {
    using BTYPE = float;
    using aType = MatmulType<TPosition::GM, CubeFormat::ND, DTYPE, true>;
    using bType = MatmulType<TPosition::GM, CubeFormat::ND, DTYPE, true>;
    using cType = MatmulType<TPosition::GM, CubeFormat::ND, CTYPE>;
    using biasType = MatmulType<TPosition::GM, CubeFormat::ND, BTYPE>;
    const TCubeTiling& ct = t.cube;
    const int32_t me = int32_t(GetBlockIdx());
    if (me >= ct.usedCoreNum) return;
    const int32_t mBlocks = (ct.M + ct.singleCoreM - 1) / ct.singleCoreM;
    const int32_t mi = me % mBlocks, ni = me / mBlocks;
    const int32_t m0 = mi * ct.singleCoreM, n0 = ni * ct.singleCoreN;
    const bool transA = t.mode & MODE_TRANS_A, transB = t.mode & MODE_TRANS_B;
    GlobalTensor<DTYPE> aGm, bGm;
    GlobalTensor<BTYPE> biasGm;
    GlobalTensor<CTYPE> cGm;
    aGm.SetGlobalBuffer((__gm__ DTYPE*)a);
    bGm.SetGlobalBuffer((__gm__ DTYPE*)b);
    biasGm.SetGlobalBuffer((__gm__ BTYPE*)bias);
    cGm.SetGlobalBuffer((__gm__ CTYPE*)c);

    TPipe pipe;
    MatmulImpl<aType, bType, cType, biasType> mm;
    mm.Init(&ct, &pipe);
    const int32_t tailM = ct.M - m0 < ct.singleCoreM ? ct.M - m0 : ct.singleCoreM;
    const int32_t tailN = ct.N - n0 < ct.singleCoreN ? ct.N - n0 : ct.singleCoreN;
    if (tailM < ct.singleCoreM || tailN < ct.singleCoreN) mm.SetTail(tailM, tailN, ct.Ka);
    for (int32_t r = 0; r < (t.rounds > 0 ? t.rounds : 1); ++r) {
        mm.SetTensorA(aGm[transA ? m0 : m0 * ct.Ka], transA);
        mm.SetTensorB(bGm[transB ? n0 * ct.Kb : n0], transB);
        if (t.mode & MODE_BIAS) mm.SetBias(biasGm[n0]);
        else mm.DisableBias();
        const uint8_t atomic = (t.mode & MODE_ATOMIC) ? 1 : 0;
        if constexpr (std::is_same_v<CTYPE, float>) {
            if (t.mode & MODE_CO1) {
                using co1Type = MatmulType<TPosition::CO1, CubeFormat::NZ, float>;
                MatmulImpl<aType, bType, co1Type, biasType> mc;
                mc.Init(&ct, &pipe);
                if (tailM < ct.singleCoreM || tailN < ct.singleCoreN) mc.SetTail(tailM, tailN, ct.Ka);
                mc.SetTensorA(aGm[transA ? m0 : m0 * ct.Ka], transA);
                mc.SetTensorB(bGm[transB ? n0 * ct.Kb : n0], transB);
                if (t.mode & MODE_BIAS) mc.SetBias(biasGm[n0]);
                else mc.DisableBias();
                co1_tiles(mc, ct, cGm[m0 * ct.N + n0], tailM, tailN, t.mode & MODE_DATACOPY);
                mc.End();
                continue;
            }
        }
        if (t.mode & MODE_ITERATE) {
            while (mm.Iterate()) mm.GetTensorC(cGm[m0 * ct.N + n0], atomic);
        } else {
            mm.IterateAll(cGm[m0 * ct.N + n0], atomic);
        }
    }
    mm.End();
}

extern "C" __global__ __aicore__ void mm_impl(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR tiling,
                                              uint32_t types) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(MmTestTiling, t, tiling);
    if ASCEND_IS_AIV {
        return;
    }
    switch (types) {
        case 0: run<half, float>(a, b, bias, c, t); break;
        case 1: run<bfloat16_t, float>(a, b, bias, c, t); break;
        case 2: run<float, float>(a, b, bias, c, t); break;
        default: run<half, half>(a, b, bias, c, t); break;
    }
}
