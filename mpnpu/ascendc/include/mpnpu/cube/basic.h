// The cube core's instructions: GM -> L1 with ND2NZ conversion (DataCopy with Nd2NzParams), L1 ->
// L0A / L0B (LoadData, LoadDataWithTranspose), the matrix multiply (Mmad: L0A x L0B -> L0C) and
// L0C -> GM (Fixpipe, and the older DataCopy with DataCopyCO12DstParams), and Fill (older name
// InitConstValue: L1 / L0A / L0B set to one value).
//
// Layouts. The bytes in local memory are laid out as on the chip, so that kernels computing
// fractal offsets themselves (a2Local[i * baseK * 16], startIndex, srcStride ...) get what they
// would there:
//
//   L1 after ND2NZ   NZ: 32-byte column blocks; block c1 of row r at c1 * dstNzC0Stride + r * dstNzNStride
//   L0A (Mmad's A)   Zz: 16 x K0 fractals (K0 = 32 bytes / element), fractal (m1, k1) at m1 * K1 + k1,
//                        rows inside it; m == 1 reads A as a plain row (GEMV, as the chip does)
//   L0B (Mmad's B)   Zn: K0 x 16 fractals, fractal (k1, n1) at k1 * N1 + n1, columns inside it
//   L0C (Mmad's C)   Nz: 16 x 16 fractals, fractal (m1, n1) at n1 * M1 + m1, rows inside it
//
// Mmad gathers A and B into float32 row-major buffers, multiplies with mpnpu/cube/gemm.h and
// scatters C back (int8 inputs accumulate exactly in int32). Pipes: ND2NZ copies PIPE_MTE2,
// LoadData from L1 PIPE_MTE1 (from GM PIPE_MTE2), Mmad PIPE_M, Fixpipe PIPE_FIX. Every access is
// checked against its tensor or buffer and traced; GM accesses are held around like DataCopy's.
#ifndef MPNPU_CUBE_BASIC_H
#define MPNPU_CUBE_BASIC_H

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../data_copy.h"
#include "../device_model.h"
#include "../native/rt.h"
#include "../sync.h"
#include "../tensor.h"
#include "../types.h"
#include "../utils.h"
#include "fixpipe_quant.h"
#include "gemm.h"
#include "params.h"
#include "sparse_index.h"

namespace mpnpu {
namespace cube {

constexpr uint64_t FRACTAL_BYTES = 512;

template <typename T>
constexpr uint32_t c0_of() {
    return uint32_t(32 / sizeof(T));
}

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

template <typename T>
inline void check_memory(const AscendC::LocalTensor<T>& t, int mem, const Site& site, const char* what,
                         const char* operand) {
    if (t.mpnpu_mem() != mem)
        api_error(site, "%s: %s must be in %s, this tensor is in %s", what, operand, mem_name(mem),
                  mem_name(t.mpnpu_mem()));
}

inline void check_aligned(uint64_t offset, uint64_t align, const Site& site, const char* what, const char* operand) {
    if (offset % align)
        api_error(site, "%s: %s must start %llu-byte aligned (it is %llu bytes into its memory)", what, operand,
                  (unsigned long long)align, (unsigned long long)offset);
}

// An L1 -> L0 load's operands: the destination in L0A or L0B, 512-byte aligned; the source (when
// given) in L1, 32-byte aligned.
template <typename T>
inline void check_l0_load(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>* src, const Site& site,
                          const char* what) {
    if (src) {
        check_memory(*src, MPNPU_MEM_L1, site, what, "the source");
        check_aligned(src->mpnpu_offset(), BLOCK_BYTES, site, what, "the L1 source");
    }
    const int mem = dst.mpnpu_mem();
    if (mem != MPNPU_MEM_L0A && mem != MPNPU_MEM_L0B)
        api_error(site, "%s: the destination must be in L0A (A2) or L0B (B2), this tensor is in %s", what,
                  mem_name(mem));
    check_aligned(dst.mpnpu_offset(), FRACTAL_BYTES, site, what, "the L0 destination");
}

template <typename T>
inline T from_f(float f) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(f);
    else return from_float<T>(f);
}

// Scratch buffers reused by every instruction of this process.
inline std::vector<float>& scratch(int i) {
    thread_local std::vector<float> bufs[4];
    return bufs[i];
}

// Fixpipe's state registers (SetFixpipeNz2ndFlag, SetFixpipePreQuantFlag).
struct FixState {
    uint16_t nd_num = 1;
    uint16_t src_nd_stride = 0;
    uint16_t dst_nd_stride = 0;
    uint64_t pre_quant = 0;
    const uint64_t* quant_table = nullptr;  // SetFixPipeConfig's quantPre tensor (in the fixpipe buffer)
    bool row_major = false;                 // SetMMRowMajor / SetMMColumnMajor (no effect on the result)
};
inline FixState& fix_state() {
    static FixState s;
    return s;
}

// The unit flags of L0C (unitFlag 2 or 3 on both Mmad and Fixpipe): a Mmad waits until the fixpipe has
// drained what it queued, a Fixpipe until the matrix unit has finished; mpnpu orders them as a barrier
// of the other pipe at the instruction (recorded as one, so racecheck sees the order the flags give).
inline void unit_flag_wait(uint8_t unit_flag, uint8_t other_pipe, const Site& site, const char* what) {
    if (unit_flag == 0) return;
    if (unit_flag == 1) api_error(site, "%s: unitFlag 1 (0: off, 2: keep the units marked, 3: reset them)", what);
    if (unit_flag > 3) api_error(site, "%s: unitFlag %u (0, 2 or 3)", what, unsigned(unit_flag));
    core().pipes.barrier(other_pipe);
    pipe_sync_record('b', other_pipe, -1, 0, site);
}

// -- GM (or UB) -> local, ND -> NZ -------------------------------------------------------------------

template <typename T>
inline void nd2nz(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src,
                  const AscendC::Nd2NzParams& p, const Site& site) {
    const char* what = "DataCopy GM->local (ND2NZ)";
    at(site);
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;  // a NOP, as documented
    check_aligned(dst.mpnpu_offset(), BLOCK_BYTES, site, what, "the destination");
    if (p.srcDValue < p.dValue)
        api_error(site, "%s: srcDValue (%u) is smaller than dValue (%u)", what, unsigned(p.srcDValue),
                  unsigned(p.dValue));
    constexpr uint64_t C0 = c0_of<T>();
    const uint64_t blocks = ceil_div(p.dValue, C0);
    // the destination's extent: the last matrix's last row's last block
    uint64_t last = uint64_t(p.ndNum - 1) * p.dstNzMatrixStride + (blocks - 1) * p.dstNzC0Stride * C0 +
                    uint64_t(p.nValue - 1) * p.dstNzNStride * C0 + C0;
    const T* g = src.mpnpu_addr();
    hold_point(site, 0);
    std::vector<MpnpuEvent*> recs;
    for (uint32_t i = 0; i < p.ndNum; ++i)
        recs.push_back(gm_access('R', P_MTE2, src.mpnpu_base(), g + uint64_t(i) * p.srcNdMatrixStride,
                                 uint64_t(p.dValue) * sizeof(T), uint64_t(p.srcDValue) * sizeof(T), p.nValue,
                                 sizeof(T), site, what));
    dst.mpnpu_touch('W', P_MTE2, 0, last, site, what);
    for (MpnpuEvent* r : recs) mark_queued(r, P_MTE2);
    T* l = dst.mpnpu_addr();
    core().pipes.run(P_MTE2, [=] {  // the bytes move when PIPE_MTE2 gets to it
        uint64_t t0 = span_start();
        for (uint32_t i = 0; i < p.ndNum; ++i) {
            const T* sm = g + uint64_t(i) * p.srcNdMatrixStride;
            T* dm = l + uint64_t(i) * p.dstNzMatrixStride;
            const uint64_t whole = p.dValue / C0;  // full 32-byte blocks of a row (a fixed-size copy each)
            for (uint32_t r = 0; r < p.nValue; ++r) {
                const T* row = sm + uint64_t(r) * p.srcDValue;
                T* out = dm + uint64_t(r) * p.dstNzNStride * C0;
                for (uint64_t b = 0; b < whole; ++b)
                    std::memcpy(static_cast<void*>(out + b * p.dstNzC0Stride * C0), row + b * C0, BLOCK_BYTES);
                if (whole < blocks) {  // the last, partial block, zero-padded
                    T* tail = out + whole * p.dstNzC0Stride * C0;
                    const uint64_t n = p.dValue - whole * C0;
                    std::memcpy(static_cast<void*>(tail), row + whole * C0, n * sizeof(T));
                    std::memset(static_cast<void*>(tail + n), 0, (C0 - n) * sizeof(T));
                }
            }
        }
        for (MpnpuEvent* r : recs) done(r, t0);
    });
    if (is_hold_site(site)) core().pipes.barrier(P_MTE2);
    hold_point(site, 1);
}

// -- LoadData 2D: 512-byte fractals into L0A / L0B -------------------------------------------------------

inline void transpose_fractal16(uint8_t* dst, const uint8_t* src) {
    const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
    uint16_t tmp[256];
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) tmp[c * 16 + r] = s[r * 16 + c];
    std::memcpy(dst, tmp, sizeof tmp);
}

template <typename T>
inline void load_2d(const AscendC::LocalTensor<T>& dst, const uint8_t* src, uint64_t src_bytes_from,
                    const AscendC::LoadData2DParams& p, uint8_t pipe, const Site& site, const char* what,
                    const AscendC::LocalTensor<T>* local_src, const AscendC::GlobalTensor<T>* gm_src) {
    at(site);
    if (p.repeatTimes == 0) return;
    check_l0_load(dst, static_cast<const AscendC::LocalTensor<T>*>(nullptr), site, what);
    if (p.ifTranspose && sizeof(T) != 2)
        api_error(site, "%s: ifTranspose needs 16-bit elements (this tensor's are %zu bytes)", what, sizeof(T));
    if (p.ifTranspose && gm_src)
        api_error(site, "%s: only loads from L1 can transpose", what);
    if (p.addrMode != 0) unsupported(site, "%s: addrMode %u (mpnpu has the increasing mode 0)", what, unsigned(p.addrMode));
    uint64_t first = uint64_t(p.startIndex), lastf = first + uint64_t(p.repeatTimes - 1) * p.srcStride;
    uint64_t dst_end = (uint64_t(p.repeatTimes - 1) * (1 + uint64_t(p.dstGap)) + 1) * FRACTAL_BYTES;
    MpnpuEvent* rec = nullptr;
    if (gm_src) {
        hold_point(site, 0);
        rec = gm_access('R', pipe, gm_src->mpnpu_base(), src + first * FRACTAL_BYTES, FRACTAL_BYTES,
                        uint64_t(p.srcStride) * FRACTAL_BYTES, p.repeatTimes, sizeof(T), site, what);
    } else {
        local_src->mpnpu_touch_bytes('R', pipe, first * FRACTAL_BYTES, (lastf + 1) * FRACTAL_BYTES, site, what);
    }
    (void)src_bytes_from;
    dst.mpnpu_touch_bytes('W', pipe, 0, dst_end, site, what);
    mark_queued(rec, pipe);
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    core().pipes.run(pipe, [=] {  // the fractals move when the pipe (MTE1, or MTE2 from GM) gets to it
        uint64_t t0 = span_start();
        for (uint32_t i = 0; i < p.repeatTimes; ++i) {
            const uint8_t* s = src + (first + uint64_t(i) * p.srcStride) * FRACTAL_BYTES;
            uint8_t* o = d + uint64_t(i) * (1 + uint64_t(p.dstGap)) * FRACTAL_BYTES;
            if (p.ifTranspose) transpose_fractal16(o, s);
            else std::memmove(o, s, FRACTAL_BYTES);
        }
        done(rec, t0);
    });
    if (gm_src) {
        if (is_hold_site(site)) core().pipes.barrier(pipe);
        hold_point(site, 1);
    }
}

// -- LoadDataWithTranspose: squares transposed into L0A / L0B ---------------------------------------------

// A 16 x 16 square of 32-bit elements, held as two side-by-side 16 x 8 fractals (left columns 0-7,
// right 8-15), transposed and split the same way: out0 gets columns 0-7 of the transpose, out1 8-15.
inline void transpose_square32(uint8_t* out0, uint8_t* out1, const uint8_t* left, const uint8_t* right) {
    const uint32_t* l = reinterpret_cast<const uint32_t*>(left);
    const uint32_t* r = reinterpret_cast<const uint32_t*>(right);
    uint32_t sq[16][16];
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
            sq[i][j] = l[i * 8 + j];
            sq[i][j + 8] = r[i * 8 + j];
        }
    uint32_t t0[128], t1[128];  // transpose row i = square column i
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
            t0[i * 8 + j] = sq[j][i];
            t1[i * 8 + j] = sq[j + 8][i];
        }
    std::memcpy(out0, t0, sizeof t0);
    std::memcpy(out1, t1, sizeof t1);
}

// A 32 x 32 square of 8-bit elements, held as two stacked 16 x 32 fractals (rows 0-15, 16-31),
// transposed and split the same way: out0 gets rows 0-15 of the transpose, out1 rows 16-31.
inline void transpose_square8(uint8_t* out0, uint8_t* out1, const uint8_t* sq) {
    uint8_t t[32 * 32];
    for (int i = 0; i < 32; ++i)
        for (int j = 0; j < 32; ++j) t[i * 32 + j] = sq[j * 32 + i];
    std::memcpy(out0, t, 512);
    std::memcpy(out1, t + 512, 512);
}

template <typename T>
inline void load_2d_transpose(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                              const AscendC::LoadData2dTransposeParams& p, const Site& site) {
    static_assert(!std::is_same_v<T, int4b_t>, "LoadDataWithTranspose: mpnpu does not transpose int4b_t squares");
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4,
                  "LoadDataWithTranspose: 8-bit (int8_t, uint8_t), 16-bit (half, bfloat16_t) or 32-bit (float, "
                  "int32_t, uint32_t) elements");
    const char* what = "LoadDataWithTranspose L1->L0";
    at(site);
    check_l0_load(dst, &src, site, what);
    if (p.addrMode != 0) unsupported(site, "%s: addrMode %u (mpnpu has the increasing mode 0)", what, unsigned(p.addrMode));
    if (p.repeatTimes == 0) return;  // a NOP, as documented
    constexpr uint64_t frac_per_square = sizeof(T) == 2 ? 1 : 2;  // (8-bit: 32 x 32, 32-bit: 16 x 16)
    constexpr uint64_t square = frac_per_square * FRACTAL_BYTES;
    const uint64_t n = p.repeatTimes, first = p.startIndex, last = first + (n - 1) * p.srcStride;
    const uint64_t step = (1 + uint64_t(p.dstGap)) * FRACTAL_BYTES;  // a repeat's first fractal to the next one's
    const uint64_t second = frac_per_square == 2 ? (1 + uint64_t(p.dstFracGap)) * FRACTAL_BYTES : 0;
    const uint64_t dst_end = (n - 1) * step + second + FRACTAL_BYTES;
    src.mpnpu_touch_bytes('R', P_MTE1, first * square, (last + 1) * square, site, what);
    dst.mpnpu_touch_bytes('W', P_MTE1, 0, dst_end, site, what);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.mpnpu_addr());
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    const uint64_t stride = p.srcStride;
    core().pipes.run(P_MTE1, [=] {  // the squares move when PIPE_MTE1 gets to it
        for (uint64_t i = 0; i < n; ++i) {
            const uint8_t* q = s + (first + i * stride) * square;
            uint8_t* o = d + i * step;
            if constexpr (sizeof(T) == 2) transpose_fractal16(o, q);
            else if constexpr (sizeof(T) == 1) transpose_square8(o, o + second, q);
            else transpose_square32(o, o + second, q, q + FRACTAL_BYTES);
        }
    });
}

// -- Mmad -----------------------------------------------------------------------------------------------

template <typename T, typename U, typename S>
constexpr bool mmad_types_ok() {
    return (std::is_same_v<U, half> && std::is_same_v<S, half> && std::is_same_v<T, float>) ||
           (std::is_same_v<U, bfloat16_t> && std::is_same_v<S, bfloat16_t> && std::is_same_v<T, float>) ||
           (std::is_same_v<U, float> && std::is_same_v<S, float> && std::is_same_v<T, float>) ||
           (std::is_same_v<U, int8_t> && std::is_same_v<S, int8_t> && std::is_same_v<T, int32_t>);
}

// A multiply's operands where its pages put them (C in L0C, its start ``dst_align`` bytes aligned; A in
// L0A, B in L0B, fractal-aligned), after the fixpipe's queued work when the unit flags ask for it.
template <typename T, typename U, typename S>
inline void mmad_operands(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& fm,
                          const AscendC::LocalTensor<S>& filter, uint8_t unit_flag, uint64_t dst_align,
                          const Site& site, const char* what) {
    unit_flag_wait(unit_flag, P_FIX, site, what);
    check_memory(dst, MPNPU_MEM_L0C, site, what, "the result (dst)");
    check_memory(fm, MPNPU_MEM_L0A, site, what, "the left matrix (fm)");
    check_memory(filter, MPNPU_MEM_L0B, site, what, "the right matrix (filter)");
    check_aligned(fm.mpnpu_offset(), FRACTAL_BYTES, site, what, "the left matrix");
    check_aligned(filter.mpnpu_offset(), FRACTAL_BYTES, site, what, "the right matrix");
    check_aligned(dst.mpnpu_offset(), dst_align, site, what, "the result");
}

// bias: nullptr, or n values (float / int32_t) that C starts from.
template <typename T, typename U, typename S, typename V>
inline void mmad(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& fm,
                 const AscendC::LocalTensor<S>& filter, const AscendC::LocalTensor<V>* bias,
                 const AscendC::MmadParams& p, const Site& site) {
    static_assert(mmad_types_ok<T, U, S>(), "Mmad: the (C, A, B) types must be (float, half, half), (float, bfloat16_t, "
                                            "bfloat16_t), (float, float, float) or (int32_t, int8_t, int8_t)");
    const char* what = "Mmad";
    at(site);
    if (p.m == 0 || p.n == 0 || p.k == 0) return;  // a NOP, as documented
    mmad_operands(dst, fm, filter, p.unitFlag, 64, site, what);
    const uint64_t m = p.m, n = p.n, k = p.k;
    constexpr uint64_t K0 = c0_of<U>();
    uint64_t k1 = ceil_div(k, K0);
    if (std::is_same_v<U, float> && p.kDirectionAlign) k1 = ceil_div(k, 16) * 2;
    const uint64_t m1 = ceil_div(m, 16), n1 = ceil_div(n, 16);
    const bool gemv = m == 1 && !p.disableGemv;
    const bool accumulate = bias == nullptr && (p.isBias || !p.cmatrixInitVal);
    uint64_t a_bytes = gemv ? k * sizeof(U) : m1 * k1 * FRACTAL_BYTES;
    uint64_t b_bytes = k1 * n1 * FRACTAL_BYTES;
    uint64_t c_bytes = n1 * m1 * 256 * sizeof(T);
    fm.mpnpu_touch_bytes('R', P_M, 0, a_bytes, site, what);
    filter.mpnpu_touch_bytes('R', P_M, 0, b_bytes, site, what);
    if (bias) bias->mpnpu_touch('R', P_M, 0, n, site, what);
    if (accumulate) dst.mpnpu_touch_bytes('R', P_M, 0, c_bytes, site, what);
    dst.mpnpu_touch_bytes('W', P_M, 0, c_bytes, site, what);

    const U* A = fm.mpnpu_addr();
    const S* B = filter.mpnpu_addr();
    T* C = dst.mpnpu_addr();
    auto a_at = [&](uint64_t i, uint64_t kk) -> uint64_t {
        return gemv ? kk : ((i / 16 * k1 + kk / K0) * 16 + i % 16) * K0 + kk % K0;
    };
    auto b_at = [&](uint64_t kk, uint64_t j) -> uint64_t {
        return ((kk / K0 * n1 + j / 16) * 16 + j % 16) * K0 + kk % K0;
    };
    auto c_at = [&](uint64_t i, uint64_t j) -> uint64_t { return ((j / 16 * m1 + i / 16) * 16 + i % 16) * 16 + j % 16; };

    if constexpr (std::is_same_v<U, int8_t>) {
        for (uint64_t i = 0; i < m; ++i)
            for (uint64_t j = 0; j < n; ++j) {
                int32_t acc = accumulate ? C[c_at(i, j)] : bias ? int32_t(bias->mpnpu_addr()[j]) : 0;
                for (uint64_t kk = 0; kk < k; ++kk) acc += int32_t(A[a_at(i, kk)]) * int32_t(B[b_at(kk, j)]);
                C[c_at(i, j)] = acc;
            }
    } else {
        std::vector<float>& af = scratch(0);
        std::vector<float>& bt = scratch(1);
        std::vector<float>& cf = scratch(2);
        af.resize(m * k);
        bt.resize(n * k);
        cf.resize(m * n);
        // A: each fractal row holds K0 consecutive k of one m (GEMV: the row is plain)
        for (uint64_t i = 0; i < m; ++i) {
            float* row = af.data() + i * k;
            if (gemv) {
                gemm::to_float_row(A, row, k);
                continue;
            }
            for (uint64_t kb = 0; kb * K0 < k; ++kb) {
                uint64_t w = k - kb * K0 < K0 ? k - kb * K0 : K0;
                gemm::to_float_row(A + a_at(i, kb * K0), row + kb * K0, w);
            }
        }
        // B: each fractal row holds K0 consecutive k of one n, so B is read as the rows of B^T
        // (contiguous runs), then packed into the GEMM's panels by a transpose, 8 x 8 at a time:
        // scattering it column by column into a row-major B cost more than the GEMM itself
        for (uint64_t j = 0; j < n; ++j)
            for (uint64_t kb = 0; kb * K0 < k; ++kb) {
                uint64_t w = k - kb * K0 < K0 ? k - kb * K0 : K0;
                gemm::to_float_row(B + b_at(kb * K0, j), bt.data() + j * k + kb * K0, w);
            }
        float* panels = gemm::panel_buffer(int(n), int(k));
        for (uint64_t j0 = 0; j0 < n; j0 += gemm::NR) {
            const uint64_t w = n - j0 < uint64_t(gemm::NR) ? n - j0 : uint64_t(gemm::NR);
            gemm::pack_panel_transposed(bt.data() + j0 * k, int64_t(k), int64_t(w), panels + j0 * k);
        }
        // C: each fractal row holds 16 consecutive n of one m
        for (uint64_t i = 0; i < m; ++i)
            for (uint64_t jb = 0; jb * 16 < n; ++jb) {
                uint64_t w = n - jb * 16 < 16 ? n - jb * 16 : 16;
                float* out = cf.data() + i * n + jb * 16;
                if (accumulate) std::memcpy(out, C + c_at(i, jb * 16), w * sizeof(float));
                else if (bias) gemm::to_float_row(bias->mpnpu_addr() + jb * 16, out, w);
                else std::memset(out, 0, w * sizeof(float));
            }
        gemm::sgemm_packed(int(m), int(n), int(k), af.data(), int(k), panels, cf.data(), int(n));
        for (uint64_t i = 0; i < m; ++i)
            for (uint64_t jb = 0; jb * 16 < n; ++jb) {
                uint64_t w = n - jb * 16 < 16 ? n - jb * 16 : 16;
                std::memcpy(C + c_at(i, jb * 16), cf.data() + i * n + jb * 16, w * sizeof(float));
            }
    }
}

// -- 4:2 sparse B: LoadDataWithSparse, MmadWithSparse (mpnpu/cube/sparse_index.h) -----------------------

// The buffer LoadDataWithSparse fills beside L0B and MmadWithSparse reads: a quarter of L0B's size,
// the 128 index bytes of each 512-byte fractal of L0B at that fractal's place (its offset / 4; the
// pages give the size and leave the address to the API). Not traced: the dense B it travels with is.
inline uint8_t* sparse_index_buffer() {
    static uint8_t buf[L0B_BYTES / 4];  // (one a core process: one core)
    return buf;
}

// L1 -> L0B (PIPE_MTE1): repeatTimes 512-byte fractals of the dense B from fractal startIndex on, one
// after another, and their 128-byte index fractals from idx into the index buffer (the other params
// are unused, as the page says).
inline void load_sparse(const AscendC::LocalTensor<int8_t>& dst, const AscendC::LocalTensor<int8_t>& src,
                        const AscendC::LocalTensor<uint8_t>& idx, const AscendC::LoadData2DParams& p,
                        const Site& site) {
    const char* what = "LoadDataWithSparse";
    at(site);
    if (p.repeatTimes == 0) return;  // a NOP, as documented
    check_memory(src, MPNPU_MEM_L1, site, what, "the dense B (src)");
    check_memory(idx, MPNPU_MEM_L1, site, what, "the index matrix (idx)");
    check_aligned(src.mpnpu_offset(), BLOCK_BYTES, site, what, "the dense B");
    check_aligned(idx.mpnpu_offset(), BLOCK_BYTES, site, what, "the index matrix");
    if (dst.mpnpu_mem() != MPNPU_MEM_L0B)
        api_error(site, "%s: the destination must be in L0B (B2), this tensor is in %s", what, mem_name(dst.mpnpu_mem()));
    check_aligned(dst.mpnpu_offset(), FRACTAL_BYTES, site, what, "the L0B destination");
    constexpr uint64_t IDX_FRACTAL = FRACTAL_BYTES / 4;
    const uint64_t first = p.startIndex, n = p.repeatTimes;
    src.mpnpu_touch_bytes('R', P_MTE1, first * FRACTAL_BYTES, (first + n) * FRACTAL_BYTES, site, what);
    idx.mpnpu_touch_bytes('R', P_MTE1, first * IDX_FRACTAL, (first + n) * IDX_FRACTAL, site, what);
    dst.mpnpu_touch_bytes('W', P_MTE1, 0, n * FRACTAL_BYTES, site, what);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.mpnpu_addr()) + first * FRACTAL_BYTES;
    const uint8_t* x = idx.mpnpu_addr() + first * IDX_FRACTAL;
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    uint8_t* xd = sparse_index_buffer() + dst.mpnpu_offset() / 4;
    core().pipes.run(P_MTE1, [=] {  // the fractals move when PIPE_MTE1 gets to it
        std::memmove(d, s, n * FRACTAL_BYTES);
        std::memmove(xd, x, n * IDX_FRACTAL);
    });
}

// C (L0C, int32_t) =|+= A (L0A, int8_t, m x k) x B (L0B, the dense int8_t B, k / 2 x n, with its
// index from LoadDataWithSparse), on PIPE_M; C starts as Mmad's does.
inline void mmad_sparse(const AscendC::LocalTensor<int32_t>& dst, const AscendC::LocalTensor<int8_t>& fm,
                        const AscendC::LocalTensor<int8_t>& filter, const AscendC::MmadParams& p, const Site& site) {
    const char* what = "MmadWithSparse";
    at(site);
    if (p.m == 0 || p.n == 0 || p.k == 0) return;  // a NOP, as Mmad's
    if (p.kDirectionAlign) api_error(site, "%s: kDirectionAlign must be false in the sparse form (its page)", what);
    if (!p.cmatrixInitVal && p.cmatrixSource)
        unsupported(site, "%s: C starting from the bias table (cmatrixSource) in the sparse form", what);
    if (p.k % 4) api_error(site, "%s: k (%u) must be a multiple of 4: B keeps 2 values of every 4 along K", what,
                           unsigned(p.k));
    mmad_operands(dst, fm, filter, p.unitFlag, 1024, site, what);
    const uint64_t m = p.m, n = p.n, k = p.k, kd = k / 2;
    constexpr uint64_t K0 = 32;
    const uint64_t k1 = ceil_div(k, K0), kd1 = ceil_div(kd, K0), m1 = ceil_div(m, 16), n1 = ceil_div(n, 16);
    const bool accumulate = p.isBias || !p.cmatrixInitVal;
    const uint64_t c_bytes = n1 * m1 * 256 * sizeof(int32_t);
    fm.mpnpu_touch_bytes('R', P_M, 0, m1 * k1 * FRACTAL_BYTES, site, what);
    filter.mpnpu_touch_bytes('R', P_M, 0, kd1 * n1 * FRACTAL_BYTES, site, what);
    if (accumulate) dst.mpnpu_touch_bytes('R', P_M, 0, c_bytes, site, what);
    dst.mpnpu_touch_bytes('W', P_M, 0, c_bytes, site, what);
    const int8_t* A = fm.mpnpu_addr();
    const int8_t* B = filter.mpnpu_addr();
    int32_t* C = dst.mpnpu_addr();
    const uint8_t* idx = sparse_index_buffer() + filter.mpnpu_offset() / 4;  // (the fractals' own index)
    std::vector<int32_t> pos;
    for (uint64_t j = 0; j < n; ++j) {
        sparse_positions(idx, int64_t(j), int64_t(n1), int64_t(kd), pos, site, what);
        for (uint64_t i = 0; i < m; ++i) {
            const uint64_t c_at = ((j / 16 * m1 + i / 16) * 16 + i % 16) * 16 + j % 16;
            int32_t acc = accumulate ? C[c_at] : 0;
            for (uint64_t kk = 0; kk < kd; ++kk) {
                const uint64_t ka = uint64_t(pos[kk]);
                acc += int32_t(A[((i / 16 * k1 + ka / K0) * 16 + i % 16) * K0 + ka % K0]) *
                       int32_t(B[((kk / K0 * n1 + j / 16) * 16 + j % 16) * K0 + kk % K0]);
            }
            C[c_at] = acc;
        }
    }
}

// -- L0C -> GM ------------------------------------------------------------------------------------------

// The conversion of one value on its way out of L0C (fixpipe_quant.h): refused when quantPre does not
// convert L0C's U into a T, and a vector mode needs its table.
template <typename T, typename U>
inline void check_quant(const QuantRule& q, const Site& site, const char* what) {
    if (int(q.mode) < 0 || int(q.mode) > int(QuantMode_t::VREQ8))
        api_error(site, "%s: quantPre %d is not a mode of this chip class", what, int(q.mode));
    if (!quant_converts<T, U>(q.mode))
        api_error(site, "%s: quantPre %s does not convert %s L0C data to %zu-byte elements (float -> half F322F16, "
                        "-> bfloat16_t F322BF16, -> int8_t/uint8_t (V)QF322B8_PRE; int32_t -> half (V)DEQF16, "
                        "-> int8_t/uint8_t (V)REQ8; the same type NoQuant)",
                  what, quant_name(q.mode), std::is_same_v<U, float> ? "float" : "int32_t", sizeof(T));
    if (quant_is_vector(q.mode) && q.table == nullptr)
        api_error(site, "%s: quantPre %s takes a scale per column, and none was given (the Fixpipe form with a "
                        "cbufWorkspace tensor, or SetFixPipeConfig for the L0C DataCopy)", what, quant_name(q.mode));
}

template <typename T, typename U>
inline void fix_out(const AscendC::GlobalTensor<T>& dst, const AscendC::LocalTensor<U>& src, uint32_t nSize,
                    uint32_t mSize, uint32_t srcStride, uint32_t dstStride, bool nd, uint32_t ndNum,
                    uint32_t srcNdStride, uint32_t dstNdStride, const QuantRule& quant, const Site& site,
                    const char* what) {
    static_assert(std::is_same_v<U, float> || std::is_same_v<U, int32_t>, "L0C holds float or int32_t");
    at(site);
    if (nSize == 0 || mSize == 0 || ndNum == 0) return;  // a NOP, as documented
    check_memory(src, MPNPU_MEM_L0C, site, what, "the source");
    check_quant<T, U>(quant, site, what);
    if (dstStride == 0) api_error(site, "%s: dstStride must not be 0", what);
    if (!nd && sizeof(T) == 1)
        unsupported(site, "%s: an NZ destination of 1-byte elements in GM (mpnpu writes NZ to GM for 2- and 4-byte "
                          "elements)", what);
    const uint64_t n1 = ceil_div(nSize, 16);
    const uint64_t nd_src = uint64_t(srcNdStride) * 256;  // fractals of 16 x 16
    uint64_t src_end = uint64_t(ndNum - 1) * nd_src + ((n1 - 1) * srcStride + mSize) * 16;
    T* g = dst.mpnpu_addr();
    hold_point(site, 0);
    src.mpnpu_touch('R', P_FIX, 0, src_end, site, what);
    char kind = gm_write_kind();
    std::vector<MpnpuEvent*> recs;
    for (uint32_t d = 0; d < ndNum; ++d) {
        if (nd)
            recs.push_back(gm_access(kind, P_FIX, dst.mpnpu_base(), g + uint64_t(d) * dstNdStride,
                                     uint64_t(nSize) * sizeof(T), uint64_t(dstStride) * sizeof(T), mSize, sizeof(T),
                                     site, what));
        else
            recs.push_back(gm_access(kind, P_FIX, dst.mpnpu_base(), g + uint64_t(d) * dstNdStride,
                                     uint64_t(mSize) * 16 * sizeof(T), uint64_t(dstStride) * BLOCK_BYTES, n1,
                                     sizeof(T), site, what));
    }
    for (MpnpuEvent* r : recs) mark_queued(r, P_FIX);
    const U* l = src.mpnpu_addr();
    const int op = core().atomic_op;  // (the atomic mode at issue)
    core().pipes.run(P_FIX, [=] {  // L0C drains to GM when PIPE_FIX gets to it
    uint64_t t0 = span_start();
    const std::vector<uint64_t> words = table_words(quant, nSize);  // (read before anything is written)
    const QuantRule rule{quant.mode, quant.relu, quant.scalar, words.empty() ? nullptr : words.data()};
    std::vector<T> row(nd ? nSize : 16);
    for (uint32_t d = 0; d < ndNum; ++d) {
        const U* s = l + uint64_t(d) * nd_src;
        T* o = g + uint64_t(d) * dstNdStride;
        if (nd) {
            for (uint32_t i = 0; i < mSize; ++i) {
                for (uint32_t j = 0; j < nSize; ++j)
                    row[j] = quant_convert<T>(rule, s[(j / 16) * uint64_t(srcStride) * 16 + uint64_t(i) * 16 + j % 16],
                                              j);
                store_gm(o + uint64_t(i) * dstStride, row.data(), nSize, op);
            }
        } else {
            const uint64_t block = uint64_t(dstStride) * BLOCK_BYTES / sizeof(T);
            for (uint64_t b = 0; b < n1; ++b)
                for (uint32_t i = 0; i < mSize; ++i) {
                    for (uint32_t j = 0; j < 16; ++j)
                        row[j] = quant_convert<T>(rule, s[b * srcStride * 16 + uint64_t(i) * 16 + j], b * 16 + j);
                    store_gm(o + b * block + uint64_t(i) * 16, row.data(), 16, op);
                }
        }
    }
    for (MpnpuEvent* r : recs) done(r, t0);
    });
    if (is_hold_site(site)) core().pipes.barrier(P_FIX);
    hold_point(site, 1);
}

// L0C -> L1 on PIPE_FIX, NZ to NZ (this chip class has no NZ2ND on this path): the destination's
// fractals are 32 bytes wide (C0 = 32 / sizeof(T) elements), Z columns dstStride 32-byte blocks apart.
template <typename T, typename U>
inline void fix_out_local(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src, uint32_t nSize,
                          uint32_t mSize, uint32_t srcStride, uint32_t dstStride, const QuantRule& quant,
                          const Site& site, const char* what) {
    static_assert(std::is_same_v<U, float> || std::is_same_v<U, int32_t>, "L0C holds float or int32_t");
    at(site);
    if (nSize == 0 || mSize == 0) return;  // a NOP, as documented
    check_memory(src, MPNPU_MEM_L0C, site, what, "the source");
    if (dst.mpnpu_mem() != MPNPU_MEM_L1)
        unsupported(site, "%s: the destination is not in L1 (on this chip class the fixpipe moves L0C to GM or L1)",
                    what);
    if (quant.mode == QuantMode_t::NoQuant)
        api_error(site, "%s: quantPre NoQuant is not taken on the way to L1 (the documented modes convert: F322F16, "
                        "F322BF16, (V)DEQF16, (V)QF322B8_PRE, (V)REQ8)", what);
    check_quant<T, U>(quant, site, what);
    if (dstStride == 0) api_error(site, "%s: dstStride must not be 0", what);
    check_aligned(dst.mpnpu_offset(), BLOCK_BYTES, site, what, "the L1 destination");
    constexpr uint64_t C0 = BLOCK_BYTES / sizeof(T);
    const uint64_t n1 = ceil_div(nSize, 16);
    const uint64_t src_end = ((n1 - 1) * srcStride + mSize) * 16;
    const uint64_t dst_end = (ceil_div(nSize, C0) - 1) * uint64_t(dstStride) * C0 + uint64_t(mSize) * C0;
    hold_point(site, 0);
    src.mpnpu_touch('R', P_FIX, 0, src_end, site, what);
    dst.mpnpu_touch('W', P_FIX, 0, dst_end, site, what);
    const U* l = src.mpnpu_addr();
    T* d = dst.mpnpu_addr();
    const QuantRule rule = quant;
    core().pipes.run(P_FIX, [=] {  // L0C drains to L1 when PIPE_FIX gets to it
        // the scales are read before anything is written (a table the destination overwrites still counts)
        const std::vector<uint64_t> words = table_words(rule, nSize);
        const QuantRule rule_now{rule.mode, rule.relu, rule.scalar, words.empty() ? nullptr : words.data()};
        for (uint32_t i = 0; i < mSize; ++i)
            for (uint32_t j = 0; j < nSize; ++j)
                d[(j / C0) * dstStride * C0 + uint64_t(i) * C0 + j % C0] =
                    quant_convert<T>(rule_now, l[(j / 16) * uint64_t(srcStride) * 16 + uint64_t(i) * 16 + j % 16], j);
    });
    if (is_hold_site(site)) core().pipes.barrier(P_FIX);
    hold_point(site, 1);
}

// A vector quantPre's table (cbufWorkspace, in L1): one word per column, read by PIPE_FIX.
template <typename S>
inline const uint64_t* quant_table(const AscendC::LocalTensor<S>& table, QuantMode_t q, uint32_t nSize,
                                   const Site& site, const char* what) {
    static_assert(std::is_same_v<S, uint64_t>, "Fixpipe: cbufWorkspace is a LocalTensor<uint64_t>");
    if (!quant_is_vector(q)) return nullptr;  // (the scalar modes and casts do not read it)
    check_memory(table, MPNPU_MEM_L1, site, what, "cbufWorkspace");
    check_aligned(table.mpnpu_offset(), BLOCK_BYTES, site, what, "cbufWorkspace");
    table.mpnpu_touch('R', P_FIX, 0, nSize, site, what);
    return table.mpnpu_addr();
}

template <typename T, typename U, const AscendC::FixpipeConfig& config>
inline void fixpipe_gm(const AscendC::GlobalTensor<T>& dst, const AscendC::LocalTensor<U>& src,
                       const AscendC::FixpipeParamsV220& p, const uint64_t* table, const Site& site) {
    static_assert(config.format != AscendC::CO2Layout::COLUMN_MAJOR,
                  "Fixpipe: CFG_COLUMN_MAJOR (NZ2DN) is not on this chip");
    if (p.isChannelSplit) unsupported(site, "Fixpipe: isChannelSplit");
    unit_flag_wait(p.unitFlag, P_M, site, "Fixpipe L0C->GM");
    const bool nd = config.format == AscendC::CO2Layout::ROW_MAJOR;
    fix_out(dst, src, p.nSize, p.mSize, p.srcStride, p.dstStride, nd, nd ? p.ndNum : 1u, p.srcNdStride, p.dstNdStride,
            QuantRule{p.quantPre, p.reluEn, p.deqScalar, table}, site, "Fixpipe L0C->GM");
}

template <typename T, typename U>
inline void fixpipe_local(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src,
                          const AscendC::FixpipeParamsV220& p, const uint64_t* table, const Site& site) {
    if (p.isChannelSplit) unsupported(site, "Fixpipe L0C->L1: isChannelSplit (documented for L0C->GM only)");
    unit_flag_wait(p.unitFlag, P_M, site, "Fixpipe L0C->L1");
    fix_out_local(dst, src, p.nSize, p.mSize, p.srcStride, p.dstStride,
                  QuantRule{p.quantPre, p.reluEn, p.deqScalar, table}, site, "Fixpipe L0C->L1");
}

}  // namespace cube
}  // namespace mpnpu

namespace AscendC {

// GM -> L1 (A1 / B1) or UB with ND -> NZ conversion, on PIPE_MTE2.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& intriParams, MPNPU_SITE) {
    mpnpu::cube::nd2nz(dst, src, intriParams, site);
}

// L1 -> L0A / L0B (PIPE_MTE1), fractal by fractal, optionally transposing each.
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& loadDataParams,
                     MPNPU_SITE) {
    const char* what = "LoadData L1->L0";
    mpnpu::cube::check_memory(src, MPNPU_MEM_L1, site, what, "the source");
    mpnpu::cube::check_aligned(src.mpnpu_offset(), mpnpu::BLOCK_BYTES, site, what, "the L1 source");
    mpnpu::cube::load_2d(dst, reinterpret_cast<const uint8_t*>(src.mpnpu_addr()), 0, loadDataParams, mpnpu::P_MTE1,
                         site, what, &src, static_cast<const GlobalTensor<T>*>(nullptr));
}

// L1 -> L0A / L0B (PIPE_MTE1) transposing squares: a 16 x 16 fractal of 16-bit elements, two
// side-by-side 16 x 8 fractals of 32-bit ones (the way float B reaches L0B's Zn from an L1 laid out
// ZZ), or two stacked 16 x 32 fractals of 8-bit ones; see LoadData2dTransposeParams.
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& loadDataParams, MPNPU_SITE) {
    mpnpu::cube::load_2d_transpose(dst, src, loadDataParams, site);
}

// GM -> L0A / L0B (PIPE_MTE2), fractal by fractal.
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const LoadData2DParams& loadDataParams,
                     MPNPU_SITE) {
    mpnpu::cube::load_2d(dst, reinterpret_cast<const uint8_t*>(src.mpnpu_addr()), 0, loadDataParams, mpnpu::P_MTE2,
                         site, "LoadData GM->L0", static_cast<const LocalTensor<T>*>(nullptr), &src);
}

// C (L0C) =|+= A (L0A) x B (L0B), on PIPE_M; see MmadParams for where C starts from.
// With cmatrixInitVal false and cmatrixSource true, C starts from the bias table (BT, C2): the page names
// no address for that form, so mpnpu reads the table from its start, n values of C's type.
template <typename T, typename U, typename S>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                 const MmadParams& mmadParams, MPNPU_SITE) {
    if (mmadParams.cmatrixSource && !mmadParams.cmatrixInitVal && mmadParams.n != 0) {
        const LocalTensor<T> table(TPosition::C2, 0, (uint32_t(mmadParams.n) + 15u) / 16u * 16u);
        mpnpu::cube::mmad(dst, fm, filter, &table, mmadParams, site);
        return;
    }
    mpnpu::cube::mmad(dst, fm, filter, static_cast<const LocalTensor<T>*>(nullptr), mmadParams, site);
}

// C (L0C) = bias (the bias table, C2) + A x B.
template <typename T, typename U, typename S, typename V>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                 const LocalTensor<V>& bias, const MmadParams& mmadParams, MPNPU_SITE) {
    static_assert(std::is_same_v<V, float> || std::is_same_v<V, int32_t>, "Mmad: the bias is float or int32_t");
    mpnpu::cube::mmad(dst, fm, filter, &bias, mmadParams, site);
}

// 4:2 sparse B (the MmadWithSparse and LoadDataWithSparse pages): L1 -> L0B with the index
// (PIPE_MTE1), and C (L0C) =|+= A (L0A, all of K) x the dense B (L0B, K / 2) on PIPE_M.
template <typename T = int8_t, typename U = uint8_t,
          typename std::enable_if<std::is_same<T, int8_t>::value, bool>::type = true,
          typename std::enable_if<std::is_same<U, uint8_t>::value, bool>::type = true>
inline void LoadDataWithSparse(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<U>& idx,
                               const LoadData2DParams& loadDataParam, MPNPU_SITE) {
    mpnpu::cube::load_sparse(dst, src, idx, loadDataParam, site);
}

template <typename T = int32_t, typename U = int8_t,
          typename std::enable_if<std::is_same<T, int32_t>::value, bool>::type = true,
          typename std::enable_if<std::is_same<U, int8_t>::value, bool>::type = true>
inline void MmadWithSparse(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<U>& filter,
                           const MmadParams& mmadParams, MPNPU_SITE) {
    mpnpu::cube::mmad_sparse(dst, fm, filter, mmadParams, site);
}

// L0C -> GM on PIPE_FIX: NZ2ND (CFG_ROW_MAJOR, the default) or NZ as it is (CFG_NZ), converting
// per quantPre (fixpipe_quant.h; the scalar modes' scale is deqScalar), with ReLU if reluEn; an atomic
// mode set by SetAtomicAdd/Max/Min applies.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& intriParams,
                    MPNPU_SITE) {
    mpnpu::cube::fixpipe_gm<T, U, config>(dst, src, intriParams, nullptr, site);
}

// The same, with the vector quantPre modes' table (one uint64_t per column of C, in L1).
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S = uint64_t,
          typename std::enable_if<std::is_same<S, uint64_t>::value, bool>::type = true>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsV220& intriParams, MPNPU_SITE) {
    mpnpu::cube::fixpipe_gm<T, U, config>(
        dst, src, intriParams,
        mpnpu::cube::quant_table(cbufWorkspace, intriParams.quantPre, intriParams.nSize, site, "Fixpipe L0C->GM"),
        site);
}

// L0C -> L1 on PIPE_FIX, NZ to NZ (CFG_ROW_MAJOR's NZ2ND does not apply on this path, as documented),
// converting per quantPre; dstStride counts 32-byte blocks between the destination's Z columns.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& intriParams,
                    MPNPU_SITE) {
    mpnpu::cube::fixpipe_local(dst, src, intriParams, nullptr, site);
}

template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S = uint64_t,
          typename std::enable_if<std::is_same<S, uint64_t>::value, bool>::type = true>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsV220& intriParams, MPNPU_SITE) {
    mpnpu::cube::fixpipe_local(
        dst, src, intriParams,
        mpnpu::cube::quant_table(cbufWorkspace, intriParams.quantPre, intriParams.nSize, site, "Fixpipe L0C->L1"),
        site);
}

}  // namespace AscendC
namespace mpnpu {
namespace cube {
// What both older L0C copies do first: refuse what mpnpu does not model, wait as the unit flag says,
// and give the conversion (the scalar modes' word from SetFixpipePreQuantFlag, the vector modes'
// table from SetFixPipeConfig).
inline QuantRule co12_rule(const AscendC::DataCopyCO12DstParams& p, const Site& site, const char* what) {
    if (p.channelSplit) unsupported(site, "%s: channelSplit", what);
    if (p.clipReluPre || p.eltWiseOp) unsupported(site, "%s: clipReluPre / eltWiseOp", what);
    unit_flag_wait(p.unitFlag, P_M, site, what);
    const FixState& f = fix_state();
    return QuantRule{p.quantPre, p.reluPre != 0, f.pre_quant, quant_is_vector(p.quantPre) ? f.quant_table : nullptr};
}
}  // namespace cube
}  // namespace mpnpu
namespace AscendC {

// The older L0C -> GM copy; NZ2ND uses the SetFixpipeNz2ndFlag settings.
template <typename T, typename U>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyCO12DstParams& intriParams,
                     MPNPU_SITE) {
    const char* what = "DataCopy L0C->GM";
    const mpnpu::cube::QuantRule rule = mpnpu::cube::co12_rule(intriParams, site, what);
    const mpnpu::cube::FixState& f = mpnpu::cube::fix_state();
    const bool nd = intriParams.nz2ndEn;
    mpnpu::cube::fix_out(dst, src, intriParams.nSize, intriParams.mSize, intriParams.srcStride, intriParams.dstStride,
                         nd, nd ? f.nd_num : 1u, nd ? f.src_nd_stride : 0u, nd ? f.dst_nd_stride : 0u, rule, site, what);
}

// The older L0C -> L1 copy (CO1 -> A1), NZ to NZ as Fixpipe L0C -> L1: dstStride counts 32-byte
// blocks between the destination's Z columns; quantPre converts (the scalar modes' word from
// SetFixpipePreQuantFlag, the vector modes' table from SetFixPipeConfig). NZ2ND is documented for
// the GM path only.
template <typename T, typename U>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyCO12DstParams& intriParams,
                     MPNPU_SITE) {
    const char* what = "DataCopy L0C->L1";
    if (intriParams.nz2ndEn) mpnpu::api_error(site, "%s: nz2ndEn (NZ2ND is documented for L0C->GM only)", what);
    const mpnpu::cube::QuantRule rule = mpnpu::cube::co12_rule(intriParams, site, what);
    mpnpu::cube::fix_out_local(dst, src, intriParams.nSize, intriParams.mSize, intriParams.srcStride,
                               intriParams.dstStride, rule, site, what);
}

// Fill / InitConstValue: repeatTimes repeats of blockNum blocks set to initValue, dstGap blocks
// between repeats; a block is 32 bytes in L1 (on PIPE_MTE2) and 512 bytes in L0A / L0B (on PIPE_MTE1),
// dstGap in the same unit. repeatTimes or blockNum 0 does nothing.
template <typename T>
struct InitConstValueParams {
    InitConstValueParams() {}
    InitConstValueParams(uint16_t repeatTimesIn, uint16_t blockNumIn, uint16_t dstGapIn, T initValueIn)
        : repeatTimes(repeatTimesIn), blockNum(blockNumIn), dstGap(dstGapIn), initValue(initValueIn) {}
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    T initValue{};
};

}  // namespace AscendC
namespace mpnpu {
namespace cube {
template <typename T, typename U>
inline void fill(const AscendC::LocalTensor<T>& dst, const AscendC::InitConstValueParams<U>& p, const Site& site,
                 const char* what) {
    static_assert(std::is_same_v<T, U>, "Fill / InitConstValue: the value's type must be the tensor's");
    const int mem = dst.mpnpu_mem();
    if (mem != MPNPU_MEM_L1 && mem != MPNPU_MEM_L0A && mem != MPNPU_MEM_L0B)
        api_error(site, "%s: dst must be in L1, L0A or L0B (A1/B1, A2, B2), it is in %s", what, mem_name(mem));
    if (p.repeatTimes > 32767 || p.blockNum > 32767)
        api_error(site, "%s: repeatTimes %u / blockNum %u is outside [0, 32767]", what, unsigned(p.repeatTimes),
                  unsigned(p.blockNum));
    const bool l1 = mem == MPNPU_MEM_L1;
    const uint64_t block = l1 ? 32 : 512;
    const uint8_t pipe = l1 ? P_MTE2 : P_MTE1;
    if (dst.mpnpu_offset() % block)
        api_error(site, "%s: dst must start %llu-byte aligned in %s (it starts at byte %llu)", what,
                  static_cast<unsigned long long>(block), mem_name(mem),
                  static_cast<unsigned long long>(dst.mpnpu_offset()));
    if (p.repeatTimes == 0 || p.blockNum == 0) return;
    const uint64_t run = uint64_t(p.blockNum) * block, step = run + uint64_t(p.dstGap) * block;
    dst.mpnpu_touch_bytes('W', pipe, 0, (uint64_t(p.repeatTimes) - 1) * step + run, site, what);
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.mpnpu_addr());
    const T v = p.initValue;
    const uint64_t reps = p.repeatTimes;
    core().pipes.run(pipe, [=] {
        for (uint64_t r = 0; r < reps; ++r)
            for (uint64_t i = 0; i < run; i += sizeof(T)) std::memcpy(d + r * step + i, &v, sizeof(T));
    });
}
}  // namespace cube
}  // namespace mpnpu
namespace AscendC {

template <typename T, typename U = T>
inline void Fill(const LocalTensor<T>& dst, const InitConstValueParams<U>& initConstValueParams, MPNPU_SITE) {
    mpnpu::cube::fill(dst, initConstValueParams, site, "Fill");
}
template <typename T, typename U = T>
inline void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<U>& initConstValueParams,
                           MPNPU_SITE) {
    mpnpu::cube::fill(dst, initConstValueParams, site, "InitConstValue");
}

// HF32: with it on, the cube rounds float operands in L0A / L0B to HF32 before Mmad (SetHF32Mode),
// toward zero or to nearest even (SetHF32TransMode). The pages do not give HF32's width, so mpnpu
// refuses turning it on (it multiplies float in float32) and accepts it off; the rounding mode alone
// changes nothing while it is off. The older form takes a bool, as kernels still call it.
enum class HF32Mode : uint8_t { DISABLE = 0, ENABLE = 1 };
enum class HF32TransMode : uint8_t { NEAREST_EVEN = 0, NEAREST_ZERO = 1 };
inline void SetHF32Mode(bool hf32Mode, MPNPU_SITE) {
    mpnpu::at(site);
    if (hf32Mode) mpnpu::unsupported(site, "SetHF32Mode(enable) (mpnpu multiplies float inputs in float32)");
}
inline void SetHF32Mode(HF32Mode mode, MPNPU_SITE) { SetHF32Mode(mode == HF32Mode::ENABLE, site); }
inline void SetHF32TransMode(bool hf32TransMode, MPNPU_SITE) {
    (void)hf32TransMode;
    mpnpu::at(site);
}
inline void SetHF32TransMode(HF32TransMode mode, MPNPU_SITE) { SetHF32TransMode(mode == HF32TransMode::NEAREST_ZERO, site); }

inline void SetFixpipeNz2ndFlag(uint16_t ndNum, uint16_t srcNdStride, uint16_t dstNdStride, MPNPU_SITE) {
    mpnpu::at(site);
    mpnpu::cube::FixState& f = mpnpu::cube::fix_state();
    f.nd_num = ndNum;
    f.src_nd_stride = srcNdStride;
    f.dst_nd_stride = dstNdStride;
}

// The fixpipe's quantization table (quantPre, a uint64_t tensor in the fixpipe buffer, C2PIPE2GM),
// which the per-channel quant modes read; isUnitFlag clears L0C's unit flags (mpnpu keeps none).
// reluPre is reserved: pass an empty tensor.
template <typename T>
inline void SetFixPipeConfig(const LocalTensor<T>& reluPre, const LocalTensor<T>& quantPre, bool isUnitFlag = false,
                             MPNPU_SITE) {
    (void)reluPre;
    (void)isUnitFlag;
    mpnpu::at(site);
    static_assert(std::is_same_v<T, uint64_t>, "SetFixPipeConfig: the quant tensor holds uint64_t");
    mpnpu::cube::check_memory(quantPre, MPNPU_MEM_FB, site, "SetFixPipeConfig", "quantPre");
    mpnpu::cube::fix_state().quant_table = quantPre.mpnpu_addr();
}

// One tensor: the quant table (setRelu must be false), or, with isUnitFlag, any L0C tensor, to
// clear L0C's unit flags.
template <typename T, bool setRelu = false>
inline void SetFixPipeConfig(const LocalTensor<T>& preData, bool isUnitFlag = false, MPNPU_SITE) {
    static_assert(!setRelu, "SetFixPipeConfig: setRelu must be false (the one-tensor form sets the quant table)");
    mpnpu::at(site);
    const int mem = preData.mpnpu_mem();
    if (isUnitFlag && mem == MPNPU_MEM_L0C) return;  // (unit flags: mpnpu keeps none to clear)
    if (mem != MPNPU_MEM_FB)
        mpnpu::api_error(site, "SetFixPipeConfig: preData must be in the fixpipe buffer (C2PIPE2GM)%s, this tensor is "
                               "in %s", isUnitFlag ? " or L0C" : "", mpnpu::mem_name(mem));
    if (sizeof(T) != sizeof(uint64_t))
        mpnpu::api_error(site, "SetFixPipeConfig: the quant table holds uint64_t (this tensor's elements are %zu bytes)",
                         sizeof(T));
    mpnpu::cube::fix_state().quant_table = reinterpret_cast<const uint64_t*>(preData.mpnpu_addr());
}

inline void SetFixpipePreQuantFlag(uint64_t config, MPNPU_SITE) {
    mpnpu::at(site);
    mpnpu::cube::fix_state().pre_quant = config;
}

// The order in which Mmad produces its result (column major: along M first, then N; row major: along N
// first). Only the order of the work: mpnpu's Mmad computes the same result either way, so the
// setting is kept and changes nothing.
inline void SetMMColumnMajor() { mpnpu::cube::fix_state().row_major = false; }
inline void SetMMRowMajor() { mpnpu::cube::fix_state().row_major = true; }
// The older name (the API's change list): true is SetMMRowMajor, false SetMMColumnMajor.
inline void SetMMLayoutTransform(bool rowMajor) {
    if (rowMajor) SetMMRowMajor();
    else SetMMColumnMajor();
}

// The bytes of L0C. Not on an API page: a public kernel (ops-nn batch_mat_mul_v3) divides it by a
// tile's bytes to count the tiles L0C holds, so it is this chip class's L0C size.
constexpr uint32_t TOTAL_L0C_SIZE = uint32_t(mpnpu::L0C_BYTES);

}  // namespace AscendC

#endif  // MPNPU_CUBE_BASIC_H
