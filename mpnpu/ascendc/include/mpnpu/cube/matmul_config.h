// The matmul API's types: CubeFormat, LayoutMode, MatmulType (where each matrix lives, its format,
// element type and whether it may be transposed), MatmulConfig (the template configuration, its
// fields in the documented order, so positional initialisation means what the documentation says)
// and the helpers that produce configurations (GetNormalConfig, GetMDLConfig, ..., GetMMConfig and
// its parameter groups, CFG_NORM, CFG_MDL, CFG_IBSHARE_NORM, MM_CFG_BB).
//
// mpnpu computes every configuration the same way (mpnpu/cube/matmul_engine.h); the fields that
// change what a kernel observes are honoured (enableRelu), those that would change the protocol or
// the results and are not implemented are refused when the object is instantiated.
#ifndef MPNPU_CUBE_MATMUL_CONFIG_H
#define MPNPU_CUBE_MATMUL_CONFIG_H

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../types.h"

enum class CubeFormat : uint8_t { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR, ROW_MAJOR = ND, COLUMN_MAJOR = 8 };

enum class LayoutMode : uint8_t { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };

namespace AscendC {

enum class BatchMode : uint8_t { NONE = 0, BATCH_LESS_THAN_L1, BATCH_LARGE_THAN_L1, SINGLE_LARGE_THAN_L1 };
enum class IterateOrder : uint8_t { ORDER_M = 0, ORDER_N, UNDEF };
enum class ScheduleType : uint8_t { INNER_PRODUCT = 0, OUTER_PRODUCT };
enum class BatchOutMode : uint8_t { SINGLE_BATCH = 0, MULTI_BATCH, DYNAMIC };
enum IterateMode : uint8_t {
    ITERATE_MODE_NORMAL = 0b00000001,
    ITERATE_MODE_ALL = 0b00000010,
    ITERATE_MODE_BATCH = 0b00000100,
    ITERATE_MODE_N_BATCH = 0b00001000,
    ITERATE_MODE_DEFAULT = 0b11111111,
};

// A, B, C or bias of a Matmul: memory position, data format, element type, whether SetTensorA/B
// may transpose it, batch layout, L1 sharing between the vector cores, and (TSCM) where it came from.
template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false, LayoutMode LAYOUT = LayoutMode::NONE,
          bool IBSHARE = false, TPosition SRCPOS = TPosition::GM>
struct MatmulType {
    constexpr static TPosition pos = POSITION;
    constexpr static CubeFormat format = FORMAT;
    using T = TYPE;
    constexpr static bool isTrans = ISTRANS;
    constexpr static LayoutMode layout = LAYOUT;
    constexpr static bool ibShare = IBSHARE;
    constexpr static TPosition srcPos = SRCPOS;
};

// B of a 4:2 sparse Matmul (the 4:2 sparse matmul guide): the dense B (its zeros filtered out, K / 2
// of every column's K values) and, at INDEX_POSITION, the index matrix SetSparseIndex gives. The guide
// allows B and the index in GM only, int8_t, ISTRANS true, LAYOUT NONE and IBSHARE false; the Matmul
// checks that where an object is made.
template <TPosition POSITION, TPosition INDEX_POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false>
struct SparseMatmulType : MatmulType<POSITION, FORMAT, TYPE, ISTRANS, LAYOUT, IBSHARE> {
    constexpr static TPosition indexPosition = INDEX_POSITION;
    constexpr static bool mpnpu_sparse = true;
};

// The template configuration, fields in the documented order.
struct MatmulConfig {
    bool doNorm = false;
    bool doBasicBlock = false;
    bool doMultiDataLoad = false;
    uint32_t basicM = 0;
    uint32_t basicN = 0;
    uint32_t basicK = 0;
    bool intrinsicsCheck = false;
    bool isNBatch = false;
    bool enVecND2NZ = false;
    bool doSpecialBasicBlock = false;
    uint32_t doMTE2Preload = 0;
    uint32_t singleCoreM = 0;
    uint32_t singleCoreN = 0;
    uint32_t singleCoreK = 0;
    uint32_t stepM = 0;
    uint32_t stepN = 0;
    uint32_t baseMN = 0;
    uint32_t singleCoreMN = 0;
    bool enUnitFlag = true;
    bool isPerTensor = false;
    bool hasAntiQuantOffset = false;
    bool doIBShareNorm = false;
    bool doSpecialMDL = false;
    bool enableInit = true;
    BatchMode batchMode = BatchMode::NONE;
    bool enableEnd = true;
    bool enableGetTensorC = true;
    bool enableSetOrgShape = true;
    bool enableSetBias = true;
    bool enableSetTail = true;
    bool enableQuantVector = true;
    bool enableSetDefineData = true;
    uint8_t iterateMode = ITERATE_MODE_DEFAULT;
    bool enableReuse = true;
    bool enableUBReuse = false;
    bool enableL1CacheUB = false;
    bool intraBlockPartSum = false;
    IterateOrder iterateOrder = IterateOrder::UNDEF;
    ScheduleType scheduleType = ScheduleType::INNER_PRODUCT;
    bool enableDoubleCache = false;
    bool isBiasBatch = true;
    bool enableStaticPadZeros = false;
    bool isPartialOutput = false;
    bool enableMixDualMaster = false;
    bool isA2B2Shared = false;
    bool isEnableChannelSplit = false;
    bool enableKdimReorderLoad = false;
    bool isCO1Shared = false;
    uint32_t sharedCO1BufferSize = 0;
    BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH;
    bool enableL1BankConflictOptimise = false;
    bool enableRelu = false;
};

constexpr MatmulConfig GetNormalConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                       const bool isVecND2NZ = false,
                                       const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1,
                                       const bool isMsgReuse = true, const IterateOrder iterateOrder = IterateOrder::UNDEF,
                                       const ScheduleType scheduleType = ScheduleType::INNER_PRODUCT,
                                       const bool enUnitFlag = true, const bool enableMixDualMaster = false,
                                       const BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH) {
    MatmulConfig c{};
    c.doNorm = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.enVecND2NZ = isVecND2NZ;
    c.batchMode = bmmMode;
    c.enableReuse = isMsgReuse;
    c.iterateOrder = iterateOrder;
    c.scheduleType = scheduleType;
    c.enUnitFlag = enUnitFlag;
    c.enableMixDualMaster = enableMixDualMaster;
    c.bmmOutMode = bmmOutMode;
    return c;
}

constexpr MatmulConfig GetMDLConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                    const uint32_t doMTE2Preload = 0, const bool isVecND2NZ = false,
                                    bool isPerTensor = false, bool hasAntiQuantOffset = false,
                                    const bool enUnitFlag = false, const bool isMsgReuse = true,
                                    const bool enableUBReuse = true, const bool enableL1CacheUB = false,
                                    const bool enableMixDualMaster = false, const bool enableKdimReorderLoad = false) {
    MatmulConfig c{};
    c.doMultiDataLoad = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.doMTE2Preload = doMTE2Preload;
    c.enVecND2NZ = isVecND2NZ;
    c.isPerTensor = isPerTensor;
    c.hasAntiQuantOffset = hasAntiQuantOffset;
    c.enUnitFlag = enUnitFlag;
    c.enableReuse = isMsgReuse;
    c.enableUBReuse = enableUBReuse;
    c.enableL1CacheUB = enableL1CacheUB;
    c.enableMixDualMaster = enableMixDualMaster;
    c.enableKdimReorderLoad = enableKdimReorderLoad;
    return c;
}

constexpr MatmulConfig GetSpecialMDLConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                           const uint32_t doMTE2Preload = 0, const bool isVecND2NZ = false,
                                           bool isPerTensor = false, bool hasAntiQuantOffset = false) {
    MatmulConfig c{};
    c.doSpecialMDL = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.doMTE2Preload = doMTE2Preload;
    c.enVecND2NZ = isVecND2NZ;
    c.isPerTensor = isPerTensor;
    c.hasAntiQuantOffset = hasAntiQuantOffset;
    c.enUnitFlag = false;
    return c;
}

constexpr MatmulConfig GetIBShareNormConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                            const bool isVecND2NZ = false,
                                            const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1,
                                            const bool isDoubleCache = false, const bool enUnitFlag = true) {
    MatmulConfig c{};
    c.doIBShareNorm = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.enVecND2NZ = isVecND2NZ;
    c.batchMode = bmmMode;
    c.enableDoubleCache = isDoubleCache;
    c.enUnitFlag = enUnitFlag;
    return c;
}

constexpr MatmulConfig GetBasicConfig(const uint32_t basicM, const uint32_t basicN, const uint32_t basicK,
                                      const bool intrinsicsLimit = false, const bool batchLoop = false,
                                      const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1) {
    MatmulConfig c{};
    c.doBasicBlock = true;
    c.basicM = basicM;
    c.basicN = basicN;
    c.basicK = basicK;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.batchMode = bmmMode;
    return c;
}

// GetMMConfig<mode>(params...): the template ``mode`` names (CONFIG_NORM: GetNormalConfig(),
// CONFIG_MDL: GetMDLConfig(), CONFIG_SPECIALMDL: GetSpecialMDLConfig(), CONFIG_IBSHARE:
// GetIBShareNormConfig()), then each parameter group given (any of the four, in any order) sets
// its fields of the configuration. The groups' fields are in the documented order, so positional
// initialisation means what the documentation says; a field left out keeps the default below
// (MatmulBatchParams::batchMode defaults to BATCH_LESS_THAN_L1, as GetNormalConfig's does;
// MatmulFuncParams's fields to those of a default MatmulConfig).
enum class MatmulConfigMode : uint8_t { CONFIG_NORM = 0, CONFIG_MDL, CONFIG_SPECIALMDL, CONFIG_IBSHARE };

struct MatmulShapeParams {
    uint32_t singleCoreM = 0;
    uint32_t singleCoreN = 0;
    uint32_t singleCoreK = 0;
    uint32_t basicM = 0;
    uint32_t basicN = 0;
    uint32_t basicK = 0;
};

struct MatmulQuantParams {
    bool isPerTensor = false;
    bool hasAntiQuantOffset = false;
};

struct MatmulBatchParams {
    bool isNBatch = false;
    BatchMode batchMode = BatchMode::BATCH_LESS_THAN_L1;
    bool isBiasBatch = true;
    BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH;
};

// (the first field sets MatmulConfig::intrinsicsCheck; the documentation names it intrinsicsLimit)
struct MatmulFuncParams {
    bool intrinsicsLimit = false;
    bool enVecND2NZ = false;
    bool enableDoubleCache = false;
    bool enableL1CacheUB = false;
    uint32_t doMTE2Preload = 0;
    IterateOrder iterateOrder = IterateOrder::UNDEF;
    ScheduleType scheduleType = ScheduleType::INNER_PRODUCT;
    bool enableReuse = true;
    bool enableUBReuse = false;
    bool isPartialOutput = false;
    bool isA2B2Shared = false;
    bool isEnableChannelSplit = false;
    bool enableKdimReorderLoad = false;
    bool enableL1BankConflictOptimise = false;
};

}  // namespace AscendC

namespace mpnpu {
namespace mm {

constexpr void apply_params(AscendC::MatmulConfig& c, const AscendC::MatmulShapeParams& p) {
    c.singleCoreM = p.singleCoreM;
    c.singleCoreN = p.singleCoreN;
    c.singleCoreK = p.singleCoreK;
    c.basicM = p.basicM;
    c.basicN = p.basicN;
    c.basicK = p.basicK;
}
constexpr void apply_params(AscendC::MatmulConfig& c, const AscendC::MatmulQuantParams& p) {
    c.isPerTensor = p.isPerTensor;
    c.hasAntiQuantOffset = p.hasAntiQuantOffset;
}
constexpr void apply_params(AscendC::MatmulConfig& c, const AscendC::MatmulBatchParams& p) {
    c.isNBatch = p.isNBatch;
    c.batchMode = p.batchMode;
    c.isBiasBatch = p.isBiasBatch;
    c.bmmOutMode = p.bmmOutMode;
}
constexpr void apply_params(AscendC::MatmulConfig& c, const AscendC::MatmulFuncParams& p) {
    c.intrinsicsCheck = p.intrinsicsLimit;
    c.enVecND2NZ = p.enVecND2NZ;
    c.enableDoubleCache = p.enableDoubleCache;
    c.enableL1CacheUB = p.enableL1CacheUB;
    c.doMTE2Preload = p.doMTE2Preload;
    c.iterateOrder = p.iterateOrder;
    c.scheduleType = p.scheduleType;
    c.enableReuse = p.enableReuse;
    c.enableUBReuse = p.enableUBReuse;
    c.isPartialOutput = p.isPartialOutput;
    c.isA2B2Shared = p.isA2B2Shared;
    c.isEnableChannelSplit = p.isEnableChannelSplit;
    c.enableKdimReorderLoad = p.enableKdimReorderLoad;
    c.enableL1BankConflictOptimise = p.enableL1BankConflictOptimise;
}

template <class P>
constexpr bool is_config_params =
    std::is_same_v<P, AscendC::MatmulShapeParams> || std::is_same_v<P, AscendC::MatmulQuantParams> ||
    std::is_same_v<P, AscendC::MatmulBatchParams> || std::is_same_v<P, AscendC::MatmulFuncParams>;

}  // namespace mm
}  // namespace mpnpu

namespace AscendC {

template <MatmulConfigMode configMode, typename... ArgTypes>
constexpr MatmulConfig GetMMConfig(ArgTypes&&... args) {
    static_assert((mpnpu::mm::is_config_params<std::decay_t<ArgTypes>> && ...),
                  "GetMMConfig takes MatmulShapeParams, MatmulQuantParams, MatmulBatchParams and MatmulFuncParams");
    static_assert(configMode == MatmulConfigMode::CONFIG_NORM || configMode == MatmulConfigMode::CONFIG_MDL ||
                      configMode == MatmulConfigMode::CONFIG_SPECIALMDL ||
                      configMode == MatmulConfigMode::CONFIG_IBSHARE,
                  "GetMMConfig: the mode is CONFIG_NORM, CONFIG_MDL, CONFIG_SPECIALMDL or CONFIG_IBSHARE");
    MatmulConfig c = configMode == MatmulConfigMode::CONFIG_MDL          ? GetMDLConfig()
                     : configMode == MatmulConfigMode::CONFIG_SPECIALMDL ? GetSpecialMDLConfig()
                     : configMode == MatmulConfigMode::CONFIG_IBSHARE    ? GetIBShareNormConfig()
                                                                          : GetNormalConfig();
    (mpnpu::mm::apply_params(c, args), ...);
    return c;
}

// inline: one object with external linkage, so that a kernel's class holding a Matmul<..., CFG_NORM>
// member has no internal-linkage subobject (g++'s -Wsubobject-linkage, since mpnpu's build includes
// the kernel's source from a generated file).
inline constexpr MatmulConfig CFG_NORM = GetNormalConfig();
inline constexpr MatmulConfig CFG_MDL = GetMDLConfig();
inline constexpr MatmulConfig CFG_IBSHARE_NORM = GetIBShareNormConfig();
inline constexpr MatmulConfig MM_CFG_BB = GetBasicConfig(128, 128, 128);

// The MatmulConfig of a Matmul's MM_CFG argument. Not on an API page: public kernels write
// ``ToMatmulConfig(MM_CFG).bmmOutMode`` of a MatmulConfig MM_CFG, so it gives the configuration's
// fields: a MatmulConfig itself, a MatmulApiStaticTiling's cfg (below).
constexpr MatmulConfig ToMatmulConfig(const MatmulConfig& config) { return config; }

// What a MatmulCallBackFunc's copy-out routine is handed (its third argument, as a const void*): the
// page names the fields; how mpnpu fills them is mpnpu's choice (the page does not say), for a tile of
// tm x tn elements of C: cBurstNum tm (C's rows, one contiguous run in GM each), burstLen tn (the
// elements of a row), srcStride the tile's rows in L0C rounded up to 16 (how many 16-element rows
// apart its 16-column blocks lie: FixpipeParamsV220's srcStride), dstStride C's row stride in GM in
// elements, oriNSize tn (the tile's columns in L0C), enUnitFlag false, quantScalar SetQuantScalar's
// value (0 if none), cbufWorkspaceAddr 0.
struct DataCopyOutParams {
    uint16_t cBurstNum = 0;
    uint16_t burstLen = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    uint16_t oriNSize = 0;
    bool enUnitFlag = false;
    uint64_t quantScalar = 0;
    uint64_t cbufWorkspaceAddr = 0;
};

// MatmulCallBackFunc<copy-out, copy-A1, copy-B1>: user copy routines in place of the Matmul's own
// (nullptr: the Matmul's own). mpnpu calls them from mpnpu/cube/matmul.h (MatmulCore: compute, store,
// cb_operand), where what it supports is said.
template <auto DataCopyOut = nullptr, auto CopyA1 = nullptr, auto CopyB1 = nullptr>
struct MatmulCallBackFunc {
    // (by type: a function's address compared with nullptr draws g++'s -Waddress)
    constexpr static bool mpnpu_has_out = !std::is_same_v<decltype(DataCopyOut), std::nullptr_t>;
    constexpr static bool mpnpu_has_a1 = !std::is_same_v<decltype(CopyA1), std::nullptr_t>;
    constexpr static bool mpnpu_has_b1 = !std::is_same_v<decltype(CopyB1), std::nullptr_t>;
    constexpr static bool mpnpu_none = !mpnpu_has_out && !mpnpu_has_a1 && !mpnpu_has_b1;
    // (templates on the tensor's type: LocalTensor is not declared here)
    template <class L>
    static void mpnpu_copy_out(const void* gm, const L& co1, const void* params, uint64_t tilingPtr, uint64_t dataPtr) {
        if constexpr (mpnpu_has_out) DataCopyOut(gm, co1, params, tilingPtr, dataPtr);
    }
    template <class L>
    static void mpnpu_copy_a1(const L& l1, const void* gm, int row, int col, int useM, int useK, uint64_t tilingPtr,
                              uint64_t dataPtr) {
        if constexpr (mpnpu_has_a1) CopyA1(l1, gm, row, col, useM, useK, tilingPtr, dataPtr);
    }
    template <class L>
    static void mpnpu_copy_b1(const L& l1, const void* gm, int row, int col, int useK, int useN, uint64_t tilingPtr,
                              uint64_t dataPtr) {
        if constexpr (mpnpu_has_b1) CopyB1(l1, gm, row, col, useK, useN, tilingPtr, dataPtr);
    }
};

// The MatmulPolicy template argument (the seventh of Matmul): the policies of this chip class the
// MatmulPolicy page documents. MatmulPolicy (the default) and NBuffer33MatmulPolicy (a way of loading
// A and B: the same C) compute the plain product; TrianUpperMatmulPolicy / TrianLowerMatmulPolicy
// skip the base blocks of C below / above the diagonal: mpnpu counts base block (mi, ni) (row and
// column of baseM x baseN blocks) below it when mi > ni and above it when mi < ni; skipped blocks are
// neither computed nor written. (The 950's MatmulWithScalePolicy, SplitMMatmulPolicy and
// SplitNMatmulPolicy are not provided.)
// Each is a class template of (the configuration, types...), as the page's
// MATMUL_POLICY_DEFAULT_OF declares the parameter.
namespace Impl {
namespace Detail {
enum class MpnpuPolicy : uint8_t { PLAIN = 0, TRIAN_UPPER, TRIAN_LOWER, NBUFFER33 };
template <const auto& MM_CFG = CFG_NORM, typename... T>
struct MatmulPolicy {
    static constexpr MpnpuPolicy mpnpu_policy = MpnpuPolicy::PLAIN;
};
template <const auto& MM_CFG = CFG_NORM, typename... T>
struct TrianUpperMatmulPolicy {
    static constexpr MpnpuPolicy mpnpu_policy = MpnpuPolicy::TRIAN_UPPER;
};
template <const auto& MM_CFG = CFG_NORM, typename... T>
struct TrianLowerMatmulPolicy {
    static constexpr MpnpuPolicy mpnpu_policy = MpnpuPolicy::TRIAN_LOWER;
};
template <const auto& MM_CFG = CFG_NORM, typename... T>
struct NBuffer33MatmulPolicy {
    static constexpr MpnpuPolicy mpnpu_policy = MpnpuPolicy::NBUFFER33;
};
}  // namespace Detail
}  // namespace Impl

// The constant tiling a Matmul may take as its MM_CFG (GetMatmulApiTiling): TCubeTiling's fields the
// page lists, in its order, and the configuration. A field the configuration does not fix is 0.
struct MatmulApiStaticTiling {
    int32_t M = 0, N = 0, Ka = 0, Kb = 0;
    int32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0;
    int32_t baseM = 0, baseN = 0, baseK = 0;
    int32_t depthA1 = 0, depthB1 = 0;
    int32_t stepM = 0, stepN = 0, stepKa = 0, stepKb = 0;
    int32_t isBias = 0;
    int32_t transLength = 0;
    int32_t iterateOrder = 0;
    int32_t dbL0A = 0, dbL0B = 0;
    int32_t dbL0C = 0;
    int32_t shareMode = 0;
    int32_t shareL1Size = 0;
    int32_t shareL0CSize = 0;
    int32_t shareUbSize = 0;
    int32_t batchM = 0;
    int32_t batchN = 0;
    int32_t singleBatchM = 0;
    int32_t singleBatchN = 0;
    int32_t mxTypePara = 0;
    MatmulConfig cfg{};
};

// The constant tiling of a configuration whose basicM/N/K (and, fully constant, singleCoreM/N/K) are
// set, by mpnpu's rule: the shapes as given (M, N, Ka, Kb the single-core ones), stepM = stepN = 1,
// stepKa = stepKb = the base blocks along singleCoreK (1 when not fixed), depthA1 / depthB1 twice that
// when A's and B's blocks fit l1Size twice, else once; dbL0A / dbL0B / dbL0C 2 where two blocks fit
// this chip's L0A / L0B / L0C (64 / 64 / 128 KiB); iterateOrder 1 for ORDER_N.
template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE>
constexpr MatmulApiStaticTiling GetMatmulApiTiling(const MatmulConfig& mmCFG, int32_t l1Size = 512 * 1024) {
    MatmulApiStaticTiling t{};
    t.cfg = mmCFG;
    t.singleCoreM = int32_t(mmCFG.singleCoreM);
    t.singleCoreN = int32_t(mmCFG.singleCoreN);
    t.singleCoreK = int32_t(mmCFG.singleCoreK);
    t.M = t.singleCoreM;
    t.N = t.singleCoreN;
    t.Ka = t.Kb = t.singleCoreK;
    t.baseM = int32_t(mmCFG.basicM);
    t.baseN = int32_t(mmCFG.basicN);
    t.baseK = int32_t(mmCFG.basicK);
    t.iterateOrder = mmCFG.iterateOrder == IterateOrder::ORDER_N ? 1 : 0;
    const int64_t ea = int64_t(sizeof(typename A_TYPE::T)), eb = int64_t(sizeof(typename B_TYPE::T));
    const int32_t ksteps = t.singleCoreK > 0 && t.baseK > 0 ? (t.singleCoreK + t.baseK - 1) / t.baseK : 1;
    t.stepM = t.stepN = 1;
    t.stepKa = t.stepKb = ksteps;
    const int64_t l1 = (int64_t(t.baseM) * ea + int64_t(t.baseN) * eb) * t.baseK * ksteps;
    const int32_t db = 2 * l1 <= l1Size ? 2 : 1;
    t.depthA1 = t.depthB1 = ksteps * db;
    t.dbL0A = 2 * int64_t(t.baseM) * t.baseK * ea <= 64 * 1024 ? 2 : 1;
    t.dbL0B = 2 * int64_t(t.baseN) * t.baseK * eb <= 64 * 1024 ? 2 : 1;
    t.dbL0C = 2 * int64_t(t.baseM) * t.baseN * 4 <= 128 * 1024 ? 2 : 1;
    (void)sizeof(typename C_TYPE::T), (void)sizeof(typename BIAS_TYPE::T);
    return t;
}

// (a constant tiling's configuration)
constexpr MatmulConfig ToMatmulConfig(const MatmulApiStaticTiling& tiling) { return tiling.cfg; }

}  // namespace AscendC

// Kernels spell these with and without AscendC:: (and the older ones through matmul::).
using AscendC::BatchMode;
using AscendC::BatchOutMode;
using AscendC::CFG_IBSHARE_NORM;
using AscendC::CFG_MDL;
using AscendC::CFG_NORM;
using AscendC::GetBasicConfig;
using AscendC::GetIBShareNormConfig;
using AscendC::GetMDLConfig;
using AscendC::GetMMConfig;
using AscendC::GetNormalConfig;
using AscendC::GetSpecialMDLConfig;
using AscendC::IterateMode;
using AscendC::IterateOrder;
using AscendC::MatmulBatchParams;
using AscendC::MatmulConfig;
using AscendC::MatmulConfigMode;
using AscendC::MatmulFuncParams;
using AscendC::MatmulQuantParams;
using AscendC::MatmulShapeParams;
using AscendC::MM_CFG_BB;
using AscendC::ScheduleType;
using AscendC::ToMatmulConfig;
using AscendC::GetMatmulApiTiling;
using AscendC::MatmulApiStaticTiling;

// The page's shorthand for declaring the MatmulPolicy parameter of a Matmul-like template.
#define MATMUL_POLICY_DEFAULT_OF(DEFAULT) \
    template <const auto& = MM_CFG, typename...> class MATMUL_POLICY = AscendC::Impl::Detail::DEFAULT

#endif  // MPNPU_CUBE_MATMUL_CONFIG_H
