"""The distinct values of an integer array, sorted: ``np.unique`` without its hashing path (the
site ids a traced compiled launch uses, in its core process; racecheck's integer columns).

From NumPy 2.3, ``np.unique`` of an integer array without ``return_*`` options takes a hash-table
path. On the short columns racecheck reads (a launch's pipes, cores, groups: hundreds to thousands
of values) that path took 0.1-0.4 ms a call where a sort takes 0.02 ms (1,000 values, measured side
by side), and on large arrays of many distinct values (conflict groups, byte coordinates) it is
slower still: 25 ms against 6 ms for 100,000 values of which most differ. Only large arrays of few
distinct values sort slower (4 ms against 1.7 ms for 100,000 values of 50), which racecheck's
columns seldom are. In a core process, the hashing path of the records' site column took 0.9 ms of
wall time a traced launch (docs/racecheck-speed.md). Sorting gives the same values in the same
(ascending) order and dtype.
"""

from __future__ import annotations

import numpy as np

from mpnpu.errors import TraceError


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of the 1-D array ``values``, ascending (what ``np.unique(values)`` gives)."""
    if values.ndim != 1:
        raise TraceError(f"distinct takes a 1-D array, got {values.ndim} dimensions")
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
