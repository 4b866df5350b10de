// Kernels for scripts/bench_ascendc.py (ours): an empty kernel, and DataCopy of 64 KiB GM -> UB
// timed against memcpy of the same bytes, side by side on the same core.
#include <chrono>
#include <cstring>

#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void empty_kernel(GM_ADDR x) { (void)x; }

// times[0] = ns for `reps` DataCopy GM->UB of `bytes`; times[1] = ns for `reps` memcpy of them.
extern "C" __global__ __aicore__ void datacopy_bandwidth(GM_ADDR src, GM_ADDR times, uint32_t bytes, uint32_t reps) {
    if (GetBlockIdx() != 0) return;
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, bytes);
    GlobalTensor<uint8_t> g;
    g.SetGlobalBuffer((__gm__ uint8_t*)src, bytes);
    LocalTensor<uint8_t> ub = buf.Get<uint8_t>();
    auto t0 = std::chrono::steady_clock::now();
    for (uint32_t i = 0; i < reps; ++i) DataCopy(ub, g, bytes);
    PipeBarrier<PIPE_ALL>();
    auto t1 = std::chrono::steady_clock::now();
    uint8_t* host_ub = reinterpret_cast<uint8_t*>(ub.GetPhyAddr());
    for (uint32_t i = 0; i < reps; ++i) {
        std::memcpy(host_ub, src, bytes);
        asm volatile("" : : "r"(host_ub) : "memory");  // keep every copy
    }
    auto t2 = std::chrono::steady_clock::now();
    int64_t* out = reinterpret_cast<int64_t*>(times);
    out[0] = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    out[1] = std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count();
}

// times[2 * i] = ns per call of vector call i (see scripts/bench_vector_ops.py) on n floats in its
// count form (whole rows); times[2 * i + 1] = the same call under a mask that leaves out lane 0 of
// every repeat (the lane-by-lane path), n / 64 repeats. reps calls each.
extern "C" __global__ __aicore__ void vector_ops(GM_ADDR times, uint32_t n, uint32_t reps) {
    if (GetBlockIdx() != 0) return;
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bc, bh, bw;
    pipe.InitBuffer(ba, n * 4);
    pipe.InitBuffer(bb, n * 4);
    pipe.InitBuffer(bc, n * 4);
    pipe.InitBuffer(bh, n * 2);
    pipe.InitBuffer(bw, n * 4);
    LocalTensor<float> a = ba.Get<float>(), b = bb.Get<float>(), c = bc.Get<float>(), w = bw.Get<float>();
    LocalTensor<half> h = bh.Get<half>();
    Duplicate(a, 1.5f, n);
    Duplicate(b, 0.5f, n);
    Cast(h, a, RoundMode::CAST_RINT, n);
    const uint64_t mask[2] = {~uint64_t(1), 0};
    const int32_t rep = int32_t(n / 64);
    int64_t* out = reinterpret_cast<int64_t*>(times);
    int i = 0;
    auto time = [&](auto&& call) {
        auto t0 = std::chrono::steady_clock::now();
        for (uint32_t k = 0; k < reps; ++k) call();
        auto t1 = std::chrono::steady_clock::now();
        out[i++] = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count() / reps;
    };
    const BinaryRepeatParams bp(1, 1, 1, 8, 8, 8);
    const UnaryRepeatParams up(1, 1, 8, 8), to_float(1, 1, 8, 4), to_half(1, 1, 4, 8);
    time([&] { Add(c, a, b, n); });
    time([&] { Add(c, a, b, mask, rep, bp); });
    time([&] { Max(c, a, b, n); });
    time([&] { Max(c, a, b, mask, rep, bp); });
    time([&] { Muls(c, a, 2.0f, n); });
    time([&] { Muls(c, a, 2.0f, mask, rep, up); });
    time([&] { Maxs(c, a, 2.0f, n); });
    time([&] { Maxs(c, a, 2.0f, mask, rep, up); });
    time([&] { Rsqrt(c, a, n); });
    time([&] { Rsqrt(c, a, mask, rep, up); });
    time([&] { Cast(c, h, RoundMode::CAST_NONE, n); });
    time([&] { Cast(c, h, RoundMode::CAST_NONE, mask, rep, to_float); });
    time([&] { Cast(h, a, RoundMode::CAST_RINT, n); });
    time([&] { Cast(h, a, RoundMode::CAST_RINT, mask, rep, to_half); });
    time([&] { Duplicate(c, 0.25f, n); });
    time([&] { Duplicate(c, 0.25f, mask, uint8_t(rep), 1, 8); });
    time([&] { ReduceSum(c, a, w, n); });
    time([&] { ReduceSum(c, a, w, mask, rep, 8); });
}
