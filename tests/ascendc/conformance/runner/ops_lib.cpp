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
