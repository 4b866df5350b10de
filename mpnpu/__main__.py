"""``python -m mpnpu``: the ``mpnpu`` command (:mod:`mpnpu.cli.main`)."""

import sys

from mpnpu.cli.main import cli

if __name__ == "__main__":
    sys.exit(cli())
