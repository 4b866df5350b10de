// The machinery every vector instruction shares: which lanes of which repeats it works on (from
// its mask, count or the mask register), where each lane of each operand lives in UB (block and
// repeat strides), the byte hull each operand touches (for memcheck and the trace), and the
// per-repeat loop (all reads of a repeat happen before its writes, repeats run in order, so
// in-place use and the accumulate-into-dst patterns behave as on the device).
//
// The model of one instruction:
//
//   repeat r (0 .. repeats-1), lane j (0 .. lanes-1, lanes = 256 bytes / widest element)
//     active?   normal mode: bit j of the 128-bit mask (the same every repeat)
//               counter mode: the first N elements overall (all lanes but in the last repeat)
//     address   operand base + r * repStride*32 + (j / perBlock) * blkStride*32 + (j % perBlock) * size
//               (perBlock = 32 / that operand's element size)
//
// Lanes that are not active are neither read nor written (dst keeps what it held).
#ifndef MPNPU_VECTOR_ENGINE_H
#define MPNPU_VECTOR_ENGINE_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "../native/rt.h"
#include "../native/simd.h"
#include "../tensor.h"
#include "../types.h"

namespace mpnpu {
namespace vec {

constexpr uint32_t REPEAT_BYTES = 256;
constexpr uint32_t MAX_LANES = 128;  // the widest mask (128 bits); 8-bit lanes only come paired with wider ones

// -- elements ------------------------------------------------------------------------------------------

template <typename T>
inline T ld(const uint8_t* p) {
    T v;
    std::memcpy(static_cast<void*>(&v), p, sizeof(T));
    return v;
}
template <typename T>
inline void st(uint8_t* p, const T& v) {
    std::memcpy(p, static_cast<const void*>(&v), sizeof(T));
}

template <typename T, typename... Ts>
constexpr bool one_of = (std::is_same_v<T, Ts> || ...);

// false, but only once T is known (for static_asserts in forms mpnpu refuses).
template <typename T>
constexpr bool refused = !sizeof(T*);

template <typename T>
constexpr const char* type_name() {
    if constexpr (std::is_same_v<T, half>) return "half";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, double>) return "double";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16_t";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32_t";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32_t";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
    else if constexpr (std::is_same_v<T, uint64_t>) return "uint64_t";
    else if constexpr (std::is_same_v<T, bool>) return "bool";
    else return "this type";
}

// The type an element is computed in: float for the floating types (half and bfloat16_t are
// widened, computed and rounded once to nearest-even), int64_t for integers (results wrap).
template <typename T>
using calc_t = std::conditional_t<is_floating_v<T>, float, int64_t>;

template <typename T>
inline calc_t<T> to_calc(const T& v) {
    if constexpr (is_floating_v<T>) return static_cast<float>(v);
    else return static_cast<int64_t>(v);
}

template <typename T>
inline T from_calc(calc_t<T> v) {
    if constexpr (is_float16_v<T>) return T(v);
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v);
    else return static_cast<T>(static_cast<uint64_t>(v));  // two's complement wrap
}

// A product and a sum rounded separately (never contracted into one fused multiply-add, whatever
// the kernel's compiler flags).
inline float mul_then_add(float a, float b, float c) {
    volatile float p = a * b;
    return p + c;
}

// The documented signatures, exactly, for a kernel that takes a call's address (passes Add or Exp
// as a template argument of a function-pointer type and calls it later). Those forms carry no site
// parameter, so the kernel's line is unknown at the call: errors and trace records name the call
// and how it was made. They take their count, mask and repeat as template parameters restricted to
// the documented types, which makes them less specialised than the usual forms: a direct call
// always picks the usual form (with the kernel's line), and only a conversion to the documented
// function type picks these.
template <typename A, typename B>
using if_same = std::enable_if_t<std::is_same_v<A, B>, int>;
#define MPNPU_FPTR_SITE(NAME) ::mpnpu::Site{"(" NAME " called through a function pointer)", 0, NAME}

// The element type must be one the call takes on the products mpnpu models.
template <typename T>
inline void need_type(bool ok, const Site& site, const char* name, const char* supported) {
    if (!ok)
        api_error(site, "%s: element type %s is not supported (it takes %s)", name, type_name<T>(), supported);
}

// -- lanes ---------------------------------------------------------------------------------------------

struct Bits {
    uint64_t w[2] = {0, 0};
    bool none() const { return (w[0] | w[1]) == 0; }
    bool test(uint32_t j) const { return (w[j >> 6] >> (j & 63)) & 1u; }
};

inline Bits first_n(uint64_t n) {
    Bits b;
    if (n >= 128) {
        b.w[0] = b.w[1] = ~0ull;
    } else if (n >= 64) {
        b.w[0] = ~0ull;
        b.w[1] = n == 64 ? 0 : (~0ull >> (128 - n));
    } else {
        b.w[0] = n == 0 ? 0 : (~0ull >> (64 - n));
    }
    return b;
}

inline Bits operator&(const Bits& a, const Bits& b) {
    Bits r;
    r.w[0] = a.w[0] & b.w[0];
    r.w[1] = a.w[1] & b.w[1];
    return r;
}

// n when the set lanes are exactly lanes 0 .. n-1 (n >= 1), else 0.
inline uint32_t prefix_length(const Bits& b) {
    const uint64_t lo = b.w[0], hi = b.w[1];
    if (hi == 0) return (lo & (lo + 1)) == 0 ? uint32_t(__builtin_popcountll(lo)) : 0;
    if (lo != ~0ull) return 0;
    return (hi & (hi + 1)) == 0 ? 64u + uint32_t(__builtin_popcountll(hi)) : 0;
}

// f(j) for every set lane, in increasing order.
template <class F>
inline void each_lane(const Bits& b, F&& f) {
    for (uint32_t w = 0; w < 2; ++w) {
        uint64_t x = b.w[w];
        while (x) {
            uint32_t k = uint32_t(__builtin_ctzll(x));
            x &= x - 1;
            f(w * 64 + k);
        }
    }
}

// Which lanes of which repeats an instruction works on.
struct Plan {
    uint32_t lanes = 0;    // lanes per repeat
    uint64_t repeats = 0;  // repeats run
    Bits main;             // lanes of each repeat but the last
    Bits last;             // lanes of the last repeat
    const Bits& bits(uint64_t r) const { return r + 1 == repeats ? last : main; }
    bool none() const { return repeats == 0 || (last.none() && (repeats == 1 || main.none())); }
};

// Counter mode: the first ``total`` elements, ``lanes`` per repeat.
inline Plan plan_counter(uint64_t total, uint32_t lanes) {
    Plan p;
    p.lanes = lanes;
    p.repeats = (total + lanes - 1) / lanes;
    p.main = first_n(lanes);
    p.last = first_n(total - (p.repeats ? (p.repeats - 1) * lanes : 0));
    return p;
}

// Normal mode: the lanes of ``bits`` in each of ``repeats`` repeats.
inline Plan plan_normal(const Bits& bits, uint64_t repeats, uint32_t lanes) {
    Plan p;
    p.lanes = lanes;
    p.repeats = repeats;
    p.main = p.last = bits & first_n(lanes);
    return p;
}

inline void check_repeat(int64_t repeat, const Site& site, const char* name, int64_t max_repeat = 255) {
    if (repeat < 0 || repeat > max_repeat)
        api_error(site, "%s: repeatTime %lld is outside [0, %lld]%s", name, (long long)repeat, (long long)max_repeat,
                  max_repeat == 255 ? " (one instruction runs at most 255 repeats)" : "");
}

inline Bits register_bits() {
    const VectorRegs& v = core().vec;
    Bits b;
    b.w[0] = v.mask[0];
    b.w[1] = v.mask[1];
    return b;
}

// A level-0 call's lanes. With isSetMask the call's own mask is loaded into the mask register first
// (normal mode: the bits, or the first ``len`` lanes; counter mode: the element count); without,
// the register as SetVectorMask left it is used. Counter mode ignores repeatTime.
template <bool isSetMask>
inline Plan plan_level0_bits(const uint64_t* mask, int64_t repeat, uint32_t lanes, const Site& site, const char* name,
                             int64_t max_repeat = 255) {
    check_repeat(repeat, site, name, max_repeat);
    VectorRegs& v = core().vec;
    if constexpr (isSetMask) {
        v.mask[0] = mask[0];
        v.mask[1] = (lanes > 64 || v.counter) ? mask[1] : 0;  // 32-bit lanes use the low word only
    }
    if (v.counter) return plan_counter(v.mask[0], lanes);
    return plan_normal(register_bits(), uint64_t(repeat), lanes);
}

template <bool isSetMask>
inline Plan plan_level0_len(uint64_t len, int64_t repeat, uint32_t lanes, const Site& site, const char* name,
                            int64_t max_repeat = 255) {
    check_repeat(repeat, site, name, max_repeat);
    VectorRegs& v = core().vec;
    if constexpr (isSetMask) {
        if (v.counter) {
            v.mask[0] = len;
            v.mask[1] = 0;
        } else {
            Bits b = first_n(len < lanes ? len : lanes);  // more than a repeat holds: a full repeat
            v.mask[0] = b.w[0];
            v.mask[1] = b.w[1];
        }
    }
    if (v.counter) return plan_counter(v.mask[0], lanes);
    return plan_normal(register_bits(), uint64_t(repeat), lanes);
}

// A count ("first n elements") call's lanes. With isSetMask the call runs ``count`` elements in
// counter mode and leaves the unit in normal mode with an all-ones mask (as the documented call
// does: SetMaskCount, SetVectorMask(count), compute, ResetMask, SetMaskNorm). Without, ``count`` is
// ignored: counter mode runs the register's count, normal mode one repeat under the register's mask.
template <bool isSetMask>
inline Plan plan_count(int64_t count, uint32_t lanes, const Site& site, const char* name) {
    VectorRegs& v = core().vec;
    if constexpr (isSetMask) {
        if (count < 0) api_error(site, "%s: count %lld is negative", name, (long long)count);
        Plan p = plan_counter(uint64_t(count), lanes);
        v.counter = false;
        v.mask[0] = v.mask[1] = ~0ull;
        return p;
    } else {
        (void)count;
        (void)site;
        (void)name;
        if (v.counter) return plan_counter(v.mask[0], lanes);
        return plan_normal(register_bits(), 1, lanes);
    }
}

// -- operands ------------------------------------------------------------------------------------------

// Block and repeat steps of one operand, in bytes.
struct Geo {
    uint64_t blk = 32;
    uint64_t rep = 256;
};

inline Geo geo(uint64_t blkStride, uint64_t repStride) { return Geo{blkStride * 32, repStride * 32}; }
// Contiguous elements (the count forms): repeats of ``lanes`` elements of ``size`` bytes.
inline Geo contiguous(uint32_t lanes, uint32_t size) { return Geo{32, uint64_t(lanes) * size}; }

// log2 of the elements per 32-byte block (element sizes are powers of two up to 32 bytes).
constexpr uint32_t block_shift(uint32_t size) {
    return size >= 32 ? 0 : size >= 16 ? 1 : size >= 8 ? 2 : size >= 4 ? 3 : size >= 2 ? 4 : 5;
}

inline uint64_t lane_offset(uint32_t j, uint32_t size, const Geo& g) {
    const uint32_t shift = block_shift(size);
    return uint64_t(j >> shift) * g.blk + uint64_t(j & ((1u << shift) - 1)) * size;
}

struct Hull {
    uint64_t lo = ~0ull;
    uint64_t hi = 0;
    bool empty() const { return hi <= lo; }
    void add(uint64_t a, uint64_t b) {
        if (a < lo) lo = a;
        if (b > hi) hi = b;
    }
};

// Bytes [lo, hi) relative to the operand's first element that the plan's lanes touch.
inline Hull hull_of(const Plan& p, uint32_t size, const Geo& g) {
    Hull h;
    if (p.repeats == 0) return h;
    auto span = [&](const Bits& b, uint64_t first_rep, uint64_t last_rep) {
        if (b.none()) return;
        uint64_t mn = ~0ull, mx = 0;
        const uint32_t n = prefix_length(b);
        if (n && g.blk >= 32) {  // lanes 0 .. n-1, offsets increasing with the lane
            h.add(first_rep * g.rep, last_rep * g.rep + lane_offset(n - 1, size, g) + size);
            return;
        }
        each_lane(b, [&](uint32_t j) {
            uint64_t o = lane_offset(j, size, g);
            if (o < mn) mn = o;
            if (o > mx) mx = o;
        });
        h.add(first_rep * g.rep + mn, last_rep * g.rep + mx + size);
    };
    if (p.repeats > 1) span(p.main, 0, p.repeats - 2);
    span(p.last, p.repeats - 1, p.repeats - 1);
    return h;
}

inline void start(const Site& site, const char* name) {
    if (is_aic()) api_error(site, "%s: vector instructions run on vector cores, and this is a cube core", name);
}

// An operand must be a UB tensor whose first byte is ``align``-byte aligned.
// Whether the an bytes at a and the bn bytes at b share a byte (the high-level calls' operand checks).
inline bool overlaps(const void* a, uint64_t an, const void* b, uint64_t bn) {
    const uint8_t* x = static_cast<const uint8_t*>(a);
    const uint8_t* y = static_cast<const uint8_t*>(b);
    return an && bn && x < y + bn && y < x + an;
}

template <typename T>
inline void check_operand(const AscendC::LocalTensor<T>& t, uint32_t align, const Site& site, const char* name,
                          const char* what) {
    if (t.mpnpu_mem() != MPNPU_MEM_UB)
        api_error(site, "%s: %s must be in the Unified Buffer (VECIN/VECCALC/VECOUT), it is in %s", name, what,
                  mem_name(t.mpnpu_mem()));
    if (align > 1 && t.mpnpu_offset() % align)
        api_error(site, "%s: %s must start %u-byte aligned in UB (it starts at byte %llu)", name, what, align,
                  (unsigned long long)t.mpnpu_offset());
}

// A count call must not run past the end of a tensor.
template <typename T>
inline void check_count(const AscendC::LocalTensor<T>& t, uint64_t count, const Site& site, const char* name,
                        const char* what) {
    if (count > t.GetSize())
        api_error(site, "%s: count %llu exceeds %s's %u elements", name, (unsigned long long)count, what,
                  t.GetSize());
}

// Memcheck (and trace) one operand's bytes. Whatever memcheck says, an access past the end of the
// memory itself is refused (it would leave mpnpu's arena).
template <typename T>
inline void touch(const AscendC::LocalTensor<T>& t, char kind, const Hull& h, const Site& site, const char* name) {
    if (h.empty()) return;
    t.mpnpu_touch_bytes(kind, P_V, h.lo, h.hi, site, name);
    if (t.mpnpu_offset() + h.hi > memory_size(t.mpnpu_mem()))
        api_error(site, "%s: the access reaches byte %llu of %s, past its end (%zu bytes)", name,
                  (unsigned long long)(t.mpnpu_offset() + h.hi), mem_name(t.mpnpu_mem()), memory_size(t.mpnpu_mem()));
}

template <typename T>
inline uint8_t* base(const AscendC::LocalTensor<T>& t) {
    return memory_base(t.mpnpu_mem()) + t.mpnpu_offset();
}

// One operand of the per-lane loop.
struct Lane {
    uint8_t* base;
    uint32_t size;
    Geo g;
    uint32_t shift = block_shift(size);  // (lane_offset without a division per element)
    uint8_t* at(uint64_t r, uint32_t j) const {
        return base + r * g.rep + uint64_t(j >> shift) * g.blk + uint64_t(j & ((1u << shift) - 1)) * size;
    }
};

template <typename T>
inline Lane lane_of(const AscendC::LocalTensor<T>& t, const Geo& g) {
    return Lane{base(t), uint32_t(sizeof(T)), g};
}

// For each repeat: out[j] = f(r, j) for its active lanes (reading sources), then dst's lanes written.
// (A repeat whose active lanes are the first n runs them in a plain loop: the same lanes, in the
// same order, without walking the mask bit by bit.)
template <typename D, class F>
inline void run(const Plan& p, const Lane& dst, F&& f) {
    D out[MAX_LANES];
    for (uint64_t r = 0; r < p.repeats; ++r) {
        const Bits& b = p.bits(r);
        if (b.none()) continue;
        const uint32_t n = prefix_length(b);
        if (n) {
            for (uint32_t j = 0; j < n; ++j) out[j] = f(r, j);
            for (uint32_t j = 0; j < n; ++j) st<D>(dst.at(r, j), out[j]);
            continue;
        }
        each_lane(b, [&](uint32_t j) { out[j] = f(r, j); });
        each_lane(b, [&](uint32_t j) { st<D>(dst.at(r, j), out[j]); });
    }
}

// -- the dense path -------------------------------------------------------------------------------------
//
// Most calls run on operands whose lanes are consecutive elements within each repeat (block stride
// one block: every count form, and level-0 forms with blkStride 1). For those, lane j of repeat r is
// at base + r * repStride + j * size, and a repeat whose active lanes are a prefix can run as one
// loop that reads a lane and writes it at once, instead of staging the repeat (reads, then writes).
// That gives the same result wherever no source shares bytes with dst except as dst itself: the
// same first byte, the same geometry and element size, so that each lane is read just before the
// same lane is written. dense_ok says when that holds; other calls take the general path.

struct DenseSrc {
    const uint8_t* base;
    Geo g;
    uint32_t size;
    Hull h;  // the bytes the plan's lanes touch (hull_of)
};

inline bool disjoint(const uint8_t* a, const Hull& ha, const uint8_t* b, const Hull& hb) {
    return a + ha.hi <= b + hb.lo || b + hb.hi <= a + ha.lo;
}

// Whether a row (a whole run of lanes at once) may run on one operand: it is the destination itself,
// lane for lane (a row reads lane j before it writes lane j), or apart from it.
inline bool row_safe(const uint8_t* d, const Geo& gd, const Hull& hd, uint32_t dsize, const uint8_t* s, const Geo& gs,
                     const Hull& hs, uint32_t ssize) {
    return (dsize == ssize && d == s && gd.rep == gs.rep) || disjoint(d, hd, s, hs);
}

inline bool dense_ok(const Lane& dst, const Geo& gd, uint32_t dsize, const Hull& hd,
                     std::initializer_list<DenseSrc> srcs) {
    if (gd.blk != 32) return false;
    for (const DenseSrc& s : srcs) {
        if (s.g.blk != 32) return false;
        const bool same = s.base == dst.base && s.g.rep == gd.rep && s.size == dsize;
        if (!same && !disjoint(dst.base, hd, s.base, s.h)) return false;
    }
    return true;
}

// For each repeat: dst lane j = f(r, j), lane after lane (dense operands only; see above).
template <typename D, class F>
inline void dense_run(const Plan& p, const Lane& dst, F&& f) {
    for (uint64_t r = 0; r < p.repeats; ++r) {
        const Bits& b = p.bits(r);
        if (b.none()) continue;
        uint8_t* d = dst.base + r * dst.g.rep;
        const uint32_t n = prefix_length(b);
        if (n) {
            for (uint32_t j = 0; j < n; ++j) st<D>(d + uint64_t(j) * sizeof(D), f(r, j));
        } else {
            D out[MAX_LANES];
            each_lane(b, [&](uint32_t j) { out[j] = f(r, j); });
            each_lane(b, [&](uint32_t j) { st<D>(d + uint64_t(j) * sizeof(D), out[j]); });
        }
    }
}

// The lanes of a plan as one run of consecutive elements, or 0 if they are not one: every repeat
// but the last has all its lanes, the last a prefix of them, and each operand's repeats lie back to
// back (``back_to_back``: every operand's repStride is lanes * its element size). A row routine
// then takes the whole run in one call instead of one call per repeat.
inline uint32_t flat_lanes(const Plan& p, bool back_to_back) {
    if (!back_to_back || p.repeats == 0 || p.repeats * p.lanes > 0xFFFFFFFFull) return 0;
    if (p.repeats > 1 && prefix_length(p.main) != p.lanes) return 0;
    const uint32_t n = prefix_length(p.last);
    return n ? uint32_t((p.repeats - 1) * p.lanes + n) : 0;
}

// An instruction's ``arith``: the character naming the plain per-lane float operation of its Op
// (an IEEE operation, or a compare and a select) that float rows may vectorise; 0 if it has none.
template <class Op, class = void>
struct arith_of {
    static constexpr char value = 0;
};
template <class Op>
struct arith_of<Op, std::void_t<decltype(Op::arith)>> {
    static constexpr char value = Op::arith;
};

// z = x op y for a float or a vector of floats (by reference: a vector passed by value has no ABI
// of its own outside the AVX function).
template <char op, typename V>
__attribute__((always_inline)) inline void arith(const V& x, const V& y, V& z) {
    if constexpr (op == '+') z = x + y;
    else if constexpr (op == '-') z = x - y;
    else if constexpr (op == '*') z = x * y;
    else if constexpr (op == 'M') z = x > y ? x : y;  // (lane-wise select on vectors)
    else if constexpr (op == 'm') z = x < y ? x : y;
    else if constexpr (op == 'L') z = x >= V{} ? x : x * y;  // LeakyRelu, y the slope
    else z = x / y;
}

#ifdef MPNPU_SIMD_X86
typedef float BinV8f __attribute__((vector_size(32)));

// n float lanes d[j] = a[j] op b[j] (b_block: b is one 32-byte block, read again for every block of
// 8 lanes: a per-repeat broadcast, or a tensor-scalar call's scalar in 8 lanes), 8 at a time: the
// same IEEE operation on each lane, hence the bits of the lane loop.
// Each operand is the destination itself or apart from it (a lane is read before it is written).
template <char op>
__attribute__((target("avx"))) inline void binary_row_avx(uint8_t* d, const uint8_t* a, const uint8_t* b, uint32_t n,
                                                         bool b_block) {
    uint32_t j = 0;
    for (; j + 8 <= n; j += 8) {
        BinV8f x, y, z;
        std::memcpy(&x, a + uint64_t(j) * 4, sizeof x);
        std::memcpy(&y, b_block ? b : b + uint64_t(j) * 4, sizeof y);
        arith<op>(x, y, z);
        std::memcpy(d + uint64_t(j) * 4, &z, sizeof z);
    }
    for (; j < n; ++j) {
        float z;
        arith<op>(ld<float>(a + uint64_t(j) * 4), ld<float>(b_block ? b + uint64_t(j % 8) * 4 : b + uint64_t(j) * 4), z);
        st<float>(d + uint64_t(j) * 4, z);
    }
}
#endif

// No whole-run routine (see unary).
struct NoRow {};

// The common shape: dst[lane] = f(src[lane]) under a plan, with checks, memcheck and trace.
// ``row(d, s, n)``, if given, does n consecutive lanes at once on the dense path (it must give the
// very bytes f gives lane by lane).
template <typename D, typename S, class F, class Row = NoRow>
inline void unary(const char* name, const Plan& p, const AscendC::LocalTensor<D>& dst, const Geo& gd,
                  const AscendC::LocalTensor<S>& src, const Geo& gs, const Site& site, F&& f, Row&& row = Row{}) {
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src, 32, site, name, "src");
    if (p.none()) return;
    const Hull hs = hull_of(p, sizeof(S), gs), hd = hull_of(p, sizeof(D), gd);
    touch(src, 'R', hs, site, name);
    touch(dst, 'W', hd, site, name);
    Lane ls = lane_of(src, gs), ld_ = lane_of(dst, gd);
    if (dense_ok(ld_, gd, sizeof(D), hd, {DenseSrc{ls.base, gs, sizeof(S), hs}})) {
        if constexpr (!std::is_same_v<std::decay_t<Row>, NoRow>) {
            if (row_safe(ld_.base, gd, hd, sizeof(D), ls.base, gs, hs, sizeof(S))) {
                const uint32_t flat = flat_lanes(p, gd.rep == p.lanes * sizeof(D) && gs.rep == p.lanes * sizeof(S));
                if (flat) {
                    row(ld_.base, ls.base, flat);
                    return;
                }
                for (uint64_t r = 0; r < p.repeats; ++r) {
                    const Bits& b = p.bits(r);
                    const uint32_t n = b.none() ? 0 : prefix_length(b);
                    if (n) {
                        row(ld_.base + r * gd.rep, ls.base + r * gs.rep, n);
                    } else if (!b.none()) {
                        D out[MAX_LANES];
                        each_lane(b, [&](uint32_t j) { out[j] = f(ld<S>(ls.base + r * gs.rep + uint64_t(j) * sizeof(S))); });
                        each_lane(b, [&](uint32_t j) { st<D>(ld_.base + r * gd.rep + uint64_t(j) * sizeof(D), out[j]); });
                    }
                }
                return;
            }
        }
        dense_run<D>(p, ld_, [&](uint64_t r, uint32_t j) {
            return f(ld<S>(ls.base + r * gs.rep + uint64_t(j) * sizeof(S)));
        });
        return;
    }
    run<D>(p, ld_, [&](uint64_t r, uint32_t j) { return f(ld<S>(ls.at(r, j))); });
}

#ifdef MPNPU_SIMD_X86
using simd::has_avx;
using simd::has_avx2;
#endif

// A whole run of n lanes of a binary instruction at once: row(d, s0, s1, n, s1_block), s1_block when
// s1 is one data block read by every block of the repeat (see binary).
struct NoRow2 {};

template <typename D, typename S0, typename S1, class F, class Row = NoRow2>
inline void binary(const char* name, const Plan& p, const AscendC::LocalTensor<D>& dst, const Geo& gd,
                   const AscendC::LocalTensor<S0>& src0, const Geo& g0, const AscendC::LocalTensor<S1>& src1,
                   const Geo& g1, const Site& site, F&& f, Row&& row = Row{}) {
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    check_operand(src0, 32, site, name, "src0");
    check_operand(src1, 32, site, name, "src1");
    if (p.none()) return;
    const Hull h0 = hull_of(p, sizeof(S0), g0), h1 = hull_of(p, sizeof(S1), g1), hd = hull_of(p, sizeof(D), gd);
    touch(src0, 'R', h0, site, name);
    touch(src1, 'R', h1, site, name);
    touch(dst, 'W', hd, site, name);
    Lane l0 = lane_of(src0, g0), l1 = lane_of(src1, g1), lD = lane_of(dst, gd);
    constexpr bool has_row = !std::is_same_v<std::decay_t<Row>, NoRow2>;
    // Repeat by repeat as dense_run goes: a row for the repeats whose lanes are a prefix, lane by
    // lane (dense_run's own code) for the others.
    auto rows = [&](bool s1_block) {
        constexpr uint32_t per1 = 32 / sizeof(S1);
        if constexpr (has_row) {
            const uint32_t flat = s1_block ? 0 : flat_lanes(p, gd.rep == p.lanes * sizeof(D) &&
                                                                  g0.rep == p.lanes * sizeof(S0) &&
                                                                  g1.rep == p.lanes * sizeof(S1));
            if (flat) {
                row(lD.base, l0.base, l1.base, flat, false);
                return;
            }
        }
        for (uint64_t r = 0; r < p.repeats; ++r) {
            const Bits& b = p.bits(r);
            if (b.none()) continue;
            uint8_t* d = lD.base + r * gd.rep;
            const uint8_t* a = l0.base + r * g0.rep;
            const uint8_t* c = l1.base + r * g1.rep;
            const uint32_t n = prefix_length(b);
            if constexpr (has_row) {
                if (n) {
                    row(d, a, c, n, s1_block);
                    continue;
                }
            }
            D out[MAX_LANES];
            each_lane(b, [&](uint32_t j) {
                out[j] = f(ld<S0>(a + uint64_t(j) * sizeof(S0)),
                           ld<S1>(c + uint64_t(s1_block ? j % per1 : j) * sizeof(S1)));
            });
            each_lane(b, [&](uint32_t j) { st<D>(d + uint64_t(j) * sizeof(D), out[j]); });
        }
    };
    if (dense_ok(lD, gd, sizeof(D), hd, {DenseSrc{l0.base, g0, sizeof(S0), h0}, DenseSrc{l1.base, g1, sizeof(S1), h1}})) {
        if constexpr (has_row) {
            if (row_safe(lD.base, gd, hd, sizeof(D), l0.base, g0, h0, sizeof(S0)) &&
                row_safe(lD.base, gd, hd, sizeof(D), l1.base, g1, h1, sizeof(S1))) {
                rows(false);
                return;
            }
        }
        dense_run<D>(p, lD, [&](uint64_t r, uint32_t j) {
            return f(ld<S0>(l0.base + r * g0.rep + uint64_t(j) * sizeof(S0)),
                     ld<S1>(l1.base + r * g1.rep + uint64_t(j) * sizeof(S1)));
        });
        return;
    }
    if (dense_ok(lD, gd, sizeof(D), hd, {DenseSrc{l0.base, g0, sizeof(S0), h0}}) && g1.blk == 0 &&
        disjoint(lD.base, hd, l1.base, h1)) {
        // src1 one data block read by every block of the repeat (a per-repeat broadcast)
        if constexpr (has_row) {
            if (row_safe(lD.base, gd, hd, sizeof(D), l0.base, g0, h0, sizeof(S0))) {
                rows(true);
                return;
            }
        }
        constexpr uint32_t per1 = 32 / sizeof(S1);
        dense_run<D>(p, lD, [&](uint64_t r, uint32_t j) {
            return f(ld<S0>(l0.base + r * g0.rep + uint64_t(j) * sizeof(S0)),
                     ld<S1>(l1.base + r * g1.rep + uint64_t(j % per1) * sizeof(S1)));
        });
        return;
    }
    run<D>(p, lD, [&](uint64_t r, uint32_t j) { return f(ld<S0>(l0.at(r, j)), ld<S1>(l1.at(r, j))); });
}

// dst[lane] = f(r, j) with no source tensor (Duplicate, CreateVecIndex). ``row(d, n)``, if given,
// writes n consecutive lanes at once (the very bytes f gives them).
template <typename D, class F, class Row = NoRow>
inline void fill(const char* name, const Plan& p, const AscendC::LocalTensor<D>& dst, const Geo& gd,
                 const Site& site, F&& f, Row&& row = Row{}) {
    start(site, name);
    check_operand(dst, 32, site, name, "dst");
    if (p.none()) return;
    touch(dst, 'W', hull_of(p, sizeof(D), gd), site, name);
    Lane lD = lane_of(dst, gd);
    if constexpr (!std::is_same_v<std::decay_t<Row>, NoRow>) {
        if (gd.blk == 32) {
            const uint32_t flat = flat_lanes(p, gd.rep == p.lanes * sizeof(D));
            if (flat) {
                row(lD.base, flat);
                return;
            }
        }
    }
    if (gd.blk == 32) {
        dense_run<D>(p, lD, f);
        return;
    }
    run<D>(p, lD, f);
}

// Lanes per repeat for an instruction whose widest operand is ``size`` bytes.
constexpr uint32_t lanes_for(uint32_t size) { return REPEAT_BYTES / size; }

}  // namespace vec
}  // namespace mpnpu

#endif  // MPNPU_VECTOR_ENGINE_H
