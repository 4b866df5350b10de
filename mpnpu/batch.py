"""``python -m mpnpu.batch``: an alias of ``mpnpu batch`` (:mod:`mpnpu.cli.commands.batch`), kept so
that the commands of earlier releases keep working."""

import sys

from mpnpu.cli.main import alias

if __name__ == "__main__":
    sys.exit(alias("batch", "mpnpu.batch"))
