"""Finding operators by name: ``--op NAME_OR_REF`` on every command line.

An operator is named one of three ways:

- a registered short name (``floms``): an entry point of the group ``mpnpu.operators``. A package
  registers its operators in its own ``pyproject.toml`` and is found by being installed, the way
  pytest finds plugins::

      [project.entry-points."mpnpu.operators"]
      my_op = "my_package.my_op:OPERATOR"

- a module reference ``package.module:OBJECT`` (``:OBJECT`` may be left out: ``OPERATOR``);
- a file reference ``path/to/file.py:OBJECT``.

Every way a name can be wrong (unknown name, missing module, missing object, an object that does not
satisfy :class:`mpnpu.operators.protocol.Operator`) is one :class:`mpnpu.errors.UsageError` line.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from mpnpu.errors import UsageError
from mpnpu.operators.protocol import Operator, check_operator
from mpnpu.runtime.core import add_folder_to_path

ENTRY_POINT_GROUP = "mpnpu.operators"
DEFAULT_OBJECT = "OPERATOR"


def registered() -> dict[str, EntryPoint]:
    """Short name -> entry point, for every installed operator (sorted by name)."""
    eps = entry_points(group=ENTRY_POINT_GROUP)
    return {ep.name: ep for ep in sorted(eps, key=lambda e: e.name)}


def is_reference(ref: str) -> bool:
    """Whether ``ref`` names a module or file (else it is a registered short name)."""
    return ":" in ref or "." in ref or ref.endswith(".py") or os.sep in ref


def load_operator(ref: str) -> Operator:
    """The operator ``ref`` names (a registered name, "package.module:OBJECT" or "file.py:OBJECT")."""
    if not isinstance(ref, str) or not ref.strip():
        raise UsageError(f"an operator is a registered name or 'module:OBJECT', got {ref!r}")
    ref = ref.strip()
    if not is_reference(ref):
        known = registered()
        ep = known.get(ref)
        if ep is None:
            names = ", ".join(known) or "none (is mpnpu installed? pip install -e .)"
            raise UsageError(f"unknown operator {ref!r}; known: {names}")
        return check_operator(_load_object(ep.value), f"{ref} ({ep.value})")
    return check_operator(_load_object(ref), ref)


def _load_object(ref: str) -> Any:
    target, sep, attr = ref.rpartition(":") if ":" in ref else (ref, "", DEFAULT_OBJECT)
    attr = attr or DEFAULT_OBJECT
    module = _import_file(target) if target.endswith(".py") else _import_module(target)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"cannot load operator {ref!r}: {target} has no {attr!r}")
        obj = getattr(obj, part)
    return obj


def _import_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            raise UsageError(f"cannot load operator: no module named {name!r}") from None
        raise UsageError(f"cannot load operator from {name!r}: {type(e).__name__}: {e}") from None
    except Exception as e:  # the module itself is broken: the user's code, reported in one line
        raise UsageError(f"cannot load operator from {name!r}: {type(e).__name__}: {e}") from None


def _import_file(path: str) -> Any:
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise UsageError(f"cannot load operator: no file {path}")
    # One module per file, under a name core processes can import it by again: the kernel function
    # a file-defined operator launches must resolve the same way in every core process.
    name = "mpnpu_operator_" + os.path.splitext(os.path.basename(full))[0] + f"_{abs(hash(full)):x}"
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(name, full)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load operator: {path} is not a Python file")
    add_folder_to_path(full)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise UsageError(f"cannot load operator from {path}: {type(e).__name__}: {e}") from None
    return module


@dataclass
class Listed:
    """One registered operator as ``--list-ops`` shows it: loaded, or why it could not be."""

    name: str
    ref: str
    operator: Operator | None
    error: str = ""


def list_operators() -> list[Listed]:
    """Every registered operator, loaded (a broken one is listed with its error, not raised)."""
    out = []
    for name, ep in registered().items():
        try:
            out.append(Listed(name, ep.value, load_operator(name)))
        except UsageError as e:
            out.append(Listed(name, ep.value, None, str(e)))
    return out
