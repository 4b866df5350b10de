"""A subcommand of ``mpnpu``: its name, its help, the options it takes from the one table, and the
function that runs it. The parser is built from the table (:mod:`mpnpu.cli.options`), grouped as
the table groups them; options an operator declares join it in a group of their own.

A command that takes ``--op`` parses in two steps: ``--op`` first (a small parser that ignores
everything else), then the command's full parser built for that operator, whose options
(FLOMS's ``--base-m`` ...) are then known. ``--list-ops`` needs no operator at all.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, Union

from mpnpu.cli.common import ArgumentParser
from mpnpu.cli.options import GROUPS, OPTIONS, positive_int
from mpnpu.errors import KernelError, UsageError
from mpnpu.operators.protocol import Operator, default_block_dim, options_of, with_options
from mpnpu.operators.registry import list_operators, load_operator
from mpnpu.report.text.operators import format_operator_list, format_sync_points
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM


@dataclass(frozen=True)
class Use:
    """An option of the table as one command takes it: under its own default (never another meaning),
    and with ``help``, in the words of this command (``mpnpu run``'s --repeat repeats a kernel, not
    cases; ``{default}`` is filled in as in the table's text)."""

    name: str
    default: Any = None
    help: str = ""
    #: the command's own parser of the option's text, where it takes other values than the table's
    #: (``mpnpu run``'s --block-dim: a launch in waves, checked against the kernel's type later)
    type: Callable[[str], Any] | None = None


OptionUse = Union[str, Use]


@dataclass(frozen=True)
class Command:
    """One ``mpnpu`` subcommand (or a subcommand of one: ``mpnpu soak fixed``)."""

    name: str
    help: str  # one line, for ``mpnpu --help``
    description: str  # for the command's own --help
    options: tuple[OptionUse, ...] = ()
    #: runs the command: (parsed arguments, the operator or None) -> exit status
    run: Callable[[argparse.Namespace, Any], int] | None = None
    epilog: str | Callable[[Any], str] = ""  # text, or a function of the operator
    #: the command's own subcommands (``soak``: fixed, stress, watchdog)
    subcommands: tuple[Command, ...] = field(default=())
    #: where ``python -m ...`` and console-script aliases show it: "python -m mpnpu.batch"
    alias: str = ""

    @property
    def prog(self) -> str:
        """How the command is shown when nobody said how it was invoked."""
        return self.alias or f"mpnpu {self.name}"

    @property
    def takes_operator(self) -> bool:
        return any(_name(u) == "op" for u in self.options)

    def default(self, name: str) -> Any:
        """This command's default for option ``name``."""
        for u in self.options:
            if isinstance(u, Use) and u.name == name:
                return u.default
        return OPTIONS[name].kwargs.get("default")

    def parser(self, op: Operator | None = None, prog: str | None = None, op_given: bool = True) -> ArgumentParser:
        """The argument parser, for ``op`` when the command takes an operator (default: the default
        one); ``op_given``: the command line named it (else --help says whose options it shows)."""
        if self.takes_operator and op is None:
            op, op_given = load_operator(self.default("op")), False
        epilog = self.epilog(op) if callable(self.epilog) else self.epilog
        default_op = self.takes_operator and not op_given
        if default_op:
            epilog = (f"{epilog} " if epilog else "") + (
                f"Without --op, this help shows the default operator's ({self.default('op')}) sync points and "
                f"options; {prog or self.prog} --op NAME --help shows another operator's.")
        p = ArgumentParser(prog=prog or self.prog, description=self.description, epilog=epilog)
        groups = {g: p.add_argument_group(g) for g in GROUPS}
        for u in self.options:
            name = _name(u)
            o = OPTIONS[name]
            kwargs = dict(o.kwargs)
            if isinstance(u, Use):
                kwargs["default"] = u.default
                if u.type is not None:
                    kwargs["type"] = u.type
            if name == "block_dim" and op is not None and kwargs.get("default") == DEFAULT_BLOCK_DIM:
                kwargs["default"] = default_block_dim(op)  # (a vector-only kernel: its AI core's 2 vector cores)
            text = o.help_text(kwargs.get("default"))
            if isinstance(u, Use) and u.help:
                text = dataclasses.replace(o, help=u.help).help_text(kwargs.get("default"))
            if o.positional:  # argparse names a positional by its dest
                groups[o.group].add_argument(o.dest, help=text, **kwargs)
                continue
            groups[o.group].add_argument(o.flag, dest=o.dest, help=text, **kwargs)
            for former in o.former:  # accepted, not shown
                groups[o.group].add_argument(former, dest=o.dest, help=argparse.SUPPRESS, **kwargs)
        if op is not None and options_of(op):
            whose = f"operator {op.name}"
            if default_op:
                whose = f"the default operator ({self.default('op')}: {op.name}), not of every operator"
            g = p.add_argument_group(f"options of {whose}")
            for oo in options_of(op):
                g.add_argument(oo.flag, dest=oo.name, type=oo.parse or positive_int, default=None,
                               metavar=oo.metavar, help=f"{oo.help} [operator {op.name}]")
        return p

    def parse(self, argv: Sequence[str] | None, prog: str | None = None) -> tuple[argparse.Namespace, Any]:
        """Parse ``argv`` for the operator it names; the operator comes back with its options applied.

        With ``--list-ops`` nothing is loaded or checked: the namespace has ``list_ops`` set and the
        operator is None (as it is for a command that takes no operator).
        """
        if not self.takes_operator:
            parser = self.parser(prog=prog)
            words = list(argv or ())
            if "program" in (_name(u) for u in self.options) and "--" in words:
                # ``mpnpu mutate [OPTION...] -- PROGRAM [ARG...]``: everything after -- is the program's,
                # its own options (--gtest_filter=...) included
                cut = words.index("--")
                args = parser.parse_args(words[:cut])
                args.program = words[cut + 1:]
                return args, None
            if any(OPTIONS[_name(u)].positional for u in self.options):
                # ``mpnpu run SOURCE --block-dim 8 ARG...``: options may stand between the words
                return parser.parse_intermixed_args(argv), None
            return parser.parse_args(argv), None
        pre = ArgumentParser(add_help=False)
        pre.add_argument("--op", default=self.default("op"))
        pre.add_argument("--list-ops", action="store_true")
        first, _ = pre.parse_known_args(argv)
        if first.list_ops:
            return first, None
        op = load_operator(first.op)
        op_given = any(a == "--op" or a.startswith("--op=") for a in (argv or ()))
        args = self.parser(op, prog, op_given).parse_args(argv)
        values: dict[str, Any] = {o.name: getattr(args, o.name) for o in options_of(op)}
        return args, with_options(op, **values)

    def main(self, argv: Sequence[str] | None = None, prog: str | None = None) -> int:
        """Parse and run (``prog``: how the command was invoked, for its usage line)."""
        argv = list(sys.argv[1:] if argv is None else argv)
        if self.subcommands:
            return dispatch(self.subcommands, argv, prog or f"mpnpu {self.name}", self.description)
        args, op = self.parse(argv, prog)
        args.prog, args.argv = prog or self.prog, argv  # for reports that print the command line
        if self.takes_operator and op is None:
            print(format_operator_list(list_operators()))
            return 0
        if self.takes_operator and getattr(args, "list_syncs", False):  # (mpnpu run lists a source's itself)
            print(format_sync_points(op))
            return 0
        if self.run is None:
            raise UsageError(f"{self.name} needs a subcommand")
        try:
            return self.run(args, op)
        except KernelError as e:
            # The command ends on this one line (run_cli); --verbose adds where in the core it came from.
            if getattr(args, "verbose", False) and e.details.get("traceback_tail"):
                print(f"the last frames of {e.details.get('core', 'the core')}'s traceback:\n"
                      + str(e.details["traceback_tail"]).rstrip(), file=sys.stderr)
            raise


def dispatch(commands: Sequence[Command], argv: Sequence[str] | None, prog: str, description: str,
             epilog: str = "") -> int:
    """``prog COMMAND [ARGS]``: run the named command; ``--help`` (or nothing) lists them (and
    ``epilog`` after them)."""
    args = list(sys.argv[1:] if argv is None else argv)
    by_name = {c.name: c for c in commands}
    if not args or args[0] in ("-h", "--help"):
        print(usage(commands, prog, description) + (f"\n\n{epilog}" if epilog else ""))
        return 0
    command = by_name.get(args[0])
    if command is None:
        raise UsageError(f"unknown command {args[0]!r}; choose from {', '.join(by_name)} (see --help)")
    return command.main(args[1:], f"{prog} {command.name}")


def usage(commands: Sequence[Command], prog: str, description: str) -> str:
    """What ``prog --help`` prints: the commands, one line each."""
    width = max(len(c.name) for c in commands)
    lines = [f"usage: {prog} COMMAND [OPTIONS]   ({prog} COMMAND --help for a command's options)", "",
             description, "", "commands:"]
    lines += [f"  {c.name:<{width}}  {c.help}" for c in commands]
    return "\n".join(lines)


def _name(u: OptionUse) -> str:
    return u.name if isinstance(u, Use) else u

