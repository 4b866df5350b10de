// Placeholder count-form vector instructions (to be replaced by the full vector headers).
#ifndef MPNPU_VECTOR_BASIC_H
#define MPNPU_VECTOR_BASIC_H

#include "../rt.h"
#include "../tensor.h"

namespace AscendC {

template <typename T>
inline void Add(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t count,
                MPNPU_SITE) {
    a.mpnpu_touch('R', mpnpu::P_V, 0, uint64_t(count), site, "Add");
    b.mpnpu_touch('R', mpnpu::P_V, 0, uint64_t(count), site, "Add");
    dst.mpnpu_touch('W', mpnpu::P_V, 0, uint64_t(count), site, "Add");
    T* d = dst.mpnpu_addr();
    const T* x = a.mpnpu_addr();
    const T* y = b.mpnpu_addr();
    for (int32_t i = 0; i < count; ++i) d[i] = T(float(x[i]) + float(y[i]));
}

}  // namespace AscendC

#endif  // MPNPU_VECTOR_BASIC_H
