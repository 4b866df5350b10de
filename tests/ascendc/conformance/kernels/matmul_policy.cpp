// The MatmulPolicy template argument and ScheduleType::OUTER_PRODUCT, MatmulImpl on one cube core
// (half A, B, float C and bias). mode: 0 MatmulPolicy (the default), 1 TrianUpperMatmulPolicy,
// 2 TrianLowerMatmulPolicy, 3 NBuffer33MatmulPolicy (CFG_MDL), each with IterateAll (bias when
// ``bias``); 4 OUTER_PRODUCT with iterateOrder ORDER_N and 5 with ORDER_M: Iterate + GetTensorC with
// enSequentialWrite, tile t packed at t * baseM * baseN of C (so the order of the tiles shows), the
// tiling's iterateOrder ``order``. A MatmulApiStaticTiling as MM_CFG (GetMatmulApiTiling): 6 fully
// constant (singleCore 128 x 160 x 64, base 32 x 48 x 32), REGIST_MATMUL_OBJ with a null tiling, then
// SetOrgShape(m, n, k) and SetTail(m, n, k), IterateAll; 7 only the base blocks constant (32 x 48 x 32)
// with a tiling whose base blocks say 64 x 64: Iterate + GetTensorC packed as in 4 (the constant
// blocks are the ones used). 8 MatmulConfig isPartialOutput (CFG_MDL): Iterate + GetTensorC packed as
// in 4, a step per tile and baseK part of K. 9 MatmulConfig enableMixDualMaster (with IBSHARE A and
// B, as its page asks of a 1:2 kernel) registered and used on this cube core: IterateAll. 10 A of
// CubeFormat::VECTOR (GEMV: m is 1): IterateAll. 11 int4b_t A and B (packed, two a byte), int32_t C
// and bias, ``order`` bit 0 A transposed, bit 1 B transposed: IterateAll.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace AscendC;

using aType = MatmulType<TPosition::GM, CubeFormat::ND, half>;
using bType = MatmulType<TPosition::GM, CubeFormat::ND, half>;
using cType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
using biasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
using NoCb = MatmulCallBackFunc<nullptr, nullptr, nullptr>;

constexpr MatmulConfig outer(IterateOrder order) {
    MatmulConfig c = GetMDLConfig();
    c.scheduleType = ScheduleType::OUTER_PRODUCT;
    c.iterateOrder = order;
    return c;
}
constexpr MatmulConfig CFG_OUTER_N = outer(IterateOrder::ORDER_N);
constexpr MatmulConfig CFG_OUTER_M = outer(IterateOrder::ORDER_M);
constexpr MatmulConfig partial() {
    MatmulConfig c = GetMDLConfig();
    c.isPartialOutput = true;
    return c;
}
constexpr MatmulConfig CFG_PARTIAL = partial();
constexpr MatmulConfig dual() {
    MatmulConfig c = GetNormalConfig();
    c.enableMixDualMaster = true;
    return c;
}
constexpr MatmulConfig CFG_DUAL = dual();
constexpr MatmulApiStaticTiling STATIC_FULL = GetMatmulApiTiling<aType, bType, cType, biasType>(
    GetMMConfig<MatmulConfigMode::CONFIG_NORM>(MatmulShapeParams{128, 160, 64, 32, 48, 32}));
constexpr MatmulApiStaticTiling STATIC_BASE = GetMatmulApiTiling<aType, bType, cType, biasType>(
    GetMMConfig<MatmulConfigMode::CONFIG_MDL>(MatmulShapeParams{0, 0, 0, 32, 48, 32}));
static_assert(STATIC_FULL.singleCoreN == 160 && STATIC_FULL.baseN == 48 && STATIC_FULL.stepKa == 2 &&
                  STATIC_BASE.singleCoreM == 0 && ToMatmulConfig(STATIC_BASE).doMultiDataLoad,
              "the constant tiling holds the configuration's shapes and the configuration");

template <typename T>
static GlobalTensor<T> gm(GM_ADDR p) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)p);
    return g;
}

template <class MM>
static void all(const TCubeTiling& t, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, bool withBias) {
    MM mm;
    mm.Init(&t);
    mm.SetTensorA(gm<half>(a));
    mm.SetTensorB(gm<half>(b));
    if (withBias) mm.SetBias(gm<float>(bias));
    mm.IterateAll(gm<float>(c));
    mm.End();
}

template <class MM>
static void tiles(const TCubeTiling& t, GM_ADDR a, GM_ADDR b, GM_ADDR c, int32_t tilingBase = 0,
                  GM_ADDR bias = nullptr) {
    MM mm;
    TCubeTiling given = t;  // (tilingBase: the tiling says its base blocks are this square instead)
    if (tilingBase) given.baseM = given.baseN = tilingBase;
    mm.Init(&given);
    mm.SetTensorA(gm<half>(a));
    mm.SetTensorB(gm<half>(b));
    if (bias) mm.SetBias(gm<float>(bias));
    GlobalTensor<float> cGm = gm<float>(c);
    for (int32_t i = 0; mm.Iterate(); ++i) mm.GetTensorC(cGm[i * t.baseM * t.baseN], 0, true);
    mm.End();
}

extern "C" __global__ __aicore__ void mm_policy(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, int32_t m, int32_t n,
                                                int32_t k, int32_t baseM, int32_t baseN, int32_t order,
                                                int32_t withBias, int32_t mode) {
    TCubeTiling t{};
    t.usedCoreNum = 1;
    t.M = t.singleCoreM = m;
    t.N = t.singleCoreN = n;
    t.Ka = t.Kb = t.singleCoreK = k;
    t.baseM = baseM;
    t.baseN = baseN;
    t.baseK = 32;
    t.iterateOrder = order;
    t.isBias = withBias;
    switch (mode) {
        case 1: all<MatmulImpl<aType, bType, cType, biasType, CFG_NORM, NoCb, Impl::Detail::TrianUpperMatmulPolicy>>(
                    t, a, b, bias, c, withBias != 0);
            break;
        case 2: all<MatmulImpl<aType, bType, cType, biasType, CFG_NORM, NoCb, Impl::Detail::TrianLowerMatmulPolicy>>(
                    t, a, b, bias, c, withBias != 0);
            break;
        case 3: all<MatmulImpl<aType, bType, cType, biasType, CFG_MDL, NoCb, Impl::Detail::NBuffer33MatmulPolicy>>(
                    t, a, b, bias, c, withBias != 0);
            break;
        case 6: {
            TPipe pipe;
            Matmul<aType, bType, cType, biasType, STATIC_FULL> mm;
            REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, (TCubeTiling*)nullptr);
            mm.SetOrgShape(m, n, k);
            mm.SetTail(m, n, k);
            mm.SetTensorA(gm<half>(a));
            mm.SetTensorB(gm<half>(b));
            if (withBias) mm.SetBias(gm<float>(bias));
            mm.IterateAll(gm<float>(c));
            mm.End();
            break;
        }
        case 7: tiles<MatmulImpl<aType, bType, cType, biasType, STATIC_BASE>>(t, a, b, c, 64); break;
        case 8:
            tiles<MatmulImpl<aType, bType, cType, biasType, CFG_PARTIAL>>(t, a, b, c, 0, withBias ? bias : nullptr);
            break;
        case 9: {
            TPipe pipe;
            Matmul<MatmulType<TPosition::GM, CubeFormat::ND, half, false, LayoutMode::NONE, true>,
                   MatmulType<TPosition::GM, CubeFormat::ND, half, false, LayoutMode::NONE, true>, cType, biasType,
                   CFG_DUAL>
                mm;
            REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
            mm.SetTensorA(gm<half>(a));
            mm.SetTensorB(gm<half>(b));
            if (withBias) mm.SetBias(gm<float>(bias));
            mm.IterateAll(gm<float>(c));
            mm.End();
            break;
        }
        case 10:
            all<MatmulImpl<MatmulType<TPosition::GM, CubeFormat::VECTOR, half>, bType, cType, biasType>>(t, a, b, bias, c,
                                                                                                      withBias != 0);
            break;
        case 11: {
            using i4 = AscendC::int4b_t;
            MatmulImpl<MatmulType<TPosition::GM, CubeFormat::ND, i4, true>, MatmulType<TPosition::GM, CubeFormat::ND, i4, true>,
                       MatmulType<TPosition::GM, CubeFormat::ND, int32_t>, MatmulType<TPosition::GM, CubeFormat::ND, int32_t>>
                mm;
            mm.Init(&t);
            mm.SetTensorA(gm<i4>(a), (order & 1) != 0);
            mm.SetTensorB(gm<i4>(b), (order & 2) != 0);
            if (withBias) mm.SetBias(gm<int32_t>(bias));
            mm.IterateAll(gm<int32_t>(c));
            mm.End();
            break;
        }
        case 4: tiles<MatmulImpl<aType, bType, cType, biasType, CFG_OUTER_N>>(t, a, b, c); break;
        case 5: tiles<MatmulImpl<aType, bType, cType, biasType, CFG_OUTER_M>>(t, a, b, c); break;
        default: all<MatmulImpl<aType, bType, cType, biasType, CFG_NORM, NoCb, Impl::Detail::MatmulPolicy>>(
                     t, a, b, bias, c, withBias != 0);
            break;
    }
}
