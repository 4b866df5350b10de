// Reductions: per repeat (ReduceRepeat; older names WholeReduceSum / WholeReduceMax / WholeReduceMin),
// per data block (ReduceDataBlock; older names BlockReduceSum / BlockReduceMax / BlockReduceMin), and
// over a whole tensor (ReduceSum / ReduceMax / ReduceMin, with their work buffer), and per adjacent
// pair of elements (ReducePairElem; older name PairReduceSum): result k of a repeat is lanes 2k and
// 2k+1 added (a lane outside the mask counts as 0; a pair with neither lane active writes nothing),
// half sums rounded to half; a repeat's lanes / 2 results fill 128 bytes, dstRepStride in those units.
//
// Numerics, as documented:
//   sums     a binary tree of adjacent pairs within each block / repeat (lanes outside the mask
//            count as 0), every pairwise sum rounded to the element type (half sums are half)
//   max/min  exact; ties give the smallest index; the index is the lane within the repeat
//            (ReduceRepeat) or r * lanes + lane over the whole input (ReduceMax / ReduceMin),
//            stored as raw bits in the element type (uint16 bits in a half, uint32 bits in a float;
//            ORDER_ONLY_INDEX stores 32 bits)
//   ReduceSum  count form: repeat sums added in order; level-0 form: repeat sums reduced again;
//              every form also sets the accumulator register that GetAccVal reads
//            by trees of one repeat each until one value is left
// A repeat (or block) none of whose lanes is active writes nothing.
#ifndef MPNPU_VECTOR_REDUCE_H
#define MPNPU_VECTOR_REDUCE_H

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../native/rt.h"
#include "../tensor.h"
#include "engine.h"
#include "mask.h"
#include "params.h"

namespace mpnpu {
namespace vec {

inline const char* reduce_name(AscendC::ReduceType t) {
    return t == AscendC::ReduceType::SUM ? "SUM" : t == AscendC::ReduceType::MAX ? "MAX" : "MIN";
}

template <typename T>
inline T add_round(const T& a, const T& b) {
    return from_calc<T>(to_calc(a) + to_calc(b));
}

// Tree sum of v[0..n) (n a power of two), in place.
template <typename T>
inline T tree_sum(T* v, uint32_t n) {
    for (uint32_t w = n; w > 1; w /= 2)
        for (uint32_t i = 0; i < w / 2; ++i) v[i] = add_round(v[2 * i], v[2 * i + 1]);
    return v[0];
}

// The extreme of the active lanes [lo, hi) of one repeat: its value and the smallest lane holding it.
template <typename T>
struct Extreme {
    T value{};
    uint32_t index = 0;
    bool any = false;
};

template <typename T>
inline void consider(Extreme<T>& e, const T& v, uint32_t index, bool is_max) {
    float x = float(v);
    if (!e.any || (is_max ? x > float(e.value) : x < float(e.value))) {
        e.value = v;
        e.index = index;
        e.any = true;
    }
}

template <typename T>
constexpr bool reduce_type_ok = one_of<T, half, float>;

template <typename T>
inline T index_bits(uint32_t index) {
    T out;
    if constexpr (sizeof(T) == 2) {
        uint16_t b = uint16_t(index);
        std::memcpy(static_cast<void*>(&out), &b, 2);
    } else {
        std::memcpy(static_cast<void*>(&out), &index, 4);
    }
    return out;
}

// -- per repeat ----------------------------------------------------------------------------------------

// Bytes one repeat's result takes in dst (the unit of dstRepStride) and its alignment.
template <typename T>
inline uint32_t repeat_result_bytes(AscendC::ReduceType type, AscendC::ReduceOrder order) {
    if (type == AscendC::ReduceType::SUM || order == AscendC::ReduceOrder::ORDER_ONLY_VALUE) return sizeof(T);
    if (order == AscendC::ReduceOrder::ORDER_ONLY_INDEX) return 4;
    return 2 * sizeof(T);
}

template <typename T, typename U>
inline void reduce_repeat_run(const char* name, AscendC::ReduceType type, const Plan& p,
                              const AscendC::LocalTensor<T>& dst, int64_t dstRepStride,
                              const AscendC::LocalTensor<U>& src, int64_t srcBlkStride, int64_t srcRepStride,
                              AscendC::ReduceOrder order, const Site& site) {
    need_type<U>(reduce_type_ok<U>, site, name, "half, float");
    if (!std::is_same_v<T, U>)
        api_error(site, "%s: dst (%s) and src (%s) must have the same element type", name, type_name<T>(),
                  type_name<U>());
    if (unsigned(order) > 3) api_error(site, "%s: ReduceOrder %u is not an order", name, unsigned(order));
    for (int64_t s : {dstRepStride, srcBlkStride, srcRepStride})
        if (s < 0 || s > 65535) api_error(site, "%s: stride %lld is outside [0, 65535]", name, (long long)s);
    start(site, name);
    uint32_t unit = repeat_result_bytes<T>(type, order);
    check_operand(dst, unit, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    if (p.none()) return;
    Geo gs = geo(uint64_t(srcBlkStride), uint64_t(srcRepStride));
    touch(src, 'R', hull_of(p, sizeof(U), gs), site, name);
    Hull hd;
    for (uint64_t r = 0; r < p.repeats; ++r)
        if (!p.bits(r).none()) hd.add(r * uint64_t(dstRepStride) * unit, r * uint64_t(dstRepStride) * unit + unit);
    touch(dst, 'W', hd, site, name);
    Lane ls = lane_of(src, gs);
    uint8_t* out = base(dst);
    // all repeats read before any result is written (a result may land on a later repeat's source)
    std::vector<T> values(p.repeats);
    std::vector<uint32_t> index(p.repeats);
    for (uint64_t r = 0; r < p.repeats; ++r) {
        const Bits& b = p.bits(r);
        if (b.none()) continue;
        if (type == AscendC::ReduceType::SUM) {
            T v[MAX_LANES];
            for (uint32_t j = 0; j < p.lanes; ++j) v[j] = from_calc<T>(0);
            each_lane(b, [&](uint32_t j) { v[j] = ld<U>(ls.at(r, j)); });
            values[r] = tree_sum(v, p.lanes);
        } else {
            Extreme<T> e;
            each_lane(b, [&](uint32_t j) { consider(e, T(ld<U>(ls.at(r, j))), j, type == AscendC::ReduceType::MAX); });
            values[r] = e.value;
            index[r] = e.index;
        }
    }
    for (uint64_t r = 0; r < p.repeats; ++r) {
        if (p.bits(r).none()) continue;
        uint8_t* at = out + r * uint64_t(dstRepStride) * unit;
        if (type == AscendC::ReduceType::SUM || order == AscendC::ReduceOrder::ORDER_ONLY_VALUE) {
            st<T>(at, values[r]);
        } else if (order == AscendC::ReduceOrder::ORDER_ONLY_INDEX) {
            st<uint32_t>(at, index[r]);
        } else if (order == AscendC::ReduceOrder::ORDER_VALUE_INDEX) {
            st<T>(at, values[r]);
            st<T>(at + sizeof(T), index_bits<T>(index[r]));
        } else {
            st<T>(at, index_bits<T>(index[r]));
            st<T>(at + sizeof(T), values[r]);
        }
    }
}

// -- per data block ------------------------------------------------------------------------------------

#ifdef MPNPU_SIMD_X86
// Keep m unless o is strictly larger (smaller): the scalar scan's step (a NaN never wins, and one
// already kept stays), on 8 lanes at once.
template <bool is_max>
__attribute__((target("avx"), always_inline)) inline __m256 block_pick(__m256 m, __m256 o) {
    // (and / andnot / or rather than blendv: g++ 12 turns a blendv of a compare into a branch per lane)
    const __m256 take = is_max ? _mm256_cmp_ps(o, m, _CMP_GT_OQ) : _mm256_cmp_ps(o, m, _CMP_LT_OQ);
    return _mm256_or_ps(_mm256_and_ps(take, o), _mm256_andnot_ps(take, m));
}

// The 8 results of one whole float repeat (block k: 8 consecutive floats at bp + k * blk) into out:
// sums by the same tree of adjacent pairs as tree_sum, extremes as the scan; the same values as the
// scalar code (and the same bits, but for which NaN a sum of two NaNs keeps), 8 blocks at a time.
template <bool sum, bool is_max>
__attribute__((target("avx"))) inline void block_reduce_repeat_avx(const uint8_t* bp, uint64_t blk, float* out) {
    __m256 b[8];
    for (uint32_t k = 0; k < 8; ++k) b[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(bp + k * blk));
    if constexpr (sum) {
        // hadd(a, c) = a01 a23 c01 c23 | a45 a67 c45 c67; twice: block k's (0123, 4567) sums
        const __m256 g0 = _mm256_hadd_ps(_mm256_hadd_ps(b[0], b[1]), _mm256_hadd_ps(b[2], b[3]));
        const __m256 g1 = _mm256_hadd_ps(_mm256_hadd_ps(b[4], b[5]), _mm256_hadd_ps(b[6], b[7]));
        _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(g0), _mm256_extractf128_ps(g0, 1)));
        _mm_storeu_ps(out + 4, _mm_add_ps(_mm256_castps256_ps128(g1), _mm256_extractf128_ps(g1, 1)));
    } else {
        // The 8 x 8 transposed (t[i] lane k = block k's element i), then the scan down the columns:
        // lane k of the result is block k's scan, step for step.
        __m256 t[8];
        simd::transpose8x8(b, t);
        __m256 m = t[0];
        for (uint32_t i = 1; i < 8; ++i) m = block_pick<is_max>(m, t[i]);
        _mm256_storeu_ps(out, m);
    }
}
#endif

template <typename T, typename U>
inline void reduce_block_run(const char* name, AscendC::ReduceType type, const Plan& p,
                             const AscendC::LocalTensor<T>& dst, int64_t dstRepStride,
                             const AscendC::LocalTensor<U>& src, int64_t srcBlkStride, int64_t srcRepStride,
                             const Site& site) {
    need_type<U>(reduce_type_ok<U>, site, name, "half, float");
    if (!std::is_same_v<T, U>)
        api_error(site, "%s: dst (%s) and src (%s) must have the same element type", name, type_name<T>(),
                  type_name<U>());
    for (int64_t s : {dstRepStride, srcBlkStride, srcRepStride})
        if (s < 0 || s > 65535) api_error(site, "%s: stride %lld is outside [0, 65535]", name, (long long)s);
    start(site, name);
    constexpr uint32_t unit = 8 * sizeof(T);  // 8 results a repeat
    check_operand(dst, unit, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    if (p.none()) return;
    constexpr uint32_t per_block = 32 / sizeof(U);
    Geo gs = geo(uint64_t(srcBlkStride), uint64_t(srcRepStride));
    touch(src, 'R', hull_of(p, sizeof(U), gs), site, name);
    auto block_bits = [&](const Bits& b, uint32_t k) { return b & [&] {
        Bits m = first_n(uint64_t(k + 1) * per_block);
        Bits below = first_n(uint64_t(k) * per_block);
        m.w[0] &= ~below.w[0];
        m.w[1] &= ~below.w[1];
        return m;
    }(); };
    const Bits whole = first_n(p.lanes);
    auto is_whole = [&](const Bits& b) { return b.w[0] == whole.w[0] && b.w[1] == whole.w[1]; };
    Hull hd;
    for (uint64_t r = 0; r < p.repeats; ++r) {
        const Bits& rb = p.bits(r);
        const uint64_t at = r * uint64_t(dstRepStride) * unit;
        if (is_whole(rb)) {  // (the common case: its 8 results, without a mask walk per block)
            hd.add(at, at + 8 * sizeof(T));
            continue;
        }
        for (uint32_t k = 0; k < 8; ++k)
            if (!block_bits(rb, k).none()) hd.add(at + k * sizeof(T), at + (k + 1) * sizeof(T));
    }
    touch(dst, 'W', hd, site, name);
    Lane ls = lane_of(src, gs);
    // (on the stack for up to 255 repeats, the level-0 limit: no allocation per call)
    constexpr uint64_t STACK_RESULTS = 255 * 8;
    T stack_values[STACK_RESULTS];
    uint8_t stack_any[STACK_RESULTS];
    std::vector<T> heap_values;
    std::vector<uint8_t> heap_any;
    T* values = stack_values;
    uint8_t* any = stack_any;
    if (p.repeats * 8 > STACK_RESULTS) {
        heap_values.resize(p.repeats * 8);
        heap_any.resize(p.repeats * 8);
        values = heap_values.data();
        any = heap_any.data();
    }
    std::memset(any, 0, p.repeats * 8);
    const bool is_max = type == AscendC::ReduceType::MAX;
    for (uint64_t r = 0; r < p.repeats; ++r) {
        const Bits& rb = p.bits(r);
        if (is_whole(rb)) {  // every block whole: no per-lane mask walk
#ifdef MPNPU_SIMD_X86
            if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) {
                if (has_avx()) {
                    const uint8_t* bp = ls.base + r * gs.rep;
                    float* v = values + r * 8;
                    if (type == AscendC::ReduceType::SUM) {
                        block_reduce_repeat_avx<true, true>(bp, gs.blk, v);
                    } else if (is_max) {
                        block_reduce_repeat_avx<false, true>(bp, gs.blk, v);
                    } else {
                        block_reduce_repeat_avx<false, false>(bp, gs.blk, v);
                    }
                    std::memset(any + r * 8, 1, 8);
                    continue;
                }
            }
#endif
            for (uint32_t k = 0; k < 8; ++k) {
                any[r * 8 + k] = 1;
                const uint8_t* bp = ls.base + r * gs.rep + k * gs.blk;  // block k's elements are consecutive
                if (type == AscendC::ReduceType::SUM) {
                    T t[32];
                    for (uint32_t i = 0; i < per_block; ++i) t[i] = ld<U>(bp + i * sizeof(U));
                    values[r * 8 + k] = tree_sum(t, per_block);
                } else {  // (as consider(): the first lane, then any strictly larger / smaller one)
                    T m = ld<U>(bp);
                    float mf = float(m);
                    for (uint32_t i = 1; i < per_block; ++i) {
                        const T x = ld<U>(bp + i * sizeof(U));
                        const float xf = float(x);
                        // (selects, not a branch: on data a branch here is mispredicted half the time)
                        const bool take = is_max ? xf > mf : xf < mf;
                        m = take ? x : m;
                        mf = take ? xf : mf;
                    }
                    values[r * 8 + k] = m;
                }
            }
            continue;
        }
        for (uint32_t k = 0; k < 8; ++k) {
            Bits b = block_bits(p.bits(r), k);
            if (b.none()) continue;
            any[r * 8 + k] = 1;
            if (type == AscendC::ReduceType::SUM) {
                T v[32];
                for (uint32_t i = 0; i < per_block; ++i) v[i] = from_calc<T>(0);
                each_lane(b, [&](uint32_t j) { v[j - k * per_block] = ld<U>(ls.at(r, j)); });
                values[r * 8 + k] = tree_sum(v, per_block);
            } else {
                Extreme<T> e;
                each_lane(b, [&](uint32_t j) { consider(e, T(ld<U>(ls.at(r, j))), j, type == AscendC::ReduceType::MAX); });
                values[r * 8 + k] = e.value;
            }
        }
    }
    uint8_t* out = base(dst);
    for (uint64_t r = 0; r < p.repeats; ++r)
        for (uint32_t k = 0; k < 8; ++k)
            if (any[r * 8 + k]) st<T>(out + r * uint64_t(dstRepStride) * unit + k * sizeof(T), values[r * 8 + k]);
}

template <typename T, typename U>
inline void reduce_pair_run(const char* name, AscendC::ReduceType type, const Plan& p, const AscendC::LocalTensor<T>& dst,
                            int64_t dstRepStride, const AscendC::LocalTensor<U>& src, int64_t srcBlkStride,
                            int64_t srcRepStride, const Site& site) {
    need_type<U>(reduce_type_ok<U>, site, name, "half, float");
    if (!std::is_same_v<T, U>)
        api_error(site, "%s: dst (%s) and src (%s) must have the same element type", name, type_name<T>(),
                  type_name<U>());
    if (type != AscendC::ReduceType::SUM)
        api_error(site, "%s: only ReduceType::SUM is supported (not %s)", name, reduce_name(type));
    for (int64_t s : {dstRepStride, srcBlkStride, srcRepStride})
        if (s < 0 || s > 65535) api_error(site, "%s: stride %lld is outside [0, 65535]", name, (long long)s);
    start(site, name);
    constexpr uint32_t unit = 128;  // a repeat's results: half of its 256 bytes
    check_operand(dst, sizeof(T), site, name, "dst");
    check_operand(src, 32, site, name, "src");
    if (p.none()) return;
    Geo gs = geo(uint64_t(srcBlkStride), uint64_t(srcRepStride));
    touch(src, 'R', hull_of(p, sizeof(U), gs), site, name);
    const uint32_t pairs = p.lanes / 2;
    Hull hd;
    std::vector<uint8_t> any(p.repeats * pairs, 0);
    for (uint64_t r = 0; r < p.repeats; ++r)
        each_lane(p.bits(r), [&](uint32_t j) { any[r * pairs + j / 2] = 1; });
    for (uint64_t r = 0; r < p.repeats; ++r)
        for (uint32_t k = 0; k < pairs; ++k)
            if (any[r * pairs + k]) {
                const uint64_t at = r * uint64_t(dstRepStride) * unit + k * sizeof(T);
                hd.add(at, at + sizeof(T));
            }
    touch(dst, 'W', hd, site, name);
    Lane ls = lane_of(src, gs);
    std::vector<T> a(p.repeats * pairs, from_calc<T>(0)), b(p.repeats * pairs, from_calc<T>(0));
    for (uint64_t r = 0; r < p.repeats; ++r)
        each_lane(p.bits(r), [&](uint32_t j) { (j % 2 ? b : a)[r * pairs + j / 2] = ld<U>(ls.at(r, j)); });
    uint8_t* out = base(dst);  // (every source lane read before any result is written: dst may overlap src)
    for (uint64_t r = 0; r < p.repeats; ++r)
        for (uint32_t k = 0; k < pairs; ++k)
            if (any[r * pairs + k])
                st<T>(out + r * uint64_t(dstRepStride) * unit + k * sizeof(T), add_round(a[r * pairs + k], b[r * pairs + k]));
}

#ifdef MPNPU_SIMD_X86
// tree_sum(v, 64) of 64 floats with the same pairs at every level: AVX's horizontal add sums adjacent
// pairs within each 128-bit half, and a 64-bit permute puts a level's sums back in order for the
// next; the last three levels are tree_sum's own. (The same bits, but for which NaN a sum of two
// NaNs keeps.)
__attribute__((target("avx2"))) inline float tree_sum64_avx2(const float* v) {
    __m256 a[8];
    for (uint32_t k = 0; k < 8; ++k) a[k] = _mm256_loadu_ps(v + 8 * k);
    for (uint32_t w = 8; w > 1; w /= 2)
        for (uint32_t i = 0; i < w / 2; ++i)
            a[i] = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_hadd_ps(a[2 * i], a[2 * i + 1])), 0xD8));
    float out[8];
    _mm256_storeu_ps(out, a[0]);
    return tree_sum(out, 8);
}
#endif

// -- whole-tensor reductions ---------------------------------------------------------------------------

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
constexpr uint64_t ceil_to(uint64_t a, uint64_t b) { return ceil_div(a, b) * b; }

// Elements of work buffer ReduceMax / ReduceMin need (the documented formula).
inline uint64_t maxmin_work_elems(uint64_t first_repeats, bool index, uint32_t size) {
    uint64_t per_block = 32 / size, per_repeat = 256 / size;
    uint64_t iter1 = first_repeats * 2;
    if (!index) return ceil_to(iter1, per_block);
    uint64_t start2 = ceil_to(iter1, per_block);
    uint64_t out2 = ceil_div(iter1, per_repeat) * 2;
    uint64_t end2 = ceil_to(out2, per_block);
    if (out2 <= 2) return start2 + end2;
    uint64_t out3 = ceil_div(out2, per_repeat) * 2;
    return start2 + end2 + ceil_to(out3, per_block);
}

template <typename T>
inline void check_work(const AscendC::LocalTensor<T>& work, uint64_t need, const Site& site, const char* name) {
    if (work.GetSize() < need)
        api_error(site, "%s: sharedTmpBuffer holds %u elements, the call needs %llu", name, work.GetSize(),
                  (unsigned long long)need);
}

// ReduceMax / ReduceMin: the extreme over every active lane of every repeat.
template <typename T>
inline void reduce_maxmin_run(const char* name, bool is_max, const Plan& p, uint64_t first_repeats,
                              const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                              const AscendC::LocalTensor<T>& work, const Geo& gs, bool calIndex, const Site& site) {
    need_type<T>(reduce_type_ok<T>, site, name, "half, float");
    start(site, name);
    check_operand(dst, calIndex ? 2 * sizeof(T) : sizeof(T), site, name, "dst");
    check_operand(src, 32, site, name, "src");
    check_operand(work, 32, site, name, "sharedTmpBuffer");
    if (p.none()) return;
    // The documented minimum is not asked of a sharedTmpBuffer that reuses src's space (the pages say
    // so); the first round's pairs written there are memchecked against the buffer as any access.
    if (static_cast<const void*>(work.mpnpu_addr()) != static_cast<const void*>(src.mpnpu_addr()))
        check_work(work, maxmin_work_elems(first_repeats, calIndex, sizeof(T)), site, name);
    touch(src, 'R', hull_of(p, sizeof(T), gs), site, name);
    // the first round's [value, index] pairs go to the work buffer (as many as its size allows for)
    uint64_t n_pairs = p.repeats < first_repeats ? p.repeats : first_repeats;
    Hull hw;
    hw.add(0, n_pairs * 2 * sizeof(T));
    touch(work, 'W', hw, site, name);
    Hull hd;
    hd.add(0, (calIndex ? 2 : 1) * sizeof(T));
    touch(dst, 'W', hd, site, name);
    Lane ls = lane_of(src, gs);
    Extreme<T> all;
    std::vector<T> pairs(p.repeats * 2);
    for (uint64_t r = 0; r < p.repeats; ++r) {
        Extreme<T> e;
        each_lane(p.bits(r), [&](uint32_t j) { consider(e, ld<T>(ls.at(r, j)), j, is_max); });
        pairs[2 * r] = e.value;
        pairs[2 * r + 1] = index_bits<T>(e.index);
        if (e.any) consider(all, e.value, uint32_t(r * p.lanes + e.index), is_max);
    }
    if (calIndex && sizeof(T) == 2 && all.index > 65535)
        api_error(site, "%s: the index %u does not fit in a half's 16 bits (half indices go up to 65535)", name,
                  all.index);
    uint8_t* w = base(work);
    for (uint64_t i = 0; i < n_pairs * 2; ++i) st<T>(w + i * sizeof(T), pairs[i]);
    uint8_t* out = base(dst);
    st<T>(out, all.value);
    if (calIndex) st<T>(out + sizeof(T), index_bits<T>(all.index));
}

// ReduceSum: repeat sums, then (in_order) added one after another, or reduced by further trees.
template <typename T>
inline void reduce_sum_run(const Plan& p, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                           const AscendC::LocalTensor<T>& work, const Geo& gs, bool in_order, const Site& site) {
    const char* name = "ReduceSum";
    need_type<T>(reduce_type_ok<T>, site, name, "half, float");
    start(site, name);
    check_operand(dst, sizeof(T), site, name, "dst");
    check_operand(src, 32, site, name, "src");
    check_operand(work, 32, site, name, "sharedTmpBuffer");
    if (p.none()) return;
    constexpr uint32_t per_block = 32 / sizeof(T);
    if (!in_order) check_work(work, ceil_to(p.repeats, per_block), site, name);
    touch(src, 'R', hull_of(p, sizeof(T), gs), site, name);
    if (!in_order) {
        Hull hw;
        hw.add(0, p.repeats * sizeof(T));
        touch(work, 'W', hw, site, name);
    }
    Hull hd;
    hd.add(0, sizeof(T));
    touch(dst, 'W', hd, site, name);
    Lane ls = lane_of(src, gs);
    std::vector<T> sums(p.repeats);
    for (uint64_t r = 0; r < p.repeats; ++r) {
        T v[MAX_LANES];
#ifdef MPNPU_SIMD_X86
        if constexpr (std::is_same_v<T, float>) {
            // a repeat whose lanes are the first n of 64 consecutive floats: the same tree, 8 sums at a time
            const uint32_t n = gs.blk == 32 && p.lanes == 64 ? prefix_length(p.bits(r)) : 0;
            if (n && has_avx2()) {
                std::memcpy(v, ls.at(r, 0), uint64_t(n) * sizeof(float));
                for (uint32_t j = n; j < 64; ++j) v[j] = 0.0f;
                sums[r] = tree_sum64_avx2(v);
                continue;
            }
        }
#endif
        for (uint32_t j = 0; j < p.lanes; ++j) v[j] = from_calc<T>(0);
        each_lane(p.bits(r), [&](uint32_t j) { v[j] = ld<T>(ls.at(r, j)); });
        sums[r] = tree_sum(v, p.lanes);
    }
    T total;
    if (in_order) {
        total = sums[0];
        for (uint64_t r = 1; r < sums.size(); ++r) total = add_round(total, sums[r]);
    } else {
        uint8_t* w = base(work);
        for (uint64_t r = 0; r < sums.size(); ++r) st<T>(w + r * sizeof(T), sums[r]);
        std::vector<T> level = sums;
        while (level.size() > 1) {
            std::vector<T> next;
            for (uint64_t i = 0; i < level.size(); i += p.lanes) {
                T v[MAX_LANES];
                for (uint32_t j = 0; j < p.lanes; ++j) v[j] = i + j < level.size() ? level[i + j] : from_calc<T>(0);
                next.push_back(tree_sum(v, p.lanes));
            }
            level.swap(next);
        }
        total = level[0];
    }
    st<T>(base(dst), total);
    // The result also lands in the core's accumulator register (GetAccVal): a vector-pipe write of the
    // special-register bytes, so a scalar read of it needs a V -> S sync (or the compiler's auto-sync).
    uint64_t acc = 0;
    std::memcpy(&acc, &total, sizeof(T));
    core().vec.acc = acc;
    local_access('W', P_V, MPNPU_MEM_SPR, 0, sizeof(acc), 0, SPR_BYTES, site, name);
}

}  // namespace vec
}  // namespace mpnpu

namespace AscendC {

// -- ReduceRepeat and its older names ------------------------------------------------------------------

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                         const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                         const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, MPNPU_SITE) {
    mpnpu::vec::Plan p =
        mpnpu::vec::plan_level0_bits<isSetMask>(mask, repeatTime, mpnpu::vec::lanes_for(sizeof(U)), site, "ReduceRepeat");
    mpnpu::vec::reduce_repeat_run("ReduceRepeat", reduceType, p, dst, dstRepStride, src, srcBlkStride, srcRepStride,
                                  order, site);
}
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                         const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                         const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, MPNPU_SITE) {
    if (isSetMask && mask < 0) mpnpu::api_error(site, "ReduceRepeat: mask %d is negative", mask);
    mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<isSetMask>(uint64_t(uint32_t(mask)), repeatTime,
                                                               mpnpu::vec::lanes_for(sizeof(U)), site, "ReduceRepeat");
    mpnpu::vec::reduce_repeat_run("ReduceRepeat", reduceType, p, dst, dstRepStride, src, srcBlkStride, srcRepStride,
                                  order, site);
}

#define MPNPU_VEC_WHOLE_REDUCE(NAME, TYPE, ORDER_PARAM, ORDER_ARG)                                                \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                 \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,            \
                     const int32_t srcRepStride ORDER_PARAM, MPNPU_SITE) {                                        \
        mpnpu::vec::Plan p =                                                                                      \
            mpnpu::vec::plan_level0_bits<isSetMask>(mask, repeatTime, mpnpu::vec::lanes_for(sizeof(T)), site, #NAME); \
        mpnpu::vec::reduce_repeat_run(#NAME, TYPE, p, dst, dstRepStride, src, srcBlkStride, srcRepStride, ORDER_ARG, \
                                      site);                                                                      \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,                    \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,            \
                     const int32_t srcRepStride ORDER_PARAM, MPNPU_SITE) {                                        \
        if (isSetMask && mask < 0) mpnpu::api_error(site, #NAME ": mask %d is negative", mask);                   \
        mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<isSetMask>(uint64_t(uint32_t(mask)), repeatTime,        \
                                                                   mpnpu::vec::lanes_for(sizeof(T)), site, #NAME); \
        mpnpu::vec::reduce_repeat_run(#NAME, TYPE, p, dst, dstRepStride, src, srcBlkStride, srcRepStride, ORDER_ARG, \
                                      site);                                                                      \
    }

#define MPNPU_VEC_ORDER_PARAM , ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX
MPNPU_VEC_WHOLE_REDUCE(WholeReduceMax, ReduceType::MAX, MPNPU_VEC_ORDER_PARAM, order)
MPNPU_VEC_WHOLE_REDUCE(WholeReduceMin, ReduceType::MIN, MPNPU_VEC_ORDER_PARAM, order)
MPNPU_VEC_WHOLE_REDUCE(WholeReduceSum, ReduceType::SUM, , ReduceOrder::ORDER_VALUE_INDEX)

// -- ReduceDataBlock, ReducePairElem and their older names (which take repeatTime before the mask) ----
//
// Each has a bit-mask and a lane-count form; RUN is the routine that does the reduction (per data
// block, or per adjacent pair).

#define MPNPU_VEC_LEVEL0_REDUCE(NAME, RUN)                                                                       \
    template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],                 \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,            \
                     const int32_t srcRepStride, MPNPU_SITE) {                                                    \
        mpnpu::vec::Plan p =                                                                                      \
            mpnpu::vec::plan_level0_bits<isSetMask>(mask, repeatTime, mpnpu::vec::lanes_for(sizeof(U)), site, #NAME); \
        mpnpu::vec::RUN(#NAME, reduceType, p, dst, dstRepStride, src, srcBlkStride, srcRepStride, site);          \
    }                                                                                                             \
    template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,                    \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,            \
                     const int32_t srcRepStride, MPNPU_SITE) {                                                    \
        if (isSetMask && mask < 0) mpnpu::api_error(site, #NAME ": mask %d is negative", mask);                   \
        mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<isSetMask>(uint64_t(uint32_t(mask)), repeatTime,        \
                                                                   mpnpu::vec::lanes_for(sizeof(U)), site, #NAME); \
        mpnpu::vec::RUN(#NAME, reduceType, p, dst, dstRepStride, src, srcBlkStride, srcRepStride, site);          \
    }

MPNPU_VEC_LEVEL0_REDUCE(ReduceDataBlock, reduce_block_run)
MPNPU_VEC_LEVEL0_REDUCE(ReducePairElem, reduce_pair_run)

// The older names: one reduction each, repeatTime before the mask.
#define MPNPU_VEC_BLOCK_REDUCE(NAME, TYPE, RUN)                                                                   \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,              \
                     const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,               \
                     const int32_t srcRepStride, MPNPU_SITE) {                                                    \
        mpnpu::vec::Plan p =                                                                                      \
            mpnpu::vec::plan_level0_bits<isSetMask>(mask, repeatTime, mpnpu::vec::lanes_for(sizeof(T)), site, #NAME); \
        mpnpu::vec::RUN(#NAME, TYPE, p, dst, dstRepStride, src, srcBlkStride, srcRepStride, site);                \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,              \
                     const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,                  \
                     const int32_t srcRepStride, MPNPU_SITE) {                                                    \
        if (isSetMask && mask < 0) mpnpu::api_error(site, #NAME ": mask %d is negative", mask);                   \
        mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<isSetMask>(uint64_t(uint32_t(mask)), repeatTime,        \
                                                                   mpnpu::vec::lanes_for(sizeof(T)), site, #NAME); \
        mpnpu::vec::RUN(#NAME, TYPE, p, dst, dstRepStride, src, srcBlkStride, srcRepStride, site);                \
    }

MPNPU_VEC_BLOCK_REDUCE(BlockReduceSum, ReduceType::SUM, reduce_block_run)
MPNPU_VEC_BLOCK_REDUCE(BlockReduceMax, ReduceType::MAX, reduce_block_run)
MPNPU_VEC_BLOCK_REDUCE(BlockReduceMin, ReduceType::MIN, reduce_block_run)
MPNPU_VEC_BLOCK_REDUCE(PairReduceSum, ReduceType::SUM, reduce_pair_run)

// -- ReduceSum / ReduceMax / ReduceMin -----------------------------------------------------------------

// Count form: repeat sums added in order (the work buffer is not used).
template <typename T, bool isSetMask = true>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count, MPNPU_SITE) {
    if (isSetMask && count > 0) mpnpu::vec::check_count(src, uint64_t(count), site, "ReduceSum", "src");
    constexpr uint32_t lanes = mpnpu::vec::lanes_for(sizeof(T));
    mpnpu::vec::Plan p = mpnpu::vec::plan_count<isSetMask>(count, lanes, site, "ReduceSum");
    mpnpu::vec::reduce_sum_run(p, dst, src, sharedTmpBuffer, mpnpu::vec::contiguous(lanes, sizeof(T)), true, site);
}
// Level-0 forms: repeat sums in the work buffer, reduced again by trees. repeatTime may exceed 255.
template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride, MPNPU_SITE) {
    if (srcRepStride < 0) mpnpu::api_error(site, "ReduceSum: srcRepStride %d is negative", srcRepStride);
    mpnpu::vec::Plan p = mpnpu::vec::plan_level0_bits<true>(mask, repeatTime, mpnpu::vec::lanes_for(sizeof(T)), site,
                                                           "ReduceSum", INT32_MAX);
    mpnpu::vec::reduce_sum_run(p, dst, src, sharedTmpBuffer, mpnpu::vec::geo(1, uint64_t(srcRepStride)), false, site);
}
template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride, MPNPU_SITE) {
    if (srcRepStride < 0) mpnpu::api_error(site, "ReduceSum: srcRepStride %d is negative", srcRepStride);
    if (mask < 0) mpnpu::api_error(site, "ReduceSum: mask %d is negative", mask);
    mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<true>(uint64_t(mask), repeatTime,
                                                          mpnpu::vec::lanes_for(sizeof(T)), site, "ReduceSum", INT32_MAX);
    mpnpu::vec::reduce_sum_run(p, dst, src, sharedTmpBuffer, mpnpu::vec::geo(1, uint64_t(srcRepStride)), false, site);
}

// The accumulator register: the result of the last ReduceSum on this core. GetAccVal<T>() returns it
// as T (half or float, the ReduceSum's type); GetAccVal() (undocumented; the form kernels use as
// ``uint64_t v = GetAccVal(); float f = *reinterpret_cast<float*>(&v);``) returns the register's raw
// bits, the value in T's format in the low bytes. Either is a scalar-unit (PIPE_S) read of what the
// vector pipe wrote: racecheck orders it after the ReduceSum only through a V_S flag, a PIPE_ALL
// barrier, or the compiler's automatic synchronisation (docs/pipes.md).
}  // namespace AscendC
namespace mpnpu {
namespace vec {
inline uint64_t acc_bits(const Site& site, const char* name) {
    if (is_aic()) api_error(site, "%s: the accumulator is a vector core's register, and this is a cube core", name);
    local_access('R', P_S, MPNPU_MEM_SPR, 0, sizeof(uint64_t), 0, SPR_BYTES, site, name);
    return core().vec.acc;
}
template <typename T>
inline T acc_value(const Site& site, const char* name) {
    need_type<T>(reduce_type_ok<T>, site, name, "half, float");
    const uint64_t bits = acc_bits(site, name);
    T v;
    std::memcpy(static_cast<void*>(&v), &bits, sizeof(T));
    return v;
}
}  // namespace vec
}  // namespace mpnpu
namespace AscendC {
inline uint64_t GetAccVal(MPNPU_SITE) { return mpnpu::vec::acc_bits(site, "GetAccVal"); }
template <typename T>
inline T GetAccVal(MPNPU_SITE) {
    return mpnpu::vec::acc_value<T>(site, "GetAccVal");
}
// The same register under its documented newer name: the sum the last ReduceSum made (documented for
// the count form; here every form sets it), as T.
template <typename T>
inline T GetReduceRepeatSumSpr(MPNPU_SITE) {
    return mpnpu::vec::acc_value<T>(site, "GetReduceRepeatSumSpr");
}

#define MPNPU_VEC_REDUCE_MAXMIN(NAME, IS_MAX)                                                                     \
    template <typename T>                                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,  \
                     const int32_t count, bool calIndex = 0, MPNPU_SITE) {                                        \
        if (count > 0) mpnpu::vec::check_count(src, uint64_t(count), site, #NAME, "src");                         \
        constexpr uint32_t lanes = mpnpu::vec::lanes_for(sizeof(T));                                              \
        mpnpu::vec::Plan p = mpnpu::vec::plan_count<true>(count, lanes, site, #NAME);                             \
        uint64_t first = count > 0 && uint64_t(count) >= lanes ? uint64_t(count) / lanes : 1;                     \
        mpnpu::vec::reduce_maxmin_run(#NAME, IS_MAX, p, first, dst, src, sharedTmpBuffer,                         \
                                      mpnpu::vec::contiguous(lanes, sizeof(T)), calIndex, site);                  \
    }                                                                                                             \
    template <typename T>                                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,  \
                     const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride,                 \
                     bool calIndex = 0, MPNPU_SITE) {                                                             \
        if (srcRepStride < 0) mpnpu::api_error(site, #NAME ": srcRepStride %d is negative", srcRepStride);        \
        mpnpu::vec::Plan p = mpnpu::vec::plan_level0_bits<true>(mask, repeatTime,                                 \
                                                               mpnpu::vec::lanes_for(sizeof(T)), site, #NAME, INT32_MAX); \
        mpnpu::vec::reduce_maxmin_run(#NAME, IS_MAX, p, uint64_t(repeatTime), dst, src, sharedTmpBuffer,          \
                                      mpnpu::vec::geo(1, uint64_t(srcRepStride)), calIndex, site);                \
    }                                                                                                             \
    template <typename T>                                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,  \
                     const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0, \
                     MPNPU_SITE) {                                                                                \
        if (srcRepStride < 0) mpnpu::api_error(site, #NAME ": srcRepStride %d is negative", srcRepStride);        \
        if (mask < 0) mpnpu::api_error(site, #NAME ": mask %d is negative", mask);                                \
        mpnpu::vec::Plan p = mpnpu::vec::plan_level0_len<true>(uint64_t(mask), repeatTime,                        \
                                                              mpnpu::vec::lanes_for(sizeof(T)), site, #NAME, INT32_MAX); \
        mpnpu::vec::reduce_maxmin_run(#NAME, IS_MAX, p, uint64_t(repeatTime), dst, src, sharedTmpBuffer,          \
                                      mpnpu::vec::geo(1, uint64_t(srcRepStride)), calIndex, site);                \
    }

MPNPU_VEC_REDUCE_MAXMIN(ReduceMax, true)
MPNPU_VEC_REDUCE_MAXMIN(ReduceMin, false)

}  // namespace AscendC

#endif  // MPNPU_VECTOR_REDUCE_H
