"""Waiting for an observable condition in tests, with a timeout, instead of sleeping."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float, interval: float = 0.005) -> T:
    """Poll ``predicate()`` until it returns something truthy or ``timeout`` seconds pass; return its
    last value (falsy on timeout), for callers that assert on it with their own message."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.005,
               what: str = "") -> T:
    """Like :func:`wait_for`, but fail the test (naming ``what``) if the condition never holds."""
    value = wait_for(predicate, timeout, interval)
    if not value:
        what = what or getattr(predicate, "__name__", "a condition")
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
    return value
