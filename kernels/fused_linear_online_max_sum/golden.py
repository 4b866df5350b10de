"""CPU golden for npu_fused_linear_online_max_sum, written straight from the formulas of docs/operator-floms.md.

Deliberately naive and independent of the kernel: no tiling, no online max/sum, no device rounding.
Everything is computed in float64 from the stored inputs and cast once to the output dtype, so the
golden's own error is far below any tolerance and a mismatch always points at the kernel. In
particular L is NOT rounded to the input dtype before max/exp (the device does that in memory-saving
mode); :mod:`.precision` accounts for the difference in its tolerances instead.
"""

from __future__ import annotations

import numpy as np

from mpnpu import from_float32, to_float32

from .spec import check_inputs, input_dtype_of

Outputs = dict[str, np.ndarray]


def logits(input: np.ndarray, weight: np.ndarray, input_dtype: str) -> np.ndarray:
    """L = input @ weightᵀ in float64 from the storage arrays, shape [BT, V].

    Widening to float32 is exact for float16/bfloat16 and float64 products of such values are exact,
    so only the sum rounds, at float64 precision.
    """
    x = to_float32(input, input_dtype).astype(np.float64)
    w = to_float32(weight, input_dtype).astype(np.float64)
    # (BT, 0) @ (0, V) is an all-zero (BT, V): exactly the operator's H = 0 rule.
    return x @ w.T


def logits_abs_max(input: np.ndarray, weight: np.ndarray, input_dtype: str) -> float:
    """max |L| over the case (0.0 when L is empty); scales the storage-rounding tolerance."""
    lg = logits(input, weight, input_dtype)
    return float(np.abs(lg).max()) if lg.size else 0.0


def target_out_of_shard(target: np.ndarray, vocab_start_index: int, vocab_end_index: int) -> np.ndarray:
    """mask[b] = target[b] < start or target[b] ≥ end (end exclusive), as a bool array."""
    t = np.asarray(target, dtype=np.int64)
    return (t < vocab_start_index) | (t >= vocab_end_index)


def pack_mask(mask: np.ndarray, vocab_start_index: int, vocab_end_index: int) -> np.ndarray:
    """Bit-pack a row mask LSB first; padding bits of the last byte are computed as for target 0."""
    bt = mask.shape[0]
    pad = (-bt) % 8
    pad_bit = bool(target_out_of_shard(np.zeros(1, np.int64), vocab_start_index, vocab_end_index)[0])
    bits = np.concatenate([mask.astype(bool), np.full(pad, pad_bit)])
    return np.packbits(bits, bitorder="little")


def golden(
    input: np.ndarray,
    weight: np.ndarray,
    target: np.ndarray,
    vocab_start_index: int,
    vocab_end_index: int,
    input_dtype: str,
    return_logits: bool = False,
) -> Outputs:
    """Every FLOMS output for one call, keyed by spec.OUTPUT_NAMES, in the device's output dtypes.

    Float outputs are float32; masked_target has target's dtype; target_mask is uint8 bit-packed;
    vocab_parallel_logits is L rounded to the input dtype (storage array) when ``return_logits``,
    else an empty (0,) array. Raises UsageError for invalid arguments (see spec.check_inputs).
    """
    check_inputs(input, weight, target, vocab_start_index, vocab_end_index, input_dtype)
    in_dt = input_dtype_of(input_dtype)
    start, end = int(vocab_start_index), int(vocab_end_index)
    lg = logits(input, weight, in_dt.name)
    bt = lg.shape[0]

    logits_max = lg.max(axis=1)  # V > 0 is guaranteed, so every row has a max
    sum_exp = np.exp(lg - logits_max[:, None]).sum(axis=1)
    mask = target_out_of_shard(target, start, end)
    masked = np.where(mask, 0, target.astype(np.int64) - start)
    predicted = np.where(mask, 0.0, lg[np.arange(bt), masked] - logits_max)

    if return_logits:
        # Via float32, as the device casts its float32 accumulator, not a float64 value.
        vocab_logits = from_float32(lg.astype(np.float32), in_dt)
    else:
        vocab_logits = np.empty((0,), dtype=in_dt.storage)
    return {
        "logits_max": logits_max.astype(np.float32),
        "sum_exp_logits": sum_exp.astype(np.float32),
        "predicted_logits": predicted.astype(np.float32),
        "target_mask": pack_mask(mask, start, end),
        "masked_target": masked.astype(target.dtype),
        "vocab_parallel_logits": vocab_logits,
    }
