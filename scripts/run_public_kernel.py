#!/usr/bin/env python3
"""Run the public FLOMS kernel from a checkout of its operator repository on mpnpu, fixed and with
the SyncAll before its CVProcess dropped: the incident, reproduced from the vendor's own source.

    python scripts/run_public_kernel.py PATH [--cases N] [--repeats R] [--seed S] [--block-dim B]

PATH is the repository (the kernel is under matmul/fused_linear_online_max_sum) or that operator
folder itself. Nothing of it is copied or edited: the kernel (op_kernel/fused_linear_online_max_sum.cpp)
is compiled as it is, against mpnpu's own headers, with the tiling struct of its CPU-debug unit test
(tests/ut/op_kernel/fused_linear_online_max_sum_tiling_def.h) included first and the -D flags that
test's build uses (DTYPE_INPUT, DTYPE_TARGET), then launched on mpnpu's mix 1:2 device.

Each case is the unit test's shape (BT=128, H=64, V=256, vocabulary [0, 128)) with data of ours,
or one of our own FLOMS cases (kernels/fused_linear_online_max_sum/cases.py); the tiling struct is
filled here by the rules the kernel's tiling follows (see :func:`fill_tiling`). Every output is
judged against our golden (kernels/fused_linear_online_max_sum/golden.py) with our tolerances.
Two variants run each case ``--repeats`` times: ``fixed`` (the kernel as written) and ``no-S1``
(its SyncAll between TargetProcess and CVProcess skipped at run time, found by its content); the
script prints the failing repeats per variant and output, and the race detector's hazards of the
dropped variant. Exit status: 0 when the fixed kernel passed every repeat, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from kernels.fused_linear_online_max_sum import cases as floms_cases  # noqa: E402
from kernels.fused_linear_online_max_sum.golden import golden  # noqa: E402
from kernels.fused_linear_online_max_sum.precision import tolerances  # noqa: E402
from mpnpu.ascendc import compile_kernel  # noqa: E402
from mpnpu.ascendc.matmul_tiling import matmul_tiling  # noqa: E402
from mpnpu.ascendc.tiling import tiling_layout  # noqa: E402
from mpnpu.operators.compare import compare_outputs  # noqa: E402
from mpnpu.racecheck import HazardLog, analyze  # noqa: E402
from mpnpu.runtime.config import LaunchOptions, RuntimeOptions  # noqa: E402
from mpnpu.runtime.device import Device  # noqa: E402
from mpnpu.runtime.topology import KernelType  # noqa: E402

OP = "fused_linear_online_max_sum"
KERNEL = f"op_kernel/{OP}.cpp"
KERNEL_HEADER = f"op_kernel/{OP}.h"
TILING_HEADER = f"tests/ut/op_kernel/{OP}_tiling_def.h"
TILING_STRUCT = "FusedLinearOnlineMaxSumTilingData"

# The kernel's fixed geometry and the device's budget (the numbers its tiling uses).
BASE_M, BASE_N, BASE_K = 128, 256, 64
UB_BUF_BYTES = 188160  # the unit test's bufSize (the vector cores' UB less what the kernel keeps back)
SYS_WORKSPACE_BYTES = 16 * 1024 * 1024
MAX_REPEAT_BYTES = 255 * 256  # one vector instruction's reach: 255 repeats of 256 bytes
C_TYPES = {"float16": "half", "bfloat16": "bfloat16_t", "int32": "int32_t", "int64": "int64_t"}


def operator_dir(path: str) -> str:
    """The operator folder inside ``path`` (the repository or the folder itself)."""
    for cand in (path, os.path.join(path, "matmul", OP)):
        if os.path.isfile(os.path.join(cand, KERNEL)) and os.path.isfile(os.path.join(cand, TILING_HEADER)):
            return os.path.abspath(cand)
    raise SystemExit(f"{path}: neither it nor its matmul/{OP} holds {KERNEL} and {TILING_HEADER}")


def syncall_before_cvprocess(op_dir: str) -> str:
    """The sync point name (file:line) of the SyncAll that precedes the CVProcess() call in Process."""
    with open(os.path.join(op_dir, KERNEL_HEADER), errors="replace") as f:
        lines = f.read().splitlines()
    call = next((i for i, ln in enumerate(lines) if re.match(r"^\s*CVProcess\(\)\s*;", ln)), None)
    if call is None:
        raise SystemExit(f"{KERNEL_HEADER}: no CVProcess(); call found")
    for i in range(call - 1, -1, -1):
        if re.search(r"\bSyncAll\b", lines[i]):
            return f"{OP}.h:{i + 1}"
        if re.search(r"\bTargetProcess\(\)\s*;", lines[i]):
            break
    raise SystemExit(f"{KERNEL_HEADER}: no SyncAll between TargetProcess() and CVProcess()")


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


@dataclass(frozen=True)
class Plan:
    """How one case is launched: AI cores, tiling key, the tiling struct's values, workspace bytes."""

    block_dim: int
    tiling_key: int
    fields: dict
    user_workspace: int


def fill_tiling(case: floms_cases.Case, max_cores: int) -> Plan:
    """The tiling struct for ``case`` by the rules the kernel's tiling follows (and that the unit
    test's hand-written values satisfy for 128x64x256 on one AI core):

    - one AI core per 128x256 tile of the logits, at most ``max_cores``; two vector cores each;
    - the rows' target work in tasks of 8 rows (one mask byte), dealt evenly over the vector cores,
      the first ``tail`` cores one more;
    - a target loop covers what a third of the vector buffer holds, within one instruction's reach;
    - the workspace initialisation in chunks of half the buffer's floats, at most half the rows
      (rounded up to 8);
    - the matmul: singleCore = base = 128x256, K whole with baseK 64, the full problem M x N x H;
    - tiling key 1 when the logits are returned, 0 (memory-saving, the incident's mode) otherwise.
    """
    bt, h, v = case.bt, case.h, case.v
    tasks = -(-bt // BASE_M) * -(-v // BASE_N)
    cube = max(1, min(max_cores, tasks))
    vec = 2 * cube
    target_bytes = np.dtype(case.target_dtype).itemsize
    batch_tasks = -(-bt // 8)
    per_loop_bytes = min((UB_BUF_BYTES // 3) // 256 * 256, MAX_REPEAT_BYTES)
    init_len = min((UB_BUF_BYTES // 4 // 2) // 8 * 8, _align((bt + 1) // 2, 8))
    mm = matmul_tiling(BASE_M, BASE_N, h, in_dtype="float16", out_dtype="float16", base_m=BASE_M, base_n=BASE_N,
                       base_k=min(BASE_K, _align(h, 16)))
    mm.update(M=bt, N=v, Ka=h, Kb=h, usedCoreNum=cube, shareL1Size=327680, shareL0CSize=131072, batchM=1,
              batchN=1, singleBatchM=1, singleBatchN=1)
    fields = {
        "m": bt, "k": h, "n": v, "bufSize": UB_BUF_BYTES, "cubeCoreNum": cube, "vecCoreNum": vec,
        "batchTaksPerVecCore": batch_tasks // vec, "batchTaksTailVecCore": batch_tasks % vec,
        "targetTasksPerLoop": per_loop_bytes // target_bytes // 8,
        "vocabStartIndex": float(case.vocab_start_index), "vocabEndIndex": float(case.vocab_end_index),
        "initWorkspaceLength": init_len, "cubeCoreNumAligned": _align(cube, 8),
        "matmulInputEmptyFlag": 0 if h > 0 else 1,
        **{f"mmTiling.{k}": val for k, val in mm.items()},
    }
    user = bt * 4 * cube * 2 + (0 if case.return_logits else BASE_M * BASE_N * 2 * cube * 2)
    return Plan(cube, 1 if case.return_logits else 0, fields, user)


def ut_case(seed: int, index: int, input_dtype: str, return_logits: bool = False) -> floms_cases.Case:
    """The unit test's shape and shard (BT=128, H=64, V=256, vocabulary [0, 128)) with our data."""
    space = floms_cases.CaseSpace(bt=(128, 128), h=(64, 64), v=(256, 256), input_dtypes=(input_dtype,),
                                  target_dtypes=("int32",), n_shards=(2, 2), return_logits=(return_logits,))
    c = floms_cases.make_case(seed, index, space)
    # our generator puts the local shard anywhere in the global vocabulary: the test's is [0, 128)
    # of a 256-wide weight; targets are re-drawn from [0, 256) so about half fall outside it
    rng = np.random.default_rng([seed, index, 1])
    target = rng.integers(0, 256, c.bt).astype(np.int32)
    target[:4] = (0, 127, 128, 255)  # the shard's boundaries
    return floms_cases.Case(c.index, c.seed, c.bt, c.h, c.v, 0, 128, c.input_dtype, c.target_dtype,
                            c.return_logits, c.input, c.weight, target)


def run_case(op_dir: str, case: floms_cases.Case, plan: Plan, drop: tuple[str, ...], repeats: int,
             racecheck: bool, log: HazardLog, pipes: str = "kernel") -> dict[str, list[int]]:
    """Launch ``case`` ``repeats`` times; per failing output, the repeats (1-based) it failed in."""
    kernel = compile_kernel(os.path.join(op_dir, KERNEL), OP, tiling_header=os.path.join(op_dir, TILING_HEADER),
                            defines={"DTYPE_INPUT": C_TYPES[case.input_dtype],
                                     "DTYPE_TARGET": C_TYPES[case.target_dtype]},
                            kernel_type=KernelType.MIX_1_2)
    kernel = kernel.with_launch(tiling_key=plan.tiling_key, sys_workspace_bytes=SYS_WORKSPACE_BYTES)
    layout = tiling_layout(os.path.join(op_dir, TILING_HEADER), TILING_STRUCT)
    want = golden(*case.inputs())
    tol = tolerances(case)
    if case.return_logits:
        # this kernel's vector cores read the logits back from the output, stored in the input
        # dtype, in both modes: the storage-rounding allowance of memory-saving mode applies
        saving = tolerances({"input_dtype": case.input_dtype, "return_logits": False, "input": case.input,
                             "weight": case.weight})
        tol = {**tol, **{k: saving[k] for k in ("logits_max", "sum_exp_logits", "predicted_logits")}}
    failed: dict[str, list[int]] = {}
    bt, v = case.bt, case.v
    with Device(plan.block_dim, kernel_type=KernelType.MIX_1_2, options=RuntimeOptions(pipes=pipes)) as dev:
        for r in range(repeats):
            with dev.scope() as gm:
                tensors = {
                    "input": gm.to_device("input", case.input, case.input_dtype),
                    "weight": gm.to_device("weight", case.weight, case.input_dtype),
                    "target": gm.to_device("target", case.target, case.target_dtype),
                    "logits_max": gm.empty("logits_max", bt, "float32"),
                    "sum_exp_logits": gm.empty("sum_exp_logits", bt, "float32"),
                    "predicted_logits": gm.empty("predicted_logits", bt, "float32"),
                    "target_mask": gm.empty("target_mask", (bt + 7) // 8, "uint8"),
                    "masked_target": gm.empty("masked_target", bt, case.target_dtype),
                    "vocab_parallel_logits": gm.empty("vocab_parallel_logits",
                                                      bt * v if case.return_logits else 16, case.input_dtype),
                    "workspace": gm.empty("workspace", SYS_WORKSPACE_BYTES + plan.user_workspace, "uint8"),
                    "tiling": gm.to_device("tiling", layout.pack(plan.fields), "uint8"),
                }
                trace = racecheck and r == 0
                res = dev.launch_with(LaunchOptions(drop_syncs=drop, trace=trace), kernel, *tensors.values())
                if trace and res.trace is not None:
                    log.add(analyze(res.trace))
                got = {name: dev.to_host(tensors[name]) for name in want}
            if not case.return_logits:
                got["vocab_parallel_logits"] = want["vocab_parallel_logits"]
            else:
                got["vocab_parallel_logits"] = got["vocab_parallel_logits"].reshape(want["vocab_parallel_logits"].shape)
            verdict = compare_outputs(got, want, tol)
            for name in verdict.failed_outputs:
                failed.setdefault(name, []).append(r + 1)
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="the operator repository, or its matmul/fused_linear_online_max_sum")
    ap.add_argument("--cases", type=int, default=3, help="our own cases besides the unit test's shape (default 3)")
    ap.add_argument("--repeats", type=int, default=4, help="launches per case and variant (default 4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--block-dim", type=int, default=4,
                    help="at most this many AI cores per launch, one per logits tile (default 4)")
    ap.add_argument("--return-logits", action="store_true",
                    help="return the logits (tiling key 1, as the unit test) instead of memory-saving mode (key 0)")
    ap.add_argument("--pipes", choices=("kernel", "sync"), default="kernel",
                    help="each core's data-movement pipes: asynchronous (default) or run in order")
    ap.add_argument("--input-dtype", choices=("bfloat16", "float16"), default="bfloat16",
                    help="the unit test's case's input type (default bfloat16)")
    a = ap.parse_args(argv)
    op_dir = operator_dir(a.path)
    s1 = syncall_before_cvprocess(op_dir)
    print(f"kernel: {os.path.join(op_dir, KERNEL)}\ntiling: {os.path.join(op_dir, TILING_HEADER)}\n"
          f"dropped in the no-S1 variant: {s1} (the SyncAll between TargetProcess and CVProcess)")
    # at most 2 x 2 logits tiles, so that with the default --block-dim every vector core handles one
    # tile: between two tiles of one vector core the kernel orders its pipes only through the
    # cross-core flags, which asynchronous pipes do not honour as a barrier (see the docs)
    space = floms_cases.CaseSpace(bt=(8, 256), h=(16, 128), v=(256, 512), return_logits=(a.return_logits,))
    todo = [ut_case(a.seed, 0, a.input_dtype, a.return_logits)] + [floms_cases.make_case(a.seed, i + 1, space)
                                                                   for i in range(a.cases)]
    totals = {"fixed": 0, "no-S1": 0}
    log = HazardLog()
    for case in todo:
        plan = fill_tiling(case, a.block_dim)
        tiles = -(-case.bt // BASE_M) * -(-case.v // BASE_N)
        print(f"\n{case.describe()}; {tiles} tile(s) on {plan.block_dim} AI core(s), tiling key {plan.tiling_key}")
        if tiles > plan.block_dim and a.pipes == "kernel":
            print("  note: a vector core handles several tiles here, where the kernel's own pipe hazards between "
                  "tiles can show (--pipes sync runs them in order)")
        for variant, drop in (("fixed", ()), ("no-S1", (s1,))):
            failed = run_case(op_dir, case, plan, drop, a.repeats, racecheck=bool(drop), log=log, pipes=a.pipes)
            bad = sorted({r for rs in failed.values() for r in rs})
            totals[variant] += len(bad)
            detail = "; ".join(f"{name} in repeats {rs}" for name, rs in sorted(failed.items()))
            print(f"  {variant:6s}: {len(bad)}/{a.repeats} repeats failed" + (f" ({detail})" if detail else ""))
    n = len(todo) * a.repeats
    print(f"\nfailing launches: fixed {totals['fixed']}/{n}, no-S1 {totals['no-S1']}/{n}")
    print("racecheck of the no-S1 variant (first repeat of each case):")
    print(log.format_text())
    return 0 if totals["fixed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
