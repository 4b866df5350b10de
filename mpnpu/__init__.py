"""mpnpu: an NPU whose cube and vector cores are real OS processes, for reproducing, diagnosing and
stress-testing inter-core races in accelerator kernels.

Public entry points:

- :class:`mpnpu.runtime.device.Device` — the device: a persistent pool of core processes and shared GM;
  ``launch(kernel, *args)`` runs a kernel on every core.
- :mod:`mpnpu.api` — the kernel-facing API (Ascend C names in snake_case).
- :mod:`mpnpu.errors` — every error mpnpu raises.
- :mod:`mpnpu.harness.runner` — batch runs of an operator's cases through kernel variants.
- :mod:`mpnpu.racecheck` — happens-before race detection on launch traces.
- Command lines: ``python -m mpnpu.batch``, ``python -m mpnpu.investigate``, ``python -m mpnpu.stress``.
"""

from .errors import MpnpuError
from .runtime.device import Device, LaunchResult
from .runtime.gm import GlobalTensor

__all__ = ["Device", "GlobalTensor", "LaunchResult", "MpnpuError"]
__version__ = "0.1.0"
