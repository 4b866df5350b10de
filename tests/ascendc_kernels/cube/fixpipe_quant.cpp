// The fixpipe's conversions on the way out of L0C, on one cube core: C = A x B (A [m, k], B given as
// B^T [n, k]; half -> float in L0C, or int8_t -> int32_t), then one Fixpipe with quantPre = mode, the
// scalar word, ReLU if relu, to GM (ND) or to L1 (NZ, 32-byte fractals) and from there to GM as it is.
// to_l1 2: the older DataCopy L0C -> L1 with DataCopyCO12DstParams instead (a scalar mode's word from
// SetFixpipePreQuantFlag), Mmad and the copy with unit flags (UFMode3).
// The vector modes' words are copied GM -> L1 first, to the same L1 bytes the L1 destination starts at
// (the instruction reads its table before it writes).
// in: 0 half inputs, 1 int8_t inputs. out: 0 half, 1 int8_t, 2 uint8_t, 3 bfloat16_t.
#include "kernel_operator.h"
using namespace AscendC;

static inline uint32_t up(uint32_t a, uint32_t b) { return (a + b - 1) / b * b; }

template <typename T, typename L, typename O>
static void run(GM_ADDR a, GM_ADDR b, GM_ADDR words, GM_ADDR c, uint32_t m, uint32_t n, uint32_t k, uint32_t mode,
                uint64_t scalar, uint32_t relu, uint32_t to_l1) {
    constexpr uint32_t C0 = 32 / sizeof(T);
    constexpr uint32_t OC0 = 32 / sizeof(O);
    GlobalTensor<T> aGm, bGm;
    GlobalTensor<uint64_t> wGm;
    GlobalTensor<O> cGm;
    aGm.SetGlobalBuffer((__gm__ T*)a);
    bGm.SetGlobalBuffer((__gm__ T*)b);
    wGm.SetGlobalBuffer((__gm__ uint64_t*)words);
    cGm.SetGlobalBuffer((__gm__ O*)c);
    const uint32_t mp = up(m, 16), np = up(n, 16), kp = up(k, C0);
    const uint32_t M1 = mp / 16, N1 = np / 16, K1 = kp / C0;

    LocalMemAllocator<Hardware::L1> l1;
    LocalMemAllocator<Hardware::L0A> l0a;
    LocalMemAllocator<Hardware::L0B> l0b;
    LocalMemAllocator<Hardware::L0C> l0c;
    LocalTensor<O> out1 = l1.Alloc<TPosition::C1, O>(up(n, OC0) * mp);  // (at L1 byte 0)
    LocalTensor<T> a1 = l1.Alloc<TPosition::A1, T>(mp * kp);
    LocalTensor<T> b1 = l1.Alloc<TPosition::B1, T>(kp * np);
    LocalTensor<T> a2 = l0a.Alloc<TPosition::A2, T>(mp * kp);
    LocalTensor<T> b2 = l0b.Alloc<TPosition::B2, T>(kp * np);
    LocalTensor<L> c1 = l0c.Alloc<TPosition::CO1, L>(mp * np);
    LocalTensor<uint64_t> table = out1.template ReinterpretCast<uint64_t>();

    DataCopy(a1, aGm, Nd2NzParams(1, m, k, 0, k, mp, 1, 0));  // NZ of A [m, k]
    DataCopy(b1, bGm, Nd2NzParams(1, n, k, 0, k, np, 1, 0));  // NZ of B^T [n, k]: Zn of B
    DataCopy(table, wGm, DataCopyParams(1, uint16_t(up(n * 8, 32) / 32), 0, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t i = 0; i < M1; ++i)
        LoadData(a2[i * K1 * 16 * C0], a1[i * 16 * C0], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
    LoadData(b2, b1, LoadData2DParams(0, K1 * N1, 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mm(static_cast<uint16_t>(m), static_cast<uint16_t>(n), static_cast<uint16_t>(k));
    if (to_l1 == 2) mm.unitFlag = UFMode3;
    Mmad(c1, a2, b2, mm);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    SetFlag<HardEvent::MTE2_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_FIX>(EVENT_ID0);

    FixpipeParamsV220 fp(uint16_t(n), uint16_t(m), uint16_t(mp), n, relu != 0);
    fp.quantPre = QuantMode_t(mode);
    fp.deqScalar = scalar;
    if (to_l1 == 2) {
        SetFixpipePreQuantFlag(scalar);
        DataCopyCO12DstParams p(uint16_t(n), uint16_t(m), mp * OC0 * sizeof(O) / 32, uint16_t(mp), QuantMode_t(mode),
                                uint8_t(relu), false, false);
        p.unitFlag = UFMode3;
        DataCopy(out1, c1, p);  // the older copy to L1
        SetFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
        DataCopy(cGm, out1, DataCopyParams(1, uint16_t(up(n, OC0) * mp * sizeof(O) / 32), 0, 0));
    } else if (to_l1) {
        fp.dstStride = mp * OC0 * sizeof(O) / 32;
        Fixpipe<O, L, CFG_NZ>(out1, c1, table, fp);  // the Fixpipe to L1
        SetFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
        DataCopy(cGm, out1, DataCopyParams(1, uint16_t(up(n, OC0) * mp * sizeof(O) / 32), 0, 0));
    } else {
        Fixpipe(cGm, c1, table, fp);  // the Fixpipe to GM
    }
    PipeBarrier<PIPE_ALL>();
}

extern "C" __global__ __aicore__ void fixpipe_quant(GM_ADDR a, GM_ADDR b, GM_ADDR words, GM_ADDR c, uint32_t m,
                                                    uint32_t n, uint32_t k, uint32_t in, uint32_t out, uint32_t mode,
                                                    uint64_t scalar, uint32_t relu, uint32_t to_l1) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    if (in == 0) {
        if (out == 0) run<half, float, half>(a, b, words, c, m, n, k, mode, scalar, relu, to_l1);
        else if (out == 1) run<half, float, int8_t>(a, b, words, c, m, n, k, mode, scalar, relu, to_l1);
        else if (out == 2) run<half, float, uint8_t>(a, b, words, c, m, n, k, mode, scalar, relu, to_l1);
        else run<half, float, bfloat16_t>(a, b, words, c, m, n, k, mode, scalar, relu, to_l1);
    } else {
        if (out == 0) run<int8_t, int32_t, half>(a, b, words, c, m, n, k, mode, scalar, relu, to_l1);
        else if (out == 1) run<int8_t, int32_t, int8_t>(a, b, words, c, m, n, k, mode, scalar, relu, to_l1);
        else run<int8_t, int32_t, uint8_t>(a, b, words, c, m, n, k, mode, scalar, relu, to_l1);
    }
}
