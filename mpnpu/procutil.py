"""Small OS-level helpers for core processes and for orderly shutdown of the parent."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
from typing import Iterator

_PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies (prctl PR_SET_PDEATHSIG).

    This is what guarantees that a parent killed with SIGKILL leaves no core process behind even
    while a core is blocked in a barrier. Returns False where unsupported; core processes then
    fall back to polling ``os.getppid()`` while idle.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def limit_blas_threads(n: int = 1) -> None:
    """One core process = one thread: cap OpenBLAS threads in an already-loaded numpy.

    Environment variables only work before numpy is imported, and core processes are forked from
    a parent that has numpy loaded, so call the library's own setter on whatever OpenBLAS is mapped.
    """
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    try:
        with open("/proc/self/maps") as maps:
            libs = {parts[-1] for parts in map(str.split, maps) if len(parts) >= 6 and "openblas" in parts[-1].lower()}
    except OSError:
        return
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                       "scipy_openblas_set_num_threads_64_", "openblas_set_num_threads64_"):
            setter = getattr(lib, symbol, None)
            if setter is not None:
                setter(ctypes.c_int(n))
                break


class Terminated(KeyboardInterrupt):
    """SIGTERM turned into an exception, so that the same cleanup as for Ctrl-C runs."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(f"terminated by signal {signal.Signals(signum).name}")
        self.signum = signum


def _raise_terminated(signum: int, frame) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) in the main thread."""
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def signals_blocked(*sigs: int) -> Iterator[None]:
    """Block signals in this thread (they stay pending); children forked inside inherit the mask.

    Used around forking the pool so that a Ctrl-C can never hit a core before it has installed
    its own handlers.
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def exit_code_for_interrupt(exc: KeyboardInterrupt) -> int:
    """Shell convention: 128 + signal number (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + (exc.signum if isinstance(exc, Terminated) else signal.SIGINT)
