"""The pipes inside one core: asynchronous MTE1 / MTE2 / MTE3 / FIX, each in order, all at once.

On the chip an AI core's scalar unit issues every instruction to a pipe; each pipe executes its
instructions in order, and the pipes run concurrently. mpnpu models that inside each core process:

=========  ==================================  =================================================
pipe       what runs on it                     how mpnpu runs it
=========  ==================================  =================================================
MTE2       ``data_copy`` GM -> UB / L1          its own thread, in issue order
MTE3       ``data_copy`` UB / L1 -> GM          its own thread, in issue order
MTE1       ``load_data`` L1 -> L0A / L0B        its own thread, in issue order
FIX        ``fixpipe`` L0C -> GM                its own thread, in issue order
S          scalar code, the kernel function     the kernel's own thread (the issuer)
V          vector compute (numpy, ``cast``...)  inline on the kernel thread
M          ``mmad``                             inline on the kernel thread
=========  ==================================  =================================================

Vector and cube compute stay inline: a kernel computes with numpy expressions, which cannot be
handed to another thread instruction by instruction. So V and M run in program order with the
scalar unit: a V or M instruction has finished when the next kernel line runs. What that can
reproduce: every hazard where a *data-movement* pipe is late — a vector read of a buffer MTE2 has
not filled yet (missing MTE2_V), a refill of a buffer MTE3 has not copied out yet (missing
MTE3_MTE2), a vector write into a buffer MTE3 is still copying out (missing MTE3_V), a cross-core
flag raised before the copy it announces landed. What it cannot: hazards where V or M is late
(missing V_MTE3, V_MTE2, M_FIX, M_MTE1): the data-movement instruction is only issued after the
inline compute returned. The race detector (:mod:`mpnpu.racecheck.intracore`) still treats V and
M as asynchronous pipes, so it reports those too.

Flags. ``set_flag<X_Y>(id)`` is issued to pipe X and raises event (X_Y, id) when X reaches it;
``wait_flag<X_Y>(id)`` is issued to pipe Y, which stops there until the event is raised, then
consumes it. Events count (two sets before a wait let two waits pass). A wait that no set can
ever satisfy — nothing raised, no set queued on any pipe, and the scalar unit (the only issuer)
blocked — is an error at once, not a hang. ``barrier(pipe)`` makes the scalar unit wait until
every instruction issued to that pipe (PIPE_ALL: to every pipe) has completed.

A synchronous engine (``asynchronous=False``) runs every instruction at issue, in program order:
the behaviour of a CPU twin debugger, faster, and blind to intra-core races. Traces record the
pipe of every instruction either way, so race detection analyses them as asynchronous.
"""

from __future__ import annotations

import collections
import enum
import threading
import time
from typing import Callable

from mpnpu.errors import KernelAPIError, SyncTimeoutError


class Pipe(enum.Enum):
    """Hardware pipes of an AI core (Ascend C's ``PIPE_*``)."""

    ALL = "PIPE_ALL"
    S = "PIPE_S"
    V = "PIPE_V"
    M = "PIPE_M"
    MTE1 = "PIPE_MTE1"
    MTE2 = "PIPE_MTE2"
    MTE3 = "PIPE_MTE3"
    FIX = "PIPE_FIX"

    @property
    def short(self) -> str:
        return self.value[5:]


#: Pipes with their own thread inside a core process (the rest run inline on the kernel thread).
ASYNC_PIPES = (Pipe.MTE2, Pipe.MTE3, Pipe.MTE1, Pipe.FIX)
#: Pipes the race detector models (every pipe but PIPE_ALL), in a fixed order.
ANALYSED_PIPES = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX)

_BY_SHORT = {p.short: p for p in Pipe}


class HardEvent(enum.Enum):
    """Ascend C's ``HardEvent``: ``SRC_DST`` means pipe DST waits for pipe SRC."""

    MTE2_MTE1 = "MTE2_MTE1"
    MTE1_MTE2 = "MTE1_MTE2"
    MTE1_M = "MTE1_M"
    M_MTE1 = "M_MTE1"
    MTE2_V = "MTE2_V"
    V_MTE2 = "V_MTE2"
    MTE3_V = "MTE3_V"
    V_MTE3 = "V_MTE3"
    M_V = "M_V"
    V_M = "V_M"
    V_V = "V_V"
    MTE3_MTE1 = "MTE3_MTE1"
    MTE1_MTE3 = "MTE1_MTE3"
    MTE1_V = "MTE1_V"
    MTE2_M = "MTE2_M"
    M_MTE2 = "M_MTE2"
    V_MTE1 = "V_MTE1"
    M_FIX = "M_FIX"
    FIX_M = "FIX_M"
    MTE3_MTE2 = "MTE3_MTE2"
    MTE2_MTE3 = "MTE2_MTE3"
    S_V = "S_V"
    V_S = "V_S"
    S_MTE2 = "S_MTE2"
    MTE2_S = "MTE2_S"
    S_MTE3 = "S_MTE3"
    MTE3_S = "MTE3_S"
    MTE2_FIX = "MTE2_FIX"
    FIX_MTE2 = "FIX_MTE2"
    FIX_S = "FIX_S"
    M_S = "M_S"
    FIX_MTE3 = "FIX_MTE3"

    @property
    def src(self) -> Pipe:
        return _BY_SHORT[self.value.split("_")[0]]

    @property
    def dst(self) -> Pipe:
        return _BY_SHORT[self.value.split("_")[1]]


#: Event ids per HardEvent on an Atlas A2 class chip: 0..7.
EVENT_IDS = 8


def check_event(event: object, event_id: object) -> HardEvent:
    """Validate a (HardEvent, id) pair as the chip does; return the event."""
    if isinstance(event, str):
        try:
            event = HardEvent[event]
        except KeyError:
            raise KernelAPIError(f"unknown HardEvent {event!r}") from None
    if not isinstance(event, HardEvent):
        raise KernelAPIError(f"event must be a HardEvent, got {event!r}")
    if isinstance(event_id, bool) or not isinstance(event_id, int) or not 0 <= event_id < EVENT_IDS:
        raise KernelAPIError(
            f"{event.name}: event id must be an int in 0..{EVENT_IDS - 1} (the chip's event ids), got {event_id!r}"
        )
    return event


class EventIdPool:
    """``TPipe::AllocEventID`` / ``ReleaseEventID`` / ``FetchEventID``: ids 0..7 per HardEvent."""

    def __init__(self) -> None:
        self._taken: dict[HardEvent, set[int]] = collections.defaultdict(set)

    def alloc(self, event: HardEvent) -> int:
        taken = self._taken[event]
        for i in range(EVENT_IDS):
            if i not in taken:
                taken.add(i)
                return i
        raise KernelAPIError(
            f"AllocEventID<{event.name}>: all {EVENT_IDS} event ids are in use (release one with "
            "release_event_id; every TQue buffer holds one id per direction)"
        )

    def release(self, event: HardEvent, event_id: int) -> None:
        if event_id not in self._taken[event]:
            raise KernelAPIError(f"ReleaseEventID<{event.name}>({event_id}): that id is not allocated")
        self._taken[event].discard(event_id)

    def fetch(self, event: HardEvent) -> int:
        """The lowest id not allocated, without reserving it."""
        taken = self._taken[event]
        for i in range(EVENT_IDS):
            if i not in taken:
                return i
        raise KernelAPIError(f"FetchEventID<{event.name}>: all {EVENT_IDS} event ids are allocated")

    def reset(self) -> None:
        self._taken.clear()


# One queued instruction: (kind, payload, where) with kind "run" (payload: callable), "set" or
# "wait" (payload: (event, id)); ``where`` is the issuing kernel line, for error messages.
_Op = tuple


class PipeEngine:
    """The asynchronous pipes of one core process. Only the kernel thread issues; one thread per pipe executes."""

    def __init__(self, label: str, timeout_s: float) -> None:
        self.label = label
        self.timeout_s = timeout_s
        self.asynchronous = False
        self._cv = threading.Condition(threading.Lock())
        self._queues: dict[Pipe, collections.deque] = {p: collections.deque() for p in ASYNC_PIPES}
        self._threads: dict[Pipe, threading.Thread] = {}
        self._flags: collections.Counter = collections.Counter()  # (event, id) -> raised, not consumed
        self._queued_sets: collections.Counter = collections.Counter()  # (event, id) -> sets still queued
        self._error: BaseException | None = None
        self._running = 0  # instructions executing right now (outside the lock)
        self._signals = 0  # cross-core flag sets still queued on a pipe
        self._generation = 0  # bumped by reset: a pipe thread drops ops of an abandoned launch

    # -- launch life cycle ----------------------------------------------------------------------

    def reset(self, asynchronous: bool) -> None:
        """Start a launch: no events raised, nothing queued, no error."""
        with self._cv:
            for q in self._queues.values():
                q.clear()
            self._flags.clear()
            self._queued_sets.clear()
            self._signals = 0
            self._error = None
            self._generation += 1
            self.asynchronous = asynchronous
            self._cv.notify_all()

    def finish(self) -> None:
        """End of the kernel function: wait for every pipe to drain (the launch ends when they do)."""
        self.barrier(Pipe.ALL, "end of kernel")

    def abort(self) -> None:
        """The kernel raised: drop whatever is still queued, and let what is executing finish.

        An instruction half-way through a copy must not land in the next launch's memory.
        """
        self.reset(self.asynchronous)
        deadline = time.monotonic() + self.timeout_s
        with self._cv:
            while self._running and time.monotonic() < deadline:
                self._cv.wait(0.05)

    # -- issuing --------------------------------------------------------------------------------

    def run(self, pipe: Pipe, fn: Callable[[], None], where: str = "") -> None:
        """Issue ``fn`` to ``pipe``: run now if the pipe is inline or the engine synchronous."""
        if not self.asynchronous or pipe not in self._queues:
            fn()
            return
        self._issue(pipe, ("run", fn, where))

    def signal(self, pipe: Pipe, fn: Callable[[], None], where: str = "") -> None:
        """Issue a cross-core flag set to ``pipe``: it fires once what was issued before it completed."""
        if not self.asynchronous or pipe not in self._queues:
            fn()
            return
        with self._cv:
            self._signals += 1
        self._issue(pipe, ("signal", fn, where))

    def flush_signals(self, where: str = "") -> None:
        """Wait until every queued cross-core set has fired.

        Called before a cross-core wait: the device's watchdog reads a core blocked in a wait with
        its own set still unsent as a deadlock (modes 0 and 1 need the waiter's own set).
        """
        if not self.asynchronous:
            return
        deadline = time.monotonic() + self.timeout_s
        with self._cv:
            while self._signals:
                self._check_error()
                self._check_stuck(where)
                self._timed_wait(deadline, f"cross-core flag sets issued before {where or '?'}")

    def set_flag(self, event: HardEvent, event_id: int, where: str = "") -> None:
        """Raise (event, id) when ``event.src`` reaches this point."""
        key = (event, event_id)
        src = event.src
        if not self.asynchronous or src not in self._queues:
            with self._cv:
                self._check_error()
                self._flags[key] += 1
                self._cv.notify_all()
            return
        with self._cv:
            self._queued_sets[key] += 1
        self._issue(src, ("set", key, where))

    def wait_flag(self, event: HardEvent, event_id: int, where: str = "") -> None:
        """Make ``event.dst`` wait here for (event, id), then consume it."""
        key = (event, event_id)
        dst = event.dst
        if self.asynchronous and dst in self._queues:
            self._issue(dst, ("wait", key, where))
            return
        # The destination runs on the kernel thread: block it (bounded, and never on a wait that
        # nothing can satisfy any more).
        deadline = time.monotonic() + self.timeout_s
        with self._cv:
            while True:
                self._check_error()
                if self._flags[key] > 0:
                    self._flags[key] -= 1
                    return
                if self._queued_sets[key] == 0:
                    raise KernelAPIError(self._unmatched(event, event_id, where, "the kernel thread"))
                self._timed_wait(deadline, f"wait_flag<{event.name}>({event_id}) at {where or '?'}")

    def barrier(self, pipe: Pipe, where: str = "") -> None:
        """PipeBarrier: the kernel thread waits until everything issued to ``pipe`` has completed."""
        if not self.asynchronous:
            self._check_error_locked()
            return
        queues = list(self._queues.values()) if pipe is Pipe.ALL else (
            [self._queues[pipe]] if pipe in self._queues else [])
        deadline = time.monotonic() + self.timeout_s
        with self._cv:
            while True:
                self._check_error()
                if not any(queues):
                    return
                self._check_stuck(where)
                self._timed_wait(deadline, f"pipe_barrier({pipe.value}) at {where or '?'}")

    def idle(self) -> bool:
        """Whether nothing is queued on any pipe."""
        with self._cv:
            return not any(self._queues.values())

    # -- inside -----------------------------------------------------------------------------------

    def _issue(self, pipe: Pipe, op: _Op) -> None:
        with self._cv:
            self._check_error()
            self._queues[pipe].append(op)
            self._cv.notify_all()
        if pipe not in self._threads:
            t = threading.Thread(target=self._serve, args=(pipe,), name=f"{pipe.value} of {self.label}", daemon=True)
            self._threads[pipe] = t
            t.start()

    def _serve(self, pipe: Pipe) -> None:
        """The pipe's thread: execute its queue in order, forever (a daemon of the core process)."""
        q = self._queues[pipe]
        cv = self._cv
        while True:
            with cv:
                while not q:
                    cv.wait()
                op = q[0]
                generation = self._generation
                kind, payload, _ = op
                if kind == "wait":
                    while self._flags[payload] == 0 and self._generation == generation and self._error is None:
                        cv.wait()
                    if self._generation != generation or self._error is not None:
                        continue  # abandoned: reset cleared the queue, or the launch failed
                    self._flags[payload] -= 1
                elif kind == "set":
                    self._flags[payload] += 1
                    self._queued_sets[payload] -= 1
                else:
                    self._running += 1
            if kind == "run" or kind == "signal":
                try:
                    payload()
                except BaseException as e:  # noqa: BLE001 - reported to the kernel thread
                    with cv:
                        self._running -= 1
                        if self._generation == generation and self._error is None:
                            self._error = e
                        for other in self._queues.values():
                            other.clear()
                        cv.notify_all()
                    continue
            with cv:
                if kind == "run" or kind == "signal":
                    self._running -= 1
                    if kind == "signal" and self._generation == generation:
                        self._signals -= 1
                # Completed: leave the queue (unless a reset already emptied it meanwhile).
                if self._generation == generation and q and q[0] is op:
                    q.popleft()
                cv.notify_all()

    def _check_error(self) -> None:
        """Raise a pipe's failure on the kernel thread (call with the lock held)."""
        e = self._error
        if e is not None:
            self._error = None
            raise e

    def _check_error_locked(self) -> None:
        with self._cv:
            self._check_error()

    def _timed_wait(self, deadline: float, what: str) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SyncTimeoutError(f"{self.label}: {what} still waiting after {self.timeout_s:g} s")
        self._cv.wait(min(left, 1.0))

    def _check_stuck(self, where: str) -> None:
        """The kernel thread is blocked: a pipe stopped at a wait no queued set can satisfy never moves."""
        for pipe, q in self._queues.items():
            if q and q[0][0] == "wait":
                key = q[0][1]
                if self._flags[key] == 0 and self._queued_sets[key] == 0:
                    event, event_id = key
                    raise KernelAPIError(self._unmatched(event, event_id, q[0][2], pipe.value)
                                         + (f" (found at {where})" if where else ""))

    def _unmatched(self, event: HardEvent, event_id: int, where: str, waiter: str) -> str:
        return (
            f"{self.label}: wait_flag<{event.name}>({event_id}) at {where or '?'} has no matching "
            f"set_flag<{event.name}>({event_id}) before it: {waiter} would wait forever (a hang on the device)"
        )
