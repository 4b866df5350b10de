"""The distinct values of an integer array, sorted: ``np.unique`` without its hashing path.

NumPy 2's ``np.unique`` of an integer array without ``return_*`` options takes a hash-table path.
On the short columns racecheck reads (a launch's pipes, cores, groups: hundreds to thousands of
values) that path was measured at 0.04-0.2 ms a call in a fresh interpreter and 1.4-1.9 ms of wall
time a call in a core process, against 0.01-0.02 ms for a sort (docs/racecheck-speed.md). Sorting
gives the same values in the same (ascending) order.
"""

from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of the 1-D array ``values``, ascending (what ``np.unique(values)`` gives)."""
    ordered = np.sort(values, kind="stable")
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
