"""Tolerances for FLOMS outputs: the precision rule plus what the device's numerics legitimately add.

The rule and the derivation below are explained in docs/precision.md.

Base rule: rtol 1e-3 for float16/bfloat16 inputs, atol 1e-5; target_mask and
masked_target must be binary equal.

Storage-rounding allowance (memory-saving mode, return_logits False). The cube accumulates L in
float32 but hands the vector cores each tile stored in the input dtype, so the vector cores see
L̃_j = L_j(1 + ε_j) with |ε_j| ≤ u (u = unit roundoff: 2⁻¹¹ float16, 2⁻⁸ bfloat16), while the golden
uses L itself. With M = max |L| over the case, every |L̃_j − L_j| ≤ u·M, and:

* logits_max: |max_j L̃_j − max_j L_j| ≤ max_j |L̃_j − L_j| ≤ u·M.  → atol += u·M
* predicted_logits: (L̃_t − max L̃) − (L_t − max L) differs by at most u·M + u·M.  → atol += r, r = 2u·M
* sum_exp_logits: each exponent L̃_j − max L̃ moves by at most r from L_j − max L, so
  S̃ ∈ [S·e^(−r), S·e^r] and |S̃ − S| ≤ (e^r − 1)·S ≤ r(1 + r)·S (e^r − 1 ≤ r + r² for r ≤ 1.79).
  → rtol += r(1 + r)

The brief proposed r for logits_max too; u·M is the proven bound and is tighter, so it is used. In
return_logits mode the vector cores read the float32 tile, so those three outputs get no allowance.

vocab_parallel_logits is L stored in the input dtype on both sides; the device rounds its float32
accumulator and the golden its float64 L, and when the two straddle a rounding boundary they land
one ulp apart, which is up to 2u relative. rtol = max(1e-3, 2u) is exactly CANN's mixed-tolerance
rtol (2⁻¹⁰ float16, 2⁻⁷ bfloat16); with u alone every such straddle would fail for bfloat16.

The allowances are sufficient by the bounds above; tests/test_cases.py checks empirically that they
are also tight enough that one wrong gathered logit still fails predicted_logits.
"""

from __future__ import annotations

from typing import Any, Mapping, Union

from mpnpu import Tolerance, UsageError

from .golden import logits_abs_max
from .spec import OUTPUT_NAMES, input_dtype_of

BASE_RTOL = 1e-3  # the precision rule for float16/bfloat16 inputs
BASE_ATOL = 1e-5  # float32 accumulation-order differences on |L| ≲ 10, with margin


def storage_rounding_allowance(input_dtype: str, abs_max: float) -> float:
    """r = 2u·M: the bound on how far storing L in ``input_dtype`` can move any L_j − L_k."""
    return 2.0 * input_dtype_of(input_dtype).unit_roundoff * float(abs_max)


def tolerances(case_or_params: Union[Any, Mapping[str, Any]]) -> dict[str, Tolerance]:
    """Tolerance for every output of one case, keyed by spec.OUTPUT_NAMES.

    Accepts a cases.Case (anything with input_dtype, return_logits, input, weight) or a mapping with
    ``input_dtype``, ``return_logits`` and either ``logits_abs_max`` or ``input`` and ``weight``.
    """
    input_dtype, return_logits, abs_max = _params(case_or_params)
    dt = input_dtype_of(input_dtype)
    u = dt.unit_roundoff
    exact = Tolerance(rtol=0.0, atol=0.0, exact=True)
    tol = {
        "logits_max": Tolerance(BASE_RTOL, BASE_ATOL),
        "sum_exp_logits": Tolerance(BASE_RTOL, BASE_ATOL),
        "predicted_logits": Tolerance(BASE_RTOL, BASE_ATOL),
        "target_mask": exact,
        "masked_target": exact,
        "vocab_parallel_logits": Tolerance(max(BASE_RTOL, 2.0 * u), BASE_ATOL, storage_dtype=dt.name),
    }
    if not return_logits:
        r = storage_rounding_allowance(dt.name, abs_max)
        tol["logits_max"] = Tolerance(BASE_RTOL, BASE_ATOL + u * abs_max)
        tol["predicted_logits"] = Tolerance(BASE_RTOL, BASE_ATOL + r)
        tol["sum_exp_logits"] = Tolerance(BASE_RTOL + r * (1.0 + r), BASE_ATOL)
    return {name: tol[name] for name in OUTPUT_NAMES}


def _params(source: Union[Any, Mapping[str, Any]]) -> tuple[str, bool, float]:
    if isinstance(source, Mapping):
        get, has = source.__getitem__, source.__contains__
    else:
        get, has = (lambda key: getattr(source, key)), (lambda key: hasattr(source, key))
    try:
        input_dtype, return_logits = get("input_dtype"), bool(get("return_logits"))
        if has("logits_abs_max"):
            return input_dtype, return_logits, float(get("logits_abs_max"))
        return input_dtype, return_logits, logits_abs_max(get("input"), get("weight"), input_dtype)
    except (KeyError, AttributeError) as err:
        raise UsageError(
            f"tolerances() needs input_dtype, return_logits and logits_abs_max (or input and weight); missing {err}"
        ) from None
