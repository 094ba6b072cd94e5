"""An LRU prefix cache of KV blocks, replayed request by request.

Block ids are prefix hashes: block i of a prompt can only be reused when blocks 0..i-1
are reused too, so a request's hit is the leading run of its blocks already cached
(stopping at the first miss), measured before the request's own blocks go in.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from pdd_plan.errors import InputError

# Memory the caches of one analysis may take together: it grows with the blocks they hold,
# not with the trace. Per block, as measured on a 200 MB trace of 18.5 M distinct blocks
# (benchmarks/memory_trace.py, peak RSS less the 60 MiB of a run with a small cache):
# 266 bytes in an LRU that evicts (an OrderedDict and its churn), 73 in the unlimited
# cache (a set). So 1 GiB holds 4.0 M LRU blocks or 14.3 M distinct ones (the public
# Mooncake traces hold under 0.2 M); past it the analysis is refused with the figure
# (issue #22: that trace took 2.1 GB unlimited, and a longer one would take any amount).
MAX_CACHE_BYTES = 1 << 30
LRU_BYTES_PER_BLOCK = 270
SET_BYTES_PER_BLOCK = 75


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
        # least recently used first; unlimited: a set (nothing is evicted, so no order),
        # half the memory a block
        self._blocks: OrderedDict | set = OrderedDict() if capacity_blocks is not None else set()

    def __len__(self) -> int:
        return len(self._blocks)

    @property
    def bytes_per_block(self) -> int:
        return SET_BYTES_PER_BLOCK if self.capacity_blocks is None else LRU_BYTES_PER_BLOCK

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
            blocks.update(hash_ids)
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


def check_held(caches: Iterable[PrefixCache], path: str, requests: int) -> None:
    """Refuse (InputError) an analysis whose caches take more than MAX_CACHE_BYTES
    together after `requests` requests of the trace at `path`."""
    caches = list(caches)
    held_bytes = sum(len(c) * c.bytes_per_block for c in caches)
    if held_bytes <= MAX_CACHE_BYTES:
        return
    held = sum(len(c) for c in caches)
    most_lru = MAX_CACHE_BYTES // LRU_BYTES_PER_BLOCK
    raise InputError.single(
        path, f"request {requests:,}",
        f"{held:,} prefix blocks held in its caches by then, about {held_bytes / 1e9:.2f} GB "
        "(an unlimited cache keeps every distinct block)",
        f"at most {MAX_CACHE_BYTES / 2**30:g} GiB of cache ({most_lru / 1e6:.1f} M blocks in "
        f"an LRU, {MAX_CACHE_BYTES // SET_BYTES_PER_BLOCK / 1e6:.1f} M distinct blocks "
        "unlimited): a smaller --cache-capacity (e.g. 2M with --cache-unit blocks), or a "
        "shorter trace",
    )  # fmt: skip
