"""The unit tests' data scripts in a warm interpreter: forked from one that has already imported the
heavy packages they import, instead of a fresh ``python3`` that imports them again each time.

The public unit tests call their data scripts through the shell, once or twice per case and often
once per tiling key (``system("cd ./x_data && python3 gen_data.py ...")``). Most import numpy and
torch or TensorFlow; on the 2-CPU machine a fresh interpreter takes 3 s to import torch and 7-9 s
to import TensorFlow, which was most of the corpus's run time (one test called its two scripts
about 400 times). The kernels are not involved: this only changes how a script's process starts.

::

    mpnpu ut ──starts──► server (mpnpu.tools.ut.warm_server): listens on a Unix socket, imports the
                         packages (numpy, torch, ...), then takes calls
    test binary ─ system("python3 gen_data.py 2 96") ─► shim ``python3`` (first on the test's PATH)
        shim ── argv, folder, environment, its stdin/stdout/stderr ──► server ── fork ──► child
        child ── "taken" ──► shim ── "go" ──► child runs gen_data.py as __main__ ── its status ──► shim
        shim exits with that status

The shim runs the real interpreter instead (``os.execv``, exactly as without it) whenever the
warm one cannot stand in for it: options before the script (``python3 --version``, ``-c``,
``-m``), no script file, a standard stream closed, a start-up variable (``PYTHON*``, ``LC_*``,
``LANG``) that differs from the server's, or no server (gone, or not taking the call within
:data:`START_WAIT_S`: it is still importing). Nothing has run by then: a child runs the script
only after the shim's "go", so a call never runs twice. ``--cold-python`` (``mpnpu ut``) leaves
the shim out.

What a script sees differs from a fresh interpreter in what is already imported (its imports are
instant) and in the hash seed of ``str`` (the server's, the same in every call). Otherwise: the
random generators of ``random``, numpy and torch are reseeded from the OS in each child, as a fresh
process seeds them; ``sys.argv``, ``sys.path[0]`` (a module of the script's folder shadows one the
server imported, unless a fresh interpreter has it at start-up too), ``__file__``, the folder, the
environment and the standard streams are the call's. Its end is a fresh interpreter's: non-daemon
threads joined, the script's ``atexit`` handlers run (not those of the server's packages, which
only tidy a process that ends anyway), ``__main__``'s objects released (so its files are closed).
An uncaught exception goes to ``sys.excepthook`` and exits 1; a death by a signal, or an uncaught
``KeyboardInterrupt`` (SIGINT), ends the shim by the same signal. The script and whatever it starts
are a process group of their own, killed when the shim goes (a test's time-out kills the shim with
the test).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Iterable, Mapping

from mpnpu import settings

#: packages whose import is most of a data script's start-up, imported once by the server (those a
#: called script imports and that are installed)
HEAVY = ("numpy", "torch", "tensorflow", "scipy", "pandas", "ml_dtypes")
#: the names a test's sources call the interpreter by
_NAMES = ("python3", "python")
#: how long a call waits for the server to take it (it may still be importing) before it runs cold
START_WAIT_S = 300
_SOCKET_VARIABLE = settings.WARM_PYTHON.env
_REAL_VARIABLE = settings.REAL_PYTHON.env


def startup_variables(env: Mapping[str, str]) -> dict[str, str]:
    """The variables an interpreter reads once, at its start (a call whose values differ from the
    server's runs cold). The shim's text below repeats this rule: it runs without importing mpnpu."""
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_")) or k == "LANG"}


_SHIM = '''#!{python} -IS
# mpnpu ut: a data script run in mpnpu's warm interpreter (mpnpu/tools/ut/warm_python.py); anything
# else, or no server, runs the real interpreter.
import json, os, signal, socket, struct, sys

real, where, args = os.environ.get("{real}") or "{python}", os.environ.get("{sock}", ""), sys.argv[1:]


def cold():
    os.execv(real, [real, *args])


def streams_open():
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        return True
    except OSError:
        return False


startup = {{k: v for k, v in os.environ.items() if k.startswith(("PYTHON", "LC_")) or k == "LANG"}}
if (not where or not args or args[0].startswith("-") or not os.path.isfile(args[0]) or not streams_open()
        or startup != json.loads({startup!r})):
    cold()
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(where)
    body = json.dumps({{"argv": args, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
    socket.send_fds(s, [struct.pack("!Q", len(body))], [0, 1, 2])
    s.sendall(body)
    s.settimeout({wait_s})
    taken = s.recv(1)
    if taken != b"t":
        raise OSError("not taken")
    s.settimeout(None)
    s.sendall(b"g")
except OSError:  # (nothing has run: the child runs the script only after the "go")
    cold()
got = b""
while len(got) < 4:
    more = s.recv(4 - len(got))
    if not more:
        sys.stderr.write("mpnpu: the warm interpreter's process for " + args[0] + " ended without a status\\n")
        sys.exit(1)
    got += more
status = struct.unpack("!i", got)[0]
if status < 0:  # (the script died by signal -status, or ended an uncaught KeyboardInterrupt: end the same way)
    try:
        signal.signal(-status, signal.SIG_DFL)
    except (OSError, ValueError):  # (SIGKILL, SIGSTOP: no handler to reset)
        pass
    os.kill(os.getpid(), -status)
sys.exit(128 - status if status < 0 else status)
'''


class WarmPython:
    """The server and the shims of one ``mpnpu ut`` run; use as a context manager. :meth:`environment`
    adds them to a test's environment."""

    def __init__(self, packages: Iterable[str], env: Mapping[str, str] | None = None) -> None:
        self.packages = sorted(set(packages))
        server_env = dict(os.environ if env is None else env)
        self.folder = tempfile.mkdtemp(prefix="mpnpu-warm-python-")
        self.socket_path = os.path.join(self.folder, "server.sock")
        self._ready_path = os.path.join(self.folder, "ready")
        for name in _NAMES:
            path = os.path.join(self.folder, name)
            with open(path, "w") as f:
                f.write(_SHIM.format(python=sys.executable, real=_REAL_VARIABLE, sock=_SOCKET_VARIABLE,
                                     wait_s=START_WAIT_S, startup=json.dumps(startup_variables(server_env))))
            os.chmod(path, 0o755)
        # The server's stdin is a pipe from here: it ends itself, and its scripts, when this process
        # goes, however it goes.
        # Started in its own folder, from this mpnpu (not ``-m``, whose sys.path[0] would be the
        # caller's folder: an mpnpu/ or numpy.py there would be imported instead).
        root = os.path.dirname(os.path.dirname(os.path.abspath(settings.__file__)))
        boot = (f"import sys; sys.path.insert(0, {root!r}); from mpnpu.tools.ut.warm_server import main; "
                f"main(sys.argv[1:])")
        self._server = subprocess.Popen(
            [sys.executable, "-c", boot, self.socket_path, self._ready_path, *self.packages], cwd=self.folder,
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=server_env,
            start_new_session=True)

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with the shims first on its PATH and the server's socket."""
        return {**env, "PATH": self.folder + os.pathsep + env.get("PATH", ""), _SOCKET_VARIABLE: self.socket_path,
                _REAL_VARIABLE: sys.executable}

    def ready(self, timeout_s: float) -> bool:
        """Whether the server has imported its packages and takes calls, within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self._server.poll() is None:
            if os.path.exists(self._ready_path):
                return True
            time.sleep(0.05)
        return os.path.exists(self._ready_path) and self._server.poll() is None

    def close(self) -> None:
        """End the server and every script it is running (each in a process group of its own);
        remove the shims."""
        if self._server.stdin is not None:
            self._server.stdin.close()  # (the server kills its scripts' groups, then ends)
        try:
            self._server.wait(10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self._server.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._server.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> WarmPython:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
