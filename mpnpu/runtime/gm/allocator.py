"""The caching allocator: best fit over segments, blocks reused with their old bytes in them.

It behaves like a device caching allocator (PyTorch's CUDA allocator is the model): sizes are
rounded up to 512 bytes, a request takes the smallest cached free block that fits (splitting it),
freed blocks go back to the cache and merge with free neighbours, and nothing is cleared. So the next
test case is handed the blocks the last one freed, with the last case's data still in them, which is
what turns a too-early read into a wrong answer rather than a zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mpnpu.errors import GMAccessError

#: allocation granularity of the caching allocator
BLOCK_ROUND = 512


@dataclass(eq=False)  # a block is itself: list.index finds it by identity, not by comparing fields
class Block:
    segment: str
    offset: int
    size: int
    free: bool = True


@dataclass
class _Segment:
    name: str
    size: int
    blocks: list[Block] = field(default_factory=list)  # sorted by offset, covering the segment


class CachingAllocator:
    """Best-fit allocator over segments that never clears what it hands out.

    ``new_segment(nbytes) -> name`` is called when no cached block fits.
    """

    def __init__(self, new_segment: Callable[[int], str], segment_bytes: int) -> None:
        self._new_segment = new_segment
        self._segment_bytes = segment_bytes
        self._segments: dict[str, _Segment] = {}

    @staticmethod
    def round_size(nbytes: int) -> int:
        return max(BLOCK_ROUND, -(-nbytes // BLOCK_ROUND) * BLOCK_ROUND)

    def malloc(self, nbytes: int) -> Block:
        size = self.round_size(nbytes)
        best: Block | None = None
        for seg in self._segments.values():
            for b in seg.blocks:
                if b.free and b.size >= size and (best is None or b.size < best.size):
                    best = b
        if best is None:
            seg_size = max(self._segment_bytes, -(-size // (2 << 20)) * (2 << 20))
            name = self._new_segment(seg_size)
            best = Block(name, 0, seg_size)
            self._segments[name] = _Segment(name, seg_size, [best])
        self._split(best, size)
        best.free = False
        return best

    def free(self, block: Block) -> None:
        if block.free:
            raise GMAccessError(f"double free of GM block at {block.segment}+{block.offset}")
        block.free = True
        seg = self._segments[block.segment]
        # Merge with free neighbours so that later, larger requests can reuse the space.
        i = seg.blocks.index(block)
        if i + 1 < len(seg.blocks) and seg.blocks[i + 1].free:
            block.size += seg.blocks.pop(i + 1).size
        if i > 0 and seg.blocks[i - 1].free:
            prev = seg.blocks[i - 1]
            prev.size += block.size
            seg.blocks.pop(i)

    def _split(self, block: Block, size: int) -> None:
        rest = block.size - size
        if rest >= BLOCK_ROUND:
            seg = self._segments[block.segment]
            i = seg.blocks.index(block)
            block.size = size
            seg.blocks.insert(i + 1, Block(block.segment, block.offset + size, rest))

    def stats(self) -> dict[str, int]:
        used = sum(b.size for s in self._segments.values() for b in s.blocks if not b.free)
        total = sum(s.size for s in self._segments.values())
        return {"segments": len(self._segments), "reserved_bytes": total, "allocated_bytes": used}
