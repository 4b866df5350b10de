"""mpnpu: an NPU whose cube and vector cores are real OS processes, for reproducing, diagnosing and
stress-testing inter-core races in accelerator kernels.

Public entry points:

- :class:`mpnpu.runtime.device.Device` — the device: a persistent pool of core processes and shared GM;
  ``launch(kernel, *args)`` runs a kernel on every core.
- :mod:`mpnpu.api` — the kernel-facing API (Ascend C names in snake_case).
- :mod:`mpnpu.errors` — every error mpnpu raises.
- :mod:`mpnpu.harness.runner` — batch runs of an operator's cases through kernel variants.
- :mod:`mpnpu.racecheck` — happens-before race detection on launch traces.
- :mod:`mpnpu.testing` — the pytest plugin (``mpnpu_device`` fixture, ``assert_no_races``, ...).
- Command lines: ``python -m mpnpu.batch``, ``python -m mpnpu.investigate``, ``python -m mpnpu.stress``.

The names below are imported on first use: pytest loads the plugin module ``mpnpu.testing.plugin``
(and so this package) in every test run of an environment where mpnpu is installed, and that must
not cost a numpy import for test suites that never use mpnpu.
"""

from __future__ import annotations

from ._lazy import lazy_attributes

__all__ = ["Device", "GlobalTensor", "LaunchResult", "MpnpuError"]
__version__ = "0.1.0"

_LAZY = {
    "Device": "mpnpu.runtime.device",
    "LaunchResult": "mpnpu.runtime.device",
    "GlobalTensor": "mpnpu.runtime.gm",
    "MpnpuError": "mpnpu.errors",
}

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
