// The include path of the library call kernels name; mpnpu declares it in kernel_operator.h.
#include "../../kernel_operator.h"
