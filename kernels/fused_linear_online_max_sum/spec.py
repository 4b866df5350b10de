"""The contract of npu_fused_linear_online_max_sum (FLOMS): names, shapes, dtypes, valid inputs.

One source of truth (docs/operator-floms.md) shared by the golden, the case generator, the kernel's host side and the
reports, so that none of them re-derives a shape or a dtype rule on its own and drifts.

Arrays are numpy *storage* arrays: float16 as ``np.float16``, bfloat16 as ``np.uint16`` holding the
bfloat16 bits (see :mod:`mpnpu.runtime.dtypes`). A uint16 array is therefore only bfloat16 because the caller
says so with ``input_dtype="bfloat16"``; that is why every function here takes the dtype by name.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from mpnpu import DType, UsageError, get_dtype

OUTPUT_NAMES = (
    "logits_max",
    "sum_exp_logits",
    "predicted_logits",
    "target_mask",
    "masked_target",
    "vocab_parallel_logits",
)
INPUT_DTYPES = ("float16", "bfloat16")
TARGET_DTYPES = ("int32", "int64")
MAX_H = 65534

OutputSpecs = dict[str, tuple[tuple[int, ...], str]]


def input_dtype_of(name: Any) -> DType:
    """Resolve a supported input dtype (aliases such as ``"bf16"`` accepted) or raise UsageError."""
    return _supported(name, INPUT_DTYPES, "input")


def target_dtype_of(name: Any) -> DType:
    """Resolve a supported target dtype (name or numpy dtype) or raise UsageError."""
    return _supported(name, TARGET_DTYPES, "target")


def _supported(name: Any, allowed: tuple[str, ...], what: str) -> DType:
    try:
        dtype = get_dtype(name)
    except TypeError:
        dtype = None
    if dtype is None or dtype.name not in allowed:
        raise UsageError(f"{what} dtype {name!s} is not supported; use one of {', '.join(allowed)}")
    return dtype


def mask_bytes(bt: int) -> int:
    """Length of target_mask: one bit per row, rounded up to whole bytes."""
    return (bt + 7) // 8


def output_specs(bt: int, v: int, input_dtype: Any, target_dtype: Any, return_logits: bool) -> OutputSpecs:
    """Shape and dtype name of every output, in OUTPUT_NAMES order (docs/operator-floms.md, outputs).

    vocab_parallel_logits is [BT, V] in the input dtype when ``return_logits``, else shape (0,): in
    memory-saving mode the op does not materialise the logits at all.
    """
    in_dt = input_dtype_of(input_dtype)
    tgt_dt = target_dtype_of(target_dtype)
    for name, value in (("bt", bt), ("v", v)):
        if not _is_int(value) or value < 0:
            raise UsageError(f"{name} must be a non-negative integer, got {value!r}")
    bt, v = int(bt), int(v)
    return {
        "logits_max": ((bt,), "float32"),
        "sum_exp_logits": ((bt,), "float32"),
        "predicted_logits": ((bt,), "float32"),
        "target_mask": ((mask_bytes(bt),), "uint8"),
        "masked_target": ((bt,), tgt_dt.name),
        "vocab_parallel_logits": (((bt, v) if return_logits else (0,)), in_dt.name),
    }


def check_inputs(
    input: Any,
    weight: Any,
    target: Any,
    vocab_start_index: Any,
    vocab_end_index: Any,
    input_dtype: Any,
    target_dtype: Any = None,
) -> None:
    """Raise UsageError, with a one-line message, unless the arguments are a valid FLOMS call.

    ``target_dtype`` None means "whatever target's numpy dtype is" (still int32 or int64). Besides
    the input table of docs/operator-floms.md this rejects ``vocab_end_index - vocab_start_index > V``:
    the op's documentation bounds the end by start + V, and a target past the shard's last column has
    no logit to gather.
    """
    in_dt = input_dtype_of(input_dtype)
    _check_array("input", input, 2, "[BT, H]")
    _check_array("weight", weight, 2, "[V, H]")
    _check_array("target", target, 1, "[BT]")
    _check_storage("input", input, in_dt)
    _check_storage("weight", weight, in_dt)
    tgt_dt = target_dtype_of(target.dtype if target_dtype is None else target_dtype)
    _check_storage("target", target, tgt_dt)

    bt, h = input.shape
    v, h_w = weight.shape
    if h_w != h:
        raise UsageError(f"weight has H={h_w} but input has H={h}: weight must be [V, H] with input [BT, H]")
    if target.shape[0] != bt:
        raise UsageError(f"target has {target.shape[0]} rows but input has BT={bt}")
    if v == 0:
        raise UsageError("weight has V=0 rows; the vocab shard must not be empty")
    if h > MAX_H:
        raise UsageError(f"H={h} exceeds the op's limit of {MAX_H}")
    _check_indices(vocab_start_index, vocab_end_index, v)


def _check_array(name: str, value: Any, ndim: int, shape_text: str) -> None:
    if not isinstance(value, np.ndarray):
        raise UsageError(f"{name} must be a numpy array, got {type(value).__name__}")
    if value.ndim != ndim:
        raise UsageError(f"{name} must be {ndim}-D {shape_text}, got shape {value.shape}")


def _check_storage(name: str, array: np.ndarray, dtype: DType) -> None:
    if array.dtype != dtype.storage:
        raise UsageError(
            f"{name} is stored as {array.dtype} but {dtype.name} is stored as {dtype.storage}"
            f" (input and weight must share the input dtype)"
        )


def _check_indices(start: Any, end: Any, v: int) -> None:
    for name, value in (("vocab_start_index", start), ("vocab_end_index", end)):
        if not _is_int(value):
            raise UsageError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    start, end = int(start), int(end)
    if start < 0:
        raise UsageError(f"vocab_start_index={start} is negative")
    if start > end:
        raise UsageError(f"vocab_start_index={start} is greater than vocab_end_index={end}")
    if end - start > v:
        raise UsageError(f"vocab shard [{start}, {end}) has {end - start} ids but weight has only V={v} rows")


def _is_int(value: Any) -> bool:
    # bool is an Integral in Python but never a meaningful vocab index.
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
