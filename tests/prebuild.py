"""The C++ kernel libraries that take the test suite longest to build, built in a process of their own
while the first tests run.

From an empty build cache most of the suite's time is compiling, one library at a time in the test
process, while the other CPU waits. A test module names what it needs in ``PREBUILD`` (the names of
:data:`GROUPS`); when the collected tests include such a module, ``tests/conftest.py`` starts
``python -m tests.prebuild NAME...`` as the session begins. Its builds go to the same cache, and a
test that needs a library while it is being built waits for it on the library's build lock
(:func:`mpnpu.ascendc.build.compiler.build`) instead of compiling it a second time. A library the
process has not reached yet is compiled by the test as before: this only moves work earlier.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

#: the gallery's kernels that have a C++ operator (mpnpu.kernels.<folder>.operator.OPERATOR_CXX)
GALLERY_CXX = ("accum_init", "aiv_barrier", "double_buffer_reuse", "flag_reuse", "reduce_early", "vecin_early_read")


def floms_cxx(workers: int) -> int:
    """FLOMS in C++: the library of each of the 4 (input, target) dtype pairs and of each of the 7
    probes on (float16, int32), as ``tests/test_floms_cxx.py`` runs them. Returns how many."""
    from mpnpu.kernels.fused_linear_online_max_sum.cases import CaseSpace
    from mpnpu.kernels.fused_linear_online_max_sum.operator_cxx import (
        KERNEL,
        OPERATOR_CXX,
        PROBE_SWITCHES,
        defines_of,
    )

    cases: dict[Any, Any] = {}
    for i in range(64):
        c = OPERATOR_CXX.make_case(0, i)
        cases.setdefault(tuple(sorted(defines_of(c).items())), c)
    probe_case = dataclasses.replace(OPERATOR_CXX, space=CaseSpace().only("float16", "int32")).make_case(0, 0)
    jobs = [(c, "") for c in cases.values()] + [(probe_case, probe) for probe in PROBE_SWITCHES]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for f in [pool.submit(KERNEL.kernel_for, c, p) for c, p in jobs]:
            f.result()
    return len(jobs)


def gallery_cxx(workers: int, folders: tuple[str, ...] = GALLERY_CXX) -> int:
    """One library per gallery kernel's C++ operator and element type (its first case of each), as
    ``tests/test_gallery_cxx.py`` runs them. Returns how many."""
    jobs = [(folder, dtype) for folder in folders for dtype in gallery_dtypes(folder)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda job: gallery_operator(*job).kernel_for(gallery_operator(*job).make_case(0, 0)), jobs))
    return len(jobs)


def gallery_dtypes(folder: str) -> tuple[str | None, ...]:
    """The element types a gallery kernel's cases take (None: the one its cases have)."""
    try:
        return tuple(importlib.import_module(f"mpnpu.kernels.{folder}.cases").DTYPES)
    except ModuleNotFoundError:  # the intra-core kernels make float32 cases only
        return (None,)


@functools.cache
def gallery_operator(folder: str, dtype: str | None) -> Any:
    """A gallery kernel's C++ operator with its cases restricted to one dtype (itself for a
    one-dtype kernel)."""
    op = importlib.import_module(f"mpnpu.kernels.{folder}.operator").OPERATOR_CXX
    if dtype is None:
        return op
    cases = importlib.import_module(f"mpnpu.kernels.{folder}.cases")
    return dataclasses.replace(op, make=functools.partial(cases.make, dtypes=(dtype,)))


#: what a test module may name in its PREBUILD
GROUPS: dict[str, Callable[[int], int]] = {"floms-cxx": floms_cxx, "gallery-cxx": gallery_cxx}


def main(names: list[str]) -> int:
    """Build the groups ``names``, one library at a time (the tests have the other CPU)."""
    for name in names:
        try:
            GROUPS[name](1)
        except Exception as e:  # (a library that does not build fails its test, which says why)
            print(f"tests.prebuild: {name}: {type(e).__name__}: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
