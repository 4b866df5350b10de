// Who this core is: block and sub-block indices, the launch's width and the kernel type, as the
// chip reports them for each kernel type (vector-only, cube-only, mix 1:1, mix 1:2).
#ifndef MPNPU_IDENTITY_H
#define MPNPU_IDENTITY_H

#include <cstdint>

#include "native/rt.h"

// The kernel types of KERNEL_TASK_TYPE_DEFAULT (same order as MPNPU_KT_*).
enum KernelMetaType {
    KERNEL_TYPE_AIV_ONLY = MPNPU_KT_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY = MPNPU_KT_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0 = MPNPU_KT_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0 = MPNPU_KT_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1 = MPNPU_KT_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2 = MPNPU_KT_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
    KERNEL_TYPE_MAX
};

namespace mpnpu {

inline const char* kernel_type_name(int kt) {
    static const char* names[] = {"KERNEL_TYPE_AIV_ONLY", "KERNEL_TYPE_AIC_ONLY", "KERNEL_TYPE_MIX_AIV_1_0",
                                  "KERNEL_TYPE_MIX_AIC_1_0", "KERNEL_TYPE_MIX_AIC_1_1", "KERNEL_TYPE_MIX_AIC_1_2"};
    return kt >= 0 && kt < 6 ? names[kt] : "an unsupported kernel type";
}

// Which cores a kernel type starts: the cube-only and vector-only types (with or without the
// scheduler) launch the same cores.
inline int launched_cores(int kt) {
    switch (kt) {
        case MPNPU_KT_MIX_AIV_1_0: return MPNPU_KT_AIV_ONLY;
        case MPNPU_KT_MIX_AIC_1_0: return MPNPU_KT_AIC_ONLY;
        default: return kt;
    }
}

// KERNEL_TASK_TYPE_DEFAULT inside a kernel: the launch must have started the cores it says
// (mpnpu reads the type from the source before the launch; this checks that it read it right).
// A CPU-debug program that chose the cores itself (SetKernelMode) runs those, as the CPU-debug
// library does: a unit test may run a mix kernel's cube part alone (AIC_MODE), and passes upstream.
// The types of the inference series (KERNEL_TYPE_AICORE .. KERNEL_TYPE_MIX_VECTOR_CORE) do not exist
// on this chip class: a kernel built for several families declares one type per family, and the
// declaration of another family's type has no effect here.
inline void declare_kernel_type(int kt, const Site& site) {
    int launched = core().launch.kernel_type;
    if (kt >= KERNEL_TYPE_AICORE && kt <= KERNEL_TYPE_MIX_VECTOR_CORE) return;
    if (kt < 0 || kt > MPNPU_KT_MIX_AIC_1_2)
        unsupported(site, "KERNEL_TASK_TYPE_DEFAULT(%d): mpnpu runs the separated cube/vector kernel types only", kt);
    if (core().launch.host_mode) return;
    if (launched_cores(kt) != launched_cores(launched))
        api_error(site, "the kernel declares %s but was launched as %s (give the operator kernel_type=...)",
                  kernel_type_name(kt), kernel_type_name(launched));
}

inline uint64_t tiling_key() { return core().launch.tiling_key; }

}  // namespace mpnpu

namespace AscendC {

inline int64_t GetBlockIdx() { return mpnpu::core().launch.block_idx; }
inline int64_t GetBlockNum() { return mpnpu::core().launch.block_num; }
inline int64_t GetSubBlockIdx() { return mpnpu::core().launch.subblock_idx; }
inline int64_t GetSubBlockNum() { return mpnpu::core().launch.subblock_num; }
inline int64_t GetTaskRation() { return mpnpu::core().launch.task_ration; }
inline int64_t GetTaskRatio() { return mpnpu::core().launch.task_ration; }
constexpr inline int64_t GetDataBlockSizeInBytes() { return 32; }
constexpr inline int64_t GetUBSizeInBytes() { return int64_t(mpnpu::UB_BYTES); }
constexpr inline int64_t GetRuntimeUBSize() { return int64_t(mpnpu::UB_BYTES); }
constexpr inline int64_t GetVecLen() { return 256; }
inline int64_t GetSystemCycle() { return int64_t(mpnpu::now_ns()); }
inline void InitSocState() {}

}  // namespace AscendC

// The kernel-side system variables block_idx and block_num (what GetBlockIdx() and GetBlockNum()
// return), set at the start of each launch on this core (mpnpu::begin_launch).
inline int64_t block_idx = 0;
inline int64_t block_num = 0;

using AscendC::GetBlockIdx;
using AscendC::GetBlockNum;
using AscendC::GetTaskRation;

#endif  // MPNPU_IDENTITY_H
