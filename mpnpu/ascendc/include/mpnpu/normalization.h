// The normalization high-level calls on the vector unit: LayerNorm (the [B, S, H] form with mean and
// variance, and the [A, R] form with LayerNormPara giving mean and rstd), Normalize, LayerNormGrad,
// LayerNormGradBeta, DeepNorm, RmsNorm, WelfordUpdate and WelfordFinalize. Their host helpers and the
// temporary-buffer model are in tiling/normalization_tiling.h; the tiling structs in
// kernel_tiling/kernel_tiling.h.
//
// What each computes (per row; the row's statistics over its first `n` elements, n = the original
// length H or R, the rest of the row being the caller's padding, documented to be zeros):
//   LayerNorm [B,S,H]: mean = sum(x) / n, var = sum((x - mean)^2) / n,
//                      y = gamma * (x - mean) / sqrt(var + eps) + beta; outputs y, mean, var.
//   LayerNorm [A,R]:   the same, with rstd = 1 / sqrt(var + eps) output instead of var (the config's
//                      isOutputRstd = false: var); isNoGamma / isNoBeta leave gamma / beta out.
//   Normalize [A,R]:   given mean and var: rstd = 1 / sqrt(var + eps), y as LayerNorm's; outputs y, rstd.
//   DeepNorm [B,S,H]:  LayerNorm [B,S,H] of alpha * x + gx; its third output is the variance.
//   RmsNorm [B,S,H]:   y = x / sqrt(sum(x^2) / n + eps) * gamma.
//   LayerNormGrad:     the page's formulas: pd_xl = dy * gamma, r = (var + eps)^-0.5,
//                      pd_var = sum(-0.5 * pd_xl * (x - mean) * r^3), pd_mean = sum(-pd_xl * r) +
//                      pd_var / n * sum(-2 (x - mean)), pd_x = pd_xl * r + pd_var * 2/n * (x - mean) +
//                      pd_mean / n, resForGamma = (x - mean) * r.
//   LayerNormGradBeta: pdGamma[h] = sum over the B x S rows of dy * resForGamma, pdBeta[h] = sum of dy.
//   WelfordUpdate:     for the first abComputeLength elements: d = x - mean, mean' = mean + d * nRec,
//                      M' = M + d * (x - mean'); the rest of the outputs are the inputs (isInplace) or
//                      left as they were.
//   WelfordFinalize:   c_j = counts[j] (or headCount for the first headCountLength elements, tailCount
//                      for the rest), Mean = rRec * sum(c_j * mean_j), Var = coef * (sum(M_j) +
//                      sum(c_j * (mean_j - Mean)^2)), coef = rRec (rRecWithCorrection with the config's
//                      isCorrection); one element each.
// Every element of a row is written, padding included, by the row's formula. The arithmetic: the
// elements read as float and computed in double, each result rounded once to the output's type (so for
// half data: in float or better, as the pages require); sums in order along the row. The device sums
// pairwise in float (the [A,R] form's page says so) with its own reciprocal square root, so its results
// differ from these in the last float bits; conformance compares within float rounding.
//
// Temporary buffer: the caller's sharedTmpBuffer (in UB, 32-byte aligned, overlapping no operand, as
// documented) must hold what the tiling's pass needs (tiling/normalization_tiling.h: a smaller one is
// an API error naming the host helper whose minimum it is below); that part is traced as written and
// then read on PIPE_V. The framework's own buffer (the forms without sharedTmpBuffer) is the Unified
// Buffer the core's TPipe has not given out: the call checks that it holds the same bytes (an API
// error otherwise), and does not trace it. The tiling's split is not otherwise followed: each call is
// computed whole.
//
// Operands: every tensor in UB and 32-byte aligned, large enough for the shape; the overlaps the pages
// allow (LayerNorm [B,S,H]'s output on inputX, the grads' outputs on their inputs, DeepNorm's dst on
// src with isReuseSrc, RmsNorm's dst on src) only as the same tensor, every other overlap an API error.
// Each operand is read or written on PIPE_V as one contiguous record, memchecked against its tensor.
// Not implemented (refused at compile time): isOnlyOutput = true (the pages: not supported yet), a
// ReducePattern other than AR, T other than half and float, U (the statistics) other than float where
// the pages fix it, isReuseSource with half data.
#ifndef MPNPU_NORMALIZATION_H
#define MPNPU_NORMALIZATION_H

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "../kernel_tiling/kernel_tiling.h"
#include "../tiling/normalization_tiling.h"
#include "native/rt.h"
#include "reduce_lib.h"
#include "tensor.h"
#include "tpipe.h"
#include "types.h"
#include "vector/engine.h"

namespace AscendC {

// The [A, R] LayerNorm's options: leave beta / gamma out, output only y (not supported), output rstd
// (true) or the variance (false).
struct LayerNormConfig {
    bool isNoBeta = false;
    bool isNoGamma = false;
    bool isOnlyOutput = false;
    bool isOutputRstd = true;
};
constexpr LayerNormConfig LNCFG_NORM = {false, false, false, true};

// The [A, R] call's shape: A rows of rLength elements, each row rLengthWithPadding (32-byte aligned) long.
struct LayerNormPara {
    uint32_t aLength = 0;
    uint32_t rLength = 0;
    uint32_t rLengthWithPadding = 0;
    LayerNormPara() = default;
    LayerNormPara(uint32_t a, uint32_t r, uint32_t rPadded) : aLength(a), rLength(r), rLengthWithPadding(rPadded) {}
    // (the pages' example: a row with no padding)
    LayerNormPara(uint32_t a, uint32_t rPadded) : aLength(a), rLength(rPadded), rLengthWithPadding(rPadded) {}
};

// (ReducePattern: reduce_lib.h's, which the library's reductions share)

struct NormalizeConfig {
    ReducePattern reducePattern = ReducePattern::AR;
    int32_t aLength = -1;  // -1: para's aLength; otherwise it must be para's aLength
    bool isNoBeta = false;
    bool isNoGamma = false;
    bool isOnlyOutput = false;
};
constexpr NormalizeConfig NLCFG_NORM = {ReducePattern::AR, -1, false, false, false};

struct NormalizePara {
    uint32_t aLength = 0;
    uint32_t rLength = 0;
    uint32_t rLengthWithPadding = 0;
};

struct LayerNormGradShapeInfo {
    DataFormat dataFormat = DataFormat::ND;
};

struct WelfordUpdateConfig {
    bool isInplace = false;  // outside abComputeLength the outputs are the inputs (true) or untouched
};
constexpr WelfordUpdateConfig WFUPDATE_DEFAULT_CFG = {false};

struct WelfordUpdateParam {
    uint32_t rnLength = 0;  // (1, the only value supported)
    uint32_t abLength = 0;
    uint32_t abComputeLength = 0;
    float nRec = 0;
};

struct WelfordFinalizeConfig {
    bool isCorrection = false;
};
constexpr WelfordFinalizeConfig WFFINALIZE_DEFAULT_CFG = {false};

struct WelfordFinalizePara {
    uint32_t rnLength = 0;
    uint32_t abLength = 0;
    uint32_t headCount = 0;
    uint32_t headCountLength = 0;
    uint32_t tailCount = 0;
    uint32_t tailCountLength = 0;
    float abRec = 0;
    float rRec = 0;
    float rRecWithCorrection = 0;
};

}  // namespace AscendC

namespace mpnpu {
namespace norm {

// An operand's bytes, for the overlap rules: two outputs never overlap; an output and an input only
// when both carry the same nonzero `share` and are the same tensor (start at the same byte).
struct Span {
    const void* p;
    uint64_t bytes;
    const char* what;
    bool out;
    int share;
};

inline void check_spans(std::initializer_list<Span> spans, const Site& site, const char* name) {
    for (const Span* a = spans.begin(); a != spans.end(); ++a)
        for (const Span* b = a + 1; b != spans.end(); ++b) {
            if ((!a->out && !b->out) || !vec::overlaps(a->p, a->bytes, b->p, b->bytes)) continue;
            if (a->out != b->out && a->share && a->share == b->share && a->p == b->p) continue;
            api_error(site, "%s: %s and %s overlap (%s)", name, a->what, b->what,
                      a->out && b->out ? "each output needs its own space"
                      : a->share && a->share == b->share ? "this output may reuse that input only as the same tensor"
                                                         : "the call does not let this output share that input's space");
        }
}

// A tensor operand of n elements: in UB, 32-byte aligned, holding them.
template <typename T>
inline Span operand(const AscendC::LocalTensor<T>& t, uint64_t n, bool out, int share, const Site& site,
                    const char* name, const char* what) {
    vec::check_operand(t, 32, site, name, what);
    if (n > t.GetSize())
        api_error(site, "%s: %s has %u elements; the shape needs %llu", name, what, unsigned(t.GetSize()),
                  (unsigned long long)n);
    return Span{t.mpnpu_addr(), n * sizeof(T), what, out, share};
}

// The caller's buffer: at least `need` bytes (the tiling's pass; `helper` names whose minimum),
// overlapping no operand. Traced as written and read; returns the bytes used.
inline uint64_t use_tmp(const AscendC::LocalTensor<uint8_t>* tmp, uint64_t need, std::initializer_list<Span> spans,
                        const Site& site, const char* name, const char* helper) {
    if (!tmp) {
        // The framework's buffer is the Unified Buffer the core's pipe has not given out (the kernel
        // reserves it by leaving it free): it must hold the same bytes. Not traced (no buffer owns it).
        const AscendC::TPipe* pipe = GetTPipePtr();
        if (pipe == nullptr) return 0;
        const uint64_t used = pipe->mpnpu_state()->used[MPNPU_MEM_UB], size = memory_size(MPNPU_MEM_UB);
        const uint64_t left = size > used ? size - used : 0;
        if (left < need)
            api_error(site, "%s: the framework's buffer (the Unified Buffer the pipe has not given out: %llu bytes) "
                      "is smaller than the %llu bytes this call needs (leave at least %s's minimum, and what the "
                      "tiling's pass takes)", name, (unsigned long long)left, (unsigned long long)need, helper);
        return 0;
    }
    vec::check_operand(*tmp, 32, site, name, "sharedTmpBuffer");
    if (tmp->GetSize() < need)
        api_error(site, "%s: sharedTmpBuffer has %u bytes, fewer than the %llu this call needs (at least %s's "
                  "minimum, and what the tiling's pass takes)", name, unsigned(tmp->GetSize()),
                  (unsigned long long)need, helper);
    for (const Span& s : spans)
        if (vec::overlaps(tmp->mpnpu_addr(), need, s.p, s.bytes))
            api_error(site, "%s: sharedTmpBuffer overlaps %s (the call takes separate operands)", name, s.what);
    if (need) {
        tmp->mpnpu_touch_bytes('W', P_V, 0, need, site, name);
        tmp->mpnpu_touch_bytes('R', P_V, 0, need, site, name);
    }
    return need;
}

// Read n elements (traced) as doubles.
template <typename T>
inline std::vector<double> load(const AscendC::LocalTensor<T>& t, uint64_t n, const Site& site, const char* name) {
    t.mpnpu_touch('R', P_V, 0, n, site, name);
    const T* p = t.mpnpu_addr();
    std::vector<double> v(n);
    for (uint64_t i = 0; i < n; ++i) v[i] = double(to_float(p[i]));
    return v;
}
// Write v's elements from `first` (traced), each rounded once to T.
template <typename T>
inline void store(const AscendC::LocalTensor<T>& t, const std::vector<double>& v, const Site& site, const char* name,
                  uint64_t first = 0, uint64_t n = UINT64_MAX) {
    if (n == UINT64_MAX) n = v.size() - first;
    if (n == 0) return;
    t.mpnpu_touch('W', P_V, first, n, site, name);
    T* p = t.mpnpu_addr();
    for (uint64_t i = first; i < first + n; ++i) {
        if constexpr (std::is_same_v<T, float>) p[i] = float(v[i]);
        else p[i] = from_float<T>(float(v[i]));
    }
}

// Per row of `width` elements: the mean and (biased) variance over its first n.
struct Stats {
    std::vector<double> mean, var;
};
inline Stats row_stats(const std::vector<double>& x, uint64_t rows, uint32_t width, uint32_t n) {
    Stats s{std::vector<double>(rows), std::vector<double>(rows)};
    for (uint64_t r = 0; r < rows; ++r) {
        const double* row = x.data() + r * width;
        double sum = 0;
        for (uint32_t j = 0; j < n; ++j) sum += row[j];
        const double m = sum / n;
        double sq = 0;
        for (uint32_t j = 0; j < n; ++j) sq += (row[j] - m) * (row[j] - m);
        s.mean[r] = m;
        s.var[r] = sq / n;
    }
    return s;
}
// y = gamma * (x - mean) * rstd + beta over whole rows (an empty gamma is 1, an empty beta 0).
inline std::vector<double> affine(const std::vector<double>& x, uint64_t rows, uint32_t width,
                                  const std::vector<double>& mean, const std::vector<double>& rstd,
                                  const std::vector<double>& gamma, const std::vector<double>& beta) {
    std::vector<double> y(x.size());
    for (uint64_t r = 0; r < rows; ++r)
        for (uint32_t j = 0; j < width; ++j) {
            const uint64_t i = r * width + j;
            double v = (x[i] - mean[r]) * rstd[r];
            if (!gamma.empty()) v *= gamma[j];
            if (!beta.empty()) v += beta[j];
            y[i] = v;
        }
    return y;
}
inline std::vector<double> rstd_of(const std::vector<double>& var, double eps) {
    std::vector<double> r(var.size());
    for (size_t i = 0; i < var.size(); ++i) r[i] = 1.0 / std::sqrt(var[i] + eps);
    return r;
}

// The B x S x H shape of a tiling (LayerNorm's, DeepNorm's, the grads'), checked.
struct Rows {
    uint64_t rows;
    uint32_t h, n, pass;  // row length, original row length, rows a pass
};
template <typename T, class Tiling>
inline Rows bsh_shape(const Tiling& t, uint32_t pass, const Site& site, const char* name, const char* helper) {
    const Rows s{uint64_t(t.bLength) * t.sLength, t.hLength, t.originalHLength ? t.originalHLength : t.hLength, pass};
    if (s.rows == 0 || s.h == 0)
        api_error(site, "%s: the tiling gives no shape (B %u, S %u, H %u: fill it with %s)", name, t.bLength,
                  t.sLength, t.hLength, helper);
    if ((uint64_t(s.h) * sizeof(T)) % 32)
        api_error(site, "%s: H %u is not 32-byte aligned (the last axis must be padded to a multiple of %u elements)",
                  name, s.h, unsigned(32 / sizeof(T)));
    if (s.n > s.h)
        api_error(site, "%s: the tiling's original H %u is longer than H %u", name, s.n, s.h);
    if (s.pass == 0)
        api_error(site, "%s: the tiling gives no rows a pass (%s was given a stack below the minimum the "
                  "MaxMinTmpSize helper gives)", name, helper);
    return s;
}
inline uint64_t pass_bytes(Call c, uint32_t typeSize, uint64_t pass, uint64_t rows, uint32_t width) {
    return rows_bytes(c, typeSize, pass < rows ? pass : rows, width);
}

// -- LayerNorm [B, S, H] and DeepNorm (alpha * x + gx first) -----------------------------------------------
template <typename T, class Tiling>
inline void layer_norm_bsh(const AscendC::LocalTensor<T>& y, const AscendC::LocalTensor<T>& mean,
                           const AscendC::LocalTensor<T>& var, const AscendC::LocalTensor<T>& x,
                           const AscendC::LocalTensor<T>* gx, const AscendC::LocalTensor<T>& gamma,
                           const AscendC::LocalTensor<T>& beta, const AscendC::LocalTensor<uint8_t>* tmp, double alpha,
                           double eps, const Tiling& tiling, bool reuseSrc, bool basicBlock, const Site& site,
                           const char* name) {
    vec::start(site, name);
    const bool deep = gx != nullptr;
    const char* helper = deep ? "GetDeepNormTilingInfo" : "GetLayerNormNDTilingInfo";
    const Rows s = bsh_shape<T>(tiling, tiling.bsCurLength, site, name, helper);
    if (basicBlock && !basic_block_ok(uint32_t(s.rows), s.h, kDeepNormBasicHMax))
        api_error(site, "%s: isBasicBlock needs H a multiple of 64 up to %u and B x S a multiple of 8 (H %u, "
                  "B x S %llu)", name, kDeepNormBasicHMax, s.h, (unsigned long long)s.rows);
    const uint64_t n = s.rows * s.h;
    const int reuse = reuseSrc ? 1 : 0;
    const Span sy = operand(y, n, true, reuse, site, name, deep ? "dstLocal" : "output");
    const Span sm = operand(mean, s.rows, true, 0, site, name, deep ? "meanLocal" : "outputMean");
    const Span sv = operand(var, s.rows, true, 0, site, name, deep ? "rstdLocal" : "outputVariance");
    const Span sx = operand(x, n, false, reuse, site, name, deep ? "srcLocal" : "inputX");
    const Span sg = operand(gamma, s.h, false, 0, site, name, deep ? "gammaLocal" : "gamma");
    const Span sb = operand(beta, s.h, false, 0, site, name, deep ? "betaLocal" : "beta");
    const Span sgx = deep ? operand(*gx, n, false, 0, site, name, "gxLocal") : Span{nullptr, 0, "", false, 0};
    check_spans({sy, sm, sv, sx, sg, sb, sgx}, site, name);
    const Call call = deep ? Call::DeepNorm : Call::LayerNorm;
    std::vector<double> in = load(x, n, site, name);
    if (deep) {
        const std::vector<double> g = load(*gx, n, site, name);
        for (uint64_t i = 0; i < n; ++i) in[i] = alpha * in[i] + g[i];
    }
    const std::vector<double> gv = load(gamma, s.h, site, name), bv = load(beta, s.h, site, name);
    use_tmp(tmp, pass_bytes(call, sizeof(T), s.pass, s.rows, s.h), {sy, sm, sv, sx, sg, sb, sgx}, site, name,
            deep ? "GetDeepNormMaxMinTmpSize" : "GetLayerNormMaxMinTmpSize");
    const Stats st = row_stats(in, s.rows, s.h, s.n);
    store(y, affine(in, s.rows, s.h, st.mean, rstd_of(st.var, eps), gv, bv), site, name);
    store(mean, st.mean, site, name);
    store(var, st.var, site, name);
}

// -- LayerNorm [A, R] and Normalize --------------------------------------------------------------------------
struct Ar {
    uint32_t a, r, rp;
};
template <typename T>
inline Ar ar_shape(uint32_t a, uint32_t r, uint32_t rp, const Site& site, const char* name) {
    if (a == 0 || r == 0)
        api_error(site, "%s: aLength %u and rLength %u must both be above 0", name, a, r);
    if (r > rp)
        api_error(site, "%s: rLength %u is longer than rLengthWithPadding %u", name, r, rp);
    if ((uint64_t(rp) * sizeof(T)) % 32)
        api_error(site, "%s: rLengthWithPadding %u is not 32-byte aligned (a multiple of %u elements)", name, rp,
                  unsigned(32 / sizeof(T)));
    return Ar{a, r, rp};
}

// given_mean / given_var: Normalize's inputs (null: LayerNorm computes them). out2: rstd, or LayerNorm's
// variance when !rstd_out.
template <typename U, typename T>
inline void layer_norm_ar(const AscendC::LocalTensor<T>& y, const AscendC::LocalTensor<float>* mean_out,
                          const AscendC::LocalTensor<float>& out2, const AscendC::LocalTensor<float>* given_mean,
                          const AscendC::LocalTensor<float>* given_var, const AscendC::LocalTensor<T>& x,
                          const AscendC::LocalTensor<U>& gamma, const AscendC::LocalTensor<U>& beta,
                          const AscendC::LocalTensor<uint8_t>* tmp, float eps, const Ar& s, uint64_t tmp_need,
                          bool noGamma, bool noBeta, bool rstd_out, const Site& site, const char* name,
                          const char* helper) {
    const uint64_t n = uint64_t(s.a) * s.rp;
    const bool normalize = given_mean != nullptr;
    const Span sy = operand(y, n, true, 0, site, name, "output");
    const Span s2 = operand(out2, s.a, true, 0, site, name, rstd_out ? "outputRstd" : "outputVariance");
    const Span sm = normalize ? operand(*given_mean, s.a, false, 0, site, name, "inputMean")
                              : operand(*mean_out, s.a, true, 0, site, name, "outputMean");
    const Span sv = normalize ? operand(*given_var, s.a, false, 0, site, name, "inputVariance")
                              : Span{nullptr, 0, "", false, 0};
    const Span sx = operand(x, n, false, 0, site, name, "inputX");
    const Span none{nullptr, 0, "", false, 0};
    const Span sg = noGamma ? none : operand(gamma, s.rp, false, 0, site, name, "gamma");
    const Span sb = noBeta ? none : operand(beta, s.rp, false, 0, site, name, "beta");
    check_spans({sy, s2, sm, sv, sx, sg, sb}, site, name);
    const std::vector<double> in = load(x, n, site, name);
    const std::vector<double> gv = noGamma ? std::vector<double>{} : load(gamma, s.rp, site, name);
    const std::vector<double> bv = noBeta ? std::vector<double>{} : load(beta, s.rp, site, name);
    Stats st;
    if (normalize) {
        st.mean = load(*given_mean, s.a, site, name);
        st.var = load(*given_var, s.a, site, name);
    }
    use_tmp(tmp, tmp_need, {sy, s2, sm, sv, sx, sg, sb}, site, name, helper);
    if (!normalize) st = row_stats(in, s.a, s.rp, s.r);
    const std::vector<double> rstd = rstd_of(st.var, eps);
    store(y, affine(in, s.a, s.rp, st.mean, rstd, gv, bv), site, name);
    if (!normalize) store(*mean_out, st.mean, site, name);
    store(out2, rstd_out ? rstd : st.var, site, name);
}

// -- RmsNorm ---------------------------------------------------------------------------------------------------
template <typename T>
inline void rms_norm(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                     const AscendC::LocalTensor<T>& gamma, const AscendC::LocalTensor<uint8_t>* tmp, double eps,
                     const ::RmsNormTiling& tiling, bool basicBlock, const Site& site) {
    const char* name = "RmsNorm";
    vec::start(site, name);
    const Rows s = bsh_shape<T>(tiling, tiling.mainBsLength, site, name, "GetRmsNormTilingInfo");
    if (basicBlock && !basic_block_ok(uint32_t(s.rows), s.h, kRmsNormBasicHMax))
        api_error(site, "%s: isBasicBlock needs H a multiple of 64 below 2048 and B x S a multiple of 8 (H %u, "
                  "B x S %llu)", name, s.h, (unsigned long long)s.rows);
    const uint64_t n = s.rows * s.h;
    const Span sd = operand(dst, n, true, 1, site, name, "dstLocal");
    const Span ss = operand(src, n, false, 1, site, name, "srcLocal");
    const Span sg = operand(gamma, s.h, false, 0, site, name, "gammaLocal");
    check_spans({sd, ss, sg}, site, name);
    const std::vector<double> x = load(src, n, site, name), g = load(gamma, s.h, site, name);
    use_tmp(tmp, pass_bytes(Call::RmsNorm, sizeof(T), s.pass, s.rows, s.h), {sd, ss, sg}, site, name,
            "GetRmsNormMaxMinTmpSize");
    std::vector<double> y(n);
    for (uint64_t r = 0; r < s.rows; ++r) {
        const double* row = x.data() + r * s.h;
        double sq = 0;
        for (uint32_t j = 0; j < s.n; ++j) sq += row[j] * row[j];
        const double k = 1.0 / std::sqrt(sq / s.n + eps);
        for (uint32_t j = 0; j < s.h; ++j) y[r * s.h + j] = row[j] * k * g[j];
    }
    store(dst, y, site, name);
}

// -- LayerNormGrad ------------------------------------------------------------------------------------------
template <typename T>
inline void layer_norm_grad(const AscendC::LocalTensor<T>& pdx, const AscendC::LocalTensor<T>& res,
                            const AscendC::LocalTensor<T>& dy, const AscendC::LocalTensor<T>& x,
                            const AscendC::LocalTensor<T>& variance, const AscendC::LocalTensor<T>& mean,
                            const AscendC::LocalTensor<T>& gamma, const AscendC::LocalTensor<uint8_t>* tmp, double eps,
                            const ::LayerNormGradTiling& tiling, const AscendC::LayerNormGradShapeInfo& info,
                            const Site& site) {
    const char* name = "LayerNormGrad";
    vec::start(site, name);
    if (info.dataFormat != AscendC::DataFormat::ND)
        api_error(site, "%s: only the ND format is supported (shapeInfo.dataFormat = DataFormat::ND)", name);
    const Rows s = bsh_shape<T>(tiling, tiling.nohCalSize, site, name, "GetLayerNormGradNDTilingInfo");
    const uint64_t n = s.rows * s.h;
    // (the page: sources and destinations may share space; any output on any input, as the same tensor:
    // every input is read whole before an output is written)
    const Span so = operand(pdx, n, true, 1, site, name, "outputPdX");
    const Span sr = operand(res, n, true, 1, site, name, "resForGamma");
    const Span sdy = operand(dy, n, false, 1, site, name, "inputDy");
    const Span sx = operand(x, n, false, 1, site, name, "inputX");
    const Span sv = operand(variance, s.rows, false, 1, site, name, "inputVariance");
    const Span sm = operand(mean, s.rows, false, 1, site, name, "inputMean");
    const Span sg = operand(gamma, s.h, false, 1, site, name, "inputGamma");
    check_spans({so, sr, sdy, sx, sv, sm, sg}, site, name);
    const std::vector<double> d = load(dy, n, site, name), xv = load(x, n, site, name);
    const std::vector<double> vv = load(variance, s.rows, site, name), mv = load(mean, s.rows, site, name);
    const std::vector<double> gv = load(gamma, s.h, site, name);
    use_tmp(tmp, pass_bytes(Call::LayerNormGrad, sizeof(T), s.pass, s.rows, s.h), {so, sr, sdy, sx, sv, sm, sg},
            site, name, "GetLayerNormGradMaxMinTmpSize");
    std::vector<double> out(n), rg(n);
    const double inv = 1.0 / s.n;
    for (uint64_t r = 0; r < s.rows; ++r) {
        const double rs = 1.0 / std::sqrt(vv[r] + eps), rs3 = rs * rs * rs;
        double pd_var = 0, sum_xl = 0, sum_dev = 0;
        for (uint32_t j = 0; j < s.n; ++j) {
            const uint64_t i = r * s.h + j;
            const double xl = d[i] * gv[j], dev = xv[i] - mv[r];
            pd_var += -0.5 * xl * dev * rs3;
            sum_xl += -xl * rs;
            sum_dev += -2.0 * dev;
        }
        const double pd_mean = sum_xl + pd_var * inv * sum_dev;
        for (uint32_t j = 0; j < s.h; ++j) {
            const uint64_t i = r * s.h + j;
            const double xl = d[i] * gv[j], dev = xv[i] - mv[r];
            out[i] = xl * rs + pd_var * 2.0 * inv * dev + pd_mean * inv;
            rg[i] = dev * rs;
        }
    }
    store(pdx, out, site, name);
    store(res, rg, site, name);
}

// -- LayerNormGradBeta ---------------------------------------------------------------------------------------
template <typename T>
inline void layer_norm_grad_beta(const AscendC::LocalTensor<T>& pdGamma, const AscendC::LocalTensor<T>& pdBeta,
                                 const AscendC::LocalTensor<T>& res, const AscendC::LocalTensor<T>& dy,
                                 const AscendC::LocalTensor<uint8_t>* tmp, const ::LayerNormGradBetaTiling& tiling,
                                 const Site& site) {
    const char* name = "LayerNormGradBeta";
    vec::start(site, name);
    const Rows s = bsh_shape<T>(tiling, tiling.bsCurLength, site, name, "GetLayerNormGradBetaNDTilingInfo");
    const uint64_t n = s.rows * s.h;
    // (as LayerNormGrad: any output on any input, as the same tensor)
    const Span sg = operand(pdGamma, s.h, true, 1, site, name, "outputPdGamma");
    const Span sb = operand(pdBeta, s.h, true, 1, site, name, "outputPdBeta");
    const Span sr = operand(res, n, false, 1, site, name, "resForGamma");
    const Span sd = operand(dy, n, false, 1, site, name, "inputDy");
    check_spans({sg, sb, sr, sd}, site, name);
    const std::vector<double> rv = load(res, n, site, name), dv = load(dy, n, site, name);
    use_tmp(tmp, pass_bytes(Call::LayerNormGradBeta, sizeof(T), s.pass, s.rows, s.h), {sg, sb, sr, sd}, site, name,
            "GetLayerNormGradBetaMaxMinTmpSize");
    std::vector<double> g(s.h, 0.0), b(s.h, 0.0);
    for (uint64_t r = 0; r < s.rows; ++r)
        for (uint32_t j = 0; j < s.h; ++j) {
            g[j] += dv[r * s.h + j] * rv[r * s.h + j];
            b[j] += dv[r * s.h + j];
        }
    store(pdGamma, g, site, name);
    store(pdBeta, b, site, name);
}

// -- WelfordUpdate / WelfordFinalize -----------------------------------------------------------------------
template <typename T, typename U>
inline void welford_update(const AscendC::LocalTensor<U>& outMean, const AscendC::LocalTensor<U>& outVar,
                           const AscendC::LocalTensor<U>& inMean, const AscendC::LocalTensor<U>& inVar,
                           const AscendC::LocalTensor<T>& x, const AscendC::LocalTensor<uint8_t>* tmp,
                           const AscendC::WelfordUpdateParam& para, bool inplace, const Site& site) {
    const char* name = "WelfordUpdate";
    vec::start(site, name);
    if (para.rnLength != 1) api_error(site, "%s: para.rnLength is %u; only 1 is supported", name, para.rnLength);
    if (para.abLength == 0 || para.abLength % (32 / sizeof(T)))
        api_error(site, "%s: para.abLength %u must be a multiple of %u (32 bytes of inputX)", name, para.abLength,
                  unsigned(32 / sizeof(T)));
    if (para.abComputeLength == 0 || para.abComputeLength > para.abLength)
        api_error(site, "%s: para.abComputeLength %u must be in [1, abLength %u]", name, para.abComputeLength,
                  para.abLength);
    const uint32_t n = para.abLength, k = para.abComputeLength;
    const Span a = operand(outMean, n, true, 0, site, name, "outputMean");
    const Span b = operand(outVar, n, true, 0, site, name, "outputVariance");
    const Span c = operand(inMean, n, false, 0, site, name, "inputMean");
    const Span d = operand(inVar, n, false, 0, site, name, "inputVariance");
    const Span e = operand(x, n, false, 0, site, name, "inputX");
    check_spans({a, b, c, d, e}, site, name);
    // (computed in float, in the formula's order: the device's own steps on float data)
    const uint64_t rd = inplace ? n : k;
    inMean.mpnpu_touch('R', P_V, 0, rd, site, name);
    inVar.mpnpu_touch('R', P_V, 0, rd, site, name);
    x.mpnpu_touch('R', P_V, 0, k, site, name);
    use_tmp(tmp, rows_bytes(Call::WelfordUpdate, sizeof(T), 1, n), {a, b, c, d, e}, site, name,
            "GetWelfordUpdateMaxMinTmpSize");
    const U* mi = inMean.mpnpu_addr();
    const U* vi = inVar.mpnpu_addr();
    const T* xi = x.mpnpu_addr();
    std::vector<float> m(rd), v(rd);
    for (uint32_t j = 0; j < rd; ++j) {
        m[j] = to_float(mi[j]);
        v[j] = to_float(vi[j]);
        if (j >= k) continue;
        const float xv = to_float(xi[j]), delta = xv - m[j];
        const float m1 = m[j] + delta * para.nRec;
        v[j] = v[j] + delta * (xv - m1);
        m[j] = m1;
    }
    outMean.mpnpu_touch('W', P_V, 0, rd, site, name);
    outVar.mpnpu_touch('W', P_V, 0, rd, site, name);
    U* mo = outMean.mpnpu_addr();
    U* vo = outVar.mpnpu_addr();
    for (uint32_t j = 0; j < rd; ++j) {
        mo[j] = from_float<U>(m[j]);
        vo[j] = from_float<U>(v[j]);
    }
}

inline void welford_finalize(const AscendC::LocalTensor<float>& outMean, const AscendC::LocalTensor<float>& outVar,
                             const AscendC::LocalTensor<float>& inMean, const AscendC::LocalTensor<float>& inVar,
                             const AscendC::LocalTensor<int32_t>* counts, const AscendC::LocalTensor<uint8_t>* tmp,
                             const AscendC::WelfordFinalizePara& para, bool correction, const Site& site) {
    const char* name = "WelfordFinalize";
    vec::start(site, name);
    const uint32_t n = para.abLength;
    if (n == 0 || n % 8)
        api_error(site, "%s: para.abLength %u must be a multiple of 8 (32 bytes of float)", name, n);
    if (!counts) {
        if (uint64_t(para.headCountLength) + para.tailCountLength != n)
            api_error(site, "%s: para.headCountLength %u + tailCountLength %u must equal abLength %u", name,
                      para.headCountLength, para.tailCountLength, n);
        if (para.tailCount == 0 && para.tailCountLength != 0)
            api_error(site, "%s: para.tailCountLength must be 0 when tailCount is 0 (tailCountLength is %u)", name,
                      para.tailCountLength);
    }
    const Span a = operand(outMean, 1, true, 0, site, name, "outputMean");
    const Span b = operand(outVar, 1, true, 0, site, name, "outputVariance");
    const Span c = operand(inMean, n, false, 0, site, name, "inputMean");
    const Span d = operand(inVar, n, false, 0, site, name, "inputVariance");
    const Span e = counts ? operand(*counts, n, false, 0, site, name, "counts") : Span{nullptr, 0, "", false, 0};
    check_spans({a, b, c, d, e}, site, name);
    const std::vector<double> m = load(inMean, n, site, name), v = load(inVar, n, site, name);
    std::vector<double> cnt(n);
    if (counts) {
        counts->mpnpu_touch('R', P_V, 0, n, site, name);
        const int32_t* cp = counts->mpnpu_addr();
        for (uint32_t j = 0; j < n; ++j) cnt[j] = cp[j];
    } else {
        for (uint32_t j = 0; j < n; ++j) cnt[j] = j < para.headCountLength ? para.headCount : para.tailCount;
    }
    use_tmp(tmp, rows_bytes(Call::WelfordFinalize, 4, 1, n), {a, b, c, d, e}, site, name,
            "GetWelfordFinalizeMaxMinTmpSize");
    double sum = 0;
    for (uint32_t j = 0; j < n; ++j) sum += cnt[j] * m[j];
    const double mean = sum * double(para.rRec);
    double sq = 0;
    for (uint32_t j = 0; j < n; ++j) sq += v[j] + cnt[j] * (m[j] - mean) * (m[j] - mean);
    const double var = sq * double(correction ? para.rRecWithCorrection : para.rRec);
    store(outMean, std::vector<double>{mean}, site, name);
    store(outVar, std::vector<double>{var}, site, name);
}

template <typename T>
constexpr bool half_or_float = std::is_same_v<T, half> || std::is_same_v<T, float>;
template <typename U, typename T>
constexpr bool gamma_type_ok = std::is_same_v<U, T> || std::is_same_v<U, float>;

}  // namespace norm
}  // namespace mpnpu

namespace AscendC {

#define MPNPU_NORM_TYPES(NAME)                                                                     \
    static_assert(mpnpu::norm::half_or_float<T>, NAME ": T is half or float");                     \
    static_assert(!(isReuseSource && std::is_same_v<T, half>), NAME ": isReuseSource is for float " \
                  "data only (the pages: half does not support it)")

// -- LayerNorm, [B, S, H]: output, mean and variance --------------------------------------------------------
template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon,
                      const LayerNormTiling& tiling, MPNPU_SITE) {
    MPNPU_NORM_TYPES("LayerNorm");
    mpnpu::norm::layer_norm_bsh<T>(output, outputMean, outputVariance, inputX, nullptr, gamma, beta, &sharedTmpBuffer,
                                   1.0, double(mpnpu::to_float(epsilon)), tiling, true, false, site, "LayerNorm");
}
template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const T epsilon, const LayerNormTiling& tiling, MPNPU_SITE) {
    MPNPU_NORM_TYPES("LayerNorm");
    mpnpu::norm::layer_norm_bsh<T>(output, outputMean, outputVariance, inputX, nullptr, gamma, beta, nullptr, 1.0,
                                   double(mpnpu::to_float(epsilon)), tiling, true, false, site, "LayerNorm");
}

// -- LayerNorm, [A, R]: output, mean and rstd (or the variance) -------------------------------------------------
#define MPNPU_LAYERNORM_AR_CHECKS                                                                                \
    static_assert(mpnpu::norm::half_or_float<T>, "LayerNorm: T is half or float");                               \
    static_assert(mpnpu::norm::gamma_type_ok<U, T>, "LayerNorm: gamma and beta are of T or float (no less "     \
                  "precise than inputX)");                                                                      \
    static_assert(!config.isOnlyOutput, "LayerNorm: isOnlyOutput = true is not supported (the pages: false only)")

namespace internal_norm {
template <typename U, typename T, const LayerNormConfig& config>
inline void layer_norm_ar(const LocalTensor<T>& output, const LocalTensor<float>& outputMean,
                          const LocalTensor<float>& outputRstd, const LocalTensor<T>& inputX,
                          const LocalTensor<U>& gamma, const LocalTensor<U>& beta, const float epsilon,
                          const LocalTensor<uint8_t>* tmp, const LayerNormPara& para,
                          const LayerNormSeparateTiling& tiling, const mpnpu::Site& site) {
    const char* name = "LayerNorm";
    mpnpu::vec::start(site, name);
    const mpnpu::norm::Ar s =
        mpnpu::norm::ar_shape<T>(para.aLength, para.rLength, para.rLengthWithPadding, site, name);
    if (tiling.aLength == 0 || tiling.aCurLength == 0)
        mpnpu::api_error(site, "%s: the tiling gives no %s (fill it with GetLayerNormNDTilingInfo, with a stack no "
                         "smaller than GetLayerNormMaxMinTmpSize's minimum)", name,
                         tiling.aLength ? "rows a pass" : "shape");
    if (s.a > tiling.aLength)
        mpnpu::api_error(site, "%s: para.aLength %u is more than the tiling's A %u (the most a call may take)", name,
                         s.a, tiling.aLength);
    const uint64_t need = mpnpu::norm::pass_bytes(mpnpu::norm::Call::LayerNormRstd, sizeof(T), tiling.aCurLength,
                                                  s.a, s.rp);
    mpnpu::norm::layer_norm_ar<U, T>(output, &outputMean, outputRstd, nullptr, nullptr, inputX, gamma, beta, tmp,
                                     epsilon, s, need, config.isNoGamma, config.isNoBeta, config.isOutputRstd, site,
                                     name, "GetLayerNormMaxMinTmpSize");
}
}  // namespace internal_norm

template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean,
                      const LocalTensor<float>& outputRstd, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
                      const LocalTensor<U>& beta, const float epsilon, const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const LayerNormPara& para, const LayerNormSeparateTiling& tiling, MPNPU_SITE) {
    MPNPU_LAYERNORM_AR_CHECKS;
    internal_norm::layer_norm_ar<U, T, config>(output, outputMean, outputRstd, inputX, gamma, beta, epsilon,
                                               &sharedTmpBuffer, para, tiling, site);
}
template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean,
                      const LocalTensor<float>& outputRstd, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
                      const LocalTensor<U>& beta, const float epsilon, const LayerNormPara& para,
                      const LayerNormSeparateTiling& tiling, MPNPU_SITE) {
    MPNPU_LAYERNORM_AR_CHECKS;
    internal_norm::layer_norm_ar<U, T, config>(output, outputMean, outputRstd, inputX, gamma, beta, epsilon, nullptr,
                                               para, tiling, site);
}
#undef MPNPU_LAYERNORM_AR_CHECKS

// -- Normalize: y and rstd from the given mean and variance ------------------------------------------------
namespace internal_norm {
template <typename U, typename T, const NormalizeConfig& config>
inline void normalize(const LocalTensor<T>& output, const LocalTensor<float>& outputRstd,
                      const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                      const LocalTensor<T>& inputX, const LocalTensor<U>& gamma, const LocalTensor<U>& beta,
                      const LocalTensor<uint8_t>* tmp, const float epsilon, const NormalizePara& para,
                      const mpnpu::Site& site) {
    static_assert(mpnpu::norm::half_or_float<T>, "Normalize: T is half or float");
    static_assert(mpnpu::norm::gamma_type_ok<U, T>, "Normalize: gamma and beta are of T or float");
    static_assert(config.reducePattern == ReducePattern::AR, "Normalize: only ReducePattern::AR is supported");
    static_assert(!config.isOnlyOutput, "Normalize: isOnlyOutput = true is not supported (the pages: false only)");
    const char* name = "Normalize";
    mpnpu::vec::start(site, name);
    if (config.aLength != -1 && uint32_t(config.aLength) != para.aLength)
        mpnpu::api_error(site, "%s: the config's aLength %d is not para.aLength %u", name, int(config.aLength),
                         para.aLength);
    const mpnpu::norm::Ar s =
        mpnpu::norm::ar_shape<T>(para.aLength, para.rLength, para.rLengthWithPadding, site, name);
    // no tiling: the call takes as many rows a pass as the caller's buffer holds (at least one row's
    // worth); the framework's buffer needs one row's worth
    using mpnpu::norm::Call;
    const uint32_t rows = tmp ? mpnpu::norm::rows_fitting(Call::Normalize, sizeof(T), s.a, s.rp, tmp->GetSize()) : 1;
    const uint64_t need = mpnpu::norm::rows_bytes(Call::Normalize, sizeof(T), rows ? rows : 1, s.rp);
    mpnpu::norm::layer_norm_ar<U, T>(output, nullptr, outputRstd, &inputMean, &inputVariance, inputX, gamma, beta,
                                     tmp, epsilon, s, need, config.isNoGamma, config.isNoBeta, true, site, name,
                                     "GetNormalizeMaxMinTmpSize");
}
}  // namespace internal_norm

template <typename U, typename T, bool isReuseSource = false, const NormalizeConfig& config = NLCFG_NORM>
inline void Normalize(const LocalTensor<T>& output, const LocalTensor<float>& outputRstd,
                      const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                      const LocalTensor<T>& inputX, const LocalTensor<U>& gamma, const LocalTensor<U>& beta,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const float epsilon, const NormalizePara& para,
                      MPNPU_SITE) {
    internal_norm::normalize<U, T, config>(output, outputRstd, inputMean, inputVariance, inputX, gamma, beta,
                                           &sharedTmpBuffer, epsilon, para, site);
}
template <typename U, typename T, bool isReuseSource = false, const NormalizeConfig& config = NLCFG_NORM>
inline void Normalize(const LocalTensor<T>& output, const LocalTensor<float>& outputRstd,
                      const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                      const LocalTensor<T>& inputX, const LocalTensor<U>& gamma, const LocalTensor<U>& beta,
                      const float epsilon, const NormalizePara& para, MPNPU_SITE) {
    internal_norm::normalize<U, T, config>(output, outputRstd, inputMean, inputVariance, inputX, gamma, beta, nullptr,
                                           epsilon, para, site);
}

// -- DeepNorm: LayerNorm of alpha * src + gx; outputs dst, mean and the variance (rstdLocal) ------------------
#define MPNPU_DEEPNORM_CHECKS                                                                             \
    static_assert(mpnpu::norm::half_or_float<T>, "DeepNorm: T is half or float");                        \
    static_assert(!(isReuseSrc && std::is_same_v<T, half>), "DeepNorm: isReuseSrc is for float data only " \
                  "(the pages: half does not support it)")
template <typename T, bool isReuseSrc = false, bool isBasicBlock = false>
inline void DeepNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& meanLocal, const LocalTensor<T>& rstdLocal,
                     const LocalTensor<T>& srcLocal, const LocalTensor<T>& gxLocal, const LocalTensor<T>& betaLocal,
                     const LocalTensor<T>& gammaLocal, const LocalTensor<uint8_t>& sharedTmpBuffer, const T alpha,
                     const T epsilon, const DeepNormTiling& tiling, MPNPU_SITE) {
    MPNPU_DEEPNORM_CHECKS;
    mpnpu::norm::layer_norm_bsh<T>(dstLocal, meanLocal, rstdLocal, srcLocal, &gxLocal, gammaLocal, betaLocal,
                                   &sharedTmpBuffer, double(mpnpu::to_float(alpha)), double(mpnpu::to_float(epsilon)),
                                   tiling, isReuseSrc, isBasicBlock, site, "DeepNorm");
}
template <typename T, bool isReuseSrc = false, bool isBasicBlock = false>
inline void DeepNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& meanLocal, const LocalTensor<T>& rstdLocal,
                     const LocalTensor<T>& srcLocal, const LocalTensor<T>& gxLocal, const LocalTensor<T>& betaLocal,
                     const LocalTensor<T>& gammaLocal, const T alpha, const T epsilon, const DeepNormTiling& tiling,
                     MPNPU_SITE) {
    MPNPU_DEEPNORM_CHECKS;
    mpnpu::norm::layer_norm_bsh<T>(dstLocal, meanLocal, rstdLocal, srcLocal, &gxLocal, gammaLocal, betaLocal, nullptr,
                                   double(mpnpu::to_float(alpha)), double(mpnpu::to_float(epsilon)), tiling,
                                   isReuseSrc, isBasicBlock, site, "DeepNorm");
}
#undef MPNPU_DEEPNORM_CHECKS

// -- RmsNorm ---------------------------------------------------------------------------------------------------
template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon, const RmsNormTiling& tiling,
                    MPNPU_SITE) {
    static_assert(mpnpu::norm::half_or_float<T>, "RmsNorm: T is half or float");
    mpnpu::norm::rms_norm<T>(dstLocal, srcLocal, gammaLocal, &sharedTmpBuffer, double(mpnpu::to_float(epsilon)),
                             tiling, isBasicBlock, site);
}
template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const T epsilon, const RmsNormTiling& tiling, MPNPU_SITE) {
    static_assert(mpnpu::norm::half_or_float<T>, "RmsNorm: T is half or float");
    mpnpu::norm::rms_norm<T>(dstLocal, srcLocal, gammaLocal, nullptr, double(mpnpu::to_float(epsilon)), tiling,
                             isBasicBlock, site);
}

// -- LayerNormGrad / LayerNormGradBeta ----------------------------------------------------------------------
template <typename T, bool isReuseSource = false>
inline void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma,
                          const LocalTensor<T>& inputDy, const LocalTensor<T>& inputX,
                          const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                          const LocalTensor<T>& inputGamma, const LocalTensor<uint8_t>& sharedTmpBuffer, T epsilon,
                          const LayerNormGradTiling& tiling, const LayerNormGradShapeInfo& shapeInfo = {},
                          MPNPU_SITE) {
    MPNPU_NORM_TYPES("LayerNormGrad");
    mpnpu::norm::layer_norm_grad<T>(outputPdX, resForGamma, inputDy, inputX, inputVariance, inputMean, inputGamma,
                                    &sharedTmpBuffer, double(mpnpu::to_float(epsilon)), tiling, shapeInfo, site);
}
template <typename T, bool isReuseSource = false>
inline void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma,
                          const LocalTensor<T>& inputDy, const LocalTensor<T>& inputX,
                          const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                          const LocalTensor<T>& inputGamma, T epsilon, const LayerNormGradTiling& tiling,
                          const LayerNormGradShapeInfo& shapeInfo = {}, MPNPU_SITE) {
    MPNPU_NORM_TYPES("LayerNormGrad");
    mpnpu::norm::layer_norm_grad<T>(outputPdX, resForGamma, inputDy, inputX, inputVariance, inputMean, inputGamma,
                                    nullptr, double(mpnpu::to_float(epsilon)), tiling, shapeInfo, site);
}

template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              const LocalTensor<uint8_t>& sharedTmpBuffer, const LayerNormGradBetaTiling& tiling,
                              MPNPU_SITE) {
    MPNPU_NORM_TYPES("LayerNormGradBeta");
    mpnpu::norm::layer_norm_grad_beta<T>(outputPdGamma, outputPdBeta, resForGamma, inputDy, &sharedTmpBuffer, tiling,
                                         site);
}
template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              const LayerNormGradBetaTiling& tiling, MPNPU_SITE) {
    MPNPU_NORM_TYPES("LayerNormGradBeta");
    mpnpu::norm::layer_norm_grad_beta<T>(outputPdGamma, outputPdBeta, resForGamma, inputDy, nullptr, tiling, site);
}
#undef MPNPU_NORM_TYPES

// -- WelfordUpdate / WelfordFinalize -----------------------------------------------------------------------
#define MPNPU_WELFORD_TYPES                                                                    \
    static_assert(mpnpu::norm::half_or_float<T>, "WelfordUpdate: T (inputX) is half or float"); \
    static_assert(std::is_same_v<U, float>, "WelfordUpdate: U (the means and variances) is float")
template <typename T, typename U, bool isReuseSource = false, const WelfordUpdateConfig& config = WFUPDATE_DEFAULT_CFG>
inline void WelfordUpdate(const LocalTensor<U>& outputMean, const LocalTensor<U>& outputVariance,
                          const LocalTensor<U>& inputMean, const LocalTensor<U>& inputVariance,
                          const LocalTensor<T>& inputX, const LocalTensor<uint8_t>& sharedTmpBuffer,
                          const WelfordUpdateParam& para, MPNPU_SITE) {
    MPNPU_WELFORD_TYPES;
    mpnpu::norm::welford_update<T, U>(outputMean, outputVariance, inputMean, inputVariance, inputX, &sharedTmpBuffer,
                                      para, config.isInplace, site);
}
template <typename T, typename U, bool isReuseSource = false, const WelfordUpdateConfig& config = WFUPDATE_DEFAULT_CFG>
inline void WelfordUpdate(const LocalTensor<U>& outputMean, const LocalTensor<U>& outputVariance,
                          const LocalTensor<U>& inputMean, const LocalTensor<U>& inputVariance,
                          const LocalTensor<T>& inputX, const WelfordUpdateParam& para, MPNPU_SITE) {
    MPNPU_WELFORD_TYPES;
    mpnpu::norm::welford_update<T, U>(outputMean, outputVariance, inputMean, inputVariance, inputX, nullptr, para,
                                      config.isInplace, site);
}
#undef MPNPU_WELFORD_TYPES

template <bool isReuseSource = false, const WelfordFinalizeConfig& config = WFFINALIZE_DEFAULT_CFG>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const LocalTensor<uint8_t>& sharedTmpBuffer, const WelfordFinalizePara& para, MPNPU_SITE) {
    mpnpu::norm::welford_finalize(outputMean, outputVariance, inputMean, inputVariance, nullptr, &sharedTmpBuffer,
                                  para, config.isCorrection, site);
}
template <bool isReuseSource = false, const WelfordFinalizeConfig& config = WFFINALIZE_DEFAULT_CFG>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const LocalTensor<int32_t>& counts, const LocalTensor<uint8_t>& sharedTmpBuffer,
                            const WelfordFinalizePara& para, MPNPU_SITE) {
    mpnpu::norm::welford_finalize(outputMean, outputVariance, inputMean, inputVariance, &counts, &sharedTmpBuffer, para,
                                  config.isCorrection, site);
}
template <bool isReuseSource = false, const WelfordFinalizeConfig& config = WFFINALIZE_DEFAULT_CFG>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const WelfordFinalizePara& para, MPNPU_SITE) {
    mpnpu::norm::welford_finalize(outputMean, outputVariance, inputMean, inputVariance, nullptr, nullptr, para,
                                  config.isCorrection, site);
}
template <bool isReuseSource = false, const WelfordFinalizeConfig& config = WFFINALIZE_DEFAULT_CFG>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const LocalTensor<int32_t>& counts, const WelfordFinalizePara& para, MPNPU_SITE) {
    mpnpu::norm::welford_finalize(outputMean, outputVariance, inputMean, inputVariance, &counts, nullptr, para,
                                  config.isCorrection, site);
}

}  // namespace AscendC

#endif  // MPNPU_NORMALIZATION_H
