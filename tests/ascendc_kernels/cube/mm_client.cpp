// Matmul driven from the vector cores (REGIST_MATMUL_OBJ in a mix 1:2 kernel): every vector core
// is a client of its AI core's cube core and computes its own part of C = A x B (+ bias), part
// GetBlockIdx() of usedCoreNum, with SetTail for the parts at the edges. How, by mode bits:
// IterateAll (sync, or async + WaitIterateAll), Iterate + GetTensorC to GM, or to UB and then
// out to GM with DataCopy; atomic accumulation over several rounds; only sub-block 0 computing
// (sub-block 1 only calls End); reading C before the async IterateAll is waited for (a race);
// never calling End (the cube core's server then waits forever: a deadlock the watchdog reports);
// IterateAll into UB; a second Matmul object used after the first one's End (accumulating C again);
// the two vector cores meeting in a SyncAll, one before its IterateAll and one after it; Iterate<false>
// once and GetTensorC<false> per tile into UB; the kernel's own data at the start of its workspace;
// vector core 0 making many requests while vector core 1 waits for it in a vector-only SyncAll, in a
// flag wait (mode 1, the vector cores of an AI core), or after a DataSyncBarrier (which holds nothing).
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "mm_tiling.h"
using namespace AscendC;

constexpr int32_t MODE_TRANS_B = 2, MODE_BIAS = 4, MODE_ATOMIC = 8, MODE_ITERATE = 16, MODE_UB = 32, MODE_ASYNC = 64,
                  MODE_EARLY = 128, MODE_NO_END = 256, MODE_SUB0 = 512, MODE_UB_ALL = 1024, MODE_TWO = 2048,
                  MODE_CROSS = 4096, MODE_ASYNC_ITERATE = 8192, MODE_SCRATCH = 16384, MODE_CROSS_MANY = 32768,
                  MODE_CROSS_FLAG = 65536, MODE_DSB = 131072;

using aType = matmul::MatmulType<TPosition::GM, CubeFormat::ND, half>;
using bType = matmul::MatmulType<TPosition::GM, CubeFormat::ND, half, true>;
#ifndef MM_CLIENT_C_POS
#define MM_CLIENT_C_POS VECIN  // (C in UB: VECCALC and VECOUT name it too)
#endif
using cType = matmul::MatmulType<TPosition::MM_CLIENT_C_POS, CubeFormat::ND, float>;
using biasType = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;

#ifndef MM_CLIENT_KERNEL_TYPE
#define MM_CLIENT_KERNEL_TYPE KERNEL_TYPE_MIX_AIC_1_2
#endif

extern "C" __global__ __aicore__ void mm_client(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR peek,
                                                GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(MM_CLIENT_KERNEL_TYPE);
    GET_TILING_DATA_WITH_STRUCT(MmTestTiling, t, tiling);
    SetSysWorkspace(workspace);
    TPipe pipe;
    matmul::Matmul<aType, bType, cType, biasType> mm, mm2;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t.cube, mm2, &t.cube);

    const TCubeTiling& ct = t.cube;
    const int32_t part = int32_t(GetBlockIdx());
    if (t.mode & MODE_SCRATCH) {
        // MODE_SCRATCH: the kernel's own data at the start of its workspace argument (as two of the dev
        // kit's matmul samples keep C there): the matmul server's state must not be there
        GlobalTensor<int32_t> scratch;
        scratch.SetGlobalBuffer((__gm__ int32_t*)workspace + part * 1024, 1024);
        Fill(scratch, uint64_t(1024), int32_t(-1));
        PipeBarrier<PIPE_ALL>();
    }
    const bool idle = part >= ct.usedCoreNum || ((t.mode & MODE_SUB0) && GetSubBlockIdx() == 1);
    if (idle) {
        if (!(t.mode & MODE_NO_END)) mm.End();
        return;
    }
    const int32_t mBlocks = (ct.M + ct.singleCoreM - 1) / ct.singleCoreM;
    const int32_t m0 = (part % mBlocks) * ct.singleCoreM, n0 = (part / mBlocks) * ct.singleCoreN;
    const bool transB = t.mode & MODE_TRANS_B;
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<float> biasGm, cGm, peekGm;
    aGm.SetGlobalBuffer((__gm__ half*)a);
    bGm.SetGlobalBuffer((__gm__ half*)b);
    biasGm.SetGlobalBuffer((__gm__ float*)bias);
    cGm.SetGlobalBuffer((__gm__ float*)c);
    peekGm.SetGlobalBuffer((__gm__ float*)peek);
    const int32_t tailM = ct.M - m0 < ct.singleCoreM ? ct.M - m0 : ct.singleCoreM;
    const int32_t tailN = ct.N - n0 < ct.singleCoreN ? ct.N - n0 : ct.singleCoreN;
    if (tailM < ct.singleCoreM || tailN < ct.singleCoreN) mm.SetSingleShape(tailM, tailN, ct.Ka);
    TBuf<TPosition::VECCALC> buf;
    const int32_t whole = (t.mode & MODE_UB_ALL) ? tailM * tailN : ct.baseM * ct.baseN;
    pipe.InitBuffer(buf, uint32_t(whole * sizeof(float)));
    LocalTensor<float> ub = buf.Get<float>();
    GlobalTensor<float> cPart = cGm[m0 * ct.N + n0];

    for (int32_t r = 0; r < (t.rounds > 0 ? t.rounds : 1); ++r) {
        mm.SetTensorA(aGm[m0 * ct.Ka]);
        mm.SetTensorB(bGm[transB ? n0 * ct.Kb : n0], transB);
        if (t.mode & MODE_BIAS) mm.SetBias(biasGm[n0]);
        else mm.DisableBias();
        const uint8_t atomic = (t.mode & MODE_ATOMIC) ? 1 : 0;
        if (t.mode & MODE_UB) {
            const int32_t mt = (tailM + ct.baseM - 1) / ct.baseM;
            int32_t tile = 0;
            // MODE_ASYNC_ITERATE: one Iterate<false>, then GetTensorC<false> per tile (packed, in order)
            const bool async_it = t.mode & MODE_ASYNC_ITERATE;
            const int32_t tiles = mt * ((tailN + ct.baseN - 1) / ct.baseN);
            if (async_it) mm.template Iterate<false>();
            while (async_it ? tile < tiles : mm.Iterate()) {
                const int32_t tm0 = (tile % mt) * ct.baseM, tn0 = (tile / mt) * ct.baseN;
                const int32_t tm = tailM - tm0 < ct.baseM ? tailM - tm0 : ct.baseM;
                const int32_t tn = tailN - tn0 < ct.baseN ? tailN - tn0 : ct.baseN;
                if (async_it) mm.template GetTensorC<false>(ub);
                else mm.GetTensorC(ub, 0, true);  // packed: tm rows of baseN
                SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
                WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
                DataCopy(cPart[tm0 * ct.N + tn0], ub,
                         DataCopyParams(uint16_t(tm), uint16_t(tn * sizeof(float) / 32),
                                        uint16_t((ct.baseN - tn) * sizeof(float) / 32),
                                        uint16_t((ct.N - tn) * sizeof(float) / 32)));
                SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
                WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
                ++tile;
            }
        } else if (t.mode & MODE_UB_ALL) {
            mm.IterateAll(ub);  // the whole tailM x tailN part, rows tailN apart
            SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
            DataCopy(cPart, ub, DataCopyParams(uint16_t(tailM), uint16_t(tailN * sizeof(float) / 32), 0,
                                               uint16_t((ct.N - tailN) * sizeof(float) / 32)));
            SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
            WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        } else if (t.mode & MODE_ITERATE) {
            while (mm.Iterate()) mm.GetTensorC(cPart, atomic);
        } else if (t.mode & (MODE_ASYNC | MODE_EARLY)) {
            mm.IterateAll<false>(cPart, atomic, false, true);
            if (t.mode & MODE_EARLY) {
                // Waits for C to look written by polling it, instead of WaitIterateAll: no sync
                // orders the cube core's write before these reads, a race the detector must see.
                for (int32_t spin = 0; spin < 1000000 && cPart.GetValue(0) == 0.0f; ++spin)
                    for (volatile int32_t d = 0; d < 2000; d = d + 1) {
                    }
                DataCopy(ub, cPart, 8);
                SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
                WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
                DataCopy(peekGm[part * 8], ub, 8);
            }
            mm.WaitIterateAll();
        } else if (t.mode & MODE_CROSS_FLAG) {
            // as MODE_CROSS_MANY, the two meeting in a flag of mode 1 (its wait needs both vector cores' sets)
            if (GetSubBlockIdx() == 0) {
                while (mm.Iterate()) mm.GetTensorC(cPart, atomic);
                CrossCoreSetFlag<1, PIPE_MTE3>(5);
                CrossCoreWaitFlag(5);
            } else {
                CrossCoreSetFlag<1, PIPE_MTE3>(5);
                CrossCoreWaitFlag(5);
                while (mm.Iterate()) mm.GetTensorC(cPart, atomic);
            }
        } else if (t.mode & MODE_DSB) {
            if (GetSubBlockIdx() == 1) DataSyncBarrier<MemDsbT::ALL>();
            while (mm.Iterate()) mm.GetTensorC(cPart, atomic);
        } else if (t.mode & MODE_CROSS_MANY) {
            // vector core 0: a request per tile and per Iterate, then the vector cores' SyncAll;
            // vector core 1 waits there first (its queue must not hold core 0's back)
            if (GetSubBlockIdx() == 0) {
                while (mm.Iterate()) mm.GetTensorC(cPart, atomic);
                SyncAll<true>();
            } else {
                SyncAll<true>();
                while (mm.Iterate()) mm.GetTensorC(cPart, atomic);
            }
        } else if (t.mode & MODE_CROSS) {
            if (GetSubBlockIdx() == 0) {
                mm.IterateAll(cPart, atomic);
                SyncAll();
            } else {
                SyncAll();
                mm.IterateAll(cPart, atomic);
            }
        } else {
            mm.IterateAll(cPart, atomic);  // the plain case
        }
    }
    if (!(t.mode & MODE_NO_END)) mm.End();
    if (t.mode & MODE_TWO) {  // the other object, after the first one's End: C += A x B once more
        if (tailM < ct.singleCoreM || tailN < ct.singleCoreN) mm2.SetSingleShape(tailM, tailN, ct.Ka);
        mm2.SetTensorA(aGm[m0 * ct.Ka]);
        mm2.SetTensorB(bGm[transB ? n0 * ct.Kb : n0], transB);
        mm2.DisableBias();
        mm2.IterateAll(cPart, 1);
        mm2.End();
    }
}
