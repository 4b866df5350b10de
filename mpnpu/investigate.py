"""``python -m mpnpu.investigate``: an alias of ``mpnpu investigate`` (:mod:`mpnpu.cli.commands.investigate`), kept so
that the commands of earlier releases keep working."""

import sys

from mpnpu.cli.main import alias

if __name__ == "__main__":
    sys.exit(alias("investigate", "mpnpu.investigate"))
