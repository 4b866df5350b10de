// A 4:2 sparse Matmul (SparseMatmulType B, SetSparseIndex): C = A x B where B is given dense (the two
// values of every four along K that may be non-zero, N rows of K / 2: transposed) with its index
// matrix (Zn bytes). Each core computes its part along N. Built three ways: a cube-only kernel with B
// in ND (the default) or, with MM_SPARSE_NZ, in NZ; with MM_SPARSE_CLIENT a mix 1:2 kernel whose
// vector cores drive the cube core. Mode bits: 4 adds the bias, 16 uses Iterate + GetTensorC.
#ifndef MM_SPARSE_CLIENT
#define ASCENDC_CUBE_ONLY
#endif
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "mm_tiling.h"
using namespace AscendC;

#ifdef MM_SPARSE_NZ
constexpr CubeFormat kBFormat = CubeFormat::NZ;
#else
constexpr CubeFormat kBFormat = CubeFormat::ND;
#endif
constexpr int32_t MODE_BIAS = 4, MODE_ITERATE = 16;

using aType = MatmulType<TPosition::GM, CubeFormat::ND, int8_t>;
using bType = SparseMatmulType<TPosition::GM, TPosition::GM, kBFormat, int8_t, true>;
using cType = MatmulType<TPosition::GM, CubeFormat::ND, int32_t>;
using biasType = MatmulType<TPosition::GM, CubeFormat::ND, int32_t>;

extern "C" __global__ __aicore__ void mm_sparse(GM_ADDR a, GM_ADDR b, GM_ADDR index, GM_ADDR bias, GM_ADDR c,
                                                GM_ADDR workspace, GM_ADDR tiling) {
#ifdef MM_SPARSE_CLIENT
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
#else
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
#endif
    GET_TILING_DATA_WITH_STRUCT(MmTestTiling, t, tiling);
    SetSysWorkspace(workspace);
    TPipe pipe;
    Matmul<aType, bType, cType, biasType, CFG_MDL> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t.cube);
    const TCubeTiling& ct = t.cube;
    const int32_t part = int32_t(GetBlockIdx());
    if (part >= ct.usedCoreNum) return;
    const int32_t n0 = part * ct.singleCoreN;  // (one part along M in these tests)
    const int32_t tailN = ct.N - n0 < ct.singleCoreN ? ct.N - n0 : ct.singleCoreN;
    GlobalTensor<int8_t> aGm, bGm;
    GlobalTensor<uint8_t> indexGm;
    GlobalTensor<int32_t> biasGm, cGm;
    aGm.SetGlobalBuffer((__gm__ int8_t*)a);
    // row n0 of the transposed dense B: in NZ n0 rows of its first 32-column block, in ND n0 rows of K / 2
    bGm.SetGlobalBuffer((__gm__ int8_t*)b + (kBFormat == CubeFormat::NZ ? n0 * 32 : n0 * (ct.Kb / 2)));
    indexGm.SetGlobalBuffer((__gm__ uint8_t*)index + n0 * 8);  // (Zn: 8 bytes a column in a fractal row)
    biasGm.SetGlobalBuffer((__gm__ int32_t*)bias + n0);
    cGm.SetGlobalBuffer((__gm__ int32_t*)c + n0);
    if (tailN < ct.singleCoreN) mm.SetTail(ct.singleCoreM, tailN);
    mm.SetTensorA(aGm);
    mm.SetTensorB(bGm, true);
    mm.SetSparseIndex(indexGm);
    if (t.mode & MODE_BIAS) mm.SetBias(biasGm);
    else mm.DisableBias();
    if (t.mode & MODE_ITERATE) {
        while (mm.Iterate()) mm.GetTensorC(cGm);
    } else {
        mm.IterateAll(cGm);
    }
    mm.End();
}
