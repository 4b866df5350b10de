// Host-side platform queries (tiling/platform/platform_ascendc.h): PlatformAscendC answers a host
// tiling function's questions about the chip (core counts, local memory sizes, the system
// workspace), and PlatformAscendCManager::GetInstance() hands out the one instance a Kernel Launch
// program asks. On mpnpu every answer is the emulated chip's (mpnpu/device_model.h, the figures the
// kernel side sizes its memories from): an Atlas A2 class chip of 24 AI cores, each 1 cube + 2 vector
// cores, whatever platform description or SoC name the caller passes.
#ifndef MPNPU_TILING_PLATFORM_ASCENDC_H
#define MPNPU_TILING_PLATFORM_ASCENDC_H

#include <cstdint>
#include <cstdio>

#include "../../mpnpu/device_model.h"
#include "../../platform/soc_spec.h"

namespace fe {
class PlatFormInfos;  // the graph engine's platform description (a tiling context's GetPlatformInfo())
}

namespace platform_ascendc {

// Memory kinds GetCoreMemSize / GetCoreMemBw answer for (values as documented).
enum class CoreMemType {
    L0_A = 0,
    L0_B = 1,
    L0_C = 2,
    L1 = 3,
    L2 = 4,
    UB = 5,
    HBM = 6,
    FB = 7,
    BT = 8,
    RESERVED
};

// Chip models host code compares GetSocVersion against; mpnpu is always ASCEND910B (the A2 class,
// which A3 parts also report, as documented).
enum class SocVersion {
    ASCEND910 = 0,
    ASCEND910B,
    ASCEND910_93,
    ASCEND910_55,
    ASCEND910E,
    ASCEND310,
    ASCEND310P,
    ASCEND310B,
    ASCEND310C,
    ASCEND610LITE,
    ASCEND950,
    KIRINX90,
    KIRIN9030,
    RESERVED_VERSION = 99999
};

class PlatformAscendC {
public:
    PlatformAscendC() = delete;
    ~PlatformAscendC() = default;
    // (the description is not read: mpnpu's chip is fixed)
    explicit PlatformAscendC(fe::PlatFormInfos* platformInfo) : platformInfo_(platformInfo) {}

    // Separated cube/vector cores: the vector core count.
    uint32_t GetCoreNum(void) const { return mpnpu::AIV_CORES; }
    SocVersion GetSocVersion(void) const { return SocVersion::ASCEND910B; }
    NpuArch GetCurNpuArch(void) const { return NpuArch::DAV_2201; }
    // 0: not a register-based vector architecture
    uint32_t GetVecRegLen(void) const { return 0; }
    uint32_t GetCoreNumAic(void) const { return mpnpu::AI_CORES; }
    uint32_t GetCoreNumAiv(void) const { return mpnpu::AIV_CORES; }
    // Independent vector cores (only inference parts have them): none.
    uint32_t GetCoreNumVector(void) const { return 0; }

    // The block count a launch of a kernel cut into sliceNum parts asks for: with cube cores in use
    // (aicCoreNum > 0) and vector cores too, a block is one AI core's group (1 cube + 2 vector cores),
    // so sliceNum vector-core parts need ceil(sliceNum / 2) blocks; otherwise one block per part. At
    // most the chip's core count of the kind that counts blocks.
    uint32_t CalcTschNumBlocks(uint32_t sliceNum, uint32_t aicCoreNum, uint32_t aivCoreNum) const {
        if (aicCoreNum == 0 || aivCoreNum == 0) {
            const uint32_t cap = aicCoreNum != 0 ? aicCoreNum : aivCoreNum;
            return cap != 0 && sliceNum > cap ? cap : sliceNum;
        }
        const uint32_t ratio = aivCoreNum / aicCoreNum != 0 ? aivCoreNum / aicCoreNum : 1;
        const uint32_t blocks = (sliceNum + ratio - 1) / ratio;
        return blocks > aicCoreNum ? aicCoreNum : blocks;
    }
    // (the older name)
    uint32_t CalcTschBlockDim(uint32_t sliceNum, uint32_t aicCoreNum, uint32_t aivCoreNum) const {
        return CalcTschNumBlocks(sliceNum, aicCoreNum, aivCoreNum);
    }

    // One core's memory of that kind, in bytes (L2 and HBM: the chip's).
    void GetCoreMemSize(const CoreMemType& memType, uint64_t& size) const {
        switch (memType) {
            case CoreMemType::L0_A: size = mpnpu::L0A_BYTES; return;
            case CoreMemType::L0_B: size = mpnpu::L0B_BYTES; return;
            case CoreMemType::L0_C: size = mpnpu::L0C_BYTES; return;
            case CoreMemType::L1: size = mpnpu::L1_BYTES; return;
            case CoreMemType::L2: size = mpnpu::L2_BYTES; return;
            case CoreMemType::UB: size = mpnpu::UB_BYTES; return;
            case CoreMemType::HBM: size = mpnpu::HBM_BYTES; return;
            case CoreMemType::FB: size = mpnpu::FB_BYTES; return;
            case CoreMemType::BT: size = mpnpu::BT_BYTES; return;
            case CoreMemType::RESERVED: break;
        }
        size = 0;
    }
    // Bandwidths are not modelled (mpnpu has no timing model): 0 for every kind.
    void GetCoreMemBw(const CoreMemType& memType, uint64_t& bwSize) const {
        (void)memType;
        bwSize = 0;
    }

    // The system workspace the library APIs need (the matmul server's, mpnpu/cube/matmul_kfc.h).
    uint32_t GetLibApiWorkSpaceSize(void) const { return mpnpu::SYS_WORKSPACE_BYTES; }
    // Workspaces of group barriers and cube groups: 1 MiB each.
    uint32_t GetResGroupBarrierWorkSpaceSize(void) const { return 1024u * 1024u; }
    uint32_t GetResCubeGroupWorkSpaceSize(void) const { return 1024u * 1024u; }

private:
    [[maybe_unused]] fe::PlatFormInfos* platformInfo_ = nullptr;
};

// The one PlatformAscendC of a Kernel Launch program (no platform description to read: mpnpu's chip).
class PlatformAscendCManager {
public:
    static PlatformAscendC* GetInstance() {
        static PlatformAscendC instance(nullptr);
        return &instance;
    }
    // (the SoC name a CPU-only run names its chip by; mpnpu's chip is the same whatever it says)
    static PlatformAscendC* GetInstance(const char* customSocVersion) {
        (void)customSocVersion;
        return GetInstance();
    }
};

}  // namespace platform_ascendc

#endif  // MPNPU_TILING_PLATFORM_ASCENDC_H
