"""The layers, enforced: what each part of mpnpu may import, and what the distribution installs.

runtime <- racecheck <- operators / harness / directed / scale <- report <- tools <- cli (and testing);
kernel front ends (mpnpu.api, the Python dialect; mpnpu.ascendc, Ascend C) depend on the runtime's
kernel-context seam, and the runtime never imports one; the tools (mpnpu run, the CPU-debug runner)
sit above the reports they print. No import cycle anywhere in mpnpu. The tools
find operators by name and never import a kernel package, so a second operator is as much at home in
them as the first; benchmarks and soaks import the installed package and name no kernel module either.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "mpnpu"

_TOOLS = ("mpnpu.operators", "mpnpu.harness", "mpnpu.directed", "mpnpu.scale")
_ABOVE = ("mpnpu.report", "mpnpu.tools", "mpnpu.cli", "mpnpu.testing", "mpnpu.kernels")

#: layer (folder under mpnpu/) -> packages it must not import
FORBIDDEN = {
    # the runtime never imports a kernel front end: they reach it only through runtime.kcontext
    "runtime": ("mpnpu.racecheck", *_TOOLS, *_ABOVE, "mpnpu.api", "mpnpu.ascendc"),
    "api": ("mpnpu.racecheck", *_TOOLS, *_ABOVE, "mpnpu.ascendc"),
    # the C++ front end: the runtime's seam, racecheck and the operator protocol; never the tools,
    # the reports they print, the commands or the Python dialect
    "ascendc": ("mpnpu.api", "mpnpu.harness", "mpnpu.directed", "mpnpu.scale", *_ABOVE),
    "racecheck": (*_TOOLS, *_ABOVE, "mpnpu.api"),
    "operators": ("mpnpu.harness", "mpnpu.directed", "mpnpu.scale", *_ABOVE),
    "harness": ("mpnpu.directed", *_ABOVE),
    "directed": ("mpnpu.scale", *_ABOVE),
    "scale": ("mpnpu.directed", *_ABOVE),
    "report": ("mpnpu.tools", "mpnpu.cli", "mpnpu.testing", "mpnpu.kernels"),
    "tools": ("mpnpu.cli", "mpnpu.testing", "mpnpu.kernels"),
    "cli": ("mpnpu.testing", "mpnpu.kernels"),
    "testing": ("mpnpu.cli", "mpnpu.kernels"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``, relative ones resolved."""
    module = _module_name(path)
    return imports_in(path.read_text(), module if path.name == "__init__.py" else module.rpartition(".")[0])


def imports_in(source: str, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, a module of ``package``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            # "from mpnpu import kernels" imports mpnpu.kernels too
            out += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return out


def _violations(layer: str) -> list[str]:
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, name in imports_of(path):
            for forbidden in FORBIDDEN[layer]:
                if name == forbidden or name.startswith(forbidden + "."):
                    bad.append(f"{path.relative_to(REPO)}:{line} imports {name}")
    return bad


@pytest.mark.parametrize("layer", list(FORBIDDEN))
def test_layer_imports_only_what_is_below_it(layer):
    assert (PACKAGE / layer).is_dir()
    assert _violations(layer) == []


def test_the_import_reader_sees_every_form():
    # The checker itself must catch absolute, relative and "from package import module" forms.
    source = "import mpnpu.kernels.x\nfrom ..kernels import y\nfrom mpnpu import kernels\nfrom . import common\n"
    found = [name for _, name in imports_in(source, "mpnpu.cli")]
    assert found[0] == "mpnpu.kernels.x"
    assert "mpnpu.kernels.y" in found and "mpnpu.kernels" in found and "mpnpu.cli.common" in found


def test_tools_do_not_name_a_kernel_package():
    """No tool module refers to a kernel package by a string either (operators are found by name)."""
    bad = []
    for layer in ("runtime", "racecheck", "operators", "harness", "directed", "scale", "report", "tools", "cli",
                  "testing"):
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and "mpnpu.kernels" in node.value:
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value[:80]!r}")
    assert bad == []


@pytest.mark.slow
@pytest.mark.time_limit(120)
def test_distribution_installs_nothing_outside_mpnpu(tmp_path):
    """Build what a wheel would hold (setuptools' build_py + egg_info into tmp): one top-level
    package, mpnpu, with the kernels inside it and the operators registered as entry points."""
    lib, meta = tmp_path / "lib", tmp_path / "meta"
    meta.mkdir()
    p = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", "import setuptools; setuptools.setup()", "-q",
         "egg_info", "--egg-base", str(meta), "build", "--build-base", str(tmp_path / "build"),
         "build_py", "--build-lib", str(lib)],
        cwd=REPO, capture_output=True, text=True, timeout=110,
    )
    assert p.returncode == 0, p.stderr
    assert sorted(e.name for e in lib.iterdir()) == ["mpnpu"]
    assert (lib / "mpnpu" / "kernels" / "fused_linear_online_max_sum" / "kernel.py").is_file()
    assert not (lib / "kernels").exists()
    (info,) = meta.glob("*.egg-info")
    assert (info / "top_level.txt").read_text().split() == ["mpnpu"]
    entry_points = (info / "entry_points.txt").read_text()
    assert "[mpnpu.operators]" in entry_points
    assert "floms = mpnpu.kernels.fused_linear_online_max_sum.operator:OPERATOR" in entry_points


#: names only one operator knows; the tools must work without them (they may name "floms", the default)
OPERATOR_NAMES = ("fused_linear_online_max_sum", "predicted_logits", "masked_target", "TargetProcess", "CVProcess")


@pytest.mark.parametrize("layer", ["operators", "harness", "directed", "scale", "report", "tools", "cli"])
def test_tools_know_no_operator_internals(layer):
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            bad += [f"{path.relative_to(REPO)}:{number}: {name}" for name in OPERATOR_NAMES if name in line]
    assert bad == []


# -- no import cycles --------------------------------------------------------------------------------


def _module_graph(deferred: bool = False) -> dict[str, set[str]]:
    """mpnpu module -> the mpnpu modules it imports: top-level statements (not under ``if
    TYPE_CHECKING:``), and with ``deferred`` the imports inside functions too (a deferred import that
    only hides a cycle is still one); a package importing its own submodules, or a module importing
    the package it is in, is not an edge (as /work/shared/tools/import_cycles.py counts them)."""
    modules = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "kernels" not in p.parts[len(REPO.parts):]}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for target in _top_level_imports(ast.parse(path.read_text()).body, package, deferred):
            if target in modules and target != name and not name.startswith(target + ".") \
                    and not target.startswith(name + "."):
                found.add(target)
        graph[name] = found
    return graph


def _top_level_imports(body: list[ast.stmt], package: str, deferred: bool = False) -> list[str]:
    out: list[str] = []
    for node in body:
        if isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                out += _top_level_imports(node.body, package, deferred)
            out += _top_level_imports(node.orelse, package, deferred)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                out += _top_level_imports(block, package, deferred)
        elif deferred and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With,
                                            ast.For, ast.While)):
            out += _top_level_imports(node.body, package, deferred)
            out += _top_level_imports(getattr(node, "orelse", []), package, deferred)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out += [name for _, name in imports_in(ast.unparse(node), package)]
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("deferred", [False, True], ids=["top-level", "with-deferred-imports"])
def test_no_import_cycle_in_mpnpu(deferred):
    graph = _module_graph(deferred)
    assert len(graph) > 50 and "mpnpu.runtime.device" in graph
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# -- scripts: the installed package, no kernel module ------------------------------------------------


SCRIPTS = sorted((REPO / "scripts").glob("*.py"))


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_scripts_use_the_installed_package_and_name_no_kernel_module(path):
    source = path.read_text()
    assert "sys.path" not in source
    names = [name for _, name in imports_in(source, "scripts")]
    assert not [n for n in names if n.startswith("mpnpu.kernels")]
    assert "fused_linear_online_max_sum" not in source
