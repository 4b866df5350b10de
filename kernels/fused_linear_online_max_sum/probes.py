"""Diagnosis switches: each step of the incident's diagnosis (docs/incident.md, O4–O8) as a probe.

A probe changes only what the diagnosis changed — a copy-out disabled, an initial value replaced, a
pipe barrier added, a dependency copied instead of the computed value — and nothing about how the
cores synchronise. The kernel asks these predicates at the points the diagnosis touched; with no
probe (``tiling.probe == ""``) every answer is "run as shipped".
"""

from __future__ import annotations

from mpnpu import UsageError

#: probe name -> (diagnosis step, what it changes)
PROBES: dict[str, tuple[str, str]] = {
    "only-predicted": ("O4", "copy-out of every output except predicted_logits disabled"),
    "init-zero-only": ("O5a", "predicted_logits initialised to 0; every later write to it disabled"),
    "init-sentinel": ("O5b", "predicted_logits initialised to a case-specific constant; every later write disabled"),
    "no-allreduce-copyout": ("O6", "AllReduceProcess's copy-out of predicted_logits disabled: "
                                   "it holds CVProcess's result"),
    "pipe-barrier-all": ("O7", "PipeBarrier<PIPE_ALL> between every step of the predicted_logits computation"),
    "copy-dep=vocab_parallel_logits": ("O8", "predicted_logits receives the cube result (the tile's first logit "
                                             "of the row) instead of the gathered logit"),
    "copy-dep=masked_target": ("O8", "predicted_logits receives masked_target (as read in CVProcess, summed over "
                                     "the row's tiles) instead of the gathered logit"),
}


def check_probe(name: str) -> str:
    """Return ``name`` if it is a known probe ("" = none), else raise a UsageError listing them."""
    if name and name not in PROBES:
        raise UsageError(f"unknown probe {name!r}; known: {', '.join(PROBES)}")
    return name


def writes_output(probe: str, name: str) -> bool:
    """Whether the copy-out of output ``name`` runs (only-predicted keeps predicted_logits alone)."""
    return probe != "only-predicted" or name == "predicted_logits"


def initialises_to_sentinel(probe: str) -> bool:
    """Whether InitOutputAndWorkspace writes the case's sentinel into predicted_logits (else 0)."""
    return probe == "init-sentinel"


def cv_writes_predicted(probe: str) -> bool:
    """Whether CVProcess adds its gathered values into predicted_logits."""
    return probe not in ("init-zero-only", "init-sentinel")


def allreduce_writes_predicted(probe: str) -> bool:
    """Whether AllReduceProcess writes the final predicted_logits (raw − max, masked)."""
    return probe in ("", "only-predicted", "pipe-barrier-all")


def pipe_barriers(probe: str) -> bool:
    return probe == "pipe-barrier-all"


def copied_dependency(probe: str) -> str:
    """'vocab_parallel_logits' or 'masked_target' when predicted_logits receives that input instead."""
    return probe.split("=", 1)[1] if probe.startswith("copy-dep=") else ""
