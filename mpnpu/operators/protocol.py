"""What the batch, investigate and stress tools need to know about an operator under test.

The tools are generic; an operator package (``kernels/<op>/operator.py``) provides one object that
satisfies :class:`Operator`: how to make a reproducible case, run it on a device with some sync
points dropped (and optionally a diagnosis probe), and judge its outputs. It also declares what the
tools would otherwise have to know about it: its tool options (:class:`OperatorOption`, e.g. tile
sizes, which every command line then offers as ``--base-m`` ...), its sync points (names the
``--drop-sync`` option accepts, see :func:`parse_sync_names`), its variants and, where it has one,
its diagnosis chain (:class:`mpnpu.operators.diagnosis.Diagnosis`).

Tools find operators by name (:mod:`mpnpu.operators.registry`), never by importing a kernel package.
Most operators need not write this protocol out by hand: :class:`mpnpu.operators.kernel.KernelOperator`
turns a kernel function, a golden, a case maker and a table of sync points into one.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from mpnpu.errors import UsageError
from mpnpu.runtime import cpuset
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM
from mpnpu.runtime.device import Device, LaunchResult
from mpnpu.runtime.topology import KernelType, Topology

if TYPE_CHECKING:
    from mpnpu.operators.diagnosis import Diagnosis


@dataclass
class Verdict:
    """How one case-run was judged.

    ``fingerprint`` identifies the judged outputs' bytes, so that repeats of the same case can be
    compared with each other (the "consistent across batch runs" test of docs/incident.md).
    """

    passed: bool
    failed_outputs: list[str] = field(default_factory=list)
    min_rel_error: float = 0.0  # over failing elements
    max_rel_error: float = 0.0
    fingerprint: bytes = b""
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OperatorOption:
    """A setting of an operator that the command lines offer as ``--<name with dashes>``.

    ``parse`` turns the command-line text into a value (it raises ``argparse.ArgumentTypeError``
    for bad text; None: an integer >= 1); the operator's ``with_options`` applies values.
    """

    name: str  # a Python identifier: "base_m" is offered as --base-m
    default: Any
    help: str
    parse: Callable[[str], Any] | None = None  # None: a positive integer
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@runtime_checkable
class Operator(Protocol):
    """An operator under test (see :class:`mpnpu.operators.kernel.KernelOperator`).

    Required: the attributes and methods below. Optional, read through :func:`options_of`,
    :func:`diagnosis_of`, :func:`kernel_type_of` and :func:`with_options`: ``options`` (a tuple of
    :class:`OperatorOption`), ``with_options(**values)`` (a copy with those values), ``diagnosis`` (a
    :class:`mpnpu.harness.chain.Diagnosis`, or None) and ``device_kernel_type`` (the
    :class:`~mpnpu.runtime.topology.KernelType` its launches need: a vector-only C++ kernel starts
    vector cores only; mix 1:2 when absent).
    """

    name: str
    sync_points: Mapping[str, str]  # sync point name -> what it orders
    variants: Mapping[str, frozenset[str]]  # named variant -> sync points it drops ("incident", "fixed", ...)
    probes: Mapping[str, tuple[str, str]]  # probe name -> (diagnosis step, what it changes)
    stages: tuple[str, ...]

    def make_case(self, seed: int, index: int) -> Any:
        """Case ``index`` of stream ``seed``, the same on every call. An operator whose cases depend
        on the device's size may take a keyword ``block_dim`` too: the tools then pass the block_dim
        of the device the case runs on (:func:`make_case_for`)."""

    def describe_case(self, case: Any) -> str:
        """One line naming the case."""

    def prepare(self, case: Any) -> Any:
        """Per-case data computed once and reused by every run of the case (e.g. the golden)."""

    def run(self, device: Device, case: Any, *, drop_syncs: frozenset[str], probe: str,
            trace: bool) -> tuple[dict[str, Any], LaunchResult]:
        """Run the case on ``device``; return the outputs and the launch result."""

    def judge(self, case: Any, prepared: Any, outputs: Mapping[str, Any], probe: str) -> Verdict:
        """Judge the outputs of one run against the golden (or a probe's expected values)."""


REQUIRED_VARIANTS = ("incident", "fixed")
_REQUIRED_ATTRIBUTES = ("name", "sync_points", "variants", "probes", "stages")
_REQUIRED_METHODS = ("make_case", "describe_case", "prepare", "run", "judge")


def protocol_problems(obj: Any) -> list[str]:
    """What keeps ``obj`` from being an :class:`Operator` (empty when nothing does)."""
    if isinstance(obj, type):
        return [f"it is the class {obj.__name__}, not an operator object (an instance)"]
    problems = [f"no attribute {a!r}" for a in _REQUIRED_ATTRIBUTES if not hasattr(obj, a)]
    problems += [f"no method {m}()" for m in _REQUIRED_METHODS if not callable(getattr(obj, m, None))]
    if problems:
        return problems
    if getattr(obj, "options", None) and not callable(getattr(obj, "with_options", None)):
        problems.append("it declares options but has no method with_options()")
    if not isinstance(obj.name, str) or not obj.name:
        problems.append("name is not a non-empty string")
    if not isinstance(obj.sync_points, Mapping):
        problems.append("sync_points is not a mapping of name -> description")
    if not isinstance(obj.variants, Mapping):
        problems.append("variants is not a mapping of name -> dropped sync points")
    else:
        missing = [v for v in REQUIRED_VARIANTS if v not in obj.variants]
        if missing:
            problems.append(f"no variant {', '.join(missing)} (the tools run 'incident' and 'fixed')")
        elif isinstance(obj.sync_points, Mapping):
            for vname, dropped in obj.variants.items():
                unknown = sorted(set(dropped) - set(obj.sync_points))
                if unknown:
                    problems.append(f"variant {vname} drops unknown sync point(s) {', '.join(unknown)}")
    return problems


def check_operator(obj: Any, ref: str) -> Operator:
    """``obj`` if it satisfies the protocol, else a one-line UsageError naming what is missing."""
    problems = protocol_problems(obj)
    if problems:
        raise UsageError(f"{ref!r} is not an mpnpu operator: {'; '.join(problems)}")
    operator: Operator = obj
    return operator


def options_of(op: Any) -> tuple[OperatorOption, ...]:
    """The tool options an operator declares (none when it declares none)."""
    return tuple(getattr(op, "options", ()) or ())


def with_options(op: Any, **values: Any) -> Any:
    """``op`` with its declared options set to ``values`` (None = keep the operator's value)."""
    values = {k: v for k, v in values.items() if v is not None}
    if not values:
        return op
    known = {o.name for o in options_of(op)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise UsageError(f"operator {op.name} has no option {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known)) or 'none'}")
    return op.with_options(**values)


def diagnosis_of(op: Any) -> "Diagnosis | None":
    """The operator's diagnosis chain, or None when it has none."""
    return getattr(op, "diagnosis", None)


def unavailable_reason(op: Any) -> str:
    """Why ``op`` cannot run here ("" when it can): an operator whose kernel lives outside mpnpu
    (the public FLOMS kernel needs the user's checkout) says so through an optional
    ``unavailable()`` method, and test helpers skip it with that reason instead of failing."""
    check = getattr(op, "unavailable", None)
    return str(check() or "") if callable(check) else ""


def kernel_type_of(op: Any) -> KernelType:
    """Which cores a launch of ``op``'s kernel starts: its ``device_kernel_type``, else mix 1:2
    (every Python kernel runs on the full mix 1:2 device)."""
    kind = getattr(op, "device_kernel_type", None)
    if kind is None:
        return KernelType.MIX_1_2
    if not isinstance(kind, KernelType):
        raise UsageError(f"operator {getattr(op, 'name', op)!r}: device_kernel_type must be a "
                         f"mpnpu.runtime.topology.KernelType, got {kind!r}")
    return kind


def default_block_dim(op: Any) -> int:
    """The block_dim the tools give ``op`` when none is asked for: DEFAULT_BLOCK_DIM AI cores, and
    for a vector-only kernel (whose block_dim counts vector cores) that AI core's two vector cores,
    so that its cross-core races have two cores to race between."""
    return 2 * DEFAULT_BLOCK_DIM if kernel_type_of(op) is KernelType.AIV else DEFAULT_BLOCK_DIM


def takes_block_dim(fn: Any) -> bool:
    """Whether ``fn`` (a case maker, or an operator's ``make_case``) has a ``block_dim`` parameter."""
    try:
        return "block_dim" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # (a builtin or a callable without a signature: it takes none)
        return False


def make_case_for(op: Any, seed: int, index: int, block_dim: int | None) -> Any:
    """``op``'s case ``index`` of stream ``seed`` for a device of ``block_dim`` blocks: passed on to
    an operator whose ``make_case`` takes it (a case sized by the core count, e.g. a row per AI core),
    left out for one that does not (its cases do not depend on it)."""
    if block_dim is not None and takes_block_dim(op.make_case):
        return op.make_case(seed, index, block_dim=block_dim)
    return op.make_case(seed, index)


def topology_for(op: Any, block_dim: int) -> Topology:
    """The cores a device for ``op`` with ``block_dim`` blocks has."""
    return Topology(block_dim, kernel_type_of(op))


def cpu_set_for(op: Any, block_dim: int, cpus_per_core: int | None = cpuset.DEFAULT_CPUS_PER_CORE,
                available: Sequence[int] | None = None, *, sample_load: bool = True) -> cpuset.CpuSet:
    """The CPU set a device for ``op`` with ``block_dim`` blocks runs on: ``cpus_per_core`` CPUs
    per AI core of ``available`` (:func:`mpnpu.runtime.cpuset.plan_cpu_set`, which counts the
    device's own core processes: a vector-only kernel's are not 3 per block); 0 or None: unpinned."""
    return cpuset.plan_cpu_set(block_dim, cpus_per_core, available, sample_load=sample_load,
                               processes=topology_for(op, block_dim).n_cores)


def device_for(op: Any, block_dim: int, **kwargs: Any) -> Device:
    """A :class:`Device` of ``block_dim`` blocks with the cores ``op``'s launches need (the tools
    open every device through this, so a vector-only C++ operator gets vector cores only)."""
    return Device(block_dim, kernel_type=kernel_type_of(op), **kwargs)
