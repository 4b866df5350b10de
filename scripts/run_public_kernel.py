#!/usr/bin/env python3
"""Reproduce the FLOMS incident from the public kernel's own source: a checkout of the open
operator repository, compiled unchanged against mpnpu's headers and run on the multi-process device.

    python scripts/run_public_kernel.py PATH [--cases 20] [--repeat 4] [mpnpu batch options]

PATH is the repository (the kernel is under its matmul/ folder) or the operator folder itself.
The script is a recipe over the registered operator ``floms-public`` (see docs/public-kernels.md):

1. ``mpnpu batch --op floms-public`` with ``MPNPU_OPS_NN=PATH``: the kernel as written (fixed) and
   with the SyncAll before its ``CVProcess()`` dropped (incident), every output against FLOMS's
   golden; the options after PATH go to the batch as they are;
2. ``mpnpu batch --op floms-public --variant incident --racecheck --block-dim 2`` on three cases:
   the race detector's report, at the public kernel's own lines.

Every other tool takes the same operator the same way, e.g.
``MPNPU_OPS_NN=PATH mpnpu audit --op floms-public --sync FILE:LINE``.
Exit status: the batch's (0 when the fixed kernel is clean), or 2 for a usage error.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

from mpnpu.cli.main import cli

USAGE = "usage: run_public_kernel.py PATH [mpnpu batch options]   (--help for more)"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__ if args else USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    path, rest = args[0], args[1:]
    if not os.path.isdir(path):
        print(f"run_public_kernel.py: error: {path}: not a folder (give the operator repository's checkout)",
              file=sys.stderr)
        return 2
    os.environ["MPNPU_OPS_NN"] = os.path.abspath(path)
    defaults: list[str] = []
    for opt, value in (("--cases", "20"), ("--repeat", "4")):
        if opt not in rest:
            defaults += [opt, value]
    status = cli(["batch", "--op", "floms-public", *defaults, *rest])
    if status not in (0, 1):
        return status
    # two AI cores, so the masked targets cross between vector cores of different AI cores too
    print("\nracecheck of the incident variant (3 cases, 2 AI cores):", flush=True)
    cli(["batch", "--op", "floms-public", "--variant", "incident", "--cases", "3", "--repeat", "1", "--block-dim", "2",
         "--racecheck"])
    return status


if __name__ == "__main__":
    sys.exit(main())
