"""OS-level helpers: the life of a child process (fork, end, describe its exit), core-process
set-up (parent-death signal, BLAS threads) and orderly shutdown of the parent on signals.

Every child process mpnpu starts (core processes, stress helpers, background load) goes through
:func:`fork_process` and :func:`end_processes`, so that none is ever left running or unreaped and
no wait for one is unbounded.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import time
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any, Callable, Iterable, Iterator, Sequence

_PR_SET_PDEATHSIG = 1


# -- child processes -------------------------------------------------------------------------------


def fork_process(ctx: BaseContext, target: Callable[..., Any], args: tuple[Any, ...], name: str,
                 close_after_start: Iterable[Any] = ()) -> BaseProcess:
    """Start a daemon child process running ``target(*args)``.

    ``close_after_start``: the child's ends of pipes, closed in the parent once the child holds
    them (also if the start fails). A parent that kept them would never see EOF when the child
    dies, and every process forked later would inherit them too.

    Daemon: if the parent exits without ending it, multiprocessing's exit handler does.
    """
    proc: BaseProcess = ctx.Process(target=target, args=args, name=name, daemon=True)  # type: ignore[attr-defined]
    try:
        proc.start()
    finally:
        for end in close_after_start:
            end.close()
    return proc


def end_processes(procs: Sequence[BaseProcess], *, grace_s: float = 0.0, term_s: float = 0.0,
                  kill_wait_s: float = 2.0) -> None:
    """End child processes and reap them, never hanging.

    Waits up to ``grace_s`` in all for them to exit by themselves (after the caller asked them
    to); then, if ``term_s`` > 0, sends SIGTERM to those still running and waits up to ``term_s``
    (children that clean up in a SIGTERM handler get the chance); then SIGKILLs the rest and waits
    up to ``kill_wait_s``. Processes never started are skipped.
    """
    started = [p for p in procs if p.pid is not None]
    for sig, wait_s in ((None, grace_s), (signal.SIGTERM, term_s), (signal.SIGKILL, kill_wait_s)):
        if sig is not None:
            if sig == signal.SIGTERM and term_s <= 0:
                continue
            for p in started:
                if p.exitcode is None:
                    try:
                        os.kill(p.pid, sig)  # type: ignore[arg-type]  # started: it has a pid
                    except OSError:  # already gone
                        pass
        deadline = time.monotonic() + wait_s
        for p in started:
            p.join(max(0.0, deadline - time.monotonic()))
        if all(p.exitcode is not None for p in started):
            return


def available_cpus() -> list[int]:
    """CPUs this process may run on, sorted: ``os.sched_getaffinity(0)``, not ``os.cpu_count()``
    (in a container or under ``taskset`` only these are usable)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # no affinity API (not Linux): every CPU
        return list(range(os.cpu_count() or 1))


def available_cpu_count() -> int:
    """How many CPUs this process may run on: ``len(available_cpus())`` without building and sorting
    the list (a core process asks after every launch: see CoreContext.refresh_spin)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity API (not Linux): every CPU
        return os.cpu_count() or 1


def describe_exit(exitcode: int | None) -> str:
    """'killed by signal SIGKILL', 'exit code 3', ..."""
    if exitcode is None:
        return "ended without an exit status"
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


# -- core-process set-up ---------------------------------------------------------------------------


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
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _openblas_libs() -> list[ctypes.CDLL]:
    try:
        with open("/proc/self/maps") as maps:
            paths = {parts[-1] for parts in map(str.split, maps) if len(parts) >= 6 and "openblas" in parts[-1].lower()}
    except OSError:
        return []
    libs = []
    for path in sorted(paths):
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    return libs


def _blas_function(lib: ctypes.CDLL, kind: str) -> Any:
    return _first_symbol(lib, (f"openblas_{kind}_num_threads", f"scipy_openblas_{kind}_num_threads64_",
                               f"scipy_openblas_{kind}_num_threads_64_", f"openblas_{kind}_num_threads64_"))


def _first_symbol(lib: ctypes.CDLL, names: tuple[str, ...]) -> Any:
    """The first of ``names`` the library exports (OpenBLAS builds suffix their symbols), or None."""
    for symbol in names:
        fn = getattr(lib, symbol, None)
        if fn is not None:
            return fn
    return None


def limit_blas_threads(n: int = 1) -> None:
    """Cap OpenBLAS threads in an already-loaded numpy (core processes: one core = one thread).

    Environment variables only work before numpy is imported, and core processes are forked from
    a parent that has numpy loaded, so call the library's own setter on whatever OpenBLAS is mapped.
    """
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    for lib in _openblas_libs():
        if n == 1 and _single_thread_without_pool(lib):
            continue
        setter = _blas_function(lib, "set")
        if setter is not None:
            setter(ctypes.c_int(n))


def _single_thread_without_pool(lib: ctypes.CDLL) -> bool:
    """Make OpenBLAS single-threaded without starting its thread pool, where it has none (a forked
    child: OpenBLAS ends its pool before every fork and starts it again lazily); True if done.

    Why not the library's setter: in a process without a pool it starts one, and a new pool's
    worker busy-waits for work for about 0.1 s of CPU (OpenBLAS's thread timeout) before it sleeps;
    each core process paid that at its start, 3 of them competing with the launches of a device
    that had just opened. With one thread the pool is never needed, so writing the thread count
    OpenBLAS reads is enough; its pool state is checked first, and a library that does not export
    both words, or runs its threads through OpenMP, is left to its setter."""
    parallel = _first_symbol(lib, ("openblas_get_parallel", "scipy_openblas_get_parallel64_",
                                   "scipy_openblas_get_parallel_64_", "openblas_get_parallel64_"))
    try:
        available = ctypes.c_int.in_dll(lib, "blas_server_avail")
        count = ctypes.c_int.in_dll(lib, "blas_cpu_number")
    except ValueError:
        return False
    # (an OpenMP build takes its thread count from OpenMP at each call: only the setter caps that)
    if parallel is None or int(parallel()) != 1 or available.value:  # 1: OpenBLAS's own threads; 2: OpenMP's
        return False
    count.value = 1
    return True


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """Run the block with OpenBLAS capped at ``n`` threads in this process, then restore.

    The parent of a batch computes goldens with numpy between launches. Multi-threaded OpenBLAS
    leaves its worker threads spinning for a while after each call, and on a small machine those
    spinning threads would compete with the core processes of the next launch, changing how often
    the race shows depending on what the parent happened to compute last.
    """
    restore = []
    for lib in _openblas_libs():
        getter, setter = _blas_function(lib, "get"), _blas_function(lib, "set")
        if getter is not None and setter is not None:
            restore.append((setter, int(getter())))
            setter(ctypes.c_int(n))
    try:
        yield
    finally:
        for setter, previous in restore:
            setter(ctypes.c_int(previous))


class Terminated(KeyboardInterrupt):
    """SIGTERM turned into an exception, so that the same cleanup as for Ctrl-C runs."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(f"terminated by signal {signal.Signals(signum).name}")
        self.signum = signum


def raise_terminated(signum: int, frame: object) -> None:
    """A SIGTERM handler: raise :class:`Terminated`."""
    raise Terminated(signum)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) in the main thread."""
    previous = signal.signal(signal.SIGTERM, raise_terminated)
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


def process_asleep(pid: int) -> bool | None:
    """Is every thread of the process asleep in an interruptible wait — how a futex (semaphore,
    lock) blocks — (True), or is one running, runnable or stopped (False)? None where /proc cannot
    tell (no such process, or no /proc).

    Every thread, not just the main one: a core process runs its pipes on threads, and its kernel
    thread sleeps on the interpreter lock while one of them holds it; that core is not blocked.
    """
    if pid <= 0:
        return None
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        tids = None
    paths = [f"/proc/{pid}/task/{tid}/stat" for tid in tids] if tids else [f"/proc/{pid}/stat"]
    seen = False
    for path in paths:
        try:
            with open(path, "rb") as f:
                stat = f.read()
        except OSError:
            continue  # a thread that ended meanwhile
        seen = True
        end = stat.rindex(b")")  # the command name may contain spaces and parentheses
        if stat[end + 2:end + 3] != b"S":
            return False
    return True if seen else None


def sem_handle(sem: Any) -> int:
    """The sem_t* behind a multiprocessing semaphore or lock (0: none to be had), for a library that
    takes and gives it by the same protocol."""
    handle = getattr(getattr(sem, "_semlock", None), "handle", 0)
    return handle if isinstance(handle, int) else 0


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) the process has used so far; None where /proc cannot tell."""
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
