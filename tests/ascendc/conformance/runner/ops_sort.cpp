// Handlers: the sorting library (Concat, Sort, Extract, the library's MrgSort), the basic MrgSort and
// GetMrgSortResult, CumSum and Sum with their host helpers.
#include <cstring>

#include "runner.h"

using namespace vecconf;

namespace {

// Shape stand-in for the host helpers: anything with GetShapeSize().
struct Elems {
    int64_t n;
    int64_t GetShapeSize() const { return n; }
};

template <typename T>
AscendC::MrgSortSrcList<T> queues(const Job& j, const Call& c) {
    AscendC::MrgSortSrcList<T> l;
    l.src1 = j.t<T>(c, "q1");
    l.src2 = j.t<T>(c, "q2");
    if (c.has("q3")) l.src3 = j.t<T>(c, "q3");
    if (c.has("q4")) l.src4 = j.t<T>(c, "q4");
    return l;
}

}  // namespace

// Sort/T dst concat index tmp repeat full=0|1; viaconcat=1 takes the scores through Concat first (into a
// LocalTensor the handler leaves unset, as kernels do).
template <typename T>
struct H_Sort {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto concat = j.t<T>(c, "concat");
        auto index = j.t<uint32_t>(c, "index");
        auto tmp = j.t<T>(c, "tmp");
        const int32_t repeat = int32_t(c.i("repeat"));
        if (c.i("viaconcat", 0)) {
            AscendC::LocalTensor<T> prepared;
            AscendC::Concat(prepared, concat, tmp, repeat * 2);
            concat = prepared;
        }
        if (c.i("full")) AscendC::Sort<T, true>(dst, concat, index, tmp, repeat);
        else AscendC::Sort<T, false>(dst, concat, index, tmp, repeat);
    }
};
static RegTypes<H_Sort, half, float, int32_t> reg_sort("Sort");

// Concat/T src tmp repeat out=<u32 tensor>: the prepared tensor's first byte (relative to the image) and
// size in elements, stored raw (no trace record).
template <typename T>
struct H_Concat {
    static void run(const Job& j, const Call& c) {
        AscendC::LocalTensor<T> prepared;
        AscendC::Concat(prepared, j.t<T>(c, "src"), j.t<T>(c, "tmp"), int32_t(c.i("repeat")));
        const uint32_t r[2] = {uint32_t(prepared.mpnpu_offset() - j.buf_offset), prepared.GetSize()};
        std::memcpy(j.t<uint32_t>(c, "out").mpnpu_addr(), r, sizeof r);
    }
};
static RegTypes<H_Concat, half, float, int32_t> reg_concat("Concat");

// Extract/T value index sorted repeat
template <typename T>
struct H_Extract {
    static void run(const Job& j, const Call& c) {
        AscendC::Extract(j.t<T>(c, "value"), j.t<uint32_t>(c, "index"), j.t<T>(c, "sorted"), int32_t(c.i("repeat")));
    }
};
static RegTypes<H_Extract, half, float, int32_t> reg_extract("Extract");

// MrgSort/T dst q1 q2 [q3 q4] len0..len3 valid repeat suspend: the basic form (MrgSort4Info);
// lib=1 the library's form, which stores sortedNum raw into out=<u32 tensor>.
template <typename T>
struct H_MrgSort {
    static void run(const Job& j, const Call& c) {
        const uint16_t lens[4] = {uint16_t(c.u("len0")), uint16_t(c.u("len1")), uint16_t(c.u("len2", 0)),
                                  uint16_t(c.u("len3", 0))};
        const bool suspend = c.i("suspend", 0) != 0;
        const uint16_t valid = uint16_t(c.u("valid"));
        if (c.i("lib", 0)) {
            uint32_t sorted[4] = {~0u, ~0u, ~0u, ~0u};
            if (suspend)
                AscendC::MrgSort<T, true>(j.t<T>(c, "dst"), queues<T>(j, c), lens, sorted, valid, int32_t(c.i("repeat")));
            else
                AscendC::MrgSort<T>(j.t<T>(c, "dst"), queues<T>(j, c), lens, sorted, valid, int32_t(c.i("repeat")));
            std::memcpy(j.t<uint32_t>(c, "out").mpnpu_addr(), sorted, sizeof sorted);
            return;
        }
        AscendC::MrgSort4Info info(lens, suspend, valid, uint16_t(c.u("repeat")));
        AscendC::MrgSort<T>(j.t<T>(c, "dst"), queues<T>(j, c), info);
    }
};
static RegTypes<H_MrgSort, half, float> reg_mrgsort("MrgSort");

// MrgSortResult/T out=<u16 tensor>: GetMrgSortResult's four counts, stored raw.
template <typename T>
struct H_MrgSortResult {
    static void run(const Job& j, const Call& c) {
        uint16_t r[4] = {0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF};
        AscendC::GetMrgSortResult(r[0], r[1], r[2], r[3]);
        std::memcpy(j.t<uint16_t>(c, "out").mpnpu_addr(), r, sizeof r);
    }
};
static RegTypes<H_MrgSortResult, float> reg_mrgsortresult("MrgSortResult");

namespace {
constexpr AscendC::CumSumConfig kRows{true, false, false};
constexpr AscendC::CumSumConfig kRowsLast{true, true, true};  // (isReuseSource set: reserved, no effect)
constexpr AscendC::CumSumConfig kCols{false, false, false};
constexpr AscendC::CumSumConfig kColsLast{false, false, true};
constexpr AscendC::CumSumConfig kSklansky{true, false, false, AscendC::CumSumAlgorithm::CUMSUM_ALGORITHM_SKLANSKY};
}  // namespace

// CumSum/T dst last src outter inner axis=last|first lastrow=0|1 [scratch]; sklansky=1 the other algorithm;
// dflt=1 the default config (no template argument).
template <typename T>
struct H_CumSum {
    template <const AscendC::CumSumConfig& config>
    static void call(const Job& j, const Call& c, const AscendC::CumSumInfo& info) {
        auto dst = j.t<T>(c, "dst");
        auto last = c.has("last") ? j.t<T>(c, "last") : AscendC::LocalTensor<T>();
        auto src = j.t<T>(c, "src");
        if (c.has("scratch")) {
            auto tmp = j.t<uint8_t>(c, "scratch");
            AscendC::CumSum<T, config>(dst, last, src, tmp, info);
        } else {
            AscendC::CumSum<T, config>(dst, last, src, info);
        }
    }
    static void run(const Job& j, const Call& c) {
        const AscendC::CumSumInfo info{uint32_t(c.u("outter")), uint32_t(c.u("inner"))};
        const bool rows = c.s("axis") == "last", last = c.i("lastrow", 0) != 0;
        if (c.i("dflt", 0)) {
            auto dst = j.t<T>(c, "dst");
            auto lr = AscendC::LocalTensor<T>();
            AscendC::CumSum(dst, lr, j.t<T>(c, "src"), info);
        } else if (c.i("sklansky", 0)) {
            call<kSklansky>(j, c, info);
        } else if (rows) {
            last ? call<kRowsLast>(j, c, info) : call<kRows>(j, c, info);
        } else {
            last ? call<kColsLast>(j, c, info) : call<kCols>(j, c, info);
        }
    }
};
static RegTypes<H_CumSum, half, float, int32_t> reg_cumsum("CumSum");

// Sum/T dst src outter inner n [scratch]; rdim=<reduceDim> (0: the unsupported value), basic=1 isBasicBlock.
template <typename T>
struct H_Sum {
    static void run(const Job& j, const Call& c) {
        AscendC::SumParams p;
        p = {uint32_t(c.u("outter")), uint32_t(c.u("inner")), uint32_t(c.u("n"))};
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        if (c.i("rdim", -1) == 0) return AscendC::Sum<T, 0>(dst, src, p);
        if (c.i("basic", 0)) return AscendC::Sum<T, -1, false, true>(dst, src, p);
        if (c.has("scratch")) return AscendC::Sum(dst, src, j.t<uint8_t>(c, "scratch"), p);
        AscendC::Sum(dst, src, p);
    }
};
static RegTypes<H_Sum, half, float, int32_t> reg_sum("Sum");

// LibHost/T op=Sum|CumSum n out=<u32 tensor>: [maxValue, minValue] for typeSize sizeof(T), stored raw.
template <typename T>
struct H_LibHost {
    static void run(const Job& j, const Call& c) {
        uint32_t r[2] = {~0u, ~0u};
        if (c.s("op") == "Sum") AscendC::GetSumMaxMinTmpSize(uint32_t(c.u("n")), sizeof(T), false, r[0], r[1]);
        else AscendC::GetCumSumMaxMinTmpSize(Elems{c.i("n")}, sizeof(T), true, false, r[0], r[1]);
        std::memcpy(j.t<uint32_t>(c, "out").mpnpu_addr(), r, sizeof r);
    }
};
static RegTypes<H_LibHost, half, float> reg_libhost("LibHost");
