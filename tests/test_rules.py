"""Rules the code states about itself, checked: every error is an MpnpuError, one exit-code enum.

(The layering and import-cycle rules are in test_layers.py.)
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import numpy as np
import pytest

from mpnpu import errors
from mpnpu.errors import DTypeError, ExitCode, MpnpuError, UsageError
from mpnpu.runtime.dtypes import get_dtype

PACKAGE = Path(__file__).resolve().parent.parent / "mpnpu"

#: raised on purpose and not errors: SystemExit ends a helper process from its SIGTERM handler
NOT_ERRORS = {"SystemExit", "KeyboardInterrupt"}


def _raised_builtins() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "kernels" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = exc.id if isinstance(exc, ast.Name) else ""
            if name in NOT_ERRORS:
                continue
            obj = getattr(builtins, name, None)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: raise {name}")
    return found


def test_mpnpu_raises_no_built_in_exception() -> None:
    """Every error mpnpu raises derives from MpnpuError (some also from the built-in a protocol needs)."""
    assert _raised_builtins() == []


def test_every_exception_class_in_mpnpu_is_an_mpnpu_error() -> None:
    """Exception classes defined anywhere in mpnpu (outside errors.py too) derive from MpnpuError,
    except the interrupt that SIGTERM becomes."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
                builtin_bases = {b for b in bases if isinstance(getattr(builtins, b, None), type)
                                 and issubclass(getattr(builtins, b), BaseException)}
                if (builtin_bases and not bases - builtin_bases and builtin_bases != {"KeyboardInterrupt"}
                        and node.name != "MpnpuError"):
                    bad.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: class {node.name}")
    assert bad == []


@pytest.mark.parametrize("spec", ["complex64", "nonsense", np.dtype(np.complex128), object])
def test_a_bad_dtype_is_a_usage_error_that_is_also_a_type_error(spec) -> None:
    with pytest.raises(DTypeError) as info:
        get_dtype(spec)
    assert isinstance(info.value, UsageError) and isinstance(info.value, TypeError)
    assert "\n" not in str(info.value)


def test_exit_codes_are_one_int_enum() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 130, 143]
    assert ExitCode.USAGE == 2 and isinstance(ExitCode.OK, int)
    assert all(issubclass(c, MpnpuError) for c in vars(errors).values()
               if isinstance(c, type) and issubclass(c, Exception) and c.__module__ == errors.__name__)
