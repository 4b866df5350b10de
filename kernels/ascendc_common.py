"""What the gallery's Ascend C twins (kernels/<op>/ascendc/) share in their operators: the C++
element type of a case's dtype (for the ``-DDTYPE_*`` defines) and the kernel's argument order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mpnpu import Case

#: a case's dtype name -> the Ascend C element type a ``-DDTYPE_X=...`` define names
CXX_TYPES = {"float16": "half", "bfloat16": "bfloat16_t", "float32": "float"}


def dtype_defines(define: str, tensor: str) -> Callable[[Case], dict[str, str]]:
    """``defines`` for an operator: ``{define: the C++ type of the case's tensor}`` (one library per type)."""

    def defines(case: Case) -> dict[str, str]:
        return {define: CXX_TYPES[case.dtypes[tensor]]}

    return defines


def tensors_then_tiling(case: Case, tensors: Mapping[str, Any]) -> list[Any]:
    """The kernel's arguments: every GM tensor of the case (inputs, outputs, workspace) then the
    tiling; the case's scalar parameters travel in the tiling struct instead."""
    return [tensors[n] for n in (*case.inputs, *case.outputs, *case.workspace)] + [tensors["tiling"]]

