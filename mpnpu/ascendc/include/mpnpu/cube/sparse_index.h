// The 4:2 sparse index (MmadWithSparse, the sparse index matrix and the 4:2 sparse matmul pages),
// shared by the basic API (LoadDataWithSparse / MmadWithSparse, mpnpu/cube/basic.h) and the Matmul
// (mpnpu/cube/matmul_engine.h).
//
// B is given dense: of every 4 consecutive values along K of a column, the (at most) 2 that may be
// non-zero, so K / 2 values a column. The index says where they were: per dense value a 2-bit index,
// four to a byte, the first in the low bits. Of a group of 4 values along K, the first dense value
// came from position idx0 (0-2) and the second from 1 + idx1 (1-3); where that is not after the first
// (a group with one value or none), both came from the first's position. The cube multiplies A's
// values at those positions, so C = A x B with B's zeros skipped.
//
// The index bytes lie as B's fractals do (Zn): a fractal of 16 columns x 32 dense rows is 128 bytes,
// a column's 8 bytes in a row; the fractals along N first, then along K.
#ifndef MPNPU_CUBE_SPARSE_INDEX_H
#define MPNPU_CUBE_SPARSE_INDEX_H

#include <cstdint>
#include <vector>

#include "../native/rt.h"

namespace mpnpu {

// The byte (from the first of fractal 0) holding dense row k of column n, with n1 fractals along N.
inline int64_t sparse_index_byte(int64_t k, int64_t n, int64_t n1) {
    return ((k / 32) * n1 + n / 16) * 128 + (n % 16) * 8 + (k % 32) / 4;
}

// The 2-bit index of dense row k in its byte.
inline int32_t sparse_index_value(uint8_t byte, int64_t k) { return (byte >> (2 * (k % 4))) & 3; }

// Where along K dense row k came from, given its index ``v`` (0-2); ``first``: the position of the
// group's first value, set by row 2g and read by row 2g + 1.
inline int32_t sparse_position(int64_t k, int32_t v, int32_t& first) {
    const int32_t group = int32_t(k / 2) * 4;
    if (k % 2 == 0) {
        first = v;
        return group + v;
    }
    return group + (first > 1 + v ? first : 1 + v);
}

// Per dense row of column n (``kd`` of them, index fractals from ``idx`` on, n1 along N), the
// position along K of the A value it multiplies; an index of 3 is an error at ``site``.
inline void sparse_positions(const uint8_t* idx, int64_t n, int64_t n1, int64_t kd, std::vector<int32_t>& pos,
                             const Site& site, const char* what) {
    pos.resize(size_t(kd));
    int32_t first = 0;
    for (int64_t k = 0; k < kd; ++k) {
        const int32_t v = sparse_index_value(idx[sparse_index_byte(k, n, n1)], k);
        if (v == 3)
            api_error(site, "%s: the index matrix holds 3 for dense row %lld of column %lld; an index is 0, 1 or 2 "
                            "(the sparse index matrix's page)",
                      what, (long long)k, (long long)n);
        pos[size_t(k)] = sparse_position(k, v, first);
    }
}

}  // namespace mpnpu

#endif  // MPNPU_CUBE_SPARSE_INDEX_H
