// Tiling template arguments (ASCENDC_TPL_*): an operator declares the template parameters of its
// kernel (ASCENDC_TPL_ARGS_DECL with one *_DECL per parameter: its name, kind, bit width and the
// values it may take) and the combinations that exist (ASCENDC_TPL_SEL of ASCENDC_TPL_ARGS_SEL with
// *_SEL entries). The host's tiling turns a combination into the tiling key; the kernel receives the
// parameters as template arguments. mpnpu compiles kernels only, so here the declarations are data
// of our own (kept in g_tilingDeclareParams / g_tilingSelectParams, as the names the documentation
// gives) and have no effect on a launch: a unit test names the kernel's template arguments itself.
// GET_TPL_TILING_KEY(values...) encodes one combination into a tiling key as documented: each
// declared parameter's value in its declared bit width, in declaration order. The documentation
// does not say which end the first parameter takes; here it takes the lowest bits (a key is only
// ever compared with keys made the same way). A value the declaration does not allow, a wrong
// count of values, or a combination no ASCENDC_TPL_SEL lists is refused with std::invalid_argument
// naming the parameter (a unit test sees it as a failure of the test that asked).
#ifndef MPNPU_TEMPLATE_ARGUMENT_H
#define MPNPU_TEMPLATE_ARGUMENT_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// kinds of template parameter
#define ASCENDC_TPL_DTYPE 0
#define ASCENDC_TPL_FORMAT 1
#define ASCENDC_TPL_UINT 2
#define ASCENDC_TPL_BOOL 3
#define ASCENDC_TPL_KERNEL_TYPE 4
#define ASCENDC_TPL_DETERMINISTIC 5
#define ASCENDC_TPL_SHARED_KERNEL_TYPE 6
// bit widths
#define ASCENDC_TPL_1_BW 1
#define ASCENDC_TPL_2_BW 2
#define ASCENDC_TPL_4_BW 4
#define ASCENDC_TPL_8_BW 8
#define ASCENDC_TPL_16_BW 16
#define ASCENDC_TPL_32_BW 32
// how a UINT parameter's values are given: a list, [lo, hi] ranges, or both
#define ASCENDC_TPL_UI_RANGE 0
#define ASCENDC_TPL_UI_LIST 1
#define ASCENDC_TPL_UI_MIX 2
// a DTYPE/FORMAT parameter that follows an input's or output's
#define ASCENDC_TPL_INPUT(x) (uint64_t(1000) + uint64_t(x))
#define ASCENDC_TPL_OUTPUT(x) (uint64_t(2000) + uint64_t(x))
// kernel types a combination may name
#define ASCENDC_TPL_AIV_ONLY 0
#define ASCENDC_TPL_AIC_ONLY 1
#define ASCENDC_TPL_MIX_AIV_1_0 2
#define ASCENDC_TPL_MIX_AIC_1_0 3
#define ASCENDC_TPL_MIX_AIC_1_1 4
#define ASCENDC_TPL_MIX_AIC_1_2 5
#define ASCENDC_TPL_AICORE 6
#define ASCENDC_TPL_VECTORCORE 7
#define ASCENDC_TPL_MIX_AICORE 8
#define ASCENDC_TPL_MIX_VECTOR_CORE 9

// The graph's data types and formats a DTYPE/FORMAT parameter may list.
enum MpnpuTplDataType : uint64_t {
    C_DT_FLOAT, C_DT_FLOAT16, C_DT_INT8, C_DT_INT32, C_DT_UINT8, C_DT_INT16, C_DT_UINT16, C_DT_UINT32,
    C_DT_INT64, C_DT_UINT64, C_DT_DOUBLE, C_DT_BOOL, C_DT_COMPLEX64, C_DT_BF16, C_DT_INT4, C_DT_UINT1,
    C_DT_INT2, C_DT_COMPLEX32, C_DT_HIFLOAT8, C_DT_FLOAT8_E5M2, C_DT_FLOAT8_E4M3FN, C_DT_FLOAT4_E2M1,
    C_DT_FLOAT4_E1M2
};
enum MpnpuTplFormat : uint64_t {
    C_FORMAT_NCHW, C_FORMAT_NHWC, C_FORMAT_ND, C_FORMAT_NC1HWC0, C_FORMAT_FRACTAL_Z, C_FORMAT_NDHWC,
    C_FORMAT_FRACTAL_NZ, C_FORMAT_NCDHW, C_FORMAT_NDC1HWC0, C_FORMAT_FRACTAL_Z_3D, C_FORMAT_NC, C_FORMAT_NCL
};

namespace mpnpu {
namespace tpl {

// One declared (or selected) template parameter.
struct Param {
    const char* name;
    uint32_t kind;
    uint8_t bit_width;  // 0 in a selection: the declaration's
    std::vector<uint64_t> values;
    const char* role;  // "DECL" or "SEL"
    Param(const char* n, uint32_t k, uint8_t bw, std::vector<uint64_t> v, const char* r)
        : name(n), kind(k), bit_width(bw), values(std::move(v)), role(r) {}
};

// A parameter from its values (a call, not a braced list: its commas are inside parentheses, so an
// entry passes whole through ASCENDC_TPL_ARGS_SEL's counting of its arguments).
template <class... V>
Param param(const char* name, uint32_t kind, uint8_t bit_width, const char* role, V... values) {
    return Param(name, kind, bit_width, std::vector<uint64_t>{static_cast<uint64_t>(values)...}, role);
}

// The entries of one ASCENDC_TPL_ARGS_SEL.
struct Sel {
    std::vector<Param> list;
    Sel& add(Param p) {
        list.push_back(std::move(p));
        return *this;
    }
    Sel& add() { return *this; }
};

}  // namespace tpl
}  // namespace mpnpu

using TilingDeclareParams = std::vector<::mpnpu::tpl::Param>;
using TilingSelectParams = std::vector<std::vector<::mpnpu::tpl::Param>>;

#define ASCENDC_TPL_DTYPE_DECL(x, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, "DECL", __VA_ARGS__)
#define ASCENDC_TPL_DATATYPE_DECL(x, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, "DECL", __VA_ARGS__)
#define ASCENDC_TPL_FORMAT_DECL(x, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_FORMAT, ASCENDC_TPL_8_BW, "DECL", __VA_ARGS__)
#define ASCENDC_TPL_UINT_DECL(x, bw, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_UINT, bw, "DECL", __VA_ARGS__)
#define ASCENDC_TPL_BOOL_DECL(x, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_BOOL, ASCENDC_TPL_1_BW, "DECL", __VA_ARGS__)
#define ASCENDC_TPL_KERNEL_TYPE_DECL(x, ...) \
    ::mpnpu::tpl::param(#x, ASCENDC_TPL_SHARED_KERNEL_TYPE, ASCENDC_TPL_8_BW, "DECL", __VA_ARGS__)

#define ASCENDC_TPL_DTYPE_SEL(x, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, "SEL", __VA_ARGS__)
#define ASCENDC_TPL_DATATYPE_SEL(x, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, "SEL", __VA_ARGS__)
#define ASCENDC_TPL_FORMAT_SEL(x, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_FORMAT, ASCENDC_TPL_8_BW, "SEL", __VA_ARGS__)
#define ASCENDC_TPL_UINT_SEL(x, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_UINT, 0, "SEL", __VA_ARGS__)
#define ASCENDC_TPL_BOOL_SEL(x, ...) ::mpnpu::tpl::param(#x, ASCENDC_TPL_BOOL, ASCENDC_TPL_1_BW, "SEL", __VA_ARGS__)
#define ASCENDC_TPL_KERNEL_TYPE_SEL(...) \
    ::mpnpu::tpl::param("kernel_type", ASCENDC_TPL_KERNEL_TYPE, ASCENDC_TPL_8_BW, "SEL", __VA_ARGS__)
#define ASCENDC_TPL_DETERMINISTIC_SEL(...) \
    ::mpnpu::tpl::param("deterministic", ASCENDC_TPL_DETERMINISTIC, ASCENDC_TPL_1_BW, "SEL", __VA_ARGS__)
#define ASCENDC_TPL_SHARED_KERNEL_TYPE_SEL(x, ...) \
    ::mpnpu::tpl::param(#x, ASCENDC_TPL_SHARED_KERNEL_TYPE, ASCENDC_TPL_8_BW, "SEL", __VA_ARGS__)
// (a combination's tiling struct matters to the host's tiling only)
#define ASCENDC_TPL_TILING_STRUCT_SEL(x, ...)

#define ASCENDC_TPL_ARGS_DECL(x, ...) [[maybe_unused]] static TilingDeclareParams g_tilingDeclareParams{__VA_ARGS__}
// ASCENDC_TPL_ARGS_SEL takes empty entries too (kernels' helper macros end with a comma, and write
// ``ASCENDC_TPL_ARGS_SEL(HELPER(...), )``): each entry becomes a ``.add(entry)`` of a builder, an empty
// one ``.add()``, which adds nothing. At most 32 entries.
#define ASCENDC_TPL_ARGS_SEL(...) \
    (::mpnpu::tpl::Sel() MPNPU_TPL_CAT(MPNPU_TPL_ADD_, MPNPU_TPL_COUNT(__VA_ARGS__))(__VA_ARGS__)).list
#define MPNPU_TPL_CAT(a, b) MPNPU_TPL_CAT_(a, b)
#define MPNPU_TPL_CAT_(a, b) a##b
#define MPNPU_TPL_COUNT(...) \
    MPNPU_TPL_COUNT_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, \
    15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define MPNPU_TPL_COUNT_( \
    _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, \
    _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, N, ...) N
#define MPNPU_TPL_ADD_1(x) .add(x)
#define MPNPU_TPL_ADD_2(x, ...) .add(x) MPNPU_TPL_ADD_1(__VA_ARGS__)
#define MPNPU_TPL_ADD_3(x, ...) .add(x) MPNPU_TPL_ADD_2(__VA_ARGS__)
#define MPNPU_TPL_ADD_4(x, ...) .add(x) MPNPU_TPL_ADD_3(__VA_ARGS__)
#define MPNPU_TPL_ADD_5(x, ...) .add(x) MPNPU_TPL_ADD_4(__VA_ARGS__)
#define MPNPU_TPL_ADD_6(x, ...) .add(x) MPNPU_TPL_ADD_5(__VA_ARGS__)
#define MPNPU_TPL_ADD_7(x, ...) .add(x) MPNPU_TPL_ADD_6(__VA_ARGS__)
#define MPNPU_TPL_ADD_8(x, ...) .add(x) MPNPU_TPL_ADD_7(__VA_ARGS__)
#define MPNPU_TPL_ADD_9(x, ...) .add(x) MPNPU_TPL_ADD_8(__VA_ARGS__)
#define MPNPU_TPL_ADD_10(x, ...) .add(x) MPNPU_TPL_ADD_9(__VA_ARGS__)
#define MPNPU_TPL_ADD_11(x, ...) .add(x) MPNPU_TPL_ADD_10(__VA_ARGS__)
#define MPNPU_TPL_ADD_12(x, ...) .add(x) MPNPU_TPL_ADD_11(__VA_ARGS__)
#define MPNPU_TPL_ADD_13(x, ...) .add(x) MPNPU_TPL_ADD_12(__VA_ARGS__)
#define MPNPU_TPL_ADD_14(x, ...) .add(x) MPNPU_TPL_ADD_13(__VA_ARGS__)
#define MPNPU_TPL_ADD_15(x, ...) .add(x) MPNPU_TPL_ADD_14(__VA_ARGS__)
#define MPNPU_TPL_ADD_16(x, ...) .add(x) MPNPU_TPL_ADD_15(__VA_ARGS__)
#define MPNPU_TPL_ADD_17(x, ...) .add(x) MPNPU_TPL_ADD_16(__VA_ARGS__)
#define MPNPU_TPL_ADD_18(x, ...) .add(x) MPNPU_TPL_ADD_17(__VA_ARGS__)
#define MPNPU_TPL_ADD_19(x, ...) .add(x) MPNPU_TPL_ADD_18(__VA_ARGS__)
#define MPNPU_TPL_ADD_20(x, ...) .add(x) MPNPU_TPL_ADD_19(__VA_ARGS__)
#define MPNPU_TPL_ADD_21(x, ...) .add(x) MPNPU_TPL_ADD_20(__VA_ARGS__)
#define MPNPU_TPL_ADD_22(x, ...) .add(x) MPNPU_TPL_ADD_21(__VA_ARGS__)
#define MPNPU_TPL_ADD_23(x, ...) .add(x) MPNPU_TPL_ADD_22(__VA_ARGS__)
#define MPNPU_TPL_ADD_24(x, ...) .add(x) MPNPU_TPL_ADD_23(__VA_ARGS__)
#define MPNPU_TPL_ADD_25(x, ...) .add(x) MPNPU_TPL_ADD_24(__VA_ARGS__)
#define MPNPU_TPL_ADD_26(x, ...) .add(x) MPNPU_TPL_ADD_25(__VA_ARGS__)
#define MPNPU_TPL_ADD_27(x, ...) .add(x) MPNPU_TPL_ADD_26(__VA_ARGS__)
#define MPNPU_TPL_ADD_28(x, ...) .add(x) MPNPU_TPL_ADD_27(__VA_ARGS__)
#define MPNPU_TPL_ADD_29(x, ...) .add(x) MPNPU_TPL_ADD_28(__VA_ARGS__)
#define MPNPU_TPL_ADD_30(x, ...) .add(x) MPNPU_TPL_ADD_29(__VA_ARGS__)
#define MPNPU_TPL_ADD_31(x, ...) .add(x) MPNPU_TPL_ADD_30(__VA_ARGS__)
#define MPNPU_TPL_ADD_32(x, ...) .add(x) MPNPU_TPL_ADD_31(__VA_ARGS__)
#define ASCENDC_TPL_SEL(...) [[maybe_unused]] static TilingSelectParams g_tilingSelectParams{__VA_ARGS__}

namespace mpnpu {
namespace tpl {

// Whether a UINT parameter's value list (mode first: a list of values, [lo, hi] ranges after
// their count, or ranges then values) allows v.
inline bool uint_allows(const std::vector<uint64_t>& spec, uint64_t v) {
    if (spec.empty()) return false;
    const uint64_t mode = spec[0];
    if (mode == ASCENDC_TPL_UI_LIST) {
        for (size_t i = 1; i < spec.size(); ++i) if (spec[i] == v) return true;
        return false;
    }
    const size_t ranges = spec.size() > 1 ? size_t(spec[1]) : 0;
    size_t i = 2;
    for (size_t r = 0; r < ranges && i + 1 < spec.size(); ++r, i += 2)
        if (spec[i] <= v && v <= spec[i + 1]) return true;
    if (mode == ASCENDC_TPL_UI_MIX)
        for (; i < spec.size(); ++i) if (spec[i] == v) return true;
    return false;
}

// Whether a declared or selected parameter allows v.
inline bool allows(const Param& p, uint64_t v) {
    if (p.kind == ASCENDC_TPL_UINT) return uint_allows(p.values, v);
    for (uint64_t x : p.values) if (x == v) return true;
    return false;
}

// The values of GET_TPL_TILING_KEY as the key's words (a test may pass int or enum variables).
template <class... T>
std::vector<uint64_t> values(T... v) {
    return std::vector<uint64_t>{static_cast<uint64_t>(v)...};
}

inline std::string join(const std::vector<uint64_t>& values) {
    std::string out;
    for (uint64_t v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
    return out;
}

}  // namespace tpl
}  // namespace mpnpu

namespace AscendC {

// The tiling key of one combination of template arguments (see the top of this file).
inline uint64_t EncodeTilingKey(const TilingDeclareParams& declareParams, const TilingSelectParams& selectParamsVec,
                                const std::vector<uint64_t>& tilingParams) {
    const std::string what = "GET_TPL_TILING_KEY(" + ::mpnpu::tpl::join(tilingParams) + "): ";
    if (tilingParams.size() != declareParams.size())
        throw std::invalid_argument(what + std::to_string(tilingParams.size()) + " values for the " +
                                    std::to_string(declareParams.size()) + " declared template parameters");
    uint64_t key = 0;
    unsigned shift = 0;
    for (size_t i = 0; i < declareParams.size(); ++i) {
        const auto& p = declareParams[i];
        const uint64_t v = tilingParams[i];
        const unsigned bw = p.bit_width;
        if (bw < 64 && (v >> bw) != 0)
            throw std::invalid_argument(what + p.name + " = " + std::to_string(v) + " does not fit its " +
                                        std::to_string(bw) + " bits");
        if (!::mpnpu::tpl::allows(p, v))
            throw std::invalid_argument(what + p.name + " = " + std::to_string(v) +
                                        " is not among the values ASCENDC_TPL_ARGS_DECL gives it");
        if (shift + bw > 64)
            throw std::invalid_argument(what + "the declared bit widths add up to more than 64 bits");
        key |= v << shift;
        shift += bw;
    }
    if (selectParamsVec.empty()) return key;
    for (const auto& sel : selectParamsVec) {
        bool fits = true;
        for (const auto& s : sel)
            for (size_t i = 0; i < declareParams.size() && fits; ++i)
                if (std::string(declareParams[i].name) == s.name && !::mpnpu::tpl::allows(s, tilingParams[i]))
                    fits = false;
        if (fits) return key;
    }
    throw std::invalid_argument(what + "no ASCENDC_TPL_SEL combination lists these values");
}

}  // namespace AscendC

#define GET_TPL_TILING_KEY(...) \
    ::AscendC::EncodeTilingKey(g_tilingDeclareParams, g_tilingSelectParams, ::mpnpu::tpl::values(__VA_ARGS__))

#endif  // MPNPU_TEMPLATE_ARGUMENT_H
