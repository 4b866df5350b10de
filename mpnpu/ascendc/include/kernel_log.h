// kernel_log.h: CPU-debug builds of public unit tests include it for KERNEL_LOG (a kernel's log line,
// in mpnpu one line on stderr naming the file:line). mpnpu defines KERNEL_LOG with the kernel API.
#ifndef MPNPU_KERNEL_LOG_H
#define MPNPU_KERNEL_LOG_H
#include "kernel_operator.h"
#endif
