#!/usr/bin/env python3
"""How fast the emulated cube multiplies: one 128x256x128 tile (half or bfloat16 in, float32
accumulate) through the matmul engine that MatmulImpl and the matmul server use (GM gather and
conversion to float, the blocked GEMM, the float32 tile) and through the Mmad instruction (fractal
gather from L0A / L0B, GEMM, scatter to L0C), beside numpy's float32 matmul of the same shape,
measured side by side on this machine.

    python scripts/bench_cube_matmul.py [--m 128 --n 256 --k 128] [--dtype half|bfloat16_t] [--reps 200]

The C++ side is a small program built from mpnpu's headers with the kernels' own flags (-O2, no
-march): it prints microseconds per tile for the engine (compute_tile) and the bare GEMM; the ratio
is engine time / numpy time (numpy calls its BLAS, on one thread, on float32 arrays already in memory). Each figure
is the best of 5 batches, the two sides measured one after the other in the same minute.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time

# numpy on one thread, as the cube core runs on one (set before numpy loads its BLAS)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from mpnpu.ascendc.build.compiler import INCLUDE_DIR, base_flags, find_compiler  # noqa: E402

PROGRAM = r"""
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "kernel_operator.h"
#include "mpnpu/cube/matmul_engine.h"

using T = DTYPE;

int main(int argc, char** argv) {
    const int M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]), reps = std::atoi(argv[4]);
    mpnpu::core().memcheck = false;  // plain host buffers: no launch, no regions
    std::vector<T> a(size_t(M) * K), b(size_t(K) * N);
    for (size_t i = 0; i < a.size(); ++i) a[i] = T(float(int(i * 7 % 13) - 6) / 8.0f);
    for (size_t i = 0; i < b.size(); ++i) b[i] = T(float(int(i * 5 % 11) - 5) / 8.0f);
    TCubeTiling t{};
    t.M = M; t.N = N; t.Ka = K; t.Kb = K; t.singleCoreM = M; t.singleCoreN = N; t.singleCoreK = K;
    t.baseM = M; t.baseN = N; t.baseK = 64; t.usedCoreNum = 1;
    mpnpu::mm::Setup s;
    mpnpu::mm::init_setup(s, t);
    s.a_base = s.a = reinterpret_cast<const uint8_t*>(a.data());
    s.b_base = s.b = reinterpret_cast<const uint8_t*>(b.data());
    std::vector<float> out;
    mpnpu::Site site{__FILE__, __LINE__, "bench"};
    std::vector<float> af(size_t(M) * K), bf(size_t(K) * N), cf(size_t(M) * N);
    for (size_t i = 0; i < af.size(); ++i) af[i] = float(a[i]);
    for (size_t i = 0; i < bf.size(); ++i) bf[i] = float(b[i]);
    // the best of 5 batches (the machine is shared: the minimum is the least disturbed)
    double engine = 1e30, gemm = 1e30;
    const int batch = reps / 5 > 0 ? reps / 5 : 1;
    for (int round = 0; round < 5; ++round) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < batch; ++i) mpnpu::mm::compute_tile<T, T, float>(s, 0, out, false, site, "bench");
        auto t1 = std::chrono::steady_clock::now();
        for (int i = 0; i < batch; ++i) mpnpu::gemm::sgemm(M, N, K, af.data(), K, bf.data(), N, cf.data(), N);
        auto t2 = std::chrono::steady_clock::now();
        double e = std::chrono::duration<double, std::micro>(t1 - t0).count() / batch;
        double g = std::chrono::duration<double, std::micro>(t2 - t1).count() / batch;
        engine = e < engine ? e : engine;
        gemm = g < gemm ? g : gemm;
    }
    // Mmad on L0A (Zz) x L0B (Zn) -> L0C (Nz), when the operands fit those memories
    double mmad = -1;
    const uint64_t k1 = (K + 31 / int(sizeof(T))) / (32 / sizeof(T)), m1 = (M + 15) / 16, n1 = (N + 15) / 16;
    if (m1 * k1 * 512 <= mpnpu::L0A_BYTES && k1 * n1 * 512 <= mpnpu::L0B_BYTES && m1 * n1 * 1024 <= mpnpu::L0C_BYTES) {
        AscendC::LocalTensor<T> l0a, l0b;
        AscendC::LocalTensor<float> l0c;
        l0a.mpnpu_init(MPNPU_MEM_L0A, AscendC::TPosition::A2, 0, uint32_t(m1 * k1 * 256), 0, mpnpu::L0A_BYTES);
        l0b.mpnpu_init(MPNPU_MEM_L0B, AscendC::TPosition::B2, 0, uint32_t(k1 * n1 * 256), 0, mpnpu::L0B_BYTES);
        l0c.mpnpu_init(MPNPU_MEM_L0C, AscendC::TPosition::CO1, 0, uint32_t(m1 * n1 * 256), 0, mpnpu::L0C_BYTES);
        for (uint32_t i = 0; i < l0a.GetSize(); ++i) l0a.mpnpu_addr()[i] = a[i % a.size()];
        for (uint32_t i = 0; i < l0b.GetSize(); ++i) l0b.mpnpu_addr()[i] = b[i % b.size()];
        AscendC::MmadParams p{uint16_t(M), uint16_t(N), uint16_t(K)};
        mmad = 1e30;
        for (int round = 0; round < 5; ++round) {
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < batch; ++i) AscendC::Mmad(l0c, l0a, l0b, p, site);
            auto t1 = std::chrono::steady_clock::now();
            double e = std::chrono::duration<double, std::micro>(t1 - t0).count() / batch;
            mmad = e < mmad ? e : mmad;
        }
    }
    std::printf("%.3f %.3f %d %.3f\n", engine, gemm, mpnpu::gemm::wide() ? 1 : 0, mmad);
    return 0;
}
"""


def build(dtype: str, tmp: str) -> str:
    src, exe = os.path.join(tmp, "bench.cpp"), os.path.join(tmp, "bench")
    with open(src, "w") as f:
        f.write(PROGRAM)
    flags = [f for f in base_flags() if f not in ("-shared", "-fPIC", "-fvisibility=hidden")]
    subprocess.run([*find_compiler(), *flags, f"-I{INCLUDE_DIR}", f"-DDTYPE={dtype}", src, "-o", exe], check=True)
    return exe


def numpy_us(m: int, n: int, k: int, reps: int) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    for _ in range(5):
        a @ b
    best = float("inf")
    batch = max(1, reps // 5)
    for _ in range(5):  # the best of 5 batches, as the C++ side measures
        t0 = time.perf_counter()
        for _ in range(batch):
            a @ b
        best = min(best, (time.perf_counter() - t0) / batch)
    return best * 1e6


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=128)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--k", type=int, default=128)
    p.add_argument("--dtype", default="half", choices=("half", "bfloat16_t"))
    p.add_argument("--reps", type=int, default=200)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpnpu-bench-") as tmp:
        exe = build(args.dtype, tmp)
        out = subprocess.run([exe, str(args.m), str(args.n), str(args.k), str(args.reps)], check=True,
                             capture_output=True, text=True).stdout.split()
    engine, gemm, wide, mmad = float(out[0]), float(out[1]), out[2] == "1", float(out[3])
    ref = numpy_us(args.m, args.n, args.k, args.reps)
    flops = 2.0 * args.m * args.n * args.k
    print(f"tile {args.m}x{args.n}x{args.k}, {args.dtype} in, float32 accumulate "
          f"({'AVX2+FMA' if wide else 'baseline SSE2'} kernel)")
    print(f"  mpnpu engine (gather + convert + GEMM): {engine:9.1f} us/tile  {flops / engine / 1e3:6.1f} GFLOP/s")
    print(f"  mpnpu GEMM alone (float32 buffers):     {gemm:9.1f} us/tile  {flops / gemm / 1e3:6.1f} GFLOP/s")
    if mmad > 0:
        print(f"  Mmad (L0A Zz x L0B Zn -> L0C Nz):       {mmad:9.1f} us/tile  {flops / mmad / 1e3:6.1f} GFLOP/s")
    print(f"  numpy float32 matmul:                   {ref:9.1f} us/tile  {flops / ref / 1e3:6.1f} GFLOP/s")
    print(f"  ratio engine / numpy: {engine / ref:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
