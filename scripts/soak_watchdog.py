#!/usr/bin/env python
"""``mpnpu soak watchdog`` under its earlier name (the soak lives in the package: ``mpnpu soak watchdog --help``)."""

import sys

from mpnpu.cli.main import alias

if __name__ == "__main__":
    sys.exit(alias(("soak", "watchdog"), "soak_watchdog"))
