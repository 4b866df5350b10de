"""Ascend C kernels as operators that every tool takes (``--op``): :class:`AscendCOperator`.

An operator of a C++ kernel is the same four parts as a Python one (:mod:`mpnpu.operators.kernel`:
seeded cases, a golden, tolerances, variants by dropped sync points) plus how to build and call the
kernel::

    OPERATOR = AscendCOperator(
        name="add-cxx",
        sources=("ascendc/add_custom.cpp",),   # relative to ``root`` (default: the operator's folder)
        entry="add_custom",
        make=cases.make, golden=golden.golden,
        defines=lambda case: {"DTYPE_X": {"float16": "half", "float32": "float"}[case.dtypes["x"]]},
        tiling=Tiling("ascendc/add_custom_tiling.h", "AddCustomTilingData", fill=tiling_of),
        incident=first_after("ascendc/add_custom.cpp", r"^\\s*CopyToWorkspace\\(", "SyncAll"),
    )

Sync points are the kernel's sync call sites, named ``dir/file:line`` (:mod:`mpnpu.ascendc.build.syncpoints`);
``incident`` names the ones the bug as written lacks, by name or by a locator evaluated against them.
The kernel is called as ``kernel(*inputs, *outputs, *workspace, [tiling], *params)`` unless ``args``
says otherwise; the tiling struct is packed by field name into GM bytes with the layout the compiler
gives it (:mod:`mpnpu.ascendc.tiling`). Libraries are built once per set of ``-D`` defines and cached.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

from mpnpu.errors import UsageError
from mpnpu.operators.helpers import check_sync_names
from mpnpu.operators.kernel import UNWRITTEN, Case, KernelOperator, Prepared, tensor_shape
from mpnpu.operators.protocol import OperatorOption, Verdict
from mpnpu.runtime.config import launch_options
from mpnpu.runtime.device import Device, LaunchResult
from mpnpu.runtime.procutil import available_cpus
from mpnpu.runtime.topology import KernelType

from .build import syncpoints
from .build.compiler import BuildSpec, is_built
from .kernel import CompiledKernel, compile_kernel, detect_kernel_type, kernel_build_spec
from .tiling import TilingLayout, tiling_layout

Defines = Union[Mapping[str, Any], Callable[[Case], Mapping[str, Any]]]


@dataclass(frozen=True)
class Tiling:
    """The kernel's tiling struct: where it is defined, and its values for a case (by field name)."""

    header: str
    struct: str
    fill: Callable[[Case], Mapping[str, Any]]


@dataclass(frozen=True)
class SyncLocator:
    """A sync point named by where it stands: the first ``call`` after the first line of ``path``
    matching ``pattern`` (see :func:`mpnpu.ascendc.build.syncpoints.first_after`)."""

    path: str
    pattern: str
    call: str = "SyncAll"


def first_after(path: str, pattern: str, call: str = "SyncAll") -> SyncLocator:
    """The sync point of the first ``call`` after the line of ``path`` that ``pattern`` matches."""
    return SyncLocator(path, pattern, call)


def _caller_folder() -> str:
    """The folder of the module that defines the operator: the first frame outside this package and
    outside generated code (the dataclass's ``__init__`` is "<string>")."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame = inspect.currentframe()
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith("<") and not os.path.abspath(path).startswith(here):
            return os.path.dirname(os.path.abspath(path))
        frame = frame.f_back
    return os.getcwd()


@dataclass(frozen=True)
class AscendCOperator:
    """An operator whose kernel is Ascend C source (see the module docstring)."""

    name: str
    sources: tuple[str, ...]
    entry: str
    make: Callable[..., Case]
    golden: Callable[[Case], Mapping[str, Any]]
    incident: Any = frozenset()  # sync point names, SyncLocators, or a mix
    defines: Defines = field(default_factory=dict)
    tiling: Tiling | None = None
    args: Callable[[Case, Mapping[str, Any]], Sequence[Any]] | None = None
    kernel_type: KernelType | None = None
    include_dirs: tuple[str, ...] = ()
    tiling_key: Callable[[Case], int] | int = 0
    tolerance: Any = None
    stages: tuple[str, ...] = ()
    more_variants: Mapping[str, Any] = field(default_factory=dict)
    options: tuple[OperatorOption, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    diagnosis: Any = None
    description: str = ""
    #: probe name -> (diagnosis step, what it changes, the -D defines that switch it on)
    probe_defines: Mapping[str, tuple[str, str, Mapping[str, Any]]] = field(default_factory=dict)
    root: str = ""  # relative paths are relative to this folder (default: the defining module's)
    _cache: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        root = self.root or _caller_folder()
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "sources", tuple(self._path(s) for s in self.sources))
        if self.tiling is not None:
            object.__setattr__(self, "tiling", replace(self.tiling, header=self._path(self.tiling.header)))
        object.__setattr__(self, "include_dirs", tuple(self._path(d) for d in self.include_dirs))

    def _path(self, p: str) -> str:
        return p if os.path.isabs(p) else os.path.normpath(os.path.join(self.root, p))

    # -- what the tools read ---------------------------------------------------------------------------

    @property
    def device_kernel_type(self) -> KernelType:
        """The cores a launch of this kernel starts (the tools build their devices for it)."""
        return self.kernel_type or detect_kernel_type(self.sources)

    @property
    def sync_point_table(self) -> dict[str, syncpoints.SyncPoint]:
        hit = self._cache.get("syncs")
        if hit is None:
            hit = self._cache["syncs"] = syncpoints.kernel_sync_points(self.sources)
        return hit

    @property
    def sync_points(self) -> dict[str, str]:
        hit = self._cache.get("sync_descriptions")
        if hit is None:
            hit = self._cache["sync_descriptions"] = {name: p.description for name, p in self.sync_point_table.items()}
        return hit

    def _names(self, spec: Any) -> frozenset[str]:
        items = [spec] if isinstance(spec, (str, SyncLocator)) else list(spec or ())
        out = set()
        for item in items:
            if isinstance(item, SyncLocator):
                out.add(syncpoints.first_after(self.sync_point_table, self._path(item.path), item.pattern, item.call))
            else:
                out |= syncpoints.resolve([item], self.sync_point_table)
        return frozenset(out)

    def resolve_sync_names(self, names: Any) -> frozenset[str]:
        """Sync points as a user names them: FILE:LINE of the call, the file by any path suffix
        ("add.cpp:45" is "op_kernel/add.cpp:45"), or a full name from :attr:`sync_points`."""
        if isinstance(names, str):
            raise UsageError(f"drop_syncs must be a collection of FILE:LINE names, e.g. ('add.cpp:45',), "
                             f"not {names!r}")
        return syncpoints.resolve(names, self.sync_point_table)

    @property
    def variants(self) -> dict[str, frozenset[str]]:
        table = {"incident": self._names(self.incident), "fixed": frozenset()}
        table.update({k: self._names(v) for k, v in self.more_variants.items()})
        return table

    @property
    def probes(self) -> dict[str, tuple[str, str]]:
        return {k: (step, what) for k, (step, what, _) in self.probe_defines.items()}

    def with_options(self, **values: Any) -> "AscendCOperator":
        return replace(self, settings={**self.settings, **values})

    def _python_side(self) -> KernelOperator:
        """Cases, goldens and judging, exactly as for a Python kernel (the kernel is never launched
        through it)."""
        hit = self._cache.get("py")
        if hit is None:
            hit = self._cache["py"] = KernelOperator(
                name=self.name, kernel="mpnpu.ascendc.operator:_never_called", sync_points={"-": ""},
                incident=frozenset(), make=self.make, golden=self.golden, tolerance=self.tolerance,
                options=self.options, settings=self.settings,
            )
        return hit

    # -- the Operator protocol -----------------------------------------------------------------------------

    def make_case(self, seed: int, index: int, block_dim: int | None = None) -> Case:
        return self._python_side().make_case(seed, index, block_dim)

    def describe_case(self, case: Case) -> str:
        return case.describe()

    def prepare(self, case: Case) -> Prepared:
        return self._python_side().prepare(case)

    def judge(self, case: Case, prepared: Prepared, outputs: Mapping[str, Any], probe: str = "") -> Verdict:
        return self._python_side().judge(case, prepared, outputs, probe)

    def kernel_for(self, case: Case, probe: str = "") -> CompiledKernel:
        """The compiled kernel for this case's defines (and probe), built once and cached."""
        key, defines = self._defines_of(case, probe)
        kernel = self._cache.get(("kernel", key))
        if kernel is None:
            kernel = self._cache[("kernel", key)] = self._compile(defines)
        key_value = self.tiling_key(case) if callable(self.tiling_key) else self.tiling_key
        return kernel.with_launch(tiling_key=int(key_value)) if key_value else kernel

    def _defines_of(self, case: Case, probe: str) -> tuple[tuple[tuple[str, str], ...], dict[str, Any]]:
        """(the key of the library this case launches, its -D defines)."""
        defines = dict(self.defines(case) if callable(self.defines) else self.defines)
        if probe:
            if probe not in self.probe_defines:
                raise UsageError(f"operator {self.name} has no probe {probe!r}; probes: "
                                 f"{', '.join(self.probe_defines) or 'none'}")
            defines.update(self.probe_defines[probe][2])
        return tuple(sorted((str(k), str(v)) for k, v in defines.items())), defines

    def _build_spec(self, defines: Mapping[str, Any]) -> BuildSpec:
        return kernel_build_spec(self.sources, self.entry, defines=defines, include_dirs=self.include_dirs,
                                 tiling_header=self.tiling.header if self.tiling else None)

    def _compile(self, defines: Mapping[str, Any]) -> CompiledKernel:
        return compile_kernel(self.sources, self.entry, defines=defines, include_dirs=self.include_dirs,
                              tiling_header=self.tiling.header if self.tiling else None,
                              kernel_type=self.device_kernel_type)

    def build_kernels(self, cases: Iterable[Case], probe: str = "", report: Callable[[str], None] | None = None,
                      jobs: int | None = None) -> int:
        """Build now every library these cases launch that is not built yet, so that no case-run
        waits for the compiler (and no batch's timing counts it): the first alone (it makes the
        precompiled header the others share), the rest up to ``jobs`` at a time (default: the
        CPUs this process may use). ``report`` gets a line before the compiles and one per library
        compiled; libraries already in the build cache are loaded without a word. Returns how many
        were compiled. A compile error is raised as from the case's own launch (the first one)."""
        wanted: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
        for case in cases:
            key, defines = self._defines_of(case, probe)
            if ("kernel", key) not in self._cache:
                wanted.setdefault(key, defines)
        todo = []
        for key, defines in wanted.items():
            if is_built(self._build_spec(defines)):
                self._cache[("kernel", key)] = self._compile(defines)  # (from the build cache: no compile)
            else:
                todo.append((key, defines))
        if not todo:
            return 0
        workers = max(1, min(len(todo) - 1, jobs or len(available_cpus())))
        source = os.path.basename(self.sources[0])
        if report is not None:
            at_once = f", {workers} at a time after the first" if len(todo) > 2 and workers > 1 else ""
            report(f"building {len(todo)} kernel librar{'y' if len(todo) == 1 else 'ies'} of {self.name} "
                   f"({source}{at_once}); they are cached for later runs")

        def one(item: tuple[tuple[tuple[str, str], ...], dict[str, Any]]) -> None:
            key, defines = item
            start = time.perf_counter()
            self._cache[("kernel", key)] = self._compile(defines)
            if report is not None:
                what = " ".join(f"-D{k}={v}" for k, v in key) or "no defines"
                report(f"  built {source} ({what}) in {time.perf_counter() - start:.1f} s")

        one(todo[0])
        if len(todo) > 1:
            with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(one, item) for item in todo[1:]]
                try:
                    for f in futures:
                        f.result()  # (the first error, in the cases' order)
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
        return len(todo)

    def tiling_layout(self) -> TilingLayout | None:
        if self.tiling is None:
            return None
        hit = self._cache.get("layout")
        if hit is None:
            hit = self._cache["layout"] = tiling_layout(self.tiling.header, self.tiling.struct,
                                                        include_dirs=self.include_dirs)
        return hit

    def run(self, device: Device, case: Case, *, drop_syncs: frozenset[str] = frozenset(), probe: str = "",
            trace: bool = False) -> tuple[dict[str, Any], LaunchResult]:
        kernel = self.kernel_for(case, probe)
        dropped = check_sync_names(drop_syncs, self.sync_points)
        with device.scope() as gm:
            tensors: dict[str, Any] = {n: gm.to_device(n, a, case.dtypes.get(n)) for n, a in case.inputs.items()}
            outs = {n: gm.empty(n, tensor_shape(shape), dtype, UNWRITTEN, poison=True)
                    for n, (shape, dtype) in case.outputs.items()}
            tensors.update(outs)
            tensors.update({n: gm.empty(n, tensor_shape(shape, device.topology), dtype, UNWRITTEN, poison=True)
                            for n, (shape, dtype) in case.workspace.items()})
            layout = self.tiling_layout()
            if layout is not None and self.tiling is not None:
                tensors["tiling"] = gm.to_device("tiling", layout.pack(self.tiling.fill(case)), "uint8")
            args = list(self.args(case, tensors)) if self.args else self._default_args(case, tensors)
            launch = device.launch_with(launch_options(drop_syncs=dropped, trace=trace), kernel, *args)
            outputs = {n: device.to_host(t) for n, t in outs.items()}
        return outputs, launch

    def _default_args(self, case: Case, tensors: Mapping[str, Any]) -> list[Any]:
        names = [*case.inputs, *case.outputs, *case.workspace] + (["tiling"] if "tiling" in tensors else [])
        return [tensors[n] for n in names] + list(case.params)


def _never_called(*_: Any) -> None:
    raise UsageError("AscendCOperator launches its compiled kernel, never this")


__all__ = ["AscendCOperator", "SyncLocator", "Tiling", "first_after"]
