#!/usr/bin/env python
"""``mpnpu soak fixed`` under its earlier name (the soak lives in the package: ``mpnpu soak fixed --help``)."""

import sys

from mpnpu.cli.main import alias

if __name__ == "__main__":
    sys.exit(alias(("soak", "fixed"), "soak_fixed"))
