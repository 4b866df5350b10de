"""The harness: running operators, as a library (no printing, no argparse; results are data).

- :mod:`.runner` — batches: cases x repeats through variants, one :class:`~.runner.VariantResult`
  per variant (``merge()`` combines rounds and configurations);
- :mod:`.stats` — rates and their intervals;
- :mod:`.chain` — running an operator's diagnosis chain (``mpnpu investigate``);
- :mod:`.soak` — soaks of the fixed kernel; :mod:`.handshakes` — the watchdog's soak;
- :mod:`.stress` — the stress engine (placement, chaos, load; the sweep plan and its loop);
- :mod:`.timeline` — launch timelines.

What an operator is lives in :mod:`mpnpu.operators`; directed runs and the audit in
:mod:`mpnpu.directed`; shards, slots and Ray in :mod:`mpnpu.scale`; reports in :mod:`mpnpu.report`.
"""
