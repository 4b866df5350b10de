"""A C++ operator builds the libraries a batch's cases launch before the batch starts: each
missing one once, the rest beside the first, with a line per compile, none for a cached one."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from mpnpu.ascendc.build.compiler import CompileError
from mpnpu.ascendc.operator import AscendCOperator
from mpnpu.operators.helpers import build_kernels_for
from mpnpu.operators.kernel import Case
from tests.ascendc_util import needs_cxx, source

pytestmark = needs_cxx


def _operator(token: str, broken: bool = False) -> AscendCOperator:
    # (a define the source never reads still makes a library of its own: a fresh token, fresh builds)
    def defines(case: Case) -> dict[str, str]:
        out = {"MPNPU_TEST_TOKEN": token, "MPNPU_TEST_VARIANT": str(case.params[0])}
        if broken and case.params[0] == 1:
            out["per_"] = "("  # (the source's member per_ no longer parses)
        return out

    return AscendCOperator(name="two-phase", sources=(source("two_phase.cpp"),), entry="two_phase", make=None,
                           golden=None, defines=defines)


def _cases(variants: int, n: int = 6) -> list[Case]:
    return [Case(i, inputs={}, outputs={}, params=(i % variants,)) for i in range(n)]


@pytest.mark.slow
def test_each_missing_library_is_compiled_once_and_said_and_a_cached_one_is_not() -> None:
    token = uuid.uuid4().hex[:12]
    op = _operator(token)
    lines: list[str] = []
    assert op.build_kernels(_cases(2), report=lines.append) == 2
    assert lines[0].startswith("building 2 kernel libraries of two-phase (two_phase.cpp")
    built = sorted(line.split("(", 1)[1].split(")")[0] for line in lines[1:])
    assert built == [f"-DMPNPU_TEST_TOKEN={token} -DMPNPU_TEST_VARIANT={v}" for v in (0, 1)]
    assert all(" in " in line and line.endswith(" s") for line in lines[1:])
    lines.clear()
    assert op.build_kernels(_cases(2), report=lines.append) == 0 and lines == []
    again = _operator(token)  # (a new process's operator: the libraries come from the build cache)
    assert again.build_kernels(_cases(2), report=lines.append) == 0 and lines == []
    assert again.kernel_for(_cases(2)[1]).path == op.kernel_for(_cases(2)[1]).path


@pytest.mark.slow
def test_a_library_that_does_not_compile_is_the_build_error_of_its_case() -> None:
    op = _operator(uuid.uuid4().hex[:12], broken=True)
    with pytest.raises(CompileError, match=r"two_phase\.cpp:\d+"):
        op.build_kernels(_cases(3))
    built = {key for key in op._cache if isinstance(key, tuple) and key[0] == "kernel"}
    first, broken = (("kernel", op._defines_of(case, "")[0]) for case in _cases(3)[:2])
    assert first in built and broken not in built  # (the first is built alone, before the others)


def test_an_operator_without_kernels_to_build_is_left_alone() -> None:
    class PythonOperator:  # (the method is optional: a Python operator has nothing to build)
        def make_case(self, seed: int, index: int) -> Case:
            raise AssertionError("no case is made for an operator that builds nothing")

    assert build_kernels_for(PythonOperator(), 0, 10) == 0


OPERATOR_FILE = '''
import dataclasses, functools
from mpnpu.kernels.reduce_early import cases
from mpnpu.kernels.reduce_early.operator import OPERATOR_CXX

OPERATOR = dataclasses.replace(
    OPERATOR_CXX, name="reduce-early-token", make=functools.partial(cases.make, dtypes=("float32",)),
    defines=lambda case: {"DTYPE_X": "float", "MPNPU_TEST_TOKEN": "%s"})
'''


@pytest.mark.slow
def test_the_batch_builds_before_its_first_case_run_and_says_so_on_stderr(tmp_path) -> None:
    token = uuid.uuid4().hex[:12]
    path = tmp_path / "op.py"
    path.write_text(OPERATOR_FILE % token)
    cmd = [sys.executable, "-m", "mpnpu.batch", "--op", str(path), "--cases", "3", "--repeat", "1"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ})
    assert first.returncode == 0, first.stderr
    assert "building 1 kernel library of reduce-early-token (reduce_early.cpp)" in first.stderr
    assert f"built reduce_early.cpp (-DDTYPE_X=float -DMPNPU_TEST_TOKEN={token}) in " in first.stderr
    assert "verdict: OK" in first.stdout and "building" not in first.stdout
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ})
    assert second.returncode == 0 and "built" not in second.stderr, second.stderr
