// The emulated chip's fixed figures, once, for the kernel side (native/rt.h sizes each core's local
// memories from them) and the host side (tiling/platform/platform_ascendc.h answers platform queries
// with them, tiling/tiling_api.h fits matmul tilings into them). The Python side's DeviceSpec
// (mpnpu/runtime/config.py) states the same chip; tests/test_host_tiling.py checks the two agree.
// An Atlas A2 class chip: 24 AI cores, each one cube core (AIC) and two vector cores (AIV).
#ifndef MPNPU_DEVICE_MODEL_H
#define MPNPU_DEVICE_MODEL_H

#include <cstddef>
#include <cstdint>

namespace mpnpu {

constexpr uint32_t AI_CORES = 24;        // AI cores = cube cores
constexpr uint32_t AIV_PER_AI_CORE = 2;  // vector cores per AI core
constexpr uint32_t AIV_CORES = AI_CORES * AIV_PER_AI_CORE;

constexpr size_t UB_BYTES = 192 * 1024;  // Unified Buffer, per vector core
constexpr size_t L1_BYTES = 512 * 1024;  // per cube core
constexpr size_t L0A_BYTES = 64 * 1024;
constexpr size_t L0B_BYTES = 64 * 1024;
constexpr size_t L0C_BYTES = 128 * 1024;
constexpr size_t BT_BYTES = 1024;  // the bias table
constexpr size_t FB_BYTES = 2048;  // the fixpipe buffer
constexpr uint64_t L2_BYTES = 192ull * 1024 * 1024;
constexpr uint64_t HBM_BYTES = 64ull * 1024 * 1024 * 1024;

// The system workspace the library APIs (the matmul server, mpnpu/cube/matmul_kfc.h) may use, as the
// host asks for it with GetLibApiWorkSpaceSize: 16 MiB on this chip class. The matmul server needs
// 64 KiB + 512 KiB per Matmul object per AI core, so one object on every AI core fits.
constexpr uint32_t SYS_WORKSPACE_BYTES = 16u * 1024 * 1024;

}  // namespace mpnpu

#endif  // MPNPU_DEVICE_MODEL_H
