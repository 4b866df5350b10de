// Handlers: the two-source element-wise calls, FusedMulAdd and Axpy.
#include "runner.h"

using namespace vecconf;

// form=count | bits | len; setmask=0/1 picks isSetMask for the level-0 forms; ptr=1 makes the call
// through a pointer of the documented function type.
template <typename T>
using BinaryCountPtr = void (*)(const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&,
                                const AscendC::LocalTensor<T>&, const int32_t&);
template <typename T>
using BinaryL0Ptr = void (*)(const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&,
                             const AscendC::LocalTensor<T>&, uint64_t, const uint8_t, const AscendC::BinaryRepeatParams&);
template <typename T>
using BinaryBitsPtr = void (*)(const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&,
                               const AscendC::LocalTensor<T>&, const uint64_t[], const uint8_t,
                               const AscendC::BinaryRepeatParams&);
#define BINARY_HANDLER(NAME)                                                                                      \
    template <typename T>                                                                                         \
    struct H_##NAME {                                                                                             \
        static void run(const Job& j, const Call& c) {                                                            \
            auto dst = j.t<T>(c, "dst");                                                                          \
            auto s0 = j.t<T>(c, "src0");                                                                          \
            auto s1 = j.t<T>(c, "src1");                                                                          \
            std::string form = c.s("form");                                                                       \
            bool set = c.i("setmask", 1) != 0;                                                                    \
            uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};                                                   \
            if (c.i("ptr", 0) && form != "count") {                                                               \
                /* through a pointer of the documented function type (as kernels pass the call along) */          \
                BinaryL0Ptr<T> f = nullptr;                                                                       \
                BinaryBitsPtr<T> g = nullptr;                                                                     \
                if (form == "bits" && set) g = &AscendC::NAME<T, true>;                                          \
                else if (form == "bits") g = &AscendC::NAME<T, false>;                                            \
                else if (set) f = &AscendC::NAME<T, true>;                                                        \
                else f = &AscendC::NAME<T, false>;                                                                \
                if (g) g(dst, s0, s1, m, uint8_t(c.i("repeat")), binary_params(c));                               \
                else f(dst, s0, s1, c.u("len"), uint8_t(c.i("repeat")), binary_params(c));                       \
            } else if (form == "count" && c.i("ptr", 0)) {                                                        \
                BinaryCountPtr<T> f = &AscendC::NAME<T>;                                                          \
                f(dst, s0, s1, int32_t(c.i("count")));                                                            \
            } else if (form == "count") {                                                                         \
                AscendC::NAME(dst, s0, s1, int32_t(c.i("count")));                                                \
            } else if (form == "bits") {                                                                          \
                if (set) AscendC::NAME<T, true>(dst, s0, s1, m, c.i("repeat"), binary_params(c));                 \
                else AscendC::NAME<T, false>(dst, s0, s1, m, c.i("repeat"), binary_params(c));                    \
            } else {                                                                                              \
                if (set) AscendC::NAME<T, true>(dst, s0, s1, c.u("len"), c.i("repeat"), binary_params(c));        \
                else AscendC::NAME<T, false>(dst, s0, s1, c.u("len"), c.i("repeat"), binary_params(c));           \
            }                                                                                                     \
        }                                                                                                         \
    };                                                                                                            \
    static RegTypes<H_##NAME, VECCONF_NUMERIC> reg_##NAME(#NAME);

BINARY_HANDLER(Add)
BINARY_HANDLER(Sub)
BINARY_HANDLER(Mul)
BINARY_HANDLER(Div)
BINARY_HANDLER(Max)
BINARY_HANDLER(Min)
BINARY_HANDLER(And)
BINARY_HANDLER(Or)
BINARY_HANDLER(AddRelu)
BINARY_HANDLER(SubRelu)

// FusedMulAdd (dst = src0 * dst + src1): form=count | bits | len, setmask=0/1.
template <typename T>
struct H_FusedMulAdd {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto s0 = j.t<T>(c, "src0");
        auto s1 = j.t<T>(c, "src1");
        std::string form = c.s("form");
        bool set = c.i("setmask", 1) != 0;
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        if (form == "count") AscendC::FusedMulAdd(dst, s0, s1, int32_t(c.i("count")));
        else if (form == "bits" && set) AscendC::FusedMulAdd<T, true>(dst, s0, s1, m, c.i("repeat"), binary_params(c));
        else if (form == "bits") AscendC::FusedMulAdd<T, false>(dst, s0, s1, m, c.i("repeat"), binary_params(c));
        else if (set) AscendC::FusedMulAdd<T, true>(dst, s0, s1, c.u("len"), c.i("repeat"), binary_params(c));
        else AscendC::FusedMulAdd<T, false>(dst, s0, s1, c.u("len"), c.i("repeat"), binary_params(c));
    }
};
static RegTypes<H_FusedMulAdd, VECCONF_NUMERIC> reg_fused_mul_add("FusedMulAdd");

template <typename T, typename U>
struct H_Axpy {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<U>(c, "src");
        U s = scalar_of<U>(c, "scalar");
        std::string form = c.s("form");
        bool set = c.i("setmask", 1) != 0;
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        if (form == "count") AscendC::Axpy(dst, src, s, int32_t(c.i("count")));
        else if (form == "bits" && set) AscendC::Axpy<T, U, true>(dst, src, s, m, c.i("repeat"), unary_params(c));
        else if (form == "bits") AscendC::Axpy<T, U, false>(dst, src, s, m, c.i("repeat"), unary_params(c));
        else if (set) AscendC::Axpy<T, U, true>(dst, src, s, c.u("len"), c.i("repeat"), unary_params(c));
        else AscendC::Axpy<T, U, false>(dst, src, s, c.u("len"), c.i("repeat"), unary_params(c));
    }
};
static RegPairs<H_Axpy, half, half, float> reg_axpy_h("Axpy");
static RegPairs<H_Axpy, float, float, half, int32_t> reg_axpy_f("Axpy");
