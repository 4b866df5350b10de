"""Small hand-built race kernels and a minimal operator around them, for directed reproduction,
the sync audit and repair tests.

Two vector cores of one AI core (block_dim 1: core ids 1 and 2) hand a value over GM. Every
kernel has one named sync point ``B`` between its two stages; the ``incident`` variant drops it.
GM is filled with a stale value (-1) before each launch, so a read that comes too early returns
-1 and a write that lands in the wrong order leaves the other core's value: a reversed pair is
visible in the output. Accesses call ``data_copy`` directly in the kernel, so every site is a
line of this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from mpnpu import LaunchOptions, api
from mpnpu.api import TPosition
from mpnpu.operators.protocol import Verdict

N = 64
STALE = -1


def _local(value: int | None = None):
    buf = api.alloc_local(TPosition.VECCALC, N, "int32")
    if value is not None:
        buf.fill(value)
    return buf


def raw(data, out, value: int) -> None:
    """aiv0 writes ``value`` (Produce); aiv1 reads it and copies it to ``out`` (Consume). RAW."""
    with api.stage("Produce"):
        if api.is_aiv() and api.get_block_idx() == 0:
            api.data_copy(data, _local(value))
    api.sync_all(name="B")
    with api.stage("Consume"):
        if api.is_aiv() and api.get_block_idx() == 1:
            buf = _local()
            api.data_copy(buf, data)
            api.data_copy(out, buf)


def benign(data, out, value: int) -> None:
    """Both vector cores write the same ``value`` to ``data`` (WAW whose order cannot matter)."""
    with api.stage("Produce"):
        if api.is_aiv() and api.get_block_idx() == 0:
            api.data_copy(data, _local(value))
    api.sync_all(name="B")
    with api.stage("Consume"):
        if api.is_aiv() and api.get_block_idx() == 1:
            api.data_copy(data, _local(value))
            api.data_copy(out, _local(value))


def war(data, out, value: int) -> None:
    """aiv0 reads ``data`` (the case's input) into ``out`` (Produce); aiv1 then overwrites ``data``
    with ``value`` + 1 (Consume). WAR: reversed, aiv0 copies the new value."""
    with api.stage("Produce"):
        if api.is_aiv() and api.get_block_idx() == 0:
            buf = _local()
            api.data_copy(buf, data)
            api.data_copy(out, buf)
    api.sync_all(name="B")
    with api.stage("Consume"):
        if api.is_aiv() and api.get_block_idx() == 1:
            api.data_copy(data, _local(value + 1))


def waw(data, out, value: int) -> None:
    """aiv0 writes ``value`` (Produce), aiv1 then writes ``value`` + 1 (Consume): the later write
    must win. WAW: reversed, ``data`` ends with ``value``."""
    with api.stage("Produce"):
        if api.is_aiv() and api.get_block_idx() == 0:
            api.data_copy(data, _local(value))
    api.sync_all(name="B")
    with api.stage("Consume"):
        if api.is_aiv() and api.get_block_idx() == 1:
            api.data_copy(data, _local(value + 1))
            api.data_copy(out, _local(0))


def raw_twice(data, out, value: int) -> None:
    """``raw`` with two barriers in a row (B, then B2): either one alone orders the pair."""
    with api.stage("Produce"):
        if api.is_aiv() and api.get_block_idx() == 0:
            api.data_copy(data, _local(value))
    api.sync_all(name="B")
    api.sync_all(name="B2")
    with api.stage("Consume"):
        if api.is_aiv() and api.get_block_idx() == 1:
            buf = _local()
            api.data_copy(buf, data)
            api.data_copy(out, buf)


#: kernel name -> (expected "data", expected "out") for a case value v
EXPECTED = {
    "raw": lambda v: (v, v),
    "benign": lambda v: (v, v),
    "war": lambda v: (v + 1, v),  # out holds the input, which the case sets to v
    "waw": lambda v: (v + 1, 0),
    "raw_twice": lambda v: (v, v),
}


@dataclass
class ToyCase:
    index: int
    value: int


@dataclass
class ToyOperator:
    """The operator protocol around one of the kernels above (exact comparison of both outputs)."""

    kernel: str = "raw"
    name: str = "toy"
    sync_points: Mapping[str, str] = field(default_factory=lambda: {"B": "SyncAll between Produce and Consume"})
    variants: Mapping[str, frozenset[str]] = field(
        default_factory=lambda: {"incident": frozenset({"B"}), "fixed": frozenset()})
    probes: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    stages: tuple[str, ...] = ("Produce", "Consume")

    def make_case(self, seed: int, index: int) -> ToyCase:
        return ToyCase(index, 10 + 7 * index + seed)

    def describe_case(self, case: ToyCase) -> str:
        return f"case {case.index}: value {case.value}"

    def prepare(self, case: ToyCase) -> dict[str, np.ndarray]:
        d, o = EXPECTED[self.kernel](case.value)
        return {"data": np.full(N, d, np.int32), "out": np.full(N, o, np.int32)}

    def run(self, device, case: ToyCase, *, drop_syncs: frozenset[str] = frozenset(), probe: str = "",
            trace: bool = False) -> tuple[dict[str, Any], Any]:
        with device.scope() as gm:
            # "war" reads its input from data; the others find stale memory there
            start = case.value if self.kernel == "war" else STALE
            data = gm.to_device("data", np.full(N, start, np.int32))
            out = gm.to_device("out", np.full(N, STALE, np.int32))
            launch = device.launch_with(LaunchOptions(drop_syncs=drop_syncs, trace=trace),
                                        f"tests.kernels_for_confirm:{self.kernel}", data, out, case.value)
            outputs = {"data": device.to_host(data), "out": device.to_host(out)}
        return outputs, launch

    def judge(self, case: ToyCase, prepared: Mapping[str, np.ndarray], outputs: Mapping[str, Any],
              probe: str = "") -> Verdict:
        failed = [k for k in ("data", "out") if not np.array_equal(outputs[k], prepared[k])]
        fp = b"".join(np.ascontiguousarray(outputs[k]).tobytes()[:8] for k in ("data", "out"))
        return Verdict(passed=not failed, failed_outputs=failed, fingerprint=fp)


RAW_OP = ToyOperator("raw", name="toy_raw")
BENIGN_OP = ToyOperator("benign", name="toy_benign")
WAR_OP = ToyOperator("war", name="toy_war")
WAW_OP = ToyOperator("waw", name="toy_waw")
RAW_TWICE_OP = ToyOperator(
    "raw_twice", name="toy_raw_twice",
    sync_points={"B": "first SyncAll between Produce and Consume", "B2": "second SyncAll right after B"},
    variants={"incident": frozenset({"B", "B2"}), "fixed": frozenset()},
)
