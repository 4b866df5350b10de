"""What a user's first operator needs (issue 21, item 7): a workspace sized per core of the launch,
an operator file that imports its siblings, and an argument-order mistake named as one.

Each operator here is a file written to a temporary folder, loaded the way ``--op FILE.py`` loads it.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from mpnpu import Device, KernelError, PerCore, UsageError, load_operator
from mpnpu.operators.kernel import tensor_shape
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.topology import KernelType, Topology

OPTIONS = RuntimeOptions(launch_timeout_s=60.0)

#: vector cores publish a count each in GM, an AIV-only barrier, then every core reads all counts
#: (the user's kernel of issue 21, reduced): ``counts`` has one slot of 8 per vector core
COUNTS_KERNEL = '''
import numpy as np
from mpnpu import api as ac


def main(x, out, counts, n):
    if not ac.is_aiv():
        return
    v, parts = ac.get_block_idx(), 2 * ac.get_block_num()
    assert counts.shape == (parts, 8), counts.shape  # the workspace follows the launch
    mine = ac.alloc_local(ac.TPosition.VECOUT, 8, "int32")
    mine[...] = v + 1
    ac.data_copy(counts[v], mine)
    ac.sync_all(aiv_only=True, name="B")
    every = ac.alloc_local(ac.TPosition.VECIN, (parts, 8), "int32")
    ac.data_copy(every, counts[:parts])
    total = ac.alloc_local(ac.TPosition.VECOUT, 1, "float32")
    total[...] = float(every[:, 0].sum())
    if v == 0:
        ac.data_copy(out[0:1], total)
'''

OPERATOR_FILE = '''
import numpy as np
from mpnpu import Case, KernelOperator, PerCore


def make(rng, index):
    x = rng.standard_normal(8).astype(np.float32)
    return Case(index, inputs={{"x": x}}, outputs={{"out": ((8,), "float32")}},
                workspace={{"counts": ((PerCore(), 8), "int32")}}, params=(8,))


def golden(case):
    return {{"out": np.zeros(8)}}


OPERATOR = KernelOperator(name="counts", kernel="{kernel}", sync_points={{"B": "the AIV barrier"}},
                          incident=frozenset({{"B"}}), make=make, golden=golden)
'''


def _write(folder, name: str, text: str):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture(scope="module")
def device():
    with Device(2, options=OPTIONS) as dev:
        yield dev


def test_per_core_sizes_follow_the_topology() -> None:
    mix, one_to_one = Topology(3), Topology(3, KernelType.MIX_1_1)
    assert tensor_shape((PerCore(), 8), mix) == (6, 8)
    assert tensor_shape(PerCore(16, "cube"), mix) == (48,)
    assert tensor_shape((PerCore(2, "all"),), mix) == (18,)
    assert tensor_shape(PerCore(4), one_to_one) == (12,)
    with pytest.raises(UsageError, match="PerCore sizes a workspace by the launch"):
        tensor_shape((PerCore(), 8))  # an output's shape: no device to size it by
    with pytest.raises(UsageError, match="choose 'vector', 'cube' or 'all'"):
        PerCore(1, "aiv")


def test_a_file_operator_imports_its_sibling_and_sizes_its_workspace_per_core(tmp_path, device) -> None:
    """The operator file names its kernel by a sibling module ("counts_kernel:main"): its folder is
    on sys.path once --op loads it (and in the core processes), and ``--op FILE.py`` means the
    file's OPERATOR."""
    folder = tmp_path / "my_op"
    folder.mkdir()
    _write(folder, "counts_kernel.py", COUNTS_KERNEL)
    op_file = _write(folder, "counts_op.py", OPERATOR_FILE.format(kernel="counts_kernel:main"))
    try:
        op = load_operator(str(op_file))  # no ":OPERATOR": the default object
        assert op.name == "counts"
        assert str(folder) in sys.path
        # A device opened before the operator was loaded forked its cores without that folder on
        # their path: the sibling kernel is named by its file.
        assert op.kernel == f"{folder / 'counts_kernel.py'}:main"
        case = op.make_case(0, 0)
        outputs, _ = op.run(device, case)
        # 4 vector cores (block_dim 2) wrote 1, 2, 3, 4 in their slots: the whole workspace was theirs.
        assert outputs["out"][0] == 10.0
    finally:
        if str(folder) in sys.path:
            sys.path.remove(str(folder))


SWAPPED = '''
import numpy as np
from mpnpu import api as ac, Case, KernelOperator


def main(x, counts, out, n):  # the case passes x, out, counts: counts and out are swapped
    if not ac.is_aiv():
        return
    mine = ac.alloc_local(ac.TPosition.VECOUT, 8, "int32")
    mine[...] = 1
    ac.data_copy(counts[0:8], mine)


def make(rng, index):
    return Case(index, inputs={"x": np.zeros(8, np.float32)}, outputs={"out": ((8,), "float32")},
                workspace={"counts": ((8,), "int32")}, params=(8,))


OPERATOR = KernelOperator(name="swapped", kernel=main, sync_points={}, incident=frozenset(), make=make,
                          golden=lambda case: {"out": np.zeros(8)})
'''


def test_a_dtype_mismatch_from_swapped_arguments_names_the_argument_order(tmp_path, device) -> None:
    op = load_operator(str(_write(tmp_path, "swapped_op.py", SWAPPED)))
    with pytest.raises(KernelError) as err:
        op.run(device, op.make_case(0, 0))
    message = str(err.value)
    assert "raised GMAccessError: data_copy: GM out is float32 but the local tensor is int32" in message
    assert ("(argument order? main(x, counts, out, n) gets the case's tensors by position, inputs, outputs, "
            "workspace, then params, each in its dict's order: x, out, counts; tensor 'out' went to parameter "
            "'counts')") in message
    assert "\n" not in message


def test_no_order_hint_when_the_names_agree(tmp_path, device) -> None:
    """The same dtype mistake in a kernel whose parameters are in the case's order: no hint."""
    text = SWAPPED.replace("def main(x, counts, out, n):", "def main(x, out, counts, n):").replace(
        "counts[0:8]", "out[0:8]")
    op = load_operator(str(_write(tmp_path, "plain_op.py", text)))
    with pytest.raises(KernelError) as err:
        op.run(device, op.make_case(0, 0))
    assert "GM out is float32 but the local tensor is int32" in str(err.value)
    assert "argument order" not in str(err.value)


def test_per_core_cannot_size_an_output(tmp_path) -> None:
    text = OPERATOR_FILE.format(kernel="counts_kernel:main").replace(
        'outputs={{"out": ((8,), "float32")}}'.replace("{{", "{").replace("}}", "}"),
        'outputs={"out": ((PerCore(), 8), "float32")}')
    op = load_operator(str(_write(tmp_path, "bad_op.py", text)))
    with pytest.raises(UsageError, match="an output's shape must be numbers"):
        op.prepare(op.make_case(0, 0))
