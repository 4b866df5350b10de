"""Seeded generator of varied FLOMS test cases, each reproducible from (seed, index) alone.

Why the data looks the way it does:

* Every case's values differ (own RNG stream per index). A batch of identical data hides the race:
  a core that reads the previous case's masked_target would read the right values by accident.
* Vocab shards: the local shard is [start, end) = [k·V, (k+1)·V) of a global vocab of n_shards·V ids,
  and targets are global ids, so some rows fall inside the shard and some outside (at least one of
  each when BT ≥ 2), with a few planted on the boundaries start, end − 1, end and start − 1, where an
  off-by-one in the kernel's end-exclusive test would show.
* Realistic logits. For a trained language model the target's logit is near the row max; that is
  what makes the incident's wrong gathers show relative errors of tens to thousands: predicted_logits
  is L[b, t] − max_b, a small number, and a wrong gather returns some other column's L − max_b, a
  number of the size of the row's spread. Random data would give gaps of the size of the spread and
  relative errors near 1. So for every in-shard row we plant the target: input row b gets a component
  c_b along weight row t_b = target_b − start, with c_b solved exactly (see :func:`_plant_targets`) so
  that L[b, t_b] = max_{j≠t_b} L[b, j] − gap_b, gap_b log-uniform in ``target_gap``·``logit_std``.
  Rows keep a target just below the max (not at it) so that the golden predicted_logits is non-zero
  and relative errors stay finite, as in the incident. With the defaults (gaps 0.002..0.3 against a
  spread of ~3.5) a wrong gather's relative error is typically 10..2000.
* Moderate magnitudes: weight rows have norm ≈ 1 and the unplanted logits have std ``logit_std`` = 1,
  so max |L| is ~4..7. Large |L| would make the device's rounding of L to float16/bfloat16 (memory-
  saving mode) swamp the small gaps and widen every tolerance (see :mod:`.precision`).
* Inputs are rounded to the input dtype after planting, which moves each logit by ~u·|L| (u the unit
  roundoff: 2⁻¹¹ float16, 2⁻⁸ bfloat16); for bfloat16 that can shift or even close the smallest gaps,
  so "just below the max" is a tendency, not a guarantee. The golden is always computed from the
  stored values, so correctness never depends on the planting.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from mpnpu import UsageError, from_float32, to_float32

from .spec import INPUT_DTYPES, TARGET_DTYPES, check_inputs, target_dtype_of

IntRange = tuple[int, int]


def _check_range(name: str, bounds: IntRange, low_min: int) -> None:
    ok = (
        isinstance(bounds, tuple)
        and len(bounds) == 2
        and all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)
        and low_min <= bounds[0] <= bounds[1]
    )
    if not ok:
        raise UsageError(f"CaseSpace.{name}={bounds!r} must be an integer range (low, high) "
                         f"with {low_min} ≤ low ≤ high")


def _check_choices(name: str, choices: tuple, allowed: tuple) -> None:
    if not isinstance(choices, tuple) or not choices or any(c not in allowed for c in choices):
        raise UsageError(f"CaseSpace.{name}={choices!r} must be a non-empty tuple drawn from {allowed}")


@dataclass(frozen=True)
class CaseSpace:
    """What make_case draws from. Integer ranges are inclusive ``(low, high)``; choices are tuples.

    Defaults are sized for a CPU emulation (BT ≤ 256, H 32..256, V 256..2048, so a case is one to a
    few device tiles of 128×256); change them freely, e.g. ``replace(CaseSpace(), v=(4096, 8192))``.
    ``return_logits`` defaults to (False,): the incident happened in memory-saving mode.
    """

    bt: IntRange = (1, 256)
    h: IntRange = (32, 256)
    v: IntRange = (256, 2048)
    input_dtypes: tuple[str, ...] = INPUT_DTYPES
    target_dtypes: tuple[str, ...] = TARGET_DTYPES
    return_logits: tuple[bool, ...] = (False,)
    n_shards: IntRange = (2, 8)  # global vocab = n_shards·V; the local shard is one of them
    p_outside: float = 0.3  # probability that a row's target is outside the local shard
    p_boundary: float = 0.05  # probability that a row's target sits on a shard boundary
    logit_std: float = 1.0  # std of the unplanted logits
    target_gap: tuple[float, float] = (0.002, 0.3)  # log-uniform max − L[b, t], in units of logit_std

    def __post_init__(self) -> None:
        for name, low_min in (("bt", 0), ("h", 0), ("v", 1), ("n_shards", 1)):
            _check_range(name, getattr(self, name), low_min)
        if self.h[1] > 65534:
            raise UsageError(f"CaseSpace.h up to {self.h[1]} exceeds the op's limit H ≤ 65534")
        _check_choices("input_dtypes", self.input_dtypes, INPUT_DTYPES)
        _check_choices("target_dtypes", self.target_dtypes, TARGET_DTYPES)
        _check_choices("return_logits", self.return_logits, (False, True))
        for name in ("p_outside", "p_boundary"):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise UsageError(f"CaseSpace.{name}={p} is not a probability in [0, 1]")
        if self.p_outside > 0 and self.n_shards[0] < 2:
            raise UsageError("CaseSpace.n_shards must be ≥ 2 when p_outside > 0: one shard has no outside ids")
        if not self.logit_std > 0:
            raise UsageError(f"CaseSpace.logit_std={self.logit_std} must be positive")
        lo, hi = self.target_gap
        if not 0 < lo <= hi:
            raise UsageError(f"CaseSpace.target_gap={self.target_gap} must satisfy 0 < low ≤ high")

    def only(
        self,
        input_dtype: Optional[str] = None,
        target_dtype: Optional[str] = None,
        return_logits: Optional[bool] = None,
    ) -> "CaseSpace":
        """A copy restricted to one input dtype / target dtype / mode (None keeps the current choices)."""
        changes: dict = {}
        if input_dtype is not None:
            changes["input_dtypes"] = (input_dtype,)
        if target_dtype is not None:
            changes["target_dtypes"] = (target_dtype,)
        if return_logits is not None:
            changes["return_logits"] = (bool(return_logits),)
        return replace(self, **changes)


@dataclass(frozen=True, eq=False)
class Case:
    """One generated FLOMS call. Arrays are numpy storage arrays, made read-only.

    eq=False: cases compare by identity; comparing arrays field by field is ambiguous in numpy.
    """

    index: int
    seed: int
    bt: int
    h: int
    v: int
    vocab_start_index: int
    vocab_end_index: int
    input_dtype: str
    target_dtype: str
    return_logits: bool
    input: np.ndarray = field(repr=False)
    weight: np.ndarray = field(repr=False)
    target: np.ndarray = field(repr=False)

    def inputs(self) -> tuple:
        """The arguments golden() takes, in order:
        (input, weight, target, vocab_start_index, vocab_end_index, input_dtype, return_logits)."""
        return (
            self.input,
            self.weight,
            self.target,
            self.vocab_start_index,
            self.vocab_end_index,
            self.input_dtype,
            self.return_logits,
        )

    @property
    def n_in_shard(self) -> int:
        """How many rows have their target inside [vocab_start_index, vocab_end_index)."""
        t = self.target.astype(np.int64)
        return int(np.count_nonzero((t >= self.vocab_start_index) & (t < self.vocab_end_index)))

    def describe(self) -> str:
        """One line naming the case, e.g. ``case 3 (seed 0): BT=97 H=64 V=512 bfloat16/int64 ...``."""
        mode = "return_logits" if self.return_logits else "memory-saving"
        return (
            f"case {self.index} (seed {self.seed}): BT={self.bt} H={self.h} V={self.v} "
            f"{self.input_dtype}/{self.target_dtype} shard [{self.vocab_start_index}, "
            f"{self.vocab_end_index}) {self.n_in_shard}/{self.bt} rows in shard, {mode}"
        )


def make_case(seed: int, index: int, space: CaseSpace = CaseSpace()) -> Case:
    """Case ``index`` of the stream ``seed``: a pure function of (seed, index, space).

    Each index has its own RNG stream (``default_rng([seed, index])``), so case 7 is the same whether
    one case or a thousand are generated, and a failing case can be regenerated alone.
    """
    for name, value in (("seed", seed), ("index", index)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
            raise UsageError(f"{name} must be a non-negative integer, got {value!r}")
    rng = np.random.default_rng([int(seed), int(index)])
    bt, h, v = (_draw_int(rng, r) for r in (space.bt, space.h, space.v))
    input_dtype = space.input_dtypes[rng.integers(len(space.input_dtypes))]
    target_dtype = space.target_dtypes[rng.integers(len(space.target_dtypes))]
    return_logits = bool(space.return_logits[rng.integers(len(space.return_logits))])
    n_shards = _draw_int(rng, space.n_shards)
    start = int(rng.integers(n_shards)) * v
    end = start + v

    target = _draw_targets(rng, bt, start, end, n_shards * v, space)
    weight = from_float32(rng.standard_normal((v, h)) / np.sqrt(max(h, 1)), input_dtype)
    # Plant against the stored weight, so only the input's rounding perturbs the planted gaps.
    x = rng.standard_normal((bt, h)) * space.logit_std
    in_shard = (target >= start) & (target < end)
    _plant_targets(rng, x, to_float32(weight, input_dtype).astype(np.float64), target - start, in_shard, space)
    inputs = from_float32(x, input_dtype)
    target = target.astype(target_dtype_of(target_dtype).storage)

    for array in (inputs, weight, target):
        array.setflags(write=False)  # a Case is frozen; kernels must copy inputs into GM, not alias them
    check_inputs(inputs, weight, target, start, end, input_dtype, target_dtype)
    return Case(
        index=int(index),
        seed=int(seed),
        bt=bt,
        h=h,
        v=v,
        vocab_start_index=start,
        vocab_end_index=end,
        input_dtype=input_dtype,
        target_dtype=target_dtype,
        return_logits=return_logits,
        input=inputs,
        weight=weight,
        target=target,
    )


def generate_cases(seed: int, n: int, space: CaseSpace = CaseSpace()) -> list[Case]:
    """Cases 0..n-1 of stream ``seed``. Each holds its arrays (~0.3 MB on average with the defaults);
    for very long batches call make_case per index instead of holding them all."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise UsageError(f"n must be a non-negative integer, got {n!r}")
    return [make_case(seed, i, space) for i in range(int(n))]


def _draw_int(rng: np.random.Generator, bounds: IntRange) -> int:
    return int(rng.integers(bounds[0], bounds[1], endpoint=True))


def _draw_targets(
    rng: np.random.Generator, bt: int, start: int, end: int, vocab: int, space: CaseSpace
) -> np.ndarray:
    """Global target ids (int64): a p_outside share outside [start, end), some on the boundaries."""
    v = end - start
    n_out = int(rng.binomial(bt, space.p_outside))
    if bt >= 2 and 0 < space.p_outside < 1:
        n_out = min(max(n_out, 1), bt - 1)  # both kinds in every case that can hold both
    outside = np.zeros(bt, dtype=bool)
    outside[rng.choice(bt, size=n_out, replace=False)] = True

    target = start + rng.integers(0, v, size=bt)
    # Uniform over the other shards' ids: draw from a vocab without our shard, then skip over it.
    other = rng.integers(0, max(vocab - v, 1), size=bt)
    target = np.where(outside, np.where(other < start, other, other + v), target)

    boundary = rng.random(bt) < space.p_boundary
    inside_edges = np.array([start, end - 1])
    outside_edges = np.array([end, start - 1]) if start > 0 else np.array([end])
    target = np.where(boundary & ~outside, rng.choice(inside_edges, size=bt), target)
    target = np.where(boundary & outside, rng.choice(outside_edges, size=bt), target)
    return target.astype(np.int64)


def _plant_targets(
    rng: np.random.Generator,
    x: np.ndarray,
    w: np.ndarray,
    cols: np.ndarray,
    in_shard: np.ndarray,
    space: CaseSpace,
) -> None:
    """Move each in-shard row of ``x`` (in place) along its target's weight row so that the target
    logit sits ``gap`` below the row's best other logit.

    With u = w_t/|w_t| and x' = x + c·u, every logit is linear in c: L_j(c) = L_j + c·g_j, g = W·u,
    and g_t = |w_t| > g_j for j ≠ t (unless w_j is longer than w_t and nearly parallel to it). So
    L_t(c) − L_j(c) grows with c for every j, and the target is no more than ``gap`` below column j
    iff c ≥ (L_j − L_t − gap)/(g_t − g_j). The smallest c meeting all of them (the max over j) leaves
    the nearest competitor exactly ``gap`` above the target.
    """
    rows = np.flatnonzero(in_shard)
    if rows.size == 0 or x.shape[1] == 0 or w.shape[0] < 2:
        return  # nothing to plant, or no other column to sit below
    t = cols[rows]
    unit = w[t] / np.linalg.norm(w[t], axis=1, keepdims=True)
    lg = x[rows] @ w.T
    slope_all = unit @ w.T
    r = np.arange(rows.size)
    lo, hi = space.target_gap
    gap = space.logit_std * np.exp(rng.uniform(np.log(lo), np.log(hi), size=rows.size))
    slope = slope_all[r, t][:, None] - slope_all
    # Columns whose slope is not positive (the target itself; near-parallel longer rows) give no
    # lower bound on c; ignoring them keeps the plant well defined, at worst leaving that row's gap off.
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(slope > 1e-9, (lg - lg[r, t][:, None] - gap[:, None]) / slope, -np.inf)
    c = need.max(axis=1)
    c = np.where(np.isfinite(c), c, 0.0)
    # A competitor nearly parallel to w_t rises almost as fast as the target and would demand a huge
    # c and so a huge |L| (seen with H = 32). Cap c at twice what the target would need if the other
    # logits stood still; such rows keep a somewhat larger gap instead.
    others = np.where(np.arange(w.shape[0]) == t[:, None], -np.inf, lg)
    naive = (others.max(axis=1) - lg[r, t] + gap) / slope_all[r, t]
    c = np.minimum(c, 2.0 * np.maximum(naive, 0.0))
    x[rows] += c[:, None] * unit
