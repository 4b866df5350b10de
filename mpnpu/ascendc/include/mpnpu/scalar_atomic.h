// Scalar atomics on one GM element (AtomicAdd, AtomicMax, AtomicMin, AtomicExch, AtomicCas): a
// read-modify-write of the element that no other core's access can split, returning the value
// before it. GM is memory shared by the core processes, so the CPU's atomic instructions on it are
// atomic across cores too. Each is one GM access of the S pipe, memchecked and traced as an atomic
// (two cores' atomics on one element never race; an atomic and a plain copy of it without a sync
// do).
#ifndef MPNPU_SCALAR_ATOMIC_H
#define MPNPU_SCALAR_ATOMIC_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "native/rt.h"

namespace mpnpu {

template <typename T>
inline constexpr bool scalar_atomic_type = std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> ||
                                           std::is_same_v<T, float> || std::is_same_v<T, int64_t> ||
                                           std::is_same_v<T, uint64_t>;

// The element's bits as an unsigned integer of its size (what the CPU's atomics work on).
template <typename T>
using atomic_bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

// Replaces *address by op(old) atomically (a compare-and-swap loop); returns the old value.
template <typename T, typename Op>
inline T atomic_update(T* address, Op op, const Site& site, const char* what) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "a scalar atomic works on 4- or 8-byte elements");
    hold_point(site, 0);
    gm_access('A', P_S, address, address, sizeof(T), 0, 1, sizeof(T), site, what);
    using U = atomic_bits<T>;
    U* bits = reinterpret_cast<U*>(address);
    U seen = __atomic_load_n(bits, __ATOMIC_SEQ_CST);
    T old;
    for (;;) {
        std::memcpy(&old, &seen, sizeof(T));
        T next = op(old);
        U want;
        std::memcpy(&want, &next, sizeof(T));
        if (__atomic_compare_exchange_n(bits, &seen, want, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) break;
    }
    hold_point(site, 1);
    return old;
}

}  // namespace mpnpu

namespace AscendC {

template <typename T>
inline T AtomicAdd(__gm__ T* address, T value, MPNPU_SITE) {
    static_assert(mpnpu::scalar_atomic_type<T>, "AtomicAdd: int32_t, uint32_t, float, int64_t or uint64_t");
    return mpnpu::atomic_update(address, [value](T old) { return T(old + value); }, site, "AtomicAdd");
}

template <typename T>
inline T AtomicMax(__gm__ T* address, T value, MPNPU_SITE) {
    static_assert(mpnpu::scalar_atomic_type<T>, "AtomicMax: int32_t, uint32_t, float, int64_t or uint64_t");
    return mpnpu::atomic_update(address, [value](T old) { return old < value ? value : old; }, site, "AtomicMax");
}

template <typename T>
inline T AtomicMin(__gm__ T* address, T value, MPNPU_SITE) {
    static_assert(mpnpu::scalar_atomic_type<T>, "AtomicMin: int32_t, uint32_t, float, int64_t or uint64_t");
    return mpnpu::atomic_update(address, [value](T old) { return value < old ? value : old; }, site, "AtomicMin");
}

template <typename T>
inline T AtomicExch(__gm__ T* address, T value, MPNPU_SITE) {
    static_assert(std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>, "AtomicExch: uint32_t or uint64_t");
    return mpnpu::atomic_update(address, [value](T) { return value; }, site, "AtomicExch");
}

template <typename T>
inline T AtomicCas(__gm__ T* address, T value1, T value2, MPNPU_SITE) {
    static_assert(std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>, "AtomicCas: uint32_t or uint64_t");
    return mpnpu::atomic_update(address, [value1, value2](T old) { return old == value1 ? value2 : old; }, site,
                                "AtomicCas");
}

}  // namespace AscendC

#endif  // MPNPU_SCALAR_ATOMIC_H
