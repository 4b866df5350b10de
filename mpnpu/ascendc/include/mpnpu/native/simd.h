// What the CPU running a kernel library can do, and the SIMD helpers the vector and cube engines
// share. Internal to mpnpu (not part of the Ascend C API): the wide paths are chosen at run time,
// so one library serves every x86-64 machine, and each gives the same bits as the scalar code.
#ifndef MPNPU_SIMD_H
#define MPNPU_SIMD_H

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MPNPU_SIMD_X86 1
#include <immintrin.h>

namespace mpnpu {
namespace simd {

inline bool has_avx() {
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx") != 0;
    }();
    return yes;
}
inline bool has_avx2() {
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    }();
    return yes;
}

// t[i] lane k = r[k] lane i: an 8 x 8 float transpose (arrays: a vector passed by value has no ABI
// of its own outside an AVX function).
__attribute__((target("avx"), always_inline)) inline void transpose8x8(const __m256 r[8], __m256 t[8]) {
    const __m256 u0 = _mm256_unpacklo_ps(r[0], r[1]), u1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 u2 = _mm256_unpacklo_ps(r[2], r[3]), u3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 u4 = _mm256_unpacklo_ps(r[4], r[5]), u5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 u6 = _mm256_unpacklo_ps(r[6], r[7]), u7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 v0 = _mm256_shuffle_ps(u0, u2, 0x44), v1 = _mm256_shuffle_ps(u0, u2, 0xEE);
    const __m256 v2 = _mm256_shuffle_ps(u1, u3, 0x44), v3 = _mm256_shuffle_ps(u1, u3, 0xEE);
    const __m256 v4 = _mm256_shuffle_ps(u4, u6, 0x44), v5 = _mm256_shuffle_ps(u4, u6, 0xEE);
    const __m256 v6 = _mm256_shuffle_ps(u5, u7, 0x44), v7 = _mm256_shuffle_ps(u5, u7, 0xEE);
    t[0] = _mm256_permute2f128_ps(v0, v4, 0x20);
    t[1] = _mm256_permute2f128_ps(v1, v5, 0x20);
    t[2] = _mm256_permute2f128_ps(v2, v6, 0x20);
    t[3] = _mm256_permute2f128_ps(v3, v7, 0x20);
    t[4] = _mm256_permute2f128_ps(v0, v4, 0x31);
    t[5] = _mm256_permute2f128_ps(v1, v5, 0x31);
    t[6] = _mm256_permute2f128_ps(v2, v6, 0x31);
    t[7] = _mm256_permute2f128_ps(v3, v7, 0x31);
}

}  // namespace simd
}  // namespace mpnpu
#endif

#endif  // MPNPU_SIMD_H
