"""The matmul's (de)quantisation of C on its way out of L0C against numpy: SetQuantScalar and
SetQuantVector (the uint64_t parameter as their pages build it: the float scale's bits masked with
0xFFFFE000, bit 46 set, a 9-bit offset in bits 37-45 for an int8_t C), int8_t A and B with a half,
bfloat16_t (not on the pages: public kernels use it) or int8_t C and half A and B with an int8_t C,
through MatmulImpl on a cube core and through Matmul driven by a vector core
(kernels/matmul_quant.cpp); a C type that takes no quantisation is an error at the setter's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpnpu.ascendc.matmul_tiling import workspace_bytes
from mpnpu.errors import KernelError
from mpnpu.racecheck import analyze
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks"), pytest.mark.slow]

KERNEL = Path(__file__).parent / "kernels" / "matmul_quant.cpp"
WARN = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")
VECTOR, ITERATE = 1, 2
TYPES = {"int8->half": (0, np.int8, np.float16), "int8->int8": (1, np.int8, np.int8),
         "half->int8": (2, np.float16, np.int8), "int8->int32": (3, np.int8, np.int32),
         "int8->bf16": (4, np.int8, np.uint16)}  # (bfloat16_t as its bits)
M, N, K, BASE = 40, 56, 64, 32  # tails in M and N: the second column of tiles starts at column 32


@pytest.fixture(scope="module")
def kernels():
    from mpnpu.ascendc import compile_kernel

    return {KernelType.AIC: compile_kernel(str(KERNEL), "mm_quant", flags=WARN, kernel_type=KernelType.AIC),
            KernelType.MIX_1_2: compile_kernel(str(KERNEL), "mm_quant", flags=WARN, kernel_type=KernelType.MIX_1_2,
                                               defines={"MPNPU_TEST_CLIENT": "1"})}


def quant_param(scale: float, offset: int | None = None) -> np.uint64:
    """The uint64_t parameter of SetQuantScalar / SetQuantVector, as the pages build it."""
    bits = int(np.array(scale, np.float32).view(np.uint32))
    q = (bits & 0xFFFFE000) | (1 << 46)
    if offset is not None:
        q = (q & 0x4000FFFFFFFF) | ((max(min(offset, 255), -256) & 0x1FF) << 37)
    return np.uint64(q)


def reference(acc: np.ndarray, params: np.ndarray, dst) -> np.ndarray:
    scale = (params.astype(np.uint64) & np.uint64(0xFFFFE000)).astype(np.uint32).view(np.float32)
    off = ((params.astype(np.uint64) >> np.uint64(37)) & np.uint64(0x1FF)).astype(np.int32)
    off = np.where(off >= 256, off - 512, off).astype(np.float32)
    v = acc.astype(np.float32) * scale
    if dst is np.int8:
        return np.clip(np.rint(v + off), -128, 127).astype(np.int8)
    if dst is np.uint16:  # bfloat16_t: float32 rounded to nearest even in its upper 16 bits
        bits = v.view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return v.astype(np.float16)


def run(kernels, types: str, flags: int, kt=KernelType.AIC, seed=0, trace=False):
    code, src, dst = TYPES[types]
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-8, 8, s).astype(src) for s in ((M, K), (K, N)))
    scales = rng.uniform(-0.2, 0.2, N).astype(np.float32) if flags & VECTOR else np.float32([0.0371] * N)
    offsets = rng.integers(-20, 20, N) if dst is np.int8 else [None] * N
    params = np.array([quant_param(s, None if o is None else int(o)) for s, o in zip(scales, offsets)], np.uint64)
    with device(1, kernel_type=kt) as dev:
        # (the parameters travel as int64 with the uint64_t values' bits)
        args = [dev.to_device("a", a), dev.to_device("b", b), dev.to_device("scale", params.view(np.int64)),
                dev.to_device("c", np.zeros((M, N), dst)),
                dev.to_device("workspace", np.zeros(workspace_bytes(1, 1), np.uint8))]
        r = dev.launch_with(LaunchOptions(trace=trace), kernels[kt], *args, M, N, K, BASE, code, flags)
        out = dev.to_host(args[3]).reshape(M, N)
    acc = a.astype(np.int64) @ b.astype(np.int64)
    return out, reference(acc, params if flags & VECTOR else np.full(N, params[0]), dst), r


@pytest.mark.parametrize("types", ["int8->half", "int8->int8", "half->int8", "int8->bf16"])
@pytest.mark.parametrize("flags", [0, VECTOR, VECTOR | ITERATE])
def test_quantised_c_equals_numpy_on_the_cube_core(kernels, types, flags) -> None:
    out, ref, _ = run(kernels, types, flags, seed=flags)
    np.testing.assert_array_equal(out, ref)
    assert len(np.unique(out)) > 10  # the scales and offsets did something


@pytest.mark.parametrize("flags", [0, VECTOR, VECTOR | ITERATE])
def test_quantised_c_through_a_vector_cores_matmul(kernels, flags) -> None:
    out, ref, r = run(kernels, "int8->int8", flags, kt=KernelType.MIX_1_2, seed=5, trace=True)
    np.testing.assert_array_equal(out, ref)
    assert analyze(r.trace) == []


def test_a_c_type_that_takes_no_quantisation_is_an_error_at_the_setter(kernels) -> None:
    line = next(i for i, t in enumerate(KERNEL.read_text().splitlines(), 1) if "// the setter" in t)
    with pytest.raises(KernelError, match=r"Matmul::SetQuantScalar: quantisation takes int8_t A and B") as e:
        run(kernels, "int8->int32", 0)
    assert f"matmul_quant.cpp:{line}" in str(e.value), str(e.value)
