"""A compiled Ascend C kernel as the runtime launches it: ``Device.launch(kernel, *args)``.

:func:`compile_kernel` builds (or finds in the cache) the library and returns a
:class:`CompiledKernel`: a small frozen object that pickles into a device's first launch of it
(later launches name it by a handle) and, called in a core process, runs the library's entry there
(:mod:`mpnpu.ascendc.native.bridge`). It is a *kernel object* for the runtime, and satisfies each of
the optional protocols of :mod:`mpnpu.runtime.seam` (checks its launches, takes inserted syncs,
immutable, serves natively; ``__mpnpu_pipes__ = "own"``): the runtime knows nothing else of C++.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from mpnpu.errors import UnsupportedError, UsageError
from mpnpu.runtime.gm import GlobalTensor
from mpnpu.runtime.seam import NativeCore, NativeServing
from mpnpu.runtime.topology import KernelType

from .build import stagehooks
from .build.compiler import BuildSpec, build
from .native import bridge, serve

#: KERNEL_TASK_TYPE_DEFAULT values and function qualifiers -> the cores a launch starts
_TYPES = {
    "KERNEL_TYPE_AIV_ONLY": KernelType.AIV, "KERNEL_TYPE_MIX_AIV_1_0": KernelType.AIV,
    "KERNEL_TYPE_AIC_ONLY": KernelType.AIC, "KERNEL_TYPE_MIX_AIC_1_0": KernelType.AIC,
    "KERNEL_TYPE_MIX_AIC_1_1": KernelType.MIX_1_1, "KERNEL_TYPE_MIX_AIC_1_2": KernelType.MIX_1_2,
}
_TASK_TYPE = re.compile(r"\bKERNEL_TASK_TYPE_DEFAULT\s*\(\s*(\w+)\s*\)")
_MIX = re.compile(r"\b__mix__\s*\(\s*(\d)\s*,\s*(\d)\s*\)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def detect_kernel_type(sources: Sequence[str]) -> KernelType:
    """The kernel type a source declares: KERNEL_TASK_TYPE_DEFAULT, or a ``__mix__(a, b)`` /
    ``__cube__`` qualifier; vector-only when it says nothing (what a kernel without cube code is)."""
    for path in sources:
        with open(path, errors="replace") as f:
            text = _COMMENT.sub(" ", f.read())
        # the first type this chip class has (a kernel for several families may declare one per family)
        declared = [m.group(1) for m in _TASK_TYPE.finditer(text) if m.group(1) in _TYPES]
        if declared:
            return _TYPES[declared[0]]
        m = _MIX.search(text)
        if m:
            aic, aiv = int(m.group(1)), int(m.group(2))
            return {(1, 2): KernelType.MIX_1_2, (1, 1): KernelType.MIX_1_1, (1, 0): KernelType.AIC,
                    (0, 1): KernelType.AIV}.get((aic, aiv), KernelType.MIX_1_2)
        if re.search(r"\b__cube__\b", text):
            return KernelType.AIC
    return KernelType.AIV


_TYPE_WORDS = {KernelType.AIV: "vector cores only", KernelType.AIC: "cube cores only",
               KernelType.MIX_1_1: "1 cube + 1 vector core per block",
               KernelType.MIX_1_2: "1 cube + 2 vector cores per block"}


@dataclass(frozen=True)
class CompiledKernel:
    """A kernel library and how to launch it (picklable; called on every core of a launch)."""

    path: str  # the library
    entry: str
    source: str  # the source that defines the entry (for the kernel's name in reports)
    params: tuple[str, ...]  # the entry's parameter kinds (mpnpu.ascendc.native.bridge)
    kernel_type: KernelType = KernelType.AIV
    tiling_key: int = 0  # what TILING_KEY_IS compares with
    sys_workspace_bytes: int = 0  # what GetUserWorkspace skips (0: CPU-debug style)
    memcheck: bool = True
    #: a library built with stage hooks: stage name -> offsets of its functions (mpnpu.ascendc.build.stagehooks)
    stages: tuple[tuple[str, tuple[int, ...]], ...] = ()

    #: the kernel orders its pipes and runs them itself (the runtime's pipe engine stays in order)
    __mpnpu_pipes__ = "own"
    #: frozen: a device sends it to a pool's cores once, then by handle (mpnpu.runtime.core.is_kernel_object)
    mpnpu_immutable = True

    @functools.cached_property
    def mpnpu_kernel_name(self) -> str:  # (read several times per launch: made once)
        return f"{self.entry} ({os.path.basename(self.source)})"

    def mpnpu_check_launch(self, topology: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        """In the parent, before any core runs: the device starts the cores this kernel needs, and
        the arguments fit the entry's parameters."""
        if topology.kernel_type is not self.kernel_type:
            raise UsageError(
                f"kernel {self.entry} is {self.kernel_type.value} ({_TYPE_WORDS[self.kernel_type]}), the device "
                f"is {topology.kernel_type.value}: make it with "
                f"Device(block_dim, kernel_type=KernelType.{self.kernel_type.name})")
        if kwargs:
            raise UsageError(f"kernel {self.entry} is C++: pass its arguments by position, not {sorted(kwargs)}")
        if self._pointers_only and len(args) == len(self.params) \
                and all(type(a) is GlobalTensor or a is None for a in args):
            return  # (what a batch launches every time: the full check only words an error)
        bridge.check_arguments(self.entry, self.params, args)

    @functools.cached_property
    def _pointers_only(self) -> bool:
        return all(p == "p" for p in self.params)

    @functools.cached_property
    def mpnpu_native(self) -> tuple[str, ...] | None:
        """In the parent: the entry's parameter kinds if a plain launch of this kernel may go as a
        native command, which a core's native serving loop runs without its Python
        (:mod:`mpnpu.ascendc.native.serve`); None if not."""
        return self.params if not self.stages and serve.enabled() else None

    def mpnpu_native_register(self, core: NativeCore, handle: int,
                              loop: NativeServing | None) -> NativeServing | None:
        """In a core process, after a plain launch of this kernel ran there: register it as
        ``handle`` in the core's native serving loop (made now if ``loop`` is None); the loop to use
        from now on."""
        run = self.__dict__.get("_run")
        entry = run.native_entry() if run is not None else None
        return loop if entry is None else serve.register(core, handle, entry, loop)

    def mpnpu_with_inserts(self, inserts: Sequence[Any]) -> "CompiledKernel":
        """In the parent, for a launch that inserts syncs at stage boundaries: this kernel built with
        stage hooks, told where its stages' functions are (:mod:`mpnpu.ascendc.build.stagehooks`)."""
        spec = _SPECS.get(self.path)
        if spec is None:
            raise UnsupportedError(f"kernel {self.entry}: syncs can be inserted only into a kernel mpnpu built "
                                   "(compile_kernel, an operator, mpnpu run)")
        path = stagehooks.instrumented(spec)
        return replace(self, path=path, stages=stagehooks.stage_functions(path, stagehooks.stages_of(inserts)))

    def with_launch(self, **changes: Any) -> "CompiledKernel":
        """The same library launched differently (tiling_key, sys_workspace_bytes, memcheck)."""
        return replace(self, **changes)

    def __call__(self, *args: Any) -> None:
        run = self.__dict__.get("_run")  # (made once per process: see bridge.launcher)
        if run is None:
            run = self.__dict__["_run"] = bridge.launcher(bridge.load(self.path), self.kernel_type, self.tiling_key,
                                                          self.sys_workspace_bytes, self.memcheck, self.stages)
        run(args)

    @functools.cached_property
    def _wire(self) -> str:
        """How this kernel travels in a launch: its fields as one literal (see __reduce__)."""
        # (as plain Python values: a numpy integer's repr, np.int64(3), is no literal)
        stages = tuple((str(name), tuple(int(o) for o in offsets)) for name, offsets in self.stages)
        return repr((str(self.path), str(self.entry), str(self.source), tuple(str(p) for p in self.params),
                     self.kernel_type.value, int(self.tiling_key), int(self.sys_workspace_bytes), bool(self.memcheck),
                     stages))

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled into a device's first launch of it on each pool (then sent by handle): as one
        # string, made once (a dataclass with an enum field costs ~20 us to pickle and as much to
        # rebuild; a tuple of its fields ~3 us; one string, ~0.3 us), rebuilt once per process.
        return (_rebuild, (self._wire,))


_REBUILT: dict[str, CompiledKernel] = {}
#: how each library this process built was made (to build it again with stage hooks)
_SPECS: dict[str, BuildSpec] = {}


def _rebuild(wire: str) -> CompiledKernel:
    k = _REBUILT.get(wire)
    if k is None:
        path, entry, source, params, kt, key, sys_ws, memcheck, stages = ast.literal_eval(wire)
        k = _REBUILT[wire] = CompiledKernel(path, entry, source, params, KernelType(kt), key, sys_ws, memcheck,
                                            stages)
    return k


def kernel_build_spec(sources: str | Sequence[str], entry: str, *, defines: Mapping[str, Any] | None = None,
                      include_dirs: Sequence[str] = (), tiling_header: str | None = None,
                      flags: Sequence[str] = ()) -> BuildSpec:
    """What :func:`compile_kernel` builds for these arguments."""
    paths = (sources,) if isinstance(sources, str) else tuple(sources)
    return BuildSpec(tuple(os.path.abspath(p) for p in paths), entry, {k: str(v) for k, v in (defines or {}).items()},
                     tuple(include_dirs), tiling_header, tuple(flags))


def compile_kernel(sources: str | Sequence[str], entry: str, *, defines: Mapping[str, Any] | None = None,
                   include_dirs: Sequence[str] = (), tiling_header: str | None = None, flags: Sequence[str] = (),
                   kernel_type: KernelType | None = None, tiling_key: int = 0, force: bool = False) -> CompiledKernel:
    """Build an Ascend C kernel (cached) and return it ready for ``Device.launch``.

    ``sources``: the file that defines ``entry`` first, then any other files to link; ``defines``:
    ``-D`` flags (e.g. ``{"DTYPE_X": "half"}``); ``tiling_header``: a header included before the
    sources (a CPU-debug ``*_tiling_def.h``). ``kernel_type`` defaults to what the source declares
    (:func:`detect_kernel_type`).
    """
    spec = kernel_build_spec(sources, entry, defines=defines, include_dirs=include_dirs, tiling_header=tiling_header,
                             flags=flags)
    built = build(spec, force=force)
    _SPECS[built.path] = spec
    lib = bridge.load(built.path)
    kt = kernel_type or detect_kernel_type(spec.sources + ((tiling_header,) if tiling_header else ()))
    return CompiledKernel(built.path, entry, spec.sources[0], lib.params, kt, tiling_key)
