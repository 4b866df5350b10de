"""Core layout of a kernel launch, and who syncs with whom.

A mixed (mix 1:2) launch with ``block_dim`` AI cores runs ``block_dim`` cube cores (AIC) and
``2 * block_dim`` vector cores (AIV); the other kernel types (:class:`KernelType`) start fewer:
mix 1:1 one vector core per AI core, vector-only and cube-only kernels ``block_dim`` cores of one
type. Every core has a *core id* used across mpnpu (process index, trace index, status row),
cube cores first::

    mix 1:2     core id 0 .. bd-1      cube core k     block idx k
                core id bd .. 3*bd-1   vector core v   block idx v, AI core v // 2, sub v % 2
    mix 1:1     core id 0 .. bd-1      cube core k;    core id bd .. 2*bd-1  vector core v (AI core v)
    vector-only core id 0 .. bd-1      vector core v   block idx v (each its own block)
    cube-only   core id 0 .. bd-1      cube core k

The flag routing below follows Ascend C's CrossCoreSetFlag modes (docs/device-model.md):

- mode 0: all cores of the setter's type; a wait needs a set from every core of that type
  (the waiter's own set included);
- mode 1: the two vector cores of one AI core; a wait needs a set from both;
- mode 2: a cube core and its two vector cores; a cube set releases each vector core's wait,
  a cube wait needs a set from both vector cores.

This module is pure logic: the runtime uses it to route flags and the race detector uses it to
rebuild happens-before from traces, so both agree by construction.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cached_property

from mpnpu.errors import InvalidArgumentError

from .checks import is_int

FLAG_MODES = (0, 1, 2)
FLAG_IDS = 16
#: The device's SyncAll is built on these flag ids. A kernel may use them (the dev kit's own cross-core
#: flag sample does; this chip class's current docs give 0-10 for kernels, older ones 0-15), but not
#: in a launch that also calls SyncAll: there its sets and waits would be mixed up with SyncAll's
#: own. mpnpu reports that collision at the second of the two calls (kcontext, and sync.h for C++).
SYNC_ALL_FLAG_IDS = frozenset({11, 12, 13, 14})
#: A flag counter holds 0..15; a set that would make it 16 is an overflow.
FLAG_COUNTER_MAX = 15


class KernelType(enum.Enum):
    """Which cores a launch starts (the separated-architecture kernel types of Ascend C)."""

    MIX_1_2 = "mix 1:2"  # 1 cube + 2 vector cores per AI core: Python kernels, KERNEL_TYPE_MIX_AIC_1_2
    MIX_1_1 = "mix 1:1"  # 1 cube + 1 vector core per AI core: KERNEL_TYPE_MIX_AIC_1_1
    AIV = "vector-only"  # block_dim vector cores: KERNEL_TYPE_AIV_ONLY / MIX_AIV_1_0
    AIC = "cube-only"  # block_dim cube cores: KERNEL_TYPE_AIC_ONLY / MIX_AIC_1_0

    __hash__ = object.__hash__

    @property
    def cores_per_block(self) -> int:
        """Core processes per unit of block_dim."""
        return {"mix 1:2": 3, "mix 1:1": 2, "vector-only": 1, "cube-only": 1}[self.value]


class CoreType(enum.Enum):
    """The two kinds of core in a mixed kernel."""

    CUBE = "cube"
    VECTOR = "vector"

    __hash__ = object.__hash__  # members are singletons; Enum's own __hash__ is a Python call


@dataclass(frozen=True)
class CoreInfo:
    """Identity of one core of a launch, as the kernel API reports it."""

    core_id: int
    core_type: CoreType
    block_idx: int  # GetBlockIdx(): cube k -> k; vector v -> v in [0, 2*block_dim)
    ai_core: int  # which AI core (cube + 2 vectors) this core belongs to
    sub_block_idx: int  # 0/1 on vector cores, 0 on cube cores

    #: vector cores of this core's AI core (2 in a mix 1:2 launch, else 1); 1 on cube cores
    sub_block_num: int = 1

    @property
    def label(self) -> str:
        """Human name used in every error and report, e.g. ``vector core 3 (block 1, sub 1)``."""
        if self.core_type is CoreType.CUBE:
            return f"cube core {self.block_idx} (block {self.ai_core})"
        if self.sub_block_num == 1:
            return f"vector core {self.block_idx} (block {self.ai_core})"
        return f"vector core {self.block_idx} (block {self.ai_core}, sub {self.sub_block_idx})"

    @property
    def short(self) -> str:
        """Compact name for tables, e.g. ``aiv3`` or ``aic0``."""
        return ("aic" if self.core_type is CoreType.CUBE else "aiv") + str(self.block_idx)


class Topology:
    """Cores of a launch with ``block_dim`` blocks of ``kernel_type`` and the routing of syncs
    between them (block_dim counts AI cores in mixed launches, cores of the one type otherwise)."""

    def __init__(self, block_dim: int, kernel_type: KernelType = KernelType.MIX_1_2) -> None:
        if not is_int(block_dim) or block_dim < 1:
            raise InvalidArgumentError(f"block_dim must be a positive integer, got {block_dim!r}")
        if not isinstance(kernel_type, KernelType):
            raise InvalidArgumentError(f"kernel_type must be a KernelType, got {kernel_type!r}")
        self.block_dim = block_dim
        self.kernel_type = kernel_type
        kt = kernel_type
        self.n_cube = 0 if kt is KernelType.AIV else block_dim
        self.n_vector = {KernelType.MIX_1_2: 2 * block_dim, KernelType.MIX_1_1: block_dim,
                         KernelType.AIV: block_dim, KernelType.AIC: 0}[kt]
        self.n_cores = self.n_cube + self.n_vector
        #: vector cores per AI core (GetSubBlockNum / GetTaskRation on a vector core)
        self.vectors_per_block = 2 if kt is KernelType.MIX_1_2 else 1

    def __repr__(self) -> str:
        if self.kernel_type is KernelType.MIX_1_2:
            return f"Topology(block_dim={self.block_dim})"
        return f"Topology(block_dim={self.block_dim}, kernel_type={self.kernel_type})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Topology) and other.block_dim == self.block_dim
                and other.kernel_type is self.kernel_type)

    def __hash__(self) -> int:
        return hash(("Topology", self.block_dim, self.kernel_type))

    def __reduce__(self) -> tuple[type[Topology], tuple[int, KernelType]]:
        return (Topology, (self.block_dim, self.kernel_type))

    @property
    def mixed(self) -> bool:
        """Both core types run (cross-core modes 1 and 2 exist only then)."""
        return self.n_cube > 0 and self.n_vector > 0

    # -- identities -------------------------------------------------------------------------

    @cached_property
    def cores(self) -> tuple[CoreInfo, ...]:
        """Every core, indexed by core id."""
        per = self.vectors_per_block
        out = [CoreInfo(k, CoreType.CUBE, k, k, 0) for k in range(self.n_cube)]
        out += [
            CoreInfo(self.n_cube + v, CoreType.VECTOR, v, v // per, v % per, per) for v in range(self.n_vector)
        ]
        return tuple(out)

    def core(self, core_id: int) -> CoreInfo:
        return self.cores[core_id]

    def cube_id(self, ai_core: int) -> int:
        """Core id of the cube core of an AI core."""
        return ai_core

    def vector_id(self, vector_block_idx: int) -> int:
        """Core id of vector core ``vector_block_idx`` (its GetBlockIdx())."""
        return self.n_cube + vector_block_idx

    def vector_ids_of(self, ai_core: int) -> tuple[int, ...]:
        """Core ids of the vector cores (sub 0, sub 1) of an AI core."""
        per = self.vectors_per_block
        return tuple(self.n_cube + per * ai_core + s for s in range(per))

    def block_cores(self, block: int) -> tuple[int, ...]:
        """Core ids of block ``block`` (an AI core's cube and vector cores in a mixed launch, one core
        otherwise): what the chip starts together on one of its cores."""
        cube = (self.cube_id(block),) if self.n_cube else ()
        return cube + (self.vector_ids_of(block) if self.n_vector else ())

    @cached_property
    def cube_ids(self) -> tuple[int, ...]:
        return tuple(range(self.n_cube))

    @cached_property
    def vector_ids(self) -> tuple[int, ...]:
        return tuple(range(self.n_cube, self.n_cores))

    @cached_property
    def all_ids(self) -> tuple[int, ...]:
        return tuple(range(self.n_cores))

    def barrier_parties(self, aiv_only: bool) -> tuple[int, ...]:
        """Core ids that take part in SyncAll (all cores) or SyncAll<true> (vector cores only)."""
        return self.vector_ids if aiv_only else self.all_ids

    # -- cross-core flags -------------------------------------------------------------------

    def flag_receivers(self, mode: int, sender: int) -> tuple[int, ...]:
        """Cores whose counter a set by ``sender`` in ``mode`` increments."""
        return self._flag_peers(mode, sender)

    def flag_senders(self, mode: int, receiver: int) -> tuple[int, ...]:
        """Cores that must each have set the flag before a wait by ``receiver`` in ``mode`` returns."""
        # Every mode's routing is symmetric: a core's set reaches exactly the cores whose sets its
        # own wait needs, so both questions have the same answer.
        return self._flag_peers(mode, receiver)

    def flag_candidates(self, receiver: int) -> tuple[int, ...]:
        """Every core whose set, in some mode this launch allows, could reach ``receiver`` (the
        senders of a wait whose mode is not known yet)."""
        found: dict[int, None] = {}
        for mode in FLAG_MODES:
            try:
                found.update(dict.fromkeys(self._flag_peers(mode, receiver)))
            except ValueError:
                continue
        return tuple(found)

    def _flag_peers(self, mode: int, core_id: int) -> tuple[int, ...]:
        info = self.cores[core_id]
        if mode == 0:
            return self.cube_ids if info.core_type is CoreType.CUBE else self.vector_ids
        if mode in (1, 2) and not self.mixed:
            raise InvalidArgumentError(f"flag mode {mode} syncs cores inside an AI core of a mixed launch; a "
                             f"{self.kernel_type.value} launch has mode 0 only")
        if mode == 1:
            if info.core_type is CoreType.CUBE:
                raise InvalidArgumentError(
                    "flag mode 1 syncs the two vector cores of an AI core; a cube core cannot use it")
            return self.vector_ids_of(info.ai_core)
        if mode == 2:
            if info.core_type is CoreType.CUBE:
                return self.vector_ids_of(info.ai_core)
            return (self.cube_id(info.ai_core),)
        raise InvalidArgumentError(f"flag mode must be 0, 1 or 2, got {mode!r}")


def check_flag(mode: int, flag_id: int) -> None:
    """Raise InvalidArgumentError (a ValueError) for a flag mode or id that the device does not accept."""
    # "mode in (0, 1, 2)" alone would let True and 1.0 through (they equal 1).
    if not is_int(mode) or mode not in FLAG_MODES:
        raise InvalidArgumentError(f"flag mode must be 0, 1 or 2, got {mode!r}")
    if not is_int(flag_id) or not 0 <= flag_id < FLAG_IDS:
        raise InvalidArgumentError(f"flag id must be an integer in 0..{FLAG_IDS - 1}, got {flag_id!r}")

