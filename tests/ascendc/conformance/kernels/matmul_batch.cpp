// Batch matmul (IterateBatch / IterateNBatch) on one core: MatmulImpl on the cube core
// (MPNPU_TEST_CLIENT 0, a cube-only kernel) or Matmul driven by vector core 0 of a mix 1:2 kernel
// (MPNPU_TEST_CLIENT 1). A, B and C are half, half, float; every matrix is m x k, k x n (stored n x k
// with FLAG_TRANS_B) and m x n. The layout of A, B and C: 0 NORMAL, 1 BSNGD, 2 SBNGD, 3 BNGS1S2, with
// the extents (batch, heads, groups of A, groups of B) in ``ext``; C has max(groups) groups.
// flags: FLAG_BIAS SetBias; FLAG_TRANS_B B stored transposed; FLAG_NBATCH IterateNBatch(loops, ...)
// into ``cws`` (its MatmulConfig has isNBatch and isBiasBatch = false: one bias row for every matrix),
// else IterateBatch once (isBiasBatch: a bias row per C matrix); FLAG_ASYNC IterateNBatch<false> and
// GetBatchTensorC<false> per loop, each result's element offset from cws's start in ``offs``;
// FLAG_CUBE_FORM SetBatchNum then the pure cube form IterateBatch(c, false, 0, false); FLAG_NO_END no End
// (the kernel's one registered Matmul: End is what switching objects needs); FLAG_PEEK with FLAG_ASYNC:
// reads the workspace's first C element right after IterateNBatch<false>, before anything waits for it
// (a race), into offs[7]. FLAG_DUAL: a MatmulConfig with enableMixDualMaster (refused on a vector core).
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace AscendC;

#ifndef MPNPU_TEST_CLIENT
#define MPNPU_TEST_CLIENT 0
#endif

constexpr int32_t FLAG_BIAS = 1, FLAG_TRANS_B = 2, FLAG_NBATCH = 4, FLAG_ASYNC = 8, FLAG_CUBE_FORM = 16, FLAG_NO_END = 32,
                  FLAG_PEEK = 64, FLAG_DUAL = 128;

constexpr MatmulConfig dual() {
    MatmulConfig c = GetNormalConfig();
    c.enableMixDualMaster = true;
    return c;
}
constexpr MatmulConfig CFG_DUAL = dual();
constexpr MatmulConfig CFG_NBATCH =
    GetMMConfig<MatmulConfigMode::CONFIG_NORM>(MatmulBatchParams{true, BatchMode::BATCH_LESS_THAN_L1, false});

template <typename T>
static GlobalTensor<T> gm(GM_ADDR p) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)p);
    return g;
}

struct Args {
    GM_ADDR a;
    GM_ADDR b;
    GM_ADDR bias;
    GM_ADDR c;
    GM_ADDR cws;
    GM_ADDR offs;
    int32_t batchA, batchB, loops, flags;
};

template <class MM>
static void compute(MM& mm, const Args& x) {
    mm.SetTensorA(gm<half>(x.a));
    mm.SetTensorB(gm<half>(x.b), (x.flags & FLAG_TRANS_B) != 0);
    if (x.flags & FLAG_BIAS) mm.SetBias(gm<float>(x.bias));
    GlobalTensor<float> cGm = gm<float>(x.c), wsGm = gm<float>(x.cws);
    if (x.flags & FLAG_NBATCH) {
        if constexpr (ToMatmulConfig(MM::mpnpu_cfg).isNBatch) {
            mm.SetWorkspace(wsGm);
            if (x.flags & FLAG_ASYNC) {
                mm.template IterateNBatch<false>(x.loops, x.batchA, x.batchB, false);
                GlobalTensor<int32_t> offs = gm<int32_t>(x.offs);
                if (x.flags & FLAG_PEEK) offs.SetValue(7, int32_t(wsGm.GetValue(0)));  // the early read
                for (int32_t l = 0; l < x.loops; ++l) {
                    GlobalTensor<float> r = mm.template GetBatchTensorC<false>(x.batchA, x.batchB, false);
                    offs.SetValue(l, int32_t(r.GetPhyAddr() - wsGm.GetPhyAddr()));
                }
            } else {
                mm.IterateNBatch(x.loops, x.batchA, x.batchB, false);  // the n-batch call
            }
        }
    } else if (x.flags & FLAG_CUBE_FORM) {
        mm.SetBatchNum(x.batchA, x.batchB);
        mm.IterateBatch(cGm, false, 0, false);
    } else {
        mm.IterateBatch(cGm, x.batchA, x.batchB, false);  // the batch call
    }
    if (!(x.flags & FLAG_NO_END)) mm.End();
}

template <LayoutMode L, const auto& CFG>
struct Obj {
    using aType = MatmulType<TPosition::GM, CubeFormat::ND, half, false, L>;
    using bType = MatmulType<TPosition::GM, CubeFormat::ND, half, true, L>;
    using cType = MatmulType<TPosition::GM, CubeFormat::ND, float, false, L>;
    using biasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
#if MPNPU_TEST_CLIENT
    struct MM : Matmul<aType, bType, cType, biasType, CFG> {
        static constexpr const MatmulConfig& mpnpu_cfg = CFG;
    };
#else
    struct MM : MatmulImpl<aType, bType, cType, biasType, CFG> {
        static constexpr const MatmulConfig& mpnpu_cfg = CFG;
    };
#endif
};

template <LayoutMode L, const auto& CFG>
static void run(const Args& x, GM_ADDR ws, const TCubeTiling& t) {
    typename Obj<L, CFG>::MM mm;
#if MPNPU_TEST_CLIENT
    TPipe pipe;
    SetSysWorkspace(ws);
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    if (GetBlockIdx() != 0) return;  // vector core 1 has no part
    compute(mm, x);
#else
    (void)ws;
    mm.Init(&t);
    compute(mm, x);
#endif
}

template <LayoutMode L>
static void pick(const Args& x, GM_ADDR ws, const TCubeTiling& t) {
    if (x.flags & FLAG_DUAL) run<L, CFG_DUAL>(x, ws, t);
    else if (x.flags & FLAG_NBATCH) run<L, CFG_NBATCH>(x, ws, t);
    else run<L, CFG_NORM>(x, ws, t);
}

static void set_layout(int32_t* f, int32_t b, int32_t s, int32_t n, int32_t g, int32_t d) {
    f[0] = b, f[1] = s, f[2] = n, f[3] = g, f[4] = d;
}

extern "C" __global__ __aicore__ void mm_batch(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR cws,
                                               GM_ADDR offs, GM_ADDR ws, int32_t m, int32_t n, int32_t k,
                                               int32_t base, int32_t layout, int32_t batches, int32_t heads,
                                               int32_t groupsA, int32_t groupsB, int32_t batchA, int32_t batchB,
                                               int32_t loops, int32_t flags) {
    TCubeTiling t{};
    t.usedCoreNum = 1;
    t.M = t.singleCoreM = m;
    t.N = t.singleCoreN = n;
    t.Ka = t.Kb = t.singleCoreK = k;
    t.baseM = t.baseN = t.baseK = base;
    t.isBias = (flags & FLAG_BIAS) ? 1 : 0;
    const bool transB = (flags & FLAG_TRANS_B) != 0;
    const int32_t groupsC = groupsA > groupsB ? groupsA : groupsB;
    set_layout(&t.ALayoutInfoB, batches, m, heads, groupsA, k);
    set_layout(&t.BLayoutInfoB, batches, transB ? n : k, heads, groupsB, transB ? k : n);
    set_layout(&t.CLayoutInfoB, batches, m, heads, groupsC, n);
    t.BatchNum = batchA > batchB ? batchA : batchB;
    const Args x{a, b, bias, c, cws, offs, batchA, batchB, loops, flags};
    switch (layout) {
        case 1: pick<LayoutMode::BSNGD>(x, ws, t); break;
        case 2: pick<LayoutMode::SBNGD>(x, ws, t); break;
        case 3: pick<LayoutMode::BNGS1S2>(x, ws, t); break;
        default: pick<LayoutMode::NORMAL>(x, ws, t); break;
    }
}
