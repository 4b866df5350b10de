// Our kernel for the scalar atomics: every vector core adds 1 to counts[0] (AtomicAdd), raises
// fmax[0] to 1.5 * block (AtomicMax on a float), lowers counts[1] to -block (AtomicMin), tries to
// claim words[0] from 0 (AtomicCas) and swaps its block index into words[1] (AtomicExch); the old
// value each call returned goes to olds[4 * block + call].
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void scalar_atomics(GM_ADDR counts, GM_ADDR fmax, GM_ADDR words, GM_ADDR olds)
{
    const int64_t b = AscendC::GetBlockIdx();
    auto* c = reinterpret_cast<__gm__ int32_t*>(counts);
    auto* w = reinterpret_cast<__gm__ uint32_t*>(words);
    AscendC::GlobalTensor<int32_t> og;
    og.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(olds) + 4 * b, 4);
    og.SetValue(0, AscendC::AtomicAdd(c, int32_t(1)));
    float before = AscendC::AtomicMax(reinterpret_cast<__gm__ float*>(fmax), 1.5f * float(b));
    og.SetValue(1, int32_t(before * 2.0f));
    og.SetValue(2, int32_t(AscendC::AtomicCas(w, 0u, uint32_t(b + 1))));
    og.SetValue(3, int32_t(AscendC::AtomicExch(w + 1, uint32_t(b))));
    AscendC::AtomicMin(c + 1, int32_t(-b));
}
