"""scripts/run_public_kernel.py without the public kernel (which is never part of the repository):
finding the operator folder and the SyncAll before CVProcess in a layout of our own, and the tiling
it fills for the unit test's shape being the values that test sets by hand."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=1)
def _script():
    spec = importlib.util.spec_from_file_location("run_public_kernel", os.path.join(ROOT, "scripts",
                                                                                   "run_public_kernel.py"))
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = mod  # (its dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


def _layout(root, body: str) -> str:
    op = root / "matmul" / "fused_linear_online_max_sum"
    (op / "op_kernel").mkdir(parents=True)
    (op / "tests" / "ut" / "op_kernel").mkdir(parents=True)
    (op / "op_kernel" / "fused_linear_online_max_sum.cpp").write_text("// stand-in\n")
    (op / "op_kernel" / "fused_linear_online_max_sum.h").write_text(body)
    (op / "tests" / "ut" / "op_kernel" / "fused_linear_online_max_sum_tiling_def.h").write_text("// stand-in\n")
    return str(op)


def test_the_operator_folder_and_the_syncall_before_cvprocess(tmp_path) -> None:
    s = _script()
    body = ("void Op::CVProcess();\nvoid Op::Process() {\n    SyncAll<false>();\n    TargetProcess();\n"
            "    // the barrier\n    SyncAll<false>();\n\n    CVProcess();\n    SyncAll<false>();\n}\n")
    op = _layout(tmp_path, body)
    assert s.operator_dir(str(tmp_path)) == op and s.operator_dir(op) == op
    assert s.syncall_before_cvprocess(op) == "fused_linear_online_max_sum.h:6"
    with pytest.raises(SystemExit, match="neither it nor"):
        s.operator_dir(str(tmp_path / "matmul"))


def test_no_syncall_between_targetprocess_and_cvprocess_is_said(tmp_path) -> None:
    s = _script()
    op = _layout(tmp_path, "void Op::Process() {\n    SyncAll<false>();\n    TargetProcess();\n    CVProcess();\n}\n")
    with pytest.raises(SystemExit, match="no SyncAll between TargetProcess"):
        s.syncall_before_cvprocess(op)


def test_the_tiling_of_the_unit_tests_shape_is_the_tests_own() -> None:
    s = _script()
    plan = s.fill_tiling(s.ut_case(0, 0, "float16", return_logits=True), max_cores=4)
    f = plan.fields
    assert (plan.block_dim, plan.tiling_key, plan.user_workspace) == (1, 1, 128 * 4 * 2)
    # what the unit test sets by hand for BT=128 H=64 V=256 (cubeCoreNumAligned aside: it sets 24)
    assert {k: f[k] for k in ("m", "k", "n", "bufSize", "cubeCoreNum", "vecCoreNum", "batchTaksPerVecCore",
                              "batchTaksTailVecCore", "targetTasksPerLoop", "initWorkspaceLength",
                              "matmulInputEmptyFlag")} == {
        "m": 128, "k": 64, "n": 256, "bufSize": 188160, "cubeCoreNum": 1, "vecCoreNum": 2, "batchTaksPerVecCore": 8,
        "batchTaksTailVecCore": 0, "targetTasksPerLoop": 1960, "initWorkspaceLength": 64, "matmulInputEmptyFlag": 0}
    assert (f["vocabStartIndex"], f["vocabEndIndex"]) == (0.0, 128.0)
    mm = {k.split(".", 1)[1]: v for k, v in f.items() if k.startswith("mmTiling.")}
    assert {k: mm[k] for k in ("M", "N", "Ka", "Kb", "singleCoreM", "singleCoreN", "singleCoreK", "baseM", "baseN",
                               "baseK", "depthA1", "depthB1", "stepM", "stepN", "stepKa", "stepKb", "isBias",
                               "iterateOrder", "shareL1Size", "shareL0CSize", "batchM", "batchN")} == {
        "M": 128, "N": 256, "Ka": 64, "Kb": 64, "singleCoreM": 128, "singleCoreN": 256, "singleCoreK": 64,
        "baseM": 128, "baseN": 256, "baseK": 64, "depthA1": 1, "depthB1": 1, "stepM": 1, "stepN": 1, "stepKa": 1,
        "stepKb": 1, "isBias": 0, "iterateOrder": 0, "shareL1Size": 327680, "shareL0CSize": 131072, "batchM": 1,
        "batchN": 1}
    # memory-saving mode: tiling key 0 and the logits tiles' double buffer in the workspace
    saving = s.fill_tiling(s.ut_case(0, 0, "bfloat16"), max_cores=4)
    assert saving.tiling_key == 0 and saving.user_workspace == 128 * 4 * 2 + 128 * 256 * 2 * 2
