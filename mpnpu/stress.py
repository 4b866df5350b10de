"""``python -m mpnpu.stress``: an alias of ``mpnpu stress`` (:mod:`mpnpu.cli.commands.stress`), kept so
that the commands of earlier releases keep working."""

import sys

from mpnpu.cli.main import alias

if __name__ == "__main__":
    sys.exit(alias("stress", "mpnpu.stress"))
