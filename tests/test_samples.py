"""mpnpu samples on a tree of samples we write in the dev kit's layout: discovery and scope, the
program built unchanged and its README recipe run (data, program, verify), failures reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mpnpu.tools.samples.build import stage_source
from mpnpu.tools.samples.discover import discover
from tests.ascendc_util import needs_cxx

KERNEL = textwrap.dedent("""\
    #include "acl/acl.h"
    #include "kernel_operator.h"
    #include "data_utils.h"

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


def test_discovery_reads_scope_defines_and_recipe(tree) -> None:
    by = {s.name: s for s in discover(str(tree))}
    assert sorted(by) == ["03_basic_api/add_one", "03_basic_api/add_two", "03_basic_api/lacking",
                          "03_basic_api/next_chip", "04_advanced_api/softmax_like"]
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
    assert status == {"03_basic_api/add_one": "passed", "03_basic_api/add_two": "failed",
                      "03_basic_api/lacking": "build-failed", "03_basic_api/next_chip": "out-of-scope",
                      "04_advanced_api/softmax_like": "out-of-scope"}
    assert data["counts"] == {"found": 5, "in_scope": 3, "with_verify": 3, "built": 2, "ran": 2, "passed": 1,
                              "failed": 1, "ran_unverified": 0, "run_failed": 0, "build_failed": 1}
    lacking = next(s for s in data["samples"] if s["name"] == "03_basic_api/lacking")
    assert any(m["name"] == "AscendC::NotAnApi" or m["name"] == "NotAnApi" for m in lacking["missing"]), lacking
    assert any(m["where"].endswith("add_one.asc:19") for m in lacking["missing"]), lacking["missing"]
    passed = next(s for s in data["samples"] if s["name"] == "03_basic_api/add_one")
    assert passed["kernel_mode"] == "aiv" and "test pass!" in passed["steps"][-1]["tail"]
    assert r.stdout.strip() == ("5 samples found, 3 for this chip class: 2 built, 2 ran, "
                                "1 of 3 passed their own verify script")
    assert os.listdir(tmp_path / "b" / "run")


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
