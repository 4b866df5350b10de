"""Directed probes of polling loops that looked only once.

The rule of polled GM (:mod:`mpnpu.racecheck.polls`) takes a line for a polling loop only when some
core spun there in the launch: a loop whose every run found its flag already set at the first look
leaves one read, the same as a racy single read, and what the loop orders is reported (the dev kit's
``set_atomic_deterministic_computation`` with ``SCENARIO_NUM=3``: four cube cores in a chain, each
polling its predecessor's word at a line of its own, some of them finding it set at once).

A probe asks the kernel itself. For a read that may be such a first look (:func:`polls.first_looks`:
a scalar read of GM, at a line where no core spun, that observed another core's write and that its
core then waited for), the launch runs again from the same GM with a hold (:mod:`mpnpu.runtime.hold`):
the writer stops just before that write until the reader has made that read. The read then finds
the old bytes. A loop reads again, and again, until the released writer's write shows, and the
probe's trace has a poll at that line (the rule's own evidence, in a run of the same launch); a
single read moves on, and the line stays what it was. The lines the probes showed spinning become
poll sites of the launch (``LaunchTrace.poll_sites``), and racecheck analyses the launch's own trace
with them. Only *when* the writer runs changes; the kernel's code and data are its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mpnpu.racecheck.directed import occurrences
from mpnpu.racecheck.polls import FirstLook, first_looks, poll_sites
from mpnpu.runtime.hold import HoldPlan
from mpnpu.runtime.trace import LaunchTrace

#: probes of one launch at most (each is a launch of its own)
MAX_PROBES = 8
#: a probe's hold ends after this long at the latest (seconds): the reader may first do long work
PROBE_BOUND_S = 10.0

#: runs the launch again from the same GM with ``plan``, traced; its trace, or None if it did not run
Relaunch = Callable[[HoldPlan], "LaunchTrace | None"]


@dataclass(frozen=True)
class Probe:
    """One probe: the read it asked about, the hold it ran with, and whether the reader spun."""

    look: FirstLook
    plan: HoldPlan
    spun: bool

    def describe(self, labels: list[str] | tuple[str, ...] | None = None) -> str:
        """A line for the report: what was held and what the reader did."""
        reader = labels[self.look.reader] if labels else f"core {self.look.reader}"
        what = "spun there: a polling loop" if self.spun else "did not read there again: no loop shown"
        return f"{self.plan.describe(labels)}; {reader} {what} ({self.look.key[1]})"


def probe_first_looks(trace: LaunchTrace, relaunch: Relaunch, max_probes: int = MAX_PROBES, *,
                      looks: list[FirstLook] | None = None,
                      known: dict[tuple[str, str, int], bool] | None = None) -> tuple[LaunchTrace, list[Probe]]:
    """``trace`` with the poll sites its probes showed (module docstring), and the probes run. Each line
    is probed once (its first look in core order); a launch with no first look runs none. ``looks``:
    :func:`polls.first_looks` of ``trace``, if the caller has them. ``known``: what earlier probes of
    the same kernel showed (poll site -> whether the reader spun), used instead of a probe and
    updated with this launch's. A probe whose relaunch gives no trace (it failed) shows nothing."""
    if looks is None:
        looks = first_looks(trace)
    if not looks:
        return trace, []
    known = {} if known is None else known
    occ = {c: occurrences(trace.events[c]) for c in {x for look in looks for x in (look.reader, look.writer)}}
    learned: set[tuple[str, str, int]] = {look.key for look in looks if known.get(look.key)}
    probes: list[Probe] = []
    asked: set[tuple[str, str, int]] = set()
    for look in looks:
        if look.key in asked or look.key in known:
            continue
        if len(probes) >= max_probes:
            break
        asked.add(look.key)
        write = trace.events[look.writer][look.write_pos]
        read = trace.events[look.reader][look.read_pos]
        plan = HoldPlan(look.writer, write.site, occ[look.writer][look.write_pos], look.reader, read.site,
                        occ[look.reader][look.read_pos], bound_s=PROBE_BOUND_S)
        ran = relaunch(plan)
        spun = ran is not None and look.key in poll_sites(ran)
        if spun:
            learned.add(look.key)
        if ran is not None:
            known[look.key] = spun
        probes.append(Probe(look, plan, spun))
    if not learned:
        return trace, probes
    return trace._replace(poll_sites=trace.poll_sites | frozenset(learned)), probes


__all__ = ["MAX_PROBES", "Probe", "Relaunch", "probe_first_looks"]
