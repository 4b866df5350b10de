"""The launch watchdog: names a SyncAll or flag wait that can never end, within milliseconds.

The parent never joins a barrier or waits on a flag itself; it reads the status board that each
core writes (state, SyncAll counts, what it waits for) and the OS's view of each core process.
Three checks, cheapest first:

- a SyncAll some party can no longer reach (it finished the kernel with fewer SyncAll calls);
- a flag wait whose missing senders have all finished (or that needs the waiter's own set),
  seen on two consecutive checks;
- a stall: every unfinished core blocked, or blocked but for cores that spin (run, use the CPU and
  make no kernel API call), nothing progressing for ``stall_grace_s``.

Every report names each stuck core with its kernel line: a blocked core's, written as it blocked;
a spinning core's, asked with WHERE_SIGNAL (docs/device-model.md, "The rule for hangs").

Each check confirms with the OS that the waiting core is asleep before it reports, because the
board can lag a core by one step. docs/device-model.md ("Watchdog") explains why that is enough.
"""

from __future__ import annotations

import os
import time
from multiprocessing.process import BaseProcess
from typing import Sequence

import numpy as np

from mpnpu.errors import DeadlockError, LaunchError, SyncAllNotReachedError

from .kcontext import IN_CALL, OUTSIDE_KERNEL
from .procutil import process_asleep, process_cpu_s
from .sync import (
    GM_FLAG_MODE,
    LAST_CALL,
    NO_CALL_YET,
    ST_CALLS,
    ST_PROGRESS,
    ST_STATE,
    ST_SYNC_AIV,
    ST_SYNC_ALL,
    ST_WAIT_ID,
    ST_WAIT_MODE,
    ST_WAIT_TAKEN,
    WHERE_SIGNAL,
    CoreState,
    SyncObjects,
)
from .topology import Topology

#: a running core counts as spinning only if it used at least this share of a CPU in the window
SPIN_CPU_SHARE = 0.1


class Watchdog:
    """Reads the status board during a launch and names waits that can never end.

    The device makes one at the first tick of a launch that has not ended yet and calls
    :meth:`check` on every tick; ``procs`` are the core processes (or their pids) by core id,
    read only to ask the OS whether a core that the board shows waiting is really asleep.
    See docs/device-model.md ("Watchdog") for what each check proves.
    """

    _BLOCKED = (CoreState.IN_SYNC_ALL, CoreState.IN_SYNC_AIV, CoreState.IN_FLAG_WAIT)

    def __init__(self, sync: SyncObjects, topology: Topology, stall_grace_s: float,
                 procs: Sequence[BaseProcess | int] = ()) -> None:
        self._sync = sync
        self._topo = topology
        self._grace = stall_grace_s
        self._procs = procs  # core processes (or pids), by core id; read only when needed
        self._stall_key: bytes | None = None
        self._stall_since = 0.0
        # CPU seconds of each running core at the second check of an unchanged board, and when
        # (read then, not at every change: a launch that progresses costs no /proc reads)
        self._stall_cpu: dict[int, float] | None = None
        self._stall_cpu_at = 0.0
        self._flag_suspects: set[tuple[int, ...]] = set()  # hopeless-looking waits at the last check

    def _asleep(self, core_id: int) -> bool | None:
        """Is every thread of the core's process asleep (True), or is one running or stopped (False)?

        None where that cannot be read (no /proc). A core between taking a flag and writing
        "running" back to the status board executes no blocking call (its kernel thread may wait
        for the interpreter lock, but a thread holding that lock is running), so a core the status
        board shows waiting *and* the OS shows wholly asleep really is blocked in that wait.
        """
        if core_id >= len(self._procs):
            return None
        proc = self._procs[core_id]
        return process_asleep(proc if isinstance(proc, int) else proc.pid)  # type: ignore[arg-type]  # started

    def check(self, now: float, unstarted: Sequence[int] = ()) -> LaunchError | None:
        """The error that describes a wait that can never end, or None while none is certain.

        ``now`` is ``time.monotonic()``; a stall must last ``stall_grace_s`` between checks.
        ``unstarted``: the cores of blocks of a launch wider than the device's cores that wait for a
        free core (they start only as a started block ends: while every started core is blocked,
        none will).
        """
        st = self._sync.status_view().copy()
        state = st[:, ST_STATE]
        if not (np.isin(state, self._BLOCKED).any() or (state == CoreState.DONE).any()):
            self._stall_key = None
            return None
        return (self._unreachable_sync_all(st, state) or self._unsatisfiable_flag(st, state)
                or self._stuck(st, state, now, unstarted))

    def _unreachable_sync_all(self, st: np.ndarray, state: np.ndarray) -> LaunchError | None:
        for aiv_only, col, waiting_state in ((False, ST_SYNC_ALL, CoreState.IN_SYNC_ALL),
                                             (True, ST_SYNC_AIV, CoreState.IN_SYNC_AIV)):
            waiting = np.flatnonzero(state == waiting_state)
            if waiting.size == 0:
                continue
            k = int(st[waiting, col].max())
            parties = self._topo.barrier_parties(aiv_only)
            finished = [p for p in parties if state[p] == CoreState.DONE and st[p, col] < k]
            if finished:
                what = "SyncAll (vector cores only)" if aiv_only else "SyncAll"
                p = finished[0]
                n_done = int(st[p, col])
                at = "; ".join(f"{self._topo.core(int(c)).short}{self._at(int(c))}" for c in waiting[:4])
                return SyncAllNotReachedError(
                    f"{what} #{k} can never complete: {self._topo.core(p).label} finished the kernel after "
                    f"{n_done} {what} call{'s' if n_done != 1 else ''}, while {waiting.size} core"
                    f"{'s' if waiting.size != 1 else ''} wait in it ({at})",
                    sync_count=k, never_arrived=[self._topo.core(c).label for c in finished],
                    waiting=[self._topo.core(int(c)).label for c in waiting],
                )
        return None

    def _unsatisfiable_flag(self, st: np.ndarray, state: np.ndarray) -> LaunchError | None:
        suspects: set[tuple[int, ...]] = set()
        found = None
        for r_np in np.flatnonzero(state == CoreState.IN_FLAG_WAIT):
            r = int(r_np)
            mode, flag_id = int(st[r, ST_WAIT_MODE]), int(st[r, ST_WAIT_ID])
            # A multi-sender wait takes its senders' sets one by one: the first ST_WAIT_TAKEN of
            # them were taken before it blocked, so their zero counters are not missing sets.
            taken = int(st[r, ST_WAIT_TAKEN])
            if mode == GM_FLAG_MODE:  # any core may set a GM word: only a stall of every core proves it (_stuck)
                continue
            if mode < 0:  # a mode-less wait that no set has reached yet: any core could still set
                missing = list(self._topo.flag_candidates(r))
            else:
                missing = [s for i, s in enumerate(self._topo.flag_senders(mode, r))
                           if i >= taken and self._sync.flag_count(mode, flag_id, r, s) == 0]
            # A sender that finished never sets again; nor does the waiter itself while it waits
            # (modes 0 and 1 need the waiter's own set too).
            if not (missing and all(s == r or state[s] == CoreState.DONE for s in missing)):
                continue
            # The snapshot may be stale: the waiter can have taken the set it blocked on (hence
            # the zero count) without having written the board back yet. So the wait is hopeless
            # only if the waiter is still in the same blocking instance (ST_PROGRESS, ST_WAIT_TAKEN)
            # after the counts were read, every thread of its process is asleep (it blocks in no
            # call between taking the flag and updating the board; a pipe thread of the core may
            # hold the interpreter lock meanwhile, but then that thread is running), and the same
            # holds on two consecutive checks.
            row = self._sync.status_view()[r]
            key = (r, mode, flag_id, int(st[r, ST_PROGRESS]), taken)
            still = (int(row[ST_STATE]) == CoreState.IN_FLAG_WAIT and int(row[ST_WAIT_MODE]) == mode
                     and int(row[ST_WAIT_ID]) == flag_id and int(row[ST_PROGRESS]) == key[3]
                     and int(row[ST_WAIT_TAKEN]) == taken)
            if not still or self._asleep(r) is False:
                continue
            suspects.add(key)
            if key not in self._flag_suspects or found is not None:
                continue
            label = self._topo.core(r).label
            finished = [s for s in missing if s != r]
            if mode < 0:
                why = "no core set in this launch, and every core that could set it has finished the kernel"
            elif finished:
                why = f"{self._topo.core(finished[0]).label} can no longer set: it finished the kernel"
            else:
                why = f"it has not set itself (a mode {mode} wait needs a set from the waiter too)"
            shown = f"flag {flag_id}" if mode < 0 else f"flag {flag_id} (mode {mode})"
            found = DeadlockError(
                f"{label} waits on {shown} that {why}{'; the wait is' + self._at(r) if self._at(r) else ''}",
                waiter=label, flag_id=flag_id, mode=mode,
                missing=[self._topo.core(s).label for s in missing],
            )
        self._flag_suspects = suspects
        return found

    # -- who waits where, and for whom ------------------------------------------------------------

    def _at(self, c: int) -> str:
        where = self._sync.read_where(c)
        return f" at {where}" if where else ""

    def _waits_for(self, st: np.ndarray, state: np.ndarray, c: int) -> list[int]:
        """The cores blocked core ``c`` waits for: the parties not yet at its SyncAll, or the
        senders of its flag whose sets are missing (the waiter itself included, when the mode needs
        its own set)."""
        s = int(state[c])
        if s in (CoreState.IN_SYNC_ALL, CoreState.IN_SYNC_AIV):
            aiv_only = s == CoreState.IN_SYNC_AIV
            col = ST_SYNC_AIV if aiv_only else ST_SYNC_ALL
            k = int(st[c, col])
            return [p for p in self._topo.barrier_parties(aiv_only) if p != c and int(st[p, col]) < k]
        mode, flag_id, taken = int(st[c, ST_WAIT_MODE]), int(st[c, ST_WAIT_ID]), int(st[c, ST_WAIT_TAKEN])
        if mode == GM_FLAG_MODE:  # (whoever sets the word: the cores still running)
            return [p for p in range(len(state)) if p != c and int(state[p]) not in (CoreState.DONE, CoreState.FAILED)]
        if mode < 0:
            return [p for p in self._topo.flag_candidates(c) if p != c]
        return [p for i, p in enumerate(self._topo.flag_senders(mode, c))
                if i >= taken and self._sync.flag_count(mode, flag_id, c, p) == 0]

    def _blocked_text(self, st: np.ndarray, state: np.ndarray, c: int) -> str:
        """"aiv0 in SyncAll #1 at dir/kernel.py:12, waiting for aiv1" (the board's view of core c)."""
        s = int(state[c])
        if s == CoreState.IN_FLAG_WAIT:
            m = int(st[c, ST_WAIT_MODE])
            if m == GM_FLAG_MODE:
                what = f"a wait on the GM flag word at byte {int(st[c, ST_WAIT_ID])} of its workspace"
            else:
                what = f"flag {int(st[c, ST_WAIT_ID])}" + (f" (mode {m})" if m >= 0 else "")
        elif s == CoreState.IN_SYNC_AIV:
            what = f"SyncAll (vector cores only) #{int(st[c, ST_SYNC_AIV])}"
        else:
            what = f"SyncAll #{int(st[c, ST_SYNC_ALL])}"
        whom = self._waits_for(st, state, c)
        # a core waited for that has ended will never set what it waits for: say so (a vector core that
        # returned without its Matmul's End leaves its cube core's server waiting so)
        ended = (CoreState.DONE, CoreState.FAILED)
        names = ["itself" if p == c else self._topo.core(p).short + (" (ended)" if int(state[p]) in ended else "")
                 for p in whom]
        waiting = f", waiting for {', '.join(names[:4])}{', ...' if len(names) > 4 else ''}" if names else ""
        return f"{self._topo.core(c).short} in {what}{self._at(c)}{waiting}"

    def _ask_where(self, cores: Sequence[int], wait_s: float = 1.0) -> dict[int, str]:
        """Where each of the running ``cores`` is: each is sent WHERE_SIGNAL and writes its kernel
        line (a Python kernel: the line it runs; a C++ kernel: its last API call's); "" for a core
        that does not answer within ``wait_s`` (one inside a long C call of a Python kernel answers
        only after it)."""
        asked = []
        for c in cores:
            pid = self._pid(c)
            if pid is None:
                continue
            self._sync.clear_where(c)
            try:
                os.kill(pid, WHERE_SIGNAL)
            except OSError:
                continue
            asked.append(c)
        said = dict.fromkeys(cores, "")
        deadline = time.monotonic() + wait_s
        while asked:
            for c in list(asked):
                said[c] = self._sync.read_where(c)
                if said[c]:
                    asked.remove(c)
            if not asked or time.monotonic() >= deadline:
                break
            time.sleep(0.005)
        return said

    def _running_text(self, c: int, where: str, quiet_s: float | None) -> str:
        label = self._topo.core(c).short
        how = f"spinning (no kernel API call for {quiet_s:g} s)" if quiet_s is not None else "running"
        if where == OUTSIDE_KERNEL:
            return f"{label} {how}, outside the kernel (not started, or finishing)"
        if where.startswith(NO_CALL_YET):
            return f"{label} {how}, before its first kernel API call"
        if where.startswith(IN_CALL):
            return f"{label} {how}, inside a kernel API call made at {where[len(IN_CALL):]}"
        if where.startswith(LAST_CALL):
            return f"{label} {how}; its last kernel API call was at {where[len(LAST_CALL):]}"
        return f"{label} {how} at {where}" if where else f"{label} {how} (where, it did not say)"

    def _pid(self, c: int) -> int | None:
        if c >= len(self._procs):
            return None
        proc = self._procs[c]
        return proc if isinstance(proc, int) else proc.pid

    def _cpu(self, c: int) -> float:
        pid = self._pid(c)
        used = process_cpu_s(pid) if pid is not None else None
        return used if used is not None else 0.0

    # -- a stall: every unfinished core blocked, or blocked but for cores that spin ----------------

    def _stuck(self, st: np.ndarray, state: np.ndarray, now: float,
               unstarted: Sequence[int] = ()) -> LaunchError | None:
        blocked_mask = np.isin(state, self._BLOCKED)
        done_mask = (state == CoreState.DONE) | (state == CoreState.FAILED)
        not_running = blocked_mask | done_mask
        if unstarted:
            not_running[list(unstarted)] = True
        running = [int(c) for c in np.flatnonzero(~not_running)]
        # Someone must be waiting on the running cores, or have finished: cores that all run are
        # left alone (long work is not a hang; the launch timeout bounds it).
        if running and len(running) == len(state):
            self._stall_key = None
            return None
        key = st[:, [ST_STATE, ST_PROGRESS, ST_CALLS]].tobytes()
        if key != self._stall_key:
            self._stall_key, self._stall_since, self._stall_cpu = key, now, None
            return None
        if self._stall_cpu is None:
            self._stall_cpu, self._stall_cpu_at = {c: self._cpu(c) for c in running}, now
        if now - self._stall_since < self._grace:
            return None
        blocked = [int(c) for c in np.flatnonzero(blocked_mask)]
        # A core stopped (SIGSTOP, e.g. stress chaos) or preempted right after its wait returned
        # still shows as blocked: only cores the OS also shows asleep count.
        if any(self._asleep(c) is False for c in blocked):
            return None
        # A running core that made no API call all this time counts as spinning only if it used
        # the CPU meanwhile: a stopped or starved core is not stuck, and one asleep outside the
        # kernel API is left to the launch timeout (which says where it is).
        quiet = now - self._stall_since
        cpu0 = self._stall_cpu
        if any(self._cpu(c) - cpu0.get(c, 0.0) < SPIN_CPU_SHARE * (now - self._stall_cpu_at) for c in running):
            return None
        waits = [self._blocked_text(st, state, c) for c in blocked]
        if not running:
            return DeadlockError(
                f"deadlock: every running core has been blocked for {self._grace:g} s ({summarize_waits(waits)})"
                f"{self._unstarted_text(unstarted)}",
                waits=waits,
            )
        spinning = []
        said = self._ask_where(running)
        for c in running:
            where = said[c]
            if where.startswith(IN_CALL):  # inside one long kernel API call: busy, not spinning
                self._stall_key = None
                return None
            spinning.append(self._running_text(c, where, round(quiet, 1)))
        if self._sync.status_view()[:, [ST_STATE, ST_PROGRESS, ST_CALLS]].tobytes() != self._stall_key:
            self._stall_key = None  # it moved while we asked: not stuck after all
            return None
        others = f"; {summarize_waits(waits)}" if waits else (
            "; every other core has finished the kernel")
        return DeadlockError(
            f"hang: {'; '.join(spinning)}{others}",
            waits=waits, spinning=[self._topo.core(c).label for c in running], spins=spinning,
        )

    def describe_stuck(self, pending: Sequence[int], unstarted: Sequence[int] = ()) -> str:
        """Who of ``pending`` is stuck where, as the launch timeout says it: blocked cores with the
        kernel line of their wait and whom they wait for, running ones with where they are
        (``unstarted``: cores of blocks still waiting for a free core, said as such)."""
        st = self._sync.status_view().copy()
        state = st[:, ST_STATE]
        waiting = set(unstarted)
        started = [c for c in pending if c not in waiting]
        said = self._ask_where([c for c in started if int(state[c]) not in self._BLOCKED], 0.5)
        text = "; ".join(self._blocked_text(st, state, c) if c not in said else self._running_text(c, said[c], None)
                         for c in started)
        tail = self._unstarted_text(unstarted)
        return f"{text}{tail}" if text else tail[2:]

    def _unstarted_text(self, unstarted: Sequence[int]) -> str:
        """"; blocks 48..49 not started: ..." for the cores of a wide launch's waiting blocks."""
        if not unstarted:
            return ""
        blocks = sorted({self._topo.core(c).ai_core for c in unstarted})
        which = f"block {blocks[0]}" if len(blocks) == 1 else (
            f"blocks {blocks[0]}..{blocks[-1]}" if blocks[-1] - blocks[0] + 1 == len(blocks)
            else "blocks " + ", ".join(map(str, blocks)))
        return (f"; {which} not started: in a launch wider than the device's cores a block starts only "
                "when a started block ends")


__all__ = ["Watchdog"]


def summarize_waits(waits: Sequence[str], groups: int = 6) -> str:
    """The blocked cores' lines of a report, one per place: the cores of one kind blocked in the same
    wait at the same line are said once, by the first of them, with how many more ("aiv1 in SyncAll
    #5 at k.h:151, waiting for aiv0, and 38 more vector cores there"), so that a wide launch's report
    shows every place a core is stuck (before, the first six cores only, often all of one place);
    at most ``groups`` places, then "...". Up to ``groups`` cores are each said in full.
    ``waits``: :meth:`Watchdog._blocked_text`'s lines."""
    if len(waits) <= groups:
        return "; ".join(waits)
    order: list[tuple[str, str]] = []
    members: dict[tuple[str, str], list[str]] = {}
    for text in waits:
        core, _, rest = text.partition(" in ")
        key = (core.rstrip("0123456789"), rest.split(", waiting for ")[0])
        if key not in members:
            order.append(key)
            members[key] = []
        members[key].append(text)
    said = []
    for key in order[:groups]:
        first, more = members[key][0], len(members[key]) - 1
        kind = {"aic": "cube ", "aiv": "vector "}.get(key[0], "")
        said.append(first + (f", and {more} more {kind}core{'s' if more != 1 else ''} there" if more else ""))
    return "; ".join(said) + ("; ..." if len(order) > groups else "")
