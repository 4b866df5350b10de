// Handlers: Compare (into UB and into the register), Compares / CompareScalar, Get/SetCmpMask, Select.
#include "runner.h"

using namespace vecconf;

template <typename T, typename U>
struct H_Compare {
    static void run(const Job& j, const Call& c) {
        auto src0 = j.t<T>(c, "src0");
        auto src1 = j.t<T>(c, "src1");
        auto mode = AscendC::CMPMODE(c.i("cmp"));
        std::string form = c.s("form");
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        bool set = c.i("setmask", 1) != 0;
        if (form == "reg_bits") {
            if (set) AscendC::Compare<T, true>(src0, src1, mode, m, binary_params(c));
            else AscendC::Compare<T, false>(src0, src1, mode, m, binary_params(c));
            return;
        }
        if (form == "reg_len") {
            if (set) AscendC::Compare<T, true>(src0, src1, mode, c.u("len"), binary_params(c));
            else AscendC::Compare<T, false>(src0, src1, mode, c.u("len"), binary_params(c));
            return;
        }
        auto dst = j.t<U>(c, "dst");
        if (form == "count") AscendC::Compare(dst, src0, src1, mode, uint32_t(c.i("count")));
        else if (form == "bits") AscendC::Compare(dst, src0, src1, mode, m, c.i("repeat"), binary_params(c));
        else AscendC::Compare(dst, src0, src1, mode, c.u("len"), c.i("repeat"), binary_params(c));
    }
};
static RegPairs<H_Compare, half, uint8_t, int8_t, uint16_t> reg_cmp_h("Compare");
static RegPairs<H_Compare, float, uint8_t, int8_t> reg_cmp_f("Compare");
static RegPairs<H_Compare, int32_t, uint8_t> reg_cmp_i("Compare");
static RegPairs<H_Compare, int16_t, uint8_t> reg_cmp_s("Compare");

#define COMPARES_HANDLER(NAME)                                                                                    \
    template <typename T, typename U>                                                                             \
    struct H_##NAME {                                                                                             \
        static void run(const Job& j, const Call& c) {                                                            \
            auto dst = j.t<U>(c, "dst");                                                                          \
            auto src0 = j.t<T>(c, "src0");                                                                        \
            T s = scalar_of<T>(c, "scalar");                                                                      \
            auto mode = AscendC::CMPMODE(c.i("cmp"));                                                             \
            std::string form = c.s("form");                                                                       \
            uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};                                                   \
            if (form == "count") AscendC::NAME(dst, src0, s, mode, uint32_t(c.i("count")));                       \
            else if (form == "bits") AscendC::NAME(dst, src0, s, mode, m, c.i("repeat"), unary_params(c));        \
            else AscendC::NAME(dst, src0, s, mode, c.u("len"), c.i("repeat"), unary_params(c));                   \
        }                                                                                                         \
    };                                                                                                            \
    static RegPairs<H_##NAME, half, uint8_t, int8_t> reg_##NAME##_h(#NAME);                                      \
    static RegPairs<H_##NAME, float, uint8_t> reg_##NAME##_f(#NAME);                                             \
    static RegPairs<H_##NAME, int32_t, uint8_t> reg_##NAME##_i(#NAME);

COMPARES_HANDLER(Compares)
COMPARES_HANDLER(CompareScalar)

template <typename T>
struct H_CmpMask {
    static void run(const Job& j, const Call& c) {
        if (c.s("op") == "get") AscendC::GetCmpMask(j.t<T>(c, "dst"));
        else AscendC::SetCmpMask(j.t<T>(c, "src"));
    }
};
static RegTypes<H_CmpMask, uint8_t, uint16_t, half, float, int64_t> reg_cmpmask("CmpMask");

// form=count | bits | len | nomask; scalar=... selects the scalar-src1 (mode 1) signatures.
template <typename T, typename U>
struct H_Select {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src0 = j.t<T>(c, "src0");
        auto mode = AscendC::SELMODE(c.i("sel"));
        std::string form = c.s("form");
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        bool set = c.i("setmask", 1) != 0;
        bool scalar = c.has("scalar");
        if (form == "nomask") {
            if (scalar) {
                AscendC::Select(dst, j.t<U>(c, "sel_mask"), src0, c.i("repeat"), binary_params(c));
            } else if (mode == AscendC::SELMODE::VSEL_CMPMASK_SPR) {
                AscendC::Select<T, AscendC::SELMODE::VSEL_CMPMASK_SPR>(dst, src0, j.t<T>(c, "src1"), c.i("repeat"),
                                                                       binary_params(c));
            } else {
                AscendC::Select<T, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE>(dst, src0, j.t<T>(c, "src1"),
                                                                              c.i("repeat"), binary_params(c));
            }
            return;
        }
        auto sel = j.t<U>(c, "sel_mask");
        if (scalar) {
            T s = scalar_of<T>(c, "scalar");
            if (form == "count") AscendC::Select(dst, sel, src0, s, mode, uint32_t(c.i("count")));
            else if (form == "bits" && set)
                AscendC::Select<T, U, true>(dst, sel, src0, s, mode, m, c.i("repeat"), binary_params(c));
            else if (form == "bits")
                AscendC::Select<T, U, false>(dst, sel, src0, s, mode, m, c.i("repeat"), binary_params(c));
            else if (set)
                AscendC::Select<T, U, true>(dst, sel, src0, s, mode, c.u("len"), c.i("repeat"), binary_params(c));
            else
                AscendC::Select<T, U, false>(dst, sel, src0, s, mode, c.u("len"), c.i("repeat"), binary_params(c));
        } else {
            auto src1 = j.t<T>(c, "src1");
            if (form == "count") AscendC::Select(dst, sel, src0, src1, mode, uint32_t(c.i("count")));
            else if (form == "bits" && set)
                AscendC::Select<T, U, true>(dst, sel, src0, src1, mode, m, c.i("repeat"), binary_params(c));
            else if (form == "bits")
                AscendC::Select<T, U, false>(dst, sel, src0, src1, mode, m, c.i("repeat"), binary_params(c));
            else if (set)
                AscendC::Select<T, U, true>(dst, sel, src0, src1, mode, c.u("len"), c.i("repeat"), binary_params(c));
            else
                AscendC::Select<T, U, false>(dst, sel, src0, src1, mode, c.u("len"), c.i("repeat"), binary_params(c));
        }
    }
};
static RegPairs<H_Select, half, uint8_t, uint16_t, uint32_t, uint64_t, int8_t> reg_sel_h("Select");
static RegPairs<H_Select, float, uint8_t, uint16_t, uint32_t, uint64_t> reg_sel_f("Select");
static RegPairs<H_Select, int32_t, uint8_t> reg_sel_i("Select");
