// The cube's arithmetic on a CPU: C[m, n] += A[m, k] x B[k, n] on float32 row-major buffers.
//
// B is packed into panels of 16 columns (k x 16, contiguous), then a 6 x 16 block of C (6 x 8
// on the baseline) is kept in registers while k runs: two vectors of B and six broadcast values
// of A per step. The kernel is
// written once with GCC vector types and compiled twice: for AVX2 + FMA (chosen at run time when
// the CPU has them) and for the baseline x86-64 SSE2 (or whatever the target's default is), so a
// kernel library built at -O2 without -march flags still runs the wide version where it can.
// Accumulation is in float32, in k order per element (as the cube accumulates into L0C).
#ifndef MPNPU_CUBE_GEMM_H
#define MPNPU_CUBE_GEMM_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../native/simd.h"
#include "../types.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mpnpu {
namespace gemm {

constexpr int MR = 6;   // rows of C per register block
constexpr int NR = 16;  // columns of C per register block (one packed panel of B)

// Packs B [k x n] (row stride ldb) into ceil(n / 16) panels of k x 16, zero-padded.
inline void pack_b(const float* b, int k, int n, int ldb, float* out) {
    for (int j0 = 0; j0 < n; j0 += NR) {
        int w = n - j0 < NR ? n - j0 : NR;
        float* p = out + size_t(j0) * size_t(k);
        for (int kk = 0; kk < k; ++kk) {
            const float* row = b + size_t(kk) * size_t(ldb) + j0;
            float* dst = p + size_t(kk) * NR;
            int j = 0;
            for (; j < w; ++j) dst[j] = row[j];
            for (; j < NR; ++j) dst[j] = 0.0f;
        }
    }
}

// The register block: 6 rows of C x 2 vectors of W floats (12 accumulators, 2 of B, 1 of A),
// over the columns [off, off + 2W) of one 16-wide panel. Written out by hand (no arrays), so that
// -O2 keeps every accumulator in a register.
#define MPNPU_GEMM_BLOCK(NAME, ATTR, W)                                                                      \
    ATTR inline void NAME(const float* a, int lda, int h, const float* p, int k, int off, float* c, int ldc,  \
                          int w) {                                                                           \
        typedef float V __attribute__((vector_size(W * 4)));                                                 \
        const float* a0 = a;                                                                                 \
        const float* a1 = a + (h > 1 ? 1 : 0) * lda;                                                         \
        const float* a2 = a + (h > 2 ? 2 : 0) * lda;                                                         \
        const float* a3 = a + (h > 3 ? 3 : 0) * lda;                                                         \
        const float* a4 = a + (h > 4 ? 4 : 0) * lda;                                                         \
        const float* a5 = a + (h > 5 ? 5 : 0) * lda;                                                         \
        V c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {};                                        \
        V c30 = {}, c31 = {}, c40 = {}, c41 = {}, c50 = {}, c51 = {};                                        \
        const float* q = p + off;                                                                            \
        for (int kk = 0; kk < k; ++kk, q += NR) {                                                            \
            V b0, b1;                                                                                        \
            std::memcpy(&b0, q, sizeof b0);                                                                  \
            std::memcpy(&b1, q + W, sizeof b1);                                                              \
            V x = V{} + a0[kk];                                                                              \
            c00 += x * b0; c01 += x * b1;                                                                    \
            x = V{} + a1[kk];                                                                                \
            c10 += x * b0; c11 += x * b1;                                                                    \
            x = V{} + a2[kk];                                                                                \
            c20 += x * b0; c21 += x * b1;                                                                    \
            x = V{} + a3[kk];                                                                                \
            c30 += x * b0; c31 += x * b1;                                                                    \
            x = V{} + a4[kk];                                                                                \
            c40 += x * b0; c41 += x * b1;                                                                    \
            x = V{} + a5[kk];                                                                                \
            c50 += x * b0; c51 += x * b1;                                                                    \
        }                                                                                                    \
        V rows[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};            \
        for (int r = 0; r < h; ++r) {                                                                        \
            float out[2 * W];                                                                                \
            std::memcpy(out, rows[r], sizeof out);                                                           \
            float* crow = c + size_t(r) * size_t(ldc) + off;                                                 \
            for (int j = 0; j < w - off && j < 2 * W; ++j) crow[j] += out[j];                                \
        }                                                                                                    \
    }

#if defined(__x86_64__) || defined(__i386__)
#define MPNPU_GEMM_X86 1
MPNPU_GEMM_BLOCK(block_avx2, __attribute__((target("avx2,fma"))), 8)
#endif
MPNPU_GEMM_BLOCK(block_base, , 4)
#undef MPNPU_GEMM_BLOCK

// Whether the AVX2 + FMA kernel runs here (MPNPU_GEMM_BASELINE forces the baseline one).
inline bool wide() {
#if defined(MPNPU_GEMM_X86) && !defined(MPNPU_GEMM_BASELINE)
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return yes;
#else
    return false;
#endif
}

// -- element conversion to float32 ------------------------------------------------------------------

inline bool has_f16c() {
#if defined(MPNPU_GEMM_X86) && !defined(MPNPU_GEMM_BASELINE)
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
    }();
    return yes;
#else
    return false;
#endif
}

#ifdef MPNPU_GEMM_X86
__attribute__((target("f16c,avx"))) inline void f16_row_f16c(const uint16_t* s, float* d, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
    for (; i < n; ++i) d[i] = f16_bits_to_f32(s[i]);
}
#endif

#ifdef MPNPU_GEMM_X86
// bfloat16 bits are the upper half of the float's: widen and shift, 8 at a time; returns the
// elements done.
__attribute__((target("avx2"))) inline size_t bf16_row_avx2(const uint16_t* s, float* d, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_slli_epi32(w, 16));
    }
    return i;
}
#endif

// n contiguous elements of T as float32 (exact for every input type).
template <typename T>
inline void to_float_row(const T* s, float* d, size_t n) {
    if constexpr (std::is_same_v<T, float>) {
        std::memcpy(d, s, n * sizeof(float));
    } else if constexpr (std::is_same_v<T, half>) {
        const uint16_t* bits = reinterpret_cast<const uint16_t*>(s);
#ifdef MPNPU_GEMM_X86
        if (has_f16c()) {
            f16_row_f16c(bits, d, n);
            return;
        }
#endif
        for (size_t i = 0; i < n; ++i) d[i] = f16_bits_to_f32(bits[i]);
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
        const uint16_t* bits = reinterpret_cast<const uint16_t*>(s);
        size_t i = 0;
#ifdef MPNPU_GEMM_X86
        if (wide()) i = bf16_row_avx2(bits, d, n);
#endif
        for (; i < n; ++i) {
            uint32_t u = uint32_t(bits[i]) << 16;
            std::memcpy(d + i, &u, 4);
        }
    } else {
        for (size_t i = 0; i < n; ++i) d[i] = float(s[i]);
    }
}

#ifdef MPNPU_GEMM_X86
// Round to nearest even, as f32_to_f16_bits (checked bit for bit over every float32).
__attribute__((target("f16c,avx"))) inline void f32_row_f16c(const float* s, uint16_t* d, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; ++i) d[i] = f32_to_f16_bits(s[i]);
}
#endif

// n float32 values as T, each rounded to nearest even (the same bits as from_float<T>).
template <typename T>
inline void from_float_row(const float* s, T* d, size_t n) {
    if constexpr (std::is_same_v<T, half>) {
#ifdef MPNPU_GEMM_X86
        if (has_f16c()) {
            f32_row_f16c(s, reinterpret_cast<uint16_t*>(d), n);
            return;
        }
#endif
    }
    for (size_t i = 0; i < n; ++i) d[i] = from_float<T>(s[i]);
}

#ifdef MPNPU_SIMD_X86
// The whole 8-column steps of pack_panel_transposed for a whole panel; returns the columns done.
__attribute__((target("avx"))) inline int64_t pack_panel_transposed_avx(const float* line, int64_t k, float* panel) {
    int64_t kk = 0;
    for (; kk + 8 <= k; kk += 8)
        for (int64_t h = 0; h < NR; h += 8) {
            __m256 r[8], t[8];
            for (int64_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(line + (h + i) * k + kk);
            simd::transpose8x8(r, t);
            for (int64_t j = 0; j < 8; ++j) _mm256_storeu_ps(panel + (kk + j) * NR + h, t[j]);
        }
    return kk;
}
#endif

// One packed panel (pack_b's layout: k rows of NR floats, zero past w) from w <= NR rows of B^T,
// row q at line + q * k: a transpose, 8 x 8 at a time with AVX where the panel is whole.
inline void pack_panel_transposed(const float* line, int64_t k, int64_t w, float* panel) {
    int64_t kk = 0;
#ifdef MPNPU_SIMD_X86
    if (w == NR && simd::has_avx()) {
        kk = pack_panel_transposed_avx(line, k, panel);
    }
#endif
    for (; kk < k; ++kk) {
        float* const dst = panel + kk * NR;
        int64_t q = 0;
        for (; q < w; ++q) dst[q] = line[q * k + kk];
        for (; q < NR; ++q) dst[q] = 0.0f;
    }
}

// Room for B [k x n] packed as pack_b packs it (one buffer per thread, reused).
inline float* panel_buffer(int n, int k) {
    thread_local std::vector<float> panels;
    size_t need = size_t((n + NR - 1) / NR) * NR * size_t(k);
    if (panels.size() < need) panels.resize(need);
    return panels.data();
}

// C[m x n] (row stride ldc) += A[m x k] (lda) x B, B given packed (pack_b's layout).
inline void sgemm_packed(int m, int n, int k, const float* a, int lda, const float* panels, float* c, int ldc) {
    if (m <= 0 || n <= 0 || k <= 0) return;
    const bool avx = wide();
    (void)avx;
    for (int j0 = 0; j0 < n; j0 += NR) {
        const float* p = panels + size_t(j0) * size_t(k);
        int w = n - j0 < NR ? n - j0 : NR;
        for (int i0 = 0; i0 < m; i0 += MR) {
            int h = m - i0 < MR ? m - i0 : MR;
            const float* ab = a + size_t(i0) * size_t(lda);
            float* cb = c + size_t(i0) * size_t(ldc) + j0;
#ifdef MPNPU_GEMM_X86
            if (avx) {
                block_avx2(ab, lda, h, p, k, 0, cb, ldc, w);
                continue;
            }
#endif
            block_base(ab, lda, h, p, k, 0, cb, ldc, w);
            if (w > 8) block_base(ab, lda, h, p, k, 8, cb, ldc, w);
        }
    }
}

// C[m x n] (row stride ldc) += A[m x k] (lda) x B[k x n] (ldb).
inline void sgemm(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc) {
    if (m <= 0 || n <= 0 || k <= 0) return;
    float* panels = panel_buffer(n, k);
    pack_b(b, k, n, ldb, panels);
    sgemm_packed(m, n, k, a, lda, panels, c, ldc);
}

}  // namespace gemm
}  // namespace mpnpu

#endif  // MPNPU_CUBE_GEMM_H
