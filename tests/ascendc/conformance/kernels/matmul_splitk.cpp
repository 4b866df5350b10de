// Split K across cube cores: core i computes its (M, N, K) part of C = A x B (half A, B, float C)
// with MatmulImpl, the parts counted M fastest, then N, then K (as the tiling's usedCoreNum =
// mDim x nDim x kDim), and adds it into C (zeroed by the host) with IterateAll's enAtomic 1; the
// parts at the edges of M and N SetTail.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace AscendC;

template <typename T>
static GlobalTensor<T> gm(GM_ADDR p) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)p);
    return g;
}

extern "C" __global__ __aicore__ void mm_splitk(GM_ADDR a, GM_ADDR b, GM_ADDR c, int32_t m, int32_t n, int32_t k,
                                                int32_t sm, int32_t sn, int32_t sk, int32_t bm, int32_t bn, int32_t bk,
                                                int32_t used) {
    TCubeTiling t{};
    t.usedCoreNum = used;
    t.M = m;
    t.N = n;
    t.Ka = t.Kb = k;
    t.singleCoreM = sm;
    t.singleCoreN = sn;
    t.singleCoreK = sk;
    t.baseM = bm;
    t.baseN = bn;
    t.baseK = bk;
    const int32_t mDim = (m + sm - 1) / sm, nDim = (n + sn - 1) / sn;
    const int32_t i = GetBlockIdx();
    const int32_t mi = i % mDim, ni = (i / mDim) % nDim, ki = i / (mDim * nDim);
    using aType = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using bType = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using cType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    MatmulImpl<aType, bType, cType, cType> mm;
    mm.Init(&t);
    const int32_t tm = m - mi * sm < sm ? m - mi * sm : sm, tn = n - ni * sn < sn ? n - ni * sn : sn;
    mm.SetTail(tm, tn, sk);
    mm.SetTensorA(gm<half>(a)[mi * sm * k + ki * sk]);
    mm.SetTensorB(gm<half>(b)[ki * sk * n + ni * sn]);
    mm.IterateAll(gm<float>(c)[mi * sm * n + ni * sn], 1);
    mm.End();
}
