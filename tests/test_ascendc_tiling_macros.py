"""Tiling helpers kernels of the operator repositories use, on our own kernel and headers: tiling
structs written with BEGIN_TILING_DATA_DEF (and REGISTER_TILING_DATA_CLASS for GET_TILING_DATA),
the kernel side generated from a host tiling header (``--kernel-tiling``), ASCENDC_TPL_* template
argument declarations, IsSameType and the scalar Ceil."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
from mpnpu.ascendc.tiling import kernel_tiling_header, tiling_layout
from mpnpu.errors import UsageError
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx, source
from tests.runtime_util import device

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]
KERNEL = "tiling/fill_blocks.cpp"


def _expected(mode: int, base: float, total: int = 64, blocks: int = 4) -> np.ndarray:
    per = -(-total // blocks)
    return np.concatenate([np.full(per, base + b + (1000 if mode else 0), np.float32) for b in range(blocks)])


def _launch(k, header: str, mode: int, base: float) -> np.ndarray:
    layout = tiling_layout(header, "FillTiling")
    assert [f.name for f in layout.fields] == ["total", "base", "spare"]
    with device(4, kernel_type=KernelType.AIV) as dev:
        out = dev.empty("out", 64, "float32")
        tiling = dev.to_device("tiling", layout.pack({"total": 64, "base": base, "spare": [1, 2, 3]}), "uint8")
        dev.launch(k, out, tiling)
        return dev.to_host(out)


@pytest.mark.parametrize("mode", [0, 1])
def test_a_tiling_struct_of_the_definition_macros_is_what_get_tiling_data_fills(mode) -> None:
    k = compile_kernel(source(KERNEL), f"fill_blocks<{mode}>")
    assert k.kernel_type is KernelType.AIV
    np.testing.assert_array_equal(_launch(k, source("tiling/fill_tiling.h"), mode, 0.5), _expected(mode, 0.5))


@pytest.mark.slow
def test_the_kernel_side_of_a_host_tiling_header(tmp_path) -> None:
    text = kernel_tiling_header(source("tiling/fill_host_tiling.h"))
    assert "register/tilingdata_base.h" not in text and "optiling" not in text and "TilingForFill" not in text
    assert "GET_TILING_DATA_WITH_STRUCT(FillTiling, var, tiling)" in text
    header = tmp_path / "fill_tiling_data.h"
    header.write_text(text)
    k = compile_kernel(source(KERNEL), "fill_blocks<1>", tiling_header=str(header), defines={"GENERATED_TILING": "1"})
    np.testing.assert_array_equal(_launch(k, str(header), 1, -2.0), _expected(1, -2.0))
    cli = subprocess.run([sys.executable, "-m", "mpnpu.ascendc", "--kernel-tiling",
                          source("tiling/fill_host_tiling.h")], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0 and cli.stdout == text
    with pytest.raises(UsageError, match="defines no tiling struct Other"):
        kernel_tiling_header(source("tiling/fill_host_tiling.h"), "Other")
    with pytest.raises(UsageError, match="defines no tiling struct"):
        kernel_tiling_header(source("two_phase.cpp"))


def test_the_generated_header_fills_the_struct_registered_for_the_operator_type(tmp_path) -> None:
    """A host header that also registers a struct its tiling nests (under another type, first): the
    operator's GET_TILING_DATA is the struct registered under its own type, as the repository's
    generated header is; with no type given, the first registered."""
    host = tmp_path / "lstm_tiling.h"
    host.write_text(
        "BEGIN_TILING_DATA_DEF(CutTiling)\nTILING_DATA_FIELD_DEF(int64_t, rows);\nEND_TILING_DATA_DEF;\n"
        "REGISTER_TILING_DATA_CLASS(CutTilingOp, CutTiling)\n"
        "BEGIN_TILING_DATA_DEF(LstmTiling)\nTILING_DATA_FIELD_DEF_STRUCT(CutTiling, cut);\nEND_TILING_DATA_DEF;\n"
        "REGISTER_TILING_DATA_CLASS(LstmGrad, LstmTiling)\n")
    assert "GET_TILING_DATA_WITH_STRUCT(LstmTiling, var, tiling)" in kernel_tiling_header(str(host), op_type="LstmGrad")
    assert "GET_TILING_DATA_WITH_STRUCT(CutTiling, var, tiling)" in kernel_tiling_header(str(host))
    assert "GET_TILING_DATA_WITH_STRUCT(CutTiling, var, tiling)" in kernel_tiling_header(str(host), op_type="Other")


def test_template_argument_declarations_are_data_the_kernel_may_read(tmp_path) -> None:
    src = tmp_path / "tpl.cpp"
    src.write_text(
        '#include <cstdio>\n#include "ascendc/host_api/tiling/template_argument.h"\n'
        "ASCENDC_TPL_ARGS_DECL(Op, ASCENDC_TPL_UINT_DECL(tile, ASCENDC_TPL_8_BW, ASCENDC_TPL_UI_RANGE, 1, 0, 3),\n"
        "    ASCENDC_TPL_BOOL_DECL(split, 0, 1), ASCENDC_TPL_FORMAT_DECL(fmt, C_FORMAT_ND));\n"
        # a helper macro that ends with a comma, used as kernels do: ARGS_SEL(HELPER(...), ) (empty entries)
        "#define BOTH(t) ASCENDC_TPL_UINT_SEL(tile, ASCENDC_TPL_UI_LIST, t), ASCENDC_TPL_BOOL_SEL(split, 0),\n"
        "ASCENDC_TPL_SEL(ASCENDC_TPL_ARGS_SEL(ASCENDC_TPL_UINT_SEL(tile, ASCENDC_TPL_UI_LIST, 1, 2),\n"
        "    ASCENDC_TPL_BOOL_SEL(split, 1), ASCENDC_TPL_KERNEL_TYPE_SEL(ASCENDC_TPL_AIV_ONLY)),\n"
        "    ASCENDC_TPL_ARGS_SEL(ASCENDC_TPL_UINT_SEL(tile, ASCENDC_TPL_UI_LIST, 3)),\n"
        "    ASCENDC_TPL_ARGS_SEL(BOTH(2), ));\n"
        "int main() { std::printf(\"%zu %s %u %zu %zu %s %zu %s\\n\", g_tilingDeclareParams.size(),\n"
        "    g_tilingDeclareParams[0].name, unsigned(g_tilingDeclareParams[0].bit_width),\n"
        "    g_tilingSelectParams.size(), g_tilingSelectParams[0].size(), g_tilingSelectParams[0][2].name,\n"
        "    g_tilingSelectParams[2].size(), g_tilingSelectParams[2][1].name); }\n")
    from mpnpu.ascendc.build.compiler import INCLUDE_DIR

    exe = tmp_path / "tpl"
    cc = subprocess.run([os.environ.get("CXX", "g++"), "-std=c++17", "-Wall", "-Wextra", "-Werror",
                         f"-I{INCLUDE_DIR}", str(src), "-o", str(exe)], capture_output=True, text=True, timeout=300)
    assert cc.returncode == 0, cc.stderr
    assert subprocess.run([str(exe)], capture_output=True, text=True, timeout=30).stdout.split() == \
        ["3", "tile", "8", "3", "3", "kernel_type", "2", "split"]


_KEY_PROGRAM = r"""
#include <cstdio>
#include <stdexcept>
#include "ascendc/host_api/tiling/template_argument.h"
ASCENDC_TPL_ARGS_DECL(Op, ASCENDC_TPL_UINT_DECL(tile, ASCENDC_TPL_4_BW, ASCENDC_TPL_UI_MIX, 1, 0, 3, 9),
    ASCENDC_TPL_BOOL_DECL(split, 0, 1), ASCENDC_TPL_DTYPE_DECL(dt, C_DT_FLOAT, C_DT_FLOAT16));
ASCENDC_TPL_SEL(ASCENDC_TPL_ARGS_SEL(ASCENDC_TPL_UINT_SEL(tile, ASCENDC_TPL_UI_LIST, 1, 2, 9),
    ASCENDC_TPL_BOOL_SEL(split, 1), ASCENDC_TPL_KERNEL_TYPE_SEL(ASCENDC_TPL_AIV_ONLY)),
    ASCENDC_TPL_ARGS_SEL(ASCENDC_TPL_UINT_SEL(tile, ASCENDC_TPL_UI_LIST, 3), ASCENDC_TPL_BOOL_SEL(split, 0)));
template <class... T> void key(T... v) {
    try { std::printf("%llu\n", (unsigned long long)GET_TPL_TILING_KEY(v...)); }
    catch (const std::invalid_argument& e) { std::printf("error: %s\n", e.what()); }
}
int main() {
    int tile = 9;
    key(tile, 1, C_DT_FLOAT16);  // 9 | 1 << 4 | 1 << 5
    key(2, 1, C_DT_FLOAT);
    key(3, 0, C_DT_FLOAT16);
    key(5, 1, C_DT_FLOAT);       // not declared (neither in the range nor the list)
    key(3, 1, C_DT_FLOAT);       // declared, but no selection has tile 3 with split 1
    key(16, 1, C_DT_FLOAT);      // does not fit 4 bits
    key(2, 1);                   // a value short
}
"""


@pytest.mark.slow
def test_get_tpl_tiling_key_packs_the_declared_widths_in_order_and_refuses_what_is_not_declared(tmp_path) -> None:
    src = tmp_path / "key.cpp"
    src.write_text(_KEY_PROGRAM)
    from mpnpu.ascendc.build.compiler import INCLUDE_DIR

    exe = tmp_path / "key"
    cc = subprocess.run([os.environ.get("CXX", "g++"), "-std=c++17", "-Wall", "-Wextra", "-Werror",
                         f"-I{INCLUDE_DIR}", str(src), "-o", str(exe)], capture_output=True, text=True, timeout=300)
    assert cc.returncode == 0, cc.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30).stdout.splitlines()
    assert out[:3] == [str(9 | 1 << 4 | 1 << 5), str(2 | 1 << 4), str(3 | 1 << 5)]
    assert out[3] == ("error: GET_TPL_TILING_KEY(5, 1, 0): tile = 5 is not among the values "
                      "ASCENDC_TPL_ARGS_DECL gives it")
    assert out[4] == "error: GET_TPL_TILING_KEY(3, 1, 0): no ASCENDC_TPL_SEL combination lists these values"
    assert out[5] == "error: GET_TPL_TILING_KEY(16, 1, 0): tile = 16 does not fit its 4 bits"
    assert out[6] == "error: GET_TPL_TILING_KEY(2, 1): 2 values for the 3 declared template parameters"


def test_a_packing_is_remembered_by_its_values_and_handed_out_as_a_new_array() -> None:
    """A batch packs the same tilings case after case, so a layout remembers what it packed: the
    same bytes for the same values, never the same array (a caller may write into what it got),
    and no two values that differ in bits (0.0 and -0.0, 1 and 2) share an entry."""
    layout = tiling_layout(source("tiling/fill_tiling.h"), "FillTiling")

    def packed(values):
        return layout.unpack(layout.pack(values))

    first = layout.pack({"total": 64, "base": 0.5})
    expected = first.copy()
    for _ in range(2):  # (packed, then remembered: each caller's array is its own to write into)
        got = layout.pack({"total": 64, "base": 0.5})
        assert got is not first
        np.testing.assert_array_equal(got, expected)
        first[:] = got[:] = 0xFF
    again = layout.pack({"total": 64, "base": 0.5})
    np.testing.assert_array_equal(again, expected)
    np.testing.assert_array_equal(again, layout.pack({"base": 0.5, "total": 64}))
    assert packed({"total": 65, "base": 0.5})["total"] == 65
    assert np.signbit(packed({"total": 1, "base": -0.0})["base"])
    assert not np.signbit(packed({"total": 1, "base": 0.0})["base"])
    assert packed({"total": 1, "base": 2.0})["base"] == 2.0 and packed({"total": 1, "base": 2})["base"] == 2.0
    assert packed({"total": 1, "spare": [4, 5, 6]})["spare"] == [4, 5, 6]  # (a list: packed, not remembered)
    for _ in range(2):  # (a failed packing is not remembered either)
        with pytest.raises(UsageError, match="does not fit"):
            layout.pack({"total": -1, "base": 0.5})


def test_a_host_tiling_headers_own_constants_that_size_its_arrays_come_along(tmp_path) -> None:
    """``constexpr uint16_t MAX_N = 4;`` before the struct, used as an array field's length: the kernel
    side carries it (ahead of the struct), and leaves out a constant the structs do not use."""
    from mpnpu.ascendc.build.compiler import INCLUDE_DIR

    host = tmp_path / "arr_tiling.h"
    host.write_text('#include "register/tilingdata_base.h"\nnamespace optiling {\nconstexpr uint16_t MAX_N = 4;\n'
                    "constexpr int32_t UNUSED_HERE = 7;\nBEGIN_TILING_DATA_DEF(ArrTiling)\n"
                    "TILING_DATA_FIELD_DEF(uint32_t, n);\nTILING_DATA_FIELD_DEF_ARR(int64_t, MAX_N, rows);\n"
                    "END_TILING_DATA_DEF;\nREGISTER_TILING_DATA_CLASS(Arr, ArrTiling)\n}\n")
    text = kernel_tiling_header(str(host))
    assert "constexpr uint16_t MAX_N = 4;" in text and "UNUSED_HERE" not in text
    assert text.index("MAX_N = 4") < text.index("BEGIN_TILING_DATA_DEF(ArrTiling)")
    header = tmp_path / "arr_tiling_data.h"
    header.write_text(text)
    probe = tmp_path / "probe.cpp"
    probe.write_text('#include "arr_tiling_data.h"\nstatic_assert(sizeof(ArrTiling) == 40, "n, pad, 4 rows");\n'
                     "int main() { return 0; }\n")
    r = subprocess.run([os.environ.get("CXX", "g++"), "-std=c++17", "-fsyntax-only", f"-I{INCLUDE_DIR}",
                        f"-I{tmp_path}", str(probe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
