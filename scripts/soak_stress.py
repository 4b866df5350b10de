#!/usr/bin/env python
"""``mpnpu soak stress`` under its earlier name (the soak lives in the package: ``mpnpu soak stress --help``)."""

import sys

from mpnpu.cli.main import alias

if __name__ == "__main__":
    sys.exit(alias(("soak", "stress"), "soak_stress"))
