"""Helpers every operator can use: sync-point names, the variant table, fingerprints, verdicts."""

from __future__ import annotations

import hashlib
import time
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from mpnpu.errors import UsageError
from mpnpu.operators.compare import CaseComparison
from mpnpu.operators.protocol import Verdict


def parse_sync_names(text: str, sync_points: Mapping[str, str]) -> frozenset[str]:
    """'S1,S2' -> {'S1', 'S2'}; unknown names are a UsageError listing the known ones."""
    names = frozenset(part.strip() for part in text.split(",") if part.strip())
    check_sync_names(names, sync_points, where="")
    return names


def check_sync_names(names: Iterable[str], sync_points: Mapping[str, str],
                     where: str = " in drop_syncs") -> frozenset[str]:
    """``names`` as a frozenset if every one is a known sync point, else a UsageError listing them.

    A typo must not silently run the kernel with every sync in place.
    """
    if isinstance(names, str):
        raise UsageError(f"drop_syncs must be a collection of sync point names, e.g. ('S1',), not {names!r}")
    names = frozenset(names)
    if not names:  # (a plain run: every case-run of a batch asks)
        return names
    unknown = sorted(names - set(sync_points))
    if unknown:
        raise UsageError(
            f"unknown sync point{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}{where}; "
            f"known: {', '.join(sync_points)}"
        )
    return names


def sync_names_of(op: Any, names: Iterable[str] | str, where: str = " in --drop-sync") -> frozenset[str]:
    """The sync points of ``op`` that ``names`` (a collection, or 'A,B' as on the command line) name.

    An operator may spell its sync points more than one way: a C++ operator's are FILE:LINE of the
    sync call, and "add.cpp:45" names "op_kernel/add.cpp:45"; such an operator has a
    ``resolve_sync_names(names)`` method. Otherwise every name must be one of ``op.sync_points``.
    """
    if isinstance(names, str):
        names = [part.strip() for part in names.split(",") if part.strip()]
    resolver = getattr(op, "resolve_sync_names", None)
    if callable(resolver):
        resolved: frozenset[str] = frozenset(resolver(names))
        return resolved
    return check_sync_names(names, op.sync_points, where)


def variants_from_syncs(incident: Iterable[str], **others: Iterable[str]) -> dict[str, frozenset[str]]:
    """The variant table: ``incident`` drops the sync points of the bug as written, ``fixed`` drops none.

    ``others`` adds more named variants (name -> sync points they drop).
    """
    table = {"incident": frozenset(incident), "fixed": frozenset()}
    table.update({name: frozenset(dropped) for name, dropped in others.items()})
    return table


def fingerprint(*arrays: Any) -> bytes:
    """A short digest of arrays' bytes: equal outputs give equal fingerprints across repeats."""
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.digest()


def verdict_of(cmp: CaseComparison, fingerprint: bytes = b"") -> Verdict:
    """A :class:`Verdict` from a comparison of outputs with their golden."""
    return Verdict(
        passed=cmp.passed,
        failed_outputs=cmp.failed_outputs,
        min_rel_error=cmp.min_rel_error_failing,
        max_rel_error=cmp.max_rel_error_failing,
        fingerprint=fingerprint,
        details={name: o.to_dict() for name, o in cmp.outputs.items() if not o.passed},
    )


#: how many of a batch's first cases, and for how long at most, :func:`build_kernels_for` looks at to
#: find the kernels a batch launches (a case's kernel is still built when first needed if not these)
PREBUILD_CASES = 64
PREBUILD_SCAN_S = 0.5


def build_kernels_for(op: Any, seed: int, cases: int, probe: str = "",
                      report: Callable[[str], None] | None = None, block_dim: int | None = None) -> int:
    """Have an operator whose kernels are built (a C++ one, which has ``build_kernels(cases, probe,
    report)``) build those its first ``cases`` cases of ``seed`` launch, before anything runs: so
    that no case-run waits for a compiler and no batch's timing counts one. Returns how many
    libraries were compiled (0 for an operator without the method). ``block_dim``: the device's,
    for an operator whose cases are sized by it."""
    from mpnpu.operators.protocol import make_case_for

    build = getattr(op, "build_kernels", None)
    if not callable(build):
        return 0
    # (a stress sweep runs a batch per configuration of the same operator: its cases are looked
    # at once; the operator is kept with its key, so that the key's id cannot be another's)
    key = (id(op), seed, min(cases, PREBUILD_CASES), probe, block_dim)
    if _SCANNED.get(key, (None,))[0] is op:
        return 0
    if len(_SCANNED) >= 64:
        _SCANNED.clear()
    made = []
    start = time.perf_counter()
    for index in range(min(cases, PREBUILD_CASES)):
        made.append(make_case_for(op, seed, index, block_dim))
        if time.perf_counter() - start > PREBUILD_SCAN_S:
            break
    built = int(build(made, probe, report))
    _SCANNED[key] = (op,)
    return built


#: the batches build_kernels_for has looked at: (id(op), seed, cases, probe, block_dim) -> (op,)
_SCANNED: dict[tuple[int, int, int, str, int | None], tuple[Any]] = {}
