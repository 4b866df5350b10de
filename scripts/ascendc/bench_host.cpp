// For scripts/bench_host.py (ours): a CPU-debug style host program that launches an empty kernel
// (empty_kernel of bench_kernels.cpp, the kernel scripts/bench_host.py launches from Python too) with
// ICPU_RUN_KF `rounds` x `launches` times and prints the microseconds per launch of each round.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tikicpulib.h"
#include "bench_kernels.cpp"

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
    const int launches = argc > 2 ? std::atoi(argv[2]) : 200;
    uint8_t* x = static_cast<uint8_t*>(AscendC::GmAlloc(32));
    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    for (int i = 0; i < 20; ++i) ICPU_RUN_KF(empty_kernel, 1, x);  // warm: the device and its cores
    for (int r = 0; r < rounds; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < launches; ++i) ICPU_RUN_KF(empty_kernel, 1, x);
        auto t1 = std::chrono::steady_clock::now();
        std::printf("%.1f\n", std::chrono::duration<double, std::micro>(t1 - t0).count() / launches);
    }
    AscendC::GmFree(x);
    return 0;
}
