"""The one settings table (mpnpu.settings), enforced: every MPNPU_* variable the package reads is
read through it, no help text repeats a default, and a setting's spellings (command-line flag,
variable, pytest option) name one setting and give one value for the same text."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path
from typing import Any

import pytest

from mpnpu import settings
from mpnpu.cli.command import Command
from mpnpu.cli.common import run_cli
from mpnpu.cli.main import commands, find
from mpnpu.cli.options import OPTIONS
from mpnpu.errors import ExitCode, UsageError
from mpnpu.settings import SETTINGS, Setting, from_env, show
from mpnpu.testing import plugin

REPO = Path(__file__).resolve().parent.parent
#: the installed package: mpnpu/ and the kernels installed as mpnpu.kernels
SOURCES = sorted([*(REPO / "mpnpu").rglob("*.py"), *(REPO / "kernels").rglob("*.py")])
TABLE = REPO / "mpnpu" / "settings.py"


# -- every MPNPU_* variable is read through the table ---------------------------------------------


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ``."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


def environment_reads(source: str) -> list[tuple[int, ast.expr]]:
    """(line, key) of every read of one variable: ``os.environ.get(K)``, ``os.getenv(K)``,
    ``os.environ[K]`` (not as an assignment target) and ``K in os.environ``."""
    reads = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr in ("get", "pop") and _is_environ(f.value)) or (
                    isinstance(f, ast.Attribute) and f.attr == "getenv") or (
                    isinstance(f, ast.Name) and f.id == "getenv"):
                reads.append((node.lineno, node.args[0]))
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            reads.append((node.lineno, node.slice))
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                and any(_is_environ(c) for c in node.comparators):
            reads.append((node.lineno, node.left))
    return reads


def test_the_scan_sees_every_form_of_read():
    source = ('import os\nfrom os import environ, getenv\nos.environ.get("MPNPU_A")\nos.getenv(NAME)\n'
              'getenv("B")\nenviron["MPNPU_C"]\nos.environ["D"] = "1"\n"MPNPU_E" in os.environ\n')
    keys = [ast.unparse(k) for _, k in environment_reads(source)]
    assert keys == ["'MPNPU_A'", "NAME", "'B'", "'MPNPU_C'", "'MPNPU_E'"]


def test_every_mpnpu_variable_is_read_through_the_table():
    """Outside mpnpu/settings.py a module reads a variable only by a literal name that is not
    MPNPU_* (CXX, NM, XDG_CACHE_HOME): a key held in a name could be one of ours."""
    bad = []
    for path in SOURCES:
        if path == TABLE:
            continue
        for line, key in environment_reads(path.read_text()):
            literal = isinstance(key, ast.Constant) and isinstance(key.value, str)
            if not literal or key.value.startswith("MPNPU_"):  # type: ignore[union-attr]
                bad.append(f"{path.relative_to(REPO)}:{line}: reads {ast.unparse(key)} (use mpnpu.settings.from_env)")
    assert bad == []


def test_every_variable_name_kept_outside_the_table_is_a_setting_of_it():
    """A module that keeps a variable's name (``NATIVE_SYNC_ENV = "MPNPU_NATIVE_SYNC"``, for its
    callers) keeps one the table has."""
    envs = {s.env for s in SETTINGS.values() if s.env}
    bad = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and any(isinstance(t, ast.Name) and t.id.endswith("ENV") for t in node.targets)):
                continue
            name = node.value.value
            if isinstance(name, str) and name.startswith("MPNPU_") and name not in envs:
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
    assert bad == []


def test_every_setting_is_in_the_table_and_used():
    """Each Setting defined in the module is in SETTINGS under its name, and named by a module
    other than the table (so no row is dead)."""
    defined = {name: s for name, s in vars(settings).items() if isinstance(s, Setting)}
    assert sorted(s.name for s in defined.values()) == sorted(SETTINGS)
    assert all(SETTINGS[s.name] is s for s in defined.values())
    text = "\n".join(p.read_text() for p in SOURCES if p != TABLE)
    unused = [name for name in defined if not re.search(rf"\b{name}\b", text)]
    assert unused == []


# -- defaults are written once ---------------------------------------------------------------------


def _help_templates() -> list[tuple[str, str]]:
    """(where, text) of every help text as written, before ``{default}`` is filled in."""
    from mpnpu.operators.registry import load_operator

    out = [(f"option {o.flag}", o.help) for o in OPTIONS.values()]
    for s in SETTINGS.values():
        out += [(f"setting {s.name}", t) for t in (s.help, s.env_help, s.pytest_help) if t]
    op = load_operator("floms")

    def walk(cs: list[Command] | tuple[Command, ...]) -> None:
        for c in cs:
            epilog = c.epilog(op) if callable(c.epilog) else c.epilog
            out.extend([(f"command {c.name}", c.help), (f"command {c.name}", c.description),
                        (f"command {c.name}", epilog)])
            walk(c.subcommands)

    walk(commands())
    return out


def test_no_help_text_writes_a_default_of_the_table():
    """``(default 300)``, ``'kernel' (default)``, ``default: 1``: a default next to the word is
    written by hand; the table's defaults go in as ``{default}``."""
    bad = []
    for s in SETTINGS.values():
        if s.default is None or isinstance(s.default, bool):
            continue
        shown = re.escape(show(s.default))
        pattern = re.compile(rf"\bdefault\b\W{{0,3}}(?:is\s+)?'?{shown}\b|\b{shown}'?\s*\(default\)")
        bad += [f"{where}: {text!r} writes {s.name}'s default" for where, text in _help_templates()
                if pattern.search(text.replace("{default}", "<filled in>"))]
    assert bad == []


def test_the_runtime_takes_its_defaults_from_the_table():
    from mpnpu.runtime import cpuset
    from mpnpu.runtime.config import DEFAULT_BLOCK_DIM, DEFAULT_OPTIONS

    assert DEFAULT_OPTIONS.launch_timeout_s == settings.TIMEOUT.default
    assert DEFAULT_OPTIONS.pipes == settings.PIPES.default
    assert DEFAULT_OPTIONS.pipe_latency_us == settings.PIPE_LATENCY_US.default
    assert DEFAULT_OPTIONS.gm_poison == settings.POISON.default
    assert DEFAULT_BLOCK_DIM == settings.BLOCK_DIM.default
    assert cpuset.DEFAULT_CPUS_PER_CORE == settings.CPUS_PER_CORE.default
    assert cpuset.EMULATE_ENV == settings.EMULATE_CPUS.env


def test_mpnpu_help_lists_every_variable_from_the_table(capsys):
    from mpnpu.cli.main import cli

    assert cli(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {s.env} " in out or f"  {s.env}\n" in out for s in SETTINGS.values() if s.env)
    assert f"may take (default {show(settings.TIMEOUT.default)})" in out


def test_help_shows_the_default_of_the_table(capsys):
    """--timeout is None until given (the runtime's default then applies), and its help shows
    that default, the table's."""
    with pytest.raises(SystemExit):
        find(["batch"]).main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"give up a launch after this long (default {show(settings.TIMEOUT.default)})" in out
    assert f"(default {show(settings.PIPE_LATENCY_US.default)})" in out


# -- one setting, one value, whatever the spelling ------------------------------------------------

#: a value to write for the settings whose default is none (the others are written as their default)
_SAMPLES = {"drop_sync": "S1, S2", "timeline": "{tmp}/t.json", "poison": "0xFF", "min_score": "0.5"}


def _sample(s: Setting[Any], tmp_path: Path) -> str:
    if s.switch:
        return "1"
    if s.default is None:
        return _SAMPLES[s.name].format(tmp=tmp_path)
    return show(s.default)


def _from_flag(s: Setting[Any], text: str) -> Any:
    o = OPTIONS[s.name]
    p = argparse.ArgumentParser()
    p.add_argument(o.flag, *o.former, dest=o.dest, **o.kwargs)
    return getattr(p.parse_args([o.flag] if s.switch else [o.flag, text]), o.dest)


@pytest.mark.parametrize("s", [s for s in SETTINGS.values() if len([x for x in (s.flag, s.env, s.pytest) if x]) > 1],
                         ids=lambda s: s.name)
def test_every_spelling_names_one_setting_and_gives_one_value(s, tmp_path, monkeypatch, pytestconfig):
    for spelling in s.spellings:  # (and no other setting answers to it)
        assert [t for t in SETTINGS.values() if spelling in t.spellings] == [s]
    text = _sample(s, tmp_path)
    values = {}
    if s.flag:
        o = OPTIONS[s.name]
        assert (o.setting, o.flag, o.former) == (s, s.flag, s.former)
        values["flag"] = _from_flag(s, text)
    if s.env:
        monkeypatch.setenv(s.env, text)
        values["env"] = from_env(s)
    if s.pytest:
        assert s in plugin.OPTIONS
        if pytestconfig.pluginmanager.has_plugin("mpnpu"):
            pytestconfig.getoption(s.pytest)  # registered under that spelling
        kwargs = plugin.option_kwargs(s)
        values["pytest"] = True if s.switch else kwargs["type"](text)
    assert len(set(map(repr, values.values()))) == 1, values


def test_only_the_table_makes_the_options_of_settings():
    """A flag of a setting is made from the setting (never a second option of the same spelling),
    and the plugin adds exactly the settings that have a pytest spelling."""
    made = {o.flag for o in OPTIONS.values() if o.setting is not None}
    assert made == {s.flag for s in SETTINGS.values() if s.flag}
    assert set(plugin.OPTIONS) == {s for s in SETTINGS.values() if s.pytest}


# -- a bad value is one line, exit 2 ---------------------------------------------------------------


#: parsers that take any text (what it names is checked where it is used)
_ANY_TEXT = (settings.path, settings.names)


@pytest.mark.parametrize("s", [s for s in SETTINGS.values() if s.env and s.parse not in _ANY_TEXT],
                         ids=lambda s: s.name)
def test_a_bad_value_of_a_variable_is_one_usage_error_naming_it(s, monkeypatch, tmp_path):
    bad = "/no/such/dir/x.json" if s.parse is settings.writable_path else "-many"
    monkeypatch.setenv(s.env, bad)
    with pytest.raises(UsageError) as e:
        from_env(s)
    assert str(e.value).startswith(f"{s.env}={bad!r}: ") and "\n" not in str(e.value)


def test_unset_or_blank_is_the_default(monkeypatch):
    for s in SETTINGS.values():
        if s.env:
            monkeypatch.setenv(s.env, "  ")
            assert from_env(s) == s.default
            monkeypatch.delenv(s.env)
            assert from_env(s) == s.default


def test_switches_and_racecheck_read_as_documented():
    words = ("1", "on", "YES", "true", "0", "off", "no", "False")
    assert [settings.switch(t) for t in words] == [True] * 4 + [False] * 4
    assert [settings.racecheck_mode(t) for t in ("1", "fail", "0")] == [True, "fail", False]
    assert settings.names(" a.cpp:3, ,b.cpp:4 ") == ("a.cpp:3", "b.cpp:4")


def test_a_command_stops_on_a_bad_variable_with_one_line(monkeypatch, capsys):
    """MPNPU_PROGRESS_EVERY is read by the progress bar (stderr is no terminal here), before any
    device starts: one line, exit 2."""
    monkeypatch.setenv(settings.PROGRESS_EVERY.env, "often")
    watchdog = find(["soak", "watchdog"])
    assert run_cli(lambda a: watchdog.main(a), ["--rounds", "1"], prog="mpnpu soak watchdog") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err == ("mpnpu soak watchdog: error: MPNPU_PROGRESS_EVERY='often': expected seconds >= 0, "
                   "got 'often'\n")


def test_the_table_sits_under_everything():
    """The table imports nothing of mpnpu but the errors: the runtime imports it, and so does the
    pytest plugin in every test run (tests/test_pytest_plugin.py: inert for unrelated suites)."""
    from tests.test_layers import imports_of

    ours = {name for _, name in imports_of(TABLE) if name.split(".")[0] == "mpnpu"}
    assert ours <= {"mpnpu.errors", "mpnpu.errors.UsageError"}
