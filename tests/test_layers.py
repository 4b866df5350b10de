"""The layers, enforced: what each part of mpnpu may import, and what the distribution installs.

runtime <- racecheck <- harness <- cli; kernels use the API (and the harness's operator helpers).
The tools find operators by name and never import a kernel package, so a second operator is as
much at home in them as the first.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "mpnpu"

#: layer (folder under mpnpu/) -> packages it must not import
FORBIDDEN = {
    # the runtime never imports a kernel front end: they reach it only through runtime.kcontext
    "runtime": ("mpnpu.harness", "mpnpu.cli", "mpnpu.racecheck", "mpnpu.kernels", "mpnpu.api", "mpnpu.ascendc"),
    "api": ("mpnpu.harness", "mpnpu.cli", "mpnpu.racecheck", "mpnpu.kernels", "mpnpu.testing"),
    "racecheck": ("mpnpu.harness", "mpnpu.cli", "mpnpu.kernels"),
    "harness": ("mpnpu.cli", "mpnpu.kernels"),
    "cli": ("mpnpu.kernels",),
    "testing": ("mpnpu.kernels",),
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
    for layer in ("runtime", "racecheck", "harness", "cli", "testing"):
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and "mpnpu.kernels" in node.value:
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value[:80]!r}")
    assert bad == []


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


@pytest.mark.parametrize("layer", ["harness", "cli"])
def test_tools_know_no_operator_internals(layer):
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            bad += [f"{path.relative_to(REPO)}:{number}: {name}" for name in OPERATOR_NAMES if name in line]
    assert bad == []
