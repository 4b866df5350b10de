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

When instructions run (docs/pipes.md, "When a pipe's instructions run"): the kernel thread
executes a pipe's queue itself when it needs the result (a wait, a barrier, the end of the kernel)
and, at its next issue, whatever has been queued longer than the latency bound; a pipe's thread
works through its queue while the kernel thread waits (for another core, for a busy pipe, or held
by a race-directed plan); a cross-core flag set is fired at issue, after what its pipe was issued
before it, since other cores wait for it. Nothing wakes a pipe's thread at issue: in a Python
process that costs a futex wake, a preemption and a GIL hand-over per instruction, for work the
kernel thread usually does itself a moment later.

A synchronous engine (``asynchronous=False``) runs every instruction at issue, in program order:
the behaviour of a CPU twin debugger, faster, and blind to intra-core races. Traces record the
pipe of every instruction either way, so race detection analyses them as asynchronous.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable, Union

from mpnpu.errors import KernelAPIError, SyncTimeoutError

from .pipe_events import (  # noqa: F401 - re-exported: the pipe engine's vocabulary
    ANALYSED_PIPES,
    ASYNC_PIPES,
    EVENT_IDS,
    EventIdPool,
    HardEvent,
    Pipe,
    check_event,
)

# One queued instruction: (kind, payload, where, issued_ns) with kind "run" / "signal" (payload: a
# callable), "set" or "wait" (payload: (event, id)); ``where`` is the issuing kernel line, for error
# messages; ``issued_ns``: the engine's clock_ns() at issue.
_Op = tuple[str, Any, "Where", int]
_DONE: _Op = ("done", None, "", 0)  # _claim: a set or wait completed under the lock, nothing to execute

#: How long an issued instruction may stay queued while the kernel thread keeps issuing: on the chip
#: a copy lands within a few microseconds unless a sync holds its pipe. A pipe's own thread needs
#: the GIL, which a busy kernel thread may hold for milliseconds; so every issue first executes, on
#: the kernel thread, the instructions that have waited longer than this (in pipe order, none that a
#: wait still holds). Races that need a copy to be later than this do not show; those of the next
#: few instructions do. (docs/pipes.md, "When a pipe's instructions run")
MAX_LATENCY_NS = 100_000  # the default (RuntimeOptions.pipe_latency_us)
_NEVER = 1 << 62  # _oldest_ns when nothing is queued

#: Where an instruction was issued: the kernel line, or a function that finds it. Finding the line
#: walks the stack, so the hot paths pass the function and it is called only for an error message
#: (or once, for a wait left queued on a pipe, whose error may come later).
Where = Union[str, Callable[[], str]]

#: A raised event: (HardEvent, event id)
EventKey = tuple[HardEvent, int]


def _resolve(where: Where) -> str:
    return (where() if callable(where) else where) or "?"


class PipeEngine:
    """The asynchronous pipes of one core process. Only the kernel thread issues; one thread per
    pipe executes.

    When the kernel thread blocks on a pipe (a wait for an event that pipe raises, a barrier), it
    executes that pipe's queued instructions itself, in order, instead of idling while the pipe's
    thread is scheduled — and those of the pipes it is stopped on, if its next instruction is a
    wait for another pipe. Each pipe still executes in issue order, one instruction at a time; the
    pipes' threads run concurrently with each other, and with the kernel thread once it resumes,
    from the moment it waits for something outside the core.

    Cost (see ``scripts/bench_pipes.py``): issuing a copy is an append without the lock, draining
    it a loop on the kernel thread under the lock; a thread is woken only when the kernel thread
    waits. A synchronous engine takes no lock at all.
    """

    def __init__(self, label: str, timeout_s: float, max_latency_ns: int = MAX_LATENCY_NS) -> None:
        self.label = label
        self.timeout_s = timeout_s
        self.max_latency_ns = max_latency_ns
        self.asynchronous = False
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)  # the kernel thread waits on this one
        self._kernel_sleeping = False
        self._pipe_cv = {p: threading.Condition(self._lock) for p in ASYNC_PIPES}
        self._pipe_sleeping = {p: False for p in ASYNC_PIPES}
        self._queues: dict[Pipe, collections.deque[_Op]] = {p: collections.deque() for p in ASYNC_PIPES}
        self._busy = {p: False for p in ASYNC_PIPES}  # an instruction of the pipe is executing
        self._threads: dict[Pipe, threading.Thread] = {}
        self._flags: dict[EventKey, int] = {}  # (event, id) -> raised, not consumed
        self._queued_sets: dict[EventKey, int] = {}  # (event, id) -> sets still queued on a pipe
        self._error: BaseException | None = None
        self._running = 0  # instructions executing right now (outside the lock)
        self._signal_pipes: dict[Pipe, int] = {p: 0 for p in ASYNC_PIPES}  # cross-core sets queued or executing
        self._generation = 0  # bumped by reset: results of an abandoned launch are dropped
        self._closed = False
        #: issue time of the oldest instruction that may still be queued (_NEVER: none); may be older
        #: than the truth (it is recomputed when an overdue check finds nothing that old)
        self._oldest_ns = _NEVER
        #: time the kernel thread spent observing (tracing) rather than running the kernel: the pipes'
        #: clock leaves it out, so a traced launch's copies run when an untraced one's would. Without
        #: it, a traced kernel issues its instructions further apart, queued copies pass the latency
        #: bound and run before what would race with them: the race the trace is there to find would
        #: not show. Each traced call adds its own recording time, ``time.monotonic_ns()`` since it
        #: started, inline (``pipes.observed_ns += monotonic_ns() - t``: a method call per record
        #: cost a tenth of the traced calls of a Python kernel's launch)
        self.observed_ns = 0

    def clock_ns(self) -> int:
        """The pipes' clock: monotonic time less what observing the kernel took (``observed_ns``).
        Issue times and the latency bound are measured on it."""
        return time.monotonic_ns() - self.observed_ns

    # -- launch life cycle ----------------------------------------------------------------------

    def reset(self, asynchronous: bool) -> None:
        """Start a launch: no events raised, nothing queued, no error."""
        if not (self._threads or self.asynchronous or asynchronous):
            # Only ever in order (the common case of a kernel that is not pipelined, and of an empty
            # launch): nothing was queued and no thread reads this state.
            self._flags.clear()
            self._error = None
            return
        with self._lock:
            for q in self._queues.values():
                q.clear()
            self._flags.clear()
            self._queued_sets.clear()
            self._oldest_ns = _NEVER
            for p in self._signal_pipes:
                self._signal_pipes[p] = 0
            self._error = None
            self._generation += 1
            self.asynchronous = asynchronous
            # Nobody to wake: a pipe thread asleep stays so (its queue is empty now), and the kernel
            # thread is the caller. (Every launch pays for this: keep it to a few clears.)

    def finish(self) -> None:
        """End of the kernel function: wait for every pipe to drain (the launch ends when they do)."""
        self.barrier(Pipe.ALL, "end of kernel")

    def close(self, timeout: float = 5.0) -> None:
        """Stop the pipe threads (a core process never needs to: they are daemons that die with it;
        an engine made in a process that goes on, e.g. a test, should)."""
        with self._lock:
            self._closed = True
            self._wake_everyone()
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
                self._cv.wait(0.05)  # polled: retiring instructions notify only a sleeping kernel

    # -- issuing --------------------------------------------------------------------------------

    def run(self, pipe: Pipe, fn: Callable[[], None], where: Where = "") -> None:
        """Issue ``fn`` to ``pipe``: run now if the pipe is inline or the engine synchronous."""
        if not self.asynchronous or pipe not in self._queues:
            fn()
            return
        # Without the lock: only this thread appends, and deque appends are atomic. Nobody is woken:
        # the kernel thread executes the queue when it needs it, the pipe's thread when the kernel
        # thread waits, and the latency bound at the latest.
        if self._error is not None:
            with self._lock:
                self._check_error()
        self._append(pipe, ("run", fn, where, self._now_within_bound()))
        if pipe not in self._threads:
            self._start_threads(pipe)

    def signal(self, pipe: Pipe, fn: Callable[[], None], where: Where = "") -> None:
        """Issue a cross-core flag set to ``pipe``: it fires once what was issued before it completed.

        Other cores wait for it, so it is not left queued: the kernel thread executes the pipe's
        queue up to it at once, unless the pipe is stopped (an unsatisfied wait, an instruction its
        thread is executing); then the pipe's thread is woken to fire it as soon as it can.
        """
        q = self._queues.get(pipe) if self.asynchronous else None
        if q is None:
            fn()
            return
        counts = self._signal_pipes
        with self._lock:
            if self._error is not None:
                self._check_error()
            counts[pipe] += 1
            self._append(pipe, ("signal", fn, where, self.clock_ns()))
            self._drain_through(pipe, q, lambda: not counts[pipe])
            self._check_error()  # e.g. the set overflowed the flag's counter: raised at this line
            if counts[pipe] and self._pipe_sleeping[pipe]:
                self._pipe_cv[pipe].notify()
            self._note_if_idle()
        if pipe not in self._threads:
            self._start_threads(pipe)

    def flush_signals(self, where: Where = "") -> None:
        """Wait until every queued cross-core set has fired.

        Called before a cross-core wait: the device's watchdog reads a core blocked in a wait with
        its own set still unsent as a deadlock (modes 0 and 1 need the waiter's own set).
        """
        counts = self._signal_pipes
        if not self.asynchronous or not any(counts.values()):
            return
        with self._lock:  # usually: execute each pipe's queue up to its last cross-core set
            for pipe, q in self._queues.items():
                if counts[pipe] and self._error is None:
                    self._drain(pipe, q, until=lambda: not counts[pipe])  # noqa: B023 - called at once
            if not any(counts.values()) and self._error is None:
                return
        self._block_until(lambda: not any(counts.values()), ASYNC_PIPES, "cross-core flag sets issued before", where,
                          preposition="")

    def set_flag(self, event: HardEvent, event_id: int, where: Where = "") -> None:
        """Raise (event, id) when ``event.src`` reaches this point."""
        key = (event, event_id)
        src = event._src
        if not self.asynchronous:
            # In order: everything before this point has completed, and no thread reads the flags.
            self._flags[key] = self._flags.get(key, 0) + 1
            return
        with self._lock:
            self._check_error()
            if src not in self._queues:
                self._raise(key, by_pipe=False)
                return
            self._queued_sets[key] = self._queued_sets.get(key, 0) + 1
        self._issue(src, ("set", key, where, self.clock_ns()))

    def wait_flag(self, event: HardEvent, event_id: int, where: Where = "") -> None:
        """Make ``event.dst`` wait here for (event, id), then consume it."""
        key = (event, event_id)
        flags = self._flags
        if not self.asynchronous:
            if not flags.get(key):
                raise KernelAPIError(self._unmatched(event, event_id, _resolve(where), "the kernel thread"))
            flags[key] -= 1
            return
        dst = event._dst
        if dst in self._queues:
            self._issue(dst, ("wait", key, _resolve(where), self.clock_ns()))
            return
        # The destination runs on the kernel thread: block it (bounded, and never on a wait that
        # nothing can satisfy any more), executing the source pipe's instructions meanwhile.
        queued = self._queued_sets

        def raised() -> bool:
            if flags.get(key):
                return True
            if not queued.get(key):
                raise KernelAPIError(self._unmatched(event, event_id, _resolve(where), "the kernel thread"))
            return False

        src = event._src
        self._block_until(raised, (src,) if src in self._queues else ASYNC_PIPES,
                          f"wait_flag<{event.name}>({event_id})", where)
        with self._lock:
            flags[key] -= 1

    def set_wait(self, event: HardEvent, event_id: int, where: Where = "") -> None:
        """``set_flag`` then ``wait_flag`` of the same (event, id), with nothing issued between.

        Exactly what the two calls do, without their cost where one half is inline: a set raised by
        an inline pipe is consumed by the wait that follows it at once (nothing to do), and an
        inline pipe waiting for an asynchronous one waits until that pipe has completed what was
        issued to it so far (a barrier on it).
        """
        src, dst = event._src, event._dst
        if not self.asynchronous or src not in self._queues:
            if self._error is not None:
                with self._lock:
                    self._check_error()
            return
        if dst not in self._queues:
            self.barrier(src, where)
            return
        # Both pipes asynchronous: queue the set and the wait. The wait cannot be unmatched (its
        # set is queued right before it), so it needs no kernel line for an error message.
        key = (event, event_id)
        now = self._now_within_bound()
        src_q = self._queues[src]
        with self._lock:
            if self._error is not None:
                self._check_error()
            if not src_q and not self._busy[src]:
                # The source pipe has completed everything issued to it: the set would be raised
                # at once, and the wait (the next of its key on the destination: sets of a key are
                # only ever queued on its source) would consume it. Counts unchanged: nothing to do.
                return
            self._queued_sets[key] = self._queued_sets.get(key, 0) + 1
            self._append(src, ("set", key, "", now))
            self._append(dst, ("wait", key, "", now))
        if dst not in self._threads:  # (src has queued work: its thread exists)
            self._start_threads(dst)

    def barrier(self, pipe: Pipe, where: Where = "") -> None:
        """PipeBarrier: the kernel thread waits until everything issued to ``pipe`` has completed."""
        if not self.asynchronous:
            return
        if pipe is Pipe.ALL:
            pipes, queues = ASYNC_PIPES, list(self._queues.values())
        else:
            q = self._queues.get(pipe)
            if q is not None:
                self._now_within_bound()
            if not q:  # an inline pipe, or nothing pending (an executing instruction stays queued)
                if self._error is not None:
                    with self._lock:
                        self._check_error()
                return
            with self._lock:  # usually the kernel thread simply executes what is queued, in order
                if self._error is None:
                    self._drain_through(pipe, q)
                if not q and self._error is None:
                    self._note_if_idle()
                    return
            self._block_until(lambda: not q, (pipe,), f"pipe_barrier({pipe._value_})", where)
            return
        self._block_until(lambda: not any(queues), pipes, "pipe_barrier(PIPE_ALL)", where)
        self._note_if_idle()

    def _note_if_idle(self) -> None:
        """After a drain: if nothing is queued any more, nothing is overdue either (saves the next
        issue a look at every queue; a kernel usually drains right after it issues)."""
        if self._oldest_ns != _NEVER and not any(self._queues.values()):
            self._oldest_ns = _NEVER

    def wake_pipes(self) -> None:
        """The kernel thread is about to wait (for another core, or held by a race-directed plan):
        let every pipe with queued work execute it meanwhile, on its own thread."""
        if self.asynchronous:
            with self._lock:
                self._wake_pipes()

    def thread_asleep(self, pipe: Pipe) -> bool:
        """Whether ``pipe``'s thread exists and sleeps, waiting to be woken (diagnostics, tests)."""
        with self._lock:
            return pipe in self._threads and self._pipe_sleeping[pipe]

    def idle(self) -> bool:
        """Whether nothing is queued on any pipe."""
        with self._lock:
            return not any(self._queues.values())

    # -- inside -----------------------------------------------------------------------------------

    def _issue(self, pipe: Pipe, op: _Op) -> None:
        with self._lock:
            if self._error is not None:
                self._check_error()
            self._append(pipe, op)
        if pipe not in self._threads:
            self._start_threads(pipe)

    def _append(self, pipe: Pipe, op: _Op) -> None:
        """Queue ``op`` on ``pipe``, waking nobody (see :meth:`run`). Called by the kernel thread
        alone (the only thread that appends), so the lock is needed only for what goes with it."""
        self._queues[pipe].append(op)
        if self._oldest_ns == _NEVER:
            self._oldest_ns = op[3]

    def _start_threads(self, *pipes: Pipe) -> None:
        for pipe in pipes:
            if pipe not in self._threads:
                t = threading.Thread(target=self._serve, args=(pipe,), name=f"{pipe.value} of {self.label}",
                                     daemon=True)
                self._threads[pipe] = t
                t.start()

    def _drain(self, pipe: Pipe, q: collections.deque[_Op], until: Callable[[], object] | None = None) -> None:
        """Execute ``pipe``'s queue on the kernel thread while its next instruction can proceed
        (lock held; stops at an unsatisfied wait, an instruction its thread is executing, an error, or
        once ``until()`` is true).

        Instructions execute with the lock held, so the pipes' threads cannot claim anything
        meanwhile (this is the common path of every barrier and X -> V sync, hence the inlined
        "run" case: no claim/retire bookkeeping is needed while no other thread can look).
        """
        busy = self._busy
        while q and not busy[pipe]:
            if until is not None and until():
                return
            op = q[0]
            if op[0] == "run":
                try:
                    op[1]()
                except BaseException as e:  # reported to the kernel thread
                    self._fail(e)
                    return
                q.popleft()
                continue
            claimed = self._claim(pipe)
            if claimed is None:
                return
            if claimed is not _DONE:
                self._execute(pipe, claimed, by_kernel=True, keep_lock=True)
                if self._error is not None:
                    return

    def _now_within_bound(self) -> int:
        """The time now (the pipes' clock), after executing what has been queued longer than the
        latency bound."""
        now = self.clock_ns()
        if now - self._oldest_ns > self.max_latency_ns:
            self._progress_overdue(now)
        return now

    def _progress_overdue(self, now: int) -> None:
        """Execute on the kernel thread every queued instruction issued more than ``max_latency_ns``
        before ``now`` that can proceed (and what it waits on, up to the awaited set); then note
        the oldest one still queued."""
        cutoff = now - self.max_latency_ns
        try:  # usually nothing is that old any more (the note is conservative): check without the lock
            heads = [q[0][3] for q in self._queues.values() if q]
        except IndexError:  # a pipe's thread emptied a queue meanwhile: look again under the lock
            heads = [cutoff]
        if not heads or min(heads) > cutoff:
            self._oldest_ns = min(heads) if heads else _NEVER
            return
        with self._lock:
            if self._error is not None:
                return  # raised at the next check
            for pipe, q in self._queues.items():
                if q and q[0][3] <= cutoff:
                    self._drain_through(pipe, q, lambda: not q or q[0][3] > cutoff)  # noqa: B023
            heads = [q[0][3] for q in self._queues.values() if q]
            self._oldest_ns = min(heads) if heads else _NEVER

    def _drain_through(self, pipe: Pipe, q: collections.deque[_Op], until: Callable[[], object] | None = None,
                       depth: int = 0) -> None:
        """:meth:`_drain` ``pipe`` (until ``until()``, if given); where it stops at a wait for an event
        another asynchronous pipe raises, drain that pipe up to the set and no further, then go on
        (lock held). What was issued after what is waited for is never executed early."""
        flags = self._flags
        while True:
            self._drain(pipe, q, until)
            if (not q or self._error is not None or self._busy[pipe] or depth >= len(ASYNC_PIPES)
                    or (until is not None and until())):
                return
            kind, key = q[0][0], q[0][1]
            src = key[0]._src if kind == "wait" else None
            if src is None or src is pipe or src not in self._queues or not self._queues[src]:
                return
            self._drain_through(src, self._queues[src], lambda: flags.get(key), depth + 1)  # noqa: B023
            if not flags.get(key):
                return

    def _raise(self, key: EventKey, by_pipe: bool) -> None:
        """Raise event ``key`` (lock held). Raised by a pipe's thread (working while the kernel thread
        waits), it wakes the pipe that may be stopped at a wait for it."""
        self._flags[key] = self._flags.get(key, 0) + 1
        dst = key[0]._dst
        if by_pipe and dst in self._pipe_sleeping and self._pipe_sleeping[dst]:
            self._pipe_cv[dst].notify()
        self._wake_kernel()

    def _wake_kernel(self) -> None:
        """Something the kernel thread may be waiting for changed (lock held)."""
        if self._kernel_sleeping:
            self._cv.notify()

    def _wake_pipes(self) -> None:
        for pipe, q in self._queues.items():
            if q and self._pipe_sleeping[pipe]:
                self._pipe_cv[pipe].notify()

    def _wake_everyone(self) -> None:
        self._cv.notify_all()
        for cv in self._pipe_cv.values():
            cv.notify_all()

    def _claim(self, pipe: Pipe, by_kernel: bool = True) -> _Op | None:
        """Take the pipe's next instruction (lock held): None if it cannot proceed now, _DONE if it
        was a set or a satisfied wait (completed here), else a "run"/"signal" to execute."""
        q = self._queues[pipe]
        if not q or self._busy[pipe]:
            return None
        op = q[0]
        kind, payload = op[0], op[1]
        if kind == "wait":
            if not self._flags.get(payload):
                return None
            self._flags[payload] -= 1
            q.popleft()
            self._wake_kernel()
            return _DONE
        if kind == "set":
            self._queued_sets[payload] -= 1
            q.popleft()
            self._raise(payload, by_pipe=not by_kernel)
            return _DONE
        self._busy[pipe] = True
        self._running += 1
        return op

    def _execute(self, pipe: Pipe, op: _Op, by_kernel: bool, keep_lock: bool = False) -> None:
        """Execute a claimed instruction with the lock released (``keep_lock``: held, so that no pipe
        thread claims meanwhile: the kernel thread draining a queue); retire it with the lock held."""
        generation = self._generation
        error = None
        if not keep_lock:
            self._lock.release()
        try:
            op[1]()
        except BaseException as e:  # reported to the kernel thread
            error = e
        finally:
            if not keep_lock:
                self._lock.acquire()
        self._busy[pipe] = False
        self._running -= 1
        if generation == self._generation:
            q = self._queues[pipe]
            if q and q[0] is op:
                q.popleft()
            if op[0] == "signal":
                self._signal_pipes[pipe] -= 1
            if error is not None:
                self._fail(error)
        if not by_kernel:
            self._wake_kernel()

    def _fail(self, error: BaseException) -> None:
        """An instruction raised (lock held): the launch failed, nothing more runs; the kernel
        thread raises ``error`` at its next check."""
        if self._error is None:
            self._error = error
        for q in self._queues.values():
            q.clear()

    def _serve(self, pipe: Pipe) -> None:
        """The pipe's thread: execute its queue in order, forever (a daemon of the core process)."""
        cv = self._pipe_cv[pipe]
        with self._lock:
            while not self._closed:
                op = self._claim(pipe, by_kernel=False)
                if op is None:
                    self._pipe_sleeping[pipe] = True
                    cv.wait()
                    self._pipe_sleeping[pipe] = False
                elif op is not _DONE:
                    self._execute(pipe, op, by_kernel=False)

    def _block_until(self, done: Callable[[], bool], helped: tuple[Pipe, ...], what: str, where: Where,
                     preposition: str = " at") -> None:
        """Block the kernel thread until ``done()`` (checked with the lock held), executing the
        ``helped`` pipes' instructions meanwhile; errors, unsatisfiable waits and the timeout raise."""
        deadline = None
        with self._lock:
            while True:
                self._check_error()
                if done():
                    return
                if self._help(helped):
                    continue
                self._check_stuck(where)
                if deadline is None:
                    deadline = time.monotonic() + self.timeout_s
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SyncTimeoutError(
                        f"{self.label}: {what}{preposition} {_resolve(where)} still waiting after {self.timeout_s:g} s")
                self._kernel_sleeping = True
                self._wake_pipes()  # what the kernel cannot do itself now, the pipes do meanwhile
                try:
                    self._cv.wait(min(left, 1.0))
                finally:
                    self._kernel_sleeping = False

    def _help(self, helped: tuple[Pipe, ...]) -> bool:
        """Execute (on the kernel thread) the next instruction of the first of ``helped`` or of the
        pipes they are stopped on that can move (lock held); whether anything moved.

        One at a time: the caller checks after each whether it may go on, so nothing issued after
        what it waits for completes early (that would hide races on the later instructions).
        """
        for pipe in helped:
            op = self._claim(pipe)
            if op is not None:
                break
        else:
            for pipe in self._with_dependencies(helped)[len(helped):]:
                op = self._claim(pipe)
                if op is not None:
                    break
            else:
                return False
        if op is not _DONE:
            self._execute(pipe, op, by_kernel=True)
        return True

    def _with_dependencies(self, pipes: tuple[Pipe, ...]) -> list[Pipe]:
        """``pipes``, then the pipes they are stopped on: a pipe whose next instruction is a wait for
        an event another asynchronous pipe raises can only move once that pipe does (lock held)."""
        order = list(pipes)
        for pipe in order:  # grows while iterating: the chain of waits, each pipe once
            q = self._queues[pipe]
            if q and q[0][0] == "wait" and not self._flags.get(q[0][1]):
                src = q[0][1][0]._src
                if src in self._queues and src not in order:
                    order.append(src)
        return order

    def _check_error(self) -> None:
        """Raise a pipe's failure on the kernel thread (call with the lock held)."""
        e = self._error
        if e is not None:
            self._error = None
            raise e

    def _check_stuck(self, where: Where) -> None:
        """The kernel thread is blocked: a pipe stopped at a wait no queued set can satisfy never moves."""
        for pipe, q in self._queues.items():
            if q and q[0][0] == "wait" and not self._busy[pipe]:
                key = q[0][1]
                if not self._flags.get(key) and not self._queued_sets.get(key):
                    event, event_id = key
                    raise KernelAPIError(self._unmatched(event, event_id, q[0][2], pipe.value)
                                         + f" (found at {_resolve(where)})")

    def _unmatched(self, event: HardEvent, event_id: int, where: Where, waiter: str) -> str:
        return (
            f"{self.label}: wait_flag<{event.name}>({event_id}) at {_resolve(where)} has no matching "
            f"set_flag<{event.name}>({event_id}) before it: {waiter} would wait forever (a hang on the device)"
        )
