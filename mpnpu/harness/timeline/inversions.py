"""GM accesses of one core that ran in the opposite order to the one the core issued them in.

A core issues its copies in program order, but each asynchronous pipe executes its own queue: a
read issued to MTE2 after a write to the same GM rows was issued to MTE3 can run first, and then it
reads the old contents — unless something makes MTE2 wait for MTE3 (an ``MTE3_MTE2`` flag, a pipe
barrier, or a SyncAll, which drains the core's pipes). The race detector orders a core's GM accesses
by issue order, so it does not report such a pair; a timeline can show it, because the trace has
the times at which each pipe really executed each copy.

:func:`pipe_inversions` finds, per core and tensor, the pairs of GM accesses to overlapping bytes,
at least one a write, made on different pipes, where the one issued later *started before* the one
issued earlier had finished — an observed inversion, not a prediction: it is what happened in this
launch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mpnpu.runtime.topology import Topology
from mpnpu.runtime.trace import READ, Access, DroppedSyncEvent, LaunchTrace, shared_hull

if TYPE_CHECKING:
    from mpnpu.harness.timeline.model import Span


@dataclass(frozen=True)
class Inversion:
    """Two GM accesses of one core that ran in the opposite order to their issue order.

    ``first`` was issued first; ``second`` was issued after it and started before ``first`` ended.
    Of all such pairs of one core on one tensor the drawn one is the most inverted.
    """

    kind: str  # "RAW", "WAR" or "WAW", in issue order
    tensor: str
    core: str  # short name, "aiv1"
    first: "Span"
    second: "Span"
    elements: tuple[int, int]  # [lo, hi) of the overlap, elements of the tensor
    pairs: int  # inverted pairs of this core on this tensor
    dropped: tuple[str, ...]  # sync points the core skipped between issuing the two

    @property
    def inverted(self) -> bool:
        return True

    @property
    def title(self) -> str:
        lo, hi = self.elements
        return f"{self.kind} {self.tensor}[{lo}:{hi}] inside {self.core}"

    @property
    def lead_ns(self) -> int:
        """How long before the first access finished the second one started."""
        return self.first.t1 - self.second.t0


def pipe_inversions(trace: LaunchTrace, by_event: dict[tuple[int, int], "Span"], topo: Topology) -> list[Inversion]:
    """Every core's observed pipe-order inversions on GM, one per (core, tensor), latest lead first."""
    found: list[Inversion] = []
    for c, evs in enumerate(trace.events):
        accesses = [(i, ev) for i, ev in enumerate(evs) if isinstance(ev, Access) and ev.ran_on and ev.t0]
        dropped_at = [(i, ev.name) for i, ev in enumerate(evs) if isinstance(ev, DroppedSyncEvent)]
        best: dict[str, tuple[int, int, int, tuple[int, int]]] = {}  # tensor -> (lead, i, j, bytes)
        counts: dict[str, int] = {}
        for n, (i, a) in enumerate(accesses):
            for j, b in accesses[n + 1:]:
                if b.t0 >= a.t1:
                    continue
                if (a.kind == READ and b.kind == READ) or a.ran_on == b.ran_on or a.segment != b.segment:
                    continue
                shared = shared_hull(a.ranges, b.ranges)
                if shared is None:
                    continue
                counts[a.tensor] = counts.get(a.tensor, 0) + 1
                lead = a.t1 - b.t0
                if a.tensor not in best or lead > best[a.tensor][0]:
                    best[a.tensor] = (lead, i, j, shared)
        for tensor, (_, i, j, (lo, hi)) in best.items():
            a, b = evs[i], evs[j]  # type: ignore[assignment]  # accesses, as picked above
            kind = ("RAW" if b.kind == READ else "WAW") if a.kind != READ else "WAR"
            elements = a.elements(lo, hi)
            skipped = tuple(dict.fromkeys(name for k, name in dropped_at if i < k < j))
            found.append(Inversion(kind, tensor, topo.core(c).short, by_event[(c, i)], by_event[(c, j)], elements,
                                   counts[tensor], skipped))
    found.sort(key=lambda inv: -inv.lead_ns)
    return found


__all__ = ["Inversion", "pipe_inversions"]
