"""``assert_race_is_real``: a reported hazard turned into a demonstrated wrong result.

racecheck reports *potential* races; whether one ever corrupts an output in a batch depends on the
machine. Race-directed reproduction (:mod:`mpnpu.directed.confirm`) makes the race happen: for each
hazard of the variant, directed runs hold the core of the first access just before it until the
other core has made the second, so the pair really runs reversed, then judge the result against
the golden. The same hold plans run on the fixed kernel too, which must stay correct. Holds only
delay core processes; no kernel code or data changes. Every directed run uses its own short-lived
device (its GM holds only the previous case's leftovers, so a seed replays the run exactly); the
``mpnpu_device`` fixture's device is not used.
"""

from __future__ import annotations

from typing import Any, Iterable

from mpnpu.directed.confirm import BENIGN, HARMFUL, ConfirmResult, confirm_hazards
from mpnpu.errors import MpnpuError
from mpnpu.report.text.directed import format_confirmation
from mpnpu.testing.devices import plugin_block_dim
from mpnpu.testing.targets import dropped_syncs, resolve_operator


class RaceNotShown(MpnpuError, AssertionError):
    """``assert_race_is_real`` failed: ``result`` holds every hazard's directed runs."""

    __module__ = "mpnpu.testing"

    def __init__(self, message: str, result: ConfirmResult) -> None:
        super().__init__(message, result=result)

    @property
    def result(self) -> ConfirmResult:
        result: ConfirmResult = self.details["result"]
        return result


def assert_race_is_real(
    op: Any,
    *,
    variant: str | None = "incident",
    drop_syncs: Iterable[str] | None = None,
    runs: int = 5,
    scout_cases: int = 2,
    case_seed: int = 0,
    seed: int = 0,
    block_dim: int | None = None,
    harmful: bool = True,
) -> ConfirmResult:
    """Fail unless some hazard of the variant, reversed on purpose, gives a wrong result.

    ``scout_cases`` cases (``op.make_case(case_seed, i)``) are traced to find the hazards; each
    hazard then gets ``runs`` directed runs, seeded from ``seed``. The assertion holds when at
    least one hazard is HARMFUL (reversed, and an output differed from the golden) — or, with
    ``harmful=False``, merely reversible (BENIGN counts too) — and the fixed kernel under the same
    hold plans never failed. The failure message has every hazard's verdict, where the core was
    held and the seed that replays a run. Returns the :class:`~mpnpu.directed.confirm.ConfirmResult`.
    ``variant=None`` with ``drop_syncs=None`` confirms the kernel with every sync in place (a
    kernel whose bug is not a named sync point).
    """
    __tracebackhide__ = True
    operator = resolve_operator(op)
    if drop_syncs is not None:
        variant = None
    name, dropped = dropped_syncs(operator, variant, drop_syncs)
    bd = block_dim if block_dim is not None else plugin_block_dim()
    result = confirm_hazards(operator, dropped=dropped, runs=runs, scout_cases=scout_cases, case_seed=case_seed,
                             seed=seed, block_dim=bd, fixed=True)
    wanted = {HARMFUL} if harmful else {HARMFUL, BENIGN}
    shown = [c for c in result.confirmations if c.verdict in wanted]
    head = (f"{operator.name}, variant {name}, {len(result.confirmations)} hazard(s) in cases "
            f"0..{scout_cases - 1} of seed {case_seed}, {runs} directed runs each, block_dim {bd}")
    body = [line for c in result.confirmations for line in format_confirmation(c)]
    if result.fixed_failures:
        raise RaceNotShown(
            f"mpnpu: the fixed kernel failed {result.fixed_failures} time(s) under the hold plans ({head}); "
            "either it is not race-free or the holds changed more than timing:\n" + "\n".join(body),
            result,
        )
    if not shown:
        why = ("racecheck found no hazard to confirm" if not result.confirmations
               else "no hazard was shown " + ("harmful" if harmful else "reversible"))
        errors = [f"  scouting: {e}" for e in result.scout_errors]
        raise RaceNotShown(f"mpnpu: {why} ({head}):\n" + "\n".join(body + errors), result)
    return result
