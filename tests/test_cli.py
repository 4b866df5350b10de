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
    assert [c.name for c in commands()] == ["audit", "batch", "investigate", "mutate", "run", "samples", "soak",
                                            "stress", "ut"]
    assert [c.name for c in find(["soak"]).subcommands] == ["fixed", "stress", "watchdog"]


def test_every_option_has_one_spelling_in_the_one_table():
    flags = [o.flag for o in OPTIONS.values()] + [f for o in OPTIONS.values() for f in o.former]
    assert len(flags) == len(set(flags))
    assert all(o.group in GROUPS for o in OPTIONS.values())
    for command in _all_commands():
        names = _names(command)
        assert len(names) == len(set(names)), command.name
        assert set(names) <= set(OPTIONS), command.name
        # what every command has, and what every command that runs a device has (mutate runs programs,
        # each with its own device, set up from the environment as any CPU-debug run)
        assert {"json", "quiet"} <= set(names), command.name
        if command.name != "mutate":
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


def test_the_audits_help_lists_every_exit_status_it_returns(capsys):
    """The audit exits 1 when the operator with every sync point in place fails (the refused baseline,
    test_user_kernel.py), a status its help did not list."""
    from mpnpu.cli.commands.audit import COMMAND

    with pytest.raises(SystemExit):
        COMMAND.main(["--help"], "mpnpu audit")
    text = " ".join(capsys.readouterr().out.split())
    assert ("Exit 0 when the audit ran, 1 when the operator with every sync in place fails a scouted case (the "
            "baseline it needs), 2 for usage errors, 3 for device errors, 130/143 when interrupted.") in text


def test_mpnpu_help_lists_the_commands(capsys):
    assert cli(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {c.name} " in out for c in commands())
    assert cli(["frobnicate"]) == ExitCode.USAGE
    assert capsys.readouterr().err.strip() == ("mpnpu: error: unknown command 'frobnicate'; choose from audit, batch, "
                                              "investigate, mutate, run, samples, soak, stress, ut (see --help)")
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


# -- help that says whose options it shows, examples with --op, a cap named as one (issue 21, item 9) ----


def _help(command_name: str, *argv: str, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        find([command_name]).main([*argv, "--help"], f"mpnpu {command_name}")
    assert exit_.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines: compare words


@pytest.mark.parametrize("name", ["batch", "stress", "audit", "investigate"])
def test_help_without_op_says_the_operator_options_are_the_default_operators(name, capsys):
    plain = _help(name, capsys=capsys)
    assert "options of the default operator (floms: fused_linear_online_max_sum), not of every operator:" in plain
    assert f"Without --op, this help shows the default operator's (floms) sync points and options; mpnpu {name} " \
           "--op NAME --help shows another operator's." in plain
    chosen = _help(name, "--op", "floms", capsys=capsys)
    assert "options of operator fused_linear_online_max_sum:" in chosen and "Without --op" not in chosen
    # An operator without options of its own: no such group at all.
    assert "options of" not in _help(name, "--op", "vecin-early-read", capsys=capsys)


@pytest.mark.parametrize("name", ["batch", "stress", "audit", "investigate"])
def test_help_examples_name_an_operator(name, capsys):
    text = _help(name, "--op", "floms", capsys=capsys)
    examples = text[text.index("Example"):]
    assert f"mpnpu {name} --op " in examples


def test_the_time_limit_is_a_cap_and_the_old_spelling_still_works(capsys):
    from mpnpu.cli.commands.stress import COMMAND as STRESS

    o = OPTIONS["time_limit"]
    assert o.flag == "--time-limit" and o.former == ("--duration",)
    assert "a cap on the run time" in o.help and "not a length to run for" in o.help
    args, _ = STRESS.parse(["--duration", "60"])
    assert args.time_limit == 60.0
    args, _ = STRESS.parse(["--time-limit", "inf"])
    assert args.time_limit is None
    text = _help("stress", capsys=capsys)
    assert "--time-limit SECONDS" in text and "--duration" not in text


def test_the_pytest_plugin_has_an_extra_that_installs_pytest():
    """The plugin is installed with mpnpu, pytest is not: the `pytest` extra brings it, and the
    plugin's page says so."""
    import re

    text = (REPO / "pyproject.toml").read_text()
    extras = dict(re.findall(r'^(\w+) = \[(.*)\]$', text.split("[project.optional-dependencies]")[1].split("\n[")[0],
                             re.M))
    assert '"pytest>=7"' in extras["pytest"]
    assert '"mpnpu[pytest]"' in extras["test"]
    assert "pytest" not in text.split("dependencies = [")[1].split("]")[0]  # not a dependency of mpnpu itself
    assert "pip install 'mpnpu[pytest]'" in (REPO / "docs" / "pytest-plugin.md").read_text()
