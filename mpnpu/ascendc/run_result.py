"""What ``mpnpu run`` found, as data: each output's check per repeat and the run's result (the tool
itself, which runs the kernel, is :mod:`mpnpu.tools.run`; the reports read this module's types)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mpnpu.racecheck import HazardLog
from mpnpu.racecheck.findings import FindingLog
from mpnpu.runtime.topology import KernelType


@dataclass
class OutputCheck:
    """One output in one repeat against its golden."""

    index: int  # the argument's position
    path: str
    n_elements: int
    n_differ: int
    first: list[tuple[int, float, float]] = field(default_factory=list)  # (index, got, golden)
    golden: bool = True  # a --golden judged it (else it was only written and compared with the first repeat)

    @property
    def passed(self) -> bool:
        return self.n_differ == 0


@dataclass
class RunResult:
    """What ``mpnpu run`` saw: per repeat, each output's check (against its golden, if given) and
    whether it equalled the first repeat's bytes."""

    kernel: str
    block_dim: int
    kernel_type: KernelType
    repeats: int
    checks: list[list[OutputCheck]]  # [repeat][output]
    same_as_first: list[bool]
    hazards: HazardLog = field(default_factory=HazardLog)
    dropped_syncs: tuple[str, ...] = ()
    racecheck: bool = False
    notes: list[str] = field(default_factory=list)
    checks_run: tuple[str, ...] = ()  # initcheck / synccheck, those that ran
    findings: FindingLog = field(default_factory=FindingLog)
    interrupt: BaseException | None = field(default=None, repr=False)  # the KeyboardInterrupt, if any

    @property
    def interrupted(self) -> bool:
        return self.interrupt is not None

    @property
    def repeats_done(self) -> int:
        """The repeats that finished (all of them unless interrupted)."""
        return len(self.checks)

    @property
    def failed_repeats(self) -> list[int]:
        return [r + 1 for r, cs in enumerate(self.checks) if not all(c.passed for c in cs)]

    @property
    def differ_from_first(self) -> list[int]:
        """Repeats (1-based) whose outputs are not the first repeat's bytes."""
        return [r + 1 for r, same in enumerate(self.same_as_first) if not same]

    @property
    def passed(self) -> bool:
        """Every repeat ran and matched its golden and, with racecheck, no hazard was found (with
        initcheck or synccheck, no defect either: their warnings do not fail a run)."""
        return (not self.interrupted and not self.failed_repeats and not (self.racecheck and len(self.hazards))
                and not self.findings.errors())

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel, "block_dim": self.block_dim, "kernel_type": self.kernel_type.value,
            "repeats": self.repeats, "repeats_done": self.repeats_done, "interrupted": self.interrupted,
            "failed_repeats": self.failed_repeats,
            "differ_from_first": self.differ_from_first, "dropped_syncs": list(self.dropped_syncs),
            "racecheck": self.racecheck, "hazards": self.hazards.to_dicts() if self.racecheck else None,
            "outputs": [[{"argument": c.index + 1, "path": c.path, "elements": c.n_elements, "golden": c.golden,
                          "differ": c.n_differ,
                          "first": [{"index": i, "got": g, "golden": w} for i, g, w in c.first]}
                         for c in cs] for cs in self.checks],
            "notes": self.notes,
            "checks": list(self.checks_run), "findings": self.findings.to_dicts() if self.checks_run else None,
        }
