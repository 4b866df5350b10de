// The graph data-type enumeration kernels and their tiling headers compare against (ge::DataType:
// DT_FLOAT, DT_INT4, ...), with the values of its documented table, and its enumerators also in the
// global namespace, where kernels use them unqualified (``if (tiling.dstType == DT_INT4)``,
// ``#define ORIG_DTYPE_Y DT_INT4``).
//
// Unit tests' tiling headers often ``#define DT_BF16 bfloat16_t`` (their dtype macros); this header
// parses its own DT_BF16 with any such macro set aside, so it may come before or after them, and
// kernel_tiling.h includes it, so a tiling header that includes kernel_tiling.h first gets it ahead
// of its own defines.
#ifndef MPNPU_DATATYPE_H
#define MPNPU_DATATYPE_H

#pragma push_macro("DT_BF16")
#undef DT_BF16

namespace ge {
enum DataType {
    DT_FLOAT = 0,
    DT_FLOAT16 = 1,
    DT_INT8 = 2,
    DT_INT32 = 3,
    DT_UINT8 = 4,
    DT_INT16 = 6,
    DT_UINT16 = 7,
    DT_UINT32 = 8,
    DT_INT64 = 9,
    DT_UINT64 = 10,
    DT_DOUBLE = 11,
    DT_BOOL = 12,
    DT_STRING = 13,
    DT_DUAL_SUB_INT8 = 14,
    DT_DUAL_SUB_UINT8 = 15,
    DT_COMPLEX64 = 16,
    DT_COMPLEX128 = 17,
    DT_QINT8 = 18,
    DT_QINT16 = 19,
    DT_QINT32 = 20,
    DT_QUINT8 = 21,
    DT_QUINT16 = 22,
    DT_RESOURCE = 23,
    DT_STRING_REF = 24,
    DT_DUAL = 25,
    DT_VARIANT = 26,
    DT_BF16 = 27,
    DT_UNDEFINED = 28,
    DT_INT4 = 29,
    DT_UINT1 = 30,
    DT_INT2 = 31,
    DT_UINT2 = 32,
    DT_COMPLEX32 = 33,
    DT_HIFLOAT8 = 34,
    DT_FLOAT8_E5M2 = 35,
    DT_FLOAT8_E4M3FN = 36,
    DT_FLOAT8_E8M0 = 37,
    DT_FLOAT6_E3M2 = 38,
    DT_FLOAT6_E2M3 = 39,
    DT_FLOAT4_E2M1 = 40,
    DT_FLOAT4_E1M2 = 41,
    DT_MAX
};
}  // namespace ge

// The enumerators unqualified (not the type's name, which kernels may use for their own; nor
// DT_UNDEFINED, which the samples' host helpers declare in an enumeration of their own).
#define MPNPU_DT_USING(N) using ge::N;
MPNPU_DT_USING(DT_FLOAT) MPNPU_DT_USING(DT_FLOAT16) MPNPU_DT_USING(DT_INT8) MPNPU_DT_USING(DT_INT32)
MPNPU_DT_USING(DT_UINT8) MPNPU_DT_USING(DT_INT16) MPNPU_DT_USING(DT_UINT16) MPNPU_DT_USING(DT_UINT32)
MPNPU_DT_USING(DT_INT64) MPNPU_DT_USING(DT_UINT64) MPNPU_DT_USING(DT_DOUBLE) MPNPU_DT_USING(DT_BOOL)
MPNPU_DT_USING(DT_STRING) MPNPU_DT_USING(DT_DUAL_SUB_INT8) MPNPU_DT_USING(DT_DUAL_SUB_UINT8)
MPNPU_DT_USING(DT_COMPLEX64) MPNPU_DT_USING(DT_COMPLEX128) MPNPU_DT_USING(DT_QINT8) MPNPU_DT_USING(DT_QINT16)
MPNPU_DT_USING(DT_QINT32) MPNPU_DT_USING(DT_QUINT8) MPNPU_DT_USING(DT_QUINT16) MPNPU_DT_USING(DT_RESOURCE)
MPNPU_DT_USING(DT_STRING_REF) MPNPU_DT_USING(DT_DUAL) MPNPU_DT_USING(DT_VARIANT) MPNPU_DT_USING(DT_BF16)
MPNPU_DT_USING(DT_INT4) MPNPU_DT_USING(DT_UINT1) MPNPU_DT_USING(DT_INT2)
MPNPU_DT_USING(DT_UINT2) MPNPU_DT_USING(DT_COMPLEX32) MPNPU_DT_USING(DT_HIFLOAT8) MPNPU_DT_USING(DT_FLOAT8_E5M2)
MPNPU_DT_USING(DT_FLOAT8_E4M3FN) MPNPU_DT_USING(DT_FLOAT8_E8M0) MPNPU_DT_USING(DT_FLOAT6_E3M2)
MPNPU_DT_USING(DT_FLOAT6_E2M3) MPNPU_DT_USING(DT_FLOAT4_E2M1) MPNPU_DT_USING(DT_FLOAT4_E1M2) MPNPU_DT_USING(DT_MAX)
#undef MPNPU_DT_USING

#pragma pop_macro("DT_BF16")

#endif  // MPNPU_DATATYPE_H
