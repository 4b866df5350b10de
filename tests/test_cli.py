"""The mpnpu command: one option table, subcommands found by module, the aliases of earlier releases.

The commands' behaviour (exit codes, reports, JSON) is tested per command (test_batch_cli.py,
test_stress_cli.py, test_investigate.py, test_confirm.py); here, the shape of the command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mpnpu.cli.command import Use
from mpnpu.cli.common import run_cli
from mpnpu.cli.main import cli, commands, find
from mpnpu.cli.options import DEVICE, GROUPS, OPTIONS, REPORTS
from mpnpu.errors import ExitCode

REPO = Path(__file__).resolve().parent.parent


def _all_commands():
    for c in commands():
        yield from (c.subcommands or (c,))


def _names(command) -> list[str]:
    return [u.name if isinstance(u, Use) else u for u in command.options]


def test_the_subcommands_are_the_modules_of_cli_commands():
    assert [c.name for c in commands()] == ["audit", "batch", "investigate", "run", "soak", "stress"]
    assert [c.name for c in find(["soak"]).subcommands] == ["fixed", "stress", "watchdog"]


def test_every_option_has_one_spelling_in_the_one_table():
    flags = [o.flag for o in OPTIONS.values()] + [f for o in OPTIONS.values() for f in o.former]
    assert len(flags) == len(set(flags))
    assert all(o.group in GROUPS for o in OPTIONS.values())
    for command in _all_commands():
        names = _names(command)
        assert len(names) == len(set(names)), command.name
        assert set(names) <= set(OPTIONS), command.name
        # what every command has, and what every command that runs a device has
        assert {"json", "quiet"} <= set(names), command.name
        assert set(DEVICE) <= set(names), command.name
        assert all(OPTIONS[n].report for n in names if OPTIONS[n].group == REPORTS
                   and n not in ("quiet", "verbose", "timeline_case")), command.name


@pytest.mark.parametrize("command", list(_all_commands()), ids=lambda c: c.name)
def test_help_lists_the_options_grouped(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        command.main(["--help"], f"mpnpu {command.name}")
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for group in GROUPS[:2]:
        assert f"{group}:" in out
    for name in _names(command):
        o = OPTIONS[name]
        assert (o.kwargs.get("metavar", o.flag) if o.positional else o.flag) in out
    for o in OPTIONS.values():
        for former in o.former:
            assert former + " " not in out  # accepted, not shown


def test_mpnpu_help_lists_the_commands(capsys):
    assert cli(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {c.name} " in out for c in commands())
    assert cli(["frobnicate"]) == ExitCode.USAGE
    assert capsys.readouterr().err.strip() == ("mpnpu: error: unknown command 'frobnicate'; choose from audit, batch, "
                                              "investigate, run, soak, stress (see --help)")
    assert cli(["batch", "--frobnicate"]) == ExitCode.USAGE
    assert capsys.readouterr().err.startswith("mpnpu batch: error: unrecognized arguments: --frobnicate")


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("argv, prog", [
    ([sys.executable, "-m", "mpnpu", "batch"], "mpnpu batch"),
    ([sys.executable, "-m", "mpnpu.batch"], "mpnpu.batch"),
    ([str(Path(sys.executable).parent / "mpnpu-batch")], "mpnpu-batch"),
])
def test_the_command_and_its_aliases_run_the_same_code(argv, prog):
    if not Path(argv[0]).exists():
        pytest.skip(f"{argv[0]} is not installed here")
    done = _run(*argv, "--cases", "0")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"{prog}: error: argument --cases: expected a positive integer, got 0 (see --help)"


def test_a_soak_writes_json_and_junit(tmp_path):
    js, xml = tmp_path / "w.json", tmp_path / "w.xml"
    done = _run(sys.executable, "-m", "mpnpu", "soak", "watchdog", "--rounds", "3", "--quiet", "--json", str(js),
                "--junit", str(xml))
    assert done.returncode == 0, done.stderr
    data = json.loads(js.read_text())
    assert data["launches"] == 9 and data["failed_launches"] == 0 and data["kernels"] == ["mode1_pairs",
                                                                                          "mode2_fan_in", "mode0_all"]
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "0"


def test_a_bad_dtype_reaching_the_device_is_one_line_exit_2(capsys):
    from mpnpu import Device

    def main(argv):
        with Device(1) as dev:
            dev.empty("x", 4, "complex64")
        return 0

    assert run_cli(main, [], prog="mpnpu batch") == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mpnpu batch: error: unknown dtype 'complex64'")


def test_list_syncs_prints_the_operators_sync_points_as_drop_sync_takes_them(capsys):
    from mpnpu.operators.registry import load_operator

    assert cli(["batch", "--list-syncs", "--op", "flag-reuse"]) == 0
    out = capsys.readouterr().out.splitlines()
    op = load_operator("flag-reuse")
    assert out[0] == f"{op.name}: {len(op.sync_points)} sync points"
    listed = {line.split()[0]: line for line in out[1:]}
    assert set(listed) == set(op.sync_points)
    for name in op.variants["incident"]:
        assert "dropped by incident" in listed[name]
