"""mpnpu ut: an operator repository's kernel unit tests built and run against mpnpu, on a tiny repository
of our own laid out like the public ones (written here: its CMake files, kernels, tiling headers and
gtest files are ours), and the parts on their own: the CMake reader, discovery, diagnostics into
missing names, gtest output, the reports, and mpnpu's gtest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mpnpu.errors import UsageError
from mpnpu.tools.ut import cmake, execute, missing
from mpnpu.tools.ut.build import GTEST_INCLUDE, GTEST_MAIN
from mpnpu.tools.ut.discover import Corpus, discover
from mpnpu.tools.ut.execute import data_steps, parse_output
from mpnpu.tools.ut.results import TestResult, UtRun, format_table, junit
from mpnpu.tools.ut.suite import UtOptions, run_ut, select
from tests.ascendc_util import needs_cxx

# -- a repository of our own, in the public layout ---------------------------------------------------------

VADD_KERNEL = """\
#include "kernel_operator.h"
using namespace AscendC;

// z = x + y, each vector core its share of n elements (our own kernel)
extern "C" __global__ __aicore__ void vadd(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(t, tiling);
    const uint32_t share = t.n / GetBlockNum();
    const uint32_t at = share * GetBlockIdx();
    GlobalTensor<DTYPE_X> gx, gy, gz;
    gx.SetGlobalBuffer((__gm__ DTYPE_X*)x + at, share);
    gy.SetGlobalBuffer((__gm__ DTYPE_X*)y + at, share);
    gz.SetGlobalBuffer((__gm__ DTYPE_X*)z + at, share);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * share * sizeof(DTYPE_X));
    LocalTensor<DTYPE_X> a = buf.Get<DTYPE_X>();
    LocalTensor<DTYPE_X> b = a[share];
    LocalTensor<DTYPE_X> c = a[2 * share];
    DataCopy(a, gx, share);
    DataCopy(b, gy, share);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Add(c, a, b, share);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, c, share);
}
"""

VADD_TILING = """\
#ifndef VADD_TILING_DEF_H
#define VADD_TILING_DEF_H
#include <cstdint>
#include <cstring>
struct VaddTilingData {
    uint32_t n;
};
#define GET_TILING_DATA(name, ptr) \\
    VaddTilingData name;           \\
    std::memcpy(&name, (const void*)(ptr), sizeof(VaddTilingData))
#endif
"""

VADD_TEST = """\
#include <cstdint>
#include <vector>
#include "gtest/gtest.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void vadd(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling);

class vadd_test : public testing::Test {
protected:
    static void SetUpTestCase() { AscendC::SetKernelMode(KernelMode::AIV_MODE); }
    // n elements in GM; the tiling says `told`
    static float run(uint32_t n, uint32_t told) {
        float* x = (float*)AscendC::GmAlloc(n * sizeof(float));
        float* y = (float*)AscendC::GmAlloc(n * sizeof(float));
        float* z = (float*)AscendC::GmAlloc(n * sizeof(float));
        uint8_t* ws = (uint8_t*)AscendC::GmAlloc(32);
        VaddTilingData* t = (VaddTilingData*)AscendC::GmAlloc(sizeof(VaddTilingData));
        t->n = told;
        for (uint32_t i = 0; i < n; ++i) { x[i] = float(i); y[i] = 1.0f; }
        ICPU_RUN_KF(vadd, 2, (uint8_t*)x, (uint8_t*)y, (uint8_t*)z, ws, (uint8_t*)t);
        float last = z[n - 1];
        AscendC::GmFree(x); AscendC::GmFree(y); AscendC::GmFree(z); AscendC::GmFree(ws); AscendC::GmFree(t);
        return last;
    }
};

TEST_F(vadd_test, adds) { EXPECT_EQ(run(256, 256), 256.0f); }
TEST_F(vadd_test, wrong_expectation) { EXPECT_EQ(run(256, 256), 7.0f) << "on purpose"; }
TEST_F(vadd_test, reads_past_its_input) { run(256, 512); }
TEST_F(vadd_test, adds_again) { EXPECT_EQ(run(512, 512), 512.0f); }
"""

VSUM_KERNEL = """\
#include "kernel_operator.h"
using namespace AscendC; struct VsumTiling { int32_t unused; };  // (on one line: the lines below keep their numbers)

// every vector core writes its block index to its slot of ws; core 0 then reads every slot into out,
// with no SyncAll between: a race by design (our own kernel)
extern "C" __global__ __aicore__ void vsum(GM_ADDR ws, GM_ADDR out, GM_ADDR tiling) {
    GlobalTensor<int32_t> slots, total;
    slots.SetGlobalBuffer((__gm__ int32_t*)ws, 64);
    total.SetGlobalBuffer((__gm__ int32_t*)out, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64 * sizeof(int32_t));
    LocalTensor<int32_t> mine = buf.Get<int32_t>();
    Duplicate(mine, int32_t(GetBlockIdx()), 8);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(slots[8 * GetBlockIdx()], mine, 8);
    if (GetBlockIdx() == 0) {
        DataCopy(mine, slots, 16);
        SetFlag<HardEvent::MTE2_MTE3>(0);
        WaitFlag<HardEvent::MTE2_MTE3>(0);
        DataCopy(total, mine, 16);
    }
    // no tiling header in the test folder: GET_TILING_DATA is the registered struct's
    REGISTER_TILING_DEFAULT(VsumTiling);
    GET_TILING_DATA(tilingData, tiling);
    (void)tilingData;
}
"""

VSUM_TEST = """\
#include "gtest/gtest.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void vsum(GM_ADDR ws, GM_ADDR out, GM_ADDR tiling);

TEST(vsum_test, runs) {
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    uint8_t* ws = (uint8_t*)AscendC::GmAlloc(256);
    uint8_t* out = (uint8_t*)AscendC::GmAlloc(256);
    uint8_t* tiling = (uint8_t*)AscendC::GmAlloc(32);
    ICPU_RUN_KF(vsum, 2, ws, out, tiling);
    AscendC::GmFree(ws); AscendC::GmFree(out); AscendC::GmFree(tiling);
}

TEST(vsum_test, launches_nothing) { EXPECT_EQ(1 + 1, 2); }
"""

LACKING_KERNEL = """\
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void lacking(GM_ADDR x, GM_ADDR tiling) {
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    AscendC::Frobnicate(gx);
    TwiddleAll(gx, 3);
}
"""

LACKING_TEST = """\
#include "gtest/gtest.h"
#include "tikicpulib.h"
#include "no_such_dir/imaginary_header.h"

TEST(lacking_test, never_built) { AscendC::BehindTheHeader(); }
"""


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def fake_repo(root: Path) -> Path:
    """A repository laid out like the public operator repositories, with our own tests."""
    repo = root / "ops-demo"
    write(repo, {
        "README.md": "demo\n",
        "CMakeLists.txt": "project(demo)\n",
        "cmake/ut.cmake": "# AddOpTestCase lives here in the real layout\n",
        "tests/ut/op_kernel/CMakeLists.txt": "# the shared folder: not an operator's\n",
        "demo/vadd/op_kernel/vadd.cpp": VADD_KERNEL,
        "demo/vadd/tests/ut/op_kernel/CMakeLists.txt": textwrap.dedent("""\
            # our own test's registration
            if ((UT_TEST_ALL OR OP_KERNEL_UT) AND NOT UT_DONE)
                set(vadd_tiling_files ${CMAKE_CURRENT_SOURCE_DIR}/../../../op_host/vadd_tiling.cpp)
                AddOpTestCase(vadd "ascend910B1;ascend950pr_9599" "-DDTYPE_X=float"
                              "${vadd_tiling_files}")
            endif()
            """),
        "demo/vadd/tests/ut/op_kernel/vadd_tiling_def.h": VADD_TILING,
        "demo/vadd/tests/ut/op_kernel/test_vadd.cpp": VADD_TEST,
        "demo/vadd/tests/ut/op_kernel/vadd_data/gen_data.py":
            "import numpy as np\nimport surely_not_an_installed_package\n",
        "demo/vsum/op_kernel/vsum.cpp": VSUM_KERNEL,
        "demo/vsum/tests/ut/op_kernel/CMakeLists.txt": 'AddOpTestCase(vsum "ascend910b" "")\n',
        "demo/vsum/tests/ut/op_kernel/test_vsum.cpp": VSUM_TEST,
        "demo/lacking/op_kernel/CMakeLists.txt": textwrap.dedent("""\
            add_kernel_sources(KERNEL_SRC arch35/lacking_next.cpp COMPUTE_UNITS ascend950)
            add_kernel_sources(KERNEL_SRC lacking_a2.cpp COMPUTE_UNITS ascend910b ascend910_93)
            """),
        "demo/lacking/op_kernel/lacking_a2.cpp": LACKING_KERNEL,
        "demo/lacking/tests/ut/op_kernel/CMakeLists.txt": textwrap.dedent("""\
            if("ascend950" IN_LIST ASCEND_COMPUTE_UNIT)
                AddOpTestCase(lacking "ascend950pr_9599" "-DNEXT=1")
            else()
                AddOpTestCase(lacking "ascend910B1" "-DDTYPE_X=half;-DDTYPE_Y=float" other_op)
                target_compile_definitions(opkernel_lacking PRIVATE EXTRA_ONE)
            endif()
            """),
        "demo/lacking/tests/ut/op_kernel/test_lacking.cpp": LACKING_TEST,
        "demo/lacking/tests/ut/op_kernel/arch22/test_lacking_a2.cpp": "// this chip's own test source\n",
        "demo/nextgen/op_kernel/nextgen.cpp": "// a kernel for the next generation\n",
        "demo/nextgen/tests/ut/op_kernel/CMakeLists.txt": 'AddOpTestCase(nextgen "ascend950pr_9599" "")\n',
        "demo/nextgen/tests/ut/op_kernel/test_nextgen.cpp": "// not built here\n",
    })
    return repo


# -- the CMake reader and discovery ---------------------------------------------------------------------------


def test_cmake_calls_quoted_arguments_comments_and_variables() -> None:
    text = textwrap.dedent("""\
        # a comment with AddOpTestCase(not_this "x" "")
        set(FILES a.cpp b.cpp)  #[[ a bracket
        comment ]]
        AddOpTestCase(op "ascend910B1;ascend950" "-DA=1 \\
            -DB=2" ${FILES})
        """)
    calls = cmake.parse(text)
    assert [c.name for c in calls] == ["set", "addoptestcase"]
    assert calls[1].line == 4
    scope = cmake.Scope()
    cmake.apply_set(scope, calls[0])
    values = scope.values(calls[1].args)
    assert values[:2] == ["op", "ascend910B1;ascend950"]
    assert values[2].split() == ["-DA=1", "-DB=2"]
    assert values[3:] == ["a.cpp", "b.cpp"]


def test_discovery_follows_the_registration_for_this_chip(tmp_path) -> None:
    repo = fake_repo(tmp_path)
    found = discover(Corpus.at(str(repo)))
    by = {t.id: t for t in found.tests}
    assert sorted(by) == ["demo/lacking", "demo/nextgen", "demo/vadd", "demo/vsum"]
    assert [t.id for t in found.out_of_scope] == ["demo/nextgen"]
    vadd = by["demo/vadd"]
    assert vadd.in_scope and vadd.socs == ("ascend910B1", "ascend950pr_9599")
    assert vadd.kernel == "vadd.cpp" and [os.path.basename(s) for s in vadd.sources] == ["test_vadd.cpp"]
    assert vadd.tiling_def and vadd.tiling_def.endswith("vadd_tiling_def.h")
    assert vadd.deps == ()  # the tiling sources it names are not operators
    assert vadd.defines() == ["-DDTYPE_X=float", '-DUT_SOC_VERSION="Ascend910B1"', "-DKERNELUT=1"]
    lacking = by["demo/lacking"]
    assert lacking.options == ("-DDTYPE_X=half", "-DDTYPE_Y=float", "-DEXTRA_ONE")  # the else branch's call
    assert lacking.kernel == "lacking_a2.cpp"  # this chip's KERNEL_SRC
    assert lacking.deps == ("other_op",)
    assert [os.path.relpath(s, lacking.ut_dir) for s in lacking.sources] == [
        "test_lacking.cpp", os.path.join("arch22", "test_lacking_a2.cpp")]
    assert by["demo/vsum"].tiling_def is None and "no tiling header" in by["demo/vsum"].tiling_note


def test_a_checkout_in_another_layout_and_an_unknown_operator_are_usage_errors(tmp_path) -> None:
    with pytest.raises(UsageError, match="not laid out like"):
        Corpus.at(str(tmp_path))
    tests = discover(Corpus.at(str(fake_repo(tmp_path)))).tests
    assert [t.id for t in select(tests, ("vadd", "demo/vsum"))] == ["demo/vadd", "demo/vsum"]
    with pytest.raises(UsageError, match="did you mean vadd"):
        select(tests, ("vaddd",))


def test_the_data_steps_a_test_calls_and_the_packages_they_lack(tmp_path) -> None:
    repo = fake_repo(tmp_path)
    test = next(t for t in discover(Corpus.at(str(repo))).tests if t.op == "vadd")
    (steps,) = data_steps(test)
    assert steps.script == os.path.join("vadd_data", "gen_data.py")
    assert steps.missing == ("surely_not_an_installed_package",) and not steps.called


def test_the_warm_interpreter_imports_the_heavy_packages_the_called_scripts_import(tmp_path) -> None:
    """vadd's script imports numpy, but the test does not call it: no server; once the test calls it,
    the server imports numpy (and not the package that is not installed)."""
    from mpnpu.tools.ut.suite import _warm_python

    repo = fake_repo(tmp_path)
    tests = discover(Corpus.at(str(repo))).tests
    assert _warm_python([data_steps(t) for t in tests]) is None
    source = repo / "demo/vadd/tests/ut/op_kernel/test_vadd.cpp"
    source.write_text(source.read_text() + '\nstatic int made = system("cd vadd_data && python3 gen_data.py");\n')
    warm = _warm_python([data_steps(t) for t in discover(Corpus.at(str(repo))).tests])
    assert warm is not None
    try:
        assert warm.packages == ["numpy"]
        env = execute.environment(str(tmp_path / "build"), tests[0], Corpus.at(str(repo)), case_timeout=1,
                                  launch_timeout=1, racecheck=False, warm=warm)
        assert env["PATH"].split(os.pathsep)[:2] == [warm.folder, os.path.dirname(sys.executable)]
    finally:
        warm.close()


# -- diagnostics into missing names ------------------------------------------------------------------------------


GCC_OUTPUT = """\
In file included from /repo/op/k.cpp:2:
/mp/include/mpnpu/vector.h: In instantiation of 'void AscendC::Exp(const LocalTensor<T>&) [with T = int]':
/repo/op/k.cpp:40:9:   required from here
/mp/include/mpnpu/vector.h:12:5: error: static assertion failed: Exp: half or float
/repo/op/k.cpp:41:5: error: 'Frobnicate' is not a member of 'AscendC'
/repo/op/k.cpp:42:5: error: 'TwiddleAll' was not declared in this scope; did you mean 'Twiddle'?
/repo/op/k.cpp:43:9: error: 'class AscendC::LocalTensor<float>' has no member named 'Reshape'
/repo/op/k.cpp:44:9: error: no matching function for call to 'DataCopyPad(AscendC::LocalTensor<float>&, int)'
/repo/op/k.cpp:45:9: error: expected ';' before '}' token
/repo/op/t.cpp:3:10: fatal error: lib/imaginary.h: No such file or directory
/usr/bin/ld: k.o: in function `f': undefined reference to `AscendC::Gone(int)'
"""


def test_every_missing_name_of_a_compile_at_the_users_line() -> None:
    found = missing.parse(GCC_OUTPUT, lambda p: not p.startswith(("/mp/", "/usr/")), lambda p: p)
    got = [(m.kind, m.name, m.where) for m in found]
    assert got == [
        ("refused", "Exp", "/repo/op/k.cpp:40"),  # inside mpnpu's header: placed at the user's frame
        ("name", "AscendC::Frobnicate", "/repo/op/k.cpp:41"),
        ("name", "TwiddleAll", "/repo/op/k.cpp:42"),
        ("member", "LocalTensor::Reshape", "/repo/op/k.cpp:43"),
        ("overload", "DataCopyPad", "/repo/op/k.cpp:44"),
        ("header", "lib/imaginary.h", "/repo/op/t.cpp:3"),
        ("link", "AscendC::Gone", ""),
    ]
    assert missing.count_errors(GCC_OUTPUT) == 7


def test_the_histogram_counts_each_test_once_and_leaves_the_corpus_own_names_out() -> None:
    a = [missing.Missing("name", "AscendC::Foo", "a.cpp:1", ""), missing.Missing("name", "Foo", "a.cpp:9", ""),
         missing.Missing("name", "helperOfTheOp", "a.cpp:2", "")]
    b = [missing.Missing("name", "Foo", "b.cpp:3", ""), missing.Missing("header", "x/y.h", "b.cpp:1", "")]
    a = missing.mark_corpus_names(a, {"helperOfTheOp", "Foo"})  # AscendC::Foo stays an API name
    assert [m.corpus for m in a] == [False, True, True]
    assert missing.histogram([a, b], ("name",)) == [missing.Row("Foo", 2, 2, 1, "a.cpp:1")]  # b needs x/y.h too
    assert missing.histogram([a, b], ("header",)) == [missing.Row("x/y.h", 1, 1, 0, "b.cpp:1")]
    behind = [missing.Missing("header", "h.h", "c.cpp:1", ""),
              missing.Missing("name", "Bar", "c.cpp:5", "", behind_header=True)]
    assert missing.histogram([behind]) == [missing.Row("h.h", 1, 1, 0, "c.cpp:1"),
                                           missing.Row("Bar", 1, 0, 0, "c.cpp:5")]


def test_a_macro_defined_empty_in_an_if_is_named(tmp_path) -> None:
    src = tmp_path / "k.cpp"
    src.write_text("#define FMT_NZ\n#if defined(FMT_X) && FMT_X == FMT_NZ\n#endif\n")
    out = f"{src}:2:35: error: operator '==' has no right operand\n"
    (m,) = missing.parse(out, lambda p: True, lambda p: "k.cpp")
    assert (m.kind, m.name, m.where) == ("macro", "FMT_NZ", "k.cpp:2")


# -- gtest output and the reports ---------------------------------------------------------------------------------


GTEST_OUTPUT = """\
[==========] Running 4 tests from 1 test suite.
[ RUN      ] s.a
[       OK ] s.a (12 ms)
[ RUN      ] s.b
mpnpu: ICPU_RUN_KF(k) at t.cpp:9: vector core 1 (block 1) raised MemcheckError: illegal read of GM tensor x
t.cpp:20: Failure
the test's process ended with exit status 3 before the test finished
[  FAILED  ] s.b (30 ms)
[ RUN      ] P/s.c/0
mpnpu: ICPU_RUN_KF(k) at t.cpp:9: racecheck
====== SUMMARY: 2 hazards (2 RAW, 0 WAR, 0 WAW) in 1 launch checked
[       OK ] P/s.c/0, where GetParam() = 3 (5 ms)
[ RUN      ] s.d
mpnpu: ICPU_RUN_KF(k) at t.cpp:9: vector core 0 (block 0) raised UnsupportedError: KERNEL_TASK_TYPE_DEFAULT(9): \
mpnpu runs the separated cube/vector kernel types only at op/k.cpp:31 (k) (and 3 other cores failed after it)
"""


def test_gtest_output_into_cases_with_memcheck_and_hazards() -> None:
    cases = parse_output(GTEST_OUTPUT)
    assert [(c.name, c.status, c.memcheck, c.hazards) for c in cases] == [
        ("s.a", "passed", False, 0), ("s.b", "failed", True, 0), ("P/s.c/0", "passed", False, 2),
        ("s.d", "unfinished", False, 0)]
    assert cases[1].seconds == pytest.approx(0.030)
    assert cases[1].mpnpu[0].startswith("mpnpu: ICPU_RUN_KF(k)")
    assert cases[1].fault == "MemcheckError: illegal read of GM tensor x" and cases[2].fault == ""
    assert (cases[3].fault, cases[3].fault_where) == (
        "UnsupportedError: KERNEL_TASK_TYPE_DEFAULT(9): mpnpu runs the separated cube/vector kernel types only",
        "op/k.cpp:31")


def test_the_reports_of_a_run() -> None:
    from mpnpu.tools.ut.execute import BinaryRun

    ok = TestResult("cat/ok", "ok", ("ascend910B1",), True, built=True, linked=True,
                    units=[{"source": "t.cpp", "ok": True}], run=BinaryRun(1, 2.0, parse_output(GTEST_OUTPUT)))
    broken = TestResult("cat/broken", "broken", ("ascend910b",), True, units=[{"source": "t.cpp", "ok": False}],
                        missing=[missing.Missing("name", "AscendC::Foo", "k.cpp:3", "")])
    later = TestResult("cat/later", "later", ("ascend950pr_9599",), False)
    run = UtRun("/repo", "Ascend910B1", [ok, broken, later], racecheck=True)
    assert [t.status for t in run.tests] == ["failed", "build-failed", "out-of-scope"]
    c = run.counts()
    assert (c["found"], c["out_of_scope"], c["built"], c["ran"], c["gtest_passed"]) == (3, 1, 1, 1, 0)
    assert (c["with_memcheck"], c["with_hazards"], c["cases"], c["cases_passed"]) == (1, 1, 4, 2)
    assert not run.ok
    table = format_table(run)
    assert "cat/broken" in table and "Foo" in table and "cat/later" not in table
    assert "3 tests found, 1 skipped (not registered for Ascend910B1)" in table
    assert [(f, n) for f, n, _ in run.fault_histogram()] == [
        ("MemcheckError: illegal read of GM tensor x", 1),
        ("UnsupportedError: KERNEL_TASK_TYPE_DEFAULT(9): mpnpu runs the separated cube/vector kernel types only", 1)]
    data = json.loads(json.dumps(run.to_dict()))
    assert data["missing_names"] == [{"name": "Foo", "tests": 1, "direct": 1, "sole": 1, "example": "k.cpp:3"}]
    assert data["tests"][0]["case_results"][1]["memcheck"] is True
    root = junit(run)
    suite = root.find("testsuite")
    assert suite is not None
    counts = tuple(suite.get(k) for k in ("tests", "failures", "errors", "skipped"))
    assert counts == ("6", "3", "1", "1")


# -- mpnpu's gtest --------------------------------------------------------------------------------------------------

GTEST_SELF = """\
#include "gtest/gtest.h"
#include <cstdlib>
#include <vector>

class Fx : public testing::Test {
protected:
    static void SetUpTestCase() { shared = 5; }
    void SetUp() override { own = shared + 1; }
    static int shared;
    int own = 0;
};
int Fx::shared = 0;

TEST_F(Fx, uses_its_fixture) { EXPECT_EQ(own, 6); ASSERT_NE(&own, nullptr); EXPECT_NEAR(1.0, 1.05, 0.1); }
TEST_F(Fx, fails_and_goes_on) { EXPECT_LE(own, 2) << "note"; EXPECT_TRUE(own == 6); }
TEST(Plain, ends_its_process) { std::exit(3); }
TEST(Plain, after_the_exit) { SUCCEED(); }
TEST(Plain, skipped) { GTEST_SKIP() << "why"; }
class Pt : public testing::TestWithParam<int> {};
TEST_P(Pt, positive) { EXPECT_GT(GetParam(), 0); }
static std::vector<int> values = {1, 0, 2};
INSTANTIATE_TEST_CASE_P(Some, Pt, testing::ValuesIn(values));
"""


@pytest.mark.slow
@needs_cxx
def test_mpnpu_gtest_runs_each_case_alone_and_speaks_gtests_format(tmp_path) -> None:
    src = tmp_path / "t.cpp"
    src.write_text(GTEST_SELF)
    exe = tmp_path / "t"
    subprocess.run([os.environ.get("CXX", "g++"), "-std=c++17", "-Wall", "-Werror", f"-I{GTEST_INCLUDE}", str(src),
                    GTEST_MAIN, "-o", str(exe)], check=True, timeout=600)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    cases = {c.name: c.status for c in parse_output(out.stdout)}
    assert cases == {"Fx.uses_its_fixture": "passed", "Fx.fails_and_goes_on": "failed",
                     "Plain.ends_its_process": "failed", "Plain.after_the_exit": "passed",
                     "Plain.skipped": "skipped", "Some/Pt.positive/0": "passed", "Some/Pt.positive/1": "failed",
                     "Some/Pt.positive/2": "passed"}
    assert "Expected: (own) <= (2), actual: 6 vs 2\nnote" in out.stdout
    assert "the test's process ended with exit status 3" in out.stdout
    assert "[  FAILED  ] 3 tests, listed below:" in out.stdout
    listed = subprocess.run([str(exe), "--gtest_list_tests", "--gtest_filter=Plain.*-*skipped"], capture_output=True,
                            text=True, timeout=60)
    assert listed.stdout == "Plain.\n  ends_its_process\n  after_the_exit\n"


HOST_STATE = r"""
#include <cstdlib>
#include "gtest/gtest.h"
// Stand-ins for the CPU-debug library's host settings (the program links no mpnpu library here).
static int32_t g_mode = -1;
static uint64_t g_key = 0;
extern "C" void mpnpu_cpudebug_set_kernel_mode(int32_t mode) { g_mode = mode; }
extern "C" void mpnpu_cpudebug_set_tiling_key(uint64_t key) { g_key = key; }
extern "C" void mpnpu_cpudebug_host_state(int32_t* mode, uint64_t* key) { *mode = g_mode; *key = g_key; }
TEST(S, a_sets) { mpnpu_cpudebug_set_kernel_mode(2); mpnpu_cpudebug_set_tiling_key(7); }
TEST(S, b_sees_them) { EXPECT_EQ(g_mode, 2); EXPECT_EQ(g_key, 7u); mpnpu_cpudebug_set_tiling_key(9); FAIL(); }
TEST(S, c_sees_a_failed_tests_too) { EXPECT_EQ(g_key, 9u); }
TEST(S, d_dies_after_setting) { mpnpu_cpudebug_set_kernel_mode(1); std::exit(3); }
TEST(S, e_keeps_the_last_finished_tests) { EXPECT_EQ(g_mode, 2); EXPECT_EQ(g_key, 9u); }
"""


@pytest.mark.slow
@needs_cxx
def test_a_forked_test_hands_its_cpu_debug_settings_to_the_tests_after_it(tmp_path) -> None:
    """In one GoogleTest process a test's SetKernelMode and ICPU_SET_TILING_KEY stay for the next tests,
    and unit tests rely on it; each of our forked tests hands them back when it finishes (passed or
    failed), and one that dies leaves the settings of the last test that finished."""
    src = tmp_path / "h.cpp"
    src.write_text(HOST_STATE)
    exe = tmp_path / "h"
    subprocess.run([os.environ.get("CXX", "g++"), "-std=c++17", "-Wall", "-Werror", f"-I{GTEST_INCLUDE}", str(src),
                    GTEST_MAIN, "-o", str(exe)], check=True, timeout=600)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    cases = {c.name: c.status for c in parse_output(out.stdout)}
    assert cases == {"S.a_sets": "passed", "S.b_sees_them": "failed", "S.c_sees_a_failed_tests_too": "passed",
                     "S.d_dies_after_setting": "failed", "S.e_keeps_the_last_finished_tests": "passed"}, out.stdout
    assert "Expected equality" not in out.stdout, out.stdout
    # Run alone, e starts with nothing set; given the settings it had in the run of them all (what mutation
    # testing passes), it sees them. GTEST_FAIL_FAST skips the tests after the first failed one.
    alone = subprocess.run([str(exe), "--gtest_filter=S.e_keeps_the_last_finished_tests"], capture_output=True,
                           text=True, timeout=120)
    assert [c.status for c in parse_output(alone.stdout)] == ["failed"]
    states = "S.x=1:1;S.e_keeps_the_last_finished_tests=2:9"
    given = subprocess.run([str(exe), "--gtest_filter=S.e_keeps_the_last_finished_tests"], capture_output=True,
                           text=True, timeout=120, env={**os.environ, "MPNPU_GTEST_STATES": states})
    assert [c.status for c in parse_output(given.stdout)] == ["passed"], given.stdout
    fast = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GTEST_FAIL_FAST": "1"})
    assert {c.name: c.status for c in parse_output(fast.stdout)} == {"S.a_sets": "passed", "S.b_sees_them": "failed"}
    assert "[  SKIPPED ] S.c_sees_a_failed_tests_too" in fast.stdout and fast.returncode == 1


# -- the whole run on our repository --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> tuple[Path, UtRun]:
    root = tmp_path_factory.mktemp("ut")
    repo = fake_repo(root)
    options = UtOptions(jobs=2, racecheck=True, build_dir=str(root / "build"), case_timeout_s=120,
                        binary_timeout_s=300, launch_timeout_s=60)
    return root, run_ut(str(repo), options)


@pytest.mark.slow
@needs_cxx
def test_the_demo_repository_builds_runs_and_says_what_it_lacks(demo_run) -> None:
    _, run = demo_run
    by = {t.id: t for t in run.tests}
    vadd = by["demo/vadd"]
    assert vadd.status == "failed" and vadd.built and vadd.linked
    assert {c.name: c.status for c in vadd.cases} == {
        "vadd_test.adds": "passed", "vadd_test.wrong_expectation": "failed",
        "vadd_test.reads_past_its_input": "failed", "vadd_test.adds_again": "passed"}  # went on after memcheck
    assert vadd.memcheck == 1 and next(c for c in vadd.cases if c.memcheck).name == "vadd_test.reads_past_its_input"
    assert vadd.basic_only
    lacking = by["demo/lacking"]
    assert lacking.status == "build-failed"
    names = {(m.kind, m.name) for m in lacking.missing}
    assert {("name", "AscendC::Frobnicate"), ("name", "TwiddleAll"),
            ("header", "no_such_dir/imaginary_header.h")} <= names
    where = {m.name: m.where for m in lacking.missing}
    assert where["AscendC::Frobnicate"] == "ops-demo/demo/lacking/op_kernel/lacking_a2.cpp:7"  # the repository's file
    assert by["demo/nextgen"].status == "out-of-scope"
    hist = {r.name: r.tests for r in run.histogram()}
    assert hist["Frobnicate"] == 1 and hist["TwiddleAll"] == 1
    assert [r.name for r in run.header_histogram()] == ["no_such_dir/imaginary_header.h"]
    # behind the missing header, with an empty stand-in for it: the test's own use of a missing name
    behind = next(m for m in lacking.missing if m.name == "AscendC::BehindTheHeader")
    assert behind.behind_header and behind.where.endswith("test_lacking.cpp:5")
    assert any("surely_not_an_installed_package" in d for d in vadd.data_skipped) is False  # not called by the test


@pytest.mark.slow
@needs_cxx
def test_racecheck_counts_the_hazards_of_a_racy_test(demo_run) -> None:
    _, run = demo_run
    vsum = next(t for t in run.tests if t.id == "demo/vsum")
    assert vsum.gtest == "passed" and vsum.hazards > 0
    assert not run.ok


@pytest.mark.slow
@needs_cxx
def test_a_second_run_takes_every_build_from_the_cache_and_the_command_writes_its_reports(demo_run) -> None:
    root, first = demo_run
    out = root / "ut.json"
    xml = root / "ut.xml"
    proc = subprocess.run([sys.executable, "-m", "mpnpu", "ut", str(root / "ops-demo"), "--ops", "vadd,lacking",
                           "--build-dir", str(root / "build"), "--build-only", "--quiet", "--json", str(out),
                           "--junit", str(xml)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr
    assert "2 in scope: 1 built, 0 ran" in proc.stdout
    data = json.loads(out.read_text())
    assert [t["build_cached"] for t in data["tests"]] == [True, True]
    assert data["missing_headers"][0]["name"] == "no_such_dir/imaginary_header.h"
    assert ET.parse(xml).getroot().tag == "testsuites"


@pytest.mark.slow
@needs_cxx
def test_run_jobs_runs_built_tests_side_by_side_with_the_same_results(demo_run, monkeypatch) -> None:
    root, first = demo_run
    real = execute.run_binary
    both_running = threading.Barrier(2, timeout=120)  # (only a run that never overlaps waits this long)
    overlapped: list[bool] = []

    def run_binary(*args, **kwargs):
        # the first two tests to run each wait here for the other: both arrive only if they run side by side
        if len(overlapped) < 2:
            try:
                both_running.wait()
                overlapped.append(True)
            except threading.BrokenBarrierError:
                overlapped.append(False)
        return real(*args, **kwargs)

    monkeypatch.setattr(execute, "run_binary", run_binary)
    options = UtOptions(jobs=2, run_jobs=2, racecheck=True, build_dir=str(root / "build"), case_timeout_s=120,
                        binary_timeout_s=300, launch_timeout_s=60)
    again = run_ut(str(root / "ops-demo"), options)
    assert overlapped == [True, True]
    outcome = {t.id: (t.status, sorted((c.name, c.status) for c in t.cases), t.memcheck, t.hazards > 0)
               for t in first.tests}
    assert {t.id: (t.status, sorted((c.name, c.status) for c in t.cases), t.memcheck, t.hazards > 0)
            for t in again.tests} == outcome


def test_device_options_the_tests_cannot_take_are_refused(tmp_path) -> None:
    from mpnpu.cli.main import cli

    repo = fake_repo(tmp_path)
    assert cli(["ut", str(repo), "--poison", "0xff"]) == 2


def test_the_pipes_reach_each_test_program_through_its_environment(tmp_path) -> None:
    from mpnpu.tools.ut import execute

    repo = fake_repo(tmp_path)
    corpus = Corpus.at(str(repo))
    test = discover(corpus).tests[0]
    plain = execute.environment(str(tmp_path / "b"), test, corpus, case_timeout=5, launch_timeout=5, racecheck=False)
    assert plain["MPNPU_PIPES"] == "kernel" and "MPNPU_PIPE_LATENCY_US" not in plain
    late = execute.environment(str(tmp_path / "b"), test, corpus, case_timeout=5, launch_timeout=5, racecheck=False,
                               pipes="async", pipe_latency_us=2500.0)
    assert late["MPNPU_PIPES"] == "async" and late["MPNPU_PIPE_LATENCY_US"] == "2500"


def test_a_test_binary_runs_from_its_run_folder_four_levels_below_the_repository_view(tmp_path) -> None:
    # tests that find their case files from their own path (/proc/self/exe + "../../../../") see the repository
    from mpnpu.tools.ut import execute

    repo = fake_repo(tmp_path)
    (repo / "cases.csv").write_text("one case\n")
    corpus = Corpus.at(str(repo))
    test = discover(corpus).tests[0]
    binary = tmp_path / "b" / "bin" / "t"
    binary.parent.mkdir(parents=True)
    binary.write_text('#!/bin/sh\ncat "$(dirname "$0")/../../../../cases.csv"\n')
    binary.chmod(0o755)
    cwd = execute.run_dir(str(tmp_path / "b"), test, corpus)
    env = execute.environment(str(tmp_path / "b"), test, corpus, case_timeout=5, launch_timeout=5, racecheck=False)
    for _ in range(2):  # a second run replaces the first's placed binary
        run = execute.run_binary(str(binary), cwd, env, 30)
        assert run.exit_code == 0 and run.output_tail == "one case\n", run
    assert os.path.samefile(os.path.join(cwd, "t"), binary)


def test_no_auto_sync_reaches_each_test_program_from_the_command_line(tmp_path, monkeypatch) -> None:
    from mpnpu.cli.commands import ut as ut_command
    from mpnpu.cli.main import cli
    from mpnpu.tools.ut import execute

    repo = fake_repo(tmp_path)
    corpus = Corpus.at(str(repo))
    test = discover(corpus).tests[0]
    monkeypatch.setenv("MPNPU_NO_AUTO_SYNC", "1")  # the caller's own setting is not what a plain run uses
    plain = execute.environment(str(tmp_path / "b"), test, corpus, case_timeout=5, launch_timeout=5, racecheck=True)
    assert "MPNPU_NO_AUTO_SYNC" not in plain
    without = execute.environment(str(tmp_path / "b"), test, corpus, case_timeout=5, launch_timeout=5,
                                  racecheck=True, no_auto_sync=True)
    assert without["MPNPU_NO_AUTO_SYNC"] == "1"
    seen = []

    def run_ut(checkout, options, progress=None, started=None):
        seen.append(options.no_auto_sync)
        raise KeyboardInterrupt

    monkeypatch.setattr(ut_command, "run_ut", run_ut)
    for flags in ([], ["--no-auto-sync"]):
        cli(["ut", str(repo), "--quiet", *flags])
    assert seen == [False, True]


def test_a_binary_started_after_an_interrupt_is_stopped_at_once(tmp_path) -> None:
    # A runner thread may take a test just before the interrupt and start its binary just after
    # stop_running listed the live ones: that binary must not run on (to its timeout, an hour).
    binary = tmp_path / "sleeper"
    binary.write_text("#!/bin/sh\nexec sleep 60\n")
    binary.chmod(0o755)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    execute.stop_running()
    try:
        stopped = execute.run_binary(str(binary), str(run_dir), dict(os.environ), timeout=120)
    finally:
        execute.allow_running()
    assert not stopped.timed_out and stopped.exit_code == -signal.SIGTERM
    again = execute.run_binary(str(binary), str(run_dir), dict(os.environ), timeout=0.5)
    assert again.timed_out  # (allowed again: it ran until its timeout stopped it)


def test_run_jobs_reaches_the_runner_from_the_command_line_and_zero_is_refused(tmp_path, monkeypatch, capsys) -> None:
    from mpnpu.cli.commands import ut as ut_command
    from mpnpu.cli.main import cli

    repo = fake_repo(tmp_path)
    seen = []

    def run_ut(checkout, options, progress=None, started=None):
        seen.append(options.run_jobs)
        raise KeyboardInterrupt

    monkeypatch.setattr(ut_command, "run_ut", run_ut)
    for flags in ([], ["--run-jobs", "3"]):
        cli(["ut", str(repo), "--quiet", *flags])
    assert seen == [1, 3]
    warm = []
    monkeypatch.setattr(ut_command, "run_ut", lambda checkout, options, *a: warm.append(options.warm_python) or
                        (_ for _ in ()).throw(KeyboardInterrupt))
    for flags in ([], ["--cold-python"]):
        cli(["ut", str(repo), "--quiet", *flags])
    assert warm == [True, False]
    assert cli(["ut", str(repo), "--run-jobs", "0"]) == 2
    assert "--run-jobs: expected a positive integer" in capsys.readouterr().err


@pytest.mark.slow
@needs_cxx
def test_mutate_syncs_tests_each_passing_test_in_folders_of_its_own_and_reports_the_score(demo_run) -> None:
    """vsum checks none of its output: its two waits survive, and the racecheck of each mutant says
    why; without a set, the wait after it can never be satisfied, and the test fails (killed). vadd
    fails as it is, so it is not mutation-tested."""
    root, _ = demo_run
    out = root / "mutate.json"
    proc = subprocess.run([sys.executable, "-m", "mpnpu", "ut", str(root / "ops-demo"), "--ops", "vsum,vadd",
                           "--build-dir", str(root / "build"), "--mutate-syncs", "--mutate-jobs", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "MPNPU_PROGRESS_EVERY": "0"})  # (a progress line at every step)
    assert proc.returncode == 1, proc.stderr  # (vadd fails)
    # the progress says how far a test's mutants are, not only which tests finished
    assert [f"[demo/vsum: {n}/4 mutants]" in proc.stderr for n in (1, 4)] == [True, True], proc.stderr
    data = json.loads(out.read_text())
    by = {t["id"]: t for t in data["tests"]}
    assert by["demo/vadd"]["mutation"] is None
    m = by["demo/vsum"]["mutation"]
    sites = {x["site"].rsplit(":", 1)[1]: x for x in m["mutants"]}
    assert set(sites) == {"15", "16", "20", "21"}  # the two SetFlag/WaitFlag pairs, as executed
    assert [sites[k]["status"] for k in ("15", "16", "20", "21")] == ["killed", "survived", "killed", "survived"]
    assert sites["16"]["survivor_class"] == sites["21"]["survivor_class"] == "untested"  # racecheck sees the races
    assert m["score"] == 0.5
    # each mutant ran the one test whose launch executed its site (the other launches nothing)
    assert {tuple(x["ran"]) for x in m["mutants"]} == {("vsum_test.runs",)}
    assert data["mutation"]["tests"] == 1 and data["mutation"]["executed"] == 4 and data["mutation"]["killed"] == 2
    # each slot ran in a run folder of its own
    assert {p.name for p in (root / "build" / "run").iterdir() if "mutant" in p.name} == {
        "demo_vsum-mutant0", "demo_vsum-mutant1"}
    assert "sync mutation testing: 1 tests that passed, 4 executed sync points: 2 killed" in proc.stdout
    assert "demo/vsum: vsum/vsum.cpp:16 (WaitFlag): untested" in proc.stdout
    _resumes(root, out)


def _resumes(root: Path, earlier: Path) -> None:
    """--resume with the report ``earlier`` of vsum's mutants: its program, folder, mpnpu and options
    are the same, so its four mutants are taken over (not run: the same classification and time,
    marked resumed), though its baseline runs again; with the identity changed, they all run again."""
    base = [sys.executable, "-m", "mpnpu", "ut", str(root / "ops-demo"), "--ops", "vsum", "--build-dir",
            str(root / "build"), "--mutate-syncs"]
    out = root / "resumed.json"
    proc = subprocess.run([*base, "--resume", str(earlier), "--json", str(out)], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    def vsum(data: dict) -> dict:
        return next(t for t in data["tests"] if t["id"] == "demo/vsum")

    before = {x["site"]: x for x in vsum(json.loads(earlier.read_text()))["mutation"]["mutants"]}
    data = json.loads(out.read_text())
    now = {x["site"]: x for x in vsum(data)["mutation"]["mutants"]}
    assert set(now) == set(before) and all(now[s]["resumed"] for s in now)
    for s in now:
        assert {k: v for k, v in now[s].items() if k != "resumed"} == before[s]
    assert data["mutation"]["resumed"] == 4 and vsum(data)["mutation"]["baseline_s"] > 0
    assert "4 of those sync points were classified by the earlier run --resume named" in proc.stdout
    # another mpnpu (or program, folder, options): nothing is taken over
    changed = json.loads(earlier.read_text())
    for t in changed["tests"]:
        if t.get("resume_key"):
            t["resume_key"]["mpnpu"] = "0" * 64
    earlier.with_name("changed.json").write_text(json.dumps(changed))
    again = subprocess.run([*base, "--resume", str(earlier.with_name("changed.json")), "--json", str(out)],
                           capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr
    data = json.loads(out.read_text())
    assert data["mutation"]["resumed"] == 0 and data["mutation"]["executed"] == 4
    assert not any(x.get("resumed") for x in vsum(data)["mutation"]["mutants"])


def test_resume_needs_mutate_syncs_and_a_report_of_mpnpu_ut(tmp_path) -> None:
    base = [sys.executable, "-m", "mpnpu", "ut", str(tmp_path)]
    (tmp_path / "other.json").write_text('{"score": 1}')
    (tmp_path / "bad.json").write_text("{")
    for extra, said in ((["--resume", "x.json"], "--resume takes over an earlier run's mutants: give --mutate-syncs"),
                        (["--mutate-syncs", "--resume", str(tmp_path / "none.json")], "No such file"),
                        (["--mutate-syncs", "--resume", str(tmp_path / "bad.json")], "not a JSON report"),
                        (["--mutate-syncs", "--resume", str(tmp_path / "other.json")], "not a report of mpnpu ut")):
        r = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and said in r.stderr, r.stderr


@pytest.mark.slow
@needs_cxx
def test_min_score_gates_the_mutation_score_and_needs_mutate_syncs(demo_run) -> None:
    from mpnpu.cli.main import cli

    root, _ = demo_run
    base = ["ut", str(root / "ops-demo"), "--ops", "vsum", "--build-dir", str(root / "build"), "--quiet"]
    assert cli([*base, "--min-score", "0.5"]) == 2  # a gate with nothing to gate
    assert cli([*base, "--mutate-syncs", "--min-score", "0.75"]) == 1  # vsum's score is 0.5
    assert cli([*base, "--mutate-syncs", "--min-score", "0.5"]) == 0


def test_initcheck_and_synccheck_reach_each_program_and_their_defects_are_counted(tmp_path, monkeypatch) -> None:
    """--synccheck sets MPNPU_SYNCCHECK=1 (an inherited MPNPU_INITCHECK is dropped unless asked); the
    defects a case's log reports are counted, its warnings (a redundant sync) are not."""
    from mpnpu.tools.ut import execute

    monkeypatch.setenv("MPNPU_INITCHECK", "1")
    repo = fake_repo(tmp_path)
    corpus = Corpus.at(str(repo))
    test = discover(corpus).tests[0]
    env = execute.environment(str(tmp_path / "b"), test, corpus, case_timeout=5, launch_timeout=5, racecheck=False,
                              checks=("synccheck",))
    assert env["MPNPU_SYNCCHECK"] == "1" and "MPNPU_INITCHECK" not in env
    out = textwrap.dedent("""\
        [ RUN      ] t.case
        mpnpu: ICPU_RUN_KF(k) at t.cpp:9: synccheck
        ====== ERROR: Duplicate event id (synccheck) at SetFlag<V_MTE2>(0) (x48 in 1 of 1 launches):
        ======    SetFlag<V_MTE2>(0) by PIPE_V of vector core 0 (block 0) in F at k.h:98
        ====== WARNING: Redundant sync (synccheck) at WaitFlag<MTE2_V>(1) (x1 in 1 of 1 launches):
        ====== ERROR: Uninitialized read (initcheck) at UB bytes [0:64] of vector core 0 (x1 in 1 of 1 launches):
        ====== SUMMARY (synccheck): 2 findings (1 duplicate event id, 1 redundant sync) in 1 launch checked
        [       OK ] t.case (12 ms)
        """)
    (case,) = parse_output(out)
    assert case.defects == 2 and case.to_dict()["defects"] == 2 and case.hazards == 0


def test_a_kernel_finds_a_sibling_operators_header_and_the_repository_from_its_stage(tmp_path) -> None:
    """The repository's unit-test build copies every test's kernels into one tbe/ascendc, so a kernel
    may include ``../<other op>/x.h``, and a path four folders up from it lands in the repository.
    Each test's stage resolves both, and links the files (no copies)."""
    from mpnpu.tools.ut.build import stage_common, stage_siblings, stage_test
    from mpnpu.tools.ut.discover import Corpus, UtTest

    repo = tmp_path / "ops"
    write(repo, {
        "cmake/ut.cmake": "# layout marker\n",
        "norm/base_op/op_kernel/base_helpers.h": "#define FROM_SIBLING 1\n",
        "norm/other/op_kernel/other.h": "#define FROM_REPO 1\n",
        "experimental/norm/new_op/op_kernel/new_op.cpp": '#include "../base_op/base_helpers.h"\n'
                                                         '#include "../../../../norm/other/op_kernel/other.h"\n',
    })
    corpus = Corpus.at(str(repo))
    build = str(tmp_path / "build")
    common = stage_common(corpus, build)
    siblings = stage_siblings(corpus, build, common)
    test = UtTest(op="new_op", op_dir="experimental/norm/new_op", cmake=str(repo / "x"), line=1, socs=("ascend910B1",),
                  in_scope=True, kernel="new_op.cpp")
    staged = stage_test(corpus, test, build, common, siblings)
    kernel_dir = os.path.dirname(staged.kernel or "")
    sibling = os.path.join(kernel_dir, "..", "base_op", "base_helpers.h")
    upward = os.path.join(kernel_dir, "..", "..", "..", "..", "norm", "other", "op_kernel", "other.h")
    assert open(sibling).read() == "#define FROM_SIBLING 1\n"
    assert open(upward).read() == "#define FROM_REPO 1\n"
    assert os.path.islink(os.path.join(siblings, "base_op", "base_helpers.h"))
    assert sorted(os.listdir(siblings)) == ["base_op", "new_op", "other"]


@needs_cxx
def test_a_staged_header_finds_another_operators_header_from_where_it_really_is(tmp_path) -> None:
    """A header of the operator's op_kernel that includes ``../../<other op>/op_kernel/x.h``: the stage
    links the header, and the compiler resolves the path from the link's folder; the operator's own
    op_kernel folder searched last (-idirafter) finds it from where the header really is."""
    from mpnpu.tools.ut.build import stage_common, stage_test
    from mpnpu.tools.ut.discover import Corpus, UtTest

    repo = tmp_path / "ops"
    write(repo, {
        "cmake/ut.cmake": "# layout marker\n",
        "matmul/peer/op_kernel/peer_tiling.h": "#define FROM_PEER 7\n",
        "matmul/bmm/op_kernel/bmm_tiling.h": '#include "../../peer/op_kernel/peer_tiling.h"\n',
        "matmul/bmm/op_kernel/bmm.cpp": '#include "bmm_tiling.h"\nint peer = FROM_PEER;\n',
    })
    corpus = Corpus.at(str(repo))
    build = str(tmp_path / "build")
    test = UtTest(op="bmm", op_dir="matmul/bmm", cmake=str(repo / "x"), line=1, socs=("ascend910B1",),
                  in_scope=True, kernel="bmm.cpp")
    staged = stage_test(corpus, test, build, stage_common(corpus, build))
    assert staged.kernel and os.path.islink(os.path.join(os.path.dirname(staged.kernel), "bmm_tiling.h"))
    cc = [os.environ.get("CXX", "g++"), "-E", "-P", *[f"-I{d}" for d in staged.include_dirs if os.path.isdir(d)]]
    without = subprocess.run([*cc, staged.kernel], capture_output=True, text=True, timeout=60)
    assert without.returncode != 0 and "peer_tiling.h" in without.stderr
    found = subprocess.run([*cc, *[f"-idirafter{d}" for d in staged.after_dirs], staged.kernel], capture_output=True,
                           text=True, timeout=60)
    assert found.returncode == 0 and "int peer = 7;" in found.stdout, found.stderr


def test_a_kernel_dtype_its_registration_does_not_define_is_said_to_stop_the_test_as_registered() -> None:
    """DTYPE_<NAME> comes from the operator definition in the device build; a test registered without
    it cannot build, and the report says so (a DTYPE its options define is not blamed)."""
    from mpnpu.tools.ut.build import _unregistered_dtypes
    from mpnpu.tools.ut.discover import UtTest
    from mpnpu.tools.ut.missing import Missing

    test = UtTest(op="g", op_dir="x/g", cmake="/r/x/g/tests/ut/op_kernel/CMakeLists.txt", line=12,
                  socs=("ascend910B1",), in_scope=True, options=("-DDTYPE_Y=float",))
    found = [Missing("name", "DTYPE_X", "g.cpp:3", "'DTYPE_X' was not declared"),
             Missing("name", "DTYPE_Y", "g.cpp:3", "'DTYPE_Y' was not declared"),
             Missing("name", "Foo", "g.cpp:4", "'Foo' was not declared")]
    assert _unregistered_dtypes(test, found) == [
        "the kernel uses DTYPE_X, which its registration (AddOpTestCase at CMakeLists.txt:12) does not define "
        "and the repository's unit-test build does not generate: the test cannot build as registered"]
    assert _unregistered_dtypes(test, found[1:]) == []


def test_the_kernel_type_the_chip_would_launch_is_read_from_the_kernels_files() -> None:
    """A declared type of this chip class wins (another family's is passed over); with none, cube code
    (cube instructions, Matmul, code for cube cores, cube/vector flags) makes it mix, else vector-only."""
    from mpnpu.tools.ut.kernel_mode import launched_mode

    assert launched_mode(["KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_VECTOR_CORE);",
                          "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); Mmad(c, a, b, p);"]) == "aiv"
    assert launched_mode(["KERNEL_TASK_TYPE(1, KERNEL_TYPE_MIX_AIC_1_2);"]) == "mix"
    assert launched_mode(["KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);"]) == "aic"
    assert launched_mode(["Add(z, x, y, n); DataCopy(g, z, n);"]) == "aiv"
    assert launched_mode(["Add(z, x, y, n);", "if ASCEND_IS_AIC { return; }"]) == "mix"
    assert launched_mode(["REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm);"]) == "mix"
    assert launched_mode(["// Mmad in a comment\nAdd(z, x, y, n);"]) == "aiv"
    assert launched_mode(["__global__ __cube__ void k(GM_ADDR a) { Mmad(c, a, b, p); }"]) == "aic"
    assert launched_mode(["__global__ __mix__(1, 2) void k(GM_ADDR a) {}"]) == "mix"


def test_a_test_source_whose_every_case_is_commented_out_is_said_to_run_none(tmp_path) -> None:
    """ge_glu_v2's unit test registers for the chip and builds, and every TEST_F line starts with //:
    the report says why gtest ran no case."""
    from mpnpu.tools.ut.build import _cases_commented_out

    off = tmp_path / "test_off.cpp"
    off.write_text("#include <gtest/gtest.h>\n// TEST_F(t, a)\n// {\n// }\n  //TEST_F(t, b) {}\n")
    on = tmp_path / "test_on.cpp"
    on.write_text("// TEST_F(t, a) {}\nTEST_F(t, b) {}\n")
    assert _cases_commented_out([str(off)]) == [
        "every test case of the test source is commented out (its 2 TEST/TEST_F lines start with //): gtest runs none"]
    assert _cases_commented_out([str(off), str(on)]) == []
    assert _cases_commented_out([str(tmp_path / "none.cpp")]) == []


def test_no_tiling_header_is_made_for_a_test_that_defines_its_tiling_structs_itself(tmp_path) -> None:
    """A test folder whose own header (not named <op>_tiling_def.h), included by its test source, defines
    the tiling structs its op_host declares: a header made from op_host as well would define them twice
    (ops-nn's fused_linear_cross_entropy_loss_grad), so none is made; a folder without them gets one, and
    so does one whose header defines them but no test source includes it (ops-nn's index_put_with_sort:
    its test takes the structs from the header made from op_host)."""
    from mpnpu.tools.ut.build import _defines_its_own

    made = "BEGIN_TILING_DATA_DEF(FooTilingData)\nTILING_DATA_FIELD_DEF(uint32_t, n);\nEND_TILING_DATA_DEF;\n"
    (tmp_path / "foo_tiling_data_def.h").write_text("#pragma once\nstruct FooTilingData {\n    uint32_t n;\n};\n")
    (tmp_path / "other.h").write_text("struct FooTilingDataLike { int x; };\n")
    (tmp_path / "test_foo.cpp").write_text('#include "gtest/gtest.h"\n')
    assert _defines_its_own(str(tmp_path), made) == ""  # defined, but no test source includes it
    (tmp_path / "test_foo.cpp").write_text('#include "gtest/gtest.h"\n  #include "foo_tiling_data_def.h"\n')
    assert _defines_its_own(str(tmp_path), made) == "foo_tiling_data_def.h"
    assert _defines_its_own(str(tmp_path), made.replace("FooTilingData", "BarTilingData")) == ""
    (tmp_path / "foo_tiling_data_def.h").unlink()
    assert _defines_its_own(str(tmp_path), made) == ""  # (a longer name that starts the same is not it)


def test_the_operator_type_is_the_binary_configs_else_the_name_in_camel_case(tmp_path) -> None:
    """As cmake/ut.cmake names it: the op_type of the operator's *_binary.json, else its name in CamelCase
    (the generated tiling header takes the struct registered under that type)."""
    from mpnpu.tools.ut.discover import op_type

    config = tmp_path / "rnn" / "lstm_grad_v2" / "op_host" / "config" / "ascend910b"
    config.mkdir(parents=True)
    assert op_type(str(tmp_path), "lstm_grad_v2") == "LstmGradV2"
    assert op_type(str(tmp_path), "swi_glu") == "SwiGlu"
    (config / "lstm_grad_v2_binary.json").write_text('{\n  "op_type": "LSTMGradV2",\n  "op_list": []\n}\n')
    assert op_type(str(tmp_path), "lstm_grad_v2") == "LSTMGradV2"


def test_an_operator_without_a_tiling_header_takes_its_dependencys_that_registers_its_type(tmp_path) -> None:
    """norm/add_rms_norm_quant_v2's layout: its op_host has no tiling header; its test's build takes the
    operator it depends on, whose header registers a struct for the v2 type too."""
    repo = tmp_path / "ops-dep"
    header = "norm/base_norm/op_host/base_norm_tiling.h"
    write(repo, {
        "cmake/ut.cmake": "#\n",
        header: ("BEGIN_TILING_DATA_DEF(BaseTiling)\nTILING_DATA_FIELD_DEF(int64_t, n);\nEND_TILING_DATA_DEF;\n"
                 "REGISTER_TILING_DATA_CLASS(BaseNorm, BaseTiling)\n"
                 "REGISTER_TILING_DATA_CLASS(BaseNormV2, BaseTiling)\n"),
        "norm/base_norm/op_kernel/base_norm.cpp": "// kernel\n",
        "norm/base_norm_v2/op_host/base_norm_v2_def.cpp": "// no tiling header here\n",
        "norm/base_norm_v2/op_kernel/base_norm_v2.cpp": "// kernel\n",
        "norm/base_norm_v2/tests/ut/op_kernel/CMakeLists.txt":
            'AddOpTestCase(base_norm_v2 "ascend910B1" "" base_norm)\n',
        "norm/base_norm_v2/tests/ut/op_kernel/test_base_norm_v2.cpp": "// test\n",
        "norm/other_v2/op_host/other_v2_def.cpp": "// no tiling header, and the dependency registers nothing for it\n",
        "norm/other_v2/op_kernel/other_v2.cpp": "// kernel\n",
        "norm/other_v2/tests/ut/op_kernel/CMakeLists.txt": 'AddOpTestCase(other_v2 "ascend910B1" "" base_norm)\n',
        "norm/other_v2/tests/ut/op_kernel/test_other_v2.cpp": "// test\n",
    })
    tests = {t.op: t for t in discover(Corpus.at(str(repo))).tests}
    assert tests["base_norm_v2"].host_tiling == str(repo / header)
    assert "dependency base_norm" in tests["base_norm_v2"].tiling_note
    assert tests["other_v2"].host_tiling is None and "no tiling header" in tests["other_v2"].tiling_note


@needs_cxx
def test_a_cached_failure_on_a_missing_header_goes_when_the_header_appears(tmp_path) -> None:
    # A failed compile is cached by the files it read; a header it could not find is no such file,
    # so its appearing (mpnpu gaining the header) must drop the failure too.
    from mpnpu.tools.ut.build import ObjectCache, Toolchain, compile_unit
    tool = Toolchain((os.environ.get("CXX", "g++"),), "g++ (test)", "-O0", (), ())
    cache = ObjectCache(str(tmp_path / "objects"))
    inc = tmp_path / "include"
    inc.mkdir()
    src = tmp_path / "unit.cpp"
    src.write_text('#include "later.h"\nint f() { return LATER; }\n')
    flags = ["-std=c++17", f"-I{inc}"]
    first = compile_unit(tool, cache, str(src), flags, "unit.cpp", dict(os.environ))
    assert not first.ok and "later.h" in first.stderr
    again = compile_unit(tool, cache, str(src), flags, "unit.cpp", dict(os.environ))
    assert not again.ok and again.cached  # nothing changed: the failure is taken from the cache
    (inc / "later.h").write_text("#define LATER 3\n")
    third = compile_unit(tool, cache, str(src), flags, "unit.cpp", dict(os.environ))
    assert third.ok and not third.cached


def test_a_compile_whose_source_went_away_is_not_cached_and_says_why(tmp_path) -> None:
    # A second run sharing the build folder once removed a stage under a compile: "cc1plus: fatal
    # error: <source>: No such file" was cached as the test's own failure, with no error shown.
    from mpnpu.tools.ut.build import ObjectCache, Toolchain, compile_unit
    tool = Toolchain((os.environ.get("CXX", "g++"),), "g++ (test)", "-O0", (), ())
    cache = ObjectCache(str(tmp_path / "objects"))
    src = tmp_path / "gone.cpp"
    unit = compile_unit(tool, cache, str(src), ["-std=c++17"], "gone.cpp", dict(os.environ))
    assert not unit.ok and not unit.cached
    assert not [f for f in os.listdir(cache.folder) if f.endswith(".json")]  # nothing kept
    lines = missing.error_lines(unit.stderr)  # (GCC: one line; Clang adds "no input files")
    assert lines and any("error" in ln and "gone.cpp" in ln for ln in lines)
    assert missing.count_errors(unit.stderr) == len(lines)
    # the linker's wrapper is not such a line: its output (the last lines) says more
    assert missing.error_lines("/usr/bin/ld: cannot find -lx\ncollect2: error: ld returned 1 exit status\n") == []
    src.write_text("int f() { return 1; }\n")  # it is back: it compiles
    assert compile_unit(tool, cache, str(src), ["-std=c++17"], "gone.cpp", dict(os.environ)).ok
    # such a failure kept by an earlier mpnpu is dropped once its source is there
    cache.store("stale", False, f"cc1plus: fatal error: {src}: No such file or directory\n", [str(src)], None)
    assert cache.lookup("stale") is None
    cache.store("real", False, f"{src}:1:1: error: 'x' was not declared\n", [str(src)], None)
    assert cache.lookup("real") == (False, f"{src}:1:1: error: 'x' was not declared\n")


def test_a_build_folder_is_one_runs_at_a_time(tmp_path) -> None:
    from mpnpu.tools.folder_lock import hold_folder
    folder = tmp_path / "build"
    with hold_folder(str(folder), "mpnpu ut"):
        with pytest.raises(UsageError, match=rf"in use by another run \(pid {os.getpid()} on [^:]+: mpnpu ut\)"
                                             r".*--build-dir"):
            with hold_folder(str(folder), "mpnpu samples"):
                pass
        # the command line: exit 2 and one line, naming the folder and the run that holds it
        r = subprocess.run([sys.executable, "-m", "mpnpu", "ut", str(fake_repo(tmp_path)), "--build-dir", str(folder)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert str(folder) in r.stderr and f"pid {os.getpid()}" in r.stderr
        # a checkout in another layout is said first, whoever holds the folder
        with pytest.raises(UsageError, match="not laid out like"):
            run_ut(str(tmp_path / "build"), UtOptions(build_dir=str(folder)))
    with hold_folder(str(folder), "mpnpu samples"):  # released when its holder's block ends
        pass


def test_resume_reads_a_report_kept_compressed(tmp_path) -> None:
    """A report kept as .gz (docs/data keeps the corpus run's so) is read as the plain one; a .gz that
    is no gzip file is the same one-line usage error as any unreadable report."""
    import gzip

    from mpnpu.tools.mutate import Mutant
    from mpnpu.tools.ut import resume

    mutant = {**Mutant("k/k.h:3", "SyncAll").to_dict(), "status": "killed"}
    report = {"repo": "r", "tests": [{"id": "a/b", "resume_key": {"binary": "x"},
                                      "mutation": {"mutants": [mutant]}}]}
    plain, packed = tmp_path / "r.json", tmp_path / "r.json.gz"
    plain.write_text(json.dumps(report))
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    got, want = resume.load(str(packed)), resume.load(str(plain))
    assert list(got) == ["a/b"] == list(want) and got["a/b"].mutants.keys() == {"k/k.h:3"}
    (tmp_path / "bad.json.gz").write_text("{")
    with pytest.raises(UsageError, match="bad.json.gz"):
        resume.load(str(tmp_path / "bad.json.gz"))
