"""``--list-ops``: every registered operator with its sync points, variants, options and diagnosis."""

from __future__ import annotations

from typing import Sequence

from mpnpu.operators.protocol import Operator, diagnosis_of, options_of
from mpnpu.operators.registry import ENTRY_POINT_GROUP, Listed


def format_operator(short: str, ref: str, op: Operator) -> list[str]:
    lines = [f"{short}: {op.name} ({ref})"]
    description = getattr(op, "description", "")
    if description:
        lines.append(f"  {description}")
    width = max((len(n) for n in op.sync_points), default=0)
    lines.append("  sync points:")
    lines.extend(f"    {name:<{width}}  {what}" for name, what in op.sync_points.items())
    variants = [f"{name} ({'drops ' + ','.join(sorted(dropped)) if dropped else 'every sync point in place'})"
                for name, dropped in op.variants.items()]
    lines.append("  variants: " + "; ".join(variants))
    options = options_of(op)
    if options:
        lines.append("  options: " + ", ".join(f"{o.flag} (default {o.default})" for o in options))
    if op.probes:
        lines.append("  probes: " + ", ".join(op.probes))
    chain = diagnosis_of(op)
    if chain is not None:
        lines.append(f"  diagnosis: {len(chain.steps)} steps (mpnpu investigate --op {short})")
    return lines


def format_sync_points(op: Operator) -> str:
    """``--list-syncs``: the operator's sync points as ``--drop-sync`` takes them, and which of them
    each variant drops."""
    width = max((len(n) for n in op.sync_points), default=0)
    lines = [f"{op.name}: {len(op.sync_points)} sync points"]
    for name, what in op.sync_points.items():
        dropped_by = [v for v, names in op.variants.items() if name in names]
        lines.append(f"  {name:<{width}}  {what}" + (f"  [dropped by {', '.join(dropped_by)}]" if dropped_by else ""))
    return "\n".join(lines)


def format_operator_list(listed: Sequence[Listed]) -> str:
    """The registered operators (:func:`mpnpu.operators.registry.list_operators`), each loaded or not."""
    if not listed:
        return f"no operators registered (entry-point group {ENTRY_POINT_GROUP}); is mpnpu installed?"
    lines: list[str] = []
    for item in listed:
        if lines:
            lines.append("")
        if item.operator is None:
            lines.append(f"{item.name}: cannot be loaded ({item.ref}): {item.error}")
        else:
            lines.extend(format_operator(item.name, item.ref, item.operator))
    return "\n".join(lines)
