"""The prefill pool: one FCFS queue in front of c instances, each prefilling one request
at a time (as the closed form assumes), the next request taken by the first free one."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PrefillRun:
    start_s: np.ndarray  # when the request's prefill began (after queueing)
    end_s: np.ndarray
    instance: np.ndarray  # which instance prefilled it


def fcfs_pool(arrival_s: np.ndarray, service_s: np.ndarray, servers: int) -> PrefillRun:
    """FCFS G/G/c: requests in arrival order, each to the instance that frees first
    (ties: the lowest index)."""
    n = len(arrival_s)
    start = np.empty(n)
    instance = np.empty(n, dtype=np.int64)
    free = [(0.0, i) for i in range(servers)]
    heapq.heapify(free)
    arrivals, services = arrival_s.tolist(), service_s.tolist()
    for k in range(n):
        t_free, i = heapq.heappop(free)
        s = arrivals[k] if arrivals[k] > t_free else t_free
        start[k] = s
        instance[k] = i
        heapq.heappush(free, (s + services[k], i))
    return PrefillRun(start, start + service_s, instance)
