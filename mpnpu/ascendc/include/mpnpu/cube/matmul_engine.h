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
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "../../kernel_tiling/kernel_tiling.h"
#include "../data_copy.h"
#include "../native/rt.h"
#include "../types.h"
#include "gemm.h"
#include "matmul_config.h"
#include "sparse_index.h"

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
    // A / B given as a TSCM LocalTensor: in L1 (a / b point into it), within the bytes [lo, hi) of
    // L1 its buffer has
    int32_t a_l1, b_l1;
    uint64_t a_lo, a_hi, b_lo, b_hi;
    // SetQuantScalar (1: quant_scalar) / SetQuantVector (2: one uint64_t per column of C at quant in
    // the GM tensor quant_base), 0: neither (see Quant below)
    int32_t quant_mode, quant_pad;
    uint64_t quant_scalar;
    const uint8_t* quant_base;
    const uint8_t* quant;
    // SetSparseIndex (a B of SparseMatmulType): the index matrix's GM tensor and its first byte, and
    // where it was called
    const uint8_t* idx_base;
    const uint8_t* idx;
    int64_t idx_file;
    int32_t idx_line, idx_pad;
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
    // The tiling's isBias with no SetBias: no bias is added. The documentation does not say; this is
    // inferred from kernels, which read isBias and call SetBias only for a bias the cube adds (an int32
    // one of an int8 matmul), adding a bias of another type on the vector cores afterwards.
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
using acc_t = std::conditional_t<std::is_same_v<AT, int8_t> || std::is_same_v<AT, ::int4b_t>, int32_t, float>;

// The NZ layout (CubeFormat::NZ) of a matrix with ``rows`` rows: fractals of 16 rows x c0 columns,
// the columns cut into blocks of c0 (32 bytes of A and B: 16 half, 8 float, 32 int8; C's blocks are
// 16 wide, 32 for 1-byte types), each block all the rows (rounded up to 16) one after another, each
// row of a block its c0 elements. Element (r, c) counted from a tensor that starts at a block's
// first column (a row offset within a block moves the start by whole rows of c0).
inline int64_t align16(int64_t v) { return (v + 15) / 16 * 16; }
inline int64_t nz_index(int64_t r, int64_t c, int64_t rows_pad, int64_t c0) {
    return ((c / c0) * rows_pad + r) * c0 + c % c0;
}
template <typename T>
constexpr int64_t nz_c0_ab() { return 32 / int64_t(sizeof(T)); }
template <typename T>
constexpr int64_t nz_c0_c() { return sizeof(T) == 1 ? 32 : 16; }

// The accesses of rows [r0, r0 + nr) x columns [cs, cs + nc) of an NZ matrix: per column block one
// run of nr whole rows of the block (what the cube's copies move).
inline MpnpuEvent* nz_access(char kind, uint8_t pipe, const uint8_t* base, const uint8_t* p, int64_t rows_pad,
                             int64_t c0, int64_t r0, int64_t nr, int64_t cs, int64_t nc, uint32_t es,
                             const Site& site, const char* what) {
    const int64_t first = cs / c0, blocks = (cs + nc - 1) / c0 - first + 1;
    return gm_access(kind, pipe, base, p + uint64_t((first * rows_pad + r0) * c0) * es, uint64_t(nr * c0) * es,
                     uint64_t(rows_pad * c0) * es, uint64_t(blocks), es, site, what);
}

// Rows [r0, r0 + nr) x columns [cs, cs + nc) of an NZ matrix into ``out`` (row-major, nc wide).
template <typename T>
inline void nz_gather(const T* p, int64_t rows_pad, int64_t r0, int64_t nr, int64_t cs, int64_t nc, T* out) {
    constexpr int64_t c0 = nz_c0_ab<T>();
    for (int64_t r = 0; r < nr; ++r)
        for (int64_t c = 0; c < nc; ++c) out[r * nc + c] = p[nz_index(r0 + r, cs + c, rows_pad, c0)];
}

// One operand of a tile as row-major rows: where the tile's first element is, the row stride and
// whether the rows are the transposed matrix's. An ND operand is read in place; an NZ one is
// gathered into ``nd`` first.
template <typename T>
struct Operand {
    const T* p;
    int64_t ld;
    bool trans;
    MpnpuEvent* rec;
};

// Where an operand is: a GM tensor (its buffer ``base``, the matrix at ``start``), or a TSCM tensor
// in L1 (``l1``, the matrix at ``start`` in this process, its buffer the L1 bytes [lo, hi)).
struct Source {
    const uint8_t* base;
    const uint8_t* start;
    bool l1;
    uint64_t lo, hi;
};

// The tile's part of A or B: the stored matrix (transposed or not) has ``rows`` x ``cols`` (ld ``ld``
// in ND, rows rounded up to 16 in NZ) and the tile is rows [r0, r0 + nr) x columns [cs, cs + nc) of it.
// GM is read on PIPE_MTE2 (into L1), a TSCM tensor on PIPE_MTE1 (into L0A / L0B), whole NZ block rows.
template <typename T, bool kNz>
inline Operand<T> operand(const Source& src, bool trans, int64_t rows, int64_t ld, int64_t r0, int64_t nr, int64_t cs,
                          int64_t nc, std::vector<T>& nd, const Site& site, const char* what) {
    const T* m = reinterpret_cast<const T*>(src.start);
    if constexpr (kNz) {
        const int64_t rows_pad = align16(rows);
        constexpr int64_t c0 = nz_c0_ab<T>();
        MpnpuEvent* rec = nullptr;
        if (src.l1) {
            const uint64_t at = uint64_t(src.start - memory_base(MPNPU_MEM_L1));
            for (int64_t b = cs / c0; b <= (cs + nc - 1) / c0; ++b) {
                const uint64_t first = at + uint64_t((b * rows_pad + r0) * c0) * sizeof(T);
                local_access('R', P_MTE1, MPNPU_MEM_L1, first, first + uint64_t(nr * c0) * sizeof(T), src.lo, src.hi,
                             site, what);
            }
        } else {
            rec = nz_access('R', P_MTE2, src.base, src.start, rows_pad, c0, r0, nr, cs, nc, sizeof(T), site, what);
        }
        nd.resize(size_t(nr * nc));
        T* const out = nd.data();
        if (src.l1) {  // read by PIPE_MTE1 after its earlier work (e.g. the WaitFlag for the copy into L1)
            CoreState& c = core();
            c.pipes.run(P_MTE1, [=] { nz_gather(m, rows_pad, r0, nr, cs, nc, out); });
            c.pipes.barrier(P_MTE1);
        } else {
            nz_gather(m, rows_pad, r0, nr, cs, nc, out);
        }
        return {out, nc, trans, rec};
    } else {
        (void)rows;
        const T* p = m + r0 * ld + cs;
        MpnpuEvent* rec = gm_access('R', P_MTE2, src.base, p, uint64_t(nc) * sizeof(T), uint64_t(ld) * sizeof(T),
                                    uint64_t(nr), sizeof(T), site, what);
        return {p, ld, trans, rec};
    }
}

// int4b_t A and B (ND in GM, two a byte, the even element in the low half): rows [r0, r0 + nr) x
// columns [cs, cs + nc) of the stored matrix (rows ld elements, an even number, so that each starts on
// a byte) unpacked into ``out`` (row-major, nc wide), read on PIPE_MTE2.
inline MpnpuEvent* i4_rows(const Source& src, int64_t ld, int64_t r0, int64_t nr, int64_t cs, int64_t nc,
                           std::vector<int8_t>& out, const Site& site, const char* what) {
    if (ld % 2)
        api_error(site, "%s: int4b_t rows of an odd length (%lld) do not start on a byte", what, (long long)ld);
    const uint8_t* p = src.start;
    const int64_t first = (r0 * ld + cs) / 2, last = (r0 * ld + cs + nc - 1) / 2;
    MpnpuEvent* rec = gm_access('R', P_MTE2, src.base, p + first, uint64_t(last - first + 1), uint64_t(ld / 2),
                                uint64_t(nr), 1, site, what);
    out.resize(size_t(nr * nc));
    for (int64_t r = 0; r < nr; ++r)
        for (int64_t c = 0; c < nc; ++c) {
            const int64_t idx = (r0 + r) * ld + cs + c;
            const int v = (idx % 2) ? p[idx / 2] >> 4 : p[idx / 2] & 0xF;
            out[size_t(r * nc + c)] = int8_t((v ^ 8) - 8);
        }
    return rec;
}

// A tile of an int4b_t product (int32_t accumulation), as compute_tile below.
template <typename BiasT, typename Acc>
inline void compute_tile_i4(const Setup& s, int32_t t, std::vector<Acc>& out, bool partial, const Site& site,
                            const char* call) {
    const Tile tile = tile_of(s, t);
    const int64_t K = s.singleK, tm = tile.tm, tn = tile.tn;
    const Source sa{s.a_base, s.a, false, 0, 0}, sb{s.b_base, s.b, false, 0, 0};
    thread_local std::vector<int8_t> a8, b8;
    const char* what_a = what_set(call, "A", "SetTensorA", s.a_file, s.a_line);
    MpnpuEvent* ra = s.transA ? i4_rows(sa, s.orgM, 0, K, tile.m0, tm, a8, site, what_a)    // K x tm
                              : i4_rows(sa, s.orgKa, tile.m0, tm, 0, K, a8, site, what_a);  // tm x K
    const char* what_b = what_set(call, "B", "SetTensorB", s.b_file, s.b_line);
    MpnpuEvent* rb = s.transB ? i4_rows(sb, s.orgKb, tile.n0, tn, 0, K, b8, site, what_b)   // tn x K
                              : i4_rows(sb, s.orgN, 0, K, tile.n0, tn, b8, site, what_b);   // K x tn
    const BiasT* bias = s.hasBias && s.bias ? reinterpret_cast<const BiasT*>(s.bias) + tile.n0 : nullptr;
    MpnpuEvent* rbias = bias ? gm_access('R', P_MTE2, s.bias_base, bias, uint64_t(tn) * sizeof(BiasT), 0, 1,
                                         sizeof(BiasT), site, what_of(call, "reading the bias"))
                             : nullptr;
    out.resize(size_t(tm * tn));
    for (int64_t i = 0; i < tm; ++i)
        for (int64_t j = 0; j < tn; ++j) {
            Acc v = partial ? out[size_t(i * tn + j)] : Acc(0);
            if (bias) v += Acc(to_float(bias[j]));
            for (int64_t kk = 0; kk < K; ++kk)
                v += Acc(s.transA ? a8[size_t(kk * tm + i)] : a8[size_t(i * K + kk)]) *
                     Acc(s.transB ? b8[size_t(j * K + kk)] : b8[size_t(kk * tn + j)]);
            out[size_t(i * tn + j)] = v;
        }
    done(ra);
    done(rb);
    done(rbias);
}

template <typename AT, typename BT, typename BiasT, typename Acc>
inline void compute_operands(const Setup& s, const Tile& tile, const Operand<AT>& oa, const Operand<BT>& ob,
                             std::vector<Acc>& out, bool partial, const Site& site, const char* call);

// -- 4:2 sparse B (SparseMatmulType, SetSparseIndex): mpnpu/cube/sparse_index.h -------------------------
//
// The dense B is stored transposed (N rows of K / 2; ISTRANS is true on the guide's page) in ND or NZ;
// the index matrix in GM, as sparse_index.h lays it out over all of N.

// A tile of a sparse product (int8_t A and dense B, int32_t accumulation), as compute_tile below.
template <typename BiasT, bool kNzA, bool kNzB, typename Acc>
inline void compute_tile_sparse(const Setup& s, int32_t t, std::vector<Acc>& out, bool partial, const Site& site,
                                const char* call) {
    const Tile tile = tile_of(s, t);
    const int64_t K = s.singleK, tm = tile.tm, tn = tile.tn;
    if (K % 4 || s.orgKb % 4)
        api_error(site, "Matmul::%s: a 4:2 sparse matmul takes a K that is a multiple of 4 (singleCoreK %lld, Kb %d)",
                  call, (long long)K, s.orgKb);
    if (!s.transB)
        api_error(site, "Matmul::%s: the dense B of a 4:2 sparse matmul is transposed (SetTensorB(b, true); the "
                        "guide's SparseMatmulType takes ISTRANS true only)", call);
    if (!s.idx) api_error(site, "Matmul::%s: no index matrix for the sparse B (SetSparseIndex first)", call);
    const int64_t kd = K / 2;
    thread_local std::vector<int8_t> a_nd, b_nd;
    thread_local std::vector<int32_t> pos;
    const Source sa{s.a_base, s.a, s.a_l1 != 0, s.a_lo, s.a_hi}, sb{s.b_base, s.b, false, 0, 0};
    const char* what_a = what_set(call, "A", "SetTensorA", s.a_file, s.a_line);
    const Operand<int8_t> oa =
        s.transA ? operand<int8_t, kNzA>(sa, true, s.orgKa, s.orgM, 0, K, tile.m0, tm, a_nd, site, what_a)
                 : operand<int8_t, kNzA>(sa, false, s.orgM, s.orgKa, tile.m0, tm, 0, K, a_nd, site, what_a);
    const char* what_b = what_set(call, "B", "SetTensorB", s.b_file, s.b_line);
    const Operand<int8_t> ob =
        operand<int8_t, kNzB>(sb, true, s.orgN, s.orgKb / 2, tile.n0, tn, 0, kd, b_nd, site, what_b);  // tn x kd
    // the index bytes of the tile's columns, fractal row by fractal row (a run per 32 dense rows)
    const char* what_i = what_set(call, "the index matrix", "SetSparseIndex", s.idx_file, s.idx_line);
    const int64_t first_block = tile.n0 / 16, blocks = (tile.n0 + tn - 1) / 16 - first_block + 1;
    MpnpuEvent* ri = gm_access('R', P_MTE2, s.idx_base, s.idx + first_block * 128, uint64_t(blocks * 128),
                               uint64_t((s.orgN + 15) / 16 * 128), uint64_t((kd + 31) / 32), 1, site, what_i);
    const BiasT* bias = s.hasBias && s.bias ? reinterpret_cast<const BiasT*>(s.bias) + tile.n0 : nullptr;
    MpnpuEvent* rbias = bias ? gm_access('R', P_MTE2, s.bias_base, bias, uint64_t(tn) * sizeof(BiasT), 0, 1,
                                         sizeof(BiasT), site, what_of(call, "reading the bias"))
                             : nullptr;
    out.resize(size_t(tm * tn));
    for (int64_t j = 0; j < tn; ++j) {
        sparse_positions(s.idx, tile.n0 + j, (s.orgN + 15) / 16, kd, pos, site, what_i);
        const int8_t* bj = ob.p + j * ob.ld;
        for (int64_t i = 0; i < tm; ++i) {
            Acc v = partial ? out[size_t(i * tn + j)] : Acc(0);
            if (bias) v += Acc(to_float(bias[j]));
            for (int64_t k = 0; k < kd; ++k) {
                const int64_t ka = pos[size_t(k)];
                v += Acc(oa.trans ? oa.p[ka * oa.ld + i] : oa.p[i * oa.ld + ka]) * Acc(bj[k]);
            }
            out[size_t(i * tn + j)] = v;
        }
    }
    done(oa.rec);
    done(ob.rec);
    done(ri);
    done(rbias);
}

// Computes tile ``t`` into ``out`` (tm x tn, row stride tn); ``partial``: add onto what ``out`` holds.
// kNzA / kNzB: A / B are stored in the NZ layout.
template <typename AT, typename BT, typename BiasT, bool kNzA = false, bool kNzB = false, typename Acc>
inline void compute_tile_plain(const Setup& s, int32_t t, std::vector<Acc>& out, bool partial, const Site& site,
                               const char* call) {
    const Tile tile = tile_of(s, t);
    const int64_t K = s.singleK, tm = tile.tm, tn = tile.tn;
    // A [orgM, orgKa] (transposed: [orgKa, orgM]); B [orgKb, orgN] (transposed: [orgN, orgKb])
    thread_local std::vector<AT> a_nd;
    thread_local std::vector<BT> b_nd;
    const Source sa{s.a_base, s.a, s.a_l1 != 0, s.a_lo, s.a_hi}, sb{s.b_base, s.b, s.b_l1 != 0, s.b_lo, s.b_hi};
    const char* what_a = what_set(call, "A", "SetTensorA", s.a_file, s.a_line);
    const Operand<AT> oa = s.transA ? operand<AT, kNzA>(sa, true, s.orgKa, s.orgM, 0, K, tile.m0, tm, a_nd, site, what_a)
                                    : operand<AT, kNzA>(sa, false, s.orgM, s.orgKa, tile.m0, tm, 0, K, a_nd, site, what_a);
    const char* what_b = what_set(call, "B", "SetTensorB", s.b_file, s.b_line);
    const Operand<BT> ob = s.transB ? operand<BT, kNzB>(sb, true, s.orgN, s.orgKb, tile.n0, tn, 0, K, b_nd, site, what_b)
                                    : operand<BT, kNzB>(sb, false, s.orgKb, s.orgN, 0, K, tile.n0, tn, b_nd, site, what_b);
    compute_operands<AT, BT, BiasT>(s, tile, oa, ob, out, partial, site, call);
}

// The product of a tile's operands (A: tm x K, B: K x tn, as Operand says where their rows are) plus
// the bias into ``out`` (tm x tn, row stride tn); ``partial``: add onto what ``out`` holds. Ends the
// operands' GM records.
template <typename AT, typename BT, typename BiasT, typename Acc>
inline void compute_operands(const Setup& s, const Tile& tile, const Operand<AT>& oa, const Operand<BT>& ob,
                             std::vector<Acc>& out, bool partial, const Site& site, const char* call) {
    const int64_t K = s.singleK, tm = tile.tm, tn = tile.tn;
    const AT* const a0 = oa.p;
    const BT* const b0 = ob.p;
    const int64_t lda = oa.ld, ldb = ob.ld;
    const bool transA = oa.trans, transB = ob.trans;
    MpnpuEvent *ra = oa.rec, *rb = ob.rec, *rbias = nullptr;
    const BiasT* bias = s.hasBias && s.bias ? reinterpret_cast<const BiasT*>(s.bias) + tile.n0 : nullptr;
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
                int32_t av = transA ? a0[kk * lda + i] : a0[i * lda + kk];
                const int64_t base = i * tn;
                for (int64_t j = 0; j < tn; ++j)
                    out[size_t(base + j)] += av * int32_t(transB ? b0[j * ldb + kk] : b0[kk * ldb + j]);
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
        if (transA) {  // A^T rows: kk fixed, i running
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
            if (transB) {  // B^T rows: column j0 + q of B, kk running
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

// (int4b_t A and B: compute_tile_i4)
template <typename AT, typename BT, typename BiasT, bool kNzA = false, bool kNzB = false, typename Acc>
inline void compute_tile(const Setup& s, int32_t t, std::vector<Acc>& out, bool partial, const Site& site,
                         const char* call) {
    if constexpr (std::is_same_v<AT, ::int4b_t>)
        compute_tile_i4<BiasT>(s, t, out, partial, site, call);
    else
        compute_tile_plain<AT, BT, BiasT, kNzA, kNzB>(s, t, out, partial, site, call);
}

// The (de)quantisation on the way out of L0C (Setup's quant_*: SetQuantScalar / SetQuantVector), as
// their pages give
// the uint64_t parameter: the float scale's bits masked with 0xFFFFE000 in bits 0-31 (so the scale
// keeps 10 bits of mantissa), bit 46 set, and an optional offset in bits 37-45 (9-bit two's
// complement). C = acc x scale, then converted to C's type; for an int8_t C the offset is added and
// the sum rounded to nearest (ties to even: mpnpu's choice, the pages do not say) and saturated.
// ReLU (MatmulConfig enableRelu), when on, applies to the accumulator before the scale.
inline float quant_scale(uint64_t q) {
    const uint32_t bits = uint32_t(q) & 0xFFFFE000u;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
inline int32_t quant_offset(uint64_t q) {
    const int32_t v = int32_t((q >> 37) & 0x1FFu);
    return v >= 0x100 ? v - 0x200 : v;
}

template <typename CT>
inline CT quantize(float acc, uint64_t q) {
    const float v = acc * quant_scale(q);
    if constexpr (std::is_same_v<CT, int8_t>) {
        const float r = std::nearbyint(v + float(quant_offset(q)));
        if (std::isnan(r)) return CT(0);
        return CT(r > 127.0f ? 127 : r < -128.0f ? -128 : int32_t(r));
    } else {
        return from_float<CT>(v);
    }
}

// Where a tile of C goes: ND, the tile's first element and the row stride; NZ (rows_pad > 0), the
// start of the C matrix, its rows rounded up to 16, the tile's first row and column in it, and the
// width of its column blocks (0: nz_c0_c; 8 for a float C with MatmulConfig::isEnableChannelSplit,
// whose 16 x 16 fractals are stored as 16 x 8 ones).
template <typename CT>
struct CDest {
    CT* p;
    int64_t ld;
    int64_t rows_pad;
    int64_t r0, c0;
    int64_t cb = 0;
};

// Stores a computed tile (tm x tn) at ``dst``, converted to CT; enAtomic: 0 plain, 1 add, 2 max, 3 min.
template <typename CT, typename Acc>
inline void store_tile(const Tile& tile, const std::vector<Acc>& acc, const uint8_t* base, const CDest<CT>& dst,
                       int enAtomic, bool relu, const Setup& st, const Site& site, const char* call) {
    CoreState& c = core();
    const int saved = c.atomic_op;
    if (enAtomic < 0 || enAtomic > 3) api_error(site, "Matmul::%s: enAtomic must be 0, 1, 2 or 3 (got %d)", call, enAtomic);
    if (enAtomic) c.atomic_op = enAtomic;
    const int64_t cb = dst.cb ? dst.cb : nz_c0_c<CT>();
    MpnpuEvent* rec =
        dst.rows_pad ? nz_access(gm_write_kind(), P_FIX, base, reinterpret_cast<const uint8_t*>(dst.p), dst.rows_pad, cb,
                                 dst.r0, tile.tm, dst.c0, tile.tn, sizeof(CT), site, what_of(call, "writing C"))
                     : gm_access(gm_write_kind(), P_FIX, base, dst.p, uint64_t(tile.tn) * sizeof(CT),
                                 uint64_t(dst.ld) * sizeof(CT), uint64_t(tile.tm), sizeof(CT), site,
                                 what_of(call, "writing C"));
    const uint64_t* qvec = st.quant_mode == 2 ? reinterpret_cast<const uint64_t*>(st.quant) + tile.n0 : nullptr;
    MpnpuEvent* rq = qvec ? gm_access('R', P_MTE2, st.quant_base, qvec, uint64_t(tile.tn) * sizeof(uint64_t), 0, 1,
                                      sizeof(uint64_t), site, what_of(call, "reading SetQuantVector's parameters"))
                          : nullptr;
    thread_local std::vector<CT> row_buf;
    row_buf.resize(size_t(tile.tn));
    CT* const row = row_buf.data();
    const int op = core().atomic_op;
    for (int32_t i = 0; i < tile.tm; ++i) {
        const Acc* src = acc.data() + int64_t(i) * tile.tn;
        bool converted = false;
        if (st.quant_mode) {
            for (int32_t j = 0; j < tile.tn; ++j) {
                Acc v = src[j];
                if (relu && v < Acc(0)) v = Acc(0);
                row[size_t(j)] = quantize<CT>(float(v), qvec ? qvec[j] : st.quant_scalar);
            }
            converted = true;
        }
        if constexpr (std::is_same_v<Acc, float> && !std::is_integral_v<CT>) {
            if (!relu && !converted) {
                gemm::from_float_row(src, row, size_t(tile.tn));
                converted = true;
            }
        }
        if (!converted) {
            for (int32_t j = 0; j < tile.tn; ++j) {
                Acc v = src[j];
                if (relu && v < Acc(0)) v = Acc(0);
                if constexpr (std::is_integral_v<CT>) row[size_t(j)] = static_cast<CT>(v);
                else row[size_t(j)] = from_float<CT>(float(v));
            }
        }
        if (!dst.rows_pad) {
            store_gm(dst.p + int64_t(i) * dst.ld, row, uint64_t(tile.tn), op);
            continue;
        }
        for (int64_t j = 0; j < tile.tn;) {  // the row's runs within each column block
            const int64_t col = dst.c0 + j, run = std::min<int64_t>(cb - col % cb, tile.tn - j);
            store_gm(dst.p + nz_index(dst.r0 + i, col, dst.rows_pad, cb), row + j, uint64_t(run), op);
            j += run;
        }
    }
    done(rq);
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

// -- batch matmul (IterateBatch / IterateNBatch) ---------------------------------------------------------
//
// A batch layout (LayoutMode) names five extents b, s, n, g, d (TCubeTiling's ALayoutInfoB..D for A,
// BLayoutInfoB..D for B, CLayoutInfoB, S1, N, G, S2 for C); one matrix of the batch is s rows of d
// elements, and the batches are counted over (b, n, g), g fastest:
//   BSNGD    [b][s][n][g][d]: matrix q = (b, n, g) starts at b*s*n*g*d + (n*g + g')*d, rows n*g*d apart
//   SBNGD    [s][b][n][g][d]: matrix q starts at q*d, rows b*n*g*d apart
//   BNGS1S2  [b][n][g][s][d]: matrix q starts at q*s*d, rows d apart
// NORMAL (and NONE for C) is the plain matrices one after another (see MatmulCore::batch_at).
struct BatchAt {
    int64_t off;  // the matrix's first element, in elements from the tensor's start
    int64_t ld;   // its row stride
};

inline BatchAt layout_at(LayoutMode mode, int64_t b, int64_t s, int64_t n, int64_t g, int64_t d, int64_t q) {
    (void)b;
    switch (mode) {
        case LayoutMode::BSNGD: {
            const int64_t per_b = n * g > 0 ? n * g : 1;
            return {(q / per_b) * s * n * g * d + (q % per_b) * d, n * g * d};
        }
        case LayoutMode::SBNGD:
            return {q * d, b * n * g * d};
        default:  // BNGS1S2
            return {q * s * d, d};
    }
}

}  // namespace mm
}  // namespace mpnpu

#endif  // MPNPU_CUBE_MATMUL_ENGINE_H
