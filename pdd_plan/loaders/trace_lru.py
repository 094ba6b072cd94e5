"""An LRU prefix cache of KV blocks, replayed request by request.

Block ids are prefix hashes: block i of a prompt can only be reused when blocks 0..i-1
are reused too, so a request's hit is the leading run of its blocks already cached
(stopping at the first miss), measured before the request's own blocks go in.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence


class PrefixCache:
    """LRU over blocks, `capacity_blocks` None = unlimited.

    After a request, its blocks are touched last-to-first, so its first block is the most
    recently used: a prefix's head then outlives its tail, as in a radix-tree cache that
    evicts leaves first (evicting a head first would strand the blocks after it).
    """

    def __init__(self, capacity_blocks: int | None = None):
        if capacity_blocks is not None and capacity_blocks < 0:
            raise ValueError("capacity_blocks must be >= 0 or None")
        self.capacity_blocks = capacity_blocks
        self._blocks: OrderedDict = OrderedDict()  # least recently used first

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, block) -> bool:
        return block in self._blocks

    def replay(self, hash_ids: Sequence) -> int:
        """Blocks of the request's prefix already cached; then caches all its blocks."""
        blocks = self._blocks
        hit_blocks = 0
        for block in hash_ids:
            if block not in blocks:
                break
            hit_blocks += 1
        if self.capacity_blocks is None:  # nothing is ever evicted: order does not matter
            blocks.update(dict.fromkeys(hash_ids))
            return hit_blocks
        capacity, touch = self.capacity_blocks, blocks.move_to_end
        for block in reversed(hash_ids):
            if block in blocks:
                touch(block)
            else:
                blocks[block] = None
                if len(blocks) > capacity:
                    blocks.popitem(last=False)
        return hit_blocks
