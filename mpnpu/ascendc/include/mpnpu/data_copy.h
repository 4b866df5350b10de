// Data movement between GM and local memory: DataCopy (count and DataCopyParams forms, GM<->UB,
// GM->L1, UB->UB), DataCopyPad (unaligned blocks with padding), and the atomic modes of copies to
// GM (SetAtomicAdd / Max / Min, SetAtomicNone = DisableDmaAtomic).
//
// The slice forms (SliceInfo per dimension, dimension 0 the innermost) pick a sub-grid of a
// multi-dimensional tensor: in dimension 0, pieces of burstLen data blocks from startIndex, stride
// elements apart, up to endIndex (inclusive; a piece ends there at the latest); in each outer dimension,
// indices from startIndex, stride indices apart, up to endIndex (burstLen must be 1 there); an index
// of dimension d weighs the product of the shapeValues below d. The source's elements, in that order
// (outer dimensions slowest), go to the destination's, in its order; the two must count the same.
//
// GM -> local runs on PIPE_MTE2, UB -> GM on PIPE_MTE3, UB -> UB on PIPE_V. Every copy checks both
// sides (memcheck), records both when tracing, and lets a race-directed hold stop the core around
// the GM access. With an atomic mode set, each element of a copy to GM is combined with what GM
// holds by one compare-and-swap on the shared memory itself, so two cores' atomic adds never race.
#ifndef MPNPU_DATA_COPY_H
#define MPNPU_DATA_COPY_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "native/rt.h"
#include "tensor.h"
#include "types.h"

namespace mpnpu {

enum AtomicOp : int { ATOMIC_NONE = 0, ATOMIC_ADD = 1, ATOMIC_MAX = 2, ATOMIC_MIN = 3 };

template <typename T>
inline T atomic_combine(int op, T old, T v) {
    if constexpr (is_float16_v<T>) {
        float a = float(old), b = float(v);
        return T(op == ATOMIC_ADD ? a + b : op == ATOMIC_MAX ? (a > b ? a : b) : (a < b ? a : b));
    } else {
        return op == ATOMIC_ADD ? T(old + v) : op == ATOMIC_MAX ? (old > v ? old : v) : (old < v ? old : v);
    }
}

// One element of an atomic copy: read-modify-write with a compare-and-swap loop on its bits.
template <typename T>
inline void atomic_store(T* dst, T v, int op) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "atomic element size");
    using Bits = std::conditional_t<sizeof(T) == 1, uint8_t,
                 std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    Bits* word = reinterpret_cast<Bits*>(dst);
    Bits seen = __atomic_load_n(word, __ATOMIC_RELAXED);
    for (;;) {
        T old;
        std::memcpy(static_cast<void*>(&old), &seen, sizeof(T));
        T next = atomic_combine(op, old, v);
        Bits want;
        std::memcpy(&want, &next, sizeof(T));
        if (__atomic_compare_exchange_n(word, &seen, want, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
    }
}

template <typename T>
inline void store_gm(T* dst, const T* src, uint64_t n, int op) {
    if (op == ATOMIC_NONE) {
        std::memcpy(static_cast<void*>(dst), src, n * sizeof(T));
        return;
    }
    for (uint64_t i = 0; i < n; ++i) atomic_store(dst + i, src[i], op);
}

inline void check_ub_aligned(uint64_t offset, const Site& site, const char* what) {
    if (offset % BLOCK_BYTES)
        api_error(site, "%s: the local address must be 32-byte aligned (it is %llu bytes into its memory)", what,
                  (unsigned long long)offset);
}

inline char gm_write_kind() { return core().atomic_op ? 'A' : 'W'; }

// Marks a GM record as run by its pipe's queue (later than issued) when the pipes are asynchronous.
inline void mark_queued(MpnpuEvent* rec, uint8_t pipe) {
    if (rec && core().pipes.asynchronous() && pipe_is_async(pipe)) rec->mem = 1;
}

// GM -> local: ``count`` blocks of ``block`` bytes; GM blocks ``gm_step`` bytes apart, local blocks
// ``local_step`` bytes apart. Checked and recorded at issue; the bytes move when the pipe runs it.
template <typename T>
inline void copy_in(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src, uint64_t count,
                    uint64_t block, uint64_t gm_step, uint64_t local_step, const Site& site, const char* what,
                    uint8_t pipe = P_MTE2) {
    if (count == 0 || block == 0) return;
    check_ub_aligned(dst.mpnpu_offset(), site, what);
    const uint8_t* g = reinterpret_cast<const uint8_t*>(src.mpnpu_addr());
    hold_point(site, 0);
    MpnpuEvent* rec = gm_access('R', pipe, src.mpnpu_base(), g, block, gm_step, count, sizeof(T), site, what);
    mark_queued(rec, pipe);
    dst.mpnpu_touch_bytes('W', pipe, 0, (count - 1) * local_step + block, site, what);
    uint8_t* l = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    core().pipes.run(pipe, [=] {
        uint64_t t0 = span_start();
        for (uint64_t i = 0; i < count; ++i) std::memcpy(l + i * local_step, g + i * gm_step, block);
        done(rec, t0);
    });
    if (is_hold_site(site)) core().pipes.barrier(pipe);  // the held access has happened once it landed
    hold_point(site, 1);
}

// local -> GM, the same shape, on PIPE_MTE3 (atomically, with the atomic mode set at issue).
template <typename T>
inline void copy_out(const AscendC::GlobalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint64_t count,
                     uint64_t block, uint64_t gm_step, uint64_t local_step, const Site& site, const char* what,
                     uint8_t pipe = P_MTE3) {
    if (count == 0 || block == 0) return;
    check_ub_aligned(src.mpnpu_offset(), site, what);
    uint8_t* g = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    hold_point(site, 0);
    src.mpnpu_touch_bytes('R', pipe, 0, (count - 1) * local_step + block, site, what);
    MpnpuEvent* rec = gm_access(gm_write_kind(), pipe, dst.mpnpu_base(), g, block, gm_step, count, sizeof(T), site,
                                what);
    mark_queued(rec, pipe);
    const uint8_t* l = reinterpret_cast<const uint8_t*>(src.mpnpu_addr());
    int op = core().atomic_op;
    core().pipes.run(pipe, [=] {
        uint64_t t0 = span_start();
        for (uint64_t i = 0; i < count; ++i)
            store_gm(reinterpret_cast<T*>(g + i * gm_step), reinterpret_cast<const T*>(l + i * local_step),
                     block / sizeof(T), op);
        done(rec, t0);
    });
    if (is_hold_site(site)) core().pipes.barrier(pipe);
    hold_point(site, 1);
}

inline uint64_t align32(uint64_t n) { return block_round_up(n); }

}  // namespace mpnpu

namespace AscendC {
constexpr uint32_t K_MAX_DIM = 8;  // the most dimensions a slice copy describes (mpnpu's bound)
struct SliceInfo {
    uint32_t startIndex = 0;
    uint32_t endIndex = 0;
    uint32_t stride = 0;
    uint32_t burstLen = 0;
    uint32_t shapeValue = 0;
};
}  // namespace AscendC

namespace mpnpu {

// The runs (first element, elements) a slice description selects, in order.
inline std::vector<std::pair<uint64_t, uint64_t>> slice_runs(const AscendC::SliceInfo* s, uint32_t dims,
                                                             uint32_t elem, const Site& site, const char* side) {
    if (dims < 1 || dims > AscendC::K_MAX_DIM)
        api_error(site, "DataCopy: dimValue %u is outside [1, %u]", dims, AscendC::K_MAX_DIM);
    for (uint32_t d = 0; d < dims; ++d) {
        const AscendC::SliceInfo& x = s[d];
        if (x.startIndex > x.endIndex || x.endIndex >= x.shapeValue)
            api_error(site, "DataCopy: %s slice of dimension %u runs from %u to %u in a dimension of %u", side, d,
                      x.startIndex, x.endIndex, x.shapeValue);
        if (d == 0 && (x.burstLen == 0 || uint64_t(x.burstLen) * BLOCK_BYTES % elem != 0))
            api_error(site, "DataCopy: %s slice's burstLen %u (data blocks) holds no whole number of elements", side,
                      x.burstLen);
        if (d > 0 && x.burstLen != 1)
            api_error(site, "DataCopy: %s slice's burstLen in dimension %u is %u; beyond dimension 0 it must be 1",
                      side, d, x.burstLen);
    }
    std::vector<std::pair<uint64_t, uint64_t>> pieces;  // dimension 0
    const uint64_t len0 = uint64_t(s[0].burstLen) * BLOCK_BYTES / elem;
    for (uint64_t p = s[0].startIndex; p <= s[0].endIndex; p += len0 + s[0].stride) {
        const uint64_t n = std::min<uint64_t>(len0, uint64_t(s[0].endIndex) + 1 - p);
        pieces.emplace_back(p, n);
    }
    std::vector<uint64_t> bases{0};  // the outer dimensions' offsets, the outermost slowest
    uint64_t weight = s[0].shapeValue;
    std::vector<std::vector<uint64_t>> outer;
    for (uint32_t d = 1; d < dims; ++d) {
        std::vector<uint64_t> idx;
        for (uint64_t i = s[d].startIndex; i <= s[d].endIndex; i += 1 + s[d].stride) idx.push_back(i * weight);
        outer.push_back(idx);
        weight *= s[d].shapeValue;
    }
    for (size_t d = outer.size(); d-- > 0;) {
        std::vector<uint64_t> next;
        for (uint64_t b : bases)
            for (uint64_t o : outer[d]) next.push_back(b + o);
        bases.swap(next);
    }
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (uint64_t b : bases)
        for (const auto& p : pieces) runs.emplace_back(b + p.first, p.second);
    return runs;
}

// The source's and destination's runs paired into chunks (source element, destination element, count).
inline std::vector<std::array<uint64_t, 3>> slice_chunks(const AscendC::SliceInfo* dst, const AscendC::SliceInfo* src,
                                                          uint32_t dims, uint32_t elem, const Site& site) {
    const auto d = slice_runs(dst, dims, elem, site, "the destination");
    const auto s = slice_runs(src, dims, elem, site, "the source");
    uint64_t nd = 0, ns = 0;
    for (const auto& r : d) nd += r.second;
    for (const auto& r : s) ns += r.second;
    if (nd != ns)
        api_error(site, "DataCopy: the source slice has %llu elements and the destination slice %llu",
                  static_cast<unsigned long long>(ns), static_cast<unsigned long long>(nd));
    std::vector<std::array<uint64_t, 3>> chunks;
    size_t i = 0, j = 0;
    uint64_t si = 0, dj = 0;  // elements of run i / j already used
    while (i < s.size() && j < d.size()) {
        const uint64_t n = std::min(s[i].second - si, d[j].second - dj);
        chunks.push_back({s[i].first + si, d[j].first + dj, n});
        si += n;
        dj += n;
        if (si == s[i].second) ++i, si = 0;
        if (dj == d[j].second) ++j, dj = 0;
    }
    return chunks;
}

}  // namespace mpnpu

namespace AscendC {

// -- DataCopy -------------------------------------------------------------------------------------------

// GM -> local, ``count`` elements (their bytes rounded down to whole 32-byte blocks, as the chip
// does; int4b_t counts two to a byte).
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count, MPNPU_SITE) {
    uint64_t bytes = mpnpu::elem_bytes<T>(count) / mpnpu::BLOCK_BYTES * mpnpu::BLOCK_BYTES;
    mpnpu::copy_in(dst, src, 1, bytes, 0, 0, site, "DataCopy GM->local");
}

// local -> GM, ``count`` elements (rounded down to whole 32-byte blocks).
template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, MPNPU_SITE) {
    uint64_t bytes = mpnpu::elem_bytes<T>(count) / mpnpu::BLOCK_BYTES * mpnpu::BLOCK_BYTES;
    mpnpu::copy_out(dst, src, 1, bytes, 0, 0, site, "DataCopy local->GM");
}

// GM -> local, blockCount blocks of blockLen data blocks; gaps in data blocks on both sides.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p, MPNPU_SITE) {
    uint64_t block = uint64_t(p.blockLen) * mpnpu::BLOCK_BYTES;
    mpnpu::copy_in(dst, src, p.blockCount, block, block + uint64_t(p.srcStride) * mpnpu::BLOCK_BYTES,
                   block + uint64_t(p.dstStride) * mpnpu::BLOCK_BYTES, site, "DataCopy GM->local");
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, MPNPU_SITE) {
    uint64_t block = uint64_t(p.blockLen) * mpnpu::BLOCK_BYTES;
    mpnpu::copy_out(dst, src, p.blockCount, block, block + uint64_t(p.dstStride) * mpnpu::BLOCK_BYTES,
                    block + uint64_t(p.srcStride) * mpnpu::BLOCK_BYTES, site, "DataCopy local->GM");
}

}  // namespace AscendC
namespace mpnpu {
// local -> local: UB -> UB on PIPE_V; from L1 (L1 -> the bias table) on PIPE_MTE1. Byte sizes and steps.
template <typename T>
inline void local_copy(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint64_t count,
                       uint64_t block, uint64_t sstep, uint64_t dstep, const Site& site) {
    const uint8_t pipe = src.mpnpu_mem() == MPNPU_MEM_L1 ? P_MTE1 : P_V;
    if (count == 0 || block == 0) return;
    check_ub_aligned(dst.mpnpu_offset(), site, "DataCopy local->local");
    check_ub_aligned(src.mpnpu_offset(), site, "DataCopy local->local");
    src.mpnpu_touch_bytes('R', pipe, 0, (count - 1) * sstep + block, site, "DataCopy local->local");
    dst.mpnpu_touch_bytes('W', pipe, 0, (count - 1) * dstep + block, site, "DataCopy local->local");
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.mpnpu_addr());
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    core().pipes.run(pipe, [=] {  // (inline on PIPE_V; queued behind MTE1's earlier work from L1)
        for (uint64_t i = 0; i < count; ++i) std::memmove(d + i * dstep, s + i * sstep, block);
    });
}
}  // namespace mpnpu
namespace AscendC {

// UB -> UB on PIPE_V, L1 -> the bias table (C2) on PIPE_MTE1. Into the bias table, blockLen and dstGap
// count 64-byte units on this chip class (srcGap 32-byte ones), as the L1 -> BiasTable page says.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, MPNPU_SITE) {
    const uint64_t unit = dst.mpnpu_mem() == MPNPU_MEM_BT ? 64 : mpnpu::BLOCK_BYTES;
    const uint64_t block = uint64_t(p.blockLen) * unit;
    mpnpu::local_copy(dst, src, p.blockCount, block, block + uint64_t(p.srcStride) * mpnpu::BLOCK_BYTES,
                      block + uint64_t(p.dstStride) * unit, site);
}

// The enhanced form (the L0C -> UB page): on this chip class the page says the call is accepted and
// copies as the basic local copy, with no conversion; so operands of two types are refused.
template <typename T, typename U>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyParams& p,
                     const DataCopyEnhancedParams& enhancedParams, MPNPU_SITE) {
    (void)enhancedParams;
    if constexpr (!std::is_same_v<T, U>)
        mpnpu::api_error(site, "DataCopy with DataCopyEnhancedParams: operands of two types (a conversion on the "
                               "way) are the inference chips' L0C -> UB path only, not this chip class's");
    else
        DataCopy(dst, src, p, site);
}

// L1 -> the bias table with the two types the L1 -> BiasTable page allows to differ on this chip
// class: half bias in L1 into float in the bias table. blockLen counts 64-byte units of the source (as
// a kernel sizing it from the bias's own bytes expects), srcGap 32-byte blocks of the source, dstGap
// 64-byte units of the destination.
template <typename T, typename U>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyParams& p, MPNPU_SITE) {
    if constexpr (std::is_same_v<T, U>) {
        DataCopy<T>(dst, src, p, site);
    } else {
        static_assert(std::is_same_v<T, float> && std::is_same_v<U, half>,
                      "DataCopy local->local of two types: L1 -> the bias table from half to float is the one "
                      "conversion this chip class has");
        if (dst.mpnpu_mem() != MPNPU_MEM_BT || src.mpnpu_mem() != MPNPU_MEM_L1)
            mpnpu::api_error(site, "DataCopy of two types (half to float) copies L1 to the bias table (C1 -> C2), not "
                                   "%s to %s", mpnpu::mem_name(src.mpnpu_mem()), mpnpu::mem_name(dst.mpnpu_mem()));
        if (p.blockCount == 0 || p.blockLen == 0) return;
        if (src.mpnpu_offset() % mpnpu::BLOCK_BYTES || dst.mpnpu_offset() % 64)
            mpnpu::api_error(site, "DataCopy L1->bias table: the source must start 32-byte aligned and the destination "
                                   "64-byte aligned (offsets %llu and %llu)",
                             static_cast<unsigned long long>(src.mpnpu_offset()),
                             static_cast<unsigned long long>(dst.mpnpu_offset()));
        const uint64_t n = uint64_t(p.blockLen) * 64 / sizeof(U);  // elements a block
        const uint64_t sstep = uint64_t(p.blockLen) * 64 + uint64_t(p.srcStride) * mpnpu::BLOCK_BYTES;
        const uint64_t dstep = n * sizeof(T) + uint64_t(p.dstStride) * 64;
        const uint64_t count = p.blockCount;
        const char* what = "DataCopy L1->bias table (half to float)";
        src.mpnpu_touch_bytes('R', mpnpu::P_MTE1, 0, (count - 1) * sstep + n * sizeof(U), site, what);
        dst.mpnpu_touch_bytes('W', mpnpu::P_MTE1, 0, (count - 1) * dstep + n * sizeof(T), site, what);
        const uint8_t* s = reinterpret_cast<const uint8_t*>(src.mpnpu_addr());
        uint8_t* d = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
        mpnpu::core().pipes.run(mpnpu::P_MTE1, [=] {
            for (uint64_t i = 0; i < count; ++i)
                for (uint64_t e = 0; e < n; ++e) {
                    U v;
                    std::memcpy(&v, s + i * sstep + e * sizeof(U), sizeof(U));
                    const T out = static_cast<T>(v);
                    std::memcpy(d + i * dstep + e * sizeof(T), &out, sizeof(T));
                }
        });
    }
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, MPNPU_SITE) {
    uint64_t bytes = mpnpu::elem_bytes<T>(count) / mpnpu::BLOCK_BYTES * mpnpu::BLOCK_BYTES;
    if (bytes / mpnpu::BLOCK_BYTES > 0xFFFF) mpnpu::api_error(site, "DataCopy local->local: %u elements is too long", count);
    mpnpu::local_copy(dst, src, 1, bytes, bytes, bytes, site);
}

// Slices of a multi-dimensional tensor, GM -> UB (PIPE_MTE2) and UB -> GM (PIPE_MTE3): one copy per
// stretch both sides hold contiguously.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, MPNPU_SITE) {
    for (const auto& c : mpnpu::slice_chunks(dstSliceInfo, srcSliceInfo, dimValue, sizeof(T), site))
        mpnpu::copy_in(dst[uint32_t(c[1])], src[c[0]], 1, mpnpu::elem_bytes<T>(c[2]), 0, 0, site, "DataCopy");
}
template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, MPNPU_SITE) {
    for (const auto& c : mpnpu::slice_chunks(dstSliceInfo, srcSliceInfo, dimValue, sizeof(T), site))
        mpnpu::copy_out(dst[c[1]], src[uint32_t(c[0])], 1, mpnpu::elem_bytes<T>(c[2]), 0, 0, site, "DataCopy");
}

// -- DataCopyPad --------------------------------------------------------------------------------------------

namespace detail {
template <typename T>
inline void pad_in(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t blockCount, uint64_t blockLen,
                   uint64_t srcGap, uint64_t dstGap, bool isPad, uint32_t left, uint32_t right, T value,
                   const mpnpu::Site& site) {
    const char* what = "DataCopyPad GM->local";
    if (blockCount == 0 || blockLen == 0) return;  // a NOP, as on the chip
    if (blockLen % sizeof(T))
        mpnpu::api_error(site, "%s: blockLen %llu is not a multiple of the element size %zu", what,
                         (unsigned long long)blockLen, sizeof(T));
    if (left * sizeof(T) > mpnpu::BLOCK_BYTES || right * sizeof(T) > mpnpu::BLOCK_BYTES)
        mpnpu::api_error(site, "%s: leftPadding and rightPadding may cover at most 32 bytes each", what);
    mpnpu::check_ub_aligned(dst.mpnpu_offset(), site, what);
    uint64_t data = uint64_t(left) * sizeof(T) + blockLen + uint64_t(right) * sizeof(T);
    uint64_t ub_block = mpnpu::align32(data);
    uint64_t ub_step = ub_block + dstGap * mpnpu::BLOCK_BYTES;
    uint64_t gm_step = blockLen + srcGap;
    const uint8_t* g = reinterpret_cast<const uint8_t*>(src.mpnpu_addr());
    mpnpu::hold_point(site, 0);
    MpnpuEvent* rec = mpnpu::gm_access('R', mpnpu::P_MTE2, src.mpnpu_base(), g, blockLen, gm_step, blockCount,
                                       sizeof(T), site, what);
    mpnpu::mark_queued(rec, mpnpu::P_MTE2);
    dst.mpnpu_touch_bytes('W', mpnpu::P_MTE2, 0, uint64_t(blockCount - 1) * ub_step + ub_block, site, what);
    uint8_t* l = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    // isPad false after a SetPadValue: the padding register's value fills the padding
    const bool from_register = !isPad && (left || right) && mpnpu::core().pad_value_set;
    if (from_register) {
        std::memcpy(&value, &mpnpu::core().pad_value, sizeof(T) < sizeof(uint64_t) ? sizeof(T) : sizeof(uint64_t));
        isPad = true;
    }
    mpnpu::core().pipes.run(mpnpu::P_MTE2, [=] {
        uint64_t t0 = mpnpu::span_start();
        for (uint64_t i = 0; i < blockCount; ++i) {
            uint8_t* b = l + i * ub_step;
            std::memcpy(b + uint64_t(left) * sizeof(T), g + i * gm_step, blockLen);
            T* elems = reinterpret_cast<T*>(b);
            uint64_t n = ub_block / sizeof(T), first = left, last = left + blockLen / sizeof(T);
            if (isPad) {
                for (uint64_t k = 0; k < first; ++k) elems[k] = value;
                for (uint64_t k = last; k < n; ++k) elems[k] = value;
            } else if (left == 0 && right == 0) {
                // The chip fills an unaligned block's tail with the block's first element.
                for (uint64_t k = last; k < n; ++k) elems[k] = elems[0];
            }  // else: undefined padding, left as the buffer held it
        }
        mpnpu::done(rec, t0);
    });
    if (mpnpu::is_hold_site(site)) mpnpu::core().pipes.barrier(mpnpu::P_MTE2);
    mpnpu::hold_point(site, 1);
}

template <typename T>
inline void pad_out(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t blockCount, uint64_t blockLen,
                    uint64_t srcGap, uint64_t dstGap, const mpnpu::Site& site) {
    const char* what = "DataCopyPad local->GM";
    if (blockCount == 0 || blockLen == 0) return;
    if (blockLen % sizeof(T))
        mpnpu::api_error(site, "%s: blockLen %llu is not a multiple of the element size %zu", what,
                         (unsigned long long)blockLen, sizeof(T));
    mpnpu::copy_out(dst, src, blockCount, blockLen, blockLen + dstGap,
                    mpnpu::align32(blockLen) + srcGap * mpnpu::BLOCK_BYTES, site, what);
}
}  // namespace detail

// Which struct a braced list of copy parameters makes. Four values are a DataCopyParams, five a
// DataCopyExtParams: kernels write ``DataCopyPad(dst, src, {1, len, 0, 0}, {false, 0, 0, 0})`` for the
// DataCopyParams forms, and a DataCopyExtParams (whose rsv field is documented with a default) is
// named when it is meant, ``DataCopyExtParams p{1, len, 0, 0}``. So the DataCopyExtParams forms take
// a DataCopyExtParams argument exactly (a deduced parameter, which a braced list cannot bind) or a
// list of five values, and a list of four goes to the DataCopyParams forms without ambiguity.
namespace detail {
template <typename P>
using if_ext_params = std::enable_if_t<std::is_same_v<std::decay_t<P>, DataCopyExtParams>, int>;
struct ExtParamsList {  // a braced list of five values
    DataCopyExtParams p;
    ExtParamsList(uint16_t count, uint32_t len, uint32_t srcGap, uint32_t dstGap, uint32_t reserved)
        : p(count, len, srcGap, dstGap, reserved) {}
};
}  // namespace detail

template <typename T, typename P, detail::if_ext_params<P> = 0>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const P& p,
                        const DataCopyPadExtParams<T>& pad, MPNPU_SITE) {
    detail::pad_in(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad, pad.leftPadding,
                   pad.rightPadding, pad.paddingValue, site);
}
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const detail::ExtParamsList& l,
                        const DataCopyPadExtParams<T>& pad, MPNPU_SITE) {
    DataCopyPad(dst, src, l.p, pad, site);
}

template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                        const DataCopyPadParams& pad, MPNPU_SITE) {
    T value{};
    std::memcpy(&value, &pad.paddingValue, sizeof(T) < sizeof(uint64_t) ? sizeof(T) : sizeof(uint64_t));
    detail::pad_in(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad, pad.leftPadding,
                   pad.rightPadding, value, site);
}

template <typename T, typename P, detail::if_ext_params<P> = 0>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const P& p, MPNPU_SITE) {
    detail::pad_out(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, site);
}
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const detail::ExtParamsList& l,
                        MPNPU_SITE) {
    detail::pad_out(dst, src, l.p.blockCount, l.p.blockLen, l.p.srcStride, l.p.dstStride, site);
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, MPNPU_SITE) {
    detail::pad_out(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, site);
}

// DataCopyPad GM->UB on raw addresses (``DataCopyPadGm2UBImpl((__ubuf__ T*)local.GetPhyAddr(),
// (__gm__ T*)global.GetPhyAddr(), params, padParams)``): on no API page, the form public kernels call
// to copy one type's bytes as another's. The same copy as DataCopyPad, on a view of UB from dst to
// its end and of GM from src (so memcheck bounds it by UB and by src's GM block, not by a tensor).
template <typename T, typename P>
inline void DataCopyPadGm2UBImpl(__ubuf__ T* dst, __gm__ T* src, const P& p, const DataCopyPadExtParams<T>& pad,
                                 MPNPU_SITE) {
    const int64_t at = mpnpu::offset_in(MPNPU_MEM_UB, static_cast<const void*>(dst));
    if (at < 0) mpnpu::api_error(site, "DataCopyPadGm2UBImpl: dst is not an address in UB");
    const uint32_t addr = uint32_t(at);
    if (addr % mpnpu::BLOCK_BYTES)
        mpnpu::api_error(site, "DataCopyPadGm2UBImpl: dst is UB byte %u, not 32-byte aligned", addr);
    LocalTensor<T> local(TPosition::VECIN, addr, uint32_t((mpnpu::memory_size(MPNPU_MEM_UB) - addr) / sizeof(T)),
                         site);
    GlobalTensor<T> global;
    global.SetGlobalBuffer(src);
    detail::pad_in(local, global, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad, pad.leftPadding,
                   pad.rightPadding, pad.paddingValue, site);
}

// The padding register: the value DataCopyPad GM->local fills its left/right padding with when its
// isPad is false (kept for the rest of the launch; T is the type of the copies it serves).
template <typename T, TPosition pos = TPosition::MAX>
inline void SetPadValue(T paddingValue) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "SetPadValue: a type of at most 8 bytes");
    static_assert(pos == TPosition::MAX || pos == TPosition::VECIN || pos == TPosition::VECOUT,
                  "SetPadValue: the position is VECIN, VECOUT or MAX");
    mpnpu::CoreState& c = mpnpu::core();
    c.pad_value = 0;
    std::memcpy(&c.pad_value, &paddingValue, sizeof(T));
    c.pad_value_set = true;
}

// -- atomics of copies to GM -----------------------------------------------------------------------------

template <typename T>
inline void SetAtomicAdd() {
    mpnpu::core().atomic_op = mpnpu::ATOMIC_ADD;
}
template <typename T>
inline void SetAtomicMax() {
    mpnpu::core().atomic_op = mpnpu::ATOMIC_MAX;
}
template <typename T>
inline void SetAtomicMin() {
    mpnpu::core().atomic_op = mpnpu::ATOMIC_MIN;
}
inline void SetAtomicNone() { mpnpu::core().atomic_op = mpnpu::ATOMIC_NONE; }
inline void DisableDmaAtomic() { SetAtomicNone(); }
template <typename T>
inline void SetAtomicType() {}

// DataCacheCleanAndInvalid (caches are coherent on a CPU): mpnpu/utils.h, with its enumerations.

}  // namespace AscendC

#endif  // MPNPU_DATA_COPY_H
