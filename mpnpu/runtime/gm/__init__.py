"""GM, the device's global memory: tensors (views), the caching allocator, shared-memory segments.

- :mod:`.tensor`: :class:`GlobalTensor`, the descriptor kernels slice and launches carry;
- :mod:`.allocator`: :class:`CachingAllocator`, blocks reused with their old bytes in them;
- :mod:`.segments`: creating, attaching and sweeping shared-memory segments;
- :mod:`.memory`: :class:`GlobalMemory`, the parent's owner of all three.

docs/device-model.md ("GM and the caching allocator") describes the model.
"""

from .allocator import BLOCK_ROUND, Block, CachingAllocator
from .memory import GlobalMemory
from .segments import SegmentTable, prefault, sweep_stale_segments
from .tensor import GM_ALIGN, GlobalTensor

__all__ = [
    "BLOCK_ROUND",
    "GM_ALIGN",
    "Block",
    "CachingAllocator",
    "GlobalMemory",
    "GlobalTensor",
    "SegmentTable",
    "prefault",
    "sweep_stale_segments",
]
