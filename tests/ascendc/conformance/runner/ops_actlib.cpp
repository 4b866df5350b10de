// Handlers: the library's activations (Gelu, FasterGelu, Silu, Swish, GeGLU, SwiGLU), Fmod, Xor, the Taylor
// Exp, Power with and without a buffer, the tmp-buffer Axpy, Arange, DropOut, Select with a bytes-mask shape,
// and the host helpers of all of them.
#include <cstring>
#include <string>

#include "runner.h"

using namespace vecconf;

namespace {

// Shape stand-in for the host helpers: GetShapeSize(), and the dimensions DropOut's helper reads.
struct Dims {
    std::vector<int64_t> d;
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (int64_t x : d) n *= x;
        return n;
    }
    size_t GetDimNum() const { return d.size(); }
    int64_t GetDim(size_t i) const { return i < d.size() ? d[i] : 0; }
};

}  // namespace

// Act/T op=<name> form=tmp_count (scratch, count) | tmp (scratch) | count | whole, dst src0 [src1]
// [beta=<float>] [level=<0|3|10|15>] [scalar=<bits of T>: Power's scalar; op PowerTS (tensor ^ scalar) or
// PowerST (scalar ^ tensor)].
#define ACT_FORMS2(CALL, B)                                                                   \
    do {                                                                                      \
        if (form == "tmp_count") return CALL(dst, a, B, j.t<uint8_t>(c, "scratch"), n);      \
        if (form == "tmp") return CALL(dst, a, B, j.t<uint8_t>(c, "scratch"));               \
        if (form == "count") return CALL(dst, a, B, n);                                      \
        if (form == "whole") return CALL(dst, a, B);                                         \
    } while (0)

template <typename T>
struct H_Act {
    template <uint8_t L>
    static void exp(const Job& j, const Call& c, const std::string& form, const AscendC::LocalTensor<T>& dst,
                    const AscendC::LocalTensor<T>& a, uint32_t n) {
        if (form == "tmp_count") return AscendC::Exp<T, L, false>(dst, a, j.t<uint8_t>(c, "scratch"), n);
        return AscendC::Exp<T, L, false>(dst, a, n);
    }
    static void run(const Job& j, const Call& c) {
        const std::string op = c.s("op"), form = c.s("form");
        const AscendC::LocalTensor<T> dst = j.t<T>(c, "dst"), a = j.t<T>(c, "src0");
        const uint32_t n = uint32_t(c.u("count", 0));
        const float beta = c.has("beta") ? std::stof(c.s("beta")) : 1.0f;
        if (op == "Gelu" || op == "FasterGelu") {
            const bool fast = op == "FasterGelu";
            if (form == "tmp_count")
                return fast ? AscendC::FasterGelu(dst, a, j.t<uint8_t>(c, "scratch"), n)
                            : AscendC::Gelu(dst, a, j.t<uint8_t>(c, "scratch"), n);
            return fast ? AscendC::FasterGelu<T, true, false>(dst, a, n) : AscendC::Gelu<T, false, true>(dst, a, n);
        }
        if (op == "Silu") return AscendC::Silu<T, false>(dst, a, n);
        if (op == "Swish") return AscendC::Swish(dst, a, n, mpnpu::from_float<T>(beta));
        if (op == "Exp") {
            switch (c.i("level")) {
                case 0: return exp<0>(j, c, form, dst, a, n);
                case 3: return exp<3>(j, c, form, dst, a, n);
                case 10: return exp<10>(j, c, form, dst, a, n);
                default: return exp<15>(j, c, form, dst, a, n);
            }
        }
        if (op == "PowerTS" || op == "PowerST") {
            const T s = scalar_of<T>(c, "scalar");
            if (op == "PowerTS") ACT_FORMS2(AscendC::Power, s);
            // scalar ^ tensor: the scalar comes first
            if (form == "tmp_count") return AscendC::Power(dst, s, a, j.t<uint8_t>(c, "scratch"), n);
            if (form == "tmp") return AscendC::Power(dst, s, a, j.t<uint8_t>(c, "scratch"));
            if (form == "count") return AscendC::Power(dst, s, a, n);
            if (form == "whole") return AscendC::Power(dst, s, a);
        }
        const AscendC::LocalTensor<T> b = j.t<T>(c, "src1");
        if (op == "GeGLU") ACT_FORMS2(AscendC::GeGLU, b);
        if (op == "Fmod") ACT_FORMS2(AscendC::Fmod, b);
        if (op == "Xor") ACT_FORMS2(AscendC::Xor, b);
        if (op == "Power") ACT_FORMS2(AscendC::Power, b);
        if (op == "SwiGLU") {
            AscendC::LocalTensor<T> d = dst, a2 = a, b2 = b;
            if (form == "tmp_count") return AscendC::SwiGLU(d, a, b, beta, j.t<uint8_t>(c, "scratch"), n);
            if (form == "tmp") return AscendC::SwiGLU(d, a, b, beta, j.t<uint8_t>(c, "scratch"));
            if (form == "count") return AscendC::SwiGLU(d, a, b, beta, n);
            if (form == "whole") return AscendC::SwiGLU(d, a2, b2, beta);
        }
        throw std::runtime_error("Act: no form " + form + " of " + op);
    }
};
static RegTypes<H_Act, half, float, int16_t, uint16_t, int32_t> reg_act("Act");

// AxpyLib/T/U dst src scalar=<float> scratch count: the library's Axpy with its buffer.
template <typename T, typename U>
struct H_AxpyLib {
    static void run(const Job& j, const Call& c) {
        const U s = mpnpu::from_float<U>(std::stof(c.s("scalar")));
        AscendC::Axpy(j.t<T>(c, "dst"), j.t<U>(c, "src"), s, j.t<uint8_t>(c, "scratch"), uint32_t(c.u("count")));
    }
};
static RegPairs<H_AxpyLib, float, float, half> reg_axpy_f("AxpyLib");
static RegPairs<H_AxpyLib, half, half, float> reg_axpy_h("AxpyLib");

// Arange/T dst first=<float> diff=<float> count=<int>
template <typename T>
struct H_Arange {
    static void run(const Job& j, const Call& c) {
        const double first = std::stod(c.s("first")), diff = std::stod(c.s("diff"));
        T f, d;
        if constexpr (std::is_integral_v<T>) {
            f = T(first), d = T(diff);
        } else {
            f = mpnpu::from_float<T>(float(first)), d = mpnpu::from_float<T>(float(diff));
        }
        AscendC::Arange<T>(j.t<T>(c, "dst"), f, d, int32_t(c.i("count")));
    }
};
static RegTypes<H_Arange, half, float, int16_t, int32_t, uint32_t> reg_arange("Arange");

// DropOut/T dst src mask [scratch] keep=<float> m k mk mode=<0..4>
template <typename T>
struct H_DropOut {
    template <uint32_t M>
    static void go(const Job& j, const Call& c, const AscendC::DropOutShapeInfo& info, float keep) {
        if (c.has("scratch"))
            return AscendC::DropOut<T, false, M>(j.t<T>(c, "dst"), j.t<T>(c, "src"), j.t<uint8_t>(c, "mask"),
                                                 j.t<uint8_t>(c, "scratch"), keep, info);
        AscendC::DropOut<T, false, M>(j.t<T>(c, "dst"), j.t<T>(c, "src"), j.t<uint8_t>(c, "mask"), keep, info);
    }
    static void run(const Job& j, const Call& c) {
        AscendC::DropOutShapeInfo info;
        info.firstAxis = uint32_t(c.u("m"));
        info.srcLastAxis = uint32_t(c.u("k"));
        info.maskLastAxis = uint32_t(c.u("mk"));
        const float keep = std::stof(c.s("keep"));
        switch (c.u("mode", 0)) {
            case 1: return go<1>(j, c, info, keep);
            case 2: return go<2>(j, c, info, keep);
            case 3: return go<3>(j, c, info, keep);
            case 4: return go<4>(j, c, info, keep);
            case 0: return go<0>(j, c, info, keep);
            default: return go<7>(j, c, info, keep);
        }
    }
};
static RegTypes<H_DropOut, half, float, int32_t> reg_dropout("DropOut");

// SelectLib/T/U dst src mask scratch scalar=<float> first=<0|1: the tensor is src0> m k mk
template <typename T, typename U>
struct H_SelectLib {
    static void run(const Job& j, const Call& c) {
        AscendC::SelectWithBytesMaskShapeInfo info;
        info.firstAxis = uint32_t(c.u("m"));
        info.srcLastAxis = uint32_t(c.u("k"));
        info.maskLastAxis = uint32_t(c.u("mk"));
        const T s = mpnpu::from_float<T>(std::stof(c.s("scalar")));
        if (c.u("first", 1))
            return AscendC::Select(j.t<T>(c, "dst"), j.t<T>(c, "src"), s, j.t<U>(c, "mask"), j.t<uint8_t>(c, "scratch"),
                                   info);
        AscendC::Select(j.t<T>(c, "dst"), s, j.t<T>(c, "src"), j.t<U>(c, "mask"), j.t<uint8_t>(c, "scratch"), info);
    }
};
static RegPairs<H_SelectLib, float, uint8_t, uint16_t> reg_select_f("SelectLib");
static RegPairs<H_SelectLib, half, uint8_t, int32_t> reg_select_h("SelectLib");

// ActHost/T op=<name> n=<elements> out=<u32 tensor>: [maxValue, minValue, maxLiveNodeCount, extraBuf] (the
// factor pair ~0 where the call has no factor helper), stored raw (no trace record).
#define ACT_HOST(NAME)                                                          \
    if (op == #NAME) {                                                          \
        AscendC::Get##NAME##MaxMinTmpSize(shape, ts, false, r[0], r[1]);        \
        AscendC::Get##NAME##TmpBufferFactorSize(ts, r[2], r[3]);                \
    }
template <typename T>
struct H_ActHost {
    static void run(const Job& j, const Call& c) {
        const std::string op = c.s("op");
        const Dims shape{{c.i("n")}};
        const uint32_t ts = sizeof(T);
        uint32_t r[4] = {~0u, ~0u, ~0u, ~0u};
        ACT_HOST(GeGLU)
        ACT_HOST(Fmod)
        ACT_HOST(Xor)
        ACT_HOST(Axpy)
        if (op == "Gelu") {
            AscendC::GetGeluMaxMinTmpSize(shape, ts, r[0], r[1]);
            if (AscendC::GetGeluMaxTmpSize(shape, ts) != r[0] || AscendC::GetGeluMinTmpSize(shape, ts) != r[1])
                throw std::runtime_error("GetGeluMaxTmpSize / GetGeluMinTmpSize disagree with GetGeluMaxMinTmpSize");
        }
        if (op == "SwiGLU") {
            AscendC::GetSwiGLUMaxMinTmpSize(shape, ts, r[0], r[1], false);
            AscendC::GetSwiGLUTmpBufferFactorSize(ts, r[2], r[3]);
        }
        if (op == "Silu") AscendC::GetSiluTmpSize(shape, ts, false, r[0], r[1]);
        if (op == "Swish") AscendC::GetSwishTmpSize(shape, ts, false, r[0], r[1]);
        if (op == "Exp") {
            if (!AscendC::GetExpMaxMinTmpSize(shape, ts, false, r[0], r[1]))
                throw std::runtime_error("GetExpMaxMinTmpSize said it could not");
            AscendC::GetExpTmpBufferFactorSize(ts, r[2], r[3]);
        }
        if (op == "Power") {  // tensor ^ tensor, and each scalar form (a shape of 1 element) gives the same
            const Dims one{{1}};
            AscendC::GetPowerMaxMinTmpSize(shape, shape, false, ts, false, r[0], r[1]);
            uint32_t r2[4];
            AscendC::GetPowerMaxMinTmpSize(shape, one, false, ts, false, r2[0], r2[1]);
            AscendC::GetPowerMaxMinTmpSize(one, shape, false, ts, false, r2[2], r2[3]);
            if (r2[0] != r[0] || r2[1] != r[1] || r2[2] != r[0] || r2[3] != r[1])
                throw std::runtime_error("GetPowerMaxMinTmpSize: the scalar forms' sizes differ");
            AscendC::GetPowerTmpBufferFactorSize(ts, r[2], r[3]);
        }
        if (op == "DropOut") {  // the pages' {firstAxis, srcLastAxis, maskLastAxis}: n rows of 64
            const Dims three{{c.i("n"), 64, 64}};
            AscendC::GetDropOutMaxMinTmpSize(three, ts, false, r[0], r[1]);
            if (AscendC::GetDropOutMaxTmpSize(three, ts, false) != r[0] ||
                AscendC::GetDropOutMinTmpSize(three, ts, false) != r[1])
                throw std::runtime_error("GetDropOutMax/MinTmpSize disagree with GetDropOutMaxMinTmpSize");
        }
        if (op == "Select") {  // a tensor of n elements and a scalar; the mask's shape does not matter
            const Dims one{{1}};
            AscendC::GetSelectMaxMinTmpSize(shape, one, ts, shape, 1, false, r[0], r[1]);
            uint32_t w[2];
            AscendC::GetSelectWithBytesMaskMaxMinTmpSize(one, shape, ts, shape, 1, true, w[0], w[1]);
            if (w[0] != r[0] || w[1] != r[1]) throw std::runtime_error("GetSelect...: the two names disagree");
        }
        if (op == "Arange") AscendC::GetArangeMaxMinTmpSize(r[0], r[1]);
        std::memcpy(j.t<uint32_t>(c, "out").mpnpu_addr(), r, sizeof r);
    }
};
static RegTypes<H_ActHost, half, float> reg_acthost("ActHost");
