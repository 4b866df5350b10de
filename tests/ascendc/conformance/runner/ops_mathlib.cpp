// Handlers: the math library's one-source calls (Acos ... Tanh, Acosh, Asinh, Atanh, Erf, Erfc, Floor, Ceil,
// Trunc, Frac, Log2, Log10) and
// their host helpers.
#include <cstring>

#include "runner.h"

using namespace vecconf;

namespace {

// Shape stand-in for the host helpers: anything with GetShapeSize().
struct Elems {
    int64_t n;
    int64_t GetShapeSize() const { return n; }
};


}  // namespace

// MathLib/T op=<name> dst src form=tmp_count (scratch, count) | tmp (scratch) | count | whole | ptr (count,
// through a pointer of the documented type (dst, src, const uint32_t), as kernels pass Cos<T, false>).
// Floor and Ceil have the forms tmp_count, count, ptr; Log10 count, whole, ptr; the others all five.
#define MATH_TMP_FORMS(NAME)                                                                \
    if (form == "tmp_count") return AscendC::NAME(dst, src, j.t<uint8_t>(c, "scratch"), n); \
    if (form == "tmp") return AscendC::NAME(dst, src, j.t<uint8_t>(c, "scratch"));
#define MATH_TMP_COUNT_FORM(NAME) \
    if (form == "tmp_count") return AscendC::NAME(dst, src, j.t<uint8_t>(c, "scratch"), n);
#define MATH_PLAIN_FORMS(NAME)                                                                       \
    if (form == "count") return AscendC::NAME(dst, src, n);                                          \
    if (form == "ptr") {                                                                             \
        void (*f)(const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&, const uint32_t) = \
            &AscendC::NAME<T, false>;                                                                \
        return f(dst, src, n);                                                                       \
    }
#define MATH_WHOLE_FORM(NAME) \
    if (form == "whole") return AscendC::NAME(dst, src);
#define MATH_ALL(NAME)        \
    if (op == #NAME) {        \
        MATH_TMP_FORMS(NAME)  \
        MATH_PLAIN_FORMS(NAME) \
        MATH_WHOLE_FORM(NAME) \
        throw std::runtime_error("MathLib: no form " + form + " of " #NAME); \
    }

template <typename T>
struct H_MathLib {
    static void call(const Job& j, const Call& c, const std::string& op, const std::string& form,
                     const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint32_t n) {
        MATH_ALL(Acos)
        MATH_ALL(Asin)
        MATH_ALL(Atan)
        MATH_ALL(Cos)
        MATH_ALL(Sin)
        MATH_ALL(Tan)
        MATH_ALL(Cosh)
        MATH_ALL(Sinh)
        MATH_ALL(Tanh)
        MATH_ALL(Erf)
        MATH_ALL(Erfc)
        MATH_ALL(Log2)
        MATH_ALL(Acosh)
        MATH_ALL(Asinh)
        MATH_ALL(Atanh)
        MATH_ALL(Trunc)
        MATH_ALL(Frac)
        if (op == "Floor") {
            MATH_TMP_COUNT_FORM(Floor)
            MATH_PLAIN_FORMS(Floor)
        }
        if (op == "Log") {  // the library's template <typename T, bool isReuseSource> forms of Log (= Ln)
            if (form == "count") return AscendC::Log<T, false>(dst, src, n);
            if (form == "whole") return AscendC::Log<T, false>(dst, src);
        }
        if (op == "ClampMin" || op == "ClampMax") {  // the scalar bound: 0.5
            const T b = T(0.5f);
            const bool lo = op == "ClampMin";
            if (form == "tmp_count") {
                if (lo) return AscendC::ClampMin<T, false>(dst, src, j.t<uint8_t>(c, "scratch"), b, n);
                return AscendC::ClampMax<T, false>(dst, src, j.t<uint8_t>(c, "scratch"), b, n);
            }
            if (form == "count") return lo ? AscendC::ClampMin<T, false>(dst, src, b, n)
                                           : AscendC::ClampMax<T, false>(dst, src, b, n);
        }
        if (op == "Ceil") {
            MATH_TMP_COUNT_FORM(Ceil)
            MATH_PLAIN_FORMS(Ceil)
        }
        if (op == "Log10") {
            MATH_PLAIN_FORMS(Log10)
            MATH_WHOLE_FORM(Log10)
        }
        throw std::runtime_error("MathLib: no form " + form + " of " + op);
    }
    static void run(const Job& j, const Call& c) {
        call(j, c, c.s("op"), c.s("form"), j.t<T>(c, "dst"), j.t<T>(c, "src"), uint32_t(c.u("count", 0)));
    }
};
static RegTypes<H_MathLib, half, float, int32_t> reg_mathlib("MathLib");

// MathHost/T op=<name> n=<elements> out=<u32 tensor>: the host helpers' answers for typeSize sizeof(T) and a
// shape of n elements, stored raw (no trace record) as [maxValue, minValue, maxLiveNodeCount, extraBuf].
#define MATH_HOST(NAME)                                                                  \
    if (op == #NAME) {                                                                   \
        AscendC::Get##NAME##MaxMinTmpSize(Elems{n}, ts, false, r[0], r[1]);              \
        AscendC::Get##NAME##TmpBufferFactorSize(ts, r[2], r[3]);                         \
    }
template <typename T>
struct H_MathHost {
    static void run(const Job& j, const Call& c) {
        const std::string op = c.s("op");
        const int64_t n = c.i("n");
        const uint32_t ts = sizeof(T);
        uint32_t r[4] = {~0u, ~0u, ~0u, ~0u};
        MATH_HOST(Acos)
        MATH_HOST(Asin)
        MATH_HOST(Atan)
        MATH_HOST(Cos)
        MATH_HOST(Sin)
        MATH_HOST(Tan)
        MATH_HOST(Cosh)
        MATH_HOST(Sinh)
        MATH_HOST(Tanh)
        MATH_HOST(Erf)
        MATH_HOST(Erfc)
        MATH_HOST(Floor)
        MATH_HOST(Log2)
        MATH_HOST(Log10)
        MATH_HOST(Acosh)
        MATH_HOST(Asinh)
        MATH_HOST(Atanh)
        MATH_HOST(Ceil)
        MATH_HOST(Trunc)
        MATH_HOST(Frac)
        MATH_HOST(Log)
        MATH_HOST(ClampMin)
        MATH_HOST(ClampMax)
        MATH_HOST(Sigmoid)
        MATH_HOST(Sign)
        std::memcpy(j.t<uint32_t>(c, "out").mpnpu_addr(), r, sizeof r);
    }
};
static RegTypes<H_MathHost, half, float> reg_mathhost("MathHost");
