// Handlers: the one-source and tensor-scalar element-wise calls.
#include "runner.h"

using namespace vecconf;

// ptr=1: the call made through a pointer of the documented function type.
template <typename T>
using UnaryCountPtr = void (*)(const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&, const int32_t&);
template <typename T>
using UnaryL0Ptr = void (*)(const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&, uint64_t, const uint8_t,
                            const AscendC::UnaryRepeatParams&);
template <typename T>
using UnaryBitsPtr = void (*)(const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&, const uint64_t[],
                              const uint8_t, const AscendC::UnaryRepeatParams&);

#define UNARY_HANDLER(NAME)                                                                                       \
    template <typename T>                                                                                         \
    struct H_##NAME {                                                                                             \
        static void run(const Job& j, const Call& c) {                                                            \
            auto dst = j.t<T>(c, "dst");                                                                          \
            auto src = j.t<T>(c, "src");                                                                          \
            std::string form = c.s("form");                                                                       \
            bool set = c.i("setmask", 1) != 0;                                                                    \
            uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};                                                   \
            if (c.i("ptr", 0) && form != "count") {                                                               \
                UnaryL0Ptr<T> f = nullptr;                                                                        \
                UnaryBitsPtr<T> g = nullptr;                                                                      \
                if (form == "bits" && set) g = &AscendC::NAME<T, true>;                                          \
                else if (form == "bits") g = &AscendC::NAME<T, false>;                                            \
                else if (set) f = &AscendC::NAME<T, true>;                                                        \
                else f = &AscendC::NAME<T, false>;                                                                \
                if (g) g(dst, src, m, uint8_t(c.i("repeat")), unary_params(c));                                   \
                else f(dst, src, c.u("len"), uint8_t(c.i("repeat")), unary_params(c));                            \
            } else if (form == "count" && c.i("ptr", 0)) {                                                        \
                UnaryCountPtr<T> f = &AscendC::NAME<T>;                                                           \
                f(dst, src, int32_t(c.i("count")));                                                               \
            } else if (form == "count") {                                                                         \
                AscendC::NAME(dst, src, int32_t(c.i("count")));                                                   \
            } else if (form == "bits") {                                                                          \
                if (set) AscendC::NAME<T, true>(dst, src, m, c.i("repeat"), unary_params(c));                     \
                else AscendC::NAME<T, false>(dst, src, m, c.i("repeat"), unary_params(c));                        \
            } else {                                                                                              \
                if (set) AscendC::NAME<T, true>(dst, src, c.u("len"), c.i("repeat"), unary_params(c));            \
                else AscendC::NAME<T, false>(dst, src, c.u("len"), c.i("repeat"), unary_params(c));               \
            }                                                                                                     \
        }                                                                                                         \
    };                                                                                                            \
    static RegTypes<H_##NAME, VECCONF_NUMERIC> reg_##NAME(#NAME);

UNARY_HANDLER(Exp)
UNARY_HANDLER(Ln)
UNARY_HANDLER(Log)
UNARY_HANDLER(Abs)
UNARY_HANDLER(Sqrt)
UNARY_HANDLER(Rsqrt)
UNARY_HANDLER(Reciprocal)
UNARY_HANDLER(Relu)
UNARY_HANDLER(Not)

// uform=1 calls the <T, U, isSetMask> signature.
#define SCALAR_HANDLER(NAME)                                                                                      \
    template <typename T>                                                                                         \
    struct H_##NAME {                                                                                             \
        static void run(const Job& j, const Call& c) {                                                            \
            auto dst = j.t<T>(c, "dst");                                                                          \
            auto src = j.t<T>(c, "src");                                                                          \
            T s = scalar_of<T>(c, "scalar");                                                                      \
            std::string form = c.s("form");                                                                       \
            bool set = c.i("setmask", 1) != 0;                                                                    \
            bool uform = c.i("uform", 0) != 0;                                                                    \
            uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};                                                   \
            if (form == "count") {                                                                                \
                int32_t n = int32_t(c.i("count"));                                                                \
                if (uform) {                                                                                      \
                    if (set) AscendC::NAME<T, T, true>(dst, src, s, n);                                           \
                    else AscendC::NAME<T, T, false>(dst, src, s, n);                                              \
                } else if (set) {                                                                                 \
                    AscendC::NAME(dst, src, s, n);                                                                \
                } else {                                                                                          \
                    AscendC::NAME<T, false>(dst, src, s, n);                                                      \
                }                                                                                                 \
            } else if (form == "bits") {                                                                          \
                if (uform) AscendC::NAME<T, T, true>(dst, src, s, m, c.i("repeat"), unary_params(c));             \
                else if (set) AscendC::NAME<T, true>(dst, src, s, m, c.i("repeat"), unary_params(c));             \
                else AscendC::NAME<T, false>(dst, src, s, m, c.i("repeat"), unary_params(c));                     \
            } else {                                                                                              \
                if (uform) AscendC::NAME<T, T, true>(dst, src, s, c.u("len"), c.i("repeat"), unary_params(c));    \
                else if (set) AscendC::NAME<T, true>(dst, src, s, c.u("len"), c.i("repeat"), unary_params(c));    \
                else AscendC::NAME<T, false>(dst, src, s, c.u("len"), c.i("repeat"), unary_params(c));           \
            }                                                                                                     \
        }                                                                                                         \
    };                                                                                                            \
    static RegTypes<H_##NAME, VECCONF_NUMERIC> reg_##NAME(#NAME);

SCALAR_HANDLER(Adds)
SCALAR_HANDLER(Muls)
SCALAR_HANDLER(Maxs)
SCALAR_HANDLER(Mins)
SCALAR_HANDLER(LeakyRelu)
