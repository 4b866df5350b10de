"""``python -m mpnpu.audit``: an alias of ``mpnpu audit`` (:mod:`mpnpu.cli.commands.audit`), kept so
that the commands of earlier releases keep working."""

import sys

from mpnpu.cli.main import alias

if __name__ == "__main__":
    sys.exit(alias("audit", "mpnpu.audit"))
