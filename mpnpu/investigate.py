"""``python -m mpnpu.investigate``: the diagnosis chain. The command lives in :mod:`mpnpu.cli.investigate`."""

import sys

from .cli.investigate import cli, main  # noqa: F401  (re-exported for library users)

if __name__ == "__main__":
    from .cli.common import run_cli

    sys.exit(run_cli(main, prog="mpnpu.investigate"))
