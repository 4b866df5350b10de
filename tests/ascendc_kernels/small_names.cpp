// A kernel of our own for small names kernels take from headers by other names: the include paths
// kernel_utils.h, kernel_type.h, kernel_operator_intf.h, kernel_common.h, securec.h and
// impl/dav_c220/kernel_operator_reg_others_impl.h, the ge::DataType values, ONE_BLK_FLOAT_NUM,
// memcpy_s / memset_s, the scalar Cast between float and bfloat16_t, Trap, assert, and DataCopyPad
// with its copy parameters as braced lists of four (DataCopyParams) and five (DataCopyExtParams),
// DataCopyPadGm2UBImpl on raw addresses, WaitPreTaskEnd / SetNextTaskStart and Conditional.
#include "kernel_tiling/kernel_tiling.h"
#define DT_BF16 bfloat16_t  // (as unit tests' tiling headers define it)
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "kernel_type.h"
#include "kernel_operator_intf.h"
#include "kernel_common.h"
#include "impl/dav_c220/kernel_operator_reg_others_impl.h"
#include "securec.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void small_names(GM_ADDR out, GM_ADDR ws, int32_t mode) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<float> og, wg;
    og.SetGlobalBuffer((__gm__ float*)out, 32);
    wg.SetGlobalBuffer((__gm__ float*)ws, 32);
    if (mode == 1) Trap();
    WaitPreTaskEnd();  // once per core: nothing to order in a launch of its own
    if (mode == 2) WaitPreTaskEnd<true>();  // twice: an error at this line
    assert(mode == 0);
    static_assert(std::is_same_v<Conditional<true, float, half>::type, float> &&
                  std::is_same_v<Conditional<false, float, half>::type, half>, "Conditional");
    uint32_t src[4] = {1, 2, 3, 4};
    uint32_t dst[4] = {9, 9, 9, 9};
    int ok = memcpy_s(dst, sizeof(dst), src, 3 * sizeof(uint32_t));              // 0, copies 3
    uint32_t big[2] = {7, 7};
    int over = memcpy_s(big, sizeof(big), src, sizeof(src));                     // ERANGE, zeroes big
    uint8_t bytes[4] = {1, 1, 1, 1};
    int set = memset_s(bytes, sizeof(bytes), 5, 8);                              // ERANGE, sets 4
    og.SetValue(0, float(DT_INT4));
    og.SetValue(1, float(ge::DT_FLOAT8_E4M3FN));
    og.SetValue(2, float(ONE_BLK_FLOAT_NUM));
    og.SetValue(3, float(ok) + float(dst[0] + dst[1] + dst[2] + dst[3]));  // 0 + 1 + 2 + 3 + 9
    og.SetValue(4, float(over == ERANGE) + float(big[0] + big[1]));        // 1 + 0
    og.SetValue(5, float(set == ERANGE) + float(bytes[0] + bytes[3]));     // 1 + 10
    bfloat16_t b = Cast(2.5f);
    og.SetValue(6, Cast(b));
    DT_BF16 viaMacro = Cast(-1.25f);
    og.SetValue(7, ToFloat(viaMacro));

    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    LocalTensor<float> t = buf.Get<float>(64);
    // four values: DataCopyParams (blockLen in bytes for DataCopyPad); 6 floats in, 6 out at out[8]
    DataCopyPad(t, wg, {1, static_cast<uint16_t>(6 * sizeof(float)), 0, 0}, {false, 0, 0, 0});
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopyPad(og[8], t, {1, static_cast<uint16_t>(6 * sizeof(float)), 0, 0});
    SetFlag<HardEvent::MTE3_MTE2>(0);
    WaitFlag<HardEvent::MTE3_MTE2>(0);
    // five values: DataCopyExtParams; 5 floats from ws[16] in, out at out[16]
    uint32_t len = 5 * sizeof(float);
    DataCopyPad(t, wg[16], {1, len, 0, 0, 0}, {false, 0, 0, 0.0f});
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopyPad(og[16], t, {static_cast<uint16_t>(1), len, 0u, 0u, 0u});
    // a named DataCopyExtParams of four values, with a braced padding list
    DataCopyExtParams ext{1, 3 * sizeof(float), 0, 0};
    SetFlag<HardEvent::MTE3_MTE2>(0);
    WaitFlag<HardEvent::MTE3_MTE2>(0);
    DataCopyPad(t, wg[24], ext, {false, 0, 0, 0});
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopyPad(og[24], t, ext);
    // raw addresses, one type's bytes as another's: ws[28..31] into UB as words, out at out[27]
    LocalTensor<uint32_t> words = t.ReinterpretCast<uint32_t>()[32];
    SetFlag<HardEvent::MTE3_MTE2>(0);
    WaitFlag<HardEvent::MTE3_MTE2>(0);
    DataCopyPadGm2UBImpl((__ubuf__ uint32_t*)words.GetPhyAddr(), (__gm__ uint32_t*)wg[28].GetPhyAddr(),
                         DataCopyExtParams{1, 4 * sizeof(uint32_t), 0, 0, 0},
                         DataCopyPadExtParams<uint32_t>{false, 0, 0, 0});
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    GlobalTensor<uint32_t> ow;
    ow.SetGlobalBuffer((__gm__ uint32_t*)out, 32);
    DataCopyPad(ow[27], words, DataCopyExtParams{1, 4 * sizeof(uint32_t), 0, 0, 0});
    SetNextTaskStart();
}
