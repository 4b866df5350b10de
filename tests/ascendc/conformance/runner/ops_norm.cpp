// Handlers: the normalization calls (LayerNorm in both forms, Normalize, DeepNorm, RmsNorm, LayerNormGrad,
// LayerNormGradBeta, WelfordUpdate, WelfordFinalize) with their tilings filled by the host helpers, and the
// helpers' temporary-buffer sizes.
//
// Common keys: form=tmp (the sharedTmpBuffer form, scratch=<tensor>) | fw (the framework's buffer);
// stack=<bytes> the stack the tiling helper is given; eps, alpha, nrec, ... as the bits of a float.
#include <cstring>
#include <vector>

#include "runner.h"
#include "tiling/tiling_api.h"

using namespace vecconf;

namespace {

float f32(const Call& c, const std::string& key) { return scalar_of<float>(c, key); }

AscendC::TensorShape shape_of(std::initializer_list<uint64_t> dims) {
    std::vector<int64_t> v;
    for (uint64_t d : dims) v.push_back(int64_t(d));
    return AscendC::TensorShape(v);
}

bool tmp_form(const Call& c) {
    const std::string f = c.s("form");
    if (f != "tmp" && f != "fw") throw std::runtime_error("no form " + f);
    return f == "tmp";
}

// The [A, R] forms' configs by number: 0 default, 1 no gamma, 2 no beta, 3 the variance out (LayerNorm).
// (each its own object: a template argument of reference type names a whole object)
constexpr AscendC::LayerNormConfig kLn0 = {false, false, false, true}, kLn1 = {false, true, false, true},
                                   kLn2 = {true, false, false, true}, kLn3 = {false, false, false, false};
constexpr AscendC::NormalizeConfig kNl0 = {AscendC::ReducePattern::AR, -1, false, false, false},
                                   kNl1 = {AscendC::ReducePattern::AR, -1, false, true, false},
                                   kNl2 = {AscendC::ReducePattern::AR, -1, true, false, false};

}  // namespace

// LayerNorm/T b s h orih stack form y mean var x gamma beta eps [scratch]
template <typename T>
struct H_LayerNorm {
    static void run(const Job& j, const Call& c) {
        LayerNormTiling tiling;
        AscendC::GetLayerNormNDTilingInfo(shape_of({c.u("b"), c.u("s"), c.u("h"), c.u("orih")}),
                                          uint32_t(c.u("stack")), sizeof(T), false, tiling);
        const T eps = T(f32(c, "eps"));
        auto y = j.t<T>(c, "y"), mean = j.t<T>(c, "mean"), var = j.t<T>(c, "var"), x = j.t<T>(c, "x");
        auto gamma = j.t<T>(c, "gamma"), beta = j.t<T>(c, "beta");
        if (tmp_form(c))
            AscendC::LayerNorm<T, false>(y, mean, var, x, gamma, beta, j.t<uint8_t>(c, "scratch"), eps, tiling);
        else
            AscendC::LayerNorm<T, false>(y, mean, var, x, gamma, beta, eps, tiling);
    }
};
static RegTypes<H_LayerNorm, half, float> reg_layernorm("LayerNorm");

// DeepNorm/T b s h orih stack basic reuse form y mean var x gx gamma beta alpha eps [scratch]
template <typename T>
struct H_DeepNorm {
    template <bool reuse, bool basic>
    static void go(const Job& j, const Call& c, const DeepNormTiling& tiling) {
        const T alpha = T(f32(c, "alpha")), eps = T(f32(c, "eps"));
        auto y = j.t<T>(c, "y"), mean = j.t<T>(c, "mean"), var = j.t<T>(c, "var"), x = j.t<T>(c, "x");
        auto gx = j.t<T>(c, "gx"), gamma = j.t<T>(c, "gamma"), beta = j.t<T>(c, "beta");
        if (tmp_form(c))
            AscendC::DeepNorm<T, reuse, basic>(y, mean, var, x, gx, beta, gamma, j.t<uint8_t>(c, "scratch"), alpha,
                                               eps, tiling);
        else
            AscendC::DeepNorm<T, reuse, basic>(y, mean, var, x, gx, beta, gamma, alpha, eps, tiling);
    }
    static void run(const Job& j, const Call& c) {
        DeepNormTiling tiling;
        const uint64_t b = c.u("b"), s = c.u("s"), h = c.u("h");
        // (the tiling is filled without the basic-block check, so that the kernel's own check is seen)
        AscendC::GetDeepNormTilingInfo(shape_of({b, s, h}), shape_of({b, s, c.u("orih")}), uint32_t(c.u("stack")),
                                       sizeof(T), false, false, tiling);
        const bool basic = c.u("basic") != 0, reuse = c.u("reuse") != 0;
        if constexpr (std::is_same_v<T, float>) {
            if (reuse) return basic ? go<true, true>(j, c, tiling) : go<true, false>(j, c, tiling);
        }
        return basic ? go<false, true>(j, c, tiling) : go<false, false>(j, c, tiling);
    }
};
static RegTypes<H_DeepNorm, half, float> reg_deepnorm("DeepNorm");

// LayerNormAR/T/U a r rp ta stack cfg form y mean rstd x gamma beta eps [scratch]: the LayerNormPara form,
// its tiling for {ta, r}.
template <typename T, typename U>
struct H_LayerNormAR {
    template <const AscendC::LayerNormConfig& cfg>
    static void go(const Job& j, const Call& c, const LayerNormSeparateTiling& tiling) {
        const AscendC::LayerNormPara para{uint32_t(c.u("a")), uint32_t(c.u("r")), uint32_t(c.u("rp"))};
        auto y = j.t<T>(c, "y"), x = j.t<T>(c, "x");
        auto mean = j.t<float>(c, "mean"), rstd = j.t<float>(c, "rstd");
        auto gamma = j.t<U>(c, "gamma"), beta = j.t<U>(c, "beta");
        const float eps = f32(c, "eps");
        if (tmp_form(c))
            AscendC::LayerNorm<U, T, false, cfg>(y, mean, rstd, x, gamma, beta, eps,
                                                       j.t<uint8_t>(c, "scratch"), para, tiling);
        else
            AscendC::LayerNorm<U, T, false, cfg>(y, mean, rstd, x, gamma, beta, eps, para, tiling);
    }
    static void run(const Job& j, const Call& c) {
        LayerNormSeparateTiling tiling;
        AscendC::GetLayerNormNDTilingInfo(shape_of({c.u("ta"), c.u("r")}), uint32_t(c.u("stack")), sizeof(T), false,
                                          true, tiling);
        switch (c.u("cfg")) {
            case 0: return go<kLn0>(j, c, tiling);
            case 1: return go<kLn1>(j, c, tiling);
            case 2: return go<kLn2>(j, c, tiling);
            default: return go<kLn3>(j, c, tiling);
        }
    }
};
static RegPairs<H_LayerNormAR, half, half, float> reg_lnar_h("LayerNormAR");
static RegPairs<H_LayerNormAR, float, float> reg_lnar_f("LayerNormAR");

// Normalize/T/U a r rp cfg form y rstd mean var x gamma beta eps [scratch] [cfga]
template <typename T, typename U>
struct H_Normalize {
    template <const AscendC::NormalizeConfig& cfg>
    static void go(const Job& j, const Call& c) {
        const AscendC::NormalizePara para{uint32_t(c.u("a")), uint32_t(c.u("r")), uint32_t(c.u("rp"))};
        auto y = j.t<T>(c, "y"), x = j.t<T>(c, "x");
        auto rstd = j.t<float>(c, "rstd"), mean = j.t<float>(c, "mean"), var = j.t<float>(c, "var");
        auto gamma = j.t<U>(c, "gamma"), beta = j.t<U>(c, "beta");
        const float eps = f32(c, "eps");
        if (tmp_form(c))
            AscendC::Normalize<U, T, false, cfg>(y, rstd, mean, var, x, gamma, beta,
                                                       j.t<uint8_t>(c, "scratch"), eps, para);
        else
            AscendC::Normalize<U, T, false, cfg>(y, rstd, mean, var, x, gamma, beta, eps, para);
    }
    static constexpr AscendC::NormalizeConfig kFixedA = {AscendC::ReducePattern::AR, 4, false, false, false};
    static void run(const Job& j, const Call& c) {
        if (c.has("cfga")) {  // a config fixing A at 4
            const AscendC::NormalizePara para{uint32_t(c.u("a")), uint32_t(c.u("r")), uint32_t(c.u("rp"))};
            return AscendC::Normalize<U, T, false, kFixedA>(j.t<T>(c, "y"), j.t<float>(c, "rstd"),
                                                            j.t<float>(c, "mean"), j.t<float>(c, "var"),
                                                            j.t<T>(c, "x"), j.t<U>(c, "gamma"), j.t<U>(c, "beta"),
                                                            f32(c, "eps"), para);
        }
        switch (c.u("cfg")) {
            case 0: return go<kNl0>(j, c);
            case 1: return go<kNl1>(j, c);
            default: return go<kNl2>(j, c);
        }
    }
};
static RegPairs<H_Normalize, half, half, float> reg_norm_h("Normalize");
static RegPairs<H_Normalize, float, float> reg_norm_f("Normalize");

// RmsNorm/T b s h orih stack basic form dst src gamma eps [scratch]
template <typename T>
struct H_RmsNorm {
    template <bool basic>
    static void go(const Job& j, const Call& c, const RmsNormTiling& tiling) {
        const T eps = T(f32(c, "eps"));
        auto dst = j.t<T>(c, "dst"), src = j.t<T>(c, "src"), gamma = j.t<T>(c, "gamma");
        if (tmp_form(c))
            AscendC::RmsNorm<T, basic>(dst, src, gamma, j.t<uint8_t>(c, "scratch"), eps, tiling);
        else
            AscendC::RmsNorm<T, basic>(dst, src, gamma, eps, tiling);
    }
    static void run(const Job& j, const Call& c) {
        RmsNormTiling tiling;
        const uint64_t b = c.u("b"), s = c.u("s");
        AscendC::GetRmsNormTilingInfo(shape_of({b, s, c.u("h")}), shape_of({b, s, c.u("orih")}),
                                      uint32_t(c.u("stack")), sizeof(T), tiling, false);
        return c.u("basic") ? go<true>(j, c, tiling) : go<false>(j, c, tiling);
    }
};
static RegTypes<H_RmsNorm, half, float> reg_rmsnorm("RmsNorm");

// LayerNormGrad/T b s h orih stack form pdx res dy x var mean gamma eps [scratch] [nz]
template <typename T>
struct H_LayerNormGrad {
    static void run(const Job& j, const Call& c) {
        LayerNormGradTiling tiling;
        AscendC::GetLayerNormGradNDTilingInfo(shape_of({c.u("b"), c.u("s"), c.u("h"), c.u("orih")}),
                                              uint32_t(c.u("stack")), sizeof(T), false, tiling);
        const T eps = T(f32(c, "eps"));
        AscendC::LayerNormGradShapeInfo info;
        if (c.u("nz", 0)) info.dataFormat = AscendC::DataFormat::NZ;
        auto pdx = j.t<T>(c, "pdx"), res = j.t<T>(c, "res"), dy = j.t<T>(c, "dy"), x = j.t<T>(c, "x");
        auto var = j.t<T>(c, "var"), mean = j.t<T>(c, "mean"), gamma = j.t<T>(c, "gamma");
        if (tmp_form(c)) {
            AscendC::LocalTensor<uint8_t> tmp = j.t<uint8_t>(c, "scratch");
            AscendC::LayerNormGrad<T, false>(pdx, res, dy, x, var, mean, gamma, tmp, eps, tiling, info);
        } else {
            AscendC::LayerNormGrad<T, false>(pdx, res, dy, x, var, mean, gamma, eps, tiling, info);
        }
    }
};
static RegTypes<H_LayerNormGrad, half, float> reg_lngrad("LayerNormGrad");

// LayerNormGradBeta/T b s h orih stack form pdg pdb res dy [scratch]
template <typename T>
struct H_LayerNormGradBeta {
    static void run(const Job& j, const Call& c) {
        LayerNormGradBetaTiling tiling;
        AscendC::GetLayerNormGradBetaNDTilingInfo(shape_of({c.u("b"), c.u("s"), c.u("h"), c.u("orih")}),
                                                  uint32_t(c.u("stack")), sizeof(T), false, tiling);
        auto pdg = j.t<T>(c, "pdg"), pdb = j.t<T>(c, "pdb"), res = j.t<T>(c, "res"), dy = j.t<T>(c, "dy");
        if (tmp_form(c))
            AscendC::LayerNormGradBeta<T, false>(pdg, pdb, res, dy, j.t<uint8_t>(c, "scratch"), tiling);
        else
            AscendC::LayerNormGradBeta<T, false>(pdg, pdb, res, dy, tiling);
    }
};
static RegTypes<H_LayerNormGradBeta, half, float> reg_lngradbeta("LayerNormGradBeta");

// WelfordUpdate/T ab k nrec inplace form om ov im iv x [scratch] [rn]
template <typename T>
struct H_WelfordUpdate {
    static constexpr AscendC::WelfordUpdateConfig kInplace = {true};
    template <const AscendC::WelfordUpdateConfig& cfg>
    static void go(const Job& j, const Call& c) {
        const AscendC::WelfordUpdateParam para{uint32_t(c.u("rn", 1)), uint32_t(c.u("ab")), uint32_t(c.u("k")),
                                               f32(c, "nrec")};
        auto om = j.t<float>(c, "om"), ov = j.t<float>(c, "ov"), im = j.t<float>(c, "im"), iv = j.t<float>(c, "iv");
        auto x = j.t<T>(c, "x");
        if (tmp_form(c))
            AscendC::WelfordUpdate<T, float, false, cfg>(om, ov, im, iv, x, j.t<uint8_t>(c, "scratch"), para);
        else
            AscendC::WelfordUpdate<T, float, false, cfg>(om, ov, im, iv, x, para);
    }
    static void run(const Job& j, const Call& c) {
        return c.u("inplace") ? go<kInplace>(j, c) : go<AscendC::WFUPDATE_DEFAULT_CFG>(j, c);
    }
};
static RegTypes<H_WelfordUpdate, half, float> reg_wfupdate("WelfordUpdate");

// WelfordFinalize/f32 rn ab hc hl tc tl abrec rrec rrecc corr form om ov im iv [counts] [scratch]
struct H_WelfordFinalize {
    static constexpr AscendC::WelfordFinalizeConfig kCorr = {true};
    template <const AscendC::WelfordFinalizeConfig& cfg>
    static void go(const Job& j, const Call& c) {
        AscendC::WelfordFinalizePara para{uint32_t(c.u("rn")), uint32_t(c.u("ab")), uint32_t(c.u("hc")),
                                          uint32_t(c.u("hl")), uint32_t(c.u("tc")), uint32_t(c.u("tl")),
                                          f32(c, "abrec"), f32(c, "rrec"), f32(c, "rrecc")};
        auto om = j.t<float>(c, "om"), ov = j.t<float>(c, "ov"), im = j.t<float>(c, "im"), iv = j.t<float>(c, "iv");
        const bool tmp = tmp_form(c);
        if (c.has("counts")) {
            auto counts = j.t<int32_t>(c, "counts");
            if (tmp) AscendC::WelfordFinalize<false, cfg>(om, ov, im, iv, counts, j.t<uint8_t>(c, "scratch"), para);
            else AscendC::WelfordFinalize<false, cfg>(om, ov, im, iv, counts, para);
        } else {
            if (tmp) AscendC::WelfordFinalize<false, cfg>(om, ov, im, iv, j.t<uint8_t>(c, "scratch"), para);
            else AscendC::WelfordFinalize<false, cfg>(om, ov, im, iv, para);
        }
    }
    static void run(const Job& j, const Call& c) {
        return c.u("corr") ? go<kCorr>(j, c) : go<AscendC::WFFINALIZE_DEFAULT_CFG>(j, c);
    }
};
static Reg reg_wffinal("WelfordFinalize/f32", &H_WelfordFinalize::run);

// NormHost/T op d0 d1 d2 d3 out: GetXxxMaxMinTmpSize's [maxValue, minValue] (and, for the bool helpers,
// their answer) for the shape {d0, d1[, d2[, d3]]} and typeSize sizeof(T), stored raw.
template <typename T>
struct H_NormHost {
    static void run(const Job& j, const Call& c) {
        const std::string op = c.s("op");
        const uint64_t d0 = c.u("d0"), d1 = c.u("d1"), d2 = c.u("d2", 0), d3 = c.u("d3", 0);
        const uint32_t ts = sizeof(T);
        uint32_t r[3] = {~0u, ~0u, 1};
        if (op == "LayerNorm") AscendC::GetLayerNormMaxMinTmpSize(shape_of({d0, d1, d2, d3}), ts, false, r[0], r[1]);
        else if (op == "LayerNormAR")
            AscendC::GetLayerNormMaxMinTmpSize(shape_of({d0, d1}), ts, false, true, false, r[0], r[1]);
        else if (op == "Normalize")
            AscendC::GetNormalizeMaxMinTmpSize(shape_of({d0, d1}), 4, ts, false, true, false, r[0], r[1]);
        else if (op == "LayerNormGrad")
            AscendC::GetLayerNormGradMaxMinTmpSize(shape_of({d0, d1, d2, d3}), ts, false, r[0], r[1]);
        else if (op == "LayerNormGradBeta")
            AscendC::GetLayerNormGradBetaMaxMinTmpSize(shape_of({d0, d1, d2, d3}), ts, false, r[0], r[1]);
        else if (op == "DeepNorm")
            r[2] = AscendC::GetDeepNormMaxMinTmpSize(shape_of({d0, d1, d2}), ts, false, d3 != 0, r[0], r[1]);
        else if (op == "RmsNorm")
            r[2] = AscendC::GetRmsNormMaxMinTmpSize(shape_of({d0, d1, d2}), ts, r[0], r[1], d3 != 0);
        else if (op == "WelfordUpdate")
            AscendC::GetWelfordUpdateMaxMinTmpSize(shape_of({d0, d1}), ts, 4, false, false, r[0], r[1]);
        else if (op == "WelfordFinalize")
            AscendC::GetWelfordFinalizeMaxMinTmpSize(shape_of({d0}), ts, false, r[0], r[1]);
        else throw std::runtime_error("NormHost: no helper " + op);
        std::memcpy(j.t<uint32_t>(c, "out").mpnpu_addr(), r, sizeof r);
    }
};
static RegTypes<H_NormHost, half, float> reg_normhost("NormHost");
