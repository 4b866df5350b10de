"""The unit tests' data scripts in a warm interpreter: forked from one that has already imported the
heavy packages they import, instead of a fresh ``python3`` that imports them again each time.

The public unit tests call their data scripts through the shell, once or twice per case and often
once per tiling key (``system("cd ./x_data && python3 gen_data.py ...")``). Most import numpy and
torch or TensorFlow; on the 2-CPU machine a fresh interpreter takes 3 s to import torch and 7-9 s
to import TensorFlow, which was most of the corpus's run time (one test called its two scripts
about 400 times). The kernels are not involved: this only changes how a script's process starts.

::

    mpnpu ut ──starts──► server: imports the packages (numpy, torch, ...), listens on a Unix socket
    test binary ─ system("python3 gen_data.py 2 96") ─► shim ``python3`` (first on the test's PATH)
        shim ── argv, cwd, environment, its stdin/stdout/stderr ──► server ── fork ──► child:
            takes the shim's stdio, environment and folder, reseeds the random generators,
            runs gen_data.py as __main__, sends its exit status, exits with it
        shim exits with that status (the child dies with the shim: a test's time-out ends both)

The shim runs the real interpreter instead (``os.execv``, the same as without it) whenever the
server cannot take the call: options before the script (``python3 --version``, ``-c``, ``-m``),
no script file, or the server gone (or still importing after ``START_WAIT_S``; until then a call
waits for it, since a fresh interpreter importing beside it would cost both). ``--cold-python``
(``mpnpu ut``) leaves the shim out.

What a script sees differs from a fresh interpreter in what is already imported (so its imports
are instant) and in nothing else it can rely on: the random generators of ``random``, numpy and
torch are reseeded from the OS in each child, as a fresh process seeds them; ``sys.argv``,
``sys.path[0]``, ``__file__``, the working folder and the environment are the call's.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from typing import Iterable

from mpnpu import settings

#: packages whose import is most of a data script's start-up, imported once by the server (those a
#: called script imports and that are installed)
HEAVY = ("numpy", "torch", "tensorflow", "scipy", "pandas", "ml_dtypes")
#: the names a test's sources call the interpreter by
_NAMES = ("python3", "python")
#: how long a script waits for the server to finish importing before it runs in a fresh interpreter
START_WAIT_S = 120
_SOCKET_VARIABLE = settings.WARM_PYTHON.env
_REAL_VARIABLE = settings.REAL_PYTHON.env
_LEN = struct.Struct("!Q")
_STATUS = struct.Struct("!i")

_SHIM = '''#!{python} -IS
# mpnpu ut: a data script run in mpnpu's warm interpreter (mpnpu/tools/ut/warm_python.py); anything
# else, or no server listening, runs the real interpreter.
import json, os, socket, struct, sys, time

real, where, args = os.environ.get("{real}") or "{python}", os.environ.get("{sock}", ""), sys.argv[1:]


def cold():
    os.execv(real, [real, *args])


if not where or not args or args[0].startswith("-") or not os.path.isfile(args[0]):
    cold()
# While the server is still importing its packages (its pid in the marker, alive), wait for it:
# a cold start beside its imports would cost both.
deadline = time.monotonic() + {wait_s}
while not os.path.exists(where) and time.monotonic() < deadline:
    try:
        with open(os.path.join(os.path.dirname(where), "starting")) as f:
            os.kill(int(f.read()), 0)
    except (OSError, ValueError):
        break
    time.sleep(0.05)
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(where)
except OSError:
    cold()
body = json.dumps({{"argv": args, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(s, [struct.pack("!Q", len(body))], [0, 1, 2])
s.sendall(body)
got = b""
while len(got) < 4:
    more = s.recv(4 - len(got))
    if not more:
        sys.stderr.write("mpnpu: the warm interpreter's process for " + args[0] + " ended without a status\\n")
        sys.exit(1)
    got += more
sys.exit(struct.unpack("!i", got)[0])
'''


class WarmPython:
    """The server and the shims of one ``mpnpu ut`` run; use as a context manager. :meth:`environment`
    adds them to a test's environment."""

    def __init__(self, packages: Iterable[str], env: dict[str, str] | None = None) -> None:
        self.packages = sorted(set(packages))
        self.folder = tempfile.mkdtemp(prefix="mpnpu-warm-python-")
        self.socket_path = os.path.join(self.folder, "server.sock")
        for name in _NAMES:
            path = os.path.join(self.folder, name)
            with open(path, "w") as f:
                f.write(_SHIM.format(python=sys.executable, real=_REAL_VARIABLE, sock=_SOCKET_VARIABLE,
                                     wait_s=START_WAIT_S))
            os.chmod(path, 0o755)
        # The server's stdin is a pipe from here: it ends itself when this process goes, however it goes.
        self._server = subprocess.Popen([sys.executable, "-m", __name__, self.socket_path, *self.packages],
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        env=env, start_new_session=True)
        with open(os.path.join(self.folder, "starting"), "w") as f:
            f.write(str(self._server.pid))

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with the shims first on its PATH and the server's socket."""
        return {**env, "PATH": self.folder + os.pathsep + env.get("PATH", ""), _SOCKET_VARIABLE: self.socket_path,
                _REAL_VARIABLE: sys.executable}

    def ready(self, timeout_s: float) -> bool:
        """Whether the server listens (it has imported its packages) within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self._server.poll() is None:
            if os.path.exists(self.socket_path):
                return True
            time.sleep(0.05)
        return os.path.exists(self.socket_path)

    def close(self) -> None:
        """End the server and every script it is running; remove the shims."""
        if self._server.poll() is None:
            try:
                os.killpg(self._server.pid, signal.SIGKILL)  # (its children are in its process group)
            except (ProcessLookupError, PermissionError):
                pass
        if self._server.stdin is not None:
            self._server.stdin.close()
        self._server.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> WarmPython:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the server ---------------------------------------------------------------------------------------------------


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    """``n`` bytes, or fewer if the shim closed the connection first."""
    out = b""
    while len(out) < n:
        more = conn.recv(n - len(out))
        if not more:
            break
        out += more
    return out


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
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()


def _forget_shadowed(folder: str) -> None:
    """Drop the server's modules that a module of the script's own folder shadows: in a fresh
    interpreter ``sys.path[0]`` (that folder) comes first, so ``import utils`` finds the folder's."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for entry in names:
        name = entry[:-3] if entry.endswith(".py") else entry
        if name in sys.modules and name != "__main__" and (entry.endswith(".py") or
                                                           os.path.isfile(os.path.join(folder, entry, "__init__.py"))):
            for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[loaded]


def _run_as_main(script: str) -> None:
    """Run ``script`` as the ``__main__`` module, as ``python3 script`` does."""
    import builtins
    import types

    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def _child(conn: socket.socket) -> None:
    """In the forked child: take the call over and run its script; never returns."""
    import threading
    import traceback

    status = 1
    try:
        head, fds, _, _ = socket.recv_fds(conn, _LEN.size, 3)
        head += _recv_exact(conn, _LEN.size - len(head))
        size = _LEN.unpack(head)[0] if len(head) == _LEN.size else -1
        body = _recv_exact(conn, size) if size >= 0 else b""
        if len(fds) != 3 or len(body) != size:  # (a shim that went away mid-call)
            os._exit(1)
        call = json.loads(body)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(call["env"])
        os.chdir(call["cwd"])
    except (OSError, ValueError, KeyError):
        os._exit(1)

    def watch() -> None:  # the shim gone (its test timed out or was stopped): so is its script
        try:
            conn.recv(1)
        finally:
            os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # (the server's: a script's own subprocesses are waited for)
    threading.Thread(target=watch, daemon=True).start()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    script = os.path.abspath(call["argv"][0])
    sys.argv = list(call["argv"])  # (argv[0] as given; __file__ absolute, as Python 3.9+ makes it)
    sys.path[0] = os.path.dirname(script)
    _forget_shadowed(sys.path[0])
    try:
        _reseed()
        _run_as_main(script)
        status = 0
    except SystemExit as e:
        status = _exit_status(e)
    except BaseException as e:  # what a fresh interpreter prints for an uncaught exception: the script's frames
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb)
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        conn.sendall(_STATUS.pack(status))
    finally:
        os._exit(status)


def serve(socket_path: str, packages: list[str]) -> None:
    """Import ``packages`` (those that fail are left out), then fork a child per call until stdin
    ends (the ``mpnpu ut`` that started it is gone)."""
    import importlib

    for name in packages:
        try:
            importlib.import_module(name)
        except Exception:  # (a broken package: the scripts that import it say so themselves)
            pass
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # (children reaped by the kernel)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    pending = socket_path + ".new"
    server.bind(pending)
    server.listen(64)
    os.rename(pending, socket_path)  # (the shims see the socket only once it listens)
    try:
        os.unlink(os.path.join(os.path.dirname(socket_path), "starting"))
    except OSError:
        pass
    events = selectors.DefaultSelector()
    events.register(server, selectors.EVENT_READ)
    events.register(sys.stdin, selectors.EVENT_READ)
    while True:
        for key, _ in events.select():
            if key.fileobj is not server:
                if not os.read(sys.stdin.fileno(), 1024):
                    return
                continue
            conn, _ = server.accept()
            if os.fork() == 0:
                events.close()
                server.close()
                _child(conn)
            conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
