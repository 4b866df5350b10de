// The cube core's instructions (GM -> L1 ND2NZ, LoadData, Mmad, Fixpipe): every header of
// mpnpu/cube/ that kernel_operator.h provides. The matmul API is lib/matmul_intf.h.
#ifndef MPNPU_CUBE_H
#define MPNPU_CUBE_H

#include "cube/params.h"
#include "cube/gemm.h"
#include "cube/basic.h"
#include "cube/load3d.h"

#endif  // MPNPU_CUBE_H
