"""``python -m mpnpu.batch``: the main job. The command lives in :mod:`mpnpu.cli.batch`."""

import sys

from .cli.batch import cli, main  # noqa: F401  (re-exported for library users)

if __name__ == "__main__":
    from .cli.common import run_cli

    sys.exit(run_cli(main, prog="mpnpu.batch"))
