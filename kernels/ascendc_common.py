"""What the gallery's Ascend C twins (kernels/<op>/ascendc/) share in their operators: the C++
element type of a case's dtype (for the ``-DDTYPE_*`` defines) and the kernel's argument order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mpnpu.ascendc.matmul_tiling import as_fields, matmul_tiling
from mpnpu.harness.kernel_operator import Case

#: a case's dtype name -> the Ascend C element type a ``-DDTYPE_X=...`` define names
CXX_TYPES = {"float16": "half", "bfloat16": "bfloat16_t", "float32": "float"}

#: what the host's matmul tiling helper needs of an element type (its size)
TILING_DTYPES = {"float16": "float16", "bfloat16": "float16", "float32": "float32"}


def dtype_defines(define: str, tensor: str) -> Callable[[Case], dict[str, str]]:
    """``defines`` for an operator: ``{define: the C++ type of the case's tensor}`` (one library per type)."""

    def defines(case: Case) -> dict[str, str]:
        return {define: CXX_TYPES[case.dtypes[tensor]]}

    return defines


def tensors_then_tiling(case: Case, tensors: Mapping[str, Any]) -> list[Any]:
    """The kernel's arguments: every GM tensor of the case (inputs, outputs, workspace) then the
    tiling; the case's scalar parameters travel in the tiling struct instead."""
    return [tensors[n] for n in (*case.inputs, *case.outputs, *case.workspace)] + [tensors["tiling"]]


def cube_fields(m: int, n: int, k: int, dtype: str, **base: int) -> dict[str, int]:
    """The ``cube`` member (a TCubeTiling) of a tiling struct, for C[m, n] = A[m, k] @ B[k, n] with
    A and B in ``dtype`` and a float32 C, on one core (the kernel sets each core's shape itself);
    ``base``: base_m / base_n / base_k, as :func:`mpnpu.ascendc.matmul_tiling.matmul_tiling` takes them."""
    return as_fields(matmul_tiling(m, n, k, in_dtype=TILING_DTYPES[dtype], out_dtype="float32", **base), "cube")
