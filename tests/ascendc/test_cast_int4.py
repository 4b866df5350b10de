"""Cast half -> int4b_t (mpnpu/vector/cast.h): rounded as the mode says, saturated to [-8, 7], two to a
byte with the even element in the low 4 bits; count and level-0 forms; another source type is an
error at the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu.errors import KernelError
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import kernel, line_of, needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]

# RoundMode numbers (mpnpu/vector/params.h order) and numpy roundings
MODES = {"CAST_RINT": (1, np.rint), "CAST_FLOOR": (2, np.floor), "CAST_CEIL": (3, np.ceil),
         "CAST_TRUNC": (5, np.trunc)}


def _reference(x: np.ndarray, fn) -> np.ndarray:
    v = np.clip(fn(x.astype(np.float64)), -8, 7).astype(np.int64) & 0xF
    return (v[0::2] | (v[1::2] << 4)).astype(np.uint8)


def _run(form: int, mode: int):
    x = (np.random.default_rng(3).uniform(-12, 12, 256)).astype(np.float16)
    with device(1, kernel_type=KernelType.AIV) as dev:
        xd = dev.to_device("x", x)
        y = dev.to_device("y", np.zeros(128, np.uint8))
        dev.launch(kernel("cast_int4.cpp", "cast_int4"), xd, y, form, mode)
        return x, dev.to_host(y)


@pytest.mark.parametrize("form", [0, 1], ids=["count", "level0"])
@pytest.mark.parametrize("name", list(MODES))
def test_half_to_int4_rounds_saturates_and_packs(form: int, name: str) -> None:
    mode, fn = MODES[name]
    x, got = _run(form, mode)
    np.testing.assert_array_equal(got, _reference(x, fn))


def test_int4_from_float_is_an_error_at_the_line() -> None:
    with pytest.raises(KernelError) as ei:
        _run(2, 1)
    msg = str(ei.value)
    assert "Cast: float -> int4b_t is not a supported conversion (it takes half)" in msg, msg
    assert f"cast_int4.cpp:{line_of('cast_int4.cpp', '// float -> int4b_t')}" in msg, msg


def test_a_global_tensor_of_int4b_t_indexes_two_values_to_a_byte() -> None:
    """``gm[n]`` of a GlobalTensor<int4b_t> starts n / 2 bytes in (ops-nn's dynamic_quant_v2 writes its
    int4 rows at gm[row * rowLen], each core's rows then in its own bytes); before, n bytes."""
    k = kernel("int4_gm.cpp", "int4_gm")
    with device(1, kernel_type=KernelType.AIV) as dev:
        y, out = dev.to_device("y", np.zeros(2048, np.int8)), dev.to_device("out", np.full(4, -1, np.int64))
        dev.launch(k, y, out)
        assert dev.to_host(out).tolist() == [1024, 3, 1024, 3]


def test_a_local_tensor_of_int4b_t_counts_two_values_to_a_byte() -> None:
    """A LocalTensor<int4b_t>'s size, offsets and casts count int4b_t values (ops-nn's flat_quant lays
    its UB out as ``int4Tensor[DATA_COUNT]``); before, one a byte, and its next buffer overlapped."""
    k = kernel("int4_local.cpp", "int4_local")
    with device(1, kernel_type=KernelType.AIV) as dev:
        out = dev.to_device("out", np.full(6, -1, np.int64))
        y = dev.to_device("y", np.full(256, 0xFF, np.uint8))
        dev.launch(k, out, y)
        assert dev.to_host(out).tolist() == [8192, 4096, 1024, 2048, 256, 515]
        got = dev.to_host(y)
        assert (got[:128] == 0x11).all() and (got[128:] == 0xFF).all()  # 256 values: 128 bytes, not 256
