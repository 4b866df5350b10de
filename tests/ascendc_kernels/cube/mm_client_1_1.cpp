// The Matmul client kernel of mm_client.cpp as a mix 1:1 kernel: one vector core per cube core, so
// the server's rounds have one client.
#define MM_CLIENT_KERNEL_TYPE KERNEL_TYPE_MIX_AIC_1_1
#include "mm_client.cpp"
