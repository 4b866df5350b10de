"""Waiting for an observable condition in tests, with a timeout, instead of sleeping."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.005,
               what: str = "") -> T:
    """Poll ``predicate()`` until it returns something truthy and return that value; fail the test
    with ``what`` (or the predicate's name) if ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what or getattr(predicate, '__name__', 'a condition')}")
        time.sleep(interval)
