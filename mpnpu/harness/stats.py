"""Statistics for failure rates measured over repeated launches.

A stress sweep runs a configuration ``n`` times and sees ``k`` failures. These functions turn that
into statements a report can make honestly:

- :func:`wilson_interval`: a confidence interval for the failure rate ``p`` given ``k`` of ``n``
  (good at ``k = 0`` and ``k = n``, where the naive ``p ± z·sqrt(p(1-p)/n)`` collapses to a point);
- :func:`rule_of_three` / :func:`zero_failure_upper_bound`: how large the rate can still be after
  ``n`` clean trials;
- :func:`trials_to_detect` / :func:`detect_probability`: how many trials it takes to see a rate-``p``
  race at least once with a given confidence;
- :func:`consistency_detect_probability` / :func:`cases_for_consistency`: the same when a fault is
  seen as a case whose repeated runs disagree (judging by consistency, with no golden).

Plain math on floats (no scipy): the normal quantile comes from :class:`statistics.NormalDist`.
Invalid arguments raise :class:`ValueError`, like the functions of :mod:`math`.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from mpnpu.errors import InvalidArgumentError

__all__ = [
    "wilson_interval",
    "rule_of_three",
    "zero_failure_upper_bound",
    "trials_to_detect",
    "detect_probability",
    "consistency_detect_probability",
    "cases_for_consistency",
    "pct",
]


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise InvalidArgumentError(f"confidence must be in (0, 1), got {confidence!r}")


def _check_rate(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"rate p must be in [0, 1], got {p!r}")


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial rate after ``k`` events in ``n`` trials.

    With ``p̂ = k/n`` and ``z`` the two-sided normal quantile ``Φ⁻¹((1 + confidence)/2)``
    (1.959964 for 95 %)::

        centre = (p̂ + z²/(2n)) / (1 + z²/n)
        half   = z / (1 + z²/n) · sqrt(p̂(1 - p̂)/n + z²/(4n²))
        (lo, hi) = (centre - half, centre + half)

    ``k = 0`` gives ``lo = 0`` and ``k = n`` gives ``hi = 1`` exactly (set explicitly, so float
    rounding never reports a tiny non-zero rate for a clean run). ``n = 0`` (no data) → ``(0, 1)``.
    """
    _check_confidence(confidence)
    if n < 0 or k < 0 or k > n:
        raise InvalidArgumentError(f"need 0 <= k <= n, got k={k!r}, n={n!r}")
    if n == 0:
        return (0.0, 1.0)
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    p_hat = k / n
    z2n = z * z / n
    centre = (p_hat + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p_hat * (1.0 - p_hat) / n + z2n / (4.0 * n))
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return (lo, hi)


def rule_of_three(n: int) -> float:
    """Approximate 95 % upper bound on a rate after ``n`` trials with no event: ``3/n``.

    From ``(1 - p)^n = 0.05  ⇒  p ≈ -ln(0.05)/n ≈ 3/n``; accurate for ``n ≳ 30``. Capped at 1
    (a rate cannot exceed 1); ``n = 0`` → 1.0. Use :func:`zero_failure_upper_bound` for the exact value.
    """
    if n < 0:
        raise InvalidArgumentError(f"n must be >= 0, got {n!r}")
    if n == 0:
        return 1.0
    return min(1.0, 3.0 / n)


def zero_failure_upper_bound(n: int, confidence: float = 0.95) -> float:
    """Exact one-sided upper bound on a rate after ``n`` trials with no event.

    The largest ``p`` still consistent with zero events: ``(1 - p)^n = 1 - confidence``, so
    ``p = 1 - (1 - confidence)^(1/n)``. ``n = 0`` → 1.0.
    """
    _check_confidence(confidence)
    if n < 0:
        raise InvalidArgumentError(f"n must be >= 0, got {n!r}")
    if n == 0:
        return 1.0
    # -expm1(log(x)/n) == 1 - x**(1/n) without cancellation when the bound is small (large n).
    return -math.expm1(math.log1p(-confidence) / n)


def detect_probability(p: float, n: int) -> float:
    """Probability of seeing at least one event in ``n`` independent trials of rate ``p``.

    ``P = 1 - (1 - p)^n``. Computed as ``-expm1(n · log1p(-p))`` so tiny rates keep their precision.
    """
    _check_rate(p)
    if n < 0:
        raise InvalidArgumentError(f"n must be >= 0, got {n!r}")
    if n == 0:
        return 0.0
    if p == 1.0:
        return 1.0
    return -math.expm1(n * math.log1p(-p))


def trials_to_detect(p: float, confidence: float = 0.99) -> int:
    """Smallest ``N`` with ``1 - (1 - p)^N >= confidence``: trials needed to see a rate-``p`` event.

    ``N = ceil(ln(1 - confidence) / ln(1 - p))``, then nudged by one if float rounding put it on the
    wrong side of the boundary (the result is checked with :func:`detect_probability`).
    ``p = 0`` raises :class:`ValueError` (no finite number of trials suffices).
    """
    _check_rate(p)
    _check_confidence(confidence)
    if p == 0.0:
        raise InvalidArgumentError("p = 0: an event that never happens cannot be detected")
    if p == 1.0:
        return 1
    n = max(1, math.ceil(math.log1p(-confidence) / math.log1p(-p)))
    # The closed form sits exactly on the boundary for some inputs; settle it with the definition.
    while n > 1 and detect_probability(p, n - 1) >= confidence:
        n -= 1
    while detect_probability(p, n) < confidence:
        n += 1
    return n


def consistency_detect_probability(p: float, repeats: int, cases: int) -> float:
    """P(some case's ``repeats`` runs disagree) when each run is wrong with probability ``p``.

    A case is missed only if all its runs are right, or all are wrong in the same way; bounding the
    latter by "all wrong" gives P(miss per case) <= (1 − p)^R + p^R, so this is a lower bound.
    """
    if repeats < 2 or p <= 0.0 or p >= 1.0:
        return 0.0
    miss_case = (1.0 - p) ** repeats + p ** repeats
    return -math.expm1(cases * math.log(miss_case))


def cases_for_consistency(p: float, repeats: int, confidence: float) -> int:
    """Fewest cases of ``repeats`` runs each for :func:`consistency_detect_probability` >= confidence."""
    if not 0.0 < p < 1.0 or repeats < 2:
        raise InvalidArgumentError(f"need 0 < p < 1 and repeats >= 2, got p={p!r}, repeats={repeats!r}")
    miss_case = (1.0 - p) ** repeats + p ** repeats
    c = max(1, math.ceil(math.log1p(-confidence) / math.log(miss_case)))
    while c > 1 and consistency_detect_probability(p, repeats, c - 1) >= confidence:
        c -= 1
    while consistency_detect_probability(p, repeats, c) < confidence:
        c += 1
    return c


def pct(x: float) -> str:
    """A rate as a percentage with three significant digits, as reports print it: 0.0212 -> '2.12%'."""
    return f"{100 * x:.3g}%"
