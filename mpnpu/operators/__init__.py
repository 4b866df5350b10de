"""Operators under test: what every tool runs, and how it finds one.

- :mod:`.protocol` — the :class:`~.protocol.Operator` protocol, :class:`~.protocol.OperatorOption`,
  :class:`~.protocol.Verdict`;
- :mod:`.helpers` — sync-point names, the variant table, fingerprints, verdicts from comparisons;
- :mod:`.kernel` — :class:`~.kernel.KernelOperator`: an operator from a kernel, a golden, a case
  maker and a sync-point table;
- :mod:`.registry` — finding operators by name (``--op``, entry-point group ``mpnpu.operators``);
  used by the command line and the pytest helpers only: the library is handed operator objects;
- :mod:`.compare` — the precision rule (docs/precision.md);
- :mod:`.diagnosis` — diagnosis chains as data (:class:`~.diagnosis.Diagnosis`, ``Step``, ...).

The names an operator package needs are importable from :mod:`mpnpu` itself.
"""
