"""mpnpu: an NPU whose cube and vector cores are real OS processes, for reproducing, diagnosing and
stress-testing inter-core races in accelerator kernels.

The public names, importable from here (``from mpnpu import Device``) and stable across releases
(the modules that define them may move; import these names from ``mpnpu``):

- the device: :class:`Device` (``launch(kernel, *args, **kwargs)`` runs a kernel on every core;
  ``launch_with(LaunchOptions(...), kernel, *args, **kwargs)`` traces it, drops sync points, holds
  a core, inserts syncs), :class:`LaunchOptions`, :class:`LaunchResult`, :class:`GlobalTensor`,
  :class:`RuntimeOptions` (timeouts, GM poison, pipes), :class:`DeviceSpec`, :class:`HoldPlan`,
  :data:`DEFAULT_BLOCK_DIM`;
- data types: :class:`DType`, :func:`get_dtype`, ``bfloat16`` / ``float16`` / ``float32``,
  :func:`to_float32`, :func:`from_float32`, :func:`round_to`;
- operators under test (what every tool takes): :class:`Operator` (the protocol),
  :class:`KernelOperator` and :class:`Case` (:class:`PerCore`: a workspace sized by the launch),
  :class:`OperatorOption`, :class:`Verdict`,
  :func:`verdict_of`, :func:`fingerprint`, :func:`variants_from_syncs`, :func:`check_sync_names`,
  :func:`parse_sync_names`, :func:`load_operator`, the precision rule (:class:`Tolerance`,
  :func:`compare_outputs`, :class:`CaseComparison`, :func:`default_tolerance`) and diagnosis
  chains (:class:`Diagnosis`, :class:`Step`, :class:`Shapes`, :class:`StepResult`);
- every error (:class:`MpnpuError` and its subclasses, see :mod:`mpnpu.errors`) and
  :class:`ExitCode`.

Elsewhere: :mod:`mpnpu.api` is the kernel-facing API (``from mpnpu import api as ac``);
:mod:`mpnpu.testing` the pytest plugin's helpers; the ``mpnpu`` command (``python -m mpnpu``) runs
the tools. docs/where-things-live.md maps the rest of the tree.

The names are imported on first use: pytest loads the plugin module ``mpnpu.testing.plugin``
(and so this package) in every test run of an environment where mpnpu is installed, and that must
not cost a numpy import for test suites that never use mpnpu.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

if TYPE_CHECKING:
    from .errors import *  # noqa: F403
    from .operators.compare import CaseComparison, Tolerance, compare_outputs
    from .operators.diagnosis import Diagnosis, Shapes, Step, StepResult
    from .operators.helpers import check_sync_names, fingerprint, parse_sync_names, variants_from_syncs, verdict_of
    from .operators.kernel import Case, KernelOperator, PerCore, default_tolerance
    from .operators.protocol import Operator, OperatorOption, Verdict
    from .operators.registry import load_operator
    from .runtime.config import DEFAULT_BLOCK_DIM, DeviceSpec, LaunchOptions, RuntimeOptions
    from .runtime.device import Device, LaunchResult
    from .runtime.dtypes import DType, bfloat16, float16, float32, from_float32, get_dtype, round_to, to_float32
    from .runtime.gm import GlobalTensor
    from .runtime.hold import HoldPlan

__version__ = "0.1.0"

_ERRORS = (
    "MpnpuError", "UsageError", "DeviceConfigError", "InvalidArgumentError", "InvalidTypeError", "DTypeError",
    "NotFoundError", "UnknownNameError", "KernelAPIError", "CapacityError", "FlagOverflowError", "GMAccessError",
    "SyncTimeoutError", "LaunchError", "KernelError", "CoreDiedError", "SyncAllNotReachedError", "DeadlockError",
    "LaunchTimeoutError", "DeviceClosedError", "GMOutOfMemoryError", "RemoteTraceback", "WireError",
    "PipeClosedError", "TraceError", "ProcessGoneError", "MemcheckError", "BaselineError", "ExitCode",
)

#: public name -> the module that defines it (one table: __all__ is its keys)
_LAZY = {
    "Device": "mpnpu.runtime.device",
    "LaunchResult": "mpnpu.runtime.device",
    "LaunchOptions": "mpnpu.runtime.config",
    "RuntimeOptions": "mpnpu.runtime.config",
    "DeviceSpec": "mpnpu.runtime.config",
    "DEFAULT_BLOCK_DIM": "mpnpu.runtime.config",
    "GlobalTensor": "mpnpu.runtime.gm",
    "HoldPlan": "mpnpu.runtime.hold",
    **{name: "mpnpu.runtime.dtypes" for name in ("DType", "get_dtype", "bfloat16", "float16", "float32",
                                                  "to_float32", "from_float32", "round_to")},
    **{name: "mpnpu.operators.protocol" for name in ("Operator", "OperatorOption", "Verdict")},
    **{name: "mpnpu.operators.helpers" for name in ("verdict_of", "fingerprint", "variants_from_syncs",
                                                    "check_sync_names", "parse_sync_names")},
    **{name: "mpnpu.operators.kernel" for name in ("KernelOperator", "Case", "PerCore", "default_tolerance")},
    **{name: "mpnpu.operators.compare" for name in ("Tolerance", "compare_outputs", "CaseComparison")},
    **{name: "mpnpu.operators.diagnosis" for name in ("Diagnosis", "Step", "Shapes", "StepResult")},
    "load_operator": "mpnpu.operators.registry",
    **{name: "mpnpu.errors" for name in _ERRORS},
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
