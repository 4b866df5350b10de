"""The server of :mod:`mpnpu.tools.ut.warm_python`: imports the heavy packages once, then forks a
child per data-script call that runs the script as a fresh interpreter would.

    main([SOCKET, READY_FILE, PACKAGE...])   (started by WarmPython, in a folder of its own)

It listens before it imports, so calls queue meanwhile (a shim waits for its "taken"); READY_FILE
appears once the imports are done. It ends when its stdin ends (the ``mpnpu ut`` that started it
is gone or done), killing the process group of every script still running.
"""

from __future__ import annotations

# Everything the child uses is imported here, before any call: once the script's folder is first on
# sys.path, a module there (operator.py, random.py) would shadow what the child imported after it.
import atexit
import builtins
import gc
import importlib
import importlib.machinery
import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import types
from typing import Any

_LEN = struct.Struct("!Q")
_STATUS = struct.Struct("!i")
#: how long the server waits for a shim's call once it has connected
_CALL_TIMEOUT_S = 30.0
#: how often the server reaps its children when nothing else happens
_POLL_MS = 500


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    """``n`` bytes, or fewer if the shim closed the connection first."""
    out = b""
    while len(out) < n:
        more = conn.recv(n - len(out))
        if not more:
            break
        out += more
    return out


def _read_call(conn: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """(the call, the shim's three standard streams) from a new connection; None if it is not whole."""
    fds: list[int] = []
    call = None
    try:
        conn.settimeout(_CALL_TIMEOUT_S)
        head, fds, _, _ = socket.recv_fds(conn, _LEN.size, 3)
        head += _recv_exact(conn, _LEN.size - len(head))
        if len(head) == _LEN.size and len(fds) == 3:
            size = _LEN.unpack(head)[0]
            body = _recv_exact(conn, size)
            if len(body) == size:
                call = json.loads(body)
        conn.settimeout(None)
    except (OSError, ValueError):
        call = None
    if not isinstance(call, dict):
        for fd in fds:
            os.close(fd)
        return None
    return call, fds


def _exit_status(e: SystemExit) -> int:
    """The exit status ``python3 script`` gives for ``sys.exit(code)``."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    print(e.code, file=sys.stderr)
    return 1


def _reseed() -> None:
    """Seed the random generators from the OS, as a fresh interpreter does (a forked child would
    otherwise repeat the server's sequence in every call)."""
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()


def _forget_shadowed(folder: str, keep: frozenset[str]) -> None:
    """Drop the server's modules that a module of the script's own folder shadows: in a fresh
    interpreter ``sys.path[0]`` (that folder) comes first, so ``import utils`` finds the folder's.
    ``keep``: the modules a fresh interpreter has before it runs a script (those it finds first)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for entry in names:
        name = entry[:-3] if entry.endswith(".py") else entry
        if name in keep or name not in sys.modules:
            continue
        if entry.endswith(".py") or os.path.isfile(os.path.join(folder, entry, "__init__.py")):
            for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[loaded]


def _main_module(script: str) -> types.ModuleType:
    """The ``__main__`` module ``python3 script`` runs the script in, in place of the server's."""
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    main.__cached__ = None  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    return main


def _run_as_main(script: str, main: types.ModuleType) -> None:
    """Run ``script`` in ``main``, as ``python3 script`` does."""
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def _shut_down(main: types.ModuleType) -> None:
    """What a fresh interpreter does at its end: join the non-daemon threads, run the ``atexit``
    handlers (the script's), release the script's ``__main__`` objects (an unclosed file is flushed
    and closed). (Not whatever ``sys.modules["__main__"]`` is now: the server runs as ``__main__``
    itself, and its globals are the child's.)"""
    shutdown = getattr(threading, "_shutdown", None)  # (the interpreter's own step; private, so looked up)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    main.__dict__.clear()
    gc.collect()


def _child(conn: socket.socket, call: dict[str, Any], fds: list[int], startup: frozenset[str]) -> None:
    """In the forked child: say the call is taken, wait for the shim's "go", then run its script;
    never returns."""
    os.setpgid(0, 0)  # (the script and what it starts: one group, killed when the shim goes)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        conn.sendall(b"t")
        if _recv_exact(conn, 1) != b"g":  # (the shim gave up waiting and runs the script itself)
            os._exit(0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(call["env"])
        os.chdir(call["cwd"])
    except (OSError, KeyError, TypeError):
        os._exit(1)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    script = os.path.abspath(call["argv"][0])
    sys.argv = list(call["argv"])  # (argv[0] as given; __file__ absolute, as Python 3.9+ makes it)
    sys.path[0] = os.path.dirname(script)
    # The server's packages' exit handlers are not the script's: its end runs the script's own
    # (the others only tidy a process that os._exit ends anyway, and took 0.05 s a call).
    atexit._clear()
    _reseed()
    main = _main_module(script)
    _forget_shadowed(sys.path[0], startup)  # (from here on the child imports nothing)
    status = 0
    try:
        _run_as_main(script, main)
    except SystemExit as e:
        status = _exit_status(e)
    except BaseException as e:  # what a fresh interpreter does with an uncaught exception
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:  # (the script's frames only)
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        # (a fresh interpreter ends an uncaught KeyboardInterrupt by SIGINT: the shim does, told -SIGINT)
        status = -signal.SIGINT if isinstance(e, KeyboardInterrupt) else 1
    try:
        _shut_down(main)
    except SystemExit as e:
        status = _exit_status(e)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        conn.sendall(_STATUS.pack(status))
    finally:
        os._exit(status & 0xFF)


def _fresh_modules() -> frozenset[str]:
    """The modules a fresh interpreter has loaded before it runs a script."""
    out = subprocess.run([sys.executable, "-c", "import sys; print(' '.join(sys.modules))"], capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    return frozenset(out.stdout.split())


class _Calls:
    """The children running calls: each one's connection to its shim, watched for the shim going."""

    def __init__(self) -> None:
        self.conn_of: dict[int, socket.socket] = {}  # child pid -> its shim's connection
        self.pid_of: dict[int, int] = {}  # connection fd -> child pid

    def add(self, pid: int, conn: socket.socket, poller: select.poll) -> None:
        self.conn_of[pid], self.pid_of[conn.fileno()] = conn, pid
        poller.register(conn, select.POLLRDHUP)

    def drop(self, pid: int, poller: select.poll) -> socket.socket | None:
        conn = self.conn_of.pop(pid, None)
        if conn is not None:
            self.pid_of.pop(conn.fileno(), None)
            poller.unregister(conn)
            conn.close()
        return conn

    def shim_gone(self, fd: int, poller: select.poll) -> None:
        """The shim closed its end (it ended, or was killed with its test): so does its script."""
        pid = self.pid_of.get(fd)
        if pid is not None:
            _kill_group(pid)
            self.drop(pid, poller)

    def reap(self, poller: select.poll) -> None:
        """Collect the children that ended; one killed by a signal N tells its shim -N (it then ends by
        that signal too)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.conn_of.get(pid)
            if conn is not None and os.WIFSIGNALED(status):
                try:
                    conn.sendall(_STATUS.pack(-os.WTERMSIG(status)))
                except OSError:
                    pass
            self.drop(pid, poller)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def serve(socket_path: str, ready_path: str, packages: list[str]) -> None:
    """Listen on ``socket_path``, import ``packages`` (those that fail are left out), create
    ``ready_path``, then fork a child per call until stdin ends."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(socket_path)
    server.listen(128)  # (calls queue while the packages import)
    startup = _fresh_modules()
    for name in packages:
        try:
            importlib.import_module(name)
        except Exception:  # (a broken package: the scripts that import it say so themselves)
            pass
    # The imported objects into the permanent generation: a child's collections (and its end's) then
    # neither scan them (0.4 s with torch and TensorFlow) nor write to their pages (copy-on-write).
    gc.collect()
    gc.freeze()
    with open(ready_path, "w"):
        pass
    poller = select.poll()
    poller.register(server, select.POLLIN)
    poller.register(sys.stdin, select.POLLIN)
    calls = _Calls()
    try:
        while True:
            for fd, events in poller.poll(_POLL_MS):
                if fd == sys.stdin.fileno():
                    if not os.read(fd, 1024):
                        return
                elif fd == server.fileno():
                    conn, _ = server.accept()
                    got = _read_call(conn)
                    if got is None:
                        conn.close()
                        continue
                    call, fds = got
                    pid = os.fork()
                    if pid == 0:
                        server.close()
                        for other in calls.conn_of.values():
                            other.close()
                        _child(conn, call, fds, startup)
                    for fd_ in fds:
                        os.close(fd_)
                    calls.add(pid, conn, poller)
                elif events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                    calls.shim_gone(fd, poller)
            calls.reap(poller)
    finally:
        for pid in list(calls.conn_of):
            _kill_group(pid)


def main(argv: list[str]) -> None:
    """``SOCKET READY_FILE PACKAGE...``: serve until stdin ends (or SIGTERM)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # (ends through serve's finally: its scripts go too)
    serve(argv[0], argv[1], argv[2:])
