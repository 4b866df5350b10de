"""What a helper was asked to test: an operator (object, name or reference) or a bare kernel."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from mpnpu.errors import UsageError
from mpnpu.operators.helpers import sync_names_of
from mpnpu.operators.protocol import Operator, check_operator, protocol_problems
from mpnpu.operators.registry import load_operator
from mpnpu.runtime.core import resolve_kernel


def is_operator(obj: Any) -> bool:
    """Does ``obj`` satisfy :class:`mpnpu.operators.protocol.Operator`?"""
    return not protocol_problems(obj)


def resolve_operator(op: Any) -> Operator:
    """An operator object, or one loaded from a registered name, "package.module:OBJECT" or
    "path/to/file.py:OBJECT" (:func:`mpnpu.operators.registry.load_operator`)."""
    if isinstance(op, str):
        return load_operator(op)
    return check_operator(op, repr(op))


@dataclass(frozen=True)
class Target:
    """Exactly one of ``operator`` / ``kernel`` is set."""

    operator: Operator | None = None
    kernel: str | Callable[..., Any] | None = None


def resolve_target(target: Any) -> Target:
    """Operator or kernel? Objects by what they offer; reference strings by what they name.

    A registered name ("floms") is an operator; "module:NAME" and "path/to/file.py:NAME" are an
    operator if NAME is one, else a kernel function.
    """
    if callable(target) and not is_operator(target):
        return Target(kernel=target)
    if not isinstance(target, str):
        return Target(operator=check_operator(target, repr(target)))
    if ":" not in target:  # a registered name, or "package.module" (its OPERATOR)
        return Target(operator=load_operator(target))
    module, _, attr = target.rpartition(":")
    if module.endswith(".py"):
        try:
            resolve_kernel(target)  # a function in that file: a kernel
            return Target(kernel=target)
        except UsageError:
            return Target(operator=load_operator(target))  # else it must be an operator
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as e:  # any import-time failure is a wrong reference
        raise UsageError(f"cannot load {target!r}: {type(e).__name__}: {e}") from None
    if callable(obj) and not is_operator(obj):
        return Target(kernel=target)
    return Target(operator=check_operator(obj, target))


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
    dropped = sync_names_of(op, drop_syncs, where=f" of {op.name}")
    return ("drop(" + ",".join(sorted(dropped)) + ")") if dropped else "fixed", dropped
