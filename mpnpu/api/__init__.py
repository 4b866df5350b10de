"""The Python kernel API: Ascend C's names in snake_case, the same in every core process.

A kernel is a plain Python function run by every core of a launch (``Device.launch``). It learns
who it is from ``get_block_idx()`` / ``get_core_type()`` and moves data only through this package
(``from mpnpu import api as ac``):

=====================================  =========================================================
Ascend C                               mpnpu.api (module)
=====================================  =========================================================
GetBlockIdx / GetBlockNum              get_block_idx / get_block_num               (identity)
GetSubBlockIdx / GetTaskRation         get_subblock_idx / get_task_ration          (identity)
ASCEND_IS_AIC / ASCEND_IS_AIV          is_aic() / is_aiv()                         (identity)
TPipe::InitBuffer, TBuf::Get           TPipe.init_buffer, TBuf.get; alloc_local    (memory)
DataCopy (GM <-> local)                data_copy                                   (movement)
Fixpipe, LoadData                      fixpipe, load_data                          (movement)
SetAtomicAdd / SetAtomicNone           set_atomic_add / set_atomic_none            (movement)
Cast, Duplicate, Adds, Muls, Add, Mul  cast, duplicate, adds, muls, add, mul       (vector)
Mmad                                   mmad                                        (cube)
SyncAll<false>() / SyncAll<true>()     sync_all() / sync_all(aiv_only=True)        (sync)
CrossCoreSetFlag<mode, pipe>(id)       cross_core_set_flag(id, mode=..., pipe=...) (sync)
CrossCoreWaitFlag(id)                  cross_core_wait_flag(id, mode=...)          (sync)
SetFlag / WaitFlag<HardEvent::X_Y>     set_flag / wait_flag(HardEvent.X_Y, id)     (sync)
PipeBarrier<PIPE_X>()                  pipe_barrier(Pipe.X)   (one core's pipes)   (sync)
TPipe::AllocEventID / FetchEventID     get_tpipe().alloc_event_id / fetch_event_id (memory)
TQue<pos, depth>: Alloc/En/De/Free     TQue(pos, depth, nbytes): alloc_tensor ...  (queue)
=====================================  =========================================================

Sync calls take an optional ``name``: a launch can drop named sync points
(``LaunchOptions(drop_syncs={"S1"})``) to show what each one protects. ``stage(name)`` marks the
kernel's stages so that traces and race reports can say where an access happened. A queue named
``Q`` names the syncs it inserts ``Q:MTE2_V`` (EnQue -> DeQue) and ``Q:V_MTE2`` (FreeTensor -> the
next AllocTensor of that buffer), after their HardEvents.

Compute on local tensors with numpy, or with the vector instructions (which also tell the race
detector which bytes PIPE_V touched). Inside a core, data movement runs on asynchronous pipes
(:mod:`mpnpu.runtime.pipes`) for kernels marked :func:`pipelined`, which order them with
``set_flag`` / ``wait_flag``, ``TQue`` or ``pipe_barrier`` as Ascend C kernels must. Unmarked
kernels run their pipes in order.

Every function reaches its core only through the kernel-context seam
(:mod:`mpnpu.runtime.kcontext`); the runtime never imports this package. Where things are:
``identity`` (who am I, stages), ``memory`` (tensors, buffers), ``movement`` (copies), ``vector``
(PIPE_V instructions: add one there, in its table), ``cube`` (Mmad), ``sync`` (SyncAll, flags,
pipe syncs), ``queue`` (TQue); ``_trace`` records local-memory accesses for the race detector.
"""

from __future__ import annotations

from mpnpu.errors import UnknownNameError

from . import cube, identity, memory, movement, queue, sync, vector
from .cube import *  # noqa: F403
from .identity import *  # noqa: F403
from .memory import *  # noqa: F403
from .movement import *  # noqa: F403
from .queue import *  # noqa: F403
from .sync import *  # noqa: F403
from .vector import *  # noqa: F403

__all__ = sorted({*cube.__all__, *identity.__all__, *memory.__all__, *movement.__all__, *queue.__all__,
                  *sync.__all__, *vector.__all__})


def __getattr__(name: str) -> object:
    # As Triton's interpreter does for an unsupported op: say where the instruction would go.
    raise UnknownNameError(f"mpnpu.api has no {name!r}; vector instructions are defined in the table of "
                         "mpnpu/api/vector.py, the rest of the kernel API in mpnpu/api/ (see its docstring)")
