"""What a helper was asked to test: an operator (object, name or reference) or a bare kernel."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from mpnpu.errors import UsageError
from mpnpu.harness.operator import Operator, load_operator

#: What the tools call on an operator (mpnpu.harness.operator.Operator).
_OPERATOR_ATTRS = ("name", "sync_points", "variants", "make_case", "prepare", "run", "judge")


def is_operator(obj: Any) -> bool:
    """Duck-typed: does ``obj`` offer what :class:`mpnpu.harness.operator.Operator` describes?"""
    return all(hasattr(obj, attr) for attr in _OPERATOR_ATTRS)


def resolve_operator(op: Any) -> Operator:
    """An operator object, or one loaded from a registered name or "package.module:OBJECT"."""
    if isinstance(op, str):
        op = load_operator(op)
    if not is_operator(op):
        raise UsageError(f"{op!r} is not an operator: it needs {', '.join(_OPERATOR_ATTRS)}")
    return op


@dataclass(frozen=True)
class Target:
    """Exactly one of ``operator`` / ``kernel`` is set."""

    operator: Operator | None = None
    kernel: str | Callable | None = None


def resolve_target(target: Any) -> Target:
    """Operator or kernel? Objects by what they offer; "module:NAME" strings by what NAME is.

    A string without ":" is an operator name; "path/to/file.py:function" is a kernel reference.
    """
    if is_operator(target):
        return Target(operator=target)
    if callable(target):
        return Target(kernel=target)
    if not isinstance(target, str):
        raise UsageError(f"expected an operator, a kernel function or a reference string, got {target!r}")
    module, sep, attr = target.rpartition(":")
    if not sep:
        return Target(operator=resolve_operator(target))
    if module.endswith(".py"):
        return Target(kernel=target)  # the device loads kernel files itself
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as e:  # any import-time failure is a wrong reference
        raise UsageError(f"cannot load {target!r}: {type(e).__name__}: {e}") from None
    if is_operator(obj):
        return Target(operator=obj)
    if callable(obj):
        return Target(kernel=target)
    raise UsageError(f"{target!r} is neither an operator nor a kernel function")


def dropped_syncs(op: Operator, variant: str | None, drop_syncs: Iterable[str] | None) -> tuple[str, frozenset[str]]:
    """(variant name, sync points to drop) from a named variant or explicit names; default: none dropped."""
    if variant is not None and drop_syncs is not None:
        raise UsageError("give either variant= or drop_syncs=, not both")
    if variant is not None:
        variants: Mapping[str, frozenset[str]] = op.variants
        if variant not in variants:
            raise UsageError(f"unknown variant {variant!r} of {op.name}; known: {', '.join(variants)}")
        return variant, frozenset(variants[variant])
    if drop_syncs is None:
        return "fixed", frozenset()
    if isinstance(drop_syncs, str):
        raise UsageError(f"drop_syncs must be a collection of sync point names, e.g. ('S1',), not {drop_syncs!r}")
    dropped = frozenset(drop_syncs)
    unknown = sorted(dropped - set(op.sync_points))
    if unknown:
        raise UsageError(f"unknown sync point {', '.join(unknown)} of {op.name}; known: {', '.join(op.sync_points)}")
    return ("drop(" + ",".join(sorted(dropped)) + ")") if dropped else "fixed", dropped
