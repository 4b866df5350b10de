// The chip architecture numbers host code compares against (PlatformAscendC::GetCurNpuArch): the
// documented DAV_* names; mpnpu emulates DAV_2201 (the Atlas A2 / A3 class).
#ifndef MPNPU_PLATFORM_SOC_SPEC_H
#define MPNPU_PLATFORM_SOC_SPEC_H

enum class NpuArch : int {
    DAV_1001 = 1001,
    DAV_2002 = 2002,
    DAV_2201 = 2201,
    DAV_3002 = 3002,
    DAV_3003 = 3003,
    DAV_3102 = 3102,
    DAV_3113 = 3113,
    DAV_3510 = 3510,
    DAV_5102 = 5102,
    DAV_RESV = -1,
};

#endif  // MPNPU_PLATFORM_SOC_SPEC_H
