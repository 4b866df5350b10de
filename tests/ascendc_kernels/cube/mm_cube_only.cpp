// Pure cube mode in a mix 1:2 kernel (ASCENDC_CUBE_ONLY defined before lib/matmul_intf.h, as the pages
// say): the cube core registers its Matmul object and computes C = A x B itself; REGIST_MATMUL_OBJ
// serves no vector core. It then raises flag 3 (mode 2) on PIPE_FIX for its vector cores, which wait
// for it and copy C to out, each half of the rows.
#define ASCENDC_CUBE_ONLY
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "mm_tiling.h"
using namespace AscendC;

using aType = matmul::MatmulType<TPosition::GM, CubeFormat::ND, half>;
using bType = matmul::MatmulType<TPosition::GM, CubeFormat::ND, half>;
using cType = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;
using biasType = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;

extern "C" __global__ __aicore__ void mm_cube_only(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR out, GM_ADDR workspace,
                                                   GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(MmTestTiling, t, tiling);
    SetSysWorkspace(workspace);
    TPipe pipe;
    const TCubeTiling& ct = t.cube;
    if ASCEND_IS_AIC {
        matmul::Matmul<aType, bType, cType, biasType> mm;
        REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t.cube);
        if (matmul::GetBlockIdx() >= ct.usedCoreNum) return;  // (the dev kit's samples' spelling of it)
        GlobalTensor<half> aGm, bGm;
        GlobalTensor<float> cGm;
        aGm.SetGlobalBuffer((__gm__ half*)a);
        bGm.SetGlobalBuffer((__gm__ half*)b);
        cGm.SetGlobalBuffer((__gm__ float*)c);
        mm.SetTensorA(aGm);
        mm.SetTensorB(bGm);
        mm.DisableBias();
        mm.IterateAll(cGm);
        mm.End();
        CrossCoreSetFlag<0x2, PIPE_FIX>(3);
    }
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(3);
        const int32_t rows = ct.M / 2, n = ct.N;
        GlobalTensor<float> cGm, outGm;
        cGm.SetGlobalBuffer((__gm__ float*)c + GetSubBlockIdx() * rows * n);
        outGm.SetGlobalBuffer((__gm__ float*)out + GetSubBlockIdx() * rows * n);
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, uint32_t(rows * n * sizeof(float)));
        LocalTensor<float> ub = buf.Get<float>();
        DataCopy(ub, cGm, uint32_t(rows * n));
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopy(outGm, ub, uint32_t(rows * n));
    }
}
