"""``python -m mpnpu.ascendc --cflags --libs``: the flags that build a CPU-debug unit test (a host
program with GmAlloc / ICPU_RUN_KF) against mpnpu instead of the vendor's CPU library::

    g++ test_add.cpp add.cpp $(python -m mpnpu.ascendc --cflags --libs) -o test_add

``--include-dir`` prints only the folder of mpnpu's Ascend C headers. ``--kernel-tiling HOST_HEADER``
prints the kernel side of a host tiling header written with BEGIN_TILING_DATA_DEF (what an operator
repository's unit-test build generates when the kernel has no ``*_tiling_def.h``)::

    python -m mpnpu.ascendc --kernel-tiling op_host/mse_loss_v2_tiling.h > mse_loss_v2_tiling_data.h
    g++ -c mse_loss_v2.cpp -include mse_loss_v2_tiling_data.h $(python -m mpnpu.ascendc --cflags) ..."""

from __future__ import annotations

import argparse
import shlex
import sys

from mpnpu.errors import MpnpuError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mpnpu.ascendc", description=(
        "Print the compiler flags that build an Ascend C CPU-debug unit test (GmAlloc, ICPU_RUN_KF) against "
        "mpnpu: --cflags for compiling, --libs for linking (libmpnpu_cpudebug is built on first use)."))
    p.add_argument("--cflags", action="store_true", help="include directories and defines")
    p.add_argument("--libs", action="store_true", help="the host library, its rpath and threads")
    p.add_argument("--include-dir", action="store_true", help="only the folder of mpnpu's Ascend C headers")
    p.add_argument("--kernel-tiling", metavar="HOST_HEADER",
                   help="print the kernel side of a host tiling header (its BEGIN_TILING_DATA_DEF structs and "
                   "GET_TILING_DATA)")
    p.add_argument("--tiling-struct", metavar="NAME", help="with --kernel-tiling: the struct GET_TILING_DATA fills")
    args = p.parse_args(argv)
    from .build import cpudebug_lib
    from .build.compiler import INCLUDE_DIR

    try:
        if args.include_dir:
            print(INCLUDE_DIR)
            return 0
        if args.kernel_tiling:
            from .tiling import kernel_tiling_header

            sys.stdout.write(kernel_tiling_header(args.kernel_tiling, args.tiling_struct))
            return 0
        if not (args.cflags or args.libs):
            p.error("give --cflags, --libs or both")
        flags = (cpudebug_lib.cflags() if args.cflags else []) + (cpudebug_lib.libs() if args.libs else [])
    except MpnpuError as e:
        print(f"mpnpu: error: {e}", file=sys.stderr)
        return 2
    print(" ".join(shlex.quote(f) for f in dict.fromkeys(flags)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
