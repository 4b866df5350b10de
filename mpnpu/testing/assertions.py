"""Assertions for race tests, usable in any test (with or without the ``mpnpu_device`` fixture).

::

    assert_no_races(op_or_kernel, ...)      traced launches + racecheck; msSanitizer-style hazards
    assert_matches_golden(op, cases, repeat) a batch; failing case-runs with the Wilson interval

Both raise an :class:`AssertionError` subclass carrying the evidence (``.hazards`` /
``.result``) and return it when the assertion holds. ``device=None`` uses the device the
``mpnpu_device`` fixture holds for this test (one per test process; see
:mod:`mpnpu.testing.devices`).
"""

from __future__ import annotations

from typing import Any, Iterable

from mpnpu.errors import MpnpuError, UsageError
from mpnpu.harness.runner import Variant, VariantResult, run_batch
from mpnpu.operators.protocol import kernel_type_of, make_case_for, unavailable_reason
from mpnpu.racecheck import Hazard, HazardLog
from mpnpu.racecheck.reuse import AnalysisCache
from mpnpu.report.hazards import format_hazard_log
from mpnpu.report.text.batch import format_variant
from mpnpu.runtime.checks import is_int
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.device import Device
from mpnpu.testing.devices import shared_device
from mpnpu.testing.targets import dropped_syncs, resolve_operator, resolve_target


class RacesFound(MpnpuError, AssertionError):
    """``assert_no_races`` failed: ``hazards`` holds what racecheck reported."""

    __module__ = "mpnpu.testing"  # as imported, and as pytest prints it

    def __init__(self, message: str, hazards: list[Hazard]) -> None:
        super().__init__(message, hazards=hazards)

    @property
    def hazards(self) -> list[Hazard]:
        hazards: list[Hazard] = self.details["hazards"]
        return hazards


class GoldenMismatch(MpnpuError, AssertionError):
    """``assert_matches_golden`` failed: ``result`` holds the batch's counts for the variant."""

    __module__ = "mpnpu.testing"

    def __init__(self, message: str, result: VariantResult) -> None:
        super().__init__(message, result=result)

    @property
    def result(self) -> VariantResult:
        result: VariantResult = self.details["result"]
        return result


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('h') else 's'}"


def _variant_text(name: str, dropped: frozenset[str]) -> str:
    if dropped:
        return f"variant {name} (drops {', '.join(sorted(dropped))})"
    return f"variant {name} (every sync point in place)"


def _check_count(name: str, value: Any, low: int) -> None:
    if not is_int(value) or value < low:
        raise UsageError(f"{name} must be an integer >= {low}, got {value!r}")


def _skip_if_unavailable(op: Any) -> None:
    """Skip the test (pytest's skip, with the operator's reason) when ``op`` cannot run here."""
    reason = unavailable_reason(op)
    if reason:
        import pytest  # (the helpers are for tests; imported only when one must skip)

        pytest.skip(f"{getattr(op, 'name', op)}: {reason}")


def assert_no_races(
    target: Any,
    *args: Any,
    device: Device | None = None,
    variant: str | None = None,
    drop_syncs: Iterable[str] | None = None,
    cases: int = 4,
    seed: int = 0,
    launches: int = 1,
    probe: str = "",
    timeout: float | None = None,
    **kwargs: Any,
) -> HazardLog:
    """Run traced launches and fail, with racecheck's report, if any GM access pair is unordered.

    ``target`` is an operator (object, registered name or "package.module:OBJECT"), whose cases
    ``0..cases-1`` of stream ``seed`` are run, or a kernel (function, "module:function" or
    "path/to/file.py:function"), launched ``launches`` times with ``*args, **kwargs`` (GM tensors
    allocated on ``device``). ``variant`` (an operator's variant name) or ``drop_syncs`` (sync
    point names) choose what the launches drop; by default nothing is dropped.

    Happens-before does not depend on the interleaving the OS chose, so the verdict is the same on
    every run: a missing sync is found even when every output came out right.
    Returns the :class:`~mpnpu.racecheck.HazardLog` (empty) when there is no hazard.
    """
    __tracebackhide__ = True  # pytest: show the test's line, not this helper's
    t = resolve_target(target)
    if t.operator is not None:
        _skip_if_unavailable(t.operator)
    op_kind = kernel_type_of(t.operator) if t.operator is not None else None
    dev = device if device is not None else shared_device(kernel_type=op_kind)
    log = HazardLog()
    analyses = AnalysisCache()  # (cases repeat launches: an identical one reuses its analysis)
    if t.operator is not None:
        op = t.operator
        if args or kwargs:
            raise UsageError(f"assert_no_races({op.name}): launch arguments are for a bare kernel; "
                             "an operator makes its own cases")
        _check_count("cases", cases, 1)
        _check_count("seed", seed, 0)
        name, dropped = dropped_syncs(op, variant, drop_syncs)
        for index in range(cases):
            case = make_case_for(op, seed, index, dev.block_dim)
            _, launch = op.run(dev, case, drop_syncs=dropped, probe=probe, trace=True)
            assert launch.trace is not None  # traced
            log.add(analyses.analyze(launch.trace), reused=analyses.last_reused)
        what = (f"{op.name}, {_variant_text(name, dropped)}, cases 0..{cases - 1} of seed {seed}, "
                f"block_dim {dev.block_dim}")
    else:
        if variant is not None:
            raise UsageError("variant= names an operator's variant; for a bare kernel use drop_syncs=")
        _check_count("launches", launches, 1)
        if isinstance(drop_syncs, str):
            raise UsageError(f"drop_syncs must be a collection of sync point names, e.g. ('S1',), not {drop_syncs!r}")
        dropped = frozenset(drop_syncs or ())
        ref = None
        assert t.kernel is not None  # a target that is not an operator is a kernel
        for _ in range(launches):
            result = dev.launch_with(LaunchOptions(trace=True, drop_syncs=dropped, timeout_s=timeout),
                                     t.kernel, *args, **kwargs)
            ref = result.kernel
            assert result.trace is not None  # traced
            log.add(analyses.analyze(result.trace), reused=analyses.last_reused)
        drops = f", dropping {', '.join(sorted(dropped))}" if dropped else ""
        what = f"kernel {ref}{drops}, block_dim {dev.block_dim}"
    if len(log):
        hazards = log.hazards()
        raise RacesFound(
            f"mpnpu: {_count(len(hazards), 'GM hazard')} in {_count(log.launches_analyzed, 'traced launch')} "
            f"({what}):\n{format_hazard_log(log)}",
            hazards,
        )
    return log


def assert_matches_golden(
    op: Any,
    *,
    cases: int = 20,
    repeat: int = 2,
    seed: int = 0,
    variant: str | None = None,
    drop_syncs: Iterable[str] | None = None,
    probe: str = "",
    device: Device | None = None,
) -> VariantResult:
    """Run ``cases`` cases x ``repeat`` repeats of an operator as a batch and fail if any case-run
    differs from the golden.

    The batch is the batch tool's (:func:`mpnpu.harness.runner.run_batch`): cases one after another
    on one device, so each case is handed the GM blocks the previous one freed. The failure lists
    the failing case-runs with their 95% Wilson interval, the outputs that failed, the relative
    errors and the failing case indices per repeat; case ``i`` is ``op.make_case(seed, i)``.
    Returns the variant's :class:`~mpnpu.harness.runner.VariantResult` when every case-run passed.
    """
    __tracebackhide__ = True
    operator = resolve_operator(op)
    _skip_if_unavailable(operator)
    name, dropped = dropped_syncs(operator, variant, drop_syncs)
    dev = device if device is not None else shared_device(kernel_type=kernel_type_of(operator))
    batch = run_batch(operator, cases=cases, repeat=repeat, variants=[Variant(name, dropped)], seed=seed,
                      probe=probe, device=dev)
    if batch.interrupt is not None:
        raise batch.interrupt  # Ctrl-C stops the test run, as it would without the helper
    result = batch.variants[name]
    if not result.clean:
        body = "\n".join(format_variant(result, operator.sync_points))
        raise GoldenMismatch(
            f"mpnpu: {operator.name} differs from its golden in {result.failed_case_runs} of {result.case_runs} "
            f"case-runs ({_count(cases, 'case')} x {_count(repeat, 'repeat')} of seed {seed}, "
            f"block_dim {dev.block_dim}); "
            f"case i is make_case({seed}, i):\n{body}",
            result,
        )
    return result
