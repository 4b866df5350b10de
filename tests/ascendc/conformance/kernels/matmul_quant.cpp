// The matmul's (de)quantisation of C on its way out (SetQuantScalar / SetQuantVector), on one core:
// MatmulImpl on the cube core (MPNPU_TEST_CLIENT 0, a cube-only kernel) or Matmul driven by vector
// core 0 of a mix 1:2 kernel (MPNPU_TEST_CLIENT 1; the parameters travel to the cube core).
// types: 0 int8_t -> half, 1 int8_t -> int8_t, 2 half -> int8_t, 4 int8_t -> bfloat16_t, 3 int8_t ->
// int32_t (which takes no quantisation: an error at the setter's line). flags: 1 SetQuantVector (one uint64_t per column
// of C in ``scale``), else SetQuantScalar(scale[0]); 2 Iterate + GetTensorC, else IterateAll.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace AscendC;

#ifndef MPNPU_TEST_CLIENT
#define MPNPU_TEST_CLIENT 0
#endif

constexpr int32_t FLAG_VECTOR = 1, FLAG_ITERATE = 2;

template <typename T>
static GlobalTensor<T> gm(GM_ADDR p) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)p);
    return g;
}

template <class MM, typename T, typename C>
static void compute(MM& mm, GM_ADDR a, GM_ADDR b, GM_ADDR scale, GM_ADDR c, int32_t flags) {
    const GlobalTensor<T> aGm = gm<T>(a), bGm = gm<T>(b);
    const GlobalTensor<C> cGm = gm<C>(c);
    const GlobalTensor<uint64_t> sGm = gm<uint64_t>(scale);
    if (flags & FLAG_VECTOR) {
        mm.SetQuantVector(sGm);
    } else {
        mm.SetQuantScalar(sGm.GetValue(0));  // the setter
    }
    mm.SetTensorA(aGm);
    mm.SetTensorB(bGm);
    if (flags & FLAG_ITERATE) {
        while (mm.Iterate()) mm.GetTensorC(cGm);
    } else {
        mm.IterateAll(cGm);
    }
    mm.End();
}

template <typename T, typename C>
static void run(GM_ADDR a, GM_ADDR b, GM_ADDR scale, GM_ADDR c, GM_ADDR ws, const TCubeTiling& t, int32_t flags) {
    using aType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
    using bType = MatmulType<TPosition::GM, CubeFormat::ND, T>;
    using cType = MatmulType<TPosition::GM, CubeFormat::ND, C>;
    using biasType = MatmulType<TPosition::GM, CubeFormat::ND, int32_t>;
#if MPNPU_TEST_CLIENT
    TPipe pipe;
    SetSysWorkspace(ws);
    Matmul<aType, bType, cType, biasType> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    if (GetBlockIdx() != 0) return;  // vector core 1 has no part
    compute<decltype(mm), T, C>(mm, a, b, scale, c, flags);
#else
    (void)ws;
    MatmulImpl<aType, bType, cType, biasType> mm;
    mm.Init(&t);
    compute<decltype(mm), T, C>(mm, a, b, scale, c, flags);
#endif
}

extern "C" __global__ __aicore__ void mm_quant(GM_ADDR a, GM_ADDR b, GM_ADDR scale, GM_ADDR c, GM_ADDR ws, int32_t m,
                                               int32_t n, int32_t k, int32_t base, int32_t types, int32_t flags) {
    TCubeTiling t{};
    t.usedCoreNum = 1;
    t.M = t.singleCoreM = m;
    t.N = t.singleCoreN = n;
    t.Ka = t.Kb = t.singleCoreK = k;
    t.baseM = t.baseN = t.baseK = base;
    switch (types) {
        case 0: run<int8_t, half>(a, b, scale, c, ws, t, flags); break;
        case 1: run<int8_t, int8_t>(a, b, scale, c, ws, t, flags); break;
        case 2: run<half, int8_t>(a, b, scale, c, ws, t, flags); break;
        case 4: run<int8_t, bfloat16_t>(a, b, scale, c, ws, t, flags); break;
        default: run<int8_t, int32_t>(a, b, scale, c, ws, t, flags); break;
    }
}
