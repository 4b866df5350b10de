"""Memcheck of Python kernels (issue 21, item 1): every GM access checked against its tensor, every
local access against its buffer; an illegal one is the launch's error, in the C++ front end's words,
details and exit status, naming the kernel's file:line.

The kernels are the user's compaction kernel (tests/compact) with one deliberate mistake each.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from mpnpu.errors import KernelError, MemcheckError
from mpnpu.runtime import memcheck
from mpnpu.runtime.config import RuntimeOptions
from mpnpu.runtime.gm import GlobalMemory
from mpnpu.runtime.local import LocalTensor, OutsideLocal
from tests.compact import compact, mpnpu, ref, site
from tests.runtime_util import OPTIONS, device

#: the details every memcheck error carries, as the C++ front end's do (mpnpu.ascendc.native.bridge)
DETAILS = {"kind", "memory", "tensor", "start", "stop", "size", "site", "call"}


def _launch_error(op, options: RuntimeOptions = OPTIONS) -> tuple[KernelError, object]:
    """Run case 0 of ``op`` (fixed) and return the launch's error and the case."""
    case = op.make_case(0, 0)
    with device(1, options=options) as dev:
        with pytest.raises(KernelError) as info:
            op.run(dev, case)
        # the device is usable again: the kernel without its mistake runs right
        good = compact.OPERATOR.make_case(0, 0)
        outputs, _ = compact.OPERATOR.run(dev, good)
        assert compact.OPERATOR.judge(good, compact.OPERATOR.prepare(good), outputs).passed
    return info.value, case


def _primary(err: Exception) -> str:
    """The error's line without the count of cores that failed after it (the other vector core,
    left waiting in the SyncAll, may or may not be counted)."""
    return re.sub(r" \(and \d+ other cores? failed after it\)$", "", str(err))


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_a_gm_slice_past_the_end_is_an_illegal_read_at_the_kernel_line() -> None:
    """Today the slice is clipped to 32 elements and the error that follows is a size mismatch."""
    err, case = _launch_error(compact.PAST_END)
    n = case.inputs["x"].size
    k = n - n // 2  # the last of the two vector cores' share
    lo, hi = n - k + 32, n + 32
    assert _primary(err) == (
        f"vector core 1 (block 0, sub 1) raised MemcheckError: illegal read of GM tensor x by data_copy at "
        f"{site('MISTAKE past_end')} (compact): elements [{lo}, {hi}) (bytes [{4 * lo}, {4 * hi})) of a tensor of "
        f"{n} float32 elements ({4 * n} bytes); x[{lo}:{hi}] leaves axis 0 (size {n})")
    cause = err.__cause__
    assert isinstance(cause, MemcheckError)
    assert cause.details == {"kind": "illegal read", "memory": "GM", "tensor": "x", "start": 4 * lo, "stop": 4 * hi,
                             "size": 4 * n, "site": site("MISTAKE past_end"), "call": "data_copy"}
    assert err.details["core"] == "vector core 1 (block 0, sub 1)"


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_a_negative_start_is_an_illegal_read_not_an_empty_view() -> None:
    """Today x[-4:...] counts from the end (an empty or wrong view, no error at all)."""
    err, case = _launch_error(compact.NEGATIVE)
    n = case.inputs["x"].size
    stop = n // 2 - 4
    assert _primary(err).startswith(
        f"vector core 0 (block 0, sub 0) raised MemcheckError: illegal read of GM tensor x by data_copy at "
        f"{site('MISTAKE negative')} (compact): elements [-4, {stop}) (bytes [-16, {4 * stop})) of a tensor of "
        f"{n} float32 elements")
    assert _primary(err).endswith(f"x[-4:{stop}] leaves axis 0 (size {n})")


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_a_local_slice_past_the_end_is_an_illegal_write_of_ub() -> None:
    """Today numpy clips the assignment: nothing is reported."""
    err, _ = _launch_error(compact.LOCAL)
    cause = err.__cause__
    assert isinstance(cause, MemcheckError) and set(cause.details) == DETAILS
    assert cause.details["kind"] == "illegal write" and cause.details["memory"] == "UB"
    assert cause.details["call"] == "an assignment" and cause.details["site"] == site("MISTAKE local")
    lo, hi = (int(v) for v in cause.details["tensor"][3:-1].split(":"))
    assert cause.details["start"] == lo and cause.details["stop"] == hi + 32  # 8 float32 elements past its end
    assert f"illegal write of UB by an assignment at {site('MISTAKE local')} (compact): bytes [{lo}, {hi + 32}) " \
           f"of UB, outside the buffer it was taken from, bytes [{lo}, {hi})" in str(err)


@pytest.mark.usefixtures("no_leaks", "time_limit")
def test_memcheck_off_indexes_local_tensors_as_numpy_does() -> None:
    """The off-switch (RuntimeOptions.memcheck): the clipped assignment runs, and the kernel's result
    is right (the stray zeros are overwritten)."""
    op = compact.LOCAL
    case = op.make_case(0, 0)
    with device(1, options=dataclasses.replace(OPTIONS, memcheck=False)) as dev:
        outputs, _ = op.run(dev, case)
    assert op.judge(case, op.prepare(case), outputs).passed


def test_gm_views_take_their_bounds_as_written() -> None:
    """The slices of the issue: x[n-32:n+32] (clipped today), x[n+8:n+16] and x[-4:4] (empty
    today), and a step past the end; reading through any of them is an illegal read."""
    gm = GlobalMemory(segment_bytes=1 << 16)
    try:
        n = 64
        x = gm.alloc("x", (n,), "float16")
        for index, size, (e0, e1) in [(np.s_[n - 32:n + 32], 64, (32, 96)), (np.s_[n + 8:n + 16], 8, (72, 80)),
                                      (np.s_[-4:4], 8, (-4, 4)), (np.s_[0:n + 4:8], 9, (0, 65))]:
            view = x[index]
            assert view.outside and view.size == size
            with pytest.raises(MemcheckError) as info:
                gm.read(view)
            assert str(info.value).startswith(f"illegal read of GM tensor x by a host read: elements [{e0}, {e1}) "
                                              f"(bytes [{2 * e0}, {2 * e1})) of a tensor of 64 float16 elements "
                                              "(128 bytes); x[")
        for legal in (np.s_[0:n], np.s_[n:n], np.s_[32:], np.s_[::2]):
            assert not x[legal].outside
    finally:
        gm.close()


def test_local_tensors_check_their_indices_but_numpy_prints_them() -> None:
    t = np.arange(300, dtype=np.float32).view(LocalTensor)
    assert isinstance(t[0:301], OutsideLocal) and isinstance(t[-1], OutsideLocal) and isinstance(t[300], OutsideLocal)
    assert float(t[299]) == 299.0 and t[10:20].sum() == sum(range(10, 20)) and t[...].size == 300
    assert "299." in str(t)  # numpy's printing counts from the end: that is numpy's code, not a kernel's
    for use, kind in [(lambda v: v + 1, "illegal read"), (lambda v: v.sum(), "illegal read"),
                      (lambda v: np.copyto(v, 0), "illegal write"), (lambda v: v.__setitem__(0, 1), "illegal write")]:
        with pytest.raises(MemcheckError) as info:
            use(t[0:301])
        assert info.value.details["kind"] == kind
    with pytest.raises(MemcheckError, match=r"illegal write of local memory by an assignment .*: bytes \[1200, 1204\)"):
        t[300] = 0


def test_the_words_are_the_cxx_front_ends() -> None:
    """One builder for both front ends: the C++ bridge's GM and local faults come from it."""
    import inspect

    from mpnpu.ascendc.native import bridge

    source = inspect.getsource(bridge._fault_error)
    assert "gm_fault(" in source and "local_fault(" in source and "MemcheckError(" not in source
    err = memcheck.gm_fault("illegal read", "DataCopy", "k/add.cpp:12", "add", "x", "float16", 2, 128, 120, 136)
    assert str(err) == ("illegal read of GM tensor x by DataCopy at k/add.cpp:12 (add): elements [60, 68) "
                        "(bytes [120, 136)) of a tensor of 64 float16 elements (128 bytes)")
    assert set(err.details) == DETAILS


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks")
def test_the_batch_reports_a_memcheck_error_in_json_and_exits_3(tmp_path) -> None:
    out = tmp_path / "r.json"
    p = mpnpu("batch", "--op", ref("PAST_END"), "--cases", "5", "--repeat", "1", "--variant", "fixed",
              "--json", str(out))
    assert p.returncode == 3, p.stderr
    fixed = json.loads(out.read_text())["variants"]["fixed"]
    details = fixed["first_launch_error_details"]
    assert details["error_type"] == "MemcheckError" and details["core"] == "vector core 1 (block 0, sub 1)"
    assert set(details["error"]) == DETAILS and details["error"]["site"] == site("MISTAKE past_end")
    assert fixed["case_runs"] == 3 and fixed["not_run"] == 2 and fixed["stopped"]
    assert "raised MemcheckError: illegal read of GM tensor x by data_copy at " + site("MISTAKE past_end") in p.stdout
