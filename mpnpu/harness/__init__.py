"""The harness: what the tools do with an operator, as a library (no printing, no argparse).

- :mod:`.operator` — the operator protocol and the helpers every operator can use;
  :mod:`.kernel_operator` — an operator from a kernel, a golden, a case maker and a sync-point table;
  :mod:`.registry` — finding operators by name (``--op``, entry-point group ``mpnpu.operators``).
- :mod:`.runner` — batches: cases x repeats through variants, one :class:`~.runner.VariantResult`
  per variant (``merge()`` combines rounds and configurations).
- :mod:`.chain` — diagnosis chains as data, and running one (``python -m mpnpu.investigate``).
- :mod:`.compare` — the precision rule (docs/precision.md); :mod:`.stats` — rates and intervals.
- :mod:`.stress` — the stress engine (placement, chaos, load, sweeps); :mod:`.timeline` — launch
  timelines.
"""
