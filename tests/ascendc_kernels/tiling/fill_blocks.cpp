// Our kernel for the tiling helpers: template arguments declared with ASCENDC_TPL_*, the tiling
// struct registered by REGISTER_TILING_DATA_CLASS and read with GET_TILING_DATA, IsSameType and the
// scalar Ceil. Each vector core fills its Ceil(total, blocks) elements of out with base + its block
// index (+ 1000 for mode 1).
#include "kernel_operator.h"
#include "ascendc/host_api/tiling/template_argument.h"
#ifndef GENERATED_TILING
#include "fill_tiling.h"
#endif

ASCENDC_TPL_ARGS_DECL(Fill, ASCENDC_TPL_UINT_DECL(mode, ASCENDC_TPL_2_BW, ASCENDC_TPL_UI_LIST, 0, 1),
                      ASCENDC_TPL_DTYPE_DECL(dt, C_DT_FLOAT, C_DT_INT32));
ASCENDC_TPL_SEL(ASCENDC_TPL_ARGS_SEL(ASCENDC_TPL_UINT_SEL(mode, ASCENDC_TPL_UI_LIST, 0, 1),
                                     ASCENDC_TPL_DTYPE_SEL(dt, C_DT_FLOAT)));

template <uint32_t mode>
__global__ __aicore__ void fill_blocks(GM_ADDR out, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    static_assert(AscendC::IsSameType<decltype(t.total), uint32_t>::value, "total is a uint32_t");
    static_assert(!AscendC::IsSameType<decltype(t.base), half>::value, "base is a float");
    static_assert(AscendC::Ceil(10u, 4) == 3 && AscendC::Ceil(8, 4u) == 2 && AscendC::Ceil(5, 0) == 0, "Ceil");
    const uint32_t per = AscendC::Ceil(t.get_total(), uint32_t(AscendC::GetBlockNum()));
    AscendC::GlobalTensor<float> og;
    og.SetGlobalBuffer((__gm__ float*)out + per * AscendC::GetBlockIdx(), per);
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> ub;
    AscendC::LocalTensor<float> buf = ub.Alloc<float>(per);
    AscendC::Duplicate(buf, t.base + float(AscendC::GetBlockIdx()) + (mode == 1 ? 1000.0f : 0.0f), per);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::DataCopy(og, buf, per);
}
