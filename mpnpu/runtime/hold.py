"""Holds: race-directed scheduling of one launch, without touching the kernel's code or data.

A :class:`HoldPlan` names two GM accesses of a launch by (core, kernel source site, occurrence
of that site on that core — 0 for the first access the core makes there). The *held* core stops
just before its access until the *partner* core has made its own, then goes on, so the two
accesses happen in the opposite of their usual order, for real, in the core processes::

    held core:    ... ──► [access site A, occurrence i]  waits ─────────────► access ──► ...
    partner core: ... ──────────────────► [access site B, occurrence j] ─ release ─► ...

If the partner cannot make its access while the held core waits — a SyncAll or a flag orders it
after the held core's access — the hold ends by itself and the pair is reported *ordered*:

- at once when every other core is finished, failed or asleep in a SyncAll or flag wait (checked
  on the status board and in /proc, stable over ``quiet_s``): nobody but the held core can move,
  so nobody can reach the partner access;
- at the latest after ``bound_s`` (a partner that is merely slow, e.g. descheduled on a busy
  machine, is reported as not reversed rather than waited for forever).

A hold only changes *when* the held core runs. The held core's status stays "running", so the
device's deadlock watchdog, which only reports when every unfinished core is blocked in a sync,
never mistakes a hold for a deadlock.

Shared state (:class:`HoldBoard`) lives with the pool's sync objects: a few int64 words and one
semaphore. A launch without a plan pays one ``is None`` test per GM access.
"""

from __future__ import annotations

import ctypes
import os
import time
from multiprocessing.context import BaseContext
from typing import Any, Callable, NamedTuple

import numpy as np

from mpnpu.errors import UsageError

from .procutil import process_asleep

#: hold outcomes, as stored on the board and reported
NOT_REACHED, REVERSED, ORDERED = "not-reached", "reversed", "ordered"

# board words
_B_HELD_AT, _B_PARTNER_AT, _B_OUTCOME, _B_WAIT_NS, _B_EARLY, _B_PARTNER_FIRST = range(6)
_B_PIDS = 8  # then one pid per core
_OUTCOME_CODES = {0: NOT_REACHED, 1: REVERSED, 2: ORDERED}

#: default bound of one hold (seconds): generous, because ordered pairs end early (see above)
DEFAULT_BOUND_S = 5.0
#: how long every other core must have stayed blocked before a hold ends early as ordered
DEFAULT_QUIET_S = 0.15
_POLL_S = 0.01


class HoldPlan(NamedTuple):
    """Hold ``held_core`` before its access at (``held_site``, ``held_occurrence``) until
    ``partner_core`` has made its access at (``partner_site``, ``partner_occurrence``)."""

    held_core: int
    held_site: str
    held_occurrence: int
    partner_core: int
    partner_site: str
    partner_occurrence: int
    bound_s: float = DEFAULT_BOUND_S
    quiet_s: float = DEFAULT_QUIET_S

    def describe(self, labels: "list[str] | tuple[str, ...] | None" = None) -> str:
        """'held aiv0 before kernel.py:156 #0 until aiv1 passed kernel.py:233 #1'."""
        held = labels[self.held_core] if labels else f"core {self.held_core}"
        partner = labels[self.partner_core] if labels else f"core {self.partner_core}"
        return (f"held {held} before {self.held_site} #{self.held_occurrence} until {partner} "
                f"passed {self.partner_site} #{self.partner_occurrence}")

    def to_dict(self) -> dict[str, Any]:
        return dict(self._asdict())


class HoldOutcome(NamedTuple):
    """What a hold did in one launch (read by the parent after the launch)."""

    outcome: str  # REVERSED, ORDERED or NOT_REACHED
    held_reached: bool  # the held core arrived at its access
    partner_reached: bool  # the partner made its access
    partner_first: bool  # the partner had made its access before the held core even arrived
    early: bool  # an ORDERED hold that ended because no other core could move
    held_s: float  # how long the held core waited

    def to_dict(self) -> dict[str, Any]:
        return dict(self._asdict())


class HoldBoard:
    """The shared state of holds for one core pool (created before the pool is forked)."""

    def __init__(self, ctx: BaseContext, n_cores: int) -> None:
        self._words = ctx.RawArray(ctypes.c_int64, _B_PIDS + n_cores)
        self._np: np.ndarray = np.frombuffer(self._words, dtype=np.int64)  # type: ignore[call-overload]
        self.release = ctx.Semaphore(0)
        self._used = False

    # -- parent ---------------------------------------------------------------------------------

    def reset(self) -> None:
        """Parent, between launches: clear the last hold (all cores idle)."""
        if not self._used:
            return
        self._np[:] = 0
        while self.release.acquire(False):
            pass
        self._used = False

    def arm(self) -> None:
        """Parent, before a launch with a plan."""
        self.reset()
        self._used = True

    def outcome(self) -> HoldOutcome:
        """Parent, after a launch with a plan."""
        w = self._np
        code = int(w[_B_OUTCOME])
        held, partner = bool(w[_B_HELD_AT]), bool(w[_B_PARTNER_AT])
        return HoldOutcome(_OUTCOME_CODES[code], held, partner, bool(w[_B_PARTNER_FIRST]),
                           bool(w[_B_EARLY]), int(w[_B_WAIT_NS]) / 1e9)

    # -- cores ----------------------------------------------------------------------------------

    def words(self) -> np.ndarray:
        return self._np


def check_plan(plan: object, n_cores: int) -> None:
    """Raise UsageError for a plan that cannot apply to a device with ``n_cores`` core processes."""
    if not isinstance(plan, HoldPlan):
        raise UsageError(f"hold must be a mpnpu.runtime.hold.HoldPlan, got {type(plan).__name__}")
    for what in ("held_core", "partner_core"):
        core = getattr(plan, what)
        if not isinstance(core, int) or not 0 <= core < n_cores:
            raise UsageError(f"hold: {what} {core!r} is not a core id of this device (0..{n_cores - 1})")
    if plan.held_core == plan.partner_core:
        raise UsageError("hold: the held core and its partner must be different cores")
    if plan.held_occurrence < 0 or plan.partner_occurrence < 0 or not plan.bound_s > 0:
        raise UsageError("hold: occurrences must be >= 0 and bound_s > 0")


def runner_for(plan: HoldPlan | None, core_id: int, board: HoldBoard, status: np.ndarray,
               blocked_states: tuple[int, ...], done_states: tuple[int, ...]) -> "HoldRunner | None":
    """Core side, at the start of a launch: this core's :class:`HoldRunner`, or None when the
    plan does not involve it. Every core of a held launch publishes its pid, so that a held core
    can tell an asleep core from a running one."""
    if plan is None:
        return None
    board.words()[_B_PIDS + core_id] = os.getpid()
    if core_id not in (plan.held_core, plan.partner_core):
        return None
    return HoldRunner(plan, core_id, board, status, blocked_states, done_states)


class HoldRunner:
    """One core's part of a plan in one launch: count accesses at its site, wait or release."""

    def __init__(self, plan: HoldPlan, core_id: int, board: HoldBoard, status: np.ndarray,
                 blocked_states: tuple[int, ...], done_states: tuple[int, ...]) -> None:
        self.plan = plan
        self.core_id = core_id
        self.held = core_id == plan.held_core
        self.site = plan.held_site if self.held else plan.partner_site
        self.target = plan.held_occurrence if self.held else plan.partner_occurrence
        self.count = 0
        self._board = board
        self._status = status
        self._blocked = blocked_states
        self._done = done_states
        #: called when the hold starts: the core's pipes work through their queues while it is held
        self.on_hold: Callable[[], None] | None = None

    def before(self, site: str) -> None:
        """Called before every GM access of this core (``site``: the kernel line making it)."""
        if not self.held or site != self.site:
            return
        if self.count == self.target:
            self._hold()

    def after(self, site: str) -> None:
        """Called after every GM access of this core."""
        if site != self.site:
            return
        n = self.count
        self.count = n + 1
        if not self.held and n == self.target:
            w = self._board.words()
            if not w[_B_HELD_AT]:
                w[_B_PARTNER_FIRST] = 1
            w[_B_PARTNER_AT] = 1
            self._board.release.release()

    def _hold(self) -> None:
        plan, w = self.plan, self._board.words()
        if self.on_hold is not None:
            self.on_hold()
        w[_B_HELD_AT] = 1
        start = time.monotonic()
        deadline = start + plan.bound_s
        quiet_since: float | None = None
        quiet_key = b""
        outcome, early = 2, 0
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            if self._board.release.acquire(timeout=min(_POLL_S, deadline - now)):
                outcome = 1
                break
            key = self._quiet_key()
            now = time.monotonic()
            if key is None:
                quiet_since = None
            elif quiet_since is None or key != quiet_key:
                quiet_since, quiet_key = now, key
            elif now - quiet_since >= plan.quiet_s:
                early = 1
                break
        w[_B_WAIT_NS] = int((time.monotonic() - start) * 1e9)
        w[_B_EARLY] = early
        w[_B_OUTCOME] = outcome

    def _quiet_key(self) -> bytes | None:
        """A snapshot of the status board if no other core can move, else None."""
        st = self._status
        pids = self._board.words()[_B_PIDS:]
        for c in range(st.shape[0]):
            if c == self.core_id:
                continue
            state = int(st[c, 0])
            if state in self._done:
                continue
            if state not in self._blocked or not process_asleep(int(pids[c])):
                return None
        return st.tobytes()
