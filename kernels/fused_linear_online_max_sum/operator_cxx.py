"""FLOMS as an Ascend C kernel (``ascendc/floms.cpp``): the operator ``floms-cxx`` every tool takes.

The same operator as :data:`.operator.OPERATOR` — the same seeded cases, golden, precision rule,
judging, probes and diagnosis chain — with the kernel written in Ascend C and run by mpnpu's C++
front end. What differs is only what a C++ kernel has instead of named sync points:

- **Sync points** are the kernel's sync call sites, ``ascendc/floms.cpp:LINE`` (every SyncAll,
  cross-core flag and SetFlag/WaitFlag), read from the source (:mod:`mpnpu.ascendc.build.syncpoints`).
- **The incident** drops the SyncAll after the ``TargetProcess()`` call (S1), found by where it
  stands (:func:`mpnpu.ascendc.operator.first_after`), not by a line number or a copy of the source.
- **Probes** are ``-D`` switches of the kernel (``FLOMS_PROBE_*``): each one builds (once, cached)
  the kernel with the instrumentation the write-up's engineer added for that step.
- **Input and target dtypes** are ``-D`` defines too (``DTYPE_INPUT=half|bfloat16_t``,
  ``DTYPE_TARGET=int32_t|int64_t``), chosen per case.

The tiling struct (``ascendc/floms_tiling.h``) is filled from the Python kernel's rules
(:func:`.tiling.make_tiling`) plus the cube core's TCubeTiling
(:func:`mpnpu.ascendc.matmul_tiling.matmul_tiling`), packed once per case and device shape and
cached, as is each compiled library.
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from mpnpu.ascendc.matmul_tiling import L0A_BYTES, as_fields, matmul_tiling
from mpnpu.ascendc.operator import AscendCOperator, first_after
from mpnpu.ascendc.operator import Tiling as CxxTiling
from mpnpu.errors import UsageError
from mpnpu.runtime.config import LaunchOptions
from mpnpu.runtime.device import Device, LaunchResult
from mpnpu.runtime.topology import KernelType

from . import golden as golden_mod
from .cases import Case
from .operator import FlomsOperator, sentinel_value
from .probes import PROBES, check_probe
from .spec import OUTPUT_NAMES, output_specs
from .tiling import Tiling, make_tiling

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "ascendc/floms.cpp"
TILING_HEADER = "ascendc/floms_tiling.h"
ENTRY = "fused_linear_online_max_sum"

#: case dtype -> the kernel's -D value
INPUT_TYPES = {"float16": "half", "bfloat16": "bfloat16_t"}
TARGET_TYPES = {"int32": "int32_t", "int64": "int64_t"}

#: probe -> the -D switch that builds it (the steps and what they change: probes.PROBES)
PROBE_SWITCHES = {
    "only-predicted": "FLOMS_PROBE_ONLY_PREDICTED",
    "init-zero-only": "FLOMS_PROBE_INIT_ZERO_ONLY",
    "init-sentinel": "FLOMS_PROBE_INIT_SENTINEL",
    "no-allreduce-copyout": "FLOMS_PROBE_NO_ALLREDUCE_COPYOUT",
    "pipe-barrier-all": "FLOMS_PROBE_PIPE_BARRIER_ALL",
    "copy-dep=vocab_parallel_logits": "FLOMS_PROBE_COPY_VOCAB_LOGITS",
    "copy-dep=masked_target": "FLOMS_PROBE_COPY_MASKED_TARGET",
}

UB_BYTES = 192 * 1024
_ROWS_CHUNK = 256  # the kernel's ROWS_CHUNK
_BLOCK = 32


def defines_of(case: Case) -> dict[str, str]:
    """The -D defines of a case's kernel: its input and target dtypes."""
    return {"DTYPE_INPUT": INPUT_TYPES[case.input_dtype], "DTYPE_TARGET": TARGET_TYPES[case.target_dtype]}


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def ub_bytes(t: Tiling) -> int:
    """The vector cores' UB the kernel carves for tiling ``t`` (floms.cpp's ``Layout``)."""
    tgt = 8 if t.target_dtype == "int64" else 4
    half_m = (t.base_m + 1) // 2
    hm_a, w = _align(half_m, 64), _align(t.base_n, 64)
    target = 3 * _ROWS_CHUNK * 4 + 64 * _BLOCK
    cv = target + _ROWS_CHUNK * (2 * tgt + 8) + 3 * _align(_ROWS_CHUNK // 8, _BLOCK)
    cv_bytes = (half_m * w * 2 + 2 * half_m * w * 4 + half_m * w // 2 + hm_a * (44 + tgt) + _align(half_m, 8) * _BLOCK
                + 2 * _align(hm_a // 8, _BLOCK) + 20 * _BLOCK)
    all_reduce = 2 * t.block_dim * _ROWS_CHUNK * 4 + _ROWS_CHUNK * (tgt + 20) + 2 * _align(_ROWS_CHUNK // 8, _BLOCK) \
        + 12 * _BLOCK
    return cv + max(cv_bytes, all_reduce)


def kernel_tiling(case: Case, block_dim: int, base_m: int, base_n: int, base_k: int) -> tuple[Tiling, dict[str, Any]]:
    """The Python tiling of a case (work split, workspace layout) and the C++ tiling struct's fields."""
    t = make_tiling(case.bt, case.h, case.v, case.vocab_start_index, case.vocab_end_index, case.input_dtype,
                    case.target_dtype, case.return_logits, block_dim, base_m, base_n, base_k)
    if (t.base_m + 1) // 2 > 255:
        raise UsageError(f"base_m {base_m} is too large for the C++ kernel (at most 510: a vector core's half "
                         "of a tile is one reduction repeat per row)")
    need = ub_bytes(t)
    if need > UB_BYTES:
        raise UsageError(f"tiles of {base_m} x {base_n} need {need} bytes of UB per vector core in the C++ kernel "
                         f"(it has {UB_BYTES}): choose smaller --base-m / --base-n")
    if base_k * 2 * max(base_m, base_n) > L0A_BYTES:
        raise UsageError(f"base_k {base_k} with {base_m} x {base_n} tiles does not fit the cube core's L0A / L0B")
    mm = matmul_tiling(max(case.bt, 1), case.v, max(case.h, 1), in_dtype="float16", out_dtype="float32", cores=1,
                       base_m=base_m, base_n=base_n, base_k=base_k)
    fields: dict[str, Any] = {
        "bt": t.bt, "h": t.h, "v": t.v, "vocabStartIndex": t.vocab_start_index, "vocabEndIndex": t.vocab_end_index,
        "blockDim": t.block_dim, "returnLogits": int(t.return_logits), "baseM": t.base_m, "baseN": t.base_n,
        "rowsPerVector": t.rows_per_vector, "nTilesM": t.n_tiles_m, "nTilesN": t.n_tiles_n,
        "halfM": (t.base_m + 1) // 2, "onlineMaxOffset": t.online_max_offset, "onlineSumOffset": t.online_sum_offset,
        "tileBufferOffset": t.tile_buffers_offset, "maskedTargetOffset": t.masked_target_offset,
        "probeValue": sentinel_value(case),
    }
    fields.update(as_fields(mm, "mmTiling"))
    return t, fields


#: packed tiling structs an operator keeps (a batch runs each case many times; a soak, many cases)
TILING_CACHE_ENTRIES = 4096
_Extra = TypeVar("_Extra")


def cached_tiling(cache: OrderedDict[Any, tuple[np.ndarray, _Extra]], key: Any,
                  make: Callable[[], tuple[np.ndarray, _Extra]]) -> tuple[np.ndarray, _Extra]:
    """``cache[key]``, made by ``make`` (a packed tiling struct and what goes with it) the first time:
    the struct read-only, the oldest entry dropped past TILING_CACHE_ENTRIES."""
    hit = cache.get(key)
    if hit is None:
        packed, extra = make()
        packed.setflags(write=False)
        hit = cache[key] = (packed, extra)
        if len(cache) > TILING_CACHE_ENTRIES:
            cache.popitem(last=False)
    return hit


def _no_fill(case: Any) -> Mapping[str, Any]:
    raise UsageError("FlomsCxxOperator packs its tiling itself (it needs the device's block_dim)")


#: The C++ kernel: sources, defines per case, tiling struct, sync points, incident and probe switches.
KERNEL = AscendCOperator(
    name="floms-cxx",
    sources=(SOURCE,),
    entry=ENTRY,
    make=lambda seed, index: None,  # (cases, goldens and judging are FlomsOperator's)
    golden=lambda case: golden_mod.golden(*case.inputs()),
    incident=first_after(SOURCE, r"^\s*TargetProcess\(", "SyncAll"),
    defines=defines_of,
    tiling=CxxTiling(TILING_HEADER, "FlomsTilingData", fill=_no_fill),
    kernel_type=KernelType.MIX_1_2,
    stages=("InitOutputAndWorkspace", "TargetProcess", "CVProcess", "AllReduceProcess"),
    probe_defines={name: (PROBES[name][0], PROBES[name][1], {switch: 1}) for name, switch in PROBE_SWITCHES.items()},
    root=HERE,
)


def _syncs() -> Mapping[str, str]:
    return KERNEL.sync_points


def _variants() -> Mapping[str, frozenset[str]]:
    return KERNEL.variants


@dataclass
class FlomsCxxOperator(FlomsOperator):
    """FLOMS with the Ascend C kernel; everything but :meth:`run` and the sync points is FlomsOperator's."""

    name: str = "floms-cxx"
    sync_points: Mapping[str, str] = field(default_factory=_syncs)
    variants: Mapping[str, frozenset[str]] = field(default_factory=_variants)
    kernel: AscendCOperator = KERNEL
    _tilings: OrderedDict[tuple, tuple[np.ndarray, Tiling]] = field(default_factory=OrderedDict, repr=False,
                                                                     compare=False)

    @property
    def device_kernel_type(self) -> KernelType:
        """The cores a launch starts (a mix 1:2 kernel: one cube and two vector cores per AI core)."""
        return self.kernel.device_kernel_type

    def resolve_sync_names(self, names: Any) -> frozenset[str]:
        """Sync points as a user names them (FILE:LINE, the file by any path suffix)."""
        return self.kernel.resolve_sync_names(names)

    def build_kernels(self, cases: Iterable[Case], probe: str = "",
                      report: Callable[[str], None] | None = None) -> int:
        """Build the libraries these cases launch before anything runs (AscendCOperator.build_kernels)."""
        return self.kernel.build_kernels(cases, check_probe(probe), report)

    def with_options(self, **values: int) -> FlomsCxxOperator:
        """This operator with other tile sizes (``base_m``, ``base_n``, ``base_k``)."""
        return dataclasses.replace(self, tiles=dataclasses.replace(self.tiles, **values), _tilings=OrderedDict())

    def tiling_of(self, case: Case, block_dim: int) -> tuple[np.ndarray, Tiling]:
        """The packed tiling struct of ``case`` on ``block_dim`` AI cores, and the Python tiling (cached)."""
        key = (case.seed, case.index, case.bt, case.h, case.v, case.vocab_start_index, case.input_dtype,
               case.target_dtype, case.return_logits, block_dim)

        def make() -> tuple[np.ndarray, Tiling]:
            t, fields = kernel_tiling(case, block_dim, self.tiles.base_m, self.tiles.base_n, self.tiles.base_k)
            layout = self.kernel.tiling_layout()
            assert layout is not None
            return layout.pack(fields), t

        return cached_tiling(self._tilings, key, make)

    def run(self, device: Device, case: Case, *, drop_syncs: frozenset[str] = frozenset(), probe: str = "",
            trace: bool = False) -> tuple[dict[str, Any], LaunchResult]:
        dropped = self.resolve_sync_names(drop_syncs)
        kernel = self.kernel.kernel_for(case, check_probe(probe))
        tiling, t = self.tiling_of(case, device.block_dim)
        specs = output_specs(case.bt, case.v, case.input_dtype, case.target_dtype, case.return_logits)
        with device.scope() as gm:
            args = [gm.to_device("input", case.input, case.input_dtype),
                    gm.to_device("weight", case.weight, case.input_dtype),
                    gm.to_device("target", case.target, case.target_dtype)]
            outs = [gm.empty(name, *specs[name]) for name in OUTPUT_NAMES]
            args += [*outs, gm.empty("workspace", t.workspace_bytes, "uint8"), gm.to_device("tiling", tiling, "uint8")]
            launch = device.launch_with(LaunchOptions(drop_syncs=tuple(sorted(dropped)), trace=trace), kernel, *args)
            outputs = {name: device.to_host(out) for name, out in zip(OUTPUT_NAMES, outs)}
        return outputs, launch


OPERATOR_CXX = FlomsCxxOperator()
