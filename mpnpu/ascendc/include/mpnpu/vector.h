// Vector instructions (PIPE_V): every header of mpnpu/vector/.
//
//   params.h          repeat-parameter structs, RoundMode, CMPMODE, SELMODE, ReduceOrder, configs
//   engine.h          (internal) lanes, masks, strides, byte hulls and the per-repeat loop
//   mask.h            SetVectorMask, SetMaskCount, SetMaskNorm, ResetMask, MASK_PLACEHOLDER
//   binary.h          Add Sub Mul Div Max Min And Or
//   unary.h           Exp Ln Abs Sqrt Rsqrt Reciprocal Relu Not
//   scalar.h          Adds Muls Maxs Mins LeakyRelu Axpy
//   cast.h            Cast, SetDeqScale, ScalarCast (and the scalar Cast)
//   compare_select.h  Compare Compares CompareScalar GetCmpMask SetCmpMask Select
//   reduce.h          ReduceSum/Max/Min, ReduceRepeat (WholeReduce*), ReduceDataBlock (BlockReduce*)
//   fill_gather.h     Duplicate Brcb CreateVecIndex Gather Gatherb GatherMask
//   transpose.h       TransDataTo5HD (TransDataTo5HDImpl), Transpose
//   sort.h            Sort32, MrgSort (MrgSortSrcList, MrgSort4Info), GetMrgSortResult
//
// docs/ascendc-vector-api.md lists every call, form and element type.
#ifndef MPNPU_VECTOR_H
#define MPNPU_VECTOR_H

#include "vector/params.h"
#include "vector/mask.h"
#include "vector/binary.h"
#include "vector/unary.h"
#include "vector/scalar.h"
#include "vector/cast.h"
#include "vector/compare_select.h"
#include "vector/reduce.h"
#include "vector/fill_gather.h"
#include "vector/transpose.h"
#include "vector/sort.h"

#endif  // MPNPU_VECTOR_H
