"""Caches: MD's decode-side prefix cache, the DRAM/SSD tier bought for it, and its
read-back before decode."""
