// Host program launching through lambdas, as unit tests do to pick a kernel instance from their
// parameters: one without captures, then one capturing a struct by copy, on the core processes the
// first launch forked.
#include <cstdio>

#include "tikicpulib.h"

template <int32_t kStep>
__global__ __aicore__ void fill(GM_ADDR out, int32_t base) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    __gm__ int32_t* o = reinterpret_cast<__gm__ int32_t*>(out);
    o[AscendC::GetBlockIdx()] = base + kStep * int32_t(AscendC::GetBlockIdx());
}

struct Case {
    int32_t step;
    int32_t extra;
};

static void show(const int32_t* out) { std::printf("%d %d\n", out[0], out[1]); }

int main() {
    int32_t* out = static_cast<int32_t*>(AscendC::GmAlloc(32));
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    auto plain = [](GM_ADDR o, int32_t base) { fill<1>(o, base); };
    ICPU_RUN_KF(plain, 2, reinterpret_cast<uint8_t*>(out), 10);
    show(out);
    Case c{3, 100};
    auto by_copy = [c](GM_ADDR o, int32_t base) {
        if (c.step == 3) fill<3>(o, base + c.extra);
        else fill<1>(o, base);
    };
    c.step = 1;  // the lambda holds its own copy
    ICPU_RUN_KF(by_copy, 2, reinterpret_cast<uint8_t*>(out), 20);
    show(out);
    // (a capture by reference would read the core processes' copy of the variable, as it was when
    // they were forked: at the first launch here)
    AscendC::GmFree(out);
    return 0;
}
