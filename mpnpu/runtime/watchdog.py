"""The launch watchdog: names a SyncAll or flag wait that can never end, within milliseconds.

The parent never joins a barrier or waits on a flag itself; it reads the status board that each
core writes (state, SyncAll counts, what it waits for) and the OS's view of each core process.
Three checks, cheapest first:

- a SyncAll some party can no longer reach (it finished the kernel with fewer SyncAll calls);
- a flag wait whose missing senders have all finished (or that needs the waiter's own set),
  seen on two consecutive checks;
- a stall: every unfinished core blocked, nothing progressing for ``stall_grace_s``.

Each check confirms with the OS that the waiting core is asleep before it reports, because the
board can lag a core by one step. docs/device-model.md ("Watchdog") explains why that is enough.
"""

from __future__ import annotations

from multiprocessing.process import BaseProcess
from typing import Sequence

import numpy as np

from mpnpu.errors import DeadlockError, LaunchError, SyncAllNotReachedError

from .procutil import process_asleep
from .sync import (
    ST_PROGRESS,
    ST_STATE,
    ST_SYNC_AIV,
    ST_SYNC_ALL,
    ST_WAIT_ID,
    ST_WAIT_MODE,
    ST_WAIT_TAKEN,
    CoreState,
    SyncObjects,
)
from .topology import Topology


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

    def check(self, now: float) -> LaunchError | None:
        """The error that describes a wait that can never end, or None while none is certain.

        ``now`` is ``time.monotonic()``; a stall must last ``stall_grace_s`` between checks.
        """
        st = self._sync.status_view().copy()
        state = st[:, ST_STATE]
        if not np.isin(state, self._BLOCKED).any():
            self._stall_key = None
            return None
        return (self._unreachable_sync_all(st, state) or self._unsatisfiable_flag(st, state)
                or self._stall(st, state, now))

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
                return SyncAllNotReachedError(
                    f"{what} #{k} can never complete: {self._topo.core(p).label} finished the kernel after "
                    f"{n_done} {what} call{'s' if n_done != 1 else ''}, while {waiting.size} core"
                    f"{'s' if waiting.size != 1 else ''} wait in it",
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
                f"{label} waits on {shown} that {why}",
                waiter=label, flag_id=flag_id, mode=mode,
                missing=[self._topo.core(s).label for s in missing],
            )
        self._flag_suspects = suspects
        return found

    def _stall(self, st: np.ndarray, state: np.ndarray, now: float) -> LaunchError | None:
        settled = np.isin(state, self._BLOCKED) | (state == CoreState.DONE)
        if not settled.all():
            self._stall_key = None
            return None
        key = st[:, ST_PROGRESS].tobytes()
        if key != self._stall_key:
            self._stall_key, self._stall_since = key, now
            return None
        if now - self._stall_since < self._grace:
            return None
        blocked = [int(c) for c in np.flatnonzero(np.isin(state, self._BLOCKED))]
        # A core stopped (SIGSTOP, e.g. stress chaos) or preempted right after its wait returned
        # still shows as blocked: only cores the OS also shows asleep count.
        if any(self._asleep(c) is False for c in blocked):
            return None
        waits = []
        for c in blocked:
            c = int(c)
            s = state[c]
            if s == CoreState.IN_FLAG_WAIT:
                m = int(st[c, ST_WAIT_MODE])
                what = f"flag {int(st[c, ST_WAIT_ID])}" + (f" (mode {m})" if m >= 0 else "")
            elif s == CoreState.IN_SYNC_AIV:
                what = f"SyncAll (vector cores only) #{int(st[c, ST_SYNC_AIV])}"
            else:
                what = f"SyncAll #{int(st[c, ST_SYNC_ALL])}"
            waits.append(f"{self._topo.core(c).short} in {what}")
        return DeadlockError(
            f"deadlock: every running core has been blocked for {self._grace:g} s ({'; '.join(waits[:6])}"
            f"{'; ...' if len(waits) > 6 else ''})",
            waits=waits,
        )


__all__ = ["Watchdog"]
