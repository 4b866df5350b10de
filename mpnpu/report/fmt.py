"""Number formats shared by the renderers (one definition each, so reports agree)."""

from __future__ import annotations

from mpnpu.harness.stats import pct

__all__ = ["pct", "pct_compact", "rel"]


def pct_compact(x: float) -> str:
    """A rate for a narrow table column: '0%', '2.1%', '37%', '99.6%', '100%'."""
    if x == 0:
        return "0%"
    if x >= 0.995:
        return "100%" if x == 1 else f"{100 * x:.1f}%"
    return f"{100 * x:.2g}%" if x < 0.1 else f"{100 * x:.0f}%"


def rel(x: float | None) -> str:
    """A relative error, '-' when there is none."""
    return "-" if x is None else f"{x:.3g}"
