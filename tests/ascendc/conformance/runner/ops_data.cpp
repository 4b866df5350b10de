// Handlers: masks, Cast, Duplicate, CreateVecIndex, Brcb, Gather, Gatherb.
#include "runner.h"

using namespace vecconf;

// SetVectorMask/T form=bits (hi, lo) | len; mode=0 normal, 1 counter. The other mask calls take T too.
template <typename T>
struct H_SetVectorMask {
    static void run(const Job&, const Call& c) {
        bool counter = c.i("mode", 0) != 0;
        if (c.s("form") == "bits") {
            if (counter) AscendC::SetVectorMask<T, AscendC::MaskMode::COUNTER>(c.u("hi"), c.u("lo"));
            else AscendC::SetVectorMask<T>(c.u("hi"), c.u("lo"));
        } else {
            if (counter) AscendC::SetVectorMask<T, AscendC::MaskMode::COUNTER>(int32_t(c.i("len")));
            else AscendC::SetVectorMask<T, AscendC::MaskMode::NORMAL>(int32_t(c.i("len")));
        }
    }
};
static RegTypes<H_SetVectorMask, half, float, int16_t, int32_t, uint8_t> reg_svm("SetVectorMask");

template <typename T>
struct H_MaskOps {
    static void run(const Job&, const Call& c) {
        std::string op = c.s("op");
        if (op == "count") AscendC::SetMaskCount();
        else if (op == "norm") AscendC::SetMaskNorm();
        else AscendC::ResetMask();
    }
};
static RegTypes<H_MaskOps, half> reg_maskops("MaskOps");

template <typename T, typename U>
struct H_Cast {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<U>(c, "src");
        auto mode = AscendC::RoundMode(c.i("round"));
        std::string form = c.s("form");
        bool set = c.i("setmask", 1) != 0;
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        if (form == "count") AscendC::Cast(dst, src, mode, uint32_t(c.i("count")));
        else if (form == "bits" && set) AscendC::Cast<T, U, true>(dst, src, mode, m, c.i("repeat"), unary_params(c));
        else if (form == "bits") AscendC::Cast<T, U, false>(dst, src, mode, m, c.i("repeat"), unary_params(c));
        else if (set) AscendC::Cast<T, U, true>(dst, src, mode, c.u("len"), c.i("repeat"), unary_params(c));
        else AscendC::Cast<T, U, false>(dst, src, mode, c.u("len"), c.i("repeat"), unary_params(c));
    }
};
// every documented pair (and a few that are not, for the error)
static RegPairs<H_Cast, half, int8_t, uint8_t, int16_t, int32_t, float, bfloat16_t> reg_cast_h("Cast");
static RegPairs<H_Cast, float, int16_t, half, bfloat16_t, int32_t, float, int64_t, uint8_t> reg_cast_f("Cast");
static RegPairs<H_Cast, int8_t, half, float> reg_cast_i8("Cast");
static RegPairs<H_Cast, uint8_t, half> reg_cast_u8("Cast");
static RegPairs<H_Cast, int16_t, half, int32_t, float> reg_cast_i16("Cast");
static RegPairs<H_Cast, int32_t, half, bfloat16_t, float, int64_t> reg_cast_i32("Cast");
static RegPairs<H_Cast, bfloat16_t, float, half> reg_cast_bf("Cast");
static RegPairs<H_Cast, int64_t, int32_t, float> reg_cast_i64("Cast");

template <typename T>
struct H_SetDeqScale {
    static void run(const Job&, const Call& c) { AscendC::SetDeqScale(scalar_of<half>(c, "scale")); }
};
static RegTypes<H_SetDeqScale, half> reg_deq("SetDeqScale");

template <typename T>
struct H_Duplicate {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        std::string form = c.s("form");
        bool set = c.i("setmask", 1) != 0;
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        if (form == "tensor") {
            AscendC::Duplicate(dst, j.t<T>(c, "src"), int32_t(c.i("count")));
            return;
        }
        T s = scalar_of<T>(c, "scalar");
        uint16_t blk = uint16_t(c.u("dblk", 1));
        uint8_t rep = uint8_t(c.u("drep", 8));
        if (form == "count") AscendC::Duplicate(dst, s, int32_t(c.i("count")));
        else if (form == "bits" && set) AscendC::Duplicate<T, true>(dst, s, m, c.i("repeat"), blk, rep);
        else if (form == "bits") AscendC::Duplicate<T, false>(dst, s, m, c.i("repeat"), blk, rep);
        else if (set) AscendC::Duplicate<T, true>(dst, s, c.u("len"), c.i("repeat"), blk, rep);
        else AscendC::Duplicate<T, false>(dst, s, c.u("len"), c.i("repeat"), blk, rep);
    }
};
static RegTypes<H_Duplicate, VECCONF_NUMERIC> reg_dup("Duplicate");

template <typename T>
struct H_CreateVecIndex {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        T first = scalar_of<T>(c, "scalar");
        std::string form = c.s("form");
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        uint16_t blk = uint16_t(c.u("dblk", 1));
        uint8_t rep = uint8_t(c.u("drep", 8));
        if (form == "count") AscendC::CreateVecIndex(dst, first, uint32_t(c.i("count")));
        else if (form == "bits") AscendC::CreateVecIndex(dst, first, m, c.i("repeat"), blk, rep);
        else AscendC::CreateVecIndex(dst, first, c.u("len"), c.i("repeat"), blk, rep);
    }
};
static RegTypes<H_CreateVecIndex, VECCONF_NUMERIC> reg_cvi("CreateVecIndex");

template <typename T>
struct H_Brcb {
    static void run(const Job& j, const Call& c) {
        AscendC::Brcb(j.t<T>(c, "dst"), j.t<T>(c, "src"), c.i("repeat"),
                      AscendC::BrcbRepeatParams(uint16_t(c.u("dblk", 1)), uint16_t(c.u("drep", 8))));
    }
};
static RegTypes<H_Brcb, VECCONF_NUMERIC> reg_brcb("Brcb");

template <typename T>
struct H_Gather {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        auto off = j.t<uint32_t>(c, "offset");
        uint32_t base = uint32_t(c.u("base", 0));
        std::string form = c.s("form");
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        uint16_t rep = uint16_t(c.u("drep", 8));
        if (form == "count") AscendC::Gather(dst, src, off, base, uint32_t(c.i("count")));
        else if (form == "bits") AscendC::Gather(dst, src, off, base, m, c.i("repeat"), rep);
        else AscendC::Gather(dst, src, off, base, c.u("len"), c.i("repeat"), rep);
    }
};
static RegTypes<H_Gather, VECCONF_NUMERIC> reg_gather("Gather");

template <typename T>
struct H_Gatherb {
    static void run(const Job& j, const Call& c) {
        AscendC::Gatherb(j.t<T>(c, "dst"), j.t<T>(c, "src"), j.t<uint32_t>(c, "offset"), c.i("repeat"),
                         AscendC::GatherRepeatParams(uint16_t(c.u("dblk", 1)), uint16_t(c.u("drep", 8))));
    }
};
static RegTypes<H_Gatherb, uint16_t, uint32_t, half> reg_gatherb("Gatherb");
