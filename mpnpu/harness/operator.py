"""What the batch, investigate and stress tools need to know about an operator under test.

The tools are generic; an operator package (``kernels/<op>/operator.py``) provides one object that
satisfies :class:`Operator`: how to make a reproducible case, run it on a device with some sync
points dropped (and optionally a diagnosis probe), and judge its outputs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from mpnpu.errors import UsageError
from mpnpu.runtime.device import Device, LaunchResult


@dataclass
class Verdict:
    """How one case-run was judged.

    ``fingerprint`` identifies the judged outputs' bytes, so that repeats of the same case can be
    compared with each other (the write-up's "consistent across batch runs" test).
    """

    passed: bool
    failed_outputs: list[str] = field(default_factory=list)
    min_rel_error: float = 0.0  # over failing elements
    max_rel_error: float = 0.0
    fingerprint: bytes = b""
    details: dict[str, Any] = field(default_factory=dict)


class Operator(Protocol):
    """An operator under test (see kernels/fused_linear_online_max_sum/operator.py)."""

    name: str
    sync_points: Mapping[str, str]  # sync point name -> what it orders
    variants: Mapping[str, frozenset[str]]  # named variant -> sync points it drops
    probes: Mapping[str, tuple[str, str]]  # probe name -> (write-up step, what it changes)
    stages: tuple[str, ...]

    def make_case(self, seed: int, index: int) -> Any:
        """Case ``index`` of stream ``seed``, the same on every call."""

    def describe_case(self, case: Any) -> str:
        """One line naming the case."""

    def prepare(self, case: Any) -> Any:
        """Per-case data computed once and reused by every run of the case (e.g. the golden)."""

    def run(self, device: Device, case: Any, *, drop_syncs: frozenset[str], probe: str,
            trace: bool) -> tuple[dict[str, Any], LaunchResult]:
        """Run the case on ``device``; return the outputs and the launch result."""

    def judge(self, case: Any, prepared: Any, outputs: Mapping[str, Any], probe: str) -> Verdict:
        """Judge the outputs of one run against the golden (or a probe's expected values)."""


def load_operator(ref: str) -> Operator:
    """Import an operator object from "package.module:NAME"."""
    module_name, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr or "OPERATOR")
    except (ImportError, AttributeError) as e:
        raise UsageError(f"cannot load operator {ref!r}: {e}") from None


DEFAULT_OPERATOR = "mpnpu.kernels.fused_linear_online_max_sum.operator:OPERATOR"
