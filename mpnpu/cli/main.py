"""The ``mpnpu`` command: ``mpnpu COMMAND [OPTIONS]`` (also ``python -m mpnpu``).

Every module of :mod:`mpnpu.cli.commands` that defines ``COMMAND`` (a
:class:`~mpnpu.cli.command.Command`) is a subcommand, in alphabetical order: adding a subcommand is
adding one module there. The commands of earlier releases stay as thin aliases of the same code:
``python -m mpnpu.batch`` (``.investigate``, ``.stress``, ``.audit``) and the console scripts
``mpnpu-batch`` (``-investigate``, ``-stress``, ``-audit``) run :func:`alias`.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import textwrap
from typing import Sequence

from mpnpu import __version__, settings
from mpnpu.cli import commands as _commands
from mpnpu.cli.command import Command, dispatch
from mpnpu.cli.common import run_cli

DESCRIPTION = (
    f"mpnpu {__version__}: reproduce, diagnose and stress-test inter-core races in accelerator kernels on an "
    "emulated NPU whose cube and vector cores are real OS processes. Every command has --help, --json PATH and "
    "--quiet; exit 0 OK, 1 a failure the command looks for, 2 a usage error, 3 a device error, 130/143 "
    "interrupted."
)


def commands() -> list[Command]:
    """Every subcommand: the ``COMMAND`` of each module of :mod:`mpnpu.cli.commands`."""
    found = []
    for info in sorted(pkgutil.iter_modules(_commands.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{_commands.__name__}.{info.name}")
        command = getattr(module, "COMMAND", None)
        if isinstance(command, Command):
            found.append(command)
    return found


def environment_help(width: int = 100) -> str:
    """The ``MPNPU_*`` variables, from the settings table, for ``mpnpu --help``."""
    lines = ["environment (each a setting of mpnpu.settings; a bad value is a usage error):"]
    for s in settings.SETTINGS.values():
        if s.env:
            # a setting with a flag: its help is the flag's, and the variable's own words say what it does
            text = s.text(s.env_help) if s.flag else f"{s.text()}; {s.text(s.env_help)}"
            if len(s.env) > 21:  # a name wider than the column: on a line of its own, as argparse does
                lines.append(f"  {s.env}")
                lines += textwrap.wrap(text, width, initial_indent=" " * 24, subsequent_indent=" " * 24)
            else:
                lines += textwrap.wrap(text, width, initial_indent=f"  {s.env:<22}", subsequent_indent=" " * 24)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``mpnpu COMMAND [OPTIONS]`` without the exit-code wrapping."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--version"]:
        print(f"mpnpu {__version__}")
        return 0
    return dispatch(commands(), args, "mpnpu", DESCRIPTION, environment_help())


def cli(argv: Sequence[str] | None = None) -> int:
    """Run ``mpnpu`` to an exit status, errors prefixed with the command that made them
    (``mpnpu batch: error: ...``). The console script ``mpnpu`` and ``python -m mpnpu``."""
    args = list(sys.argv[1:] if argv is None else argv)
    return run_cli(main, args, prog=" ".join(["mpnpu", *_command_words(args)]))


def find(path: Sequence[str]) -> Command:
    """The command at ``path`` (``("soak", "fixed")``)."""
    found: Sequence[Command] = commands()
    command = None
    for name in path:
        command = next(c for c in found if c.name == name)
        found = command.subcommands
    assert command is not None
    return command


def alias(path: str | Sequence[str], prog: str, argv: Sequence[str] | None = None) -> int:
    """Run the command at ``path`` as an earlier release's command did: its own usage line, errors
    prefixed ``prog:`` (``mpnpu.batch: error: ...``)."""
    command = find((path,) if isinstance(path, str) else path)
    return run_cli(lambda a: command.main(a, command.prog), argv, prog=prog)


def _command_words(args: Sequence[str]) -> list[str]:
    words: list[str] = []
    level: Sequence[Command] = commands()
    for a in args:
        c = next((c for c in level if c.name == a), None)
        if c is None:
            break
        words.append(a)
        level = c.subcommands
    return words


def mpnpu_cli() -> None:
    """Console-script entry point (``mpnpu``)."""
    sys.exit(cli())


def batch_cli() -> None:
    """``mpnpu-batch``: ``mpnpu batch``."""
    sys.exit(alias("batch", "mpnpu-batch"))


def investigate_cli() -> None:
    """``mpnpu-investigate``: ``mpnpu investigate``."""
    sys.exit(alias("investigate", "mpnpu-investigate"))


def stress_cli() -> None:
    """``mpnpu-stress``: ``mpnpu stress``."""
    sys.exit(alias("stress", "mpnpu-stress"))


def audit_cli() -> None:
    """``mpnpu-audit``: ``mpnpu audit``."""
    sys.exit(alias("audit", "mpnpu-audit"))
