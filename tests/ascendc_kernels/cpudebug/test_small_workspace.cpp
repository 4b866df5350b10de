// A CPU-debug unit test whose Matmul kernel gets a few KiB of workspace (as public unit tests give,
// the vendor's CPU-debug library keeping the matmul state elsewhere): C = A x B (32 x 64 x 32, half
// in, float out), driven from the vector cores of a mix 1:2 kernel on one AI core. The tiling comes
// from the host tiling API. Prints the largest error against the product worked out here.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "tikicpulib.h"
#include "tiling/tiling_api.h"

using namespace AscendC;
constexpr int M = 32, N = 32, K = 64;

extern "C" __global__ __aicore__ void small_ws(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    TCubeTiling t;
    std::memcpy(&t, tiling, sizeof t);
    SetSysWorkspace(workspace);
    TPipe pipe;
    matmul::Matmul<matmul::MatmulType<TPosition::GM, CubeFormat::ND, half>,
                   matmul::MatmulType<TPosition::GM, CubeFormat::ND, half>,
                   matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>,
                   matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);  // the workspace: 5120 bytes
    if (GetBlockIdx() == 0) {
        GlobalTensor<half> ag, bg;
        GlobalTensor<float> cg;
        ag.SetGlobalBuffer((__gm__ half*)a, M * K);
        bg.SetGlobalBuffer((__gm__ half*)b, K * N);
        cg.SetGlobalBuffer((__gm__ float*)c, M * N);
        mm.SetTensorA(ag);
        mm.SetTensorB(bg);
        mm.IterateAll(cg);
    }
    mm.End();
}

int main() {
    matmul_tiling::MultiCoreMatmulTiling host;
    host.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    host.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    host.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    host.SetShape(M, N, K);
    host.SetDim(1);
    TCubeTiling t{};
    if (host.GetTiling(t) != 0) return 2;
    auto* a = static_cast<half*>(GmAlloc(M * K * sizeof(half)));
    auto* b = static_cast<half*>(GmAlloc(K * N * sizeof(half)));
    auto* c = static_cast<float*>(GmAlloc(M * N * sizeof(float)));
    auto* ws = static_cast<uint8_t*>(GmAlloc(5120));
    auto* tiling = static_cast<uint8_t*>(GmAlloc(sizeof t));
    std::memcpy(tiling, &t, sizeof t);
    for (int i = 0; i < M * K; ++i) a[i] = half(float((i * 7) % 11) / 8.0f);
    for (int i = 0; i < K * N; ++i) b[i] = half(float((i * 5) % 13) / 8.0f);
    SetKernelMode(KernelMode::MIX_MODE);
    ICPU_RUN_KF(small_ws, 1, (uint8_t*)a, (uint8_t*)b, (uint8_t*)c, ws, tiling);
    double worst = 0;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double want = 0;
            for (int k = 0; k < K; ++k) want += double(float(a[i * K + k])) * double(float(b[k * N + j]));
            worst = std::fmax(worst, std::fabs(want - c[i * N + j]));
        }
    std::printf("worst %g\n", worst);
    GmFree(a);
    GmFree(b);
    GmFree(c);
    GmFree(ws);
    GmFree(tiling);
    return 0;
}
