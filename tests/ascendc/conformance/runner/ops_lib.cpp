// Handlers: library calls built on the vector unit (BroadCast / Broadcast).
#include "runner.h"

using namespace vecconf;

// BroadCast/T dim=1|2 axis=0|1 d0 d1 s0 s1 (shapes); tmp=1 passes a temporary buffer; alias=1 calls
// the newer name Broadcast.
template <typename T>
struct H_BroadCast {
    template <int dim, int axis>
    static void call(const Job& j, const Call& c, const AscendC::LocalTensor<T>& dst,
                     const AscendC::LocalTensor<T>& src, const uint32_t* ds, const uint32_t* ss) {
        bool tmp = c.i("tmp", 0) != 0, alias = c.i("alias", 0) != 0;
        if (tmp) {
            AscendC::LocalTensor<uint8_t> t = j.t<uint8_t>(c, "scratch");
            if (alias) AscendC::Broadcast<T, dim, axis>(dst, src, ds, ss, t);
            else AscendC::BroadCast<T, dim, axis>(dst, src, ds, ss, t);
        } else {
            if (alias) AscendC::Broadcast<T, dim, axis>(dst, src, ds, ss);
            else AscendC::BroadCast<T, dim, axis>(dst, src, ds, ss);
        }
    }
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        const uint32_t ds[2] = {uint32_t(c.u("d0")), uint32_t(c.u("d1", 1))};
        const uint32_t ss[2] = {uint32_t(c.u("s0")), uint32_t(c.u("s1", 1))};
        int dim = int(c.i("dim")), axis = int(c.i("axis"));
        if (dim == 1) call<1, 0>(j, c, dst, src, ds, ss);
        else if (axis == 0) call<2, 0>(j, c, dst, src, ds, ss);
        else call<2, 1>(j, c, dst, src, ds, ss);
    }
};
static RegTypes<H_BroadCast, int8_t, uint8_t, half, float, int32_t> reg_broadcast("BroadCast");

// GatherMask/T dst src (pattern=<u16/u32 tensor> | fixed=1..7) reduce=0|1 mask blk repeat srep prep;
// cnt=<u64 tensor>: rsvdCnt is stored in its first element (raw, not through the API: no trace record).
template <typename T>
struct H_GatherMask {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        AscendC::GatherMaskParams p(uint8_t(c.u("blk", 1)), uint16_t(c.u("repeat")), uint16_t(c.u("srep", 8)),
                                    uint8_t(c.u("prep", 0)));
        bool reduce = c.i("reduce", 0) != 0;
        uint32_t mask = uint32_t(c.u("mask", 0));
        uint64_t cnt = ~0ull;
        if (c.has("pattern")) {
            if (c.s("pdt") == "u16")
                AscendC::GatherMask(dst, src, j.t<uint16_t>(c, "pattern"), reduce, mask, p, cnt);
            else
                AscendC::GatherMask(dst, src, j.t<uint32_t>(c, "pattern"), reduce, mask, p, cnt);
        } else {
            AscendC::GatherMask(dst, src, uint8_t(c.u("fixed")), reduce, mask, p, cnt);
        }
        auto out = j.t<uint64_t>(c, "cnt");
        std::memcpy(out.mpnpu_addr(), &cnt, sizeof cnt);
    }
};
static RegTypes<H_GatherMask, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float, int8_t> reg_gathermask(
    "GatherMask");

// Sigmoid/T, Sign/T dst src: form=count (count) | tmp_count (scratch, count) | tmp | whole | ptr (count, through
// a pointer of the documented type, as kernels pass Sigmoid<T, false> along).
#define LIB_UNARY_HANDLER(NAME)                                                                                   \
    template <typename T>                                                                                         \
    struct H_##NAME {                                                                                             \
        static void run(const Job& j, const Call& c) {                                                            \
            auto dst = j.t<T>(c, "dst");                                                                          \
            auto src = j.t<T>(c, "src");                                                                          \
            std::string form = c.s("form");                                                                       \
            if (form == "count") {                                                                                \
                AscendC::NAME(dst, src, uint32_t(c.u("count")));                                                  \
            } else if (form == "tmp_count") {                                                                     \
                AscendC::NAME(dst, src, j.t<uint8_t>(c, "scratch"), uint32_t(c.u("count")));                      \
            } else if (form == "tmp") {                                                                           \
                AscendC::NAME(dst, src, j.t<uint8_t>(c, "scratch"));                                              \
            } else if (form == "whole") {                                                                         \
                AscendC::NAME(dst, src);                                                                          \
            } else {                                                                                              \
                void (*f)(const AscendC::LocalTensor<T>&, const AscendC::LocalTensor<T>&, const uint32_t) =      \
                    &AscendC::NAME<T, false>;                                                                     \
                f(dst, src, uint32_t(c.u("count")));                                                              \
            }                                                                                                     \
        }                                                                                                         \
    };                                                                                                            \
    static RegTypes<H_##NAME, half, float, int32_t> reg_##NAME(#NAME);

LIB_UNARY_HANDLER(Sigmoid)
LIB_UNARY_HANDLER(Sign)

// LogLib/T dst src form=whole | tmp | tmp_count: Log's library forms (the count and level-0 forms run as UNARY_HANDLER).
template <typename T>
struct H_LogLib {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        std::string form = c.s("form");
        if (form == "whole") AscendC::Log(dst, src);
        else if (form == "tmp") AscendC::Log(dst, src, j.t<uint8_t>(c, "scratch"));
        else AscendC::Log(dst, src, j.t<uint8_t>(c, "scratch"), uint32_t(c.u("count")));
    }
};
static RegTypes<H_LogLib, half, float> reg_loglib("LogLib");

// ScalarCast/U (U: the result type) src=<f32 tensor> dst=<U tensor> round=<RoundMode> n: each of the first n
// floats through ScalarCast<float, U, round> (alias=1: the scalar Cast name), read and written raw (a
// scalar conversion touches no memory, so the trace has no record).
template <typename U, AscendC::RoundMode M>
inline U scalar_cast_one(float v, bool alias) {
    return alias ? AscendC::Cast<float, U, M>(v) : AscendC::ScalarCast<float, U, M>(v);
}
template <typename U>
struct H_ScalarCast {
    static void run(const Job& j, const Call& c) {
        const float* s = j.t<float>(c, "src").mpnpu_addr();
        U* d = j.t<U>(c, "dst").mpnpu_addr();
        bool alias = c.i("alias", 0) != 0;
        auto mode = AscendC::RoundMode(c.i("round"));
        for (uint64_t i = 0; i < c.u("n"); ++i) {
            if constexpr (std::is_same_v<U, half>) {
                d[i] = scalar_cast_one<half, AscendC::RoundMode::CAST_ODD>(s[i], alias);
            } else {
                using R = AscendC::RoundMode;
                if (mode == R::CAST_ROUND) d[i] = scalar_cast_one<int32_t, R::CAST_ROUND>(s[i], alias);
                else if (mode == R::CAST_CEIL) d[i] = scalar_cast_one<int32_t, R::CAST_CEIL>(s[i], alias);
                else if (mode == R::CAST_FLOOR) d[i] = scalar_cast_one<int32_t, R::CAST_FLOOR>(s[i], alias);
                else d[i] = scalar_cast_one<int32_t, R::CAST_RINT>(s[i], alias);
            }
        }
    }
};
static RegTypes<H_ScalarCast, half, int32_t> reg_scalarcast("ScalarCast");
