"""``python -m mpnpu.audit``: the sync audit. The command lives in :mod:`mpnpu.cli.audit`."""

import sys

from .cli.audit import cli, main  # noqa: F401  (re-exported for library users)

if __name__ == "__main__":
    from .cli.common import run_cli

    sys.exit(run_cli(main, prog="mpnpu.audit"))
