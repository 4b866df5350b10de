"""The precompiled header of mpnpu's headers: used only where including them first changes nothing,
the same library and the same errors with it as without."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from mpnpu.ascendc import CompileError, compile_kernel
from mpnpu.ascendc.build import pch
from mpnpu.ascendc.build.compiler import INCLUDE_DIR, find_compiler, headers_digest
from mpnpu.ascendc.build.compiler import _compiler_identity as compiler_identity
from mpnpu.runtime.device import Device
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx

IDENTIFIERS, PROVIDED = pch.header_facts(INCLUDE_DIR, headers_digest())


def safe(text: str, whole: bool = False) -> bool:
    return pch.safe_prefix(text, IDENTIFIERS, PROVIDED, whole)


def test_a_tiling_header_that_defines_a_macro_the_headers_test_gets_no_precompiled_header() -> None:
    assert "GET_TILING_DATA" in IDENTIFIERS  # our headers define it unless the tiling header did
    assert not safe("#pragma once\n#define GET_TILING_DATA(t, p) Tiling t\n", whole=True)
    assert not safe("#undef likely\n", whole=True)


def test_include_guards_structs_and_api_includes_keep_it() -> None:
    header = ("#ifndef MY_OP_TILING_H\n#define MY_OP_TILING_H\n#include <cstdint>\n"
              '#include "kernel_tiling/kernel_tiling.h"\nstruct MyOpTiling { uint32_t n; };\n#endif\n')
    assert safe(header, whole=True)


def test_a_source_is_read_up_to_its_include_of_our_headers() -> None:
    assert safe('// a comment\n#define K_MAX_SHAPE_DIM 0\n#include "kernel_operator.h"\n#define likely(x) x\n')
    assert not safe('#define likely(x) (x)\n#include "kernel_operator.h"\n')
    assert not safe('#include "my_helpers.h"\n#include "kernel_operator.h"\n')  # unread: it could define anything
    assert not safe('/* #include "kernel_operator.h" */\n#define GET_TILING_DATA(a, b)\n')  # comments do not count


def test_only_gcc_takes_it(monkeypatch) -> None:
    gcc = "g++ (Debian 12.2.0-14) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc."
    assert pch.enabled(gcc)
    assert not pch.enabled("Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu")
    monkeypatch.setenv("MPNPU_PCH", "0")
    assert not pch.enabled(gcc)


SCALE = r'''#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void scale(GM_ADDR x, GM_ADDR y) {
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x + 64 * GetBlockIdx(), 64);
    yg.SetGlobalBuffer((__gm__ float*)y + 64 * GetBlockIdx(), 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64 * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, 64);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls(t, t, SCALE_BY, 64);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yg, t, 64);
}
'''


@pytest.fixture(scope="module")
def caches(tmp_path_factory) -> dict[str, str]:
    """A build cache with the precompiled header ("1", made once for the module) and one without ("0")."""
    return {mode: str(tmp_path_factory.mktemp(f"cache{mode}")) for mode in ("1", "0")}


@needs_cxx
@pytest.mark.slow
def test_with_and_without_it_the_kernel_computes_the_same(tmp_path, monkeypatch, caches) -> None:
    if not pch.enabled(compiler_identity(tuple(find_compiler()))):
        pytest.skip("the compiler here is not g++: no precompiled header to compare with")
    src = tmp_path / "scale.cpp"
    src.write_text(SCALE)
    results = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("MPNPU_PCH", mode)
        monkeypatch.setenv("MPNPU_CACHE_DIR", caches[mode])
        kernel = compile_kernel(str(src), "scale", defines={"SCALE_BY": "3.0f"}, kernel_type=KernelType.AIV)
        with Device(2, kernel_type=KernelType.AIV) as dev:
            x = dev.to_device("x", np.arange(128, dtype=np.float32))
            y = dev.empty("y", (128,), "float32")
            dev.launch(kernel, x, y)
            results[mode] = dev.to_host(y)
    assert glob.glob(os.path.join(caches["1"], "ascendc", "pch", "*", "mpnpu_pch.h.gch"))
    assert not os.path.exists(os.path.join(caches["0"], "ascendc", "pch"))
    np.testing.assert_array_equal(results["1"], np.arange(128, dtype=np.float32) * 3)
    np.testing.assert_array_equal(results["0"], results["1"])


@needs_cxx
@pytest.mark.slow
def test_a_compile_error_reads_the_same_with_it(tmp_path, monkeypatch, caches) -> None:
    src = tmp_path / "broken.cpp"
    src.write_text(SCALE.replace("Muls(t, t, SCALE_BY, 64);", "Muls(t, t, 64);"))
    messages = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("MPNPU_PCH", mode)
        monkeypatch.setenv("MPNPU_CACHE_DIR", caches[mode])
        with pytest.raises(CompileError) as info:
            compile_kernel(str(src), "scale", kernel_type=KernelType.AIV)
        messages[mode] = str(info.value)
    assert "broken.cpp:14" in messages["0"]
    assert messages["1"] == messages["0"]
