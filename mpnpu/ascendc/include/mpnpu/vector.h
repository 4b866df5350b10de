// Vector instructions (PIPE_V): every header of mpnpu/vector/.
#ifndef MPNPU_VECTOR_H
#define MPNPU_VECTOR_H

#include "vector/basic.h"

#endif  // MPNPU_VECTOR_H
