"""The public FLOMS kernel, compiled from a user's checkout of the open operator repository: the
operator ``floms-public`` every tool takes.

Nothing of that kernel is in mpnpu. Point ``MPNPU_OPS_NN`` at the checkout (the repository, or its
``matmul/fused_linear_online_max_sum`` folder) and the operator compiles its
``op_kernel/fused_linear_online_max_sum.cpp`` as it is, against mpnpu's headers, with the tiling
struct of the repository's own CPU-debug unit test (``tests/ut/op_kernel/..._tiling_def.h``)
included first and the ``-D`` flags that test builds with (``DTYPE_INPUT``, ``DTYPE_TARGET``).

- **Cases, golden, precision rule and judging** are FLOMS's (:class:`.operator.FlomsOperator`) on a
  case space the public kernel's tiling takes (see :data:`PUBLIC_SPACE`); case 0 of every seed is
  the unit test's own shape (BT=128, H=64, V=256, local vocabulary [0, 128)) with data of ours.
- **Sync points** are the public kernel's sync call sites, ``FILE:LINE`` (its stage classes live in
  ``op_kernel/*.h``); the **incident** drops the ``SyncAll`` that precedes ``CVProcess()``, found
  by where it stands, not by a line number.
- **The tiling struct** is filled by the rules the public tiling follows (:func:`fill_tiling`).

The operator loads without the checkout (``--list-ops`` shows it with no sync points); making a case
without it is one usage error that says what to set.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpnpu import settings
from mpnpu.ascendc.matmul_tiling import matmul_tiling
from mpnpu.ascendc.operator import AscendCOperator, first_after
from mpnpu.ascendc.operator import Tiling as CxxTiling
from mpnpu.errors import UsageError
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.device import Device, LaunchResult
from mpnpu.runtime.topology import KernelType

from . import golden as golden_mod
from .cases import Case, CaseSpace, make_case
from .operator import FlomsOperator, Prepared
from .operator_cxx import cached_tiling
from .precision import tolerances
from .spec import OUTPUT_NAMES

#: where the checkout is (mpnpu.settings.OPS_NN)
ENV = settings.OPS_NN.env
OP = "fused_linear_online_max_sum"
KERNEL_SOURCE = f"op_kernel/{OP}.cpp"
KERNEL_HEADER = f"op_kernel/{OP}.h"
TILING_HEADER = f"tests/ut/op_kernel/{OP}_tiling_def.h"
TILING_STRUCT = "FusedLinearOnlineMaxSumTilingData"

# The public kernel's fixed geometry and the device budget its tiling uses.
BASE_M, BASE_N, BASE_K = 128, 256, 64
UB_BUF_BYTES = 188160  # the unit test's bufSize: the vector cores' UB less what the kernel keeps back
SYS_WORKSPACE_BYTES = 16 * 1024 * 1024
MAX_REPEAT_BYTES = 255 * 256  # one vector instruction's reach: 255 repeats of 256 bytes
C_TYPES = {"float16": "half", "bfloat16": "bfloat16_t", "int32": "int32_t", "int64": "int64_t"}

#: Cases of at most one 128-row band and two 256-column tiles: on the default two AI cores each
#: vector core then handles one logits tile. Between two tiles of one vector core the public kernel
#: orders its own pipes only through the cross-core flags, which mpnpu's asynchronous pipes do not
#: treat as a barrier of the vector core's pipes (docs/public-kernels.md), so larger cases belong to
#: ``--pipes sync`` runs.
PUBLIC_SPACE = CaseSpace(bt=(8, 128), h=(16, 128), v=(128, 256))


def operator_dir(path: str) -> str:
    """The operator folder inside ``path`` (the repository or the folder itself)."""
    for cand in (path, os.path.join(path, "matmul", OP)):
        if os.path.isfile(os.path.join(cand, KERNEL_SOURCE)) and os.path.isfile(os.path.join(cand, TILING_HEADER)):
            return os.path.abspath(cand)
    raise UsageError(f"{ENV}={path}: neither it nor its matmul/{OP} holds {KERNEL_SOURCE} and {TILING_HEADER}")


def checkout() -> str:
    """The operator folder of the checkout ``MPNPU_OPS_NN`` names; a UsageError when it is unset."""
    path = settings.from_env(settings.OPS_NN) or ""
    if not path:
        raise UsageError(f"operator floms-public compiles the public FLOMS kernel from a checkout of the open "
                         f"operator repository: set {ENV}=PATH to it (see docs/public-kernels.md)")
    return operator_dir(path)


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def tasks_of(case: Case) -> int:
    """Logits tiles of ``case`` (128 x 256 each): the public kernel's cube tasks."""
    return -(-case.bt // BASE_M) * -(-case.v // BASE_N)


@dataclass(frozen=True)
class Plan:
    """How one case is launched: tiling key, the tiling struct's values, user workspace bytes."""

    tiling_key: int
    fields: dict[str, Any]
    user_workspace: int


def fill_tiling(case: Case, block_dim: int) -> Plan:
    """The tiling struct for ``case`` on ``block_dim`` AI cores by the rules the public kernel's
    tiling follows (and that the unit test's hand-written values satisfy for 128x64x256 on one AI
    core):

    - every AI core of the launch takes part, two vector cores each; the cube tasks are the
      128x256 logits tiles;
    - the rows' target work in tasks of 8 rows (one mask byte), dealt evenly over the vector cores,
      the first ``tail`` cores one more;
    - a target loop covers what a third of the vector buffer holds, within one instruction's reach;
    - the workspace initialisation in chunks of half the buffer's floats, at most half the rows
      (rounded up to 8);
    - the matmul: singleCore = base = 128x256, K whole with baseK 64, the full problem M x N x H;
    - tiling key 1 when the logits are returned, 0 (memory-saving, the incident's mode) otherwise.
    """
    bt, h, v = case.bt, case.h, case.v
    cube = block_dim
    vec = 2 * cube
    target_bytes = np.dtype(case.target_dtype).itemsize
    batch_tasks = -(-bt // 8)
    per_loop_bytes = min((UB_BUF_BYTES // 3) // 256 * 256, MAX_REPEAT_BYTES)
    init_len = min((UB_BUF_BYTES // 4 // 2) // 8 * 8, _align((bt + 1) // 2, 8))
    mm = matmul_tiling(BASE_M, BASE_N, h, in_dtype="float16", out_dtype="float16", base_m=BASE_M, base_n=BASE_N,
                       base_k=min(BASE_K, _align(h, 16)))
    mm.update(M=bt, N=v, Ka=h, Kb=h, usedCoreNum=cube, shareL1Size=327680, shareL0CSize=131072, batchM=1,
              batchN=1, singleBatchM=1, singleBatchN=1)
    fields: dict[str, Any] = {
        "m": bt, "k": h, "n": v, "bufSize": UB_BUF_BYTES, "cubeCoreNum": cube, "vecCoreNum": vec,
        "batchTaksPerVecCore": batch_tasks // vec, "batchTaksTailVecCore": batch_tasks % vec,
        "targetTasksPerLoop": per_loop_bytes // target_bytes // 8,
        "vocabStartIndex": float(case.vocab_start_index), "vocabEndIndex": float(case.vocab_end_index),
        "initWorkspaceLength": init_len, "cubeCoreNumAligned": _align(cube, 8),
        "matmulInputEmptyFlag": 0 if h > 0 else 1,
        **{f"mmTiling.{k}": val for k, val in mm.items()},
    }
    user = bt * 4 * cube * 2 + (0 if case.return_logits else BASE_M * BASE_N * 2 * cube * 2)
    return Plan(1 if case.return_logits else 0, fields, user)


def unit_test_case(seed: int, index: int, space: CaseSpace) -> Case:
    """The unit test's shape and shard (BT=128, H=64, V=256, vocabulary [0, 128) of a 256-wide
    weight) with our data; targets drawn from [0, 256), so about half fall outside the shard."""
    ut = CaseSpace(bt=(128, 128), h=(64, 64), v=(256, 256), input_dtypes=space.input_dtypes,
                   target_dtypes=("int32",), n_shards=(2, 2), return_logits=space.return_logits)
    c = make_case(seed, index, ut)
    rng = np.random.default_rng([seed, index, 1])
    target = rng.integers(0, 256, c.bt).astype(np.int32)
    target[:4] = (0, 127, 128, 255)  # the shard's boundaries
    return dataclasses.replace(c, vocab_start_index=0, vocab_end_index=128, target=target)


@functools.lru_cache(maxsize=4)
def public_kernel(op_dir: str) -> AscendCOperator:
    """The public kernel of the checkout at ``op_dir`` as an Ascend C operator (its sources, sync
    points and incident; cases and judging stay FLOMS's)."""
    return AscendCOperator(
        name="floms-public",
        sources=(KERNEL_SOURCE,),
        entry=OP,
        make=lambda seed, index: None,
        golden=lambda case: golden_mod.golden(*case.inputs()),
        incident=first_after(KERNEL_HEADER, r"^\s*TargetProcess\(\)\s*;", "SyncAll"),
        defines=lambda case: {"DTYPE_INPUT": C_TYPES[case.input_dtype], "DTYPE_TARGET": C_TYPES[case.target_dtype]},
        tiling=CxxTiling(TILING_HEADER, TILING_STRUCT, fill=_no_fill),
        kernel_type=KernelType.MIX_1_2,
        tiling_key=lambda case: 1 if case.return_logits else 0,
        stages=("TargetProcess", "CVProcess"),
        root=op_dir,
    )


def _no_fill(case: Any) -> Mapping[str, Any]:
    raise UsageError("floms-public packs its tiling itself (it needs the device's block_dim)")


def _configured() -> AscendCOperator | None:
    try:
        return public_kernel(checkout())
    except UsageError:
        return None


def _syncs() -> Mapping[str, str]:
    k = _configured()
    return k.sync_points if k is not None else {}


def _variants() -> Mapping[str, frozenset[str]]:
    k = _configured()
    return k.variants if k is not None else {"incident": frozenset(), "fixed": frozenset()}


def _description() -> str:
    where = settings.from_env(settings.OPS_NN) or ""
    return (f"the public FLOMS kernel, compiled from {where}" if where and _configured() is not None else
            f"the public FLOMS kernel from a checkout of the open operator repository: set {ENV}=PATH")


@dataclass
class FlomsPublicOperator(FlomsOperator):
    """FLOMS with the public kernel from ``MPNPU_OPS_NN``; cases, golden and judging are FLOMS's."""

    name: str = "floms-public"
    description: str = field(default_factory=_description)
    space: CaseSpace = field(default_factory=lambda: PUBLIC_SPACE)
    sync_points: Mapping[str, str] = field(default_factory=_syncs)
    variants: Mapping[str, frozenset[str]] = field(default_factory=_variants)
    probes: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    options: tuple = ()
    diagnosis: Any = None
    _tilings: OrderedDict[tuple[Any, ...], tuple[np.ndarray, int]] = field(default_factory=OrderedDict, repr=False,
                                                                           compare=False)

    @property
    def device_kernel_type(self) -> KernelType:
        """A mix 1:2 kernel: one cube and two vector cores per AI core."""
        return KernelType.MIX_1_2

    def unavailable(self) -> str:
        """Why this operator cannot run here: no checkout named ("" when it can)."""
        try:
            checkout()
        except UsageError as e:
            return str(e)
        return ""

    def _kernel(self) -> AscendCOperator:
        return public_kernel(checkout())

    def _tiling_of(self, public: AscendCOperator, case: Case, block_dim: int) -> tuple[np.ndarray, int]:
        """The packed tiling struct of ``case`` on ``block_dim`` AI cores and its user workspace
        bytes, made once per case shape and device (a batch runs every case many times)."""
        key = (public.root, case.bt, case.h, case.v, case.vocab_start_index, case.vocab_end_index,
               case.target_dtype, case.return_logits, block_dim)

        def make() -> tuple[np.ndarray, int]:
            plan = fill_tiling(case, block_dim)
            layout = public.tiling_layout()
            assert layout is not None
            return layout.pack(plan.fields), plan.user_workspace

        return cached_tiling(self._tilings, key, make)

    def resolve_sync_names(self, names: Any) -> frozenset[str]:
        """Sync points as a user names them (FILE:LINE, the file by any path suffix)."""
        return self._kernel().resolve_sync_names(names)

    def make_case(self, seed: int, index: int) -> Case:
        checkout()  # no case without the kernel to run it: say what to set before anything runs
        return unit_test_case(seed, index, self.space) if index == 0 else make_case(seed, index, self.space)

    def prepare(self, case: Case) -> Prepared:
        tol = tolerances(case)
        if case.return_logits:
            # this kernel's vector cores read the logits back from the output, stored in the input
            # dtype, in both modes: the storage-rounding allowance of memory-saving mode applies
            saving = tolerances(dataclasses.replace(case, return_logits=False))
            tol = {**tol, **{k: saving[k] for k in ("logits_max", "sum_exp_logits", "predicted_logits")}}
        return Prepared(self.golden(case), tol)

    def run(self, device: Device, case: Case, *, drop_syncs: frozenset[str] = frozenset(), probe: str = "",
            trace: bool = False) -> tuple[dict[str, Any], LaunchResult]:
        if probe:
            raise UsageError("operator floms-public has no probes (the public kernel is run as it is)")
        public = self._kernel()
        dropped = public.resolve_sync_names(drop_syncs)
        kernel = public.kernel_for(case)
        kernel = kernel.with_launch(sys_workspace_bytes=SYS_WORKSPACE_BYTES)
        packed, user_workspace = self._tiling_of(public, case, device.block_dim)
        bt, v, in_dt, tgt_dt = case.bt, case.v, case.input_dtype, case.target_dtype
        logits = bt * v if case.return_logits else 16  # memory-saving mode: a placeholder the kernel never writes
        with device.scope() as gm:
            args = [gm.to_device("input", case.input, in_dt), gm.to_device("weight", case.weight, in_dt),
                    gm.to_device("target", case.target, tgt_dt)]
            outs = [gm.empty("logits_max", bt, "float32"), gm.empty("sum_exp_logits", bt, "float32"),
                    gm.empty("predicted_logits", bt, "float32"), gm.empty("target_mask", (bt + 7) // 8, "uint8"),
                    gm.empty("masked_target", bt, tgt_dt), gm.empty("vocab_parallel_logits", logits, in_dt)]
            args += [*outs, gm.empty("workspace", SYS_WORKSPACE_BYTES + user_workspace, "uint8"),
                     gm.to_device("tiling", packed, "uint8")]
            launch = device.launch_with(LaunchOptions(drop_syncs=tuple(sorted(dropped)), trace=trace), kernel, *args)
            outputs = {name: device.to_host(out) for name, out in zip(OUTPUT_NAMES, outs)}
        outputs["vocab_parallel_logits"] = (outputs["vocab_parallel_logits"].reshape(bt, v) if case.return_logits
                                            else outputs["vocab_parallel_logits"][:0])
        return outputs, launch


def sync_before_cvprocess(op_dir: str) -> str:
    """FILE:LINE of the SyncAll the incident drops (the one before ``CVProcess()``)."""
    (name,) = public_kernel(op_dir).variants["incident"]
    return name


OPERATOR_PUBLIC = FlomsPublicOperator()
