"""Cross-core sync objects shared by the core processes of one pool, and the status board.

Created by the parent *before* it forks the pool and inherited by every core; the parent itself
never waits on a barrier or a flag (a parent caught inside ``Barrier.wait`` by a signal can corrupt
the barrier). After any failed launch the pool and all of these objects are thrown away and built
anew, because a core killed inside ``Barrier.wait`` wedges that barrier for good. docs/device-model.md
("Sync objects", "Process model") explains both.

- SyncAll: one ``multiprocessing.Barrier`` over all cores, one over the vector cores.
- Cross-core flags: one counter per (mode, id, receiver, sender). A set by sender s increments its
  counter at every receiver the mode routes to (``Topology.flag_receivers``); a wait by receiver r
  returns once r's counter from every sender it needs is positive (``Topology.flag_senders``) and
  decrements them. Keeping one counter per sender is what makes "both vector cores must set
  before the cube's wait returns" exact even when one vector core sets twice before the other
  sets once. Modes 1 and 2 keep each counter in a semaphore; mode 0 (see below) in shared memory.
- Atomic add: one lock; an atomic DataCopy does its read-modify-write under it.
- Status board: one row per core (state, SyncAll counts, what it waits for), written by the core,
  read by the parent's watchdog to name a deadlock instead of waiting for a timeout.
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import functools
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from typing import Any, Callable, Iterable, Union

import numpy as np

from mpnpu.errors import FlagOverflowError, SyncTimeoutError

from .hold import HoldBoard
from .kcontext import call_site_and_function
from .procutil import sem_handle
from .replies import ReplyBoard
from .spin import spin_until
from .topology import FLAG_COUNTER_MAX, FLAG_IDS, Topology
from .trace_board import TraceBoard

USABLE_FLAG_IDS = tuple(range(FLAG_IDS))

#: the kernel line of a blocking call, a function that finds it (called only if the call blocks),
#: or None: the innermost kernel frame on the stack (mpnpu.runtime.kcontext.call_site_and_function)
SiteText = Union[str, Callable[[], str], None]


def resolve_site(site: SiteText) -> str:
    """The kernel line ``site`` stands for (see SiteText)."""
    if site is None:
        where, _ = call_site_and_function()
        return where if where != "?" else ""
    return site() if callable(site) else site


class CoreState(enum.IntEnum):
    """What a core is doing, in its status board row's ST_STATE column."""

    IDLE = 0
    RUNNING = 1
    IN_SYNC_ALL = 2
    IN_SYNC_AIV = 3
    IN_FLAG_WAIT = 4
    DONE = 5
    FAILED = 6


#: ST_WAIT_MODE of a core in IN_FLAG_WAIT on a flag kept in a GM word (IBWait, WaitPreBlock of a C++
#: kernel), not on a cross-core flag; ST_WAIT_ID is then the word's byte offset in its GM tensor. Any
#: core may set such a word, so a wait on it is hopeless only when no core can run any more.
GM_FLAG_MODE = 3

# plain ints for the hot paths (ctypes converts an IntEnum more slowly)
_RUNNING, _IN_SYNC_ALL, _IN_SYNC_AIV, _IN_FLAG_WAIT = (
    int(CoreState.RUNNING), int(CoreState.IN_SYNC_ALL), int(CoreState.IN_SYNC_AIV), int(CoreState.IN_FLAG_WAIT))

# status board columns; ST_WAIT_TAKEN: how many of the wait's senders (in flag_senders order) it
# has already taken a set from, so the watchdog does not count those as missing. ST_CALLS: the
# core's kernel API calls so far in the launch (one store per call), the progress signal that tells
# a core doing work from one spinning (docs/device-model.md, "Watchdog").
ST_STATE, ST_SYNC_ALL, ST_SYNC_AIV, ST_WAIT_MODE, ST_WAIT_ID, ST_PROGRESS, ST_WAIT_TAKEN, ST_CALLS = range(8)
ST_COLUMNS = 8  # (how many: found with the columns by mpnpu.ascendc.native.contract)
#: bytes of each core's last-words line
LAST_WORDS_BYTES = 640  # (room for the last call, the fault address and the code address)
#: bytes of each core's "where" line: the kernel line of the wait it blocks in, or of the spot it
#: was at when the watchdog asked (WHERE_SIGNAL)
WHERE_BYTES = 256
#: the signal the watchdog sends a core that makes no progress, to learn where it is: the core
#: writes its kernel line to its "where" line (a Python kernel: the line it runs; a C++ kernel: the
#: line of its last API call) and carries on
WHERE_SIGNAL = signal.SIGUSR2
#: how a C++ kernel's answer to WHERE_SIGNAL starts: "last call: kernel.cpp:40 (func)", or this
#: alone when it has made no API call yet (its library writes them: mpnpu/native/bridge_core.h)
LAST_CALL = "last call: "
NO_CALL_YET = "no call yet"


class SyncObjects:
    """Everything the cores of one pool share besides GM. Picklable only by fork inheritance."""

    def __init__(self, ctx: BaseContext, topology: Topology) -> None:
        n = topology.n_cores
        self.topology = topology
        self.barrier_all = ctx.Barrier(n)
        # (a cube-only launch has no vector cores; its cores cannot call SyncAll<true>)
        self.barrier_aiv = ctx.Barrier(max(1, topology.n_vector))
        # Modes 1 and 2: one semaphore per (mode, id, receiver, sender) route; its value is the
        # counter, so a wait costs what a bare Semaphore costs.
        self._flag_sems = {
            (mode, flag_id, receiver, sender): ctx.Semaphore(0)
            for mode in ((1, 2) if topology.mixed else ())
            for flag_id in USABLE_FLAG_IDS
            for receiver in topology.all_ids
            if mode == 2 or receiver in topology.vector_ids
            for sender in topology.flag_senders(mode, receiver)
        }
        self._mode0_counts = ctx.RawArray(ctypes.c_int32, FLAG_IDS * n * n)
        self._mode0_locks = [ctx.Lock() for _ in range(n)]
        self._mode0_wakes = [ctx.Semaphore(0) for _ in range(n)]
        self.atomic_lock = ctx.Lock()
        # The mode of the last set routed to each (receiver, flag id) in this launch (mode + 1; 0: none
        # yet), for waits that name no mode (a C++ kernel's CrossCoreWaitFlag: on the chip a wait
        # consumes its setters' sets, in whichever mode they were made).
        self._flag_modes = ctx.RawArray(ctypes.c_int8, n * FLAG_IDS)
        # Per receiver: released when a set makes one of its _flag_modes cells known (0 -> a mode), so
        # that a wait that names no mode sleeps until then instead of polling. At most one token per
        # (receiver, id) and launch; tokens for another id only make the waiter look again.
        self._mode_wakes = [ctx.Semaphore(0) for _ in range(n)]
        self._status = ctx.RawArray(ctypes.c_int64, n * ST_COLUMNS)
        self._status_np: np.ndarray = np.frombuffer(self._status, dtype=np.int64).reshape(  # type: ignore[call-overload]
            n, ST_COLUMNS)
        self._status_bytes = ctypes.sizeof(self._status)
        self._mode0_bytes = ctypes.sizeof(self._mode0_counts)
        self._n = n
        self.hold_board = HoldBoard(ctx, n)  # race-directed launches (mpnpu.runtime.hold)
        self.replies = ReplyBoard(ctx, n)  # finished cores' replies: one wake of the parent per launch
        self.traces = TraceBoard(n)  # traced launches' events, off the pipes (mpnpu.runtime.trace_board)
        # One line per core that a core process may leave for the parent before it dies (a compiled
        # kernel's fault handler writes the kernel line it was at); read when the core has died.
        self.last_words = ctx.RawArray(ctypes.c_char, n * LAST_WORDS_BYTES)
        # One line per core: the kernel line of the wait it blocks in (written as it blocks), or
        # where it was when the watchdog asked (WHERE_SIGNAL); read by the watchdog to name it.
        self.where = ctx.RawArray(ctypes.c_char, n * WHERE_BYTES)

    # -- status board ------------------------------------------------------------------------

    def calls_cell(self, core_id: int) -> memoryview:
        """Core ``core_id``'s ST_CALLS cell of the status board, as a one-item int64 view."""
        at = (core_id * ST_COLUMNS + ST_CALLS) * 8
        return memoryview(self._status).cast("B")[at:at + 8].cast("q")

    def status_view(self) -> np.ndarray:
        """The live status board as an (n_cores, ST_COLUMNS) int64 array (no copy)."""
        return self._status_np

    def reset_for_launch(self, mode0_used: bool = True, flags_used: bool = True) -> None:
        """Parent, between launches (all cores idle): clear the status board, the mode-0 flag
        counters if the last launch set any mode-0 flag (they are large at high block_dim), and the
        flags' known modes and mode-less waits' wakes if it set any flag (only a set writes them).

        On every launch's path: after a launch that set no flag (any kernel without cross-core flags)
        this skips a semaphore per core."""
        if mode0_used:
            ctypes.memset(self._mode0_counts, 0, self._mode0_bytes)
        ctypes.memset(self._status, 0, self._status_bytes)
        ctypes.memset(self.where, 0, ctypes.sizeof(self.where))  # (no line of the last launch's waits)
        self.replies.reset()
        if flags_used:
            ctypes.memset(self._flag_modes, 0, ctypes.sizeof(self._flag_modes))
            for wake in self._mode_wakes:
                while wake.acquire(False):
                    pass

    def last_words_address(self, core_id: int) -> int:
        """Where core ``core_id`` may write its last line (LAST_WORDS_BYTES, NUL-terminated)."""
        return ctypes.addressof(self.last_words) + core_id * LAST_WORDS_BYTES

    def read_last_words(self, core_id: int) -> str:
        """The line core ``core_id`` left (empty if none); cleared once read."""
        raw = ctypes.string_at(self.last_words_address(core_id), LAST_WORDS_BYTES).split(b"\0", 1)[0]
        ctypes.memset(self.last_words_address(core_id), 0, LAST_WORDS_BYTES)
        return raw.decode(errors="replace").strip()

    def where_address(self, core_id: int) -> int:
        """Where core ``core_id`` writes its "where" line (WHERE_BYTES, NUL-terminated)."""
        return ctypes.addressof(self.where) + core_id * WHERE_BYTES

    def write_where(self, core_id: int, text: str) -> None:
        """Core ``core_id`` is at ``text`` (a kernel line, "dir/file.py:12 (kernel)")."""
        raw = text.encode(errors="replace")[:WHERE_BYTES - 1] + b"\0"
        ctypes.memmove(self.where_address(core_id), raw, len(raw))

    def read_where(self, core_id: int) -> str:
        """The "where" line of core ``core_id`` (empty if none)."""
        raw = ctypes.string_at(self.where_address(core_id), WHERE_BYTES).split(b"\0", 1)[0]
        return raw.decode(errors="replace").strip()

    def clear_where(self, core_id: int) -> None:
        ctypes.memset(self.where_address(core_id), 0, 1)

    def status_address(self) -> int:
        """Where the status board is in this process (ST_COLUMNS int64 per core)."""
        return ctypes.addressof(self._status)

    def set_state(self, core_id: int, state: CoreState) -> None:
        base = core_id * ST_COLUMNS
        self._status[base + ST_STATE] = int(state)
        self._status[base + ST_PROGRESS] += 1

    # -- the same objects, for a compiled kernel that drives them itself ---------------------

    def native_routes(self, core_id: int) -> NativeRoutes | None:
        """The addresses behind this core's SyncAll barriers, flag routes (modes 1 and 2) and status
        board, for a compiled kernel library to run the same protocol on the same objects without a
        call back per operation (mpnpu/ascendc/include/mpnpu/native_sync.h). None when these objects
        are not the ones that protocol is written for (another Python's multiprocessing)."""
        try:
            barriers = tuple(barrier_handles(b) for b in (self.barrier_all, self.barrier_aiv))
        except AttributeError:
            return None
        if not all(all(h) for h, _ in barriers) or not all(sem_handle(w) for w in self._mode_wakes):
            return None
        self._barrier_words = barriers  # (the words' ctypes views must outlive every launch)
        topo = self.topology
        flags: dict[tuple[int, int], tuple[tuple[tuple[int, int, int], ...], tuple[int, ...]]] = {}
        for mode in (1, 2) if topo.mixed else ():
            try:
                receivers = topo.flag_receivers(mode, core_id)
                senders = topo.flag_senders(mode, core_id)
            except ValueError:
                continue  # a mode this core may not use: its calls go through flag_port, which says so
            for flag_id in USABLE_FLAG_IDS:
                outgoing = tuple((r, sem_handle(self._flag_sems[(mode, flag_id, r, core_id)]),
                                  sem_handle(self._mode_wakes[r])) for r in receivers)
                incoming = tuple(sem_handle(self._flag_sems[(mode, flag_id, core_id, s)]) for s in senders)
                if all(sem for _, sem, _ in outgoing) and all(incoming):  # (else: through flag_port)
                    flags[(mode, flag_id)] = (outgoing, incoming)
        return NativeRoutes(
            status=self.status_address(), st_columns=ST_COLUMNS,
            flag_modes=ctypes.addressof(self._flag_modes), flag_counter_max=FLAG_COUNTER_MAX,
            barrier_all=barriers[0][0], barrier_aiv=barriers[1][0], flags=flags,
            mode_wake=sem_handle(self._mode_wakes[core_id]),
        )

    # -- SyncAll -----------------------------------------------------------------------------

    def sync_all(self, core_id: int, aiv_only: bool, timeout: float, site: str = "") -> int:
        """Block until every party arrives; return this core's SyncAll count (1-based). ``site``:
        the kernel line of the call, shown by the watchdog while this core waits."""
        if site:
            self.write_where(core_id, site)
        status = self._status
        base = core_id * ST_COLUMNS
        col = ST_SYNC_AIV if aiv_only else ST_SYNC_ALL
        count = status[base + col] + 1
        status[base + col] = count
        status[base + ST_STATE] = _IN_SYNC_AIV if aiv_only else _IN_SYNC_ALL
        status[base + ST_PROGRESS] += 1
        barrier = self.barrier_aiv if aiv_only else self.barrier_all
        try:
            barrier.wait(timeout)
        except threading.BrokenBarrierError:
            raise self.sync_all_timeout(aiv_only, count, timeout) from None
        status[base + ST_STATE] = _RUNNING
        status[base + ST_PROGRESS] += 1
        return count

    def not_arrived(self, aiv_only: bool, count: int) -> list[str]:
        """The parties of a SyncAll (#``count``) that have not reached it, as "label (what it is doing)",
        from the status board: the cores the others are waiting for."""
        status = self._status
        col = ST_SYNC_AIV if aiv_only else ST_SYNC_ALL
        parties = self.topology.vector_ids if aiv_only else self.topology.all_ids
        # (a core shows IDLE until its first sync of the launch: it is running all the same)
        doing = {int(CoreState.IDLE): "running, not at a sync", _RUNNING: "running, not at a sync",
                 _IN_SYNC_ALL: "in another SyncAll",
                 _IN_SYNC_AIV: "in a SyncAll<true>", _IN_FLAG_WAIT: "waiting on a cross-core flag",
                 int(CoreState.DONE): "finished the kernel"}
        out = []
        for c in parties:
            base = c * ST_COLUMNS
            if status[base + col] < count:
                what = doing.get(int(status[base + ST_STATE]), "failed")
                out.append(f"{self.topology.core(c).label} ({what})")
        return out

    def sync_all_timeout(self, aiv_only: bool, count: int, timeout: float) -> SyncTimeoutError:
        """The error of a SyncAll that did not complete (this core's ``count``-th), naming the cores
        that never reached it (not the core that gave up waiting for them)."""
        what = "SyncAll<aiv_only>" if aiv_only else "SyncAll"
        missing = self.not_arrived(aiv_only, count)
        who = (f": {', '.join(missing)} never arrived" if missing
               else " (a core never arrived, or the launch failed elsewhere)")
        return SyncTimeoutError(f"{what} #{count} did not complete within {timeout:g} s{who}",
                                sync="sync_all", count=count, missing=missing)

    # -- cross-core flags --------------------------------------------------------------------

    def flag_count(self, mode: int, flag_id: int, receiver: int, sender: int) -> int:
        """Current counter of (mode, id) at ``receiver`` for sets from ``sender``."""
        if mode == 0:
            return self._mode0_counts[self._mode0_index(flag_id, receiver, sender)]
        return self._flag_sems[(mode, flag_id, receiver, sender)].get_value()

    def flag_port(self, core_id: int, mode: int, flag_id: int, timeout: float) -> AnyFlagPort:
        """The semaphores one core sets and waits on for (mode, id), resolved once per core."""
        if mode == 0:
            return _Mode0Port(self, core_id, flag_id, timeout)
        topo = self.topology
        receivers = topo.flag_receivers(mode, core_id)
        senders = topo.flag_senders(mode, core_id)
        return FlagPort(
            self, core_id, mode, flag_id, timeout,
            tuple((r, self._flag_sems[(mode, flag_id, r, core_id)]) for r in receivers),
            tuple(self._flag_sems[(mode, flag_id, core_id, s)] for s in senders),
        )

    def clear_flags(self, touched: Iterable[tuple[int, int, int]]) -> None:
        """Parent, between launches: zero the counters that (sender, mode, id) sets may have left."""
        for sender, mode, flag_id in touched:
            if mode == 0:
                continue  # mode 0 counters are cleared wholesale in reset_for_launch
            for receiver in self.topology.flag_receivers(mode, sender):
                sem = self._flag_sems[(mode, flag_id, receiver, sender)]
                while sem.acquire(False):
                    pass

    def wait_mode(self, receiver: int, flag_id: int, timeout: float, site: SiteText = None) -> int:
        """The mode in which the sets a mode-less wait of ``receiver`` on ``flag_id`` will consume
        were made: known once a set of that id has been routed to it in this launch; until then the
        waiter sleeps until a set makes one of its cells known (shown on the status board as a flag
        wait in mode -1, unknown)."""
        index = receiver * FLAG_IDS + flag_id
        modes = self._flag_modes
        m = modes[index]
        if m:
            return m - 1
        self._mark_flag_wait(receiver, -1, flag_id, site)
        deadline = time.monotonic() + timeout
        wake = self._mode_wakes[receiver]
        while True:
            m = modes[index]
            if m:
                self.set_state(receiver, CoreState.RUNNING)
                return m - 1
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not wake.acquire(timeout=remaining):
                self.raise_flag_timeout(-1, flag_id, timeout)

    def mark_mode(self, receiver: int, flag_id: int, mode: int) -> None:
        """A set of (mode, id) was routed to ``receiver``: record its mode, and wake a mode-less
        waiter of ``receiver`` if this made the mode known."""
        cell = receiver * FLAG_IDS + flag_id
        known = self._flag_modes[cell]
        self._flag_modes[cell] = mode + 1
        if not known:
            self._mode_wakes[receiver].release()

    def _mark_flag_wait(self, receiver: int, mode: int, flag_id: int, site: SiteText = None) -> None:
        self.write_where(receiver, resolve_site(site))
        base = receiver * ST_COLUMNS
        self._status[base + ST_WAIT_MODE] = mode
        self._status[base + ST_WAIT_ID] = flag_id
        self._status[base + ST_WAIT_TAKEN] = 0  # mode 0 takes every sender's set at once
        self.set_state(receiver, CoreState.IN_FLAG_WAIT)

    def raise_overflow(self, mode: int, flag_id: int, receiver: int) -> None:
        recv = self.topology.core(receiver).label
        raise FlagOverflowError(
            f"flag {flag_id} (mode {mode}) overflows at {recv}: {FLAG_COUNTER_MAX} sets "
            f"not yet waited for (the counter holds 0..{FLAG_COUNTER_MAX})",
            mode=mode, flag_id=flag_id, receiver=receiver,
        )

    @staticmethod
    def raise_flag_timeout(mode: int, flag_id: int, timeout: float) -> None:
        if mode == GM_FLAG_MODE:
            raise SyncTimeoutError(
                f"a wait on the GM flag word at byte {flag_id} of its workspace (IBWait / WaitPreBlock) did not "
                f"return within {timeout:g} s", sync="flag_wait", mode=mode, flag_id=flag_id,
            )
        raise SyncTimeoutError(
            f"cross_core_wait_flag({flag_id}, mode={mode}) did not return within {timeout:g} s",
            sync="flag_wait", mode=mode, flag_id=flag_id,
        )

    # Mode 0 fans in from every core of a type (48 senders per receiver at block_dim 24), too many
    # pairs for one semaphore each; it keeps counters in shared memory under a per-receiver lock,
    # and a receiver sleeps on a semaphore that every set to it releases once.

    def _mode0_index(self, flag_id: int, receiver: int, sender: int) -> int:
        return (flag_id * self._n + receiver) * self._n + sender

    def _mode0_set(self, sender: int, flag_id: int, timeout: float) -> None:
        counts = self._mode0_counts
        for receiver in self.topology.flag_receivers(0, sender):
            self.mark_mode(receiver, flag_id, 0)
            lock = self._mode0_locks[receiver]
            if not lock.acquire(timeout=timeout):
                self.raise_flag_timeout(0, flag_id, timeout)
            try:
                i = self._mode0_index(flag_id, receiver, sender)
                if counts[i] >= FLAG_COUNTER_MAX:
                    self.raise_overflow(0, flag_id, receiver)
                counts[i] += 1
            finally:
                lock.release()
            self._mode0_wakes[receiver].release()

    def _mode0_wait(self, receiver: int, flag_id: int, timeout: float, site: SiteText = None) -> None:
        indices = [self._mode0_index(flag_id, receiver, s) for s in self.topology.flag_senders(0, receiver)]
        counts = self._mode0_counts
        lock = self._mode0_locks[receiver]
        deadline = time.monotonic() + timeout
        waiting = False
        while True:
            if not lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                break
            try:
                if all(counts[i] > 0 for i in indices):
                    for i in indices:
                        counts[i] -= 1
                    if waiting:
                        self.set_state(receiver, CoreState.RUNNING)
                    return
            finally:
                lock.release()
            if not waiting:
                waiting = True
                self._mark_flag_wait(receiver, 0, flag_id, site)
            # A wake-up meant for another flag id just loops back here: extra tokens are harmless.
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._mode0_wakes[receiver].acquire(timeout=remaining):
                break
        self.raise_flag_timeout(0, flag_id, timeout)

    # -- atomics -----------------------------------------------------------------------------

    def acquire_atomic(self, timeout: float) -> None:
        if not self.atomic_lock.acquire(timeout=timeout):
            raise SyncTimeoutError(f"atomic add: GM lock not acquired within {timeout:g} s")

    def release_atomic(self) -> None:
        self.atomic_lock.release()


@dataclass(frozen=True)
class NativeRoutes:
    """What :meth:`SyncObjects.native_routes` hands a compiled kernel: addresses valid in every core
    process (the objects were made before the fork). A barrier is (lock, sleeping, woken, wait
    semaphore, address of its [state, count] words, parties); a flag (mode, id) is ((receiver,
    semaphore, the receiver's mode wake) per receiver a set releases, the semaphore per sender a
    wait takes, in order); ``mode_wake``: the semaphore this core's mode-less waits sleep on."""

    status: int
    st_columns: int
    flag_modes: int
    flag_counter_max: int
    barrier_all: tuple[int, int, int, int, int, int]
    barrier_aiv: tuple[int, int, int, int, int, int]
    flags: dict[tuple[int, int], tuple[tuple[tuple[int, int, int], ...], tuple[int, ...]]]
    mode_wake: int

    def status_only(self) -> "NativeRoutes":
        """The same status board, with no barrier (parties 0) and no flag route: native code
        shows its waits on GM flag words there, and calls back for SyncAll and every flag."""
        return dataclasses.replace(self, barrier_all=(0,) * 6, barrier_aiv=(0,) * 6, flags={})


def barrier_handles(barrier: Any) -> tuple[tuple[int, int, int, int, int, int], Any]:
    """A multiprocessing Barrier's semaphores and shared words (CPython's threading.Barrier over a
    multiprocessing Condition: [state, count] in a shared int array), and the ctypes view of the
    words that keeps their address valid."""
    cond = barrier._cond
    words = (ctypes.c_int32 * 2).from_buffer(barrier._array)
    handles = (sem_handle(cond._lock), sem_handle(cond._sleeping_count), sem_handle(cond._woken_count),
               sem_handle(cond._wait_semaphore), ctypes.addressof(words), int(barrier._parties))
    return handles, words


class FlagPort:
    """One core's end of a cross-core flag (mode 1 or 2): what a set releases, what a wait takes.

    Resolved once per core and cached, so that a set or wait costs about what the bare
    semaphore operations cost. ``used`` tells the runtime which flags to clear after a launch.
    """

    def __init__(self, sync: SyncObjects, core_id: int, mode: int, flag_id: int, timeout: float,
                 outgoing: tuple[tuple[int, Any], ...], incoming: tuple[Any, ...]) -> None:
        self._sync = sync
        self._status = sync._status
        self._base = core_id * ST_COLUMNS
        self.mode = mode
        self.flag_id = flag_id
        self.used = False
        self._timeout = timeout
        self._outgoing = outgoing  # ((receiver, semaphore), ...)
        self._modes = sync._flag_modes
        # receivers' _flag_modes cells, and the semaphore that wakes a receiver's mode-less wait
        self._mode_cells = tuple((r * FLAG_IDS + flag_id, sync._mode_wakes[r]) for r, _ in outgoing)
        self._incoming = incoming  # (semaphore per sender, ...)

    def set(self) -> None:
        self.used = True
        modes, mark = self._modes, self.mode + 1
        for cell, wake in self._mode_cells:
            known = modes[cell]
            modes[cell] = mark
            if not known:
                wake.release()
        for receiver, sem in self._outgoing:
            # Only this core releases this semaphore, so checking before releasing is exact.
            if sem.get_value() >= FLAG_COUNTER_MAX:
                self._sync.raise_overflow(self.mode, self.flag_id, receiver)
            sem.release()

    def wait(self, spin_s: float = 0.0, site: SiteText = None) -> None:
        """Take one set from each sender, looking for up to ``spin_s`` before sleeping on each
        (mpnpu.runtime.spin: the core's budget, passed in so that it is never a stale copy).
        ``site``: the kernel line of the wait (or what finds it), looked up only if it blocks."""
        for sem in self._incoming:
            if sem.acquire(False):
                continue
            start = time.monotonic()
            if not spin_until(functools.partial(sem.acquire, False), min(spin_s, self._timeout)):
                # (the look counts against the timeout)
                self._block(sem, self._timeout - (time.monotonic() - start), site)

    def _block(self, sem: Any, timeout: float, site: SiteText = None) -> None:
        # Tell the parent's watchdog what we wait for, so that a wait no core can satisfy any
        # more is reported at once rather than at the timeout. The senders before ``sem`` have
        # had their sets taken already (their counters read 0 now): the board says so, or the
        # watchdog would take an own set already taken for one never made. ST_PROGRESS names
        # this blocking instance, so the watchdog can tell it from the next wait on the flag.
        # (Only the blocking path writes these: a flag round trip that does not block stays as
        # cheap as the bare semaphores.)
        self._sync.write_where(self._base // ST_COLUMNS, resolve_site(site))
        status, base = self._status, self._base
        status[base + ST_WAIT_MODE] = self.mode
        status[base + ST_WAIT_ID] = self.flag_id
        status[base + ST_WAIT_TAKEN] = self._incoming.index(sem)
        status[base + ST_PROGRESS] += 1
        status[base + ST_STATE] = _IN_FLAG_WAIT
        if not sem.acquire(timeout=max(0.0, timeout)):
            self._sync.raise_flag_timeout(self.mode, self.flag_id, self._timeout)
        status[base + ST_STATE] = _RUNNING


class _Mode0Port:
    """Mode 0 flag end: goes through the shared counters (see SyncObjects)."""

    def __init__(self, sync: SyncObjects, core_id: int, flag_id: int, timeout: float) -> None:
        self._sync = sync
        self._core_id = core_id
        self.mode = 0
        self.flag_id = flag_id
        self.used = False
        self._timeout = timeout

    def set(self) -> None:
        self.used = True
        self._sync._mode0_set(self._core_id, self.flag_id, self._timeout)

    def wait(self, spin_s: float = 0.0, site: SiteText = None) -> None:  # (mode 0: no look)
        self._sync._mode0_wait(self._core_id, self.flag_id, self._timeout, site)


#: One core's end of a cross-core flag, whatever its mode (both have set, wait, used, mode, flag_id).
AnyFlagPort = Union[FlagPort, _Mode0Port]
