// The matmul computation itself, shared by MatmulImpl (on the cube core that calls it) and the
// cube core's matmul server (requests from its vector cores, mpnpu/cube/matmul_kfc.h).
//
// A Setup is everything a computation needs (the tiling, the shapes, where A, B and the bias are
// and whether A / B are transposed); it is plain data, so a vector core can send it to its cube
// core. The C tiles: ceil(singleM / baseM) x ceil(singleN / baseN) of baseM x baseN (smaller at the
// right and bottom edges), in the tiling's iterateOrder (0: down M first, 1: along N first). One
// tile is computed over the whole singleK in float32 (int32 for int8 inputs): A and B are read
// from GM into float buffers (traced as PIPE_MTE2 reads at the call's kernel line), multiplied by
// mpnpu/cube/gemm.h, and stored converted to C's type (a PIPE_FIX write; atomic when asked).
#ifndef MPNPU_CUBE_MATMUL_ENGINE_H
#define MPNPU_CUBE_MATMUL_ENGINE_H

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "../../kernel_tiling/kernel_tiling.h"
#include "../data_copy.h"
#include "../native/rt.h"
#include "../types.h"
#include "gemm.h"

namespace mpnpu {
namespace mm {

struct Setup {
    TCubeTiling tiling;
    int32_t inited;
    int32_t orgM, orgN, orgKa, orgKb, orgKc;
    int32_t singleM, singleN, singleK;
    int32_t transA, transB, hasBias;
    const uint8_t* a_base;  // the GlobalTensor's buffer (memcheck's tensor) and the first element
    const uint8_t* a;
    const uint8_t* b_base;
    const uint8_t* b;
    const uint8_t* bias_base;
    const uint8_t* bias;
    // where SetTensorA / SetTensorB were called (file relative to site_anchor, line), for reports
    int64_t a_file, b_file;
    int32_t a_line, b_line;
};

// An anchor in this library: a site's file name travels as its distance from here (the same
// library is loaded in every core process, at addresses of its own).
inline const char site_anchor[1] = {0};

inline int64_t rel(const char* p) {
    return p ? int64_t(reinterpret_cast<uintptr_t>(p)) - int64_t(reinterpret_cast<uintptr_t>(site_anchor)) : 0;
}
inline const char* unrel(int64_t d) {
    return reinterpret_cast<const char*>(uintptr_t(int64_t(reinterpret_cast<uintptr_t>(site_anchor)) + d));
}

inline void init_setup(Setup& s, const TCubeTiling& t) {
    std::memset(static_cast<void*>(&s), 0, sizeof s);
    s.tiling = t;
    s.inited = 1;
    s.orgM = t.M;
    s.orgN = t.N;
    s.orgKa = t.Ka;
    s.orgKb = t.Kb;
    s.singleM = t.singleCoreM;
    s.singleN = t.singleCoreN;
    s.singleK = t.singleCoreK;
    s.hasBias = t.isBias;
}

struct Tile {
    int32_t m0, n0, tm, tn;
};

inline int32_t cdiv(int32_t a, int32_t b) { return b > 0 ? (a + b - 1) / b : 0; }

inline int32_t tile_count(const Setup& s) {
    return cdiv(s.singleM, s.tiling.baseM) * cdiv(s.singleN, s.tiling.baseN);
}

inline Tile tile_of(const Setup& s, int32_t t) {
    const int32_t mt = cdiv(s.singleM, s.tiling.baseM), nt = cdiv(s.singleN, s.tiling.baseN);
    int32_t mi, ni;
    if (s.tiling.iterateOrder == 1) {
        ni = t % nt;
        mi = t / nt;
    } else {
        mi = t % mt;
        ni = t / mt;
    }
    Tile r;
    r.m0 = mi * s.tiling.baseM;
    r.n0 = ni * s.tiling.baseN;
    r.tm = s.singleM - r.m0 < s.tiling.baseM ? s.singleM - r.m0 : s.tiling.baseM;
    r.tn = s.singleN - r.n0 < s.tiling.baseN ? s.singleN - r.n0 : s.tiling.baseN;
    return r;
}

inline void check_setup(const Setup& s, const Site& site, const char* what) {
    if (!s.inited)
        api_error(site, "%s: the Matmul has no tiling (REGIST_MATMUL_OBJ with the tiling, or Init(&tiling) first)", what);
    const TCubeTiling& t = s.tiling;
    if (t.baseM <= 0 || t.baseN <= 0 || t.baseK <= 0)
        api_error(site, "%s: the tiling's baseM, baseN and baseK must be positive (%d, %d, %d)", what, t.baseM, t.baseN,
                  t.baseK);
    if (s.singleM <= 0 || s.singleN <= 0 || s.singleK <= 0)
        api_error(site, "%s: singleCoreM, singleCoreN and singleCoreK must be positive (%d, %d, %d)", what, s.singleM,
                  s.singleN, s.singleK);
    if (!s.a) api_error(site, "%s: no A matrix (SetTensorA first)", what);
    if (!s.b) api_error(site, "%s: no B matrix (SetTensorB first)", what);
    if (s.hasBias && !s.bias)
        api_error(site, "%s: the tiling enables a bias (isBias) but SetBias was not called (or call DisableBias)", what);
}

// "Matmul::IterateAll (reading A)": the call and the operand, for memcheck's report.
inline const char* what_of(const char* call, const char* operand) {
    thread_local char buf[160];
    std::snprintf(buf, sizeof buf, "Matmul::%s (%s)", call, operand);
    return buf;
}

// "Matmul::IterateAll (reading A of SetTensorA at op_kernel/mm.cpp:41)".
inline const char* what_set(const char* call, const char* operand, const char* setter, int64_t file, int32_t line) {
    if (!file) return what_of(call, operand);
    thread_local char buf[320];
    std::string where = site_name(Site{unrel(file), line, ""});
    std::snprintf(buf, sizeof buf, "Matmul::%s (reading %s of %s at %s)", call, operand, setter, where.c_str());
    return buf;
}

template <typename AT, typename BT, typename BiasT>
using acc_t = std::conditional_t<std::is_same_v<AT, int8_t>, int32_t, float>;

// Computes tile ``t`` into ``out`` (tm x tn, row stride tn); ``partial``: add onto what ``out`` holds.
template <typename AT, typename BT, typename BiasT, typename Acc>
inline void compute_tile(const Setup& s, int32_t t, std::vector<Acc>& out, bool partial, const Site& site,
                         const char* call) {
    const Tile tile = tile_of(s, t);
    const int64_t K = s.singleK, tm = tile.tm, tn = tile.tn;
    const AT* A = reinterpret_cast<const AT*>(s.a);
    const BT* B = reinterpret_cast<const BT*>(s.b);
    // A [orgM, orgKa] row-major (transposed: [orgKa, orgM]); B [orgKb, orgN] (transposed: [orgN, orgKb])
    const int64_t lda = s.transA ? s.orgM : s.orgKa, ldb = s.transB ? s.orgKb : s.orgN;
    const AT* a0 = s.transA ? A + tile.m0 : A + int64_t(tile.m0) * lda;
    const BT* b0 = s.transB ? B + int64_t(tile.n0) * ldb : B + tile.n0;
    MpnpuEvent *ra = nullptr, *rb = nullptr, *rbias = nullptr;
    if (s.transA)
        ra = gm_access('R', P_MTE2, s.a_base, a0, uint64_t(tm) * sizeof(AT), uint64_t(lda) * sizeof(AT), uint64_t(K),
                       sizeof(AT), site, what_set(call, "A", "SetTensorA", s.a_file, s.a_line));
    else
        ra = gm_access('R', P_MTE2, s.a_base, a0, uint64_t(K) * sizeof(AT), uint64_t(lda) * sizeof(AT), uint64_t(tm),
                       sizeof(AT), site, what_set(call, "A", "SetTensorA", s.a_file, s.a_line));
    if (s.transB)
        rb = gm_access('R', P_MTE2, s.b_base, b0, uint64_t(K) * sizeof(BT), uint64_t(ldb) * sizeof(BT), uint64_t(tn),
                       sizeof(BT), site, what_set(call, "B", "SetTensorB", s.b_file, s.b_line));
    else
        rb = gm_access('R', P_MTE2, s.b_base, b0, uint64_t(tn) * sizeof(BT), uint64_t(ldb) * sizeof(BT), uint64_t(K),
                       sizeof(BT), site, what_set(call, "B", "SetTensorB", s.b_file, s.b_line));
    const BiasT* bias = s.hasBias ? reinterpret_cast<const BiasT*>(s.bias) + tile.n0 : nullptr;
    if (bias)
        rbias = gm_access('R', P_MTE2, s.bias_base, bias, uint64_t(tn) * sizeof(BiasT), 0, 1, sizeof(BiasT), site,
                          what_of(call, "reading the bias"));
    out.resize(size_t(tm * tn));
    if (!partial) {
        for (int64_t i = 0; i < tm; ++i)
            for (int64_t j = 0; j < tn; ++j) out[size_t(i * tn + j)] = bias ? Acc(to_float(bias[j])) : Acc(0);
    } else if (bias) {
        for (int64_t i = 0; i < tm; ++i)
            for (int64_t j = 0; j < tn; ++j) out[size_t(i * tn + j)] += Acc(to_float(bias[j]));
    }
    if constexpr (std::is_same_v<Acc, int32_t>) {
        for (int64_t i = 0; i < tm; ++i)
            for (int64_t kk = 0; kk < K; ++kk) {
                int32_t av = s.transA ? a0[kk * lda + i] : a0[i * lda + kk];
                const int64_t base = i * tn;
                for (int64_t j = 0; j < tn; ++j)
                    out[size_t(base + j)] += av * int32_t(s.transB ? b0[j * ldb + kk] : b0[kk * ldb + j]);
            }
    } else {
        thread_local std::vector<float> af_buf, line_buf;
        af_buf.resize(size_t(tm * K));
        line_buf.resize(size_t(gemm::NR * (tm > K ? tm : K)));
        // (plain pointers: a thread_local named in a loop costs a TLS lookup per use in a shared library)
        float* const af = af_buf.data();
        float* const line = line_buf.data();
        // B goes straight into sgemm's packed panels (16 columns each, k-major, zero past n): the
        // same panels as converting B whole and packing it, without the two passes in between.
        float* const panels = gemm::panel_buffer(int(tn), int(K));
        // every source run is contiguous (a row of A or B, or of the transposed matrix): converted
        // whole, then scattered where the layout wants it, eight runs at a time
        if (s.transA) {  // A^T rows: kk fixed, i running
            for (int64_t kk = 0; kk < K; kk += 8) {
                const int64_t nk = K - kk < 8 ? K - kk : 8;
                for (int64_t q = 0; q < nk; ++q) gemm::to_float_row(a0 + (kk + q) * lda, line + q * tm, size_t(tm));
                for (int64_t i = 0; i < tm; ++i)
                    for (int64_t q = 0; q < nk; ++q) af[size_t(i * K + kk + q)] = line[size_t(q * tm + i)];
            }
        } else {
            for (int64_t i = 0; i < tm; ++i) gemm::to_float_row(a0 + i * lda, af + i * K, size_t(K));
        }
        constexpr int64_t NR = gemm::NR;
        for (int64_t j0 = 0; j0 < tn; j0 += NR) {
            const int64_t w = tn - j0 < NR ? tn - j0 : NR;
            float* const panel = panels + size_t(j0 * K);
            if (s.transB) {  // B^T rows: column j0 + q of B, kk running
                for (int64_t q = 0; q < w; ++q) gemm::to_float_row(b0 + (j0 + q) * ldb, line + q * K, size_t(K));
                gemm::pack_panel_transposed(line, K, w, panel);
            } else {
                for (int64_t kk = 0; kk < K; ++kk) {
                    float* const dst = panel + size_t(kk * NR);
                    gemm::to_float_row(b0 + kk * ldb + j0, dst, size_t(w));
                    for (int64_t q = w; q < NR; ++q) dst[q] = 0.0f;
                }
            }
        }
        gemm::sgemm_packed(int(tm), int(tn), int(K), af, int(K), panels, out.data(), int(tn));
    }
    done(ra);
    done(rb);
    done(rbias);
}

// Stores a computed tile (tm x tn) at ``dst`` (rows ``ldc`` elements apart), converted to CT;
// enAtomic: 0 plain, 1 add, 2 max, 3 min.
template <typename CT, typename Acc>
inline void store_tile(const Tile& tile, const std::vector<Acc>& acc, const uint8_t* base, CT* dst, int64_t ldc,
                       int enAtomic, bool relu, const Site& site, const char* call) {
    CoreState& c = core();
    const int saved = c.atomic_op;
    if (enAtomic < 0 || enAtomic > 3) api_error(site, "Matmul::%s: enAtomic must be 0, 1, 2 or 3 (got %d)", call, enAtomic);
    if (enAtomic) c.atomic_op = enAtomic;
    MpnpuEvent* rec = gm_access(gm_write_kind(), P_FIX, base, dst, uint64_t(tile.tn) * sizeof(CT), uint64_t(ldc) * sizeof(CT),
                            uint64_t(tile.tm), sizeof(CT), site, what_of(call, "writing C"));
    thread_local std::vector<CT> row_buf;
    row_buf.resize(size_t(tile.tn));
    CT* const row = row_buf.data();
    const int op = core().atomic_op;
    for (int32_t i = 0; i < tile.tm; ++i) {
        const Acc* src = acc.data() + int64_t(i) * tile.tn;
        if constexpr (std::is_same_v<Acc, float> && !std::is_integral_v<CT>) {
            if (!relu) {
                gemm::from_float_row(src, row, size_t(tile.tn));
                store_gm(dst + int64_t(i) * ldc, row, uint64_t(tile.tn), op);
                continue;
            }
        }
        for (int32_t j = 0; j < tile.tn; ++j) {
            Acc v = src[j];
            if (relu && v < Acc(0)) v = Acc(0);
            if constexpr (std::is_integral_v<CT>) row[size_t(j)] = static_cast<CT>(v);
            else row[size_t(j)] = from_float<CT>(float(v));
        }
        store_gm(dst + int64_t(i) * ldc, row, uint64_t(tile.tn), op);
    }
    done(rec);
    c.atomic_op = saved;
}

// Where tile ``tile`` of a C output goes: enSequentialWrite packs each tile as baseM x baseN
// (rows baseN apart; IterateAll puts tile t at t * baseM * baseN); otherwise it lands at its
// place in the singleM x singleN result, rows ``ld`` elements apart.
inline int64_t tile_offset(const Setup& s, const Tile& tile, int32_t t, bool sequential, bool all, int64_t ld) {
    if (sequential) return all ? int64_t(t) * s.tiling.baseM * s.tiling.baseN : 0;
    return int64_t(tile.m0) * ld + tile.n0;
}

}  // namespace mm
}  // namespace mpnpu

#endif  // MPNPU_CUBE_MATMUL_ENGINE_H
