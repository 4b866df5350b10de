"""The words of sync mutation testing, shared by its faces: ``mpnpu mutate`` on a CPU-debug program
(:mod:`mpnpu.tools.mutate`) and the sync audit of an operator (:mod:`mpnpu.directed.audit`).

A sync point dropped is a *mutant*. It is **killed** when the tests notice: their own check fails
(a CPU-debug program's exit status or gtest assertion; an operator's golden), possibly only in a
directed run that forces the race, or the launch deadlocks or fails on the device. It **survived**
otherwise, and then either **untested** (racecheck finds the race the sync prevented, and no
assertion caught what it does) or **redundant** (racecheck finds no race without it, for these
inputs). The score is killed / executed sync points.
"""

from __future__ import annotations

KILLED = "killed"
SURVIVED = "survived"
#: how a mutant was killed
BY_CHECK = "the program's own check"  # a non-zero exit the program chose
BY_GOLDEN = "the golden check"  # an operator's golden comparison (the batch's failing case-runs)
BY_GTEST = "gtest failure"
BY_DEADLOCK = "deadlock"
BY_DEVICE = "device error"  # a fault, an API misuse, a sync that would hang: mpnpu's exit status 3
BY_TIMEOUT = "time-out"
IN_DIRECTED_RUN = "in a directed run"  # appended to how: the race forced by a hold showed it
#: why a mutant survived
REDUNDANT = "redundant"  # racecheck finds no hazard without it, for these inputs
UNTESTED = "untested"  # racecheck finds a hazard that no assertion caught


def score(killed: int, executed: int) -> float:
    """Killed / executed sync points (1.0 when nothing was executed: nothing to kill)."""
    return killed / executed if executed else 1.0
