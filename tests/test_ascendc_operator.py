"""AscendCOperator: an operator over Ascend C sources, as the tools see it (no compiler needed)."""

from __future__ import annotations

import runpy
import shutil

import pytest

from mpnpu.errors import UsageError
from mpnpu.operators.helpers import sync_names_of
from mpnpu.operators.protocol import kernel_type_of
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import line_of, source

MODULE = '''
from mpnpu.ascendc.operator import AscendCOperator
OPERATOR = AscendCOperator(name="two-phase", sources=("k/two_phase.cpp",), entry="two_phase",
                           make=None, golden=None)
'''


@pytest.fixture
def operator(tmp_path, monkeypatch):
    (tmp_path / "k").mkdir()
    shutil.copy(source("two_phase.cpp"), tmp_path / "k" / "two_phase.cpp")
    (tmp_path / "op.py").write_text(MODULE)
    monkeypatch.chdir("/")  # relative sources must not depend on the working directory
    return runpy.run_path(str(tmp_path / "op.py"))["OPERATOR"], tmp_path


def test_relative_sources_are_relative_to_the_defining_module(operator) -> None:
    op, folder = operator
    assert op.sources == (str(folder / "k" / "two_phase.cpp"),)


def test_the_tools_see_its_kernel_type_and_its_sync_points_by_file_and_line(operator) -> None:
    op, _ = operator
    assert kernel_type_of(op) is KernelType.AIV  # vector-only: the tools build vector cores only
    line = line_of("two_phase.cpp", "SyncAll();")
    assert sync_names_of(op, f"two_phase.cpp:{line}") == {f"k/two_phase.cpp:{line}"}
    assert sync_names_of(op, [f"k/two_phase.cpp:{line}"]) == {f"k/two_phase.cpp:{line}"}
    assert op.sync_points[f"k/two_phase.cpp:{line}"].startswith("SyncAll")
    with pytest.raises(UsageError, match=r"'two_phase.cpp:1' is not a sync point .* nearest: k/two_phase.cpp:"):
        sync_names_of(op, "two_phase.cpp:1")
