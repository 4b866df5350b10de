"""An operator whose cases are sized by the device's core count: ``make(rng, index, block_dim)``
gets the block_dim of the device the case runs on, through every tool that makes cases (the batch,
race-directed reproduction, the pytest assertions); a maker without the parameter is called as before."""

from __future__ import annotations

import numpy as np
import pytest

from mpnpu import api
from mpnpu.directed.confirm import check_baseline
from mpnpu.harness.runner import Variant, run_batch
from mpnpu.operators.kernel import Case, KernelOperator
from mpnpu.operators.protocol import default_block_dim, device_for, make_case_for, takes_block_dim
from tests.operator_for_tests import OPERATOR as TWO_PHASE

pytestmark = pytest.mark.usefixtures("no_leaks")

COLUMNS = 16


def row_per_vector_core(x, y) -> None:
    """y = 2x, vector core v doing row v: the rows must be exactly the vector cores."""
    if api.is_aiv():
        v = api.get_block_idx()
        row = np.empty(COLUMNS, np.float32)
        api.data_copy(row, x[v * COLUMNS:(v + 1) * COLUMNS])
        api.data_copy(y[v * COLUMNS:(v + 1) * COLUMNS], 2 * row)


made_for: list[int] = []


def make(rng: np.random.Generator, index: int, block_dim: int) -> Case:
    made_for.append(block_dim)
    rows = 2 * block_dim  # mix 1:2: two vector cores per AI core
    x = rng.standard_normal(rows * COLUMNS).astype(np.float32)
    return Case(index, inputs={"x": x}, outputs={"y": ((rows * COLUMNS,), "float32")}, label=f"{rows} rows")


def golden(case: Case) -> dict[str, np.ndarray]:
    return {"y": 2 * case.value("x")}


ROWS = KernelOperator(name="rows", kernel=row_per_vector_core, sync_points={}, incident=frozenset(), make=make,
                      golden=golden)


def test_the_maker_is_told_whether_it_takes_block_dim() -> None:
    assert takes_block_dim(ROWS.make) and takes_block_dim(ROWS.make_case)
    assert not takes_block_dim(TWO_PHASE.make)
    assert make_case_for(TWO_PHASE, 0, 1, 3).label == TWO_PHASE.make_case(0, 1).label  # passed over


def test_a_case_is_made_for_the_block_dim_asked_and_the_default_otherwise() -> None:
    assert ROWS.make_case(0, 0, block_dim=3).inputs["x"].size == 6 * COLUMNS
    assert ROWS.make_case(0, 0).inputs["x"].size == 2 * default_block_dim(ROWS) * COLUMNS
    a, b = ROWS.make_case(5, 2, block_dim=2), ROWS.make_case(5, 2, block_dim=2)
    assert np.array_equal(a.inputs["x"], b.inputs["x"]) and a.block_dim == 2
    # the golden is kept per (seed, index, block_dim): another size is another case
    assert ROWS.prepare(ROWS.make_case(5, 2, block_dim=3)).golden["y"].size == 6 * COLUMNS


@pytest.mark.parametrize("block_dim", [1, 3])
def test_the_batch_makes_each_case_for_its_devices_block_dim(block_dim) -> None:
    made_for.clear()
    res = run_batch(ROWS, cases=3, repeat=2, variants=[Variant("fixed", frozenset())], block_dim=block_dim)
    fixed = res.variants["fixed"]
    assert fixed.case_runs == 6 and fixed.failed_case_runs == 0, fixed
    assert made_for and set(made_for) == {block_dim}


def test_the_baseline_check_makes_its_cases_for_the_device() -> None:
    made_for.clear()
    with device_for(ROWS, 3) as dev:
        check_baseline(ROWS, dev, range(2), case_seed=0, tool="test")  # would raise if sized for another
    assert set(made_for) == {3}
