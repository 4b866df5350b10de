"""mpnpu samples on a tree of samples we write in the dev kit's layout: discovery and scope, the
program built unchanged and its README recipe run (data, program, verify), failures reported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mpnpu.tools.samples.build import stage_source
from mpnpu.tools.samples.discover import discover
from tests.ascendc_util import needs_cxx

KERNEL = textwrap.dedent("""\
    #include <cstdio>
    #include "acl/acl.h"
    #include "kernel_operator.h"
    #include "data_utils.h"
    #ifdef ASCENDC_CPU_DEBUG
    #include "cpu_debug_launch.h"  // (the dev kit's samples: a header of the vendor's CPU build only)
    #endif

    constexpr uint32_t N = 256;

    extern "C" __global__ __aicore__ void add_one(GM_ADDR x, GM_ADDR y) {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
        AscendC::TPipe pipe;
        AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, N * sizeof(float));
        AscendC::GlobalTensor<float> xg, yg;
        xg.SetGlobalBuffer((__gm__ float*)x + AscendC::GetBlockIdx() * N, N);
        yg.SetGlobalBuffer((__gm__ float*)y + AscendC::GetBlockIdx() * N, N);
        AscendC::LocalTensor<float> t = buf.Get<float>();
        AscendC::DataCopy(t, xg, N);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(0);
        AscendC::Adds(t, t, float(STEP), N);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
        AscendC::DataCopy(yg, t, N);
    }

    int32_t main(int32_t argc, char* argv[]) {
        size_t bytes = 2 * N * sizeof(float);
        aclInit(nullptr);
        aclrtStream stream = nullptr;
        aclrtCreateStream(&stream);
        uint8_t *xHost, *yHost, *xDevice, *yDevice;
        aclrtMallocHost((void**)&xHost, bytes);
        aclrtMallocHost((void**)&yHost, bytes);
        aclrtMalloc((void**)&xDevice, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
        aclrtMalloc((void**)&yDevice, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
        ReadFile("./input/input_x.bin", bytes, xHost, bytes);
        aclrtMemcpy(xDevice, bytes, xHost, bytes, ACL_MEMCPY_HOST_TO_DEVICE);
        add_one<<<2, nullptr, stream>>>(xDevice, yDevice);
        aclrtSynchronizeStream(stream);
        aclrtMemcpy(yHost, bytes, yDevice, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
        WriteFile("./output/output.bin", yHost, bytes);
        bool same = true;  // (the high-level API samples' way: the program compares and says so)
        for (uint32_t i = 0; i < 2 * N; ++i) same = same && ((float*)yHost)[i] == float(i) + 1.0f;
        printf(same ? "test pass!\\n" : "test failed!\\n");
        aclrtFree(xDevice);
        aclrtFree(yDevice);
        aclrtFreeHost(xHost);
        aclrtFreeHost(yHost);
        aclFinalize();
        return 0;
    }
    """)
GEN = textwrap.dedent("""\
    import numpy as np
    x = np.arange(512, dtype=np.float32)
    x.tofile("./input/input_x.bin")
    (x + 1).tofile("./output/golden.bin")
    """)
VERIFY = textwrap.dedent("""\
    import sys
    import numpy as np
    out, gold = np.fromfile(sys.argv[1], np.float32), np.fromfile(sys.argv[2], np.float32)
    if np.array_equal(out, gold):
        print("test pass!")
    else:
        print("test failed!")
        sys.exit(1)
    """)


def _cmake(arch: str, defines: str = "") -> str:
    return (f'cmake_minimum_required(VERSION 3.16)\nset(CMAKE_ASC_ARCHITECTURES "{arch}" CACHE STRING "arch")\n'
            f'set(STEP_VALUE "1" CACHE STRING "the step")\nproject(s LANGUAGES ASC CXX)\n'
            f"add_executable(demo\n    add_one.asc\n)\n{defines}")


README = textwrap.dedent("""\
    # a sample
    ```bash
    mkdir -p build && cd build;
    cmake .. -DCMAKE_ASC_ARCHITECTURES=dav-2201 -DSTEP_VALUE=1;make -j;
    python3 ../scripts/gen_data.py   # inputs
    ./demo
    python3 ../scripts/verify_result.py output/output.bin output/golden.bin
    ```
    """)


#: a README whose recipe has no verify step, and a block of the program's expected output
SELF_CHECK_README = README.replace("python3 ../scripts/verify_result.py output/output.bin output/golden.bin\n", "") \
    + "```bash\ntest pass!\n```\n"


def _sample(root: Path, name: str, *, arch: str = "dav-2201", kernel: str = KERNEL,
            defines: str = "add_definitions(-DSTEP=${STEP_VALUE})\n", readme: str = README) -> None:
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "CMakeLists.txt").write_text(_cmake(arch, defines))
    (folder / "README.md").write_text(readme)
    (folder / "add_one.asc").write_text(kernel)
    (folder / "scripts" / "gen_data.py").write_text(GEN)
    (folder / "scripts" / "verify_result.py").write_text(VERIFY)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("samples") / "examples"
    _sample(root, "03_basic_api/add_one")
    _sample(root, "03_basic_api/add_two", defines="add_definitions(-DSTEP=2)\n")  # its golden says +1: fails
    _sample(root, "03_basic_api/lacking", kernel=KERNEL.replace("AscendC::Adds(t, t, float(STEP), N);",
                                                                "AscendC::NotAnApi(t, float(STEP));"))
    _sample(root, "03_basic_api/next_chip", arch="dav-3510",
            readme=README.replace("dav-2201", "dav-3510"))
    _sample(root, "04_advanced_api/softmax_like")
    _sample(root, "03_basic_api/self_check", readme=SELF_CHECK_README)
    _sample(root, "03_basic_api/self_check_two", readme=SELF_CHECK_README, defines="add_definitions(-DSTEP=2)\n")
    return root


def test_a_define_set_in_the_branch_for_this_chip_class(tmp_path) -> None:
    """``if(CMAKE_ASC_ARCHITECTURES STREQUAL "dav-2201") set(ID 2201) elseif(...) set(ID 3510) endif()``:
    the define takes the value of the branch that holds."""
    defines = ('if(CMAKE_ASC_ARCHITECTURES STREQUAL "dav-2201")\n    set(ARCH_ID 2201)\n'
               'elseif(CMAKE_ASC_ARCHITECTURES STREQUAL "dav-3510")\n    set(ARCH_ID 3510)\nendif()\n'
               "target_compile_definitions(demo PRIVATE\n    NPU_ARCH=${ARCH_ID}\n    STEP=${STEP_VALUE}\n)\n")
    _sample(tmp_path, "s", defines=defines)
    (sample,) = discover(str(tmp_path))
    assert sample.defines == ["-DNPU_ARCH=2201", "-DSTEP=1"]


def test_a_define_under_an_option_left_off_is_not_taken(tmp_path) -> None:
    """``option(USE_FRONT_MODE "..." OFF)`` then ``if(USE_FRONT_MODE) target_compile_definitions(...)
    endif()``: the README's first recipe does not turn the option on, so the define stays out; an
    option on by default (or a condition mpnpu cannot read) keeps its branch's defines."""
    defines = ('option(USE_FRONT_MODE "front" OFF)\noption(USE_TAIL "tail" ON)\n'
               "if(USE_FRONT_MODE)\n    target_compile_definitions(demo PRIVATE FRONT)\n"
               "else()\n    target_compile_definitions(demo PRIVATE BACK)\nendif()\n"
               "if(NOT USE_TAIL)\n    add_definitions(-DNO_TAIL)\nendif()\n"
               "if(USE_TAIL)\n    add_definitions(-DTAIL)\nendif()\n"
               "if(EXISTS somewhere)\n    add_definitions(-DMAYBE)\nendif()\n")
    _sample(tmp_path, "s", defines=defines)
    (sample,) = discover(str(tmp_path))
    assert sample.defines == ["-DBACK", "-DTAIL", "-DMAYBE"]


def test_a_define_under_a_numeric_equal_follows_the_readmes_value(tmp_path) -> None:
    """``if (MODE EQUAL 1) target_compile_definitions(... LOWER) endif()``: the README's ``-DMODE=0`` leaves it
    out, ``-DMODE=1`` takes it (the dev kit's matmul_triangle)."""
    defines = "if (MODE EQUAL 1)\n    target_compile_definitions(demo PRIVATE LOWER)\nendif()\n"
    _sample(tmp_path, "m0", defines=defines, readme=README.replace("-DSTEP_VALUE=1", "-DSTEP_VALUE=1 -DMODE=0"))
    _sample(tmp_path, "m1", defines=defines, readme=README.replace("-DSTEP_VALUE=1", "-DSTEP_VALUE=1 -DMODE=1"))
    m0, m1 = discover(str(tmp_path))
    assert m0.defines == []
    assert m1.defines == ["-DLOWER"]


def test_a_define_under_an_option_left_off_is_not_added(tmp_path) -> None:
    """``option(USE_X "..." OFF)`` and ``if(USE_X) target_compile_definitions(demo PRIVATE USE_X) endif()``: the
    README's default build leaves the option off, so the define is not added (nor its else branch's skipped);
    a README that turns it on gets it."""
    defines = ('option(USE_X "x mode" OFF)\nif(USE_X)\n    target_compile_definitions(demo PRIVATE USE_X)\n'
               "else()\n    add_definitions(-DPLAIN)\nendif()\nif(NOT USE_X)\n    add_definitions(-DNOT_X)\nendif()\n")
    _sample(tmp_path, "off", defines=defines)
    _sample(tmp_path, "on", defines=defines, readme=README.replace("-DSTEP_VALUE=1", "-DSTEP_VALUE=1 -DUSE_X=ON"))
    off, on = discover(str(tmp_path))  # (in path order)
    assert off.defines == ["-DPLAIN", "-DNOT_X"]
    assert on.defines == ["-DUSE_X"]


def test_a_define_from_a_regex_match_of_the_architecture(tmp_path) -> None:
    """``string(REGEX MATCH "([0-9]+)" ARCH_NUM "${CMAKE_ASC_ARCHITECTURES}")`` then
    ``add_definitions(-DASC_ARCHITECTURES=${ARCH_NUM})``: the define is the number the regex finds."""
    defines = ('string(REGEX MATCH "([0-9]+)" ARCH_NUM "${CMAKE_ASC_ARCHITECTURES}")\n'
               "add_definitions(-DASC_ARCHITECTURES=${ARCH_NUM})\n")
    _sample(tmp_path, "s", defines=defines)
    (sample,) = discover(str(tmp_path))
    assert sample.defines == ["-DASC_ARCHITECTURES=2201"]


def test_a_script_lacking_a_python_package_is_reported_as_such_not_as_a_failure(tmp_path) -> None:
    """A data step that stops on ``ModuleNotFoundError`` makes the sample ``needs-package``, with the
    package named and how to install it; the run counts it apart and does not fail for it."""
    from mpnpu.tools.samples.build import SampleBuild
    from mpnpu.tools.samples.run import Step
    from mpnpu.tools.samples.suite import SampleResult, SamplesRun, format_table

    _sample(tmp_path, "s")
    (sample,) = discover(str(tmp_path))
    tail = ("Traceback (most recent call last):\n  File \"gen_data.py\", line 3, in <module>\n"
            "ModuleNotFoundError: No module named 'ml_dtypes.sub'\n")
    built = SampleBuild(ok=True, program="demo", seconds=1.0)  # (a build that worked, without building)
    result = SampleResult(sample, built, [Step(["/usr/bin/python3", "gen.py"], 1, tail, 0.1)])
    assert result.needs_module == "ml_dtypes" and result.status == "needs-package"
    d = result.to_dict()
    assert "pip install ml-dtypes" in d["reason"] and "'ml_dtypes'" in d["reason"]
    run = SamplesRun(str(tmp_path), [result])
    assert run.ok and run.counts()["needs_package"] == 1 and run.counts()["passed"] == 0
    assert "need the Python package 'ml_dtypes'" in format_table(run)
    # the program's own failure mentioning a module is not this (only a Python step's)
    other = SampleResult(sample, built, [Step(["./demo"], 1, tail, 0.1)])
    assert other.needs_module is None and other.status != "needs-package"


def test_discovery_reads_scope_defines_and_recipe(tree) -> None:
    by = {s.name: s for s in discover(str(tree))}
    assert sorted(by) == ["03_basic_api/add_one", "03_basic_api/add_two", "03_basic_api/lacking",
                          "03_basic_api/next_chip", "03_basic_api/self_check", "03_basic_api/self_check_two",
                          "04_advanced_api/softmax_like"]
    assert by["03_basic_api/self_check"].verify == [] and by["03_basic_api/self_check"].expect == ["test pass!"]
    assert by["03_basic_api/add_one"].expect == []
    one = by["03_basic_api/add_one"]
    assert one.in_scope and one.defines == ["-DSTEP=1"] and one.program == "demo"
    assert one.gen == ["python3", "../scripts/gen_data.py"]
    assert one.verify == ["python3", "../scripts/verify_result.py", "output/output.bin", "output/golden.bin"]
    assert by["03_basic_api/next_chip"].reason == "targets dav-3510, not dav-2201 (this chip class)"
    assert "04_advanced_api" in by["04_advanced_api/softmax_like"].reason


@pytest.mark.slow
@needs_cxx
def test_each_sample_is_built_run_and_verified_and_the_command_reports_it(tree, tmp_path) -> None:
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "mpnpu", "samples", str(tree), "-j", "2", "--build-dir",
                        str(tmp_path / "b"), "--json", str(out), "--quiet"], capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 1, r.stdout + r.stderr  # two samples in scope fail
    data = json.loads(out.read_text())
    status = {s["name"]: s["status"] for s in data["samples"]}
    # the self-checking samples pass or fail by the README's expected output ("test pass!")
    assert status == {"03_basic_api/add_one": "passed", "03_basic_api/add_two": "failed",
                      "03_basic_api/lacking": "build-failed", "03_basic_api/next_chip": "out-of-scope",
                      "04_advanced_api/softmax_like": "out-of-scope", "03_basic_api/self_check": "passed",
                      "03_basic_api/self_check_two": "failed"}
    assert data["counts"] == {"found": 7, "in_scope": 5, "with_verify": 5, "built": 4, "ran": 4, "passed": 2,
                              "failed": 2, "ran_unverified": 0, "run_failed": 0, "build_failed": 1,
                              "needs_package": 0}
    lacking = next(s for s in data["samples"] if s["name"] == "03_basic_api/lacking")
    assert any(m["name"] == "AscendC::NotAnApi" or m["name"] == "NotAnApi" for m in lacking["missing"]), lacking
    assert any(m["where"].endswith("add_one.asc:23") for m in lacking["missing"]), lacking["missing"]
    passed = next(s for s in data["samples"] if s["name"] == "03_basic_api/add_one")
    assert passed["kernel_mode"] == "aiv" and "test pass!" in passed["steps"][-1]["tail"]
    assert r.stdout.strip() == ("7 samples found, 5 for this chip class: 4 built, 4 ran, "
                                "2 of 5 passed their own check (verify script or expected output)")
    assert os.listdir(tmp_path / "b" / "run")


def test_the_run_controls_reach_each_step_and_nothing_the_options_leave_off(monkeypatch) -> None:
    from mpnpu.tools.samples.suite import SamplesOptions, environment

    monkeypatch.setenv("MPNPU_NO_AUTO_SYNC", "1")
    monkeypatch.setenv("MPNPU_RACECHECK", "1")
    plain = environment(SamplesOptions())
    assert "MPNPU_NO_AUTO_SYNC" not in plain and "MPNPU_RACECHECK" not in plain
    assert plain["MPNPU_PIPES"] == "kernel"
    checked = environment(SamplesOptions(racecheck=True, no_auto_sync=True, pipes="async", pipe_latency_us=250.0))
    assert checked["MPNPU_NO_AUTO_SYNC"] == checked["MPNPU_RACECHECK"] == "1"
    assert checked["MPNPU_PIPES"] == "async" and checked["MPNPU_PIPE_LATENCY_US"] == "250"


_ACL_HOST = r"""
#include <cstdio>
#include <cstdlib>
#include "acl/acl.h"
int main(int argc, char** argv) {
    FILE* in = std::fopen(argv[1], "rb");
    float f;
    while (std::fread(&f, sizeof f, 1, in) == 1) {
        aclFloat16 h = aclFloatToFloat16(f);
        std::printf("%u %a\n", unsigned(h), aclFloat16ToFloat(h));
    }
    aclrtContext ctx;
    int rc = aclrtCreateContext(&ctx, 0) + aclrtDestroyContext(ctx) + aclrtSynchronizeDevice() +
             aclrtGetLastError(ACL_RT_THREAD_LEVEL);
    const char* msg = aclGetRecentErrMsg();
    std::printf("rc %d msg %s\n", rc, msg == nullptr || msg[0] == 0 ? "none" : msg);
    (void)argc;
}
"""


@needs_cxx
def test_the_host_half_conversions_round_as_numpy_does(tmp_path) -> None:
    """aclFloatToFloat16 / aclFloat16ToFloat (the samples' data printing) against numpy's binary16:
    normal, subnormal, tie, overflow and NaN inputs; and the context and error calls answer success."""
    import numpy as np

    from mpnpu.ascendc.build.compiler import INCLUDE_DIR

    src, exe, data = tmp_path / "acl.cpp", tmp_path / "acl", tmp_path / "in.bin"
    src.write_text(_ACL_HOST)
    rng = np.random.default_rng(0)
    values = np.concatenate([
        rng.uniform(-70000, 70000, 2000), rng.uniform(-1e-4, 1e-4, 2000), 2.0 ** rng.uniform(-26, -14, 500),
        np.float16(rng.uniform(-2, 2, 500)).astype(np.float64) + 2.0 ** -12,  # ties between two halves
        [0.0, -0.0, 65504.0, 65520.0, 1e9, np.inf, -np.inf]]).astype(np.float32)
    values.tofile(data)
    cc = subprocess.run([os.environ.get("CXX", "g++"), "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE_DIR}",
                         str(src), "-o", str(exe)], capture_output=True, text=True, timeout=300)
    assert cc.returncode == 0, cc.stderr
    out = subprocess.run([str(exe), str(data)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    with np.errstate(over="ignore"):
        want = values.astype(np.float16)
    got = np.array([int(line.split()[0]) for line in out[:-1]], dtype=np.uint16)
    np.testing.assert_array_equal(got, want.view(np.uint16))
    back = np.array([float.fromhex(line.split()[1]) for line in out[:-1]], dtype=np.float32)
    np.testing.assert_array_equal(back, want.astype(np.float32))
    assert out[-1] == "rc 0 msg none"


def test_a_launch_runs_as_the_type_its_kernels_qualifier_declares(tmp_path) -> None:
    """A program with a ``__vector__`` and a ``__cube__`` kernel: each ``<<<>>>`` launch is staged inside a
    LaunchAs of its own kernel's type (the whole program's default would run one of them on the wrong
    cores); an ``__aicore__`` kernel's launch keeps the program's mode."""
    from mpnpu.tools.samples.build import stage_source

    src = tmp_path / "k.asc"
    src.write_text(textwrap.dedent("""\
        __global__ __vector__ void vec_k(GM_ADDR x) {}
        template <int N>
        __global__ __cube__ void cube_k(GM_ADDR x) {}
        extern "C" __global__ __aicore__ void plain_k(GM_ADDR x) {}
        __global__ __mix__(1, 2) void mix_k(GM_ADDR x) {}
        int main() {
            vec_k<<<2, nullptr, s>>>(x);
            cube_k<4><<<1, nullptr, s>>>(x);
            plain_k<<<1, nullptr, s>>>(x);
            mix_k<<<1, nullptr, s>>>(x);
        }
        """))
    lines = open(stage_source(str(src), str(tmp_path / "out"))).read().splitlines()
    body = {name: next(line for line in lines if f"mpnpu_kernel_ = {name};" in line)
            for name in ("vec_k", "cube_k<4>", "plain_k", "mix_k")}
    assert "LaunchAs mpnpu_as_(::KernelMode::AIV_MODE)" in body["vec_k"]
    assert "LaunchAs mpnpu_as_(::KernelMode::AIC_MODE)" in body["cube_k<4>"]
    assert "LaunchAs" not in body["plain_k"]
    assert "LaunchAs mpnpu_as_(::KernelMode::MIX_MODE)" in body["mix_k"]
    assert len(lines) == 1 + len(src.read_text().splitlines())  # (#line 1, then the lines kept)


def test_a_kernel_declared_per_scenario_launches_as_the_scenario_built_declares_it(tmp_path) -> None:
    """A sample that declares its kernel ``__cube__`` under ``#if SCENARIO_NUM == 2`` and ``__aicore__``
    otherwise (the dev kit's IBShare-B matmul) is launched as the scenario the build selects: reading
    both branches made scenario 1 a cube-only launch, and half its output was never written."""
    from mpnpu.tools.samples.build import stage_source
    from mpnpu.tools.ut.kernel_mode import kernel_mode_of

    src = tmp_path / "k.asc"
    src.write_text(textwrap.dedent("""\
        #if SCENARIO_NUM == 2
        extern "C" __global__ __cube__ void k(GM_ADDR x)
        #else
        extern "C" __global__ __aicore__ void k(GM_ADDR x)
        #endif
        { REGIST_MATMUL_OBJ(p, w, mm, t); }
        int main() {
            k<<<1, nullptr, s>>>(x);
        }
        """))
    launch = {n: next(line for line in open(stage_source(str(src), str(tmp_path / n), {"SCENARIO_NUM": n}))
                      if "mpnpu_kernel_ = k;" in line) for n in ("1", "2")}
    assert "LaunchAs" not in launch["1"]
    assert "LaunchAs mpnpu_as_(::KernelMode::AIC_MODE)" in launch["2"]
    assert kernel_mode_of([str(src)], {"SCENARIO_NUM": "1"}) == "mix"
    assert kernel_mode_of([str(src)], {"SCENARIO_NUM": "2"}) == "aic"


@needs_cxx
def test_a_launch_may_name_a_variable_that_holds_the_kernel(tmp_path) -> None:
    """``selected<<<...>>>(...)`` where ``selected`` is a constexpr pointer to one of several kernels (the dev
    kit's matmul_high_performance picks its kernel per scenario so): staged, it compiles and launches that
    kernel (it used to take the variable's address, and no run_kf matched)."""
    from mpnpu.tools.samples.build import stage_source

    src = tmp_path / "k.asc"
    src.write_text(textwrap.dedent("""\
        #include "kernel_operator.h"
        extern "C" __global__ __aicore__ void one(GM_ADDR x) {}
        extern "C" __global__ __aicore__ void two(GM_ADDR x) {}
        void host(uint8_t* x, void* s) {
            constexpr auto selected = []() { return two; }();
            selected<<<1, nullptr, s>>>(x);
        }
        """))
    staged = stage_source(str(src), str(tmp_path / "out"))
    from mpnpu.ascendc.build import cpudebug_lib

    cxx = shutil.which("g++") or shutil.which("c++")
    assert cxx is not None
    r = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-DMPNPU_ACL_GM", "-include", "tikicpulib.h",
                        *cpudebug_lib.cflags(), staged], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_kfc_workspace_parameter_becomes_the_system_workspace_on_the_kernels_first_line(tmp_path) -> None:
    src = tmp_path / "mm.asc"
    src.write_text("__global__ __mix__(1, 2) void mm(GM_ADDR a,\n"
                   "    __kfc_workspace__ __gm__ uint8_t* ws, Tiling t);\n"  # (a declaration: nothing added)
                   "__global__ __mix__(1, 2) void mm(GM_ADDR a,\n"
                   "    __kfc_workspace__ __gm__ uint8_t* ws, Tiling t)\n"
                   "{\n    body(); // __kfc_workspace__ uint8_t* x { in a comment\n}\n"
                   "void other(uint8_t* ws) {}\n")
    staged = Path(stage_source(str(src), str(tmp_path / "out"))).read_text().splitlines()
    assert staged[0] == f'#line 1 "{src}"'
    body = staged[1:]
    assert len(body) == 8 and body[4] == "{ AscendC::SetSysWorkspace(ws);"
    assert sum("SetSysWorkspace" in line for line in body) == 1
    # the marker after the type, as the dev kit's matmul samples write it
    src.write_text("extern \"C\" __global__ __mix__(1, 2) void mm(__gm__ uint8_t* a,\n"
                   "    __gm__ uint8_t* __kfc_workspace__ workspace, __gm__ uint8_t* t)\n{\n    body();\n}\n")
    after = Path(stage_source(str(src), str(tmp_path / "out2"))).read_text().splitlines()[1:]
    assert after[2] == "{ AscendC::SetSysWorkspace(workspace);" and len(after) == 5


def test_a_relative_build_dir_is_taken_from_where_the_command_runs(tmp_path, monkeypatch) -> None:
    """A sample's steps run in a folder of their own: a relative --build-dir is made absolute first (it once
    named the program by a path that no longer led anywhere from there)."""
    from mpnpu.cli.commands.samples import COMMAND as SAMPLES
    from mpnpu.cli.commands.ut import COMMAND as UT

    monkeypatch.chdir(tmp_path)
    for command, positional in ((SAMPLES, "tree"), (UT, "checkout")):
        args = command.parser().parse_args([positional, "--build-dir", "b"])
        assert args.build_dir == str(tmp_path / "b")


def test_a_sample_that_is_the_tree_itself_gets_a_run_folder_by_its_own_name_again_and_again(tmp_path) -> None:
    """``mpnpu samples <one sample's folder>``: the sample's path in the tree is "."; its run folder is named
    after the folder, and a second run into the same build folder starts afresh (it used to try to remove
    ``run/.`` and end in a traceback)."""
    from mpnpu.tools.samples.discover import Sample
    from mpnpu.tools.samples.run import run_dir

    folder = tmp_path / "matmul_x"
    folder.mkdir()
    (folder / "README.md").write_text("x")
    sample = Sample(name=".", folder=str(folder))
    assert sample.slug == "matmul_x" and Sample(name="a/b", folder=str(folder)).slug == "a__b"
    root = tmp_path / "build" / "run"
    first = run_dir(sample, str(root))
    (Path(first) / "output" / "left.bin").write_text("old")
    second = run_dir(sample, str(root))
    assert first == second == str(root / "matmul_x" / "build")
    assert not (Path(second) / "output" / "left.bin").exists() and (root / "matmul_x" / "README.md").is_symlink()


def test_a_samples_build_folder_held_by_another_run_is_refused_in_one_line(tree, tmp_path) -> None:
    from mpnpu.tools.folder_lock import hold_folder
    folder = tmp_path / "b"
    with hold_folder(str(folder), "mpnpu ut"):
        r = subprocess.run([sys.executable, "-m", "mpnpu", "samples", str(tree), "--build-dir", str(folder)],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert f"the build folder {folder} is in use by another run (pid {os.getpid()} on " in r.stderr
    assert not (folder / "bin").exists()  # nothing was built
