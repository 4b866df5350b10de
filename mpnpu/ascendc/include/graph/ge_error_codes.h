// Host side: the graph status code that tiling functions return (ge::graphStatus, GRAPH_SUCCESS,
// GRAPH_FAILED), as operator repositories' unit-test tiling helpers use it.
#ifndef MPNPU_GRAPH_GE_ERROR_CODES_H
#define MPNPU_GRAPH_GE_ERROR_CODES_H

#include <cstdint>

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFFu;
constexpr graphStatus GRAPH_PARAM_INVALID = 50331649u;
}  // namespace ge

#endif
