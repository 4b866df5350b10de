"""docs/writing-kernels.md cannot rot: every code block in it is run here, in document order.

- ```python blocks whose first line is ``# NAME.py`` are written to that file (``# NAME.py
  (continued)`` appends to it); every other python block is run as a script and must exit 0.
- ```sh blocks are run line by line; each line must be an mpnpu command (``mpnpu …``, ``python -m mpnpu.…`` or
  ``python scripts/…``) and must exit 0.
- ```text blocks are sample output. The lines of a racecheck report in them (``======``) that do not
  depend on timing must appear verbatim in the output of the command run just before.
- ```toml blocks must be entries of the project's own pyproject.toml.

Everything runs in a temporary directory named ``guide`` (race reports name files as
``guide/rmsnorm.py:LINE``, as the sample output does).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "writing-kernels.md"
FILE_BLOCK = re.compile(r"^# (\S+\.py)( \(continued\))?$")
TIMEOUT_S = 120


def blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]


def _run(argv: list[str], cwd: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _command(line: str) -> list[str]:
    argv = shlex.split(line)
    if argv[0] == "mpnpu":  # the command, as installed (python -m mpnpu is the same)
        return [sys.executable, "-m", "mpnpu", *argv[1:]]
    assert argv[0] == "python" and (argv[1:2] == ["-m"] and argv[2].startswith("mpnpu.")
                                     or argv[1].startswith("scripts/")), f"not an mpnpu command: {line}"
    if argv[1].startswith("scripts/"):
        argv[1] = str(ROOT / argv[1])
    return [sys.executable, *argv[1:]]


def _report_lines(sample: str) -> list[str]:
    """Lines of a racecheck report in sample output, minus what depends on the machine's timing."""
    return [line.strip() for line in sample.splitlines() if line.strip().startswith("======")]


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks")
def test_every_code_block_of_the_guide_runs(tmp_path):
    work = tmp_path / "guide"
    work.mkdir()
    all_blocks = blocks(GUIDE.read_text())
    assert {lang for lang, _ in all_blocks} <= {"python", "sh", "text", "toml"}, "a block the test cannot check"
    last_output, ran = "", 0
    for i, (lang, body) in enumerate(all_blocks):
        if lang == "python":
            first = body.splitlines()[0]
            m = FILE_BLOCK.match(first)
            if m:
                path = work / m.group(1)
                assert bool(m.group(2)) == path.exists(), f"block {i}: {first!r} out of order"
                with open(path, "a") as f:
                    f.write(body)
                continue
            script = work / f"block_{i}.py"
            script.write_text(body)
            last_output = _run([sys.executable, str(script)], work)
            ran += 1
        elif lang == "sh":
            for line in filter(None, (raw.strip() for raw in body.splitlines())):
                last_output = _run(_command(line), work)
                ran += 1
        elif lang == "text":
            missing = [line for line in _report_lines(body) if line not in last_output]
            assert not missing, f"block {i}: sample lines not in the output:\n{missing}\n--- output:\n{last_output}"
    assert ran >= 5


def test_guide_toml_blocks_are_the_projects_own_entries():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    toml_blocks = [body for lang, body in blocks(GUIDE.read_text()) if lang == "toml"]
    assert toml_blocks
    for body in toml_blocks:
        for group, entries in tomllib.loads(body)["project"]["entry-points"].items():
            for name, ref in entries.items():
                assert project["entry-points"][group][name] == ref


def test_guide_gallery_table_names_every_registered_gallery_operator():
    from mpnpu.operators.registry import registered

    text = GUIDE.read_text()
    ascendc = (ROOT / "docs" / "ascendc.md").read_text()
    for name, entry in registered().items():
        if not entry.value.startswith("mpnpu.kernels.") or name in ("floms", "floms-cxx", "floms-public"):
            continue  # (FLOMS: not gallery)
        if name.endswith("-cxx"):  # the Ascend C gallery has its own table
            assert f"| `{name}` |" in ascendc, f"{name} is registered but not in docs/ascendc.md's gallery table"
            assert f"| `{name[:-4]}` |" in text, f"{name} has no Python twin in the guide's gallery table"
        else:
            assert f"| `{name}` |" in text, f"{name} is registered but not in the guide's gallery table"
