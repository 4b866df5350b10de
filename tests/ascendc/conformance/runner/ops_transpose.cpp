// Handlers: TransDataTo5HD (its four forms) and Transpose (16 x 16, and the enhanced form).
#include <sstream>

#include "runner.h"

using namespace vecconf;

namespace {

// "a,b,c" -> 16 numbers (byte offsets into a tensor).
std::vector<uint64_t> offsets(const Call& c, const std::string& key) {
    std::vector<uint64_t> out;
    std::stringstream ss(c.s(key));
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(std::strtoull(item.c_str(), nullptr, 0));
    if (out.size() != 16) throw std::runtime_error(key + ": 16 offsets expected");
    return out;
}

}  // namespace

// form=tensor | addr | impl | addrtensor; dst/src tensors with doff/soff (16 byte offsets each);
// dh, sh, repeat, drep, srep; addrtensor: dlist/slist (uint64 tensors the addresses are put in for
// the call, their bytes restored after it).
template <typename T>
struct H_TransDataTo5HD {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        auto doff = offsets(c, "doff"), soff = offsets(c, "soff");
        AscendC::TransDataTo5HDParams p(c.i("dh", 0) != 0, c.i("sh", 0) != 0, uint8_t(c.u("repeat", 1)),
                                        uint16_t(c.u("drep", 0)), uint16_t(c.u("srep", 0)));
        std::string form = c.s("form");
        if (form == "tensor") {
            AscendC::LocalTensor<T> dl[16], sl[16];
            for (int k = 0; k < 16; ++k) {
                dl[k] = dst[uint32_t(doff[k] / sizeof(T))];
                sl[k] = src[uint32_t(soff[k] / sizeof(T))];
            }
            AscendC::TransDataTo5HD<T>(dl, sl, p);
        } else if (form == "impl") {
            T* dl[16];
            T* sl[16];
            for (int k = 0; k < 16; ++k) {
                dl[k] = reinterpret_cast<T*>(uintptr_t(dst.GetPhyAddr() + doff[k]));
                sl[k] = reinterpret_cast<T*>(uintptr_t(src.GetPhyAddr() + soff[k]));
            }
            AscendC::TransDataTo5HDImpl(dl, sl, p);
        } else {
            uint64_t da[16], sa[16];
            for (int k = 0; k < 16; ++k) {
                da[k] = dst.GetPhyAddr() + doff[k];
                sa[k] = src.GetPhyAddr() + soff[k];
            }
            if (form == "addr") {
                AscendC::TransDataTo5HD<T>(da, sa, p);
            } else {
                auto dlist = j.t<uint64_t>(c, "dlist");
                auto slist = j.t<uint64_t>(c, "slist");
                uint8_t keep_d[128], keep_s[128];
                std::memcpy(keep_d, dlist.mpnpu_addr(), 128);
                std::memcpy(keep_s, slist.mpnpu_addr(), 128);
                std::memcpy(dlist.mpnpu_addr(), da, 128);
                std::memcpy(slist.mpnpu_addr(), sa, 128);
                struct Restore {
                    uint64_t* d;
                    uint64_t* s;
                    const uint8_t* kd;
                    const uint8_t* ks;
                    ~Restore() {
                        std::memcpy(d, kd, 128);
                        std::memcpy(s, ks, 128);
                    }
                } restore{dlist.mpnpu_addr(), slist.mpnpu_addr(), keep_d, keep_s};
                AscendC::TransDataTo5HD<T>(dlist, slist, p);
            }
        }
    }
};
static RegTypes<H_TransDataTo5HD, VECCONF_NUMERIC> reg_t5hd("TransDataTo5HD");

// form=b16 (dst, src) | ext (dst, src, tmp, n, c, h, w, type)
template <typename T>
struct H_Transpose {
    static void run(const Job& j, const Call& c) {
        auto dst = j.t<T>(c, "dst");
        auto src = j.t<T>(c, "src");
        if (c.s("form") == "b16") {
            AscendC::Transpose(dst, src);
            return;
        }
        AscendC::TransposeParamsExt p(uint16_t(c.u("n")), uint16_t(c.u("c")), uint16_t(c.u("h")), uint16_t(c.u("w")),
                                      AscendC::TransposeType(c.u("type")));
        AscendC::Transpose(dst, src, j.t<uint8_t>(c, "tmp"), p);
    }
};
static RegTypes<H_Transpose, VECCONF_NUMERIC> reg_transpose("Transpose");
