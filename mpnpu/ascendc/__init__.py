"""The C++ front end: real, unchanged Ascend C kernels on mpnpu's multi-process device.

- ``include/``: an independent, header-only implementation of the Ascend C kernel API
  (``kernel_operator.h`` and what it brings in), written from the documented behaviour of each
  call; every call reaches its core through the kernel-context seam (:mod:`mpnpu.runtime.kcontext`).
- :func:`compile_kernel`: build a kernel's sources into a library (cached), ready for
  ``Device.launch`` as a :class:`CompiledKernel`.

An independent implementation for running and debugging kernels written for Ascend devices on a
CPU; not affiliated with or endorsed by Huawei. Ascend and CANN are Huawei's trademarks.
"""

from __future__ import annotations

from .build.compiler import CompileError, NoCompilerError
from .kernel import CompiledKernel, compile_kernel, detect_kernel_type

__all__ = ["CompileError", "CompiledKernel", "NoCompilerError", "compile_kernel", "detect_kernel_type"]
