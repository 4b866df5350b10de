"""The operator options every command shares: ``--op NAME_OR_REF``, ``--list-ops`` and the options
the chosen operator declares (for FLOMS its tile sizes, ``--base-m/--base-n/--base-k``).

The parser depends on the operator, so a command parses in two steps (:func:`parse_with_operator`):
``--op`` first (a small parser that ignores everything else), then the command's full parser built
for that operator.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Sequence

from mpnpu.cli.common import ArgumentParser, positive_int
from mpnpu.operators.protocol import Operator, options_of, with_options
from mpnpu.operators.registry import DEFAULT_OPERATOR, load_operator


def add_operator_arguments(parser: argparse.ArgumentParser, op: Operator | None) -> None:
    """Add --op, --list-ops and ``op``'s declared options (default None: the operator's own value).

    ``op`` None: the default operator's options.
    """
    op = op if op is not None else load_operator(DEFAULT_OPERATOR)
    g = parser.add_argument_group("operator")
    g.add_argument("--op", default=DEFAULT_OPERATOR, metavar="NAME_OR_REF",
                   help=f"the operator under test: a registered name (--list-ops), 'package.module:OBJECT' or "
                        f"'path/to/file.py:OBJECT' (default {DEFAULT_OPERATOR})")
    g.add_argument("--list-ops", action="store_true",
                   help="list the registered operators with their sync points and variants, and exit")
    for o in options_of(op):
        g.add_argument(o.flag, dest=o.name, type=o.parse or positive_int, default=None, metavar=o.metavar,
                       help=f"{o.help} [operator {op.name}]")


def parse_with_operator(build_parser: Callable[[Operator], ArgumentParser],
                        argv: Sequence[str] | None) -> tuple[argparse.Namespace, Operator | None]:
    """Parse ``argv`` for the operator it names; the operator comes back with its options applied.

    With ``--list-ops`` nothing is loaded or checked: the namespace has ``list_ops`` set and the
    operator is None.
    """
    pre = ArgumentParser(add_help=False)
    pre.add_argument("--op", default=DEFAULT_OPERATOR)
    pre.add_argument("--list-ops", action="store_true")
    first, _ = pre.parse_known_args(argv)
    if first.list_ops:
        return first, None
    op = load_operator(first.op)
    args = build_parser(op).parse_args(argv)
    values: dict[str, Any] = {o.name: getattr(args, o.name) for o in options_of(op)}
    return args, with_options(op, **values)


def print_operator_list() -> int:
    """``--list-ops``: print every registered operator; exit status 0."""
    from mpnpu.report.text.operators import format_operator_list

    print(format_operator_list())
    return 0
