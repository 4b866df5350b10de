"""Operators from four parts: a kernel function, a golden, a case maker and a table of sync points.

:class:`KernelOperator` supplies everything else the tools need (seeded cases from (seed, index),
the golden computed once per case, judging with tolerances through :mod:`mpnpu.operators.compare`,
the ``incident``/``fixed`` variants, and a ``run()`` that allocates the case's tensors on the device,
launches the kernel and copies the outputs back). Example, a whole ``operator.py``::

    import numpy as np
    from mpnpu.operators.kernel import Case, KernelOperator

    def make(rng: np.random.Generator, index: int) -> Case:
        n = int(rng.integers(64, 512))
        x = rng.standard_normal(n).astype(np.float32)
        return Case(index, inputs={"x": x}, outputs={"total": ((1,), "float32")},
                    workspace={"partials": ((64,), "float32")}, params=(n,))

    def golden(case: Case) -> dict[str, np.ndarray]:
        return {"total": np.array([case.value("x").sum()])}

    OPERATOR = KernelOperator(
        name="two_phase_sum",
        kernel="my_package.two_phase_sum.kernel:main",  # kernel(x, total, partials, n)
        sync_points={"B1": "SyncAll between writing the partials and reading them"},
        incident={"B1"},  # the bug as written: B1 missing
        make=make,
        golden=golden,
    )

The kernel is called on every core as ``kernel(*inputs, *outputs, *workspace, *params)``, tensors
in the order of the case's dicts. Outputs and workspace come from the device's caching allocator
with every byte set to :data:`UNWRITTEN` before each case-run (never what an earlier case-run,
of this variant or another, left there), so a kernel must initialise what it reads. Inputs are
stored in their numpy dtype unless ``Case.dtypes`` names an emulated one (``"bfloat16"``: pass
float values, they are rounded once when the case is made, and
``case.value(name)`` gives the golden the stored values as float64).

Tolerances (docs/precision.md): by default integer and bool outputs must be binary equal, float
outputs pass within ``atol + rtol·|golden|`` on all but 0.1% of their elements with rtol 1e-3 for
float16, 2⁻⁷ for bfloat16 (one storage ulp, as the golden is rounded to the output dtype too) and
1e-4 for float32. Pass ``tolerance=`` a :class:`Tolerance`, a mapping output -> Tolerance, or a
function of the case returning that mapping to change them.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

import numpy as np

from mpnpu.errors import KernelError, UsageError
from mpnpu.operators.compare import Tolerance, compare_outputs
from mpnpu.operators.helpers import check_sync_names, fingerprint, variants_from_syncs, verdict_of
from mpnpu.operators.protocol import OperatorOption, Verdict, default_block_dim, takes_block_dim
from mpnpu.runtime.config import launch_options
from mpnpu.runtime.core import resolve_kernel, sibling_reference
from mpnpu.runtime.device import Device, LaunchResult
from mpnpu.runtime.dtypes import from_float32, get_dtype, to_float32

#: the byte every output and workspace holds before each case-run (of any variant): NaN in every float
#: dtype, -1 in every signed integer. A case-run never sees what an earlier one left (a fixed variant
#: that reads a buffer before writing it cannot pass on the incident run's leftovers), and a kernel
#: that assumes zeroed GM fails, as it may on the device.
UNWRITTEN = 0xFF


@dataclass(frozen=True)
class PerCore:
    """A workspace dimension that follows the launch: ``n`` for each core of ``cores`` ("vector",
    "cube" or "all") that the device runs. ``make`` cannot know the block_dim; the case's
    workspace is allocated when it runs on a device, so ``workspace={"counts": ((PerCore(), 8),
    "int32")}`` is a row of 8 per vector core (2 * block_dim rows on a mix 1:2 device), and
    ``(PerCore(16), "float32")`` 16 elements per vector core. Outputs cannot use it: their golden
    is computed without a device."""

    n: int = 1
    cores: str = "vector"

    def __post_init__(self) -> None:
        if self.cores not in ("vector", "cube", "all"):
            raise UsageError(f"PerCore(cores={self.cores!r}): choose 'vector', 'cube' or 'all'")
        if not isinstance(self.n, int) or self.n < 1:
            raise UsageError(f"PerCore({self.n!r}): expected a positive number of elements per core")

    def size(self, topology: Any) -> int:
        """The dimension on a device of ``topology`` (a :class:`mpnpu.runtime.topology.Topology`)."""
        count = int({"vector": topology.n_vector, "cube": topology.n_cube, "all": topology.n_cores}[self.cores])
        return self.n * max(1, count)


Shape = tuple[Union[int, PerCore], ...]
TensorSpec = tuple[Union[Shape, int, PerCore], str]  # (shape, device dtype name)
ToleranceSpec = Union[None, Tolerance, Mapping[str, Tolerance], Callable[["Case"], Mapping[str, Tolerance]]]

_GOLDEN_CACHE_SIZE = 256  # cases whose golden a KernelOperator keeps (the batch runner keeps its own too)


@dataclass
class Case:
    """One reproducible case: host inputs, the outputs to allocate, and the kernel's extra arguments.

    ``inputs``: name -> host array; ``dtypes``: name -> device dtype where it is not the array's own
    (e.g. "bfloat16"); ``outputs`` / ``workspace``: name -> (shape, device dtype), allocated uncleared;
    ``params``: passed to the kernel after the tensors (ints, floats, small dataclasses).
    """

    index: int
    inputs: dict[str, np.ndarray]
    outputs: dict[str, TensorSpec]
    params: tuple[Any, ...] = ()
    workspace: dict[str, TensorSpec] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    label: str = ""
    seed: int = 0
    block_dim: int | None = None  # the block_dim it was made for (set for a maker that takes it)

    def value(self, name: str) -> np.ndarray:
        """Input ``name`` as the device stores it, as float64 (what a golden should compute from)."""
        arr = self.inputs[name]
        dtype = self.dtypes.get(name)
        if dtype is not None and get_dtype(dtype).name != np.dtype(arr.dtype).name:
            return to_float32(arr, get_dtype(dtype)).astype(np.float64)
        return arr.astype(np.float64)

    def describe(self) -> str:
        shapes = ", ".join(f"{k} {'x'.join(map(str, v.shape)) or 'scalar'} {self.dtypes.get(k, v.dtype)}"
                           for k, v in self.inputs.items())
        return f"case {self.index}: " + (self.label or shapes)


@dataclass
class Prepared:
    """What a case needs for judging, computed once: the golden in the outputs' storage dtypes."""

    golden: dict[str, np.ndarray]
    tolerances: dict[str, Tolerance]


def default_tolerance(dtype: str) -> Tolerance:
    """The precision rule for one output dtype (docs/precision.md)."""
    d = get_dtype(dtype)
    if not d.is_float:
        return Tolerance(rtol=0.0, atol=0.0, exact=True)
    rtol = {"float16": 1e-3, "bfloat16": 2.0**-7, "float32": 1e-4}.get(d.name, 1e-6)
    atol = 1e-5 if d.name in ("float16", "bfloat16") else 1e-6
    storage = d.name if np.dtype(d.storage).kind != "f" else None  # bfloat16 is stored as uint16 bits
    return Tolerance(rtol=rtol, atol=atol, storage_dtype=storage)


def stored(values: Any, dtype: str) -> np.ndarray:
    """``values`` rounded to ``dtype`` and held as the device stores it (bfloat16 as uint16 bits)."""
    d = get_dtype(dtype)
    arr = np.asarray(values)
    if arr.dtype == d.storage:
        return arr
    if d.is_float and np.dtype(d.storage).kind != "f":  # an emulated float: round, keep the bits
        return from_float32(arr.astype(np.float32), d)
    return arr.astype(d.storage)


@dataclass(frozen=True)
class KernelOperator:
    """An operator under test built from a kernel, a golden, a case maker and a sync-point table.

    ``make(rng, index)`` returns a :class:`Case` (``make(rng, index, **settings)`` when the operator
    declares ``options``); ``rng`` is ``np.random.default_rng([seed, index])``, so a case is a pure
    function of (seed, index). A ``make`` with a ``block_dim`` parameter also gets the block_dim of
    the device the case is made for (the tools' default when none is given), so a case can be sized
    by the core count (a row per AI core); its case is then a function of (seed, index, block_dim).
    ``golden(case)`` returns every output's exact values (float64 is fine: they are rounded to the
    output dtype). ``incident`` names the sync points the bug as written
    lacks (the ``incident`` variant drops them; ``fixed`` keeps every one).
    """

    name: str
    kernel: Union[str, Callable[..., None]]
    sync_points: Mapping[str, str]
    incident: frozenset[str]
    make: Callable[..., Case]
    golden: Callable[[Case], Mapping[str, Any]]
    tolerance: ToleranceSpec = None
    stages: tuple[str, ...] = ()
    more_variants: Mapping[str, frozenset[str]] = field(default_factory=dict)
    fingerprint_outputs: tuple[str, ...] = ()  # outputs whose bytes identify a result (default: all)
    options: tuple[OperatorOption, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)  # values of ``options`` (defaults if unset)
    diagnosis: Any = None  # a mpnpu.operators.diagnosis.Diagnosis
    description: str = ""
    probes: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # none: run() has no probe hooks
    #: the byte every output and workspace holds when a case-run starts (default UNWRITTEN); None: the
    #: caching allocator's blocks as the previous case-run left them, as the device hands them on
    #: (for a kernel whose story is that stale data: the A/B verdict can then be told apart less well)
    unwritten: int | None = UNWRITTEN
    _goldens: dict[tuple[int, int, int | None], Prepared] = field(default_factory=dict, init=False, repr=False,
                                                                  compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "incident", check_sync_names(self.incident, self.sync_points, " in incident"))
        object.__setattr__(self, "kernel", _kernel_ref(self.kernel))

    @property
    def variants(self) -> dict[str, frozenset[str]]:
        table = variants_from_syncs(self.incident, **self.more_variants)
        for name, dropped in table.items():
            check_sync_names(dropped, self.sync_points, f" in variant {name}")
        return table

    def with_options(self, **values: Any) -> "KernelOperator":
        from dataclasses import replace

        return replace(self, settings={**self.settings, **values})

    # -- the Operator protocol --------------------------------------------------------------------------

    def make_case(self, seed: int, index: int, block_dim: int | None = None) -> Case:
        for what, value in (("seed", seed), ("index", index)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
                raise UsageError(f"{what} must be a non-negative integer, got {value!r}")
        rng = np.random.default_rng([int(seed), int(index)])
        settings = {o.name: o.default for o in self.options} | dict(self.settings) if self.options else {}
        sized = takes_block_dim(self.make)
        if sized:
            if block_dim is None:
                block_dim = default_block_dim(self)
            settings["block_dim"] = int(block_dim)
        case = self.make(rng, int(index), **settings)
        case.seed = int(seed)
        case.block_dim = int(block_dim) if sized and block_dim is not None else None
        case.inputs = {k: stored(v, case.dtypes[k]) if k in case.dtypes else np.asarray(v)
                       for k, v in case.inputs.items()}
        return case

    def describe_case(self, case: Case) -> str:
        return case.describe()

    def prepare(self, case: Case) -> Prepared:
        key = (case.seed, case.index, case.block_dim)
        hit = self._goldens.get(key)
        if hit is not None:
            return hit
        values = dict(self.golden(case))
        missing = sorted(set(case.outputs) - set(values))
        if missing:
            raise UsageError(f"operator {self.name}: the golden has no value for output(s) {', '.join(missing)}")
        golden = {name: self._golden_of(case, name, values[name], tensor_shape(shape), dtype)
                  for name, (shape, dtype) in case.outputs.items()}
        prepared = Prepared(golden, self._tolerances(case))
        if len(self._goldens) < _GOLDEN_CACHE_SIZE:
            self._goldens[key] = prepared
        return prepared

    def run(self, device: Device, case: Case, *, drop_syncs: frozenset[str] = frozenset(), probe: str = "",
            trace: bool = False) -> tuple[dict[str, Any], LaunchResult]:
        if probe:
            raise UsageError(f"operator {self.name} has no probe {probe!r}")
        dropped = check_sync_names(drop_syncs, self.sync_points)
        with device.scope() as gm:
            ins = [gm.to_device(n, a, case.dtypes.get(n)) for n, a in case.inputs.items()]
            outs = {n: gm.empty(n, tensor_shape(shape), dtype, self.unwritten, poison=True)
                    for n, (shape, dtype) in case.outputs.items()}
            work = [gm.empty(n, tensor_shape(shape, device.topology), dtype, self.unwritten,
                                poison=True)
                    for n, (shape, dtype) in case.workspace.items()]
            try:
                launch = device.launch_with(launch_options(drop_syncs=dropped, trace=trace),
                                            self.kernel, *ins, *outs.values(), *work, *case.params)
            except KernelError as e:
                hint = argument_order_hint(self.kernel, [*case.inputs, *case.outputs, *case.workspace])
                if not hint or e.details.get("error_type") not in ("GMAccessError", "KernelAPIError"):
                    raise
                raise KernelError(f"{e.message} ({hint})", **e.details) from None
            outputs = {n: device.to_host(t) for n, t in outs.items()}
        return outputs, launch

    def judge(self, case: Case, prepared: Prepared, outputs: Mapping[str, Any], probe: str = "") -> Verdict:
        cmp = compare_outputs(outputs, prepared.golden, prepared.tolerances)
        names = self.fingerprint_outputs or tuple(prepared.golden)
        return verdict_of(cmp, fingerprint(*(outputs[n] for n in names if n in outputs)))

    # -- helpers --------------------------------------------------------------------------------------

    def _golden_of(self, case: Case, name: str, value: Any, shape: tuple[int, ...], dtype: str) -> np.ndarray:
        """Output ``name``'s golden, stored as the device stores it, in its declared shape; a golden
        with another number of elements is the operator's mistake, said in one line."""
        arr = stored(value, dtype)
        if arr.size != int(np.prod(shape)):
            raise UsageError(
                f"operator {self.name}: the golden of output {name} has shape {tuple(arr.shape)} "
                f"({arr.size} elements) but {case.describe()} declares {shape} ({int(np.prod(shape))} elements)"
                f"{_defined_at(self.golden)}", output=name, golden_shape=list(arr.shape), declared_shape=list(shape))
        return arr.reshape(shape)  # a flat golden of the declared size is fine

    def _tolerances(self, case: Case) -> dict[str, Tolerance]:
        tol = self.tolerance
        if callable(tol) and not isinstance(tol, Tolerance):
            tol = tol(case)
        if isinstance(tol, Tolerance):
            return {name: tol for name in case.outputs}
        given = dict(tol or {})
        return {name: given.get(name) or default_tolerance(dtype) for name, (_, dtype) in case.outputs.items()}


def tensor_shape(shape: Union[Shape, int, PerCore], topology: Any = None) -> tuple[int, ...]:
    """A tensor spec's shape as numbers; a :class:`PerCore` dimension needs the device's topology."""
    dims = (shape,) if isinstance(shape, (int, PerCore)) else tuple(shape)
    if topology is None and any(isinstance(d, PerCore) for d in dims):
        raise UsageError(f"shape {shape!r}: PerCore sizes a workspace by the launch; an output's shape must be "
                         "numbers (its golden is computed without a device)")
    return tuple(d.size(topology) if isinstance(d, PerCore) else int(d) for d in dims)


def argument_order_hint(kernel: Any, tensors: list[str]) -> str:
    """A hint when the kernel's parameter names say the case passes its tensors in another order:
    a KernelOperator calls ``kernel(*inputs, *outputs, *workspace, *params)``, by position. Empty
    when the names do not suggest it (or the kernel cannot be inspected)."""
    try:
        fn = resolve_kernel(kernel)
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except Exception:  # a kernel object, a C++ kernel, a module that no longer imports: no hint
        return ""
    got = list(zip(tensors, params))
    moved = [(t, p) for t, p in got if t != p and t in params]
    if not moved:
        return ""
    t, p = moved[0]
    name = getattr(fn, "__name__", "kernel")
    return (f"argument order? {name}({', '.join(params)}) gets the case's tensors by position, inputs, outputs, "
            f"workspace, then params, each in its dict's order: {', '.join(tensors)}; tensor {t!r} went to "
            f"parameter {p!r}")


def _defined_at(fn: Any) -> str:
    """' (golden at dir/file.py:12)': where a function of the operator is defined, when known."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    path = code.co_filename
    return f" (golden {getattr(fn, '__name__', '')} at {os.path.basename(os.path.dirname(path))}/" \
           f"{os.path.basename(path)}:{code.co_firstlineno})"


def _kernel_ref(kernel: Union[str, Callable[..., None]]) -> Union[str, Callable[..., None]]:
    """The kernel as core processes can import it. A function defined in an operator loaded from a
    file lives in a module (``mpnpu_operator_*``) that a core process cannot import by name, so it
    becomes ``path/to/file.py:function``; so does ``"module:function"`` naming a sibling of such a
    file (:func:`mpnpu.runtime.core.sibling_reference`); anything else goes to ``Device.launch`` as
    it is."""
    if isinstance(kernel, str):
        return sibling_reference(kernel)
    module = inspect.getmodule(kernel)
    path = getattr(module, "__file__", None)
    if path and getattr(module, "__name__", "").startswith("mpnpu_operator_"):
        return f"{path}:{kernel.__qualname__}"
    return kernel
