"""FLOMS as an operator under test for mpnpu's tools (batch, investigate, stress).

Judging follows the incident's diagnosis (docs/incident.md). Without a probe, every output is
compared with the CPU golden under the precision rule (docs/precision.md). A probe's outputs that
have no golden of their own are judged as the diagnosis judged them: against the value they must
hold where one exists (zeros, the case's sentinel, the copied dependency), and by consistency
across repeats of the same case (the fingerprint).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from mpnpu import (
    CaseComparison,
    Device,
    LaunchResult,
    OperatorOption,
    Tolerance,
    Verdict,
    compare_outputs,
    fingerprint,
    round_to,
    verdict_of,
)

from . import golden as golden_mod
from .cases import Case, CaseSpace, make_case
from .diagnosis import DIAGNOSIS
from .op import KERNEL, TileSizes, fused_linear_online_max_sum
from .precision import tolerances
from .probes import PROBES, allreduce_writes_predicted, copied_dependency
from .spec import OUTPUT_NAMES
from .syncs import STAGES, SYNC_POINTS, VARIANTS
from .tiling import DEFAULT_BASE_K, DEFAULT_BASE_M, DEFAULT_BASE_N, make_tiling

_EXACT = Tolerance(rtol=0.0, atol=0.0, exact=True)

#: The tile sizes, offered by every command line as --base-m / --base-n / --base-k.
OPTIONS = (
    OperatorOption("base_m", DEFAULT_BASE_M, f"tile rows (default {DEFAULT_BASE_M})"),
    OperatorOption("base_n", DEFAULT_BASE_N, f"tile columns (default {DEFAULT_BASE_N})"),
    OperatorOption("base_k", DEFAULT_BASE_K, f"matmul K step (default {DEFAULT_BASE_K})"),
)


def sentinel_value(case: Case) -> float:
    """The case-specific constant of the init-sentinel probe (exact in float32)."""
    return 1000.0 + case.index


@dataclass
class Prepared:
    golden: dict[str, np.ndarray]
    tolerances: dict[str, Tolerance]


@dataclass
class FlomsOperator:
    """The FLOMS operator; ``space`` and ``tiles`` are the batch's case space and tile sizes."""

    space: CaseSpace = field(default_factory=CaseSpace)
    tiles: TileSizes = field(default_factory=TileSizes)
    name: str = "fused_linear_online_max_sum"
    sync_points: Mapping[str, str] = field(default_factory=lambda: SYNC_POINTS)
    variants: Mapping[str, frozenset[str]] = field(default_factory=lambda: VARIANTS)
    probes: Mapping[str, tuple[str, str]] = field(default_factory=lambda: PROBES)
    stages: tuple[str, ...] = STAGES
    options: tuple[OperatorOption, ...] = OPTIONS
    diagnosis: Any = DIAGNOSIS  # the incident's O1-O9 chain (docs/incident.md)
    #: the kernel the host code launches ("module:function"; a benchmark may wrap it)
    kernel: str = KERNEL

    def with_options(self, **values: int) -> "FlomsOperator":
        """This operator with other tile sizes (``base_m``, ``base_n``, ``base_k``)."""
        return dataclasses.replace(self, tiles=dataclasses.replace(self.tiles, **values))

    def make_case(self, seed: int, index: int) -> Case:
        return make_case(seed, index, self.space)

    def describe_case(self, case: Case) -> str:
        return case.describe()

    def golden(self, case: Case) -> dict[str, np.ndarray]:
        """The CPU golden's outputs for ``case`` (what :meth:`prepare` computes, tolerances aside)."""
        return golden_mod.golden(*case.inputs())

    def prepare(self, case: Case) -> Prepared:
        return Prepared(self.golden(case), tolerances(case))

    def run(self, device: Device, case: Case, *, drop_syncs: frozenset[str] = frozenset(), probe: str = "",
            trace: bool = False) -> tuple[dict[str, Any], LaunchResult]:
        run = fused_linear_online_max_sum(
            device, case.input, case.weight, case.target, case.vocab_start_index, case.vocab_end_index,
            case.input_dtype, case.return_logits, tiles=self.tiles, drop_syncs=drop_syncs, probe=probe,
            probe_value=sentinel_value(case), trace=trace, kernel=self.kernel,
        )
        return run.outputs, run.launch

    def judge(self, case: Case, prepared: Prepared, outputs: Mapping[str, Any], probe: str = "") -> Verdict:
        golden, tol = dict(prepared.golden), dict(prepared.tolerances)
        judged = list(OUTPUT_NAMES)
        if probe == "only-predicted":
            judged = ["predicted_logits"]  # the other outputs are not written at all
        expected = self.probe_expectation(case, prepared, probe)
        if expected is not None:
            golden["predicted_logits"], tol["predicted_logits"] = expected
        elif probe and not allreduce_writes_predicted(probe):
            judged.remove("predicted_logits")  # an intermediate: judged by consistency only
        cmp = compare_outputs({k: outputs[k] for k in judged}, {k: golden[k] for k in judged},
                              {k: tol[k] for k in judged})
        return _verdict(cmp, outputs, probe)

    def probe_expectation(self, case: Case, prepared: Prepared, probe: str) -> tuple[np.ndarray, Tolerance] | None:
        """The value predicted_logits must hold under ``probe``, where the diagnosis had one."""
        bt = case.bt
        if probe == "init-zero-only":
            return np.zeros(bt, np.float32), _EXACT
        if probe == "init-sentinel":
            return np.full(bt, sentinel_value(case), np.float32), _EXACT
        dependency = copied_dependency(probe)
        if dependency == "masked_target":
            tiling = make_tiling(bt, case.h, case.v, case.vocab_start_index, case.vocab_end_index,
                                 case.input_dtype, case.target_dtype, case.return_logits, 1,
                                 self.tiles.base_m, self.tiles.base_n, self.tiles.base_k)
            # Every tile of a row adds the masked target it read: n_tiles_n small integers, exact.
            return (prepared.golden["masked_target"].astype(np.float32) * tiling.n_tiles_n), _EXACT
        if dependency == "vocab_parallel_logits":
            logits = golden_mod.logits(case.input, case.weight, case.input_dtype)
            first = logits[:, 0] if case.v else np.zeros(bt)
            tile_dtype = "float32" if case.return_logits else case.input_dtype
            # The cube result's tolerance (one storage ulp), but on float32 values: predicted_logits
            # is float32, not bfloat16 bit patterns, so no storage reinterpretation.
            tol = dataclasses.replace(prepared.tolerances["vocab_parallel_logits"], storage_dtype=None)
            return round_to(first, tile_dtype), tol
        return None


def _verdict(cmp: CaseComparison, outputs: Mapping[str, Any], probe: str) -> Verdict:
    # predicted_logits is the output the incident is about; its bytes identify a run's result.
    return verdict_of(cmp, fingerprint(outputs["predicted_logits"]))


OPERATOR = FlomsOperator()
