"""The unit tests' data scripts in a warm interpreter (mpnpu.tools.ut.warm_python): a script called as
``python3 script.py ...`` through the shell runs forked from a server that has imported numpy, and
sees what a fresh interpreter would give it; anything else runs the real interpreter."""

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

SCRIPT = """\
import os, sys
print("warm" if "numpy" in sys.modules else "cold")
import numpy as np
print(sys.argv, os.getcwd(), __file__, __name__, os.environ.get("MY_SETTING"))
print("stdin:", sys.stdin.readline().strip())
print("random:", np.random.randint(1 << 30))
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def warm(tmp_path: Path):
    with WarmPython(["numpy"]) as w:
        assert w.ready(120), "the server did not listen"
        yield w


def _sh(warm: WarmPython, command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = warm.environment({**os.environ, "MY_SETTING": "seven"})
    return subprocess.run(["sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_script_runs_forked_from_the_warm_server_as_a_fresh_interpreter_would_run_it(warm, tmp_path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "gen.py").write_text(SCRIPT)
    runs = [_sh(warm, f"cd data && echo hello | python3 gen.py {code} x", tmp_path) for code in (0, 3)]
    for r, code in zip(runs, (0, 3)):
        lines = r.stdout.splitlines()
        assert r.returncode == code and lines[0] == "warm", (r.stdout, r.stderr)
        assert lines[1] == str(["gen.py", str(code), "x"]) + f" {tmp_path / 'data'} {tmp_path / 'data' / 'gen.py'} " \
                           "__main__ seven"
        assert lines[2] == "stdin: hello"
    # each call's generators are seeded afresh (a fork would otherwise repeat the server's sequence)
    assert runs[0].stdout.splitlines()[3] != runs[1].stdout.splitlines()[3]
    # --cold-python's way: the same script in a fresh interpreter says so
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    cold = subprocess.run(["sh", "-c", "cd data && echo hello | python3 gen.py 0 x"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PATH": path})
    assert cold.stdout.splitlines()[0] == "cold" and cold.returncode == 0


def test_an_uncaught_exception_prints_the_scripts_traceback_and_exits_1(warm, tmp_path) -> None:
    (tmp_path / "bad.py").write_text("def f():\n    raise ValueError('no such shape')\n\nf()\n")
    r = _sh(warm, "python bad.py", tmp_path)
    assert r.returncode == 1
    assert r.stderr.splitlines() == ["Traceback (most recent call last):",
                                     f'  File "{tmp_path / "bad.py"}", line 4, in <module>', "    f()",
                                     f'  File "{tmp_path / "bad.py"}", line 2, in f',
                                     "    raise ValueError('no such shape')", "ValueError: no such shape"]


def test_a_module_of_the_scripts_folder_shadows_one_the_server_imported(warm, tmp_path) -> None:
    """numpy imports ``json`` (among others); a script folder with its own json.py gets that one, as a
    fresh interpreter (the script's folder first on sys.path) gives it."""
    (tmp_path / "json.py").write_text("MINE = True\n")
    (tmp_path / "s.py").write_text("import json, numpy\nprint(getattr(json, 'MINE', False), numpy.__name__)\n")
    r = _sh(warm, "python3 s.py", tmp_path)
    assert (r.returncode, r.stdout) == (0, "True numpy\n"), r.stderr


def test_other_calls_run_the_real_interpreter(warm, tmp_path) -> None:
    r = _sh(warm, "python3 --version && python3 -c 'import sys; print(\"numpy\" in sys.modules)'", tmp_path)
    assert r.returncode == 0 and r.stdout.splitlines() == [f"Python {sys.version.split()[0]}", "False"], r


def test_a_script_ends_with_its_caller_and_close_ends_the_server(tmp_path) -> None:
    """A test's time-out ends the shell and the shim: the forked script goes with them; close() ends
    the server and removes the shims."""
    (tmp_path / "spin.py").write_text("import os, time\nopen('pid', 'w').write(str(os.getpid()))\ntime.sleep(600)\n")
    with WarmPython(["numpy"]) as warm:
        assert warm.ready(120)
        caller = subprocess.Popen(["sh", "-c", "exec python3 spin.py"], cwd=tmp_path,
                                  env=warm.environment(dict(os.environ)), start_new_session=True)
        assert wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text(), 60)
        script = int((tmp_path / "pid").read_text())
        assert script != caller.pid and psutil.pid_exists(script)
        os.killpg(caller.pid, 9)
        caller.wait(10)
        assert wait_for(lambda: not psutil.pid_exists(script) or psutil.Process(script).status() == "zombie", 10)
        folder = warm.folder
    assert not os.path.exists(folder)
