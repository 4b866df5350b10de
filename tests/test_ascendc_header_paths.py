"""The header paths the API pages give (basic_api/..., the CPU-debug headers) resolve to mpnpu's API,
by their path and by the file name kernels include."""

from __future__ import annotations

import os
import subprocess

from mpnpu.ascendc.build.compiler import INCLUDE_DIR
from tests.ascendc_util import needs_cxx

pytestmark = needs_cxx

BASIC_API = os.path.join(INCLUDE_DIR, "basic_api")
#: file names public kernels include without the folder (each is also under basic_api/)
BARE = ("kernel_tpipe.h", "kernel_operator_data_copy_intf.h", "kernel_operator_mm_intf.h",
        "kernel_operator_fixpipe_intf.h", "kernel_tensor.h", "kernel_operator_block_sync_intf.h",
        "kernel_operator_atomic_intf.h")
#: the CPU-debug host API's headers, by the names kernels and unit tests include
CPU_DEBUG = ("stub_def.h", "stub_fun.h", "kern_fwk.h")


def test_each_bare_name_is_its_basic_api_header() -> None:
    for name in BARE:
        assert os.path.isfile(os.path.join(BASIC_API, name)), name
        with open(os.path.join(INCLUDE_DIR, name)) as f:
            assert f'#include "basic_api/{name}"' in f.read(), name


def test_every_header_path_gives_the_api_it_is_named_for(tmp_path) -> None:
    headers = sorted(f"basic_api/{n}" for n in os.listdir(BASIC_API) if n.endswith(".h"))
    assert len(headers) == 35  # (the paths the pages give for this chip class's basic API)
    for name in headers:
        with open(os.path.join(INCLUDE_DIR, name)) as f:
            assert '#include "kernel_operator.h"' in f.read(), name  # the whole basic API
    for name in CPU_DEBUG:
        with open(os.path.join(INCLUDE_DIR, name)) as f:
            assert '#include "tikicpulib.h"' in f.read(), name  # the CPU-debug host API and the kernel API
    # One translation unit that includes every one of them (they resolve, and their guards let them
    # be included together) and uses the kernel API and the CPU-debug host API.
    probe = tmp_path / "probe.cpp"
    probe.write_text("".join(f'#include "{n}"\n' for n in headers + list(BARE) + list(CPU_DEBUG)) +
                     "__aicore__ inline void use(AscendC::TPipe* pipe, AscendC::GlobalTensor<float> g,\n"
                     "                           AscendC::LocalTensor<float> l) {\n"
                     "    (void)pipe; AscendC::DataCopy(l, g, 8);\n}\n"
                     'extern "C" __global__ __aicore__ void k(GM_ADDR x) { (void)x; }\n'
                     "void host() { uint8_t* p = (uint8_t*)AscendC::GmAlloc(64); "
                     "AscendC::SetKernelMode(KernelMode::AIV_MODE); ICPU_SET_TILING_KEY(1); ICPU_RUN_KF(k, 1, p); "
                     "AscendC::GmFree(p); }\n")
    r = subprocess.run([os.environ.get("CXX", "g++"), "-std=c++17", "-fsyntax-only", "-D__CCE_KT_TEST__",
                        f"-I{INCLUDE_DIR}", str(probe)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


def _syntax_check(tmp_path, source: str, flags: list[str]) -> subprocess.CompletedProcess:
    probe = tmp_path / "probe.cpp"
    probe.write_text(source)
    return subprocess.run([os.environ.get("CXX", "g++"), "-fsyntax-only", *flags, str(probe)],
                          capture_output=True, text=True, timeout=600)


def _assert_compiles(tmp_path, source: str) -> None:
    """``source`` compiles as a device build (mpnpu's headers, no CPU-debug defines)."""
    r = _syntax_check(tmp_path, source, ["-std=c++17", f"-I{INCLUDE_DIR}"])
    assert r.returncode == 0, r.stderr[-3000:]


def test_a_cpu_debug_build_is_the_host_build_unit_tests_expect(tmp_path) -> None:
    # Unit tests pick their host code with ASCENDC_CPU_DEBUG, include kernel_log.h, and define their
    # own scalar min(int, int), which the device compiler's builtins would clash with.
    from mpnpu.ascendc.build import cpudebug_lib
    source = ('#include "kernel_log.h"\n'
              "#ifndef ASCENDC_CPU_DEBUG\n#error not a CPU-debug build\n#endif\n"
              "constexpr int min(int a, int b) { return a < b ? a : b; }\n"
              'void f() { KERNEL_LOG(KERNEL_INFO, "%d", min(1, 2)); }\n')
    r = _syntax_check(tmp_path, source, cpudebug_lib.cflags())
    assert r.returncode == 0, r.stderr[-3000:]


def test_a_device_build_has_the_scalar_builtins(tmp_path) -> None:
    source = ('#include "kernel_operator.h"\n'
              "#ifdef ASCENDC_CPU_DEBUG\n#error a CPU-debug build\n#endif\n"
              "uint32_t f(uint32_t a, uint32_t b) { return min(a, b) + max(a, b); }\n")
    _assert_compiles(tmp_path, source)


def test_the_matmul_library_gives_ceil_div_and_ceil_align_where_kernels_call_them(tmp_path) -> None:
    source = ('#include "kernel_operator.h"\n#include "lib/matmul_intf.h"\n'
              "namespace AscendC {\n"
              "static_assert(CeilDiv(7u, 4) == 2 && CeilAlign(7u, 4) == 8 && CeilAlign(8, 4u) == 8);\n"
              "static_assert(CeilDiv(0, 4) == 0 && CeilAlign(5, 0) == 5);\n"
              "}\n"
              "namespace UsesMatmul {\nusing namespace AscendC;\nusing namespace matmul;\n"
              "static_assert(CeilAlign(uint64_t{33}, 32u) == 64);\n}\n"
              "namespace OwnHelper {\nusing namespace matmul;\n"
              "template <typename T> constexpr T CeilDiv(T a, T b) { return a + b; }  // the kernel's own\n"
              "static_assert(CeilDiv(3, 4) == 7);\n}\n"
              "template <typename T1, typename T2> constexpr T1 CeilAlign(T1 a, T2 b) { return a * b; }\n"
              "using namespace AscendC;  // a kernel's own two-type form at global scope, beside the library's\n"
              "static_assert(CeilAlign(3u, 4) == 12);\n")
    _assert_compiles(tmp_path, source)


def test_older_spellings_and_the_enhanced_copy_compile(tmp_path) -> None:
    # LoadData2dParams is the older pages' name of LoadData2DParams; the enhanced local copy's
    # parameters (L0C -> UB on the inference chips) are accepted on this chip class.
    source = ('#include "kernel_operator.h"\n'
              "static_assert(std::is_same_v<AscendC::LoadData2dParams, AscendC::LoadData2DParams>);\n"
              "void f(AscendC::LocalTensor<float> a, AscendC::LocalTensor<float> b) {\n"
              "    AscendC::DataCopy(a, b, AscendC::DataCopyParams(1, 1, 0, 0),\n"
              "        AscendC::DataCopyEnhancedParams(AscendC::BlockMode::BLOCK_MODE_MATRIX,\n"
              "            AscendC::DeqScale::DEQ_NONE, 0, 0, false, pad_t::PAD_NONE, 0));\n}\n")
    _assert_compiles(tmp_path, source)


def test_detection_helpers_and_the_hf32_names_compile(tmp_path) -> None:
    # TrueType / FalseType in kernels' SFINAE checks; SetHF32Mode / SetHF32TransMode as bools and enums
    source = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
              "template <typename T> static auto check(int) -> decltype(T::member, TrueType());\n"
              "template <typename T> static FalseType check(...);\n"
              "struct With { static constexpr int member = 1; };\n"
              "static_assert(IsSameType<decltype(check<With>(0)), TrueType>::value);\n"
              "static_assert(IsSameType<decltype(check<int>(0)), FalseType>::value);\n"
              "void f(uint8_t on) { SetHF32Mode(on); SetHF32TransMode(false);\n"
              "    SetHF32Mode(HF32Mode::DISABLE); SetHF32TransMode(HF32TransMode::NEAREST_ZERO); }\n")
    _assert_compiles(tmp_path, source)
