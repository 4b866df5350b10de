"""The Python front end's trace recorder in C (mpnpu.runtime.native_trace) makes exactly the records the
Python functions make: the same kernel lines, the same local-memory accesses and pipe syncs, and
whole traced batches with the same events and the same hazards."""

from __future__ import annotations

import gc
import os
import pickle
import sysconfig
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

from mpnpu.api import _trace
from mpnpu.ascendc.build.compiler import NoCompilerError
from mpnpu.harness.runner import make_variants, run_batch
from mpnpu.operators.registry import load_operator
from mpnpu.racecheck import background
from mpnpu.runtime import kcontext, native_trace, trace
from mpnpu.runtime.config import DeviceSpec, LaunchOptions
from mpnpu.runtime.local import TPipe, make_arenas
from mpnpu.runtime.pipe_events import Pipe
from mpnpu.runtime.topology import CoreInfo, CoreType
from mpnpu.runtime.trace import READ, WRITE, Access, LaunchTrace, LocalAccess
from tests.runtime_util import device, filled, k


@pytest.fixture(scope="module")
def recorder() -> ModuleType:
    if not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        pytest.skip("no Python.h for this interpreter")
    try:
        lib = native_trace.build()
    except NoCompilerError:
        pytest.skip("no C++ compiler")
    return native_trace._load(lib)


def _core(pipe_aware: bool = True, traced: bool = True) -> Any:
    info = CoreInfo(0, CoreType.VECTOR, 0, 0, 0, 2)
    spec = DeviceSpec()
    return SimpleNamespace(events=[] if traced else None, pipe_aware=pipe_aware,
                           tpipe=TPipe(info, spec, make_arenas(info, spec)), stage="Compute",
                           pipes=SimpleNamespace(observed_ns=0))


def test_a_kernel_line_is_named_as_the_python_lookup_names_it(recorder: ModuleType) -> None:
    native, python = recorder.call_site(), kcontext.call_site_py()  # (one line: the same line number)
    assert native == python
    assert native.startswith("tests/test_native_trace.py:")
    # through a frame of mpnpu's own (skipped) to this one, as an API function calls it
    saved = kcontext.call_site
    try:
        kcontext.call_site = recorder.call_site
        native = kcontext._resolve(None)
        kcontext.call_site = kcontext.call_site_py
        python = kcontext._resolve(None)
    finally:
        kcontext.call_site = saved
    assert native.rsplit(":", 1)[0] == python.rsplit(":", 1)[0] == "tests/test_native_trace.py"
    assert int(native.rsplit(":", 1)[1]) + 2 == int(python.rsplit(":", 1)[1])
    # the same string object as the Python lookup's table holds (a trace pickles it once)
    again = [recorder.call_site() for _ in range(2)]
    assert again[0] is again[1]


def _views(c: Any) -> list[object]:
    ub = c.tpipe._arenas["UB"]
    f32 = ub[:4096].view(np.float32)
    tile = f32.reshape(32, 32)
    return [
        f32[:64],                      # contiguous
        f32[128:192],                  # at an offset
        tile[4:12, 8:24],              # a 2D tile of rows
        tile[:, 3],                    # a column: one element per row
        f32[64:0:-1],                  # a negative stride
        tile[::-2, ::-3],              # both negative and strided
        f32[10:10],                    # empty: no record
        np.zeros(8, dtype=np.float32),  # not local memory: no record
        ub[100:101],                   # one byte
        np.float32(1.0),               # not an array: no record
        [1, 2, 3],                     # not an array: no record
        ub[4096:4096 + 96].view(np.int16).reshape(3, 16)[1:],  # another dtype
    ]


@pytest.mark.parametrize("pipe_aware, traced", [(True, True), (False, True), (True, False)])
def test_local_accesses_and_pipe_syncs_are_the_records_python_makes(recorder: ModuleType, pipe_aware: bool,
                                                                     traced: bool) -> None:
    made = []
    for record_local, record_sync, record_pair in (
            (recorder.record_local, recorder.record_sync, recorder.record_sync_pair),
            (_trace.record_local_py, _trace.record_sync_py, _trace.record_sync_pair_py)):
        c = _core(pipe_aware, traced)
        for i, view in enumerate(_views(c)):
            record_local(c, READ if i % 2 else WRITE, view, Pipe.V if i % 3 else Pipe.MTE2,
                         None if i % 4 else "given.py:7")
        record_sync(c, "set", Pipe.MTE2, "MTE2_V", 1, "S0")
        record_sync(c, "wait", Pipe.V, "MTE2_V", 1, "", "given.py:9")
        record_sync(c, "barrier", Pipe.ALL, "", 0, "")
        record_pair(c, Pipe.MTE3, Pipe.MTE2, "MTE3_MTE2", 2, "S1")  # (one line: both records name it)
        assert c.pipes.observed_ns >= 0
        made.append(c.events)
    native, python = made
    assert native == python
    # an instruction's local accesses given its times (stamp_local), the rest of the events as they were
    stamped = []
    for stamp_local in (recorder.stamp_local, _trace.stamp_local_py):
        c = _core(pipe_aware, traced)
        c.events = None if python is None else list(python)
        stamp_local(c, (2, 123) if traced else (-1, 0))
        stamped.append(None if c.events is None else [e._replace(t1=0) if e.t1 else e for e in c.events])
        assert c.events is None or all(e.t1 >= 123 for e in c.events[2:] if type(e) is LocalAccess)
    assert stamped[0] == stamped[1]
    if traced and pipe_aware:
        assert [e.t0 for e in stamped[0]] == [0, 0] + [123 if type(e) is LocalAccess else 0 for e in python[2:]]
    if traced and pipe_aware:
        assert [type(e) for e in native] == [type(e) for e in python]
        assert len(native) == 8 + 3 + 2  # 8 of the views are local memory, 3 syncs and a pair
        looked_up = {e.site for e in native} - {"given.py:7", "given.py:9"}
        assert len(looked_up) >= 2 and all(s.startswith("tests/test_native_trace.py:") for s in looked_up)
        pair = native[-2:]
        assert [(e.op, e.pipe, e.event, e.event_id, e.name) for e in pair] == [
            ("set", "PIPE_MTE3", "MTE3_MTE2", 2, "S1"), ("wait", "PIPE_MTE2", "MTE3_MTE2", 2, "S1")]
        assert pair[0].site == pair[1].site and pair[0].site.startswith("tests/test_native_trace.py:")
    else:
        assert native in (None, [])


def test_a_record_needs_a_configured_recorder_and_its_arguments(recorder: ModuleType) -> None:
    c = _core()
    with pytest.raises(TypeError):
        recorder.record_local(c, READ)
    with pytest.raises(TypeError):
        recorder.record_sync(c, "set", Pipe.V)
    c.tpipe._spans = "not a list"
    with pytest.raises(TypeError):
        recorder.record_local(c, READ, np.zeros(4), Pipe.V)  # (an array outside local memory: still looked for)


#: the recording functions a core process puts the C recorder's in place of, with their Python versions
_RECORDERS = [(_trace, "record_local"), (_trace, "record_sync"), (_trace, "record_sync_pair"), (_trace, "stamp_local"),
              (kcontext, "call_site"), (kcontext, "gm_access"), (kcontext, "retime_access"), (kcontext, "traced_copy")]


def _refuse(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a core recorded in Python where it was to record in C")


def _traces(op_name: str, native: bool, monkeypatch: pytest.MonkeyPatch) -> list[LaunchTrace]:
    """A traced batch's launches and hazard log, its cores recording in C (``native``: the Python
    functions refuse, so a core that did not put the C ones in their place fails its launch) or in
    Python (the Python functions in place, whatever this process did before)."""
    monkeypatch.setenv("MPNPU_NATIVE_TRACE", "1" if native else "0")
    # (the cores are forked from this process: each finds the recorder not yet loaded, and loads it)
    monkeypatch.setattr(native_trace, "_activated", False)
    monkeypatch.setattr(native_trace, "_module", None)
    for module, name in _RECORDERS:
        monkeypatch.setattr(module, name, _refuse if native else getattr(module, f"{name}_py"))
    monkeypatch.setattr(trace, "columns", _refuse if native else trace.EventColumns.columns_py)
    saved: list[LaunchTrace] = []
    real = background.BackgroundAnalysis.submit

    def submit(self: Any, trace: LaunchTrace, log: Any) -> None:
        saved.append(trace)
        real(self, trace, log)

    monkeypatch.setattr(background.BackgroundAnalysis, "submit", submit)
    op = load_operator(op_name)
    batch = run_batch(op, cases=3, repeat=1, variants=make_variants(op, ("incident",)), racecheck=True)
    saved.append(batch.variants["incident"].hazard_log)  # type: ignore[arg-type]
    return saved


def _timing_free(trace: LaunchTrace) -> list[list[Any]]:
    """The events but their times, GM segments named by first use (each device has its own names)."""
    segments: dict[str, str] = {}

    def same(e: Any) -> Any:
        e = e._replace(t0=0, t1=0)
        if isinstance(e, Access):
            e = e._replace(segment=segments.setdefault(e.segment, f"segment {len(segments)}"))
        return e

    return [[same(e) for e in events] for events in trace.events]


@pytest.mark.parametrize("op_name", ["floms", "reduce-early", "accum-init", "double-buffer-reuse"])
def test_a_traced_batch_records_the_same_events_in_c_as_in_python(recorder: ModuleType, op_name: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    *native, native_log = _traces(op_name, True, monkeypatch)
    *python, python_log = _traces(op_name, False, monkeypatch)
    assert len(native) == len(python) == 3
    for a, b in zip(native, python):
        assert _timing_free(a) == _timing_free(b)
    assert sum(len(e) for t in native for e in t.events) > 0
    assert [h.key for h in native_log.hazards()] == [h.key for h in python_log.hazards()]  # type: ignore[attr-defined]


@pytest.mark.parametrize("native", [True, False])
def test_a_core_records_in_c_once_it_is_built_unless_told_not_to(recorder: ModuleType, native: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPNPU_NATIVE_TRACE", "1" if native else "0")
    with device(1) as dev:
        out = filled(dev, "out", (dev.topology.n_cores, 1))
        dev.launch(k("report_recorder"), out)  # (untraced: nothing put in place)
        assert dev.to_host(out).ravel().tolist() == [0] * dev.topology.n_cores
        dev.launch_with(LaunchOptions(trace=True), k("report_recorder"), out)
        assert dev.to_host(out).ravel().tolist() == [int(native)] * dev.topology.n_cores
    assert os.path.isfile(native_trace.library_path())


def test_a_run_of_events_groups_into_the_same_columns_in_c(recorder: ModuleType) -> None:
    from mpnpu.runtime.trace import EventColumns, PipeSyncEvent, StageEvent, SyncAllEvent, _time_slots

    rng = np.random.default_rng(7)
    made = [
        lambda i: StageEvent(f"stage{i % 3}", "k.py:1", i, 2**62 - i),
        lambda i: PipeSyncEvent("set", "PIPE_V", "V_MTE3", i % 8, "", "kernel", "k.py:2"),
        lambda i: SyncAllEvent(bool(i % 2), "S0", "kernel", "k.py:3", 5 * i, -5 * i - 2),
        lambda i: Access(READ, "x", "seg", ((i, i + 4),), 0, 4, "kernel", "k.py:4", i, i, "PIPE_MTE2", ""),
    ]
    for n in (0, 1, 7, 300):
        events = [made[int(k)](i) for i, k in enumerate(rng.integers(0, len(made), n))]
        native = recorder.columns(_time_slots, events)
        assert native == EventColumns.columns_py(events)
        assert [type(x) for x in native[0]] == [type] * len(native[0])
        packed = EventColumns(pickle.dumps(native[:3]), native[1], native[3])
        assert packed.decode()[0] == events  # (the times back as they were, as Python ints)
        assert all(type(e.t0) is int and type(e.t1) is int for e in packed.decode()[0])
        assert [t.tolist() for t in packed.times()] == [[e.t0 for e in events], [e.t1 for e in events]]
    with pytest.raises(TypeError):
        recorder.columns(_time_slots, [StageEvent("s", "k.py:1"), 1])  # (not an event)


def test_a_gm_access_is_the_record_python_makes(recorder: ModuleType) -> None:
    from mpnpu.runtime.dtypes import get_dtype
    from mpnpu.runtime.gm.tensor import GlobalTensor

    x = GlobalTensor("x", get_dtype("float32"), (8, 16), "seg0", 64, (64, 4), 64, 512)
    views = [x, x[2:4], x[1:5, 4:12], x[3, 2:3], x[0:0], x[5:7, 0:16]]
    made = []
    for gm_access in (recorder.gm_access, kcontext.gm_access_py):
        for events in ([], []):  # (two launches)
            c = _core()
            c.events = events
            for i, v in enumerate(views * 2):
                args = (c, READ if i % 2 else WRITE, v, 1000 + i, f"k.py:{i}")
                events.append(gm_access(*args, *(("PIPE_MTE2", "PIPE_MTE2") if i % 3 == 0 else ())))
            assert all(e.t1 >= e.t0 for e in events)
            retime = recorder.retime_access if gm_access is recorder.gm_access else kcontext.retime_access_py
            retime(events, 3, 7)  # (a copy that ran later, on its pipe)
            assert events[3].t0 == 7 and events[3].t1 >= 7
            events[3] = events[3]._replace(t0=1003)  # (as recorded, for the comparison below)
            # one view's ranges are one object (pickled once in a launch), on both ways
            assert all(events[k].ranges is events[k + len(views)].ranges for k in range(len(views)))
            made.append([e._replace(t1=0) for e in pickle.loads(pickle.dumps(events))])  # (as shipped)
    assert made[0] == made[2] and made[1] == made[3] and made[0] == made[1]
    assert any(len(e.ranges) > 1 for e in made[0])  # (strided views among them)


def _two_lines(call_site: Any) -> list[str]:
    sites = []
    for i in range(6):
        if i % 2:
            sites.append(call_site())  # (the line after the next: two sites of one code object, in turn)
        else:
            sites.append(call_site())
    return sites


def test_each_instruction_of_a_kernel_line_keeps_its_own_line(recorder: ModuleType) -> None:
    native, python = _two_lines(recorder.call_site), _two_lines(kcontext.call_site_py)
    assert native == python
    lines = [int(s.rsplit(":", 1)[1]) for s in native]
    assert lines[0] == lines[2] == lines[4] == lines[1] + 2 == lines[3] + 2 == lines[5] + 2


def test_the_records_made_in_c_are_left_to_no_collector_pass(recorder: ModuleType) -> None:
    """A record of strings and numbers can be in no reference cycle: the young generation's passes
    need not look at it (gc.is_tracked). One holding a tracked object stays tracked."""
    c = _core()
    ub = c.tpipe._arenas["UB"]
    recorder.record_local(c, READ, ub[:64].view(np.float32), Pipe.V, None)
    recorder.record_sync(c, "set", Pipe.MTE2, "MTE2_V", 1, "S0")
    assert len(c.events) == 2 and not any(gc.is_tracked(e) for e in c.events)
    untracked = Access("R", "x", "gm", ((0, 4),), 0, 4, "Compute", "k.py:1")
    held = Access("R", "x", "gm", [(0, 4)], 0, 4, "Compute", "k.py:1")  # (a list: tracked)
    c.events += [untracked, held]
    for index in (2, 3):
        recorder.retime_access(c.events, index, 7)
        assert c.events[index].t0 == 7
    assert gc.is_tracked(c.events[2]) == any(gc.is_tracked(item) for item in c.events[2])
    assert gc.is_tracked(c.events[3])
    assert c.events[3].ranges is held.ranges


def test_a_traced_launch_runs_with_the_collector_paused_and_restarts_it() -> None:
    with device(block_dim=1) as dev:
        out = filled(dev, "out", (1,))
        states = []
        for trace in (False, True, False, True):
            dev.launch_with(LaunchOptions(trace=trace), k("collector_state"), out)
            states.append(int(dev.to_host(out)[0]))
    assert states == [1, 0, 1, 0]


def test_a_copy_issued_to_an_asynchronous_pipe_is_recorded_then_timed_as_python_does(recorder: ModuleType) -> None:
    from mpnpu.runtime.dtypes import get_dtype
    from mpnpu.runtime.gm.tensor import GlobalTensor

    x = GlobalTensor("x", get_dtype("float32"), (8, 16), "seg0", 64, (64, 4), 64, 512)
    made = []
    for traced_copy in (recorder.traced_copy, kcontext.traced_copy_py):
        for pipe_aware in (True, False):
            c = _core(pipe_aware)
            ran: list[int] = []
            run = traced_copy(c, READ, x[1:3], "k.py:5", Pipe.MTE2,
                              lambda ran=ran, c=c: ran.append(len(c.events)))
            assert len(c.events) == 1 and not ran  # (recorded at issue; the copy runs when its pipe runs it)
            issued = c.events[0]
            run()
            assert ran == [1] and c.events[0].t1 >= c.events[0].t0 >= issued.t1 >= issued.t0 == 0
            made.append(c.events[0]._replace(t0=0, t1=0))
            # a copy that fails leaves its record as issued, and the failure is the copy's
            c.events.append(c.events[0]._replace(t0=0, t1=0))
            failing = traced_copy(c, WRITE, x, "k.py:6", Pipe.MTE3, lambda: 1 / 0)
            with pytest.raises(ZeroDivisionError):
                failing()
            assert c.events[-1].t0 == 0 and c.events[-1].kind == WRITE
    assert made[0] == made[2] and made[1] == made[3] and made[0] != made[1]
    assert made[0].pipe == made[0].ran_on == "PIPE_MTE2" and made[1].pipe == ""
    with pytest.raises(TypeError, match="not traced"):
        recorder.traced_copy(_core(traced=False), READ, x, "k.py:7", Pipe.MTE2, lambda: None)
