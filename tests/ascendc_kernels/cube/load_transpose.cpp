// C = A x B on one cube core with B [k, n] as it is in GM (row-major, not transposed), reaching L0B's
// Zn through LoadDataWithTranspose. float: L1 holds B as ZZ (each 16 rows an NZ of their own, so the
// two 16 x 8 fractals of a 16 x 16 square are adjacent), each square is transposed into two Zn
// fractals N1 apart (dstFracGap). half: L1 holds B as NZ, each 16 x 16 fractal is transposed (one
// per square). A goes NZ -> Zz with LoadData. types: 0 float, 1 half; C is float [m, n].
#include "kernel_operator.h"
using namespace AscendC;

static inline uint32_t align16(uint32_t x) { return (x + 15) / 16 * 16; }

template <typename T>
static void run(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t m, uint32_t n, uint32_t k) {
    constexpr uint32_t C0 = 32 / sizeof(T);
    GlobalTensor<T> aGm, bGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer((__gm__ T*)a, m * k);
    bGm.SetGlobalBuffer((__gm__ T*)b, k * n);
    cGm.SetGlobalBuffer((__gm__ float*)c, m * n);
    const uint32_t mp = align16(m), np = align16(n), kp = align16(k), M1 = mp / 16, N1 = np / 16;
    const uint32_t K1 = (k + C0 - 1) / C0;
    LocalMemAllocator<Hardware::L1> l1;
    LocalMemAllocator<Hardware::L0A> l0a;
    LocalMemAllocator<Hardware::L0B> l0b;
    LocalMemAllocator<Hardware::L0C> l0c;
    LocalTensor<T> a1 = l1.Alloc<TPosition::A1, T>(mp * kp);
    LocalTensor<T> b1 = l1.Alloc<TPosition::B1, T>(kp * np);
    LocalTensor<T> a2 = l0a.Alloc<TPosition::A2, T>(mp * kp);
    LocalTensor<T> b2 = l0b.Alloc<TPosition::B2, T>(kp * np);
    LocalTensor<float> c1 = l0c.Alloc<TPosition::CO1, float>(mp * np);

    DataCopy(a1, aGm, Nd2NzParams(1, m, k, 0, k, mp, 1, 0));
    if constexpr (sizeof(T) == 4) {
        for (uint32_t r = 0; r < k; r += 16)
            DataCopy(b1[r * np], bGm[r * n], Nd2NzParams(1, k - r < 16 ? k - r : 16, n, 0, n, 16, 1, 0));
    } else {
        DataCopy(b1, bGm, Nd2NzParams(1, k, n, 0, n, kp, 1, 0));
    }
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t i = 0; i < M1; ++i)
        LoadData(a2[i * K1 * 16 * C0], a1[i * 16 * C0], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
    if constexpr (sizeof(T) == 4) {
        for (uint32_t i = 0; i < kp / 16; ++i)
            LoadDataWithTranspose(b2[2 * i * N1 * 128], b1[i * 16 * np], LoadData2dTransposeParams(0, N1, 1, 0, N1 - 1));
    } else {
        for (uint32_t i = 0; i < kp / 16; ++i)
            LoadDataWithTranspose(b2[i * N1 * 256], b1[i * 256], LoadData2dTransposeParams(0, N1, kp / 16, 0, 0));
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(c1, a2, b2, MmadParams(m, n, k));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cGm, c1, FixpipeParamsV220(n, m, mp, n, false));
}

extern "C" __global__ __aicore__ void load_transpose(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t m, uint32_t n,
                                                     uint32_t k, uint32_t types) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    if (types == 0) run<float>(a, b, c, m, n, k);
    else run<half>(a, b, c, m, n, k);
}
