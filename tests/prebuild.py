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

import ast
import dataclasses
import functools
import importlib
import json
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


#: a test kernel to build: (file in tests/ascendc_kernels, entry, sorted -D defines)
TestKernel = tuple[str, str, tuple[tuple[str, str], ...]]


def literal_kernels(path: str) -> dict[str | None, list[TestKernel]]:
    """The test kernels a test file builds through ``tests.ascendc_util.kernel(name, entry, ...)``
    with arguments known before it runs (constants, or module-level string constants): by the test
    function whose body makes the call, or None for calls anywhere else in the file (a helper or a
    fixture any of its tests may use). ``kernel_type`` does not change the build and is left out."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
              for t in n.targets if isinstance(t, ast.Name)
              and isinstance(n.value, ast.Constant) and isinstance(n.value.value, (str, int))}

    def value(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)):
            return str(node.value)
        if isinstance(node, ast.Name) and node.id in consts:
            return str(consts[node.id])
        return None

    def calls(node: ast.AST) -> list[TestKernel]:
        out = []
        for call in ast.walk(node):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "kernel"
                    and len(call.args) >= 2):
                continue
            name, entry = value(call.args[0]), value(call.args[1])
            defines = [(k.arg, value(k.value)) for k in call.keywords if k.arg != "kernel_type"]
            if name and entry and all(k is not None and v is not None for k, v in defines):
                out.append((name, entry, tuple(sorted((str(k), str(v)) for k, v in defines))))
        return out

    found: dict[str | None, list[TestKernel]] = {}
    for node in tree.body:
        test = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
            node.name.startswith("test") else None
        found.setdefault(test, []).extend(calls(node))
    return found


def test_kernels(kernels: list[TestKernel]) -> int:
    """Build these test kernels as ``tests.ascendc_util.kernel`` does (the same build spec), in
    order, skipping those built already. Returns how many were compiled."""
    from mpnpu.ascendc.build.compiler import build, is_built
    from mpnpu.ascendc.kernel import kernel_build_spec
    from tests.ascendc_util import source

    compiled = 0
    for name, entry, defines in dict.fromkeys(kernels):
        try:
            spec = kernel_build_spec(source(name), entry, defines=dict(defines) or None)
            if not is_built(spec):
                build(spec)
                compiled += 1
        except Exception as e:  # (a kernel that does not build fails its test, which says why)
            print(f"tests.prebuild: {name} ({entry}): {type(e).__name__}: {e}", file=sys.stderr)
    return compiled


#: what a test module may name in its PREBUILD
GROUPS: dict[str, Callable[[int], int]] = {"floms-cxx": floms_cxx, "gallery-cxx": gallery_cxx}


def main(plan_file: str) -> int:
    """Build what the plan (a JSON list, in the order the tests need them: a group's name, or a test
    kernel as [name, entry, [[define, value], ...]]) names, one library at a time (the tests have
    the other CPU)."""
    with open(plan_file) as f:
        plan = json.load(f)
    for step in plan:
        if isinstance(step, str):
            try:
                GROUPS[step](1)
            except Exception as e:  # (a library that does not build fails its test, which says why)
                print(f"tests.prebuild: {step}: {type(e).__name__}: {e}", file=sys.stderr)
        else:
            name, entry, defines = step
            test_kernels([(name, entry, tuple((k, v) for k, v in defines))])
    return 0


def plan(items: list[Any]) -> list[Any]:
    """What to build for these selected test items, in their order: each module's ``PREBUILD``
    groups when one of its selected tests uses the module's ``built`` fixture, and the test kernels
    (:func:`literal_kernels`) of the selected tests' functions and of their modules' other code."""
    steps: list[Any] = []
    scanned: dict[str, dict[str | None, list[TestKernel]]] = {}
    for item in items:
        module = getattr(item, "module", None)
        path = str(getattr(item, "path", ""))
        if module is None or not path.endswith(".py"):
            continue
        if "built" in getattr(item, "fixturenames", ()):
            steps += list(getattr(module, "PREBUILD", ()))
        if path not in scanned:
            scanned[path] = literal_kernels(path)
            steps += [list(k) for k in scanned[path].get(None, [])]
        steps += [list(k) for k in scanned[path].get(getattr(item, "originalname", None), [])]
    out, seen = [], set()
    for step in steps:  # (each once, where it is first needed)
        key = json.dumps(step)
        if key not in seen:
            seen.add(key)
            out.append(step)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
