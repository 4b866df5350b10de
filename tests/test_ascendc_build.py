"""Building C++ kernels: the cache, compile errors at the user's line, and a missing compiler."""

from __future__ import annotations

import os

import pytest

from mpnpu.ascendc import CompileError, NoCompilerError, compile_kernel, detect_kernel_type
from mpnpu.ascendc.build.compiler import BuildSpec, build
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx

pytestmark = needs_cxx

@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    """The module's build cache (each test's kernel is its own file: no test finds another's build)."""
    return str(tmp_path_factory.mktemp("cache"))


GOOD = '#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void k(GM_ADDR x) { (void)x; }\n'


@pytest.mark.slow
def test_a_build_is_cached_until_a_file_it_read_changes(tmp_path, monkeypatch, cache) -> None:
    monkeypatch.setenv("MPNPU_CACHE_DIR", cache)
    header = tmp_path / "part.h"
    header.write_text("constexpr int kValue = 1;\n")
    src = tmp_path / "k.cpp"
    src.write_text('#include "part.h"\n' + GOOD)
    spec = BuildSpec((str(src),), "k")
    first = build(spec)
    assert not first.cached and os.path.isfile(first.path)
    assert build(spec).cached
    header.write_text("constexpr int kValue = 2;\n")  # a header the kernel includes changed
    again = build(spec)
    assert not again.cached


def _compile_error(path, text: str, entry: str = "k") -> CompileError:
    path.write_text(text)
    with pytest.raises(CompileError) as info:
        compile_kernel(str(path), entry)
    return info.value


@pytest.mark.slow
def test_a_compile_error_is_one_line_at_the_users_file_and_line(tmp_path, monkeypatch, cache) -> None:
    monkeypatch.setenv("MPNPU_CACHE_DIR", cache)
    err = _compile_error(tmp_path / "broken.cpp", '#include "kernel_operator.h"\n\nextern "C" __global__ __aicore__ '
                         'void k(GM_ADDR x) {\n    AscendC::NoSuchCall(x);\n}\n')
    text = str(err)
    assert "\n" not in text
    assert text.endswith("broken.cpp:4:14: error: 'NoSuchCall' is not a member of 'AscendC'")
    assert err.details["stderr"]


@pytest.mark.slow
def test_an_error_inside_mpnpus_headers_names_the_users_line_too(tmp_path, monkeypatch, cache) -> None:
    monkeypatch.setenv("MPNPU_CACHE_DIR", cache)
    src = tmp_path / "misuse.cpp"
    src.write_text('#include "kernel_operator.h"\nusing namespace AscendC;\n'
                   'extern "C" __global__ __aicore__ void k(GM_ADDR x) {\n'
                   "    TPipe pipe; int q = 0;\n    pipe.InitBuffer(q, 1, 32);\n}\n")
    with pytest.raises(CompileError, match=r"inside mpnpu's Ascend C headers, from .*misuse.cpp:5"):
        compile_kernel(str(src), "k")


@pytest.mark.slow
def test_an_entry_that_does_not_compile_is_named_not_mpnpus_generated_file(tmp_path, monkeypatch, cache) -> None:
    """A template kernel named with a host variable as its argument (what a <<<>>> line may hold):
    the error names the source and the entry, never the temporary file that exports it."""
    monkeypatch.setenv("MPNPU_CACHE_DIR", cache)
    text = str(_compile_error(tmp_path / "templ.cpp", '#include "kernel_operator.h"\ntemplate <int N>\n'
                              '__global__ __aicore__ void add_custom(GM_ADDR x) { (void)x; }\n',
                              "add_custom<blockLength>"))
    assert text.startswith("templ.cpp: the kernel entry add_custom<blockLength> cannot be exported: ")
    assert "'blockLength' was not declared" in text and "mpnpu_entry" not in text


def test_no_compiler_says_how_to_get_one(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    src = tmp_path / "k.cpp"
    src.write_text(GOOD)
    with pytest.raises(NoCompilerError, match="CXX='/nonexistent/c.." ):
        compile_kernel(str(src), "k")


def test_the_kernel_type_is_read_from_the_source(tmp_path) -> None:
    cases = {
        "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);": KernelType.MIX_1_2,
        "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);": KernelType.MIX_1_1,
        "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);": KernelType.AIC,
        "// KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2); in a comment": KernelType.AIV,
        "": KernelType.AIV,
        "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_VECTOR_CORE); KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);":
            KernelType.AIC,
    }
    for i, (line, want) in enumerate(cases.items()):
        p = tmp_path / f"k{i}.cpp"
        p.write_text(f"void f() {{ {line} }}\n")
        assert detect_kernel_type([str(p)]) is want, line
    p = tmp_path / "mix.cpp"
    p.write_text("__global__ __mix__(1, 2) void f() {}\n")
    assert detect_kernel_type([str(p)]) is KernelType.MIX_1_2


def test_the_optimisation_level_comes_from_the_setting_and_keys_the_cache(tmp_path, monkeypatch) -> None:
    """MPNPU_KERNEL_OPT sets the -O of every kernel build (default -O2) and is part of the cache key, so
    builds of each level are kept apart; a bad value is a one-line usage error."""
    from mpnpu.ascendc.build import compiler
    from mpnpu.errors import UsageError

    source = tmp_path / "k.cpp"
    source.write_text("// a kernel source\n")
    spec = BuildSpec((str(source),), "k")
    keys = {}
    for level, flag in (("", "-O2"), ("0", "-O0"), ("g", "-Og")):
        if level:
            monkeypatch.setenv("MPNPU_KERNEL_OPT", level)
        else:
            monkeypatch.delenv("MPNPU_KERNEL_OPT", raising=False)
        cmd = compiler._command(["g++"], spec, "entry.cpp", "out.so", "deps.d")
        assert [f for f in cmd if f.startswith("-O")] == [flag]
        assert ("-g" in cmd) == (flag != "-O2")  # (the debugging levels have a line table)
        keys[flag] = compiler._key(["/bin/true"], spec)
    assert len(set(keys.values())) == 3
    monkeypatch.setenv("MPNPU_KERNEL_OPT", "fast")
    with pytest.raises(UsageError, match="MPNPU_KERNEL_OPT.*expected one of 0, 1, 2, 3, g, s"):
        compiler.base_flags()
