"""Syncs inserted at stage boundaries for one launch, to try a repair without editing the kernel.

``Device.launch_with(LaunchOptions(insert_syncs=("after:TargetProcess",)), ...)`` makes every core run a SyncAll when
it leaves the stage ``TargetProcess`` (``api.stage``), exactly as if the kernel had a
``sync_all()`` after that ``with stage(...)`` block. Forms:

==========================================  ====================================================
``after:<stage>``                           SyncAll<false> (every core) when leaving the stage
``after:<stage>:aiv``                       SyncAll<true> (vector cores only) when leaving it
``flag1:<id>:<stage A>-><stage B>``         mode-1 flag: both vector cores of an AI core set it
                                            when leaving A and wait for it when entering B
``flag2:<id>:cube:<stage A>-><stage B>``    mode-2 flag: the cube core sets it leaving A, its
                                            two vector cores wait for it entering B
``flag2:<id>:vector:<stage A>-><stage B>``  mode-2 flag: both vector cores set it leaving A,
                                            their cube core waits for it entering B
==========================================  ====================================================

An inserted sync runs only when its stage block ends normally, records trace events like a
kernel's own (named after its spec, e.g. ``+after:TargetProcess``), and is subject to the same
checks: a SyncAll that some core never reaches is reported by the watchdog as usual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from mpnpu.errors import UsageError

from .topology import SYNC_ALL_FLAG_IDS, check_flag

SYNC_ALL, SYNC_AIV, FLAG = "sync_all", "sync_aiv", "flag"


@dataclass(frozen=True)
class InsertedSync:
    """One parsed ``insert_syncs`` entry."""

    spec: str
    kind: str  # SYNC_ALL, SYNC_AIV or FLAG
    after: str  # stage whose end the sync (or the flag set) follows
    before: str = ""  # FLAG: stage at whose start the wait happens
    mode: int = 0
    flag_id: int = 0
    setter: str = ""  # FLAG mode 2: "cube" or "vector"

    @property
    def name(self) -> str:
        """The sync point name trace events carry."""
        return "+" + self.spec

    def sets(self, is_cube: bool) -> bool:
        """Does a core of this type set the flag?"""
        if self.mode == 1:
            return not is_cube
        return is_cube == (self.setter == "cube")

    def waits(self, is_cube: bool) -> bool:
        if self.mode == 1:
            return not is_cube
        return is_cube != (self.setter == "cube")


def parse_insert(spec: str) -> InsertedSync:
    """Parse one entry (forms in the module docstring); a UsageError explains a bad one."""
    if not isinstance(spec, str) or not spec:
        raise UsageError(f"insert_syncs entries are strings like 'after:TargetProcess', got {spec!r}")
    head, _, rest = spec.partition(":")
    if head == "after":
        stage, aiv = rest, False
        if rest.endswith(":aiv"):
            stage, aiv = rest[: -len(":aiv")], True
        if not stage:
            raise UsageError(f"insert_syncs {spec!r}: no stage name after 'after:'")
        return InsertedSync(spec, SYNC_AIV if aiv else SYNC_ALL, stage)
    if head in ("flag1", "flag2"):
        mode = int(head[-1])
        parts = rest.split(":", 2 if mode == 2 else 1)
        want = 3 if mode == 2 else 2
        if len(parts) != want or "->" not in parts[-1]:
            form = "flag2:<id>:cube|vector:<A>-><B>" if mode == 2 else "flag1:<id>:<A>-><B>"
            raise UsageError(f"insert_syncs {spec!r}: expected {form}")
        try:
            flag_id = int(parts[0])
            check_flag(mode, flag_id)
        except ValueError as e:
            raise UsageError(f"insert_syncs {spec!r}: {e}") from None
        if flag_id in SYNC_ALL_FLAG_IDS:  # an inserted flag must not collide with the kernel's SyncAlls
            raise UsageError(f"insert_syncs {spec!r}: flag ids 11-14 are what the device's SyncAll is built on; "
                             "an inserted flag takes one of 0-10")
        setter = parts[1] if mode == 2 else "vector"
        if setter not in ("cube", "vector"):
            raise UsageError(f"insert_syncs {spec!r}: the setter side is 'cube' or 'vector', not {setter!r}")
        a, _, b = parts[-1].partition("->")
        if not a or not b:
            raise UsageError(f"insert_syncs {spec!r}: both stages must be named (A->B)")
        return InsertedSync(spec, FLAG, a, b, mode, flag_id, setter)
    raise UsageError(
        f"insert_syncs {spec!r}: expected 'after:<stage>', 'after:<stage>:aiv', 'flag1:...' or 'flag2:...'")


def parse_inserts(specs: Iterable[str]) -> tuple[InsertedSync, ...]:
    if isinstance(specs, str):
        raise UsageError(f"insert_syncs must be a collection of specs, e.g. ('after:TargetProcess',), not {specs!r}")
    return tuple(parse_insert(s) for s in specs)


class StageHooks:
    """What one core does at stage boundaries in one launch (built from the parsed entries)."""

    def __init__(self, inserts: Sequence[InsertedSync], is_cube: bool) -> None:
        self.on_exit: dict[str, list[InsertedSync]] = {}
        self.on_entry: dict[str, list[InsertedSync]] = {}
        for ins in inserts:
            if ins.kind == SYNC_ALL or (ins.kind == SYNC_AIV and not is_cube):
                self.on_exit.setdefault(ins.after, []).append(ins)
            elif ins.kind == FLAG:
                if ins.sets(is_cube):
                    self.on_exit.setdefault(ins.after, []).append(ins)
                if ins.waits(is_cube):
                    self.on_entry.setdefault(ins.before, []).append(ins)


def hooks_for(inserts: Sequence[InsertedSync], is_cube: bool) -> StageHooks | None:
    return StageHooks(inserts, is_cube) if inserts else None
