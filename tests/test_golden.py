"""The FLOMS golden against hand-computed cases, and the operator contract (spec.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpnpu.errors import UsageError
from mpnpu.kernels.fused_linear_online_max_sum.golden import golden, logits_abs_max
from mpnpu.kernels.fused_linear_online_max_sum.spec import (
    MAX_H,
    OUTPUT_NAMES,
    check_inputs,
    output_specs,
)
from mpnpu.runtime.dtypes import from_float32, get_dtype

F16 = np.float16


def _small(target: list[int], target_dtype=np.int32) -> tuple:
    """L = [[1, 0, -1], [0, 2, 1], [1, 2, 0]] for BT=3, H=2, V=3 (all exact in float16)."""
    x = np.array([[1, 0], [0, 1], [1, 1]], dtype=F16)
    w = np.array([[1, 0], [0, 2], [-1, 1]], dtype=F16)
    return x, w, np.array(target, dtype=target_dtype)


def test_small_case_by_hand() -> None:
    x, w, t = _small([10, 12, 13])  # shard [10, 13): rows 0, 1 in (cols 0, 2); 13 == end is out
    out = golden(x, w, t, 10, 13, "float16")
    assert out["logits_max"].tolist() == [1.0, 2.0, 2.0]
    e1, e2 = math.exp(-1), math.exp(-2)
    assert out["sum_exp_logits"] == pytest.approx([1 + e1 + e2, e2 + 1 + e1, e1 + 1 + e2], rel=1e-7)
    assert out["masked_target"].tolist() == [0, 2, 0]
    assert out["predicted_logits"].tolist() == [0.0, -1.0, 0.0]
    # rows 0, 1 in, row 2 out; padding rows act as target 0, which is < start: masked. LSB first.
    assert out["target_mask"].tolist() == [0b11111100]
    assert out["vocab_parallel_logits"].shape == (0,)


def test_output_dtypes_and_shapes_follow_the_spec() -> None:
    x, w, t = _small([10, 12, 13], np.int64)
    out = golden(x, w, t, 10, 13, "float16", return_logits=True)
    specs = output_specs(3, 3, "float16", "int64", True)
    assert tuple(out) == OUTPUT_NAMES
    for name, (shape, dtype) in specs.items():
        assert out[name].shape == shape, name
        assert out[name].dtype == get_dtype(dtype).storage, name
    assert out["vocab_parallel_logits"].tolist() == [[1, 0, -1], [0, 2, 1], [1, 2, 0]]


@pytest.mark.parametrize("target_dtype", [np.int32, np.int64])
def test_masked_target_keeps_target_dtype(target_dtype) -> None:
    x, w, t = _small([10, 12, 13], target_dtype)
    assert golden(x, w, t, 10, 13, "float16")["masked_target"].dtype == target_dtype


def test_end_is_exclusive_and_start_inclusive() -> None:
    x, w, _ = _small([0, 0, 0])
    for targets, expected_mask in (([9, 10, 12], [1, 0, 0]), ([13, 12, 10], [1, 0, 0])):
        out = golden(x, w, np.array(targets, np.int64), 10, 13, "float16")
        bits = np.unpackbits(out["target_mask"], bitorder="little")[:3]
        assert bits.tolist() == expected_mask, targets


@pytest.mark.parametrize(
    "start, end, expected",
    [
        # mask rows [1,0,0,1,0,1,1,0 | 1,0] then 6 padding bits
        (100, 200, [0b01101001, 0b11111101]),  # target 0 < start: padding bits set
        (0, 200, [0b01101001, 0b00000001]),  # target 0 inside: padding bits clear
    ],
)
def test_mask_bits_lsb_first_with_padding(start: int, end: int, expected: list[int]) -> None:
    inside, outside = start + 1, end + 5
    pattern = [1, 0, 0, 1, 0, 1, 1, 0, 1, 0]
    target = np.array([outside if m else inside for m in pattern], np.int32)
    x = np.ones((10, 2), F16)
    w = np.ones((end - start, 2), F16)
    out = golden(x, w, target, start, end, "float16")
    assert out["target_mask"].tolist() == expected


def test_empty_shard_masks_every_row_and_padding() -> None:
    x, w, t = _small([0, 1, 2])
    out = golden(x, w, t, 0, 0, "float16")  # [0, 0) contains nothing, not even target 0
    assert out["target_mask"].tolist() == [0xFF]
    assert out["predicted_logits"].tolist() == [0.0, 0.0, 0.0]


def test_h_zero() -> None:
    x, w = np.zeros((2, 0), F16), np.zeros((5, 0), F16)
    out = golden(x, w, np.array([1, 7], np.int64), 0, 5, "float16", return_logits=True)
    assert out["logits_max"].tolist() == [0.0, 0.0]
    assert out["sum_exp_logits"].tolist() == [5.0, 5.0]
    assert out["predicted_logits"].tolist() == [0.0, 0.0]
    assert out["vocab_parallel_logits"].tolist() == [[0.0] * 5] * 2
    assert out["masked_target"].tolist() == [1, 0]


@pytest.mark.parametrize("return_logits", [False, True])
def test_bt_zero(return_logits: bool) -> None:
    x, w = np.zeros((0, 4), F16), np.ones((3, 4), F16)
    out = golden(x, w, np.zeros(0, np.int32), 0, 3, "float16", return_logits)
    for name in ("logits_max", "sum_exp_logits", "predicted_logits", "target_mask", "masked_target"):
        assert out[name].shape == (0,), name
    assert out["vocab_parallel_logits"].shape == ((0, 3) if return_logits else (0,))


def test_bfloat16_input_and_no_rounding_of_l_outside_vocab_logits() -> None:
    # L[0, 0] = 1 + 2⁻⁸: exact in float32, a tie between two bfloat16 values (rounds to even: 1.0).
    x = from_float32(np.array([[1.0, 2.0**-8]]), "bfloat16")
    w = from_float32(np.array([[1.0, 1.0], [0.5, 0.0]]), "bfloat16")
    out = golden(x, w, np.array([1], np.int64), 0, 2, "bfloat16", return_logits=True)
    assert out["logits_max"].tolist() == [1.0 + 2.0**-8]  # not the bfloat16-rounded 1.0
    assert out["predicted_logits"].tolist() == [0.5 - (1.0 + 2.0**-8)]
    assert out["vocab_parallel_logits"].dtype == np.uint16
    assert out["vocab_parallel_logits"].tolist() == [[0x3F80, 0x3F00]]  # bfloat16 1.0 and 0.5


def test_float16_logits_are_not_rounded_to_float16() -> None:
    x = np.array([[1.0, 2.0**-12]], F16)  # 1 + 2⁻¹² is below float16 resolution at 1
    w = np.array([[1.0, 1.0]], F16)
    out = golden(x, w, np.array([0], np.int32), 0, 1, "float16", return_logits=True)
    assert out["logits_max"].tolist() == [1.0 + 2.0**-12]
    assert out["vocab_parallel_logits"].tolist() == [[1.0]]


def test_logits_abs_max() -> None:
    x, w, _ = _small([0, 0, 0])
    assert logits_abs_max(x, w, "float16") == 2.0
    assert logits_abs_max(-x, w, "float16") == 2.0
    assert logits_abs_max(np.zeros((0, 2), F16), w, "float16") == 0.0


def test_output_specs_memory_saving() -> None:
    specs = output_specs(9, 300, "bf16", "int32", False)
    assert specs["target_mask"] == ((2,), "uint8")
    assert specs["masked_target"] == ((9,), "int32")
    assert specs["vocab_parallel_logits"] == ((0,), "bfloat16")
    assert specs["logits_max"] == ((9,), "float32")


def _good() -> dict:
    return dict(
        input=np.zeros((4, 8), F16),
        weight=np.zeros((16, 8), F16),
        target=np.zeros(4, np.int64),
        vocab_start_index=16,
        vocab_end_index=32,
        input_dtype="float16",
        target_dtype="int64",
    )


@pytest.mark.parametrize(
    "change, words",
    [
        (dict(input=np.zeros((4, 8, 1), F16)), "input must be 2-D"),
        (dict(weight=np.zeros(8, F16)), "weight must be 2-D"),
        (dict(target=np.zeros((4, 1), np.int64)), "target must be 1-D"),
        (dict(input=[[0.0] * 8] * 4), "numpy array"),
        (dict(weight=np.zeros((16, 7), F16)), "H=7"),
        (dict(target=np.zeros(5, np.int64)), "5 rows"),
        (dict(weight=np.zeros((0, 8), F16), vocab_end_index=16), "V=0"),
        (
            dict(input=np.zeros((0, MAX_H + 1), F16), weight=np.zeros((16, MAX_H + 1), F16),
                 target=np.zeros(0, np.int64)),
            "65534",
        ),
        (dict(input_dtype="float32"), "not supported"),
        (dict(input_dtype="nonsense"), "not supported"),
        (dict(input=np.zeros((4, 8), np.float32)), "stored as float32"),
        (dict(weight=np.zeros((16, 8), np.uint16)), "weight is stored as uint16"),
        (dict(input_dtype="bfloat16"), "input is stored as float16"),
        (dict(target=np.zeros(4, np.int16), target_dtype=None), "target dtype int16"),
        (dict(target=np.zeros(4, np.int32)), "target is stored as int32"),
        (dict(target_dtype="uint8"), "target dtype uint8"),
        (dict(vocab_start_index=-1), "negative"),
        (dict(vocab_start_index=33), "greater than"),
        (dict(vocab_start_index=16.0), "must be an integer"),
        (dict(vocab_end_index="32"), "must be an integer"),
        (dict(vocab_end_index=True), "must be an integer"),
        (dict(vocab_end_index=33), "only V=16"),
    ],
)
def test_check_inputs_rejects(change: dict, words: str) -> None:
    args = {**_good(), **change}
    with pytest.raises(UsageError) as err:
        check_inputs(**args)
    message = str(err.value)
    assert words in message and "\n" not in message


def test_check_inputs_accepts_valid_and_edge_calls() -> None:
    check_inputs(**_good())
    check_inputs(**{**_good(), "vocab_start_index": np.int64(16), "vocab_end_index": 16})  # empty shard
    check_inputs(**{**_good(), "input": np.zeros((0, 8), F16), "target": np.zeros(0, np.int64)})  # BT = 0
    check_inputs(**{**_good(), "input": np.zeros((4, 0), F16), "weight": np.zeros((16, 0), F16)})  # H = 0
    bf = from_float32(np.zeros((4, 8)), "bfloat16")
    check_inputs(**{**_good(), "input": bf, "weight": from_float32(np.zeros((16, 8)), "bfloat16"),
                    "input_dtype": "bfloat16"})


def test_golden_validates_its_inputs() -> None:
    x, w, t = _small([0, 0, 0])
    with pytest.raises(UsageError):
        golden(x, w, t, 5, 4, "float16")
