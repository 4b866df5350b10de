"""``python -m mpnpu.stress``: stress sweeps. The command lives in :mod:`mpnpu.cli.stress`."""

import sys

from .cli.stress import cli, main  # noqa: F401  (re-exported for library users)

if __name__ == "__main__":
    from .cli.common import run_cli

    sys.exit(run_cli(main, prog="mpnpu.stress"))
