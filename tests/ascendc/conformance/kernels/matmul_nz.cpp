// The matmul API's configuration forms and data formats, on one cube core:
//   mm_nz      MatmulImpl with A, B and C each in CubeFormat::ND or CubeFormat::NZ (fmt bits 1, 2, 4),
//              A and B optionally transposed (mode bits 1, 2), IterateAll or Iterate + GetTensorC
//              (mode bit 4); its configuration comes from GetMMConfig. types: 0 half -> float,
//              1 float -> float, 2 half -> half, 3 int8_t -> int32_t (the last three with A, B, C NZ);
//              5 half -> float, C NZ with MatmulConfig::isEnableChannelSplit (16 x 8 fractals of C);
//              6 half -> float, C in CubeFormat::ND_ALIGN;
//              4 half -> float with A and B (NZ) copied to L1 and given as TSCM tensors (fmt bit 1:
//              A's tensor is one fractal short, which memcheck reports; mode bit 8: no MTE2 -> MTE1
//              sync between the copies and the Matmul, a race).
//   mm_config  the fields of configurations GetMMConfig returns, as int32 values (CONFIG_FIELDS each), then
//              ToMatmulConfig(config 4).singleCoreM and TOTAL_L0C_SIZE.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace AscendC;

constexpr int32_t MODE_TRANS_A = 1, MODE_TRANS_B = 2, MODE_ITERATE = 4, MODE_NO_SYNC = 8;

constexpr MatmulFuncParams kPreloadN{false, false, false, false, 2, IterateOrder::UNDEF, ScheduleType::INNER_PRODUCT,
                                     true, true};
constexpr MatmulConfig kNzCfg = GetMMConfig<MatmulConfigMode::CONFIG_MDL>(kPreloadN);
constexpr MatmulConfig SplitCfg() {
    MatmulConfig cfg = kNzCfg;
    cfg.isEnableChannelSplit = true;
    return cfg;
}
constexpr MatmulConfig kSplitCfg = SplitCfg();

template <CubeFormat FA, CubeFormat FB, CubeFormat FC, typename T, typename C, typename BIAS,
          const MatmulConfig& CFG = kNzCfg>
static void run(GM_ADDR a, GM_ADDR b, GM_ADDR c, const TCubeTiling& t, int32_t mode) {
    using aType = MatmulType<TPosition::GM, FA, T, true>;
    using bType = MatmulType<TPosition::GM, FB, T, true>;
    using cType = MatmulType<TPosition::GM, FC, C>;
    using biasType = MatmulType<TPosition::GM, CubeFormat::ND, BIAS>;
    GlobalTensor<T> aGm, bGm;
    GlobalTensor<C> cGm;
    aGm.SetGlobalBuffer((__gm__ T*)a);
    bGm.SetGlobalBuffer((__gm__ T*)b);
    cGm.SetGlobalBuffer((__gm__ C*)c);
    MatmulImpl<aType, bType, cType, biasType, CFG> mm;
    mm.Init(&t);
    mm.SetUserDefInfo(reinterpret_cast<uint64_t>(&t));  // (for callbacks: kept, changes nothing)
    mm.SetSelfDefineData(uint64_t(mode));
    mm.SetTensorA(aGm, (mode & MODE_TRANS_A) != 0);
    mm.SetTensorB(bGm, (mode & MODE_TRANS_B) != 0);
    mm.DisableBias();
    if (mode & MODE_ITERATE) {
        while (mm.Iterate()) mm.GetTensorC(cGm);
    } else {
        mm.IterateAll(cGm);
    }
    mm.End();
}

// A and B copied from GM (NZ) into TSCM buffers of L1, the Matmul reading them there.
static void run_tscm(GM_ADDR a, GM_ADDR b, GM_ADDR c, const TCubeTiling& t, int32_t mode, int32_t fmt) {
    using aType = MatmulType<TPosition::TSCM, CubeFormat::ND, half, true>;  // (ND: what public kernels write)
    using bType = MatmulType<TPosition::TSCM, CubeFormat::NZ, half, true>;
    using cType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    using biasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    const bool ta = (mode & MODE_TRANS_A) != 0, tb = (mode & MODE_TRANS_B) != 0;
    auto nz_elems = [](int32_t rows, int32_t cols) { return uint32_t((rows + 15) / 16 * 16 * ((cols + 15) / 16 * 16)); };
    const uint32_t na = ta ? nz_elems(t.Ka, t.M) : nz_elems(t.M, t.Ka);
    const uint32_t nb = tb ? nz_elems(t.N, t.Kb) : nz_elems(t.Kb, t.N);
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer((__gm__ half*)a);
    bGm.SetGlobalBuffer((__gm__ half*)b);
    cGm.SetGlobalBuffer((__gm__ float*)c);
    TPipe pipe;
    TBuf<TPosition::TSCM> aBuf, bBuf;
    TSCM<TPosition::GM, 1> bQue;
    const uint32_t aLen = (fmt & 1) ? na - 16 * 16 : na;  // fmt bit 1: one fractal short
    pipe.InitBuffer(aBuf, aLen * uint32_t(sizeof(half)));
    LocalTensor<half> aL1 = aBuf.Get<half>(), bL1;
    DataCopy(aL1, aGm, aLen);
    if (!(fmt & 2)) {
        pipe.InitBuffer(bBuf, nb * uint32_t(sizeof(half)));
        bL1 = bBuf.Get<half>();
        DataCopy(bL1, bGm, nb);
    }
    if (!(mode & MODE_NO_SYNC)) {
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    }
    if (fmt & 2) {  // fmt bit 2: B through a TSCM queue (copied after the flag: only the queue orders it)
        pipe.InitBuffer(bQue, 1, nb * uint32_t(sizeof(half)));
        bL1 = bQue.AllocTensor<half>();
        DataCopy(bL1, bGm, nb);
        bQue.EnQue(bL1);
        bL1 = bQue.DeQue<half>();
    }
    MatmulImpl<aType, bType, cType, biasType, kNzCfg> mm;
    mm.Init(&t);
    mm.SetTensorA(aL1, ta);
    mm.SetTensorB(bL1, tb);
    mm.DisableBias();
    mm.IterateAll(cGm);
    mm.End();
    if (fmt & 2) bQue.FreeTensor(bL1);
}

template <typename T, typename C, typename BIAS>
static void by_format(GM_ADDR a, GM_ADDR b, GM_ADDR c, const TCubeTiling& t, int32_t mode, int32_t fmt) {
    constexpr CubeFormat ND = CubeFormat::ND, NZ = CubeFormat::NZ;
    switch (fmt) {
        case 0: run<ND, ND, ND, T, C, BIAS>(a, b, c, t, mode); break;
        case 1: run<NZ, ND, ND, T, C, BIAS>(a, b, c, t, mode); break;
        case 2: run<ND, NZ, ND, T, C, BIAS>(a, b, c, t, mode); break;
        case 3: run<NZ, NZ, ND, T, C, BIAS>(a, b, c, t, mode); break;
        case 4: run<ND, ND, NZ, T, C, BIAS>(a, b, c, t, mode); break;
        case 5: run<NZ, ND, NZ, T, C, BIAS>(a, b, c, t, mode); break;
        case 6: run<ND, NZ, NZ, T, C, BIAS>(a, b, c, t, mode); break;
        default: run<NZ, NZ, NZ, T, C, BIAS>(a, b, c, t, mode); break;
    }
}

extern "C" __global__ __aicore__ void mm_nz(GM_ADDR a, GM_ADDR b, GM_ADDR c, int32_t m, int32_t n, int32_t k,
                                            int32_t baseM, int32_t baseN, int32_t baseK, int32_t mode, int32_t fmt,
                                            int32_t types) {
    TCubeTiling t{};
    t.usedCoreNum = 1;
    t.M = t.singleCoreM = m;
    t.N = t.singleCoreN = n;
    t.Ka = t.Kb = t.singleCoreK = k;
    t.baseM = baseM;
    t.baseN = baseN;
    t.baseK = baseK;
    switch (types) {
        case 0: by_format<half, float, float>(a, b, c, t, mode, fmt); break;
        case 1: run<CubeFormat::NZ, CubeFormat::NZ, CubeFormat::NZ, float, float, float>(a, b, c, t, mode); break;
        case 2: run<CubeFormat::NZ, CubeFormat::NZ, CubeFormat::NZ, half, half, float>(a, b, c, t, mode); break;
        case 3: run<CubeFormat::NZ, CubeFormat::NZ, CubeFormat::NZ, int8_t, int32_t, int32_t>(a, b, c, t, mode); break;
        case 6:  // C (float) in CubeFormat::ND_ALIGN: rows N rounded up to 8 elements (32 bytes) apart
            run<CubeFormat::ND, CubeFormat::ND, CubeFormat::ND_ALIGN, half, float, float>(a, b, c, t, mode);
            break;
        case 5:  // C (float, NZ) with MatmulConfig::isEnableChannelSplit: 16 x 8 fractals
            run<CubeFormat::ND, CubeFormat::ND, CubeFormat::NZ, half, float, float, kSplitCfg>(a, b, c, t, mode);
            break;
        default: run_tscm(a, b, c, t, mode, fmt); break;
    }
}

// -- GetMMConfig -----------------------------------------------------------------------------------------------

constexpr int32_t CONFIG_FIELDS = 32;

constexpr MatmulShapeParams kShape{64, 48, 32, 32, 16, 16};
constexpr MatmulQuantParams kQuant{true, true};
constexpr MatmulBatchParams kBatch{true, BatchMode::SINGLE_LARGE_THAN_L1, false, BatchOutMode::DYNAMIC};
constexpr MatmulBatchParams kBatchFirst{true};
constexpr MatmulFuncParams kFunc{true, true, true, true, 1, IterateOrder::ORDER_N, ScheduleType::OUTER_PRODUCT,
                                 false, true, true, true, true, true, true};
constexpr MatmulConfig kConfigs[] = {
    GetMMConfig<MatmulConfigMode::CONFIG_NORM>(),
    GetMMConfig<MatmulConfigMode::CONFIG_MDL>(),
    GetMMConfig<MatmulConfigMode::CONFIG_SPECIALMDL>(),
    GetMMConfig<MatmulConfigMode::CONFIG_IBSHARE>(),
    GetMMConfig<MatmulConfigMode::CONFIG_NORM>(kShape, kQuant, kBatch, kFunc),
    GetMMConfig<MatmulConfigMode::CONFIG_MDL>(kFunc, kBatchFirst, kShape),  // any order
    GetMMConfig<MatmulConfigMode::CONFIG_NORM>(kBatch, kBatchFirst),       // the later one wins
};

static void put(GlobalTensor<int32_t> o, const MatmulConfig& c) {
    const int32_t v[] = {c.doNorm, c.doBasicBlock, c.doMultiDataLoad, c.doSpecialMDL, c.doIBShareNorm,
                         int32_t(c.basicM), int32_t(c.basicN), int32_t(c.basicK), int32_t(c.singleCoreM),
                         int32_t(c.singleCoreN), int32_t(c.singleCoreK), c.intrinsicsCheck, c.isNBatch, c.enVecND2NZ,
                         int32_t(c.doMTE2Preload), c.enUnitFlag, c.isPerTensor, c.hasAntiQuantOffset,
                         int32_t(c.batchMode), c.isBiasBatch, int32_t(c.bmmOutMode), int32_t(c.iterateOrder),
                         int32_t(c.scheduleType), c.enableReuse, c.enableUBReuse, c.enableL1CacheUB,
                         c.enableDoubleCache, c.isPartialOutput, c.isA2B2Shared, c.isEnableChannelSplit,
                         c.enableKdimReorderLoad, c.enableL1BankConflictOptimise};
    static_assert(sizeof(v) / sizeof(v[0]) == CONFIG_FIELDS, "one value per field");
    for (int32_t i = 0; i < CONFIG_FIELDS; ++i) o.SetValue(uint64_t(i), v[i]);
}

extern "C" __global__ __aicore__ void mm_config(GM_ADDR out) {
    GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out);
    int32_t at = 0;
    for (const MatmulConfig& c : kConfigs) {
        put(o[uint64_t(at)], c);
        at += CONFIG_FIELDS;
    }
    // then: ToMatmulConfig of a MatmulConfig (its fields), TOTAL_L0C_SIZE; the Mmad order setters run
    static_assert(ToMatmulConfig(CFG_MDL).doMultiDataLoad && !ToMatmulConfig(CFG_NORM).doMultiDataLoad, "fields");
    SetMMRowMajor();
    SetMMColumnMajor();
    SetMMLayoutTransform(true);
    o.SetValue(uint64_t(at), int32_t(ToMatmulConfig(kConfigs[4]).singleCoreM));
    o.SetValue(uint64_t(at + 1), int32_t(TOTAL_L0C_SIZE));
}

// -- matmul::CeilDiv beside a kernel's own CeilDiv(T, T) template (as common kernel headers define one) ----------

template <typename T>
constexpr T CeilDiv(T a, T b) {
    return b == 0 ? a : (a + b - 1) / b;
}
namespace uses_matmul {
using namespace matmul;
static_assert(CeilDiv(7u, 0u) == 7u, "the kernel's own template is preferred for one type");
static_assert(CeilDiv(7u, 2) == 4u && CeilDiv(int64_t(9), 4u) == 3, "matmul::CeilDiv for mixed types");
static_assert(matmul::CeilDiv(7, 0) == 0, "matmul::CeilDiv by 0 is 0");
}  // namespace uses_matmul
