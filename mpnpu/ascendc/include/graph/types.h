// Host side: the graph types unit-test tiling helpers take (ge::DataType with its DT_* values; the
// status code). The enumeration is the one kernels see (mpnpu/datatype.h).
#ifndef MPNPU_GRAPH_TYPES_H
#define MPNPU_GRAPH_TYPES_H

#include "../mpnpu/datatype.h"
#include "ge_error_codes.h"

#endif
