// Host-side tiling API (tiling/tiling_api.h): the matmul tiling classes a host program fills a
// TCubeTiling with (matmul_tiling::MatmulApiTiling for one core, MultiCoreMatmulTiling for several),
// sized for mpnpu's chip (mpnpu/device_model.h, through PlatformAscendC).
//
// The rule GetTiling follows is mpnpu's own (the vendor's choices are not reproduced; any tiling
// meeting the documented constraints is a valid one, and mpnpu's Matmul computes with it):
//
//  1. Shapes. SetShape's m, n, k (a -1 takes SetOrgShape's M, N, Ka); SetOrgShape's M, N, Ka, Kb (when
//     not called: the shape). K is not split (singleCoreK = k, or SetSingleShape's singleK) unless
//     EnableMultiCoreSplitK / SetSplitK asks for it (2).
//  2. Cores (MultiCoreMatmulTiling; MatmulApiTiling computes the whole shape on one core). C is cut
//     into mDim x nDim parts with mDim * nDim <= SetDim's dim: a part is ceil(m / mDim) rows, rounded
//     up to a multiple of 16 (SetAlignSplit's alignM) when M is split; the same for N. A singleM or
//     singleN given by SetSingleShape fixes that side (mDim = ceil(m / singleM)). Among the cuts the
//     one using the most cores wins, then the one whose parts are the most square (in elements), then
//     the one with more parts along M. Except when C goes to a vector core (SetCType VECIN: a mix
//     kernel's vector cores take C base block by base block): then, among the cuts using the most
//     cores, M is cut as little as possible, so each vector core keeps whole columns of C down M (the
//     dev kit's mix samples index a vector core's part of C by blockIdx * singleCoreN).
//     With split K the cut is mDim x nDim x kDim cores, kDim dividing k into parts that are whole
//     multiples of 16 elements (32 bytes of 1-byte types), so no core has a K tail; among the cuts
//     using the most cores the one with the fewest K parts wins, then the rules above.
//     usedCoreNum = ceil(m / singleCoreM) * ceil(n / singleCoreN) * ceil(k / singleCoreK).
//  3. Base blocks: SetFixSplit's values, else baseM = min(128, singleCoreM), baseN = min(256,
//     singleCoreN), baseK = min(64, singleCoreK), rounded up to 16 (baseK: to 32 bytes of A's type when
//     that is more than 16 elements). Then whatever SetFixSplit left free is halved (baseK first, then
//     baseN, then baseM, never below the alignment) until one A block fits L0A, one B block L0B, one
//     float/int32 C block L0C (SetBufferSpace's l0CSize) and, with a bias, baseN bias elements the bias
//     table (btSize). dbL0A / dbL0B / dbL0C = 2 where two blocks fit, else 1.
//  4. L1: stepM = stepN = 1; stepKa = stepKb = the base blocks along all of singleCoreK (K loaded
//     whole) with two buffers (depthA1 = stepM * stepKa * 2), else with one, else halved until
//     A's and B's buffers and a bias row fit SetBufferSpace's l1Size.
//  5. iterateOrder from SetTraverse (FIRSTN: 1, else 0); isBias from EnableBias / SetBias; the UB
//     figures (transLength, shareUbSize) and the reserved fields 0: mpnpu's Matmul stages no A/B/C
//     data through UB. The batch layout fields are what SetALayout / SetBLayout / SetCLayout /
//     SetBatchNum / SetBatchInfoForNormal gave (0 when not called).
//
// GetTiling returns -1, with "MatmulApi Tiling: <why>" on stderr, when the request cannot be tiled
// (types or shape missing, a fixed base block that breaks the alignment or does not fit, a split that
// needs more cores than SetDim allows, buffers too small); the setters return -1 on a bad argument.
#ifndef MPNPU_TILING_TILING_API_H
#define MPNPU_TILING_TILING_API_H

#include <cstdint>
#include <cstdio>
#include <iostream>  // (host tiling code prints with std::cout after including this)

#include "../kernel_tiling/kernel_tiling.h"
#include "platform/platform_ascendc.h"
#include "../graph/tensor_shape.h"  // (the high-level APIs' tiling helpers take AscendC::TensorShape)
#include "normalization_tiling.h"

namespace matmul_tiling {

// (the graph data types: matmul_tiling::DataType::DT_FLOAT16 is ge::DT_FLOAT16)
using DataType = ge::DataType;

enum class TPosition : int32_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC,
    SPM,
    SHM = SPM,
    TSCM,
    MAX
};

enum class CubeFormat : int32_t { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR };

enum class MatrixTraverse : int32_t { NOSET = 0, FIRSTM = 1, FIRSTN = 2 };

// How the kernel's Matmul moves data (SetMatmulConfigParams); mpnpu's tiling is the same for each.
enum class ScheduleType : int32_t { INNER_PRODUCT = 0, OUTER_PRODUCT = 1, N_BUFFER_33 = 2 };

// The (de)quantisation mode the kernel uses (SetDequantType): one scale (SetQuantScalar) or one per
// column of C (SetQuantVector). mpnpu's tiling is the same for each.
enum class DequantType : int32_t { SCALAR = 0, TENSOR = 1 };

// The kernel's MatmulConfig choices the tiling is told about (SetMatmulConfigParams).
struct MatmulConfigParams {
    int32_t mmConfigType;
    bool enableL1CacheUB;
    ScheduleType scheduleType;
    MatrixTraverse traverse;
    bool enVecND2NZ;
    MatmulConfigParams(int32_t mmConfigTypeIn = 1, bool enableL1CacheUBIn = false,
                       ScheduleType scheduleTypeIn = ScheduleType::INNER_PRODUCT,
                       MatrixTraverse traverseIn = MatrixTraverse::NOSET, bool enVecND2NZIn = false)
        : mmConfigType(mmConfigTypeIn),
          enableL1CacheUB(enableL1CacheUBIn),
          scheduleType(scheduleTypeIn),
          traverse(traverseIn),
          enVecND2NZ(enVecND2NZIn) {}
};

// A platform described by its figures (for tiling code that has no PlatformAscendC).
struct PlatformInfo {
    platform_ascendc::SocVersion socVersion;
    uint64_t l1Size = 0;
    uint64_t l0CSize = 0;
    uint64_t ubSize = 0;
    uint64_t l0ASize = 0;
    uint64_t l0BSize = 0;
};

namespace detail {

struct MatrixType {
    bool set = false;
    TPosition pos = TPosition::GM;
    CubeFormat format = CubeFormat::ND;
    DataType dtype = DataType::DT_FLOAT16;
    bool trans = false;
};

// Bytes of one element of a type the cube takes (0: not one).
inline int64_t elem_bytes(DataType t) {
    switch (t) {
        case DataType::DT_FLOAT:
        case DataType::DT_INT32:
            return 4;
        case DataType::DT_FLOAT16:
        case DataType::DT_BF16:
            return 2;
        case DataType::DT_INT4:  // (half a byte: sized as one here, K aligned to 64 of them)
        case DataType::DT_INT8:
        case DataType::DT_UINT8:
        case DataType::DT_HIFLOAT8:
        case DataType::DT_FLOAT8_E5M2:
        case DataType::DT_FLOAT8_E4M3FN:
            return 1;
        default:
            return 0;
    }
}

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t align_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }

}  // namespace detail

class MatmulApiTilingBase {
public:
    MatmulApiTilingBase() : MatmulApiTilingBase(*platform_ascendc::PlatformAscendCManager::GetInstance()) {}
    explicit MatmulApiTilingBase(const platform_ascendc::PlatformAscendC& ascendcPlatform) {
        using platform_ascendc::CoreMemType;
        auto size = [&ascendcPlatform](CoreMemType kind) {
            uint64_t v = 0;
            ascendcPlatform.GetCoreMemSize(kind, v);
            return int64_t(v);
        };
        l1Size_ = size(CoreMemType::L1);
        l0ASize_ = size(CoreMemType::L0_A);
        l0BSize_ = size(CoreMemType::L0_B);
        l0CSize_ = size(CoreMemType::L0_C);
        ubSize_ = size(CoreMemType::UB);
        btSize_ = size(CoreMemType::BT);
        maxDim_ = int32_t(ascendcPlatform.GetCoreNumAiv());
    }
    // (a size left 0 is the chip's)
    explicit MatmulApiTilingBase(const PlatformInfo& platform) : MatmulApiTilingBase() {
        if (platform.l1Size) l1Size_ = int64_t(platform.l1Size);
        if (platform.l0CSize) l0CSize_ = int64_t(platform.l0CSize);
        if (platform.ubSize) ubSize_ = int64_t(platform.ubSize);
        if (platform.l0ASize) l0ASize_ = int64_t(platform.l0ASize);
        if (platform.l0BSize) l0BSize_ = int64_t(platform.l0BSize);
    }
    virtual ~MatmulApiTilingBase() = default;

    int32_t SetAType(TPosition pos, CubeFormat type, DataType dataType, bool isTrans = false) {
        return set_type(a_, "SetAType", pos, type, dataType, isTrans);
    }
    int32_t SetBType(TPosition pos, CubeFormat type, DataType dataType, bool isTrans = false) {
        return set_type(b_, "SetBType", pos, type, dataType, isTrans);
    }
    int32_t SetCType(TPosition pos, CubeFormat type, DataType dataType) {
        return set_type(c_, "SetCType", pos, type, dataType, false);
    }
    int32_t SetBiasType(TPosition pos, CubeFormat type, DataType dataType) {
        return set_type(bias_, "SetBiasType", pos, type, dataType, false);
    }

    int32_t SetShape(int32_t m, int32_t n, int32_t k) { return set_mnk("SetShape", m_, n_, k_, m, n, k); }
    int32_t SetOrgShape(int32_t orgMIn, int32_t orgNIn, int32_t orgKIn) {
        return SetOrgShape(orgMIn, orgNIn, orgKIn, orgKIn);
    }
    int32_t SetOrgShape(int32_t orgMIn, int32_t orgNIn, int32_t orgKaIn, int32_t orgKbIn) {
        if (orgMIn <= 0 || orgNIn <= 0 || orgKaIn <= 0 || orgKbIn <= 0)
            return fail("SetOrgShape(%d, %d, %d, %d): each must be positive", orgMIn, orgNIn, orgKaIn, orgKbIn);
        orgM_ = orgMIn;
        orgN_ = orgNIn;
        orgKa_ = orgKaIn;
        orgKb_ = orgKbIn;
        return 0;
    }
    int32_t SetSingleShape(int32_t singleMIn = -1, int32_t singleNIn = -1, int32_t singleKIn = -1) {
        return set_mnk("SetSingleShape", singleM_, singleN_, singleK_, singleMIn, singleNIn, singleKIn);
    }
    int32_t SetFixSplit(int32_t baseMIn = -1, int32_t baseNIn = -1, int32_t baseKIn = -1) {
        return set_mnk("SetFixSplit", fixM_, fixN_, fixK_, baseMIn, baseNIn, baseKIn);
    }
    int32_t SetBufferSpace(int32_t l1Size = -1, int32_t l0CSize = -1, int32_t ubSize = -1, int32_t btSize = -1) {
        if (l1Size < -1 || l0CSize < -1 || ubSize < -1 || btSize < -1)
            return fail("SetBufferSpace(%d, %d, %d, %d): each must be a byte count or -1", l1Size, l0CSize, ubSize,
                        btSize);
        useL1_ = l1Size;
        useL0C_ = l0CSize;
        useUb_ = ubSize;
        useBt_ = btSize;
        return 0;
    }
    int32_t EnableBias(bool isBiasIn = false) {
        isBias_ = isBiasIn;
        return 0;
    }
    int32_t SetBias(bool isBiasIn = false) { return EnableBias(isBiasIn); }
    // A 4:2 sparse matmul (before GetTiling). The tiling is worked out as for a dense B: its dense B
    // takes half the L1 a dense one would, so the tiling fits.
    int32_t SetSparse(bool isSparseIn = false) {
        isSparse_ = isSparseIn;
        return 0;
    }
    int32_t SetTraverse(MatrixTraverse traverse) {
        traverse_ = traverse;
        return 0;
    }
    int32_t SetAlignSplit(int32_t alignM, int32_t alignN, int32_t alignK) {
        alignM_ = alignM > 0 ? alignM : 0;
        alignN_ = alignN > 0 ? alignN : 0;
        alignK_ = alignK > 0 ? alignK : 0;
        return 0;
    }

    // Batch matmul (IterateBatch / IterateNBatch): the extents of A's, B's and C's batch layouts (the
    // LayoutMode of the kernel's MatmulType says how they are arranged), the largest batch count of
    // one call, and for the NORMAL layout the batch counts and M, N, K. GetTiling copies them into the
    // tiling's ALayoutInfo*, BLayoutInfo*, CLayoutInfo* and BatchNum; the rest of the tiling is that of
    // one matrix (SetShape's).
    int32_t SetALayout(int32_t b, int32_t s, int32_t n, int32_t g, int32_t d) {
        return set_layout("SetALayout", aLayout_, b, s, n, g, d);
    }
    int32_t SetBLayout(int32_t b, int32_t s, int32_t n, int32_t g, int32_t d) {
        return set_layout("SetBLayout", bLayout_, b, s, n, g, d);
    }
    int32_t SetCLayout(int32_t b, int32_t s, int32_t n, int32_t g, int32_t d) {
        return set_layout("SetCLayout", cLayout_, b, s, n, g, d);
    }
    int32_t SetBatchNum(int32_t batch) {
        if (batch <= 0) return fail("SetBatchNum(%d): the batch count must be positive", batch);
        batchNum_ = batch;
        return 0;
    }
    // (mpnpu fills the layout fields as NORMAL's [batch, rows, 1, 1, columns]: A m x k, B n x k, C m x n)
    int32_t SetBatchInfoForNormal(int32_t batchA, int32_t batchB, int32_t m, int32_t n, int32_t k) {
        if (batchA <= 0 || batchB <= 0 || m <= 0 || n <= 0 || k <= 0)
            return fail("SetBatchInfoForNormal(%d, %d, %d, %d, %d): each must be positive", batchA, batchB, m, n, k);
        const int32_t batchC = batchA > batchB ? batchA : batchB;
        set_layout("SetBatchInfoForNormal", aLayout_, batchA, m, 1, 1, k);
        set_layout("SetBatchInfoForNormal", bLayout_, batchB, n, 1, 1, k);
        set_layout("SetBatchInfoForNormal", cLayout_, batchC, m, 1, 1, n);
        if (batchNum_ <= 0) batchNum_ = batchC;
        return 0;
    }

    // The kernel's template (0 Norm, 1 MDL), L1 caching of UB blocks, schedule, traversal and ND2NZ:
    // mpnpu's rule is the same for each, but a traversal other than NOSET sets iterateOrder as
    // SetTraverse does.
    void SetMatmulConfigParams(int32_t mmConfigTypeIn = 1, bool enableL1CacheUBIn = false,
                               ScheduleType scheduleTypeIn = ScheduleType::INNER_PRODUCT,
                               MatrixTraverse traverseIn = MatrixTraverse::NOSET, bool enVecND2NZIn = false) {
        SetMatmulConfigParams(
            MatmulConfigParams(mmConfigTypeIn, enableL1CacheUBIn, scheduleTypeIn, traverseIn, enVecND2NZIn));
    }
    void SetMatmulConfigParams(const MatmulConfigParams& configParams) {
        configParams_ = configParams;
        if (configParams.traverse != MatrixTraverse::NOSET) traverse_ = configParams.traverse;
    }
    // Quantisation mode: kept (mpnpu's tiling does not depend on it).
    int32_t SetDequantType(DequantType dequantType) {
        if (dequantType != DequantType::SCALAR && dequantType != DequantType::TENSOR)
            return fail("SetDequantType(%d): SCALAR or TENSOR", int(dequantType));
        dequantType_ = dequantType;
        return 0;
    }

    int64_t GetTiling(TCubeTiling& tiling) {
        const int64_t r = compute(tiling, dim_);
        if (r == 0) {
            tiling.ALayoutInfoB = aLayout_[0], tiling.ALayoutInfoS = aLayout_[1], tiling.ALayoutInfoN = aLayout_[2];
            tiling.ALayoutInfoG = aLayout_[3], tiling.ALayoutInfoD = aLayout_[4];
            tiling.BLayoutInfoB = bLayout_[0], tiling.BLayoutInfoS = bLayout_[1], tiling.BLayoutInfoN = bLayout_[2];
            tiling.BLayoutInfoG = bLayout_[3], tiling.BLayoutInfoD = bLayout_[4];
            tiling.CLayoutInfoB = cLayout_[0], tiling.CLayoutInfoS1 = cLayout_[1], tiling.CLayoutInfoN = cLayout_[2];
            tiling.CLayoutInfoG = cLayout_[3], tiling.CLayoutInfoS2 = cLayout_[4];
            tiling.BatchNum = batchNum_ > 0 ? batchNum_ : 0;
            result_ = tiling;
        }
        return r;
    }

    int32_t GetBaseM() const { return result_.baseM; }
    int32_t GetBaseN() const { return result_.baseN; }
    int32_t GetBaseK() const { return result_.baseK; }

protected:
    int32_t dim_ = 1;
    int32_t maxDim_ = 1;
    int32_t mDim_ = 0;
    int32_t nDim_ = 0;
    int32_t kDim_ = 1;
    bool splitK_ = false;
    TCubeTiling result_{};

    template <class... Args>
    static int32_t fail(const char* fmt, Args... args) {
        std::fprintf(stderr, "MatmulApi Tiling: ");
        if constexpr (sizeof...(Args) == 0)
            std::fputs(fmt, stderr);
        else
            std::fprintf(stderr, fmt, args...);
        std::fputc('\n', stderr);
        return -1;
    }

private:
    detail::MatrixType a_, b_, c_, bias_;
    int32_t m_ = -1, n_ = -1, k_ = -1;
    int32_t orgM_ = -1, orgN_ = -1, orgKa_ = -1, orgKb_ = -1;
    int32_t singleM_ = -1, singleN_ = -1, singleK_ = -1;
    int32_t fixM_ = -1, fixN_ = -1, fixK_ = -1;
    int32_t useL1_ = -1, useL0C_ = -1, useUb_ = -1, useBt_ = -1;
    int32_t alignM_ = 0, alignN_ = 0, alignK_ = 0;
    bool isBias_ = false;
    bool isSparse_ = false;
    MatrixTraverse traverse_ = MatrixTraverse::NOSET;
    int64_t l1Size_ = 0, l0ASize_ = 0, l0BSize_ = 0, l0CSize_ = 0, ubSize_ = 0, btSize_ = 0;
    int32_t aLayout_[5] = {}, bLayout_[5] = {}, cLayout_[5] = {};
    MatmulConfigParams configParams_{};
    DequantType dequantType_ = DequantType::SCALAR;
    int32_t batchNum_ = 0;

    static int32_t set_layout(const char* what, int32_t (&dst)[5], int32_t b, int32_t s, int32_t n, int32_t g,
                              int32_t d) {
        if (b <= 0 || s <= 0 || n <= 0 || g <= 0 || d <= 0)
            return fail("%s(%d, %d, %d, %d, %d): each extent must be positive", what, b, s, n, g, d);
        dst[0] = b, dst[1] = s, dst[2] = n, dst[3] = g, dst[4] = d;
        return 0;
    }

    static bool valid_or_unset(int32_t v) { return v == -1 || v > 0; }

    // Three sizes along M, N, K, each positive or -1 (not set).
    static int32_t set_mnk(const char* what, int32_t& dm, int32_t& dn, int32_t& dk, int32_t m, int32_t n, int32_t k) {
        if (!valid_or_unset(m) || !valid_or_unset(n) || !valid_or_unset(k))
            return fail("%s(%d, %d, %d): each must be positive or -1", what, m, n, k);
        dm = m;
        dn = n;
        dk = k;
        return 0;
    }

    static int32_t set_type(detail::MatrixType& t, const char* what, TPosition pos, CubeFormat type, DataType dataType,
                            bool isTrans) {
        if (detail::elem_bytes(dataType) == 0)
            return fail("%s: data type %d is not one the cube computes with", what, int(dataType));
        t.set = true;
        t.pos = pos;
        t.format = type;
        t.dtype = dataType;
        t.trans = isTrans;
        return 0;
    }

    // The per-core extent along one side cut into `parts`: the whole side when not cut, else a part
    // rounded up to `align` (a fixed single extent when the caller gave one).
    static int64_t part(int64_t len, int64_t parts, int64_t align) {
        if (parts <= 1) return len;
        return detail::align_up(detail::cdiv(len, parts), align);
    }

    int64_t compute(TCubeTiling& out, int32_t dim) {
        using detail::align_up;
        using detail::cdiv;
        if (!a_.set || !b_.set || !c_.set) return fail("SetAType, SetBType and SetCType must all be called first");
        const int64_t itemA = detail::elem_bytes(a_.dtype), itemB = detail::elem_bytes(b_.dtype);
        const int64_t itemBias = bias_.set ? detail::elem_bytes(bias_.dtype) : 4;
        const int64_t acc = 4;  // L0C holds float or int32 whatever C's type
        // 1. shapes
        const int64_t m = m_ > 0 ? m_ : orgM_, n = n_ > 0 ? n_ : orgN_, k = k_ > 0 ? k_ : orgKa_;
        if (m <= 0 || n <= 0 || k <= 0) return fail("the shape is not set (SetShape or SetOrgShape)");
        const int64_t M = orgM_ > 0 ? orgM_ : m, N = orgN_ > 0 ? orgN_ : n;
        const int64_t Ka = orgKa_ > 0 ? orgKa_ : k, Kb = orgKb_ > 0 ? orgKb_ : Ka;
        if (m > M || n > N || k > Ka || k > Kb)
            return fail("the shape %lldx%lldx%lld exceeds the original shape (M %lld, N %lld, Ka %lld, Kb %lld)",
                        (long long)m, (long long)n, (long long)k, (long long)M, (long long)N, (long long)Ka,
                        (long long)Kb);
        if (singleK_ > k) return fail("singleK %lld exceeds k %lld", (long long)singleK_, (long long)k);
        // 2. the cut into cores (K too with EnableMultiCoreSplitK: into kc parts of k / kc elements,
        //    kc dividing k into parts of whole kAlign multiples, so that no core has a K tail; among
        //    the cuts using the most cores the one with fewer K parts wins)
        const int64_t aM = alignM_ > 0 ? alignM_ : 16, aN = alignN_ > 0 ? alignN_ : 16;
        const int64_t kAlignCut = a_.dtype == DataType::DT_INT4 ? 64
                                  : detail::elem_bytes(a_.dtype) >= 2 ? 16 : 32 / detail::elem_bytes(a_.dtype);
        int64_t bestM = 0, bestN = 0, bestK = 1, bestUsed = 0;
        double bestRatio = 0.0;
        const bool alongN = c_.pos == TPosition::VECIN;
        // (NBuffer33: cores' parts without tails, mpnpu's choice for a schedule that loads A's 3 x 3 base
        // blocks whole; when no such cut exists, GetTiling fails)
        const bool evenOnly = configParams_.scheduleType == ScheduleType::N_BUFFER_33;
        for (int64_t kc = 1; kc <= (splitK_ && singleK_ <= 0 ? dim : 1); ++kc) {
          if (kc > 1 && (k % kc != 0 || (k / kc) % kAlignCut != 0)) continue;
          for (int64_t mc = 1; mc * kc <= dim; ++mc) {
            if (singleM_ > 0 && mc != cdiv(m, singleM_)) continue;
            for (int64_t nc = 1; mc * nc * kc <= dim; ++nc) {
                if (singleN_ > 0 && nc != cdiv(n, singleN_)) continue;
                const int64_t sm = singleM_ > 0 ? singleM_ : part(m, mc, aM);
                const int64_t sn = singleN_ > 0 ? singleN_ : part(n, nc, aN);
                if (cdiv(m, sm) != mc || cdiv(n, sn) != nc) continue;  // (a part left empty)
                if (evenOnly && (m % sm != 0 || n % sn != 0)) continue;
                const int64_t used = mc * nc * kc;
                const double ratio = double(sm > sn ? sm : sn) / double(sm < sn ? sm : sn);
                bool better;
                if (bestUsed == 0 || used != bestUsed)
                    better = used > bestUsed;
                else if (kc != bestK)
                    better = kc < bestK;
                else if (alongN && mc != bestM)
                    better = mc < bestM;
                else if (ratio != bestRatio)
                    better = ratio < bestRatio;
                else
                    better = alongN ? nc > bestN : mc > bestM;
                if (better) {
                    bestM = mc;
                    bestN = nc;
                    bestK = kc;
                    bestUsed = used;
                    bestRatio = ratio;
                }
            }
          }
        }
        const int64_t singleK = singleK_ > 0 ? singleK_ : k / bestK;
        if (bestUsed == 0)
            return fail("no cut of %lldx%lld into at most %d cores with the single shape %dx%d", (long long)m,
                        (long long)n, dim, singleM_, singleN_);
        const int64_t singleM = singleM_ > 0 ? singleM_ : part(m, bestM, aM);
        const int64_t singleN = singleN_ > 0 ? singleN_ : part(n, bestN, aN);
        // 3. base blocks
        const int64_t l0c = useL0C_ >= 0 ? useL0C_ : l0CSize_;
        const int64_t bt = useBt_ >= 0 ? useBt_ : btSize_;
        const int64_t l1 = useL1_ >= 0 ? useL1_ : l1Size_;
        const int64_t kAlign = a_.dtype == DataType::DT_INT4 ? 64 : itemA >= 2 ? 16 : 32 / itemA;
        int64_t bm = fixM_ > 0 ? fixM_ : align_up(singleM < 128 ? singleM : 128, 16);
        int64_t bn = fixN_ > 0 ? fixN_ : align_up(singleN < 256 ? singleN : 256, 16);
        int64_t bk = fixK_ > 0 ? fixK_ : align_up(singleK < 64 ? singleK : 64, kAlign);
        if (bm % 16 || bn % 16 || bk % kAlign)
            return fail("SetFixSplit: baseM and baseN must be multiples of 16 and baseK of %lld (got %lld, %lld, %lld)",
                        (long long)kAlign, (long long)bm, (long long)bn, (long long)bk);
        auto halve = [](int64_t v, int64_t a) { return detail::align_up(v / 2, a); };
        auto fits = [&] {
            return bm * bk * itemA <= l0ASize_ && bn * bk * itemB <= l0BSize_ && bm * bn * acc <= l0c &&
                   (!isBias_ || bn * itemBias <= bt);
        };
        while (!fits()) {
            const bool kBig = bm * bk * itemA > l0ASize_ || bn * bk * itemB > l0BSize_;
            if (kBig && fixK_ <= 0 && bk > kAlign)
                bk = halve(bk, kAlign);
            else if (fixN_ <= 0 && bn > 16)
                bn = halve(bn, 16);
            else if (fixM_ <= 0 && bm > 16)
                bm = halve(bm, 16);
            else if (fixK_ <= 0 && bk > kAlign)
                bk = halve(bk, kAlign);
            else
                return fail("base block %lldx%lldx%lld does not fit L0A (%lld), L0B (%lld), L0C (%lld) or the bias "
                            "table (%lld)",
                            (long long)bm, (long long)bn, (long long)bk, (long long)l0ASize_, (long long)l0BSize_,
                            (long long)l0c, (long long)bt);
        }
        // 4. L1
        const int64_t kSteps = cdiv(singleK, bk);
        const int64_t biasL1 = isBias_ ? bn * itemBias : 0;
        int64_t step = kSteps, db = 2;
        auto l1fits = [&] { return (bm * itemA + bn * itemB) * bk * step * db + biasL1 <= l1; };
        if (!l1fits()) db = 1;
        if (!l1fits()) {
            db = 2;
            while (!l1fits() && step > 1) step = (step + 1) / 2;
            if (!l1fits()) db = 1;
            if (!l1fits())
                return fail("one base block of A and of B (%lldx%lld, %lldx%lld) does not fit L1 (%lld bytes)",
                            (long long)bm, (long long)bk, (long long)bk, (long long)bn, (long long)l1);
        }
        if (useUb_ == 0 && (c_.pos == TPosition::VECIN || a_.pos == TPosition::VECOUT))
            return fail("no UB space left (SetBufferSpace ubSize 0) for a matrix in UB");
        TCubeTiling t{};
        t.usedCoreNum = int32_t(cdiv(m, singleM) * cdiv(n, singleN) * cdiv(k, singleK));
        t.M = int32_t(M);
        t.N = int32_t(N);
        t.Ka = int32_t(Ka);
        t.Kb = int32_t(Kb);
        t.singleCoreM = int32_t(singleM);
        t.singleCoreN = int32_t(singleN);
        t.singleCoreK = int32_t(singleK);
        t.baseM = int32_t(bm);
        t.baseN = int32_t(bn);
        t.baseK = int32_t(bk);
        t.stepM = 1;
        t.stepN = 1;
        t.stepKa = int32_t(step);
        t.stepKb = int32_t(step);
        t.depthA1 = int32_t(step * db);
        t.depthB1 = int32_t(step * db);
        t.isBias = isBias_ ? 1 : 0;
        t.iterateOrder = traverse_ == MatrixTraverse::FIRSTN ? 1 : 0;
        t.dbL0A = 2 * bm * bk * itemA <= l0ASize_ ? 2 : 1;
        t.dbL0B = 2 * bn * bk * itemB <= l0BSize_ ? 2 : 1;
        t.dbL0C = 2 * bm * bn * acc <= l0c ? 2 : 1;
        out = t;
        result_ = t;
        mDim_ = int32_t(cdiv(m, singleM));
        nDim_ = int32_t(cdiv(n, singleN));
        kDim_ = int32_t(cdiv(k, singleK));
        return 0;
    }
};

// One core's tiling: SetShape's m x n x k on one core.
class MatmulApiTiling : public MatmulApiTilingBase {
public:
    MatmulApiTiling() = default;
    explicit MatmulApiTiling(const platform_ascendc::PlatformAscendC& ascendcPlatform)
        : MatmulApiTilingBase(ascendcPlatform) {}
    explicit MatmulApiTiling(const PlatformInfo& platform) : MatmulApiTilingBase(platform) {}
};

// A tiling over SetDim's cores (cube cores of a cube-only kernel, vector cores of a mix one).
class MultiCoreMatmulTiling : public MatmulApiTilingBase {
public:
    MultiCoreMatmulTiling() : MatmulApiTilingBase() { dim_ = maxDim_; }
    explicit MultiCoreMatmulTiling(const platform_ascendc::PlatformAscendC& ascendcPlatform)
        : MatmulApiTilingBase(ascendcPlatform) {
        dim_ = maxDim_;
    }
    explicit MultiCoreMatmulTiling(const PlatformInfo& platform) : MatmulApiTilingBase(platform) { dim_ = maxDim_; }

    // Cut K across cores too (the kernel then accumulates C with enAtomic 1 into a C it zeroed).
    void EnableMultiCoreSplitK(bool flag) { splitK_ = flag; }
    void SetSplitK(bool flag) { splitK_ = flag; }
    int32_t SetDim(int32_t dim) {
        if (dim <= 0 || dim > maxDim_) return fail("SetDim(%d): the core count must be in [1, %d]", dim, maxDim_);
        dim_ = dim;
        return 0;
    }
    // After GetTiling: the cores it uses (dim = mDim * nDim, times the K parts with split K), along M
    // and along N.
    int32_t GetCoreNum(int32_t& dim, int32_t& mDim, int32_t& nDim) {
        if (mDim_ == 0) return fail("GetCoreNum before a successful GetTiling");
        dim = mDim_ * nDim_ * kDim_;
        mDim = mDim_;
        nDim = nDim_;
        return 0;
    }
    // After GetTiling: singleCoreM, singleCoreN, singleCoreK.
    int32_t GetSingleShape(int32_t& shapeM, int32_t& shapeN, int32_t& shapeK) {
        if (mDim_ == 0) return fail("GetSingleShape before a successful GetTiling");
        shapeM = result_.singleCoreM;
        shapeN = result_.singleCoreN;
        shapeK = result_.singleCoreK;
        return 0;
    }
};

// A batch matmul's tiling (IterateBatch / IterateNBatch): the tiling of one matrix with the batch
// layout setters (which every tiling class has in mpnpu). Each core computes whole batches, so the
// matrix is not cut across cores unless SetDim asks for more than one (mpnpu's choice).
class BatchMatmulTiling : public MultiCoreMatmulTiling {
public:
    BatchMatmulTiling() : MultiCoreMatmulTiling() { dim_ = 1; }
    explicit BatchMatmulTiling(const platform_ascendc::PlatformAscendC& ascendcPlatform)
        : MultiCoreMatmulTiling(ascendcPlatform) {
        dim_ = 1;
    }
    explicit BatchMatmulTiling(const PlatformInfo& platform) : MultiCoreMatmulTiling(platform) { dim_ = 1; }
};

}  // namespace matmul_tiling

#endif  // MPNPU_TILING_TILING_API_H
