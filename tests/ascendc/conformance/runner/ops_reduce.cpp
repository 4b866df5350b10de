// Handlers: the reductions, new and old names.
#include "runner.h"

using namespace vecconf;

// ReduceRepeat / ReduceDataBlock: rtype=0 SUM, 1 MAX, 2 MIN; form=bits | len; order=ReduceOrder.
template <typename T>
struct H_ReduceRepeat {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        bool bits = c.s("form") == "bits";
        int32_t len = int32_t(c.i("len", 0));
        int32_t rep = int32_t(c.i("repeat")), drep = int32_t(c.i("drep")), sblk = int32_t(c.i("sblk", 1)),
                srep = int32_t(c.i("srep", 8));
        auto order = AscendC::ReduceOrder(c.i("order", 0));
        int rt = int(c.i("rtype"));
        bool set = c.i("setmask", 1) != 0;
#define VECCONF_RR(TYPE)                                                                                          \
    if (set && bits) AscendC::ReduceRepeat<TYPE, T, T, true>(dst, src, m, rep, drep, sblk, srep, order);          \
    else if (bits) AscendC::ReduceRepeat<TYPE, T, T, false>(dst, src, m, rep, drep, sblk, srep, order);           \
    else if (set) AscendC::ReduceRepeat<TYPE, T, T, true>(dst, src, len, rep, drep, sblk, srep, order);           \
    else AscendC::ReduceRepeat<TYPE, T, T, false>(dst, src, len, rep, drep, sblk, srep, order);
        if (rt == 0) { VECCONF_RR(AscendC::ReduceType::SUM) }
        else if (rt == 1) { VECCONF_RR(AscendC::ReduceType::MAX) }
        else { VECCONF_RR(AscendC::ReduceType::MIN) }
#undef VECCONF_RR
    }
};
static RegTypes<H_ReduceRepeat, half, float, int32_t> reg_rr("ReduceRepeat");

template <typename T>
struct H_WholeReduce {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        bool bits = c.s("form") == "bits";
        int32_t len = int32_t(c.i("len", 0));
        int32_t rep = int32_t(c.i("repeat")), drep = int32_t(c.i("drep")), sblk = int32_t(c.i("sblk", 1)),
                srep = int32_t(c.i("srep", 8));
        auto order = AscendC::ReduceOrder(c.i("order", 0));
        int rt = int(c.i("rtype"));
        if (c.i("setmask", 1) == 0) {
            if (rt == 0) AscendC::WholeReduceSum<T, false>(dst, src, len, rep, drep, sblk, srep);
            else if (rt == 1) AscendC::WholeReduceMax<T, false>(dst, src, len, rep, drep, sblk, srep, order);
            else AscendC::WholeReduceMin<T, false>(dst, src, len, rep, drep, sblk, srep, order);
        } else if (rt == 0) {
            if (bits) AscendC::WholeReduceSum(dst, src, m, rep, drep, sblk, srep);
            else AscendC::WholeReduceSum(dst, src, len, rep, drep, sblk, srep);
        } else if (rt == 1) {
            if (bits) AscendC::WholeReduceMax(dst, src, m, rep, drep, sblk, srep, order);
            else AscendC::WholeReduceMax(dst, src, len, rep, drep, sblk, srep, order);
        } else {
            if (bits) AscendC::WholeReduceMin(dst, src, m, rep, drep, sblk, srep, order);
            else AscendC::WholeReduceMin(dst, src, len, rep, drep, sblk, srep, order);
        }
    }
};
static RegTypes<H_WholeReduce, half, float> reg_wr("WholeReduce");

template <typename T>
struct H_ReduceDataBlock {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        bool bits = c.s("form") == "bits";
        int32_t len = int32_t(c.i("len", 0));
        int32_t rep = int32_t(c.i("repeat")), drep = int32_t(c.i("drep")), sblk = int32_t(c.i("sblk", 1)),
                srep = int32_t(c.i("srep", 8));
        int rt = int(c.i("rtype"));
        bool old = c.i("old", 0) != 0;
        bool set = c.i("setmask", 1) != 0;
#define VECCONF_RB(TYPE, OLD)                                                                                     \
    if (old && set) {                                                                                             \
        if (bits) AscendC::OLD<T, true>(dst, src, rep, m, drep, sblk, srep);                                      \
        else AscendC::OLD<T, true>(dst, src, rep, len, drep, sblk, srep);                                         \
    } else if (old) {                                                                                             \
        if (bits) AscendC::OLD<T, false>(dst, src, rep, m, drep, sblk, srep);                                     \
        else AscendC::OLD<T, false>(dst, src, rep, len, drep, sblk, srep);                                        \
    } else if (set) {                                                                                             \
        if (bits) AscendC::ReduceDataBlock<TYPE, T, T, true>(dst, src, m, rep, drep, sblk, srep);                 \
        else AscendC::ReduceDataBlock<TYPE, T, T, true>(dst, src, len, rep, drep, sblk, srep);                    \
    } else {                                                                                                      \
        if (bits) AscendC::ReduceDataBlock<TYPE, T, T, false>(dst, src, m, rep, drep, sblk, srep);                \
        else AscendC::ReduceDataBlock<TYPE, T, T, false>(dst, src, len, rep, drep, sblk, srep);                   \
    }
        if (rt == 0) { VECCONF_RB(AscendC::ReduceType::SUM, BlockReduceSum) }
        else if (rt == 1) { VECCONF_RB(AscendC::ReduceType::MAX, BlockReduceMax) }
        else { VECCONF_RB(AscendC::ReduceType::MIN, BlockReduceMin) }
#undef VECCONF_RB
    }
};
static RegTypes<H_ReduceDataBlock, half, float> reg_rdb("ReduceDataBlock");

// ReducePairElem<SUM> (old=1: PairReduceSum, repeatTime before the mask); rtype=1 asks for MAX (an error).
template <typename T>
struct H_ReducePairElem {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        bool bits = c.s("form") == "bits";
        int32_t len = int32_t(c.i("len", 0));
        int32_t rep = int32_t(c.i("repeat")), drep = int32_t(c.i("drep")), sblk = int32_t(c.i("sblk", 1)),
                srep = int32_t(c.i("srep", 8));
        bool old = c.i("old", 0) != 0;
        bool set = c.i("setmask", 1) != 0;
        if (c.i("rtype", 0) == 1) {
            AscendC::ReducePairElem<AscendC::ReduceType::MAX, T, T, true>(dst, src, len, rep, drep, sblk, srep);
        } else if (old && set) {
            if (bits) AscendC::PairReduceSum<T, true>(dst, src, rep, m, drep, sblk, srep);
            else AscendC::PairReduceSum<T, true>(dst, src, rep, len, drep, sblk, srep);
        } else if (old) {
            if (bits) AscendC::PairReduceSum<T, false>(dst, src, rep, m, drep, sblk, srep);
            else AscendC::PairReduceSum<T, false>(dst, src, rep, len, drep, sblk, srep);
        } else if (set) {
            if (bits) AscendC::ReducePairElem<AscendC::ReduceType::SUM, T, T, true>(dst, src, m, rep, drep, sblk, srep);
            else AscendC::ReducePairElem<AscendC::ReduceType::SUM, T>(dst, src, len, rep, drep, sblk, srep);
        } else {
            if (bits) AscendC::ReducePairElem<AscendC::ReduceType::SUM, T, T, false>(dst, src, m, rep, drep, sblk, srep);
            else AscendC::ReducePairElem<AscendC::ReduceType::SUM, T, T, false>(dst, src, len, rep, drep, sblk, srep);
        }
    }
};
static RegTypes<H_ReducePairElem, half, float> reg_rpe("ReducePairElem");

// ReduceSum / ReduceMax / ReduceMin: rtype as above; form=count | bits | len.
template <typename T>
struct H_Reduce {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        auto tmp = j.t<T>(c, "tmp");
        uint64_t m[2] = {c.u("mask0", 0), c.u("mask1", 0)};
        std::string form = c.s("form");
        int rt = int(c.i("rtype"));
        bool idx = c.i("index", 0) != 0;
        int32_t rep = int32_t(c.i("repeat", 0)), srep = int32_t(c.i("srep", 8)), len = int32_t(c.i("len", 0));
        int32_t count = int32_t(c.i("count", 0));
        if (rt == 0) {
            if (form == "count") {
                if (c.i("setmask", 1)) AscendC::ReduceSum(dst, src, tmp, count);
                else AscendC::ReduceSum<T, false>(dst, src, tmp, count);
            } else if (form == "bits") {
                AscendC::ReduceSum(dst, src, tmp, m, rep, srep);
            } else {
                AscendC::ReduceSum(dst, src, tmp, len, rep, srep);
            }
        } else if (rt == 1) {
            if (form == "count") AscendC::ReduceMax(dst, src, tmp, count, idx);
            else if (form == "bits") AscendC::ReduceMax(dst, src, tmp, m, rep, srep, idx);
            else AscendC::ReduceMax(dst, src, tmp, len, rep, srep, idx);
        } else {
            if (form == "count") AscendC::ReduceMin(dst, src, tmp, count, idx);
            else if (form == "bits") AscendC::ReduceMin(dst, src, tmp, m, rep, srep, idx);
            else AscendC::ReduceMin(dst, src, tmp, len, rep, srep, idx);
        }
    }
};
static RegTypes<H_Reduce, half, float, int32_t> reg_reduce("Reduce");
