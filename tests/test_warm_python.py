"""The unit tests' data scripts in a warm interpreter (mpnpu.tools.ut.warm_python and warm_server): a
script called as ``python3 script.py ...`` through the shell runs forked from a server that has
imported numpy, and does what it does in a fresh interpreter (each script below is run both ways
and compared); anything else runs the real interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from mpnpu.tools.ut.warm_python import WarmPython
from tests.waiting import wait_for

pytestmark = pytest.mark.usefixtures("no_leaks")

#: first line of every script's output: whether numpy was there before the script imported it
SAYS_WARM = 'import sys\nprint("warm" if "numpy" in sys.modules else "cold")\n'


@pytest.fixture
def warm():
    with WarmPython(["numpy"]) as w:
        assert w.ready(120), "the server did not take calls"
        yield w


def _cold_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env["PATH"]}


def _both(warm: WarmPython, command: str, cwd: Path, **extra: str) -> tuple[subprocess.CompletedProcess, ...]:
    """``command`` through the shell in ``cwd``: (with the warm interpreter, with a fresh one)."""
    env = {**os.environ, "MY_SETTING": "seven", **extra}
    return tuple(subprocess.run(["sh", "-c", command], cwd=cwd, env=e, capture_output=True, text=True, timeout=120)
                 for e in (warm.environment(env), _cold_env(env)))


def _same(w: subprocess.CompletedProcess, c: subprocess.CompletedProcess) -> None:
    """The two runs did the same, but for the first line (warm / cold)."""
    assert w.stdout.splitlines()[:1] == ["warm"] and c.stdout.splitlines()[:1] == ["cold"], (w, c)
    assert (w.returncode, w.stdout.splitlines()[1:], w.stderr) == (c.returncode, c.stdout.splitlines()[1:], c.stderr)


def test_a_script_sees_its_arguments_folder_environment_and_stdin_as_in_a_fresh_interpreter(warm, tmp_path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "gen.py").write_text(SAYS_WARM + (
        "import os, numpy as np\n"
        "print(sys.argv, os.getcwd(), __file__, __name__, os.environ.get('MY_SETTING'), sys.path[0])\n"
        "print('stdin:', sys.stdin.readline().strip())\n"
        "print(type(__loader__).__name__, __cached__, __spec__, __package__)\n"
        "sys.exit(int(sys.argv[1]))\n"))
    for code in (0, 3):
        _same(*_both(warm, f"cd data && echo hello | python3 gen.py {code} x", tmp_path))
    # each call's generators are seeded afresh (a fork would otherwise repeat the server's sequence)
    (tmp_path / "r.py").write_text(SAYS_WARM + "import numpy as np, random\nprint(np.random.randint(1 << 30), "
                                               "random.random())\n")
    draws = [_both(warm, "python3 r.py", tmp_path)[0].stdout for _ in range(2)]
    assert draws[0] != draws[1] and all(d.startswith("warm\n") for d in draws)


def test_the_end_of_a_script_is_a_fresh_interpreters(warm, tmp_path) -> None:
    """atexit handlers run, a non-daemon thread is joined, a file left open is flushed and closed; an
    uncaught exception goes to sys.excepthook (the script's frames only) and exits 1;
    KeyboardInterrupt exits 130, a death by SIGKILL 137; sys.exit with a message prints it, exits 1."""
    (tmp_path / "end.py").write_text(SAYS_WARM + (
        "import atexit, threading, time\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "left = open(sys.argv[1], 'w'); left.write('kept')\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread joined'))).start()\n"))
    for run in _both(warm, "python3 end.py w.txt && cat w.txt && echo", tmp_path):
        assert run.returncode == 0 and run.stdout.splitlines()[1:] == ["thread joined", "atexit ran", "kept"], run
    (tmp_path / "bad.py").write_text(SAYS_WARM + "def f():\n    raise ValueError('no such shape')\n\nf()\n")
    w, c = _both(warm, "python bad.py", tmp_path)
    _same(w, c)
    assert w.returncode == 1 and w.stderr.splitlines()[-1] == "ValueError: no such shape"
    for body, code in (("raise KeyboardInterrupt\n", 130), ("import os, signal\nos.kill(os.getpid(), 9)\n", 137),
                       ("sys.exit('no data for this shape')\n", 1)):
        (tmp_path / "x.py").write_text(SAYS_WARM + body)
        w, c = _both(warm, "python3 x.py; echo status $?", tmp_path)
        assert w.stdout.splitlines()[-1] == c.stdout.splitlines()[-1] == f"status {code}", (w, c)
        assert w.stderr.splitlines()[-1:] == c.stderr.splitlines()[-1:], (w.stderr, c.stderr)


def test_modules_of_the_scripts_folder_shadow_as_in_a_fresh_interpreter(warm, tmp_path) -> None:
    """The server has imported json (numpy and mpnpu do); a json.py beside the script is the one it
    gets, as sys.path[0] gives it in a fresh interpreter. An operator.py shadows the standard module
    as it does in a fresh interpreter (there, only if the interpreter has not loaded it before the
    script: that depends on the installation), and the child's own machinery is not disturbed by it
    (random, which imports operator, was imported before)."""
    (tmp_path / "json.py").write_text("MINE = True\n")
    (tmp_path / "operator.py").write_text("MINE = True\n")
    (tmp_path / "s.py").write_text(SAYS_WARM + "import json, operator\nprint(hasattr(json, 'MINE'), "
                                               "hasattr(operator, 'MINE'))\n")
    w, c = _both(warm, "python3 s.py", tmp_path)
    _same(w, c)
    assert w.stdout.splitlines()[1].startswith("True ")


def test_what_the_warm_interpreter_cannot_stand_in_for_runs_cold(warm, tmp_path) -> None:
    """Options before the script, a closed stdin, a start-up variable other than the server's: the
    real interpreter runs it."""
    (tmp_path / "s.py").write_text(SAYS_WARM)
    for command, extra in (("python3 --version", {}), ("python3 -c 'import sys; print(\"numpy\" in sys.modules)'", {}),
                           ("python3 s.py <&-", {}), ("python3 s.py", {"PYTHONPATH": str(tmp_path)})):
        w, c = _both(warm, command, tmp_path, **extra)
        assert (w.returncode, w.stdout, w.stderr) == (c.returncode, c.stdout, c.stderr), command
        assert "warm" not in w.stdout


def test_a_server_that_dies_importing_leaves_every_call_to_the_real_interpreter(tmp_path) -> None:
    (tmp_path / "dies_on_import.py").write_text("import os\nos._exit(3)\n")
    (tmp_path / "s.py").write_text(SAYS_WARM + "print('ran')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with WarmPython(["dies_on_import"], env=env) as warm:
        assert not warm.ready(60)
        # (the call's time-out is well under the server's START_WAIT_S: it did not wait for it)
        r = subprocess.run(["sh", "-c", "python3 s.py"], cwd=tmp_path, env=warm.environment(env), capture_output=True,
                           text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, "cold\nran\n"), r.stderr


def test_a_script_and_what_it_started_end_with_its_caller_and_close_ends_the_server(tmp_path) -> None:
    """A test's time-out ends the shell and the shim: the forked script and the process it started go
    with them; close() ends the server and removes the shims."""
    (tmp_path / "spin.py").write_text(
        "import os, subprocess, time\np = subprocess.Popen(['sleep', '600'])\n"
        "open('pids', 'w').write(f'{os.getpid()} {p.pid}')\ntime.sleep(600)\n")
    with WarmPython(["numpy"]) as warm:
        assert warm.ready(120)
        caller = subprocess.Popen(["sh", "-c", "exec python3 spin.py"], cwd=tmp_path,
                                  env=warm.environment(dict(os.environ)), start_new_session=True)
        assert wait_for(lambda: (tmp_path / "pids").exists() and len((tmp_path / "pids").read_text().split()) == 2, 60)
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        assert caller.pid not in pids and all(psutil.pid_exists(p) for p in pids)
        os.killpg(caller.pid, 9)
        caller.wait(10)

        def gone(pid: int) -> bool:
            try:
                return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return True

        assert wait_for(lambda: all(gone(p) for p in pids), 10), pids
        folder = warm.folder
    assert not os.path.exists(folder)
