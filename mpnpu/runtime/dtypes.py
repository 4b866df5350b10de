"""Device data types, with bfloat16 emulated on uint16 storage.

numpy has no bfloat16, so a bfloat16 tensor is stored as uint16 holding the top 16 bits of a
float32. Conversion from float32 rounds to nearest, ties to even, as the device's Cast does by
default; NaN stays NaN (quiet), infinities stay infinite.

Every GM tensor and local tensor carries a :class:`DType`; ``dtype.storage`` is the numpy dtype of
its bytes. Use :func:`to_float32` / :func:`from_float32` to compute on any float type the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

import numpy as np

from mpnpu.errors import DTypeError


@dataclass(frozen=True)
class DType:
    """A device data type: its name and the numpy dtype its bytes are stored as."""

    name: str
    storage: np.dtype
    is_float: bool

    @property
    def itemsize(self) -> int:
        return self.storage.itemsize

    @property
    def unit_roundoff(self) -> float:
        """Half the distance from 1.0 to the next value: the relative rounding error bound."""
        if not self.is_float:
            return 0.0
        return _UNIT_ROUNDOFF[self.name]

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[Callable[[DTypeLike], DType], tuple[str]]:
        # Unpickle to the registry instance so ``is`` comparisons keep working across processes.
        return (get_dtype, (self.name,))


_UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24, "float64": 2.0**-53}

float16 = DType("float16", np.dtype(np.float16), True)
bfloat16 = DType("bfloat16", np.dtype(np.uint16), True)
float32 = DType("float32", np.dtype(np.float32), True)
float64 = DType("float64", np.dtype(np.float64), True)
int8 = DType("int8", np.dtype(np.int8), False)
uint8 = DType("uint8", np.dtype(np.uint8), False)
int16 = DType("int16", np.dtype(np.int16), False)
uint16 = DType("uint16", np.dtype(np.uint16), False)
int32 = DType("int32", np.dtype(np.int32), False)
uint32 = DType("uint32", np.dtype(np.uint32), False)
int64 = DType("int64", np.dtype(np.int64), False)

_REGISTRY: dict[str, DType] = {
    d.name: d for d in (float16, bfloat16, float32, float64, int8, uint8, int16, uint16, int32, uint32, int64)
}
_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}

DTypeLike = Union[DType, str, np.dtype, type]

#: what get_dtype answered for a numpy dtype or scalar type it has seen (few: the types arrays have)
_BY_NUMPY: dict[Any, DType] = {}
#: what get_dtype answered for a name it has seen, as written (every GM allocation asks by name)
_BY_NAME: dict[str, DType] = {}


def get_dtype(spec: DTypeLike) -> DType:
    """Return the :class:`DType` for a name (``"bfloat16"``, ``"bf16"``), a numpy dtype or a DType.

    A numpy uint16 dtype means uint16, never bfloat16: bfloat16 must be asked for by name.
    """
    if type(spec) is str:
        hit = _BY_NAME.get(spec)
        if hit is not None:
            return hit
    if isinstance(spec, DType):
        return spec
    if isinstance(spec, (np.dtype, type)):
        hit = _BY_NUMPY.get(spec)
        if hit is not None:
            return hit
    if isinstance(spec, str):
        key = _ALIASES.get(spec.lower(), spec.lower())
        if key in _REGISTRY:
            if type(spec) is str and len(_BY_NAME) < 256:  # (names come from code: few; bounded anyway)
                _BY_NAME[spec] = _REGISTRY[key]
            return _REGISTRY[key]
        raise DTypeError(f"unknown dtype {spec!r}; known: {', '.join(sorted(_REGISTRY))}")
    try:
        np_dtype = np.dtype(spec)
    except TypeError:
        raise DTypeError(f"unknown dtype {spec!r}") from None
    if np_dtype.name in _REGISTRY:
        found = _REGISTRY[np_dtype.name]
        if isinstance(spec, (np.dtype, type)):  # (a numpy dtype's name is computed in Python: every host copy asks)
            _BY_NUMPY[spec] = found
        return found
    raise DTypeError(f"dtype {np_dtype} is not supported on the device")


def float32_to_bfloat16_bits(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest, ties to even); return the uint16 bit patterns."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    bits = f.view(np.uint32)
    # Adding 0x7FFF plus the lowest kept bit rounds to nearest with ties to even; the carry may
    # ripple into the exponent, which is exactly how overflow to infinity happens. (In place on one
    # temporary: the cube converts every tile it stores.)
    t = bits >> 16
    t &= 1
    t += 0x7FFF
    t += bits
    t >>= 16
    rounded = t.astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        # Keep NaN a NaN: force a quiet-NaN mantissa bit (rounding could carry it away).
        rounded[nan] = ((bits[nan] >> 16) | 0x0040).astype(np.uint16)
    return rounded.reshape(np.shape(x))


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widen bfloat16 bit patterns (uint16) to float32 exactly."""
    b = np.ascontiguousarray(bits, dtype=np.uint16)
    wide = b.astype(np.uint32)
    wide <<= 16
    return wide.view(np.float32).reshape(np.shape(bits))


def to_float32(values: np.ndarray, dtype: DTypeLike) -> np.ndarray:
    """Interpret ``values`` (stored as ``dtype``) and return them as float32."""
    d = get_dtype(dtype)
    if d is bfloat16:
        return bfloat16_bits_to_float32(values)
    return np.asarray(values).astype(np.float32)


def from_float32(values: np.ndarray, dtype: DTypeLike) -> np.ndarray:
    """Convert float32 (or any real) values to the storage of ``dtype``, rounding to nearest even."""
    d = get_dtype(dtype)
    if d is bfloat16:
        return float32_to_bfloat16_bits(np.asarray(values, dtype=np.float32))
    return np.asarray(values).astype(d.storage)


def round_to(values: np.ndarray, dtype: DTypeLike) -> np.ndarray:
    """Round float values to ``dtype`` and back to float32: what storing them in ``dtype`` does."""
    return to_float32(from_float32(values, dtype), dtype)
