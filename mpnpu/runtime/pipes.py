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


# One queued instruction: (kind, payload, where) with kind "run" / "signal" (payload: callable),
# "set" or "wait" (payload: (event, id)); ``where`` is the issuing kernel line, for error messages.
_Op = tuple
_DONE = ("done", None, "")  # _claim: a set or wait completed under the lock, nothing to execute


class PipeEngine:
    """The asynchronous pipes of one core process. Only the kernel thread issues; one thread per
    pipe executes.

    When the kernel thread blocks on a pipe (a wait for an event that pipe raises, a barrier), it
    executes that pipe's queued instructions itself, in order, instead of idling while the pipe's
    thread is scheduled: each pipe still executes in issue order, one instruction at a time, and
    the pipes still run concurrently with each other and with the kernel until it blocks.
    """

    def __init__(self, label: str, timeout_s: float) -> None:
        self.label = label
        self.timeout_s = timeout_s
        self.asynchronous = False
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)  # the kernel thread waits on this one
        self._pipe_cv = {p: threading.Condition(self._lock) for p in ASYNC_PIPES}
        self._queues: dict[Pipe, collections.deque] = {p: collections.deque() for p in ASYNC_PIPES}
        self._busy = {p: False for p in ASYNC_PIPES}  # an instruction of the pipe is executing
        self._threads: dict[Pipe, threading.Thread] = {}
        self._flags: collections.Counter = collections.Counter()  # (event, id) -> raised, not consumed
        self._queued_sets: collections.Counter = collections.Counter()  # (event, id) -> sets still queued
        self._error: BaseException | None = None
        self._running = 0  # instructions executing right now (outside the lock)
        self._signals = 0  # cross-core flag sets queued or executing
        self._generation = 0  # bumped by reset: results of an abandoned launch are dropped
        self._closed = False

    # -- launch life cycle ----------------------------------------------------------------------

    def reset(self, asynchronous: bool) -> None:
        """Start a launch: no events raised, nothing queued, no error."""
        with self._lock:
            for q in self._queues.values():
                q.clear()
            self._flags.clear()
            self._queued_sets.clear()
            self._signals = 0
            self._error = None
            self._generation += 1
            self.asynchronous = asynchronous
            self._wake_all()

    def finish(self) -> None:
        """End of the kernel function: wait for every pipe to drain (the launch ends when they do)."""
        self.barrier(Pipe.ALL, "end of kernel")

    def close(self, timeout: float = 5.0) -> None:
        """Stop the pipe threads (a core process never needs to: they are daemons that die with it;
        an engine made in a process that goes on, e.g. a test, should)."""
        with self._lock:
            self._closed = True
            self._wake_all()
        for t in self._threads.values():
            t.join(timeout)

    def abort(self) -> None:
        """The kernel raised: drop whatever is still queued, and let what is executing finish.

        An instruction half-way through a copy must not land in the next launch's memory.
        """
        self.reset(self.asynchronous)
        deadline = time.monotonic() + self.timeout_s
        with self._lock:
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
        with self._lock:
            self._signals += 1
        self._issue(pipe, ("signal", fn, where))

    def flush_signals(self, where: str = "") -> None:
        """Wait until every queued cross-core set has fired.

        Called before a cross-core wait: the device's watchdog reads a core blocked in a wait with
        its own set still unsent as a deadlock (modes 0 and 1 need the waiter's own set).
        """
        if not self.asynchronous:
            return
        self._block_until(lambda: not self._signals, ASYNC_PIPES, f"cross-core flag sets issued before {where or '?'}", where)

    def set_flag(self, event: HardEvent, event_id: int, where: str = "") -> None:
        """Raise (event, id) when ``event.src`` reaches this point."""
        key = (event, event_id)
        src = event.src
        if not self.asynchronous or src not in self._queues:
            with self._lock:
                self._check_error()
                self._flags[key] += 1
                self._wake_all()
            return
        with self._lock:
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
        # nothing can satisfy any more), executing the source pipe's instructions meanwhile.
        flags, queued = self._flags, self._queued_sets

        def raised() -> bool:
            if flags[key] > 0:
                return True
            if queued[key] == 0:
                raise KernelAPIError(self._unmatched(event, event_id, where, "the kernel thread"))
            return False

        self._block_until(raised, (event.src,) if event.src in self._queues else ASYNC_PIPES,
                          f"wait_flag<{event.name}>({event_id}) at {where or '?'}", where)
        with self._lock:
            flags[key] -= 1

    def barrier(self, pipe: Pipe, where: str = "") -> None:
        """PipeBarrier: the kernel thread waits until everything issued to ``pipe`` has completed."""
        if not self.asynchronous:
            with self._lock:
                self._check_error()
            return
        pipes = ASYNC_PIPES if pipe is Pipe.ALL else ((pipe,) if pipe in self._queues else ())
        queues = [self._queues[p] for p in pipes]
        self._block_until(lambda: not any(queues), pipes, f"pipe_barrier({pipe.value}) at {where or '?'}", where)

    def idle(self) -> bool:
        """Whether nothing is queued on any pipe."""
        with self._lock:
            return not any(self._queues.values())

    # -- inside -----------------------------------------------------------------------------------

    def _issue(self, pipe: Pipe, op: _Op) -> None:
        with self._lock:
            self._check_error()
            self._queues[pipe].append(op)
            self._pipe_cv[pipe].notify()
        if pipe not in self._threads:
            t = threading.Thread(target=self._serve, args=(pipe,), name=f"{pipe.value} of {self.label}", daemon=True)
            self._threads[pipe] = t
            t.start()

    def _wake_all(self) -> None:
        """Flags or queues changed: wake whoever may be waiting on them (lock held)."""
        self._cv.notify_all()
        for cv in self._pipe_cv.values():
            cv.notify()

    def _claim(self, pipe: Pipe) -> _Op | None:
        """Take the pipe's next instruction (lock held): None if it cannot proceed now, _DONE if it
        was a set or a satisfied wait (completed here), else a "run"/"signal" to execute."""
        q = self._queues[pipe]
        if not q or self._busy[pipe]:
            return None
        op = q[0]
        kind, payload, _ = op
        if kind == "wait":
            if self._flags[payload] == 0:
                return None
            self._flags[payload] -= 1
            q.popleft()
            self._cv.notify_all()
            return _DONE
        if kind == "set":
            self._flags[payload] += 1
            self._queued_sets[payload] -= 1
            q.popleft()
            self._wake_all()
            return _DONE
        self._busy[pipe] = True
        self._running += 1
        return op

    def _execute(self, pipe: Pipe, op: _Op) -> None:
        """Execute a claimed instruction with the lock released; retire it with the lock held."""
        generation = self._generation
        self._lock.release()
        error = None
        try:
            op[1]()
        except BaseException as e:  # noqa: BLE001 - reported to the kernel thread
            error = e
        finally:
            self._lock.acquire()
        self._busy[pipe] = False
        self._running -= 1
        if generation == self._generation:
            q = self._queues[pipe]
            if q and q[0] is op:
                q.popleft()
            if op[0] == "signal":
                self._signals -= 1
            if error is not None:
                if self._error is None:
                    self._error = error
                for other in self._queues.values():  # the launch failed: nothing more runs
                    other.clear()
        self._wake_all()

    def _serve(self, pipe: Pipe) -> None:
        """The pipe's thread: execute its queue in order, forever (a daemon of the core process)."""
        cv = self._pipe_cv[pipe]
        with self._lock:
            while not self._closed:
                op = self._claim(pipe)
                if op is None:
                    cv.wait()
                elif op is not _DONE:
                    self._execute(pipe, op)

    def _block_until(self, done: Callable[[], bool], helped: tuple, what: str, where: str) -> None:
        """Block the kernel thread until ``done()`` (checked with the lock held), executing the
        ``helped`` pipes' instructions meanwhile; errors, unsatisfiable waits and the timeout raise."""
        deadline = time.monotonic() + self.timeout_s
        with self._lock:
            while True:
                self._check_error()
                if done():
                    return
                progressed = False
                for pipe in helped:
                    op = self._claim(pipe)
                    if op is not None:
                        progressed = True
                        if op is not _DONE:
                            self._execute(pipe, op)
                        break
                if progressed:
                    continue
                self._check_stuck(where)
                self._timed_wait(deadline, what)

    def _check_error(self) -> None:
        """Raise a pipe's failure on the kernel thread (call with the lock held)."""
        e = self._error
        if e is not None:
            self._error = None
            raise e

    def _timed_wait(self, deadline: float, what: str) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SyncTimeoutError(f"{self.label}: {what} still waiting after {self.timeout_s:g} s")
        self._cv.wait(min(left, 1.0))

    def _check_stuck(self, where: str) -> None:
        """The kernel thread is blocked: a pipe stopped at a wait no queued set can satisfy never moves."""
        for pipe, q in self._queues.items():
            if q and q[0][0] == "wait" and not self._busy[pipe]:
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
