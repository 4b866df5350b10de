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


# -- Device.launch: kernel arguments and launch options never collide ---------------------------------


@pytest.mark.usefixtures("no_leaks")
def test_kernel_parameters_named_like_launch_options_reach_the_kernel() -> None:
    from mpnpu import Device, LaunchOptions
    from tests.runtime_util import OPTIONS, filled, k

    with Device(1, options=OPTIONS) as dev:
        out = filled(dev, "out", (3,))
        dev.launch(k("options_named"), out, trace=10, timeout=100, drop_syncs=1000, hold=10000)
        assert list(dev.to_host(out)) == [11110 + c for c in range(3)]
        result = dev.launch_with(LaunchOptions(trace=True, timeout_s=30.0), k("options_named"), out, 1, 2)
        assert result.trace is not None and list(dev.to_host(out)) == [3 + c for c in range(3)]


@pytest.mark.parametrize("kwargs", [dict(trace=1), dict(drop_syncs="S1"), dict(timeout_s=0), dict(timeout_s=True),
                                    dict(insert_syncs="after:X")])
def test_launch_options_are_checked_when_made(kwargs) -> None:
    from mpnpu import LaunchOptions

    with pytest.raises(UsageError):
        LaunchOptions(**kwargs)
    with pytest.raises(TypeError):
        LaunchOptions(True)  # type: ignore[misc]  # keyword-only


def test_one_block_dim_default_and_one_way_to_poison_gm() -> None:
    """DEFAULT_BLOCK_DIM (AI cores) is the Device's default and the tools'; the tools turn it into
    an operator's block_dim in one place only (a vector-only kernel's counts vector cores: two per
    AI core); GM poison is RuntimeOptions.gm_poison only."""
    import inspect

    from mpnpu import DEFAULT_BLOCK_DIM, Device, RuntimeOptions
    from mpnpu.harness.runner import run_batch
    from mpnpu.operators.protocol import default_block_dim
    from mpnpu.runtime.topology import KernelType

    assert inspect.signature(Device).parameters["block_dim"].default == DEFAULT_BLOCK_DIM == 1
    assert "gm_poison" not in inspect.signature(Device).parameters
    assert "gm_poison" not in inspect.signature(run_batch).parameters
    assert "gm_poison" in {f.name for f in __import__("dataclasses").fields(RuntimeOptions)}
    sources = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
               if "def default_block_dim" in p.read_text()]
    assert sources == ["operators/protocol.py"]

    class Op:
        def __init__(self, kind: KernelType | None) -> None:
            self.device_kernel_type = kind

    assert default_block_dim(Op(None)) == default_block_dim(Op(KernelType.MIX_1_2)) == DEFAULT_BLOCK_DIM
    assert default_block_dim(Op(KernelType.AIV)) == 2 * DEFAULT_BLOCK_DIM


@pytest.mark.time_limit(0.3)
def test_the_time_limit_marker_works_on_its_own() -> None:
    """No time_limit fixture asked for: the marker alone arms the alarm, which cuts the wait short."""
    import threading

    from tests.conftest import TimeLimitExceeded

    with pytest.raises(TimeLimitExceeded):
        threading.Event().wait(10.0)


def test_plugin_state_lives_in_the_config_stash(pytestconfig) -> None:
    from mpnpu.testing import plugin

    assert isinstance(plugin.STATE, pytest.StashKey)
    assert not [name for name, value in vars(plugin).items() if isinstance(value, plugin.PluginState)]
    assert isinstance(pytestconfig.stash[plugin.STATE], plugin.PluginState)


def test_every_vector_instruction_of_the_table_is_exported_and_an_unknown_one_says_where_to_add_it() -> None:
    from mpnpu import api
    from mpnpu.api import vector
    from mpnpu.errors import UnknownNameError

    assert vector._INSTRUCTIONS and all(getattr(api, name) is getattr(vector, name) for name in vector._INSTRUCTIONS)
    assert {"cast", *vector._INSTRUCTIONS} <= set(api.__all__)
    with pytest.raises(UnknownNameError, match="mpnpu/api/vector.py"):
        api.subs  # noqa: B018
