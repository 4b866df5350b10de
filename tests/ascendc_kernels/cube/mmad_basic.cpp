// The cube's instructions one after another on one cube core: GM -> L1 (ND2NZ), L1 -> L0A / L0B
// (LoadData, with fractal transposes where the layout needs them), Mmad (plain, accumulating, with
// a bias from the bias table) and Fixpipe to GM (ND or NZ out, converted, ReLU, atomic add).
// flags: 1 A is given transposed ([k, m]), 2 B is given transposed ([n, k]), 4 accumulate a second
// A x B, 8 bias, 16 ReLU, 32 atomic add into C, 64 NZ output, 128 unitFlag 3 on Mmad and Fixpipe, 256 with 8:
// C starts from the bias table by cmatrixInitVal false / cmatrixSource true (no bias tensor passed), 512 with 8:
// the bias is half in GM and L1, converted to float on its way into the bias table, 1024 HF32 mode on
// (refused by mpnpu; off, it is set at every run). types: 0 half -> float, 1 bfloat16_t
// -> float, 2 float -> float, 3 half -> half, 4 bfloat16_t -> bfloat16_t (A and B -> C).
#include "kernel_operator.h"
using namespace AscendC;

static inline uint32_t up(uint32_t a, uint32_t b) { return (a + b - 1) / b * b; }

template <typename X>
constexpr QuantMode_t quant_for() {
    if constexpr (std::is_same_v<X, half>) return QuantMode_t::F322F16;
    else if constexpr (std::is_same_v<X, bfloat16_t>) return QuantMode_t::F322BF16;
    else return QuantMode_t::NoQuant;
}

template <typename T, typename O>
static void run(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, uint32_t m, uint32_t n, uint32_t k, uint32_t flags) {
    constexpr uint32_t C0 = 32 / sizeof(T);
    const bool transA = flags & 1, transB = flags & 2, acc = flags & 4, useBias = flags & 8, relu = flags & 16,
               atomic = flags & 32, nz = flags & 64;
    GlobalTensor<T> aGm, bGm;
    GlobalTensor<float> biasGm;
    GlobalTensor<O> cGm;
    aGm.SetGlobalBuffer((__gm__ T*)a);
    bGm.SetGlobalBuffer((__gm__ T*)b);
    biasGm.SetGlobalBuffer((__gm__ float*)bias);
    cGm.SetGlobalBuffer((__gm__ O*)c);
    const uint32_t mp = up(m, 16), np = up(n, 16), kp = up(k, 16);
    const uint32_t M1 = mp / 16, N1 = np / 16, K1 = kp / C0;
    const bool halfBias = flags & 512;
    SetHF32Mode(bool(flags & 1024));
    SetHF32TransMode(false);

    LocalMemAllocator<Hardware::L1> l1;
    LocalMemAllocator<Hardware::L0A> l0a;
    LocalMemAllocator<Hardware::L0B> l0b;
    LocalMemAllocator<Hardware::L0C> l0c;
    LocalMemAllocator<Hardware::BIAS> bt;
    LocalTensor<T> a1 = l1.Alloc<TPosition::A1, T>(mp * kp);
    LocalTensor<T> b1 = l1.Alloc<TPosition::B1, T>(kp * np);
    LocalTensor<float> bias1 = l1.Alloc<TPosition::C1, float>(np);
    LocalTensor<T> a2 = l0a.Alloc<TPosition::A2, T>(mp * kp);
    LocalTensor<T> b2 = l0b.Alloc<TPosition::B2, T>(kp * np);
    LocalTensor<float> c1 = l0c.Alloc<TPosition::CO1, float>(mp * np);
    LocalTensor<float> bias2 = bt.Alloc<TPosition::C2, float>(np);

    if (!transA) DataCopy(a1, aGm, Nd2NzParams(1, m, k, 0, k, mp, 1, 0));  // NZ of A [m, k]
    else DataCopy(a1, aGm, Nd2NzParams(1, k, m, 0, m, kp, 1, 0));          // NZ of A^T [k, m]
    if (!transB) DataCopy(b1, bGm, Nd2NzParams(1, k, n, 0, n, kp, 1, 0));  // NZ of B [k, n]
    else DataCopy(b1, bGm, Nd2NzParams(1, n, k, 0, k, np, 1, 0));          // NZ of B^T [n, k]
    LocalTensor<half> bias1h = bias1.template ReinterpretCast<half>();
    if (useBias && halfBias) {
        GlobalTensor<half> biasHalfGm;
        biasHalfGm.SetGlobalBuffer((__gm__ half*)bias);
        DataCopy(bias1h, biasHalfGm, np);
    } else if (useBias) {
        DataCopy(bias1, biasGm, np);
    }
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);

    // L0A wants Zz (fractal (m1, k1) at m1 * K1 + k1, rows inside); for m == 1 Mmad reads A as one
    // plain row (GEMV), so that row goes to L0A as it is
    if (m == 1) {
        DataCopy(a1, aGm, kp);
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID1);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID1);
        LoadData(a2, a1, LoadData2DParams(0, uint8_t((kp * sizeof(T) + 511) / 512), 1, 0, 0, false, 0));
    } else if (!transA) {
        for (uint32_t i = 0; i < M1; ++i)
            LoadData(a2[i * K1 * 16 * C0], a1[i * 16 * C0], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
    } else {  // the NZ fractals of A^T are already in Zz order; each needs a transpose
        LoadData(a2, a1, LoadData2DParams(0, M1 * K1, 1, 0, 0, true, 0));
    }
    // L0B wants Zn (fractal (k1, n1) at k1 * N1 + n1, columns inside)
    if (!transB) {
        for (uint32_t i = 0; i < K1; ++i)
            LoadData(b2[i * N1 * 16 * C0], b1[i * 16 * C0], LoadData2DParams(0, N1, K1, 0, 0, true, 0));
    } else {  // NZ of B^T is Zn already
        LoadData(b2, b1, LoadData2DParams(0, K1 * N1, 1, 0, 0, false, 0));
    }
    // (into the bias table blockLen counts 64-byte units)
    // (half to float on the way: blockLen counts 64-byte units of the half source)
    if (useBias && halfBias) DataCopy<float, half>(bias2, bias1h, DataCopyParams(1, uint16_t(np * sizeof(half) / 64), 0, 0));
    else if (useBias) DataCopy(bias2, bias1, DataCopyParams(1, uint16_t(np * sizeof(float) / 64), 0, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);

    MmadParams p(static_cast<uint16_t>(m), static_cast<uint16_t>(n), static_cast<uint16_t>(k));
    const uint8_t unit = (flags & 128) ? 3 : 0;
    p.unitFlag = unit;
    if (useBias && (flags & 256)) {
        p.cmatrixInitVal = false;
        p.cmatrixSource = true;
        Mmad(c1, a2, b2, p);  // (the table is at the start of the bias table: bias2 is its first buffer)
    } else if (useBias) {
        Mmad(c1, a2, b2, bias2, p);
    } else {
        Mmad(c1, a2, b2, p);
    }
    if (acc) {
        PipeBarrier<PIPE_M>();
        MmadParams again(uint16_t(m), uint16_t(n), uint16_t(k), 0, false, false);  // onto what L0C holds
        Mmad(c1, a2, b2, again);
    }
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);

    FixpipeParamsV220 fp(uint16_t(n), uint16_t(m), uint16_t(mp), n, relu);
    fp.quantPre = quant_for<O>();
    fp.unitFlag = unit;
    if (atomic) SetAtomicAdd<O>();
    if (nz) {
        fp.dstStride = mp * 16 * sizeof(O) / 32;
        Fixpipe<O, float, CFG_NZ>(cGm, c1, fp);
    } else {
        Fixpipe(cGm, c1, fp);
    }
    if (atomic) SetAtomicNone();
    PipeBarrier<PIPE_ALL>();
}

extern "C" __global__ __aicore__ void mmad_basic(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, uint32_t m,
                                                 uint32_t n, uint32_t k, uint32_t flags, uint32_t types) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    switch (types) {
        case 0: run<half, float>(a, b, bias, c, m, n, k, flags); break;
        case 1: run<bfloat16_t, float>(a, b, bias, c, m, n, k, flags); break;
        case 2: run<float, float>(a, b, bias, c, m, n, k, flags); break;
        case 3: run<half, half>(a, b, bias, c, m, n, k, flags); break;
        default: run<bfloat16_t, bfloat16_t>(a, b, bias, c, m, n, k, flags); break;
    }
}
